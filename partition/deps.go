package partition

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// A dependency between flows (hostsim.FlowSpec.Need) is a signal from the
// host where a flow completes to the host that sends a flow it activates,
// Delay later (docs/design.md §11). For the cut it is a link: a zero-delay
// dependency keeps its two hosts in one partition, and a positive one that
// is cut bounds the lookahead. The placement functions see the
// dependencies as pseudo links appended to the topology's links (withDeps)
// and drop them from the result (dropDeps).

// depEdge is a dependency between two topology nodes with its delay.
type depEdge struct {
	a, b  int
	delay sim.Time
}

// depEdges lists the dependencies between distinct hosts, one per pair of
// nodes (a < b) with the smallest delay, in node order. A compute task
// (hostsim.TaskSpec) is a point on its host: an activation of it is a
// signal to that host, and its own activations leave from there.
func depEdges(t *topologies.Topology, flows []hostsim.FlowSpec, tasks []hostsim.TaskSpec) []depEdge {
	var es []depEdge
	add := func(from int, g int32) {
		var to int
		var d sim.Time
		switch k := hostsim.TaskIndex(g); {
		case g >= 0 && int(g) < len(flows):
			to, d = flows[g].Src, flows[g].Delay
		case g < 0 && int(k) < len(tasks):
			to, d = tasks[k].Host, tasks[k].Delay
		default:
			return
		}
		if from == to || from < 0 || to < 0 || from >= len(t.Hosts) || to >= len(t.Hosts) {
			return
		}
		a, b := t.Hosts[from], t.Hosts[to]
		es = append(es, depEdge{a: min(a, b), b: max(a, b), delay: d})
	}
	for i := range flows {
		f := &flows[i]
		for _, g := range f.OnRecvDone() {
			add(f.Dst, g)
		}
		for _, g := range f.OnSendDone() {
			add(f.Src, g)
		}
	}
	for k := range tasks {
		for _, g := range tasks[k].Next {
			add(tasks[k].Host, g)
		}
	}
	slices.SortFunc(es, func(x, y depEdge) int {
		return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b), cmp.Compare(x.delay, y.delay))
	})
	return slices.CompactFunc(es, func(x, y depEdge) bool { return x.a == y.a && x.b == y.b })
}

// withDeps returns t, or when flows have dependencies between distinct
// hosts a copy of t with one pseudo link per dependency after its links.
// A pseudo link's delay is the dependency's less the larger latency of its
// ends (never below 0), as the engine adds the sender's latency to a link.
func withDeps(t *topologies.Topology, flows []hostsim.FlowSpec, tasks []hostsim.TaskSpec) *topologies.Topology {
	es := depEdges(t, flows, tasks)
	if len(es) == 0 {
		return t
	}
	c := *t
	c.Links = slices.Clip(slices.Clone(t.Links))
	for _, e := range es {
		d := max(0, e.delay-max(t.Nodes[e.a].Latency, t.Nodes[e.b].Latency))
		c.Links = append(c.Links, topologies.Link{A: e.a, B: e.b, Rate: 1, Delay: d})
	}
	return &c
}

// dropDeps removes the pseudo links of withDeps from pl's cuts: the
// lookahead keeps their delay, and LookaheadLink is -1 when a dependency
// sets it.
func dropDeps(pl *Placement, t *topologies.Topology) *Placement {
	n := len(t.Links)
	pl.Cuts = slices.DeleteFunc(pl.Cuts, func(c Cut) bool { return c.Link >= n })
	if pl.LookaheadLink >= n {
		pl.LookaheadLink = -1
	}
	return pl
}

// MakeFlows is Make for a fabric whose flows may depend on each other
// (and on compute tasks): a
// cut zero-delay dependency is an error, and the lookahead is at most the
// smallest delay of a cut dependency.
func MakeFlows(t *topologies.Topology, imps []fabric.LinkImpairment, flows []hostsim.FlowSpec, tasks []hostsim.TaskSpec, part []int) (*Placement, error) {
	if len(part) == len(t.Nodes) {
		for _, e := range depEdges(t, flows, tasks) {
			if part[e.a] != part[e.b] && e.delay-max(t.Nodes[e.a].Latency, t.Nodes[e.b].Latency) <= 0 {
				return nil, fmt.Errorf("partition: %s and %s depend on each other with a delay of %v, which cannot be cut "+
					"(the lookahead would be zero): put them in one partition or give the dependency a delay "+
					"(docs/design.md §11)", t.Nodes[e.a].Name, t.Nodes[e.b].Name, e.delay)
			}
		}
	}
	pl, err := Make(withDeps(t, flows, tasks), imps, part)
	if err != nil {
		return nil, err
	}
	return dropDeps(pl, t), nil
}

// AutoFlows is Auto for a fabric whose flows may depend on each other.
func AutoFlows(t *topologies.Topology, imps []fabric.LinkImpairment, flows []hostsim.FlowSpec, tasks []hostsim.TaskSpec, p int) (*Placement, error) {
	pl, err := Auto(withDeps(t, flows, tasks), imps, p)
	if err != nil {
		return nil, err
	}
	return dropDeps(pl, t), nil
}
