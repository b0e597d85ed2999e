package partition

import (
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// Border returns, for every node of t (indexed by node, as element ids
// are), whether it is a border element of partition part under
// placement pl: a node of the partition that a packet or signal from
// another partition reaches directly (the far end of a cut link or of a
// cut dependency), or that a border element reaches in less than the
// lookahead through links and dependencies inside the partition. The
// others of the partition are interior: nothing another partition sends
// in a window can reach them before the window's end plus the lookahead
// (node.Core.RunAhead, docs/decisions.md "Two-phase windows"). Nodes of
// other partitions are false.
//
// A link direction's delay is the smallest the engine can give it
// (DirDelays); a dependency counts in both directions (a signal goes
// from the host where a flow or task ends to the one it activates), with
// its own delay. It returns nil when nothing is cut (no border).
func Border(t *topologies.Topology, imps []fabric.LinkImpairment, flows []hostsim.FlowSpec, tasks []hostsim.TaskSpec,
	pl *Placement, part int) ([]bool, error) {
	if pl.Lookahead == sim.Never || len(pl.Part) != len(t.Nodes) {
		return nil, nil
	}
	dd, err := DirDelays(t, imps)
	if err != nil {
		return nil, err
	}
	// adj[n] are the edges leaving node n inside the partition, with the
	// smallest delay the engine can give them.
	type edge struct {
		to    int
		delay sim.Time
	}
	adj := make([][]edge, len(t.Nodes))
	border := make([]bool, len(t.Nodes))
	var stack []int
	mark := func(n int) {
		if !border[n] {
			border[n] = true
			stack = append(stack, n)
		}
	}
	add := func(a, b int, d sim.Time) {
		in := func(n int) bool { return pl.Part[n] == part }
		switch {
		case in(a) && in(b):
			adj[a] = append(adj[a], edge{b, d})
		case in(b):
			mark(b) // a packet or signal from another partition
		}
	}
	for i, l := range t.Links {
		add(l.A, l.B, dd[fabric.DirID(i, true)])
		add(l.B, l.A, dd[fabric.DirID(i, false)])
	}
	for _, e := range depEdges(t, flows, tasks) {
		add(e.a, e.b, e.delay)
		add(e.b, e.a, e.delay)
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range adj[n] {
			if e.delay < pl.Lookahead {
				mark(e.to)
			}
		}
	}
	return border, nil
}
