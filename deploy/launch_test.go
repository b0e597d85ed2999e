package deploy

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/lockstep-sim/lockstep/node"
)

func TestPrefixWriter_PrefixesEveryLineAcrossWrites(t *testing.T) {
	var b bytes.Buffer
	w := &prefixWriter{w: &syncWriter{w: &b}, prefix: "node 1: "}
	for _, s := range []string{"one\ntw", "o\n", "three", "\nfour\n"} {
		if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
		}
	}
	want := "node 1: one\nnode 1: two\nnode 1: three\nnode 1: four\n"
	if got := b.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFreePorts_Distinct(t *testing.T) {
	ps, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 || ps[0] == ps[1] || ps[1] == ps[2] || ps[0] == ps[2] {
		t.Errorf("freePorts(3) = %v, want 3 distinct ports", ps)
	}
}

// TestDoneFailure_ANodesOwnReasonWins: when every node has pushed its
// result before the launcher heard the first failure (both nodes' external
// elements died), the run's error is a node's own reason, not "aborted"
// (cluster case (i) once ended with "partition 0: aborted" this way).
func TestDoneFailure_ANodesOwnReasonWins(t *testing.T) {
	part := func(i int, finished bool, reason string) *node.PartResult {
		r := &node.PartResult{Reason: reason}
		r.Part.Partition = i
		r.Final.Finished = finished
		return r
	}
	for _, c := range []struct {
		name string
		rs   []*node.PartResult
		want string
	}{
		{"complete", []*node.PartResult{part(0, true, ""), part(1, true, "")}, ""},
		{"aborted by another member", []*node.PartResult{part(0, false, ""), part(1, false, "")}, "partition 0: aborted"},
		{"one failed on its own", []*node.PartResult{part(0, false, ""), part(1, false, "external element agg1 (node 25): window 345: step: no reply")},
			"partition 1: external element agg1 (node 25): window 345: step: no reply"},
		{"both failed on their own", []*node.PartResult{part(0, false, "external element tor0 (node 16): window 335"),
			part(1, false, "external element agg1 (node 25): window 345")}, "partition 0: external element tor0 (node 16): window 335"},
	} {
		err := doneFailure(c.rs)
		if got := fmt.Sprint(err); c.want == "" && err != nil || c.want != "" && got != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
