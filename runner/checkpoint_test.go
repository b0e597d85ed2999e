package runner_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstep-sim/lockstep/internal/checkpoint"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// sameDirs fails unless dirs a and b hold the same files with the same
// bytes.
func sameDirs(t *testing.T, a, b string) {
	t.Helper()
	var files []string
	err := filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(a, p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	_ = filepath.WalkDir(b, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if n != len(files) {
		t.Fatalf("%s has %d files, %s %d", a, len(files), b, n)
	}
	for _, f := range files {
		x, err := os.ReadFile(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !bytes.Equal(x, y) {
			t.Fatalf("%s differs (%d and %d bytes)", f, len(x), len(y))
		}
	}
}

func loadExample(t *testing.T, path string) *scenario.Built {
	t.Helper()
	b, err := scenario.LoadFile(path, scenario.WithCwnd(), scenario.WithQueues(2*sim.Microsecond), scenario.WithSenderFCT())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeOut(t *testing.T, r *runner.Result) string {
	t.Helper()
	dir := t.TempDir()
	if err := r.WriteDir(dir, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCheckpoint_ResumeGivesTheSameBytes runs examples three ways: through,
// through while checkpointing (which must change nothing), and from each
// checkpoint restored into a fresh build. The restored state encodes to
// the same bytes as the checkpoint (a field the codec missed would
// differ), and every output file is byte-identical.
func TestCheckpoint_ResumeGivesTheSameBytes(t *testing.T) {
	for _, ex := range []string{
		"dumbbell.yaml",
		"fattree-k8-permutation.yaml",
		"dcqcn.yaml",            // PFC, DCQCN's rate pacing, RED
		"nscc-fattree.yaml",     // NSCC and UET
		"spraying-fattree.yaml", // STrack and spraying
		"multi_loss.yaml",       // impairments drawing from link streams
		"hpcc.yaml",             // INT telemetry
		"htsim-cm.yaml",         // htsim triggers
		"collectives/ring-allreduce.yaml",
		"multi_loss_stracksim.yaml", // the compatibility profile
	} {
		t.Run(ex, func(t *testing.T) {
			path := filepath.Join("../examples", ex)
			b := loadFresh(t, ex, path)
			ref, err := runner.Run(b, runner.Options{})
			if err != nil {
				t.Fatal(err)
			}
			refDir := writeOut(t, ref)
			every := max(ref.End/4, sim.Nanosecond)
			w := checkpoint.NewWriter(t.TempDir(), 1)
			var saved [][]byte
			digest := b.Digest()
			b1 := loadFresh(t, ex, path)
			withCk, err := runner.Run(b1, runner.Options{CheckpointEvery: every, Checkpoint: func(st *runner.State) error {
				data, err := w.Encode(checkpoint.Of{Time: int64(st.Time), Digest: digest}, checkpoint.State{Partition: -1,
					Roots: st.Roots(), Anchors: st.Anchors()})
				saved = append(saved, data)
				return err
			}})
			if err != nil {
				t.Fatal(err)
			}
			sameDirs(t, refDir, writeOut(t, withCk))
			if len(saved) < 2 {
				t.Fatalf("%d checkpoints at every %v of a run to %v: want at least 2", len(saved), every, ref.End)
			}
			for _, k := range resumesFrom(len(saved)) {
				data := saved[k]
				b2 := loadFresh(t, ex, path)
				res, err := runner.Run(b2, runner.Options{Restore: func(st *runner.State) error {
					if _, err := checkpoint.Restore("ckpt", data, b2.Digest(), -1, st.Roots(), st.Anchors(), nil); err != nil {
						return err
					}
					again, err := w.Encode(checkpoint.Of{Time: int64(headerTime(t, data)), Digest: digest}, checkpoint.State{Partition: -1,
						Roots: st.Roots(), Anchors: st.Anchors()})
					if err != nil {
						return err
					}
					if !bytes.Equal(graphOf(t, data), graphOf(t, again)) {
						t.Errorf("checkpoint %d: the restored state encodes differently (%d and %d bytes): a field was not restored",
							k, len(graphOf(t, data)), len(graphOf(t, again)))
					}
					return nil
				}})
				if err != nil {
					t.Fatalf("resume from checkpoint %d: %v", k, err)
				}
				sameDirs(t, refDir, writeOut(t, res))
			}
			t.Logf("%d checkpoints, %d bytes each on average", len(saved), len(bytes.Join(saved, nil))/len(saved))
		})
	}
}

// resumesFrom is which of n checkpoints the tests resume from: every one
// under -tags slow; else the first and the last (the earliest state, and
// the one closest to the end, where most flows are done), which keeps
// make test's race-detector runs of the longer examples to about two runs
// each.
func resumesFrom(n int) []int {
	if slowTests || n <= 2 {
		ks := make([]int, n)
		for k := range ks {
			ks[k] = k
		}
		return ks
	}
	return []int{0, n - 1}
}

func loadFresh(t *testing.T, ex, path string) *scenario.Built {
	if ex == "multi_loss_stracksim.yaml" {
		b, err := scenario.LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return loadExample(t, path)
}

func graphOf(t *testing.T, data []byte) []byte {
	t.Helper()
	f, err := checkpoint.Decode("ckpt", data)
	if err != nil {
		t.Fatal(err)
	}
	g, err := f.Section(checkpoint.SectionGraph)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func headerTime(t *testing.T, data []byte) sim.Time {
	t.Helper()
	f, err := checkpoint.Decode("ckpt", data)
	if err != nil {
		t.Fatal(err)
	}
	return sim.Time(f.Time)
}

// TestCheckpoint_BetweenAnyTwoEvents checkpoints where a wall-clock
// interval would: between event batches, wherever they end (here every
// 997 events), not at a virtual-time boundary; a resume from each is
// byte-identical too.
func TestCheckpoint_BetweenAnyTwoEvents(t *testing.T) {
	path := "../examples/dcqcn.yaml"
	b := loadExample(t, path)
	ref, err := runner.Run(b, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	refDir := writeOut(t, ref)
	w := checkpoint.NewWriter(t.TempDir(), 1)
	var saved [][]byte
	calls := 0
	b1 := loadExample(t, path)
	_, err = runner.Run(b1, runner.Options{ProgressEvery: 997, CheckpointDue: func() bool {
		calls++
		return calls%400 == 0
	}, Checkpoint: func(st *runner.State) error {
		if st.Time%sim.Microsecond == 0 {
			t.Logf("a checkpoint on a microsecond: %v", st.Time)
		}
		data, err := w.Encode(checkpoint.Of{Time: int64(st.Time), Digest: b1.Digest()}, checkpoint.State{Partition: -1,
			Roots: st.Roots(), Anchors: st.Anchors()})
		saved = append(saved, data)
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(saved) < 3 {
		t.Fatalf("%d checkpoints, want at least 3", len(saved))
	}
	for _, k := range resumesFrom(len(saved)) {
		data := saved[k]
		b2 := loadExample(t, path)
		res, err := runner.Run(b2, runner.Options{Restore: func(st *runner.State) error {
			_, err := checkpoint.Restore("ckpt", data, b2.Digest(), -1, st.Roots(), st.Anchors(), nil)
			return err
		}})
		if err != nil {
			t.Fatalf("resume from checkpoint %d: %v", k, err)
		}
		sameDirs(t, refDir, writeOut(t, res))
	}
}

// TestCheckpoint_NoneOnceTheWorkIsDone: a checkpoint due after the last
// flow has finished (the engine only drains stale timers then) is not
// taken; one due before is.
func TestCheckpoint_NoneOnceTheWorkIsDone(t *testing.T) {
	path := "../examples/dumbbell.yaml"
	ref, err := runner.Run(loadExample(t, path), runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	drained := ref.Fabric.Engine().Now()
	if drained <= ref.End+1 {
		t.Fatalf("the engine stopped at %v, the run ended at %v: no stale timer to drain, nothing to test", drained, ref.End)
	}
	for _, c := range []struct {
		every sim.Time
		want  bool
	}{{ref.End + 1, false}, {ref.End / 2, true}} {
		taken := 0
		if _, err := runner.Run(loadExample(t, path), runner.Options{CheckpointEvery: c.every, Checkpoint: func(*runner.State) error {
			taken++
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
		if (taken > 0) != c.want {
			t.Errorf("every %v (run's end %v, engine's %v): %d checkpoints taken, want some: %v", c.every, ref.End, drained, taken, c.want)
		}
	}
}
