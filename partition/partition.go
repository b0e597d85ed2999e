// Package partition places the elements of a fabric into partitions, one
// per node process, and derives what the lockstep barrier needs from the
// cut: the lookahead L, the smallest delay of a cut link (docs/design.md §3).
//
// Three placements exist: Auto (a heuristic, see auto.go), PerElement (every
// host and switch alone: the literal "each element is a process" form) and
// Make (an explicit node -> partition map, as a scenario's placement.map
// gives). All three end in Make, which checks the map and computes the cut.
//
// Delays are those the engine applies (fabric.New): a link direction's
// propagation delay plus the sending node's forwarding latency; an
// impairment schedule that changes a direction's delay contributes its new
// values too, since the engine replaces the delay with them. Jitter and
// reordering only add delay, so they never shorten the lookahead.
//
// The package is pure: no I/O, no clocks, no map iteration reaching output.
package partition

import (
	"fmt"
	"slices"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// Cut is a link whose two ends lie in different partitions.
type Cut struct {
	Link         int // index into Topology.Links
	A, B         int // its end nodes
	PartA, PartB int // their partitions
	// Delay is the smaller of the two directions' smallest engine delays.
	Delay sim.Time
}

// Placement is a fabric cut into P partitions.
type Placement struct {
	P int
	// Part is every topology node's partition, 0..P-1, by node index.
	Part []int
	// Lookahead is the smallest delay of a cut link (sim.Never when nothing
	// is cut), and LookaheadLink that link's index (-1 when none).
	Lookahead     sim.Time
	LookaheadLink int
	// Elements, Hosts and Load are per partition: the number of elements,
	// of hosts among them, and the summed Weights.
	Elements []int
	Hosts    []int
	Load     []int64
	// Cuts lists the cut links in link order.
	Cuts []Cut
}

// Local reports whether topology node belongs to partition i, in the form
// fabric.Config.Local takes.
func (p *Placement) Local(i int) func(node int) bool {
	return func(node int) bool { return p.Part[node] == i }
}

// Imbalance is the largest partition load over the mean load (1 is
// perfect balance).
func (p *Placement) Imbalance() float64 {
	var total, hi int64
	for _, l := range p.Load {
		total += l
		hi = max(hi, l)
	}
	if total == 0 {
		return 1
	}
	return float64(hi) * float64(p.P) / float64(total)
}

// Weights is every node's expected load, the quantity Auto balances: 1 per
// port, so a host weighs 1 and a switch its number of ports. A packet costs
// an element one arrival and one transmit completion per hop, and a switch
// forwards for all its ports while a host only sends and receives its own
// flows, so ports are a topology-only proxy for events. (A workload-aware
// weight, e.g. the flows' bytes per host, would do better for skewed
// workloads; NB(partition): not done.)
func Weights(t *topologies.Topology) []int64 {
	w := make([]int64, len(t.Nodes))
	in := func(v int) bool { return v >= 0 && v < len(w) }
	for _, l := range t.Links { // a node's ports are the links that touch it
		if in(l.A) && in(l.B) {
			w[l.A]++
			w[l.B]++
		}
	}
	for i := range w {
		w[i] = portWeight * max(1, w[i])
		if t.Nodes[i].Kind == topologies.Host {
			w[i] += hostWeight
		}
	}
	return w
}

// portWeight and hostWeight: a switch port costs 2 units, a host 3 (its
// port's events plus its flows' transport work). Measured on perm1024's
// profile: a host's events cost 1.6x a switch port's (docs/decisions.md,
// "The default cut").
const (
	portWeight = 2
	hostWeight = 1
)

// DirDelays returns, for every link direction (indexed as fabric.DirID),
// the smallest delay the engine can give a packet on it: the link's delay
// plus the sender's latency, or a smaller value an impairment schedule
// switches to.
func DirDelays(t *topologies.Topology, imps []fabric.LinkImpairment) ([]sim.Time, error) {
	d := make([]sim.Time, 2*len(t.Links))
	for i, l := range t.Links {
		d[fabric.DirID(i, true)] = l.Delay + t.Nodes[l.A].Latency
		d[fabric.DirID(i, false)] = l.Delay + t.Nodes[l.B].Latency
	}
	// fabric.New attaches each direction the last impairment naming it.
	eff := make([]*sim.Impairments, len(d))
	for _, im := range imps {
		if im.Link < 0 || im.Link >= len(t.Links) {
			return nil, fmt.Errorf("partition: impairment on link %d: the fabric has %d links", im.Link, len(t.Links))
		}
		if im.AtoB {
			eff[fabric.DirID(im.Link, true)] = im.Imp
		}
		if im.BtoA {
			eff[fabric.DirID(im.Link, false)] = im.Imp
		}
	}
	for dir, im := range eff {
		if im == nil {
			continue
		}
		for _, c := range im.Schedule {
			if c.Kind == sim.ChangeDelay {
				d[dir] = min(d[dir], c.Delay)
			}
		}
	}
	return d, nil
}

// linkDelays is DirDelays folded to one value per link: the smaller
// direction.
func linkDelays(t *topologies.Topology, imps []fabric.LinkImpairment) ([]sim.Time, error) {
	dd, err := DirDelays(t, imps)
	if err != nil {
		return nil, err
	}
	d := make([]sim.Time, len(t.Links))
	for i := range d {
		d[i] = min(dd[fabric.DirID(i, true)], dd[fabric.DirID(i, false)])
	}
	return d, nil
}

// Make builds the placement that puts node i into partition part[i]. The
// partitions must be numbered 0..P-1 with none empty, and no cut link may
// have a zero delay (the lookahead would be zero and no window could ever
// be granted).
func Make(t *topologies.Topology, imps []fabric.LinkImpairment, part []int) (*Placement, error) {
	n := len(t.Nodes)
	if len(part) != n {
		return nil, fmt.Errorf("partition: map has %d entries for %d nodes", len(part), n)
	}
	if n == 0 {
		return nil, fmt.Errorf("partition: the fabric has no nodes")
	}
	P := 0
	for i, v := range part {
		if v < 0 || v >= n {
			return nil, fmt.Errorf("partition: node %d (%s): partition %d out of range 0..%d", i, t.Nodes[i].Name, v, n-1)
		}
		P = max(P, v+1)
	}
	pl := &Placement{P: P, Part: slices.Clone(part), Lookahead: sim.Never, LookaheadLink: -1,
		Elements: make([]int, P), Hosts: make([]int, P), Load: make([]int64, P)}
	w := Weights(t)
	for i, v := range part {
		pl.Elements[v]++
		pl.Load[v] += w[i]
		if t.Nodes[i].Kind == topologies.Host {
			pl.Hosts[v]++
		}
	}
	if i := slices.Index(pl.Elements, 0); i >= 0 {
		return nil, fmt.Errorf("partition: partition %d is empty: partitions must be numbered 0..%d with none empty", i, P-1)
	}
	delays, err := linkDelays(t, imps)
	if err != nil {
		return nil, err
	}
	for i, l := range t.Links {
		if part[l.A] == part[l.B] {
			continue
		}
		c := Cut{Link: i, A: l.A, B: l.B, PartA: part[l.A], PartB: part[l.B], Delay: delays[i]}
		if c.Delay <= 0 {
			return nil, fmt.Errorf("partition: link %d (%s - %s) has a zero delay and cannot be cut "+
				"(the lookahead would be zero): put %s and %s in one partition",
				i, t.Nodes[l.A].Name, t.Nodes[l.B].Name, t.Nodes[l.A].Name, t.Nodes[l.B].Name)
		}
		pl.Cuts = append(pl.Cuts, c)
		if c.Delay < pl.Lookahead {
			pl.Lookahead, pl.LookaheadLink = c.Delay, i
		}
	}
	return pl, nil
}

// PerElement puts every node in its own partition.
func PerElement(t *topologies.Topology, imps []fabric.LinkImpairment) (*Placement, error) {
	part := make([]int, len(t.Nodes))
	for i := range part {
		part[i] = i
	}
	return Make(t, imps, part)
}
