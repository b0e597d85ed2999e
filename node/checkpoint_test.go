package node

import (
	"bytes"
	"testing"

	"github.com/lockstep-sim/lockstep/internal/checkpoint"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/sim"
)

// TestRunLocal_CheckpointResumeByteIdentical checkpoints in-memory runs
// of the random scenario (losses, RED marks and drops, cwnd, queue
// samples, pcap) in 2 and 3 partitions at window boundaries, resumes each
// checkpoint in freshly built partitions, and compares every output with
// the single-process run's; the restored state encodes to the
// checkpoint's bytes.
func TestRunLocal_CheckpointResumeByteIdentical(t *testing.T) {
	b := loadText(t, "random.yaml", "seed: 7\n"+markingScenario)
	want, wantSum := single(t, b)
	for _, p := range []int{2, 3} {
		pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, p)
		if err != nil {
			t.Fatal(err)
		}
		w := checkpoint.NewWriter(t.TempDir(), 1)
		type saved struct {
			data []byte
			at   sim.Time
			win  uint64
		}
		var cks []saved
		encode := func(st *LocalState) ([]byte, error) {
			return w.Encode(checkpoint.Of{Window: st.Window, Time: int64(st.Time), Digest: b.Digest(), Partitions: p},
				checkpoint.State{Partition: -1, Roots: st.Roots(), Anchors: st.Anchors()})
		}
		lr, err := RunLocal(b, pl, LocalOptions{CheckpointEvery: 60 * sim.Microsecond, Checkpoint: func(st *LocalState) error {
			data, err := encode(st)
			cks = append(cks, saved{data, st.Time, st.Window})
			return err
		}})
		if err != nil {
			t.Fatal(err)
		}
		got := outputs{t.TempDir()}
		if err := lr.Outputs.WriteDir(got.dir, results.Perf{}, nil); err != nil {
			t.Fatal(err)
		}
		compare(t, "checkpointing P="+itoa(p), want, wantSum, got, lr)
		if len(cks) < 3 {
			t.Fatalf("P=%d: %d checkpoints, want at least 3", p, len(cks))
		}
		for k, ck := range cks {
			if k > 0 && ck.at < cks[k-1].at+60*sim.Microsecond-pl.Lookahead {
				t.Errorf("checkpoint %d at %v, %v after the one before: want about 60us", k, ck.at, ck.at-cks[k-1].at)
			}
			lr, err := RunLocal(b, pl, LocalOptions{Parallel: k%2 == 0, Restore: func(st *LocalState) error {
				h, err := checkpoint.Restore("ckpt", ck.data, b.Digest(), -1, st.Roots(), st.Anchors(), nil)
				if err != nil {
					return err
				}
				st.Window, st.Time = h.Window, sim.Time(h.Time)
				again, err := encode(st)
				if err != nil {
					return err
				}
				if !bytes.Equal(again, ck.data) {
					t.Errorf("P=%d checkpoint %d: the restored state encodes differently", p, k)
				}
				return nil
			}})
			if err != nil {
				t.Fatalf("P=%d resume %d: %v", p, k, err)
			}
			got := outputs{t.TempDir()}
			if err := lr.Outputs.WriteDir(got.dir, results.Perf{}, nil); err != nil {
				t.Fatal(err)
			}
			compare(t, "resumed P="+itoa(p)+" from window "+itoa(int(ck.win)), want, wantSum, got, lr)
		}
	}
}
