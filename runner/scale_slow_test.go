//go:build slow

package runner_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
)

// TestScaleExamples_FinishAndConservePackets runs the 8,192-host examples
// (examples/scale/: the k=32 fat-tree and the 128-leaf leaf-spine
// permutations) in one process: every flow finishes and every packet is
// accounted for. make test-slow runs it (a few seconds each, a minute
// under the race detector).
func TestScaleExamples_FinishAndConservePackets(t *testing.T) {
	files, _ := filepath.Glob("../examples/scale/*.yaml")
	if len(files) < 2 {
		t.Fatalf("found %d scale examples, want at least 2", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b, err := scenario.Load(f, data, scenario.Dir(filepath.Dir(f)))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if n := b.Topo.NumHosts(); n != 8192 {
				t.Errorf("%d hosts, want 8192", n)
			}
			r, err := runner.Run(b, runner.Options{})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			checkConservation(t, r)
			if s := r.Summary(); s.FlowsFinished != s.Flows || s.Flows != 8192 {
				t.Errorf("%d of %d flows finished, want all 8192", s.FlowsFinished, s.Flows)
			}
			if c := r.Fabric.Conservation(); c.PoolLive != 0 {
				t.Errorf("%d packets still live after the run drained", c.PoolLive)
			}
		})
	}
}
