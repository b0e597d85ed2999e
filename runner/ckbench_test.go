package runner_test

import (
	"testing"

	"github.com/lockstep-sim/lockstep/internal/checkpoint"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// go test ./runner -run - -bench CheckpointEncode -benchmem
func BenchmarkCheckpointEncode(b *testing.B) {
	for _, ex := range []string{"../examples/fattree-k8-permutation.yaml", "../examples/htsim/perm1024-nscc.yaml", "../examples/scale/fattree-k32-permutation.yaml"} {
		b.Run(ex[12:], func(b *testing.B) {
			bt, err := scenario.LoadFile(ex)
			if err != nil {
				b.Fatal(err)
			}
			var st *runner.State
			stop := make(chan struct{})
			_, err = runner.Run(bt, runner.Options{CheckpointEvery: 10 * sim.Microsecond, Checkpoint: func(s *runner.State) error {
				if st == nil {
					st = s
					close(stop)
				}
				return nil
			}, Stop: stop, ProgressEvery: 1})
			if err != nil || st == nil {
				b.Fatal(err)
			}
			// steady: one Writer for every checkpoint, as a long run
			// has; first: a Writer's first checkpoint, as a short run's
			// one checkpoint is (nothing sized yet).
			for _, mode := range []string{"steady", "first"} {
				b.Run(mode, func(b *testing.B) {
					w := checkpoint.NewWriter(b.TempDir(), 1)
					var n int
					b.ReportAllocs()
					for b.Loop() {
						if mode == "first" {
							w = checkpoint.NewWriter(w.Store.Dir, 1)
						}
						data, err := w.Encode(checkpoint.Of{Digest: bt.Digest()}, checkpoint.State{Partition: -1, Roots: st.Roots(), Anchors: st.Anchors()})
						if err != nil {
							b.Fatal(err)
						}
						n = len(data)
					}
					b.ReportMetric(float64(n), "bytes")
					b.ReportMetric(float64(n)/float64(len(bt.Topo.Hosts)), "bytes/host")
				})
			}
		})
	}
}
