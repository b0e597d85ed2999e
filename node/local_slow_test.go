//go:build slow

package node

import (
	"testing"

	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/scenario"
)

// loadFile loads a scenario for the slow tests.
func loadFile(t *testing.T, path string) *scenario.Built {
	t.Helper()
	b, err := scenario.LoadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

// The k=8 fat-tree permutation takes about a second alone and half a
// minute under the race detector, so it runs with -tags slow.
func TestRunLocal_Design2_FatTreeK8PermutationByteIdentical(t *testing.T) {
	if testing.Short() {
		t.Skip("k=8 fat-tree: seconds")
	}
	b := loadFile(t, "../examples/fattree-k8-permutation.yaml")
	want, wantSum := single(t, b)
	pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, 4)
	if err != nil {
		t.Fatal(err)
	}
	got, lr := local(t, b, pl, true)
	compare(t, "k=8 P=4", want, wantSum, got, lr)
	if lr.Barrier.Grants < 100 {
		t.Errorf("only %d windows: the run should take many lookahead windows", lr.Barrier.Grants)
	}
}
