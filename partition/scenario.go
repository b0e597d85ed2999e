package partition

import (
	"fmt"
	"slices"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/scenario"
)

// DefaultPartitions is P for mode auto when neither the scenario nor the
// command line gives one.
const DefaultPartitions = 2

// ForScenario places a built scenario's fabric as its placement section
// says, with p (from `--partitions`; 0: not given) overriding the section's
// partition count for mode auto. A scenario without a placement section is
// placed by Auto. For modes per-element and map, p must be 0 or agree with
// the count the mode fixes.
func ForScenario(b *scenario.Built, p int) (*Placement, error) {
	sp := b.Scenario.Placement
	if sp == nil {
		sp = &scenario.Placement{}
	}
	if err := sp.Validate(b.File, b.Topo); err != nil {
		return nil, err
	}
	t, imps, flows, tasks := b.Topo, b.Fabric.Impairments, b.Fabric.Flows, b.Fabric.Tasks
	var pl *Placement
	var err error
	switch sp.ModeOrDefault() {
	case scenario.PlacementPerElement:
		part := make([]int, len(t.Nodes))
		for i := range part {
			part[i] = i
		}
		pl, err = MakeFlows(t, imps, flows, tasks, part)
	case scenario.PlacementMap:
		pl, err = MakeFlows(t, imps, flows, tasks, sp.NodeMap(t))
	default:
		n := p
		if n == 0 {
			n = sp.Partitions
		}
		if n == 0 {
			n = DefaultPartitions
		}
		pl, err = AutoFlows(t, imps, flows, tasks, n)
		if err != nil {
			return nil, err
		}
		return onePartitionIfCompat(b, WithExternal(pl, b))
	}
	if err != nil {
		return nil, err
	}
	if p != 0 && p != pl.P {
		return nil, fmt.Errorf("--partitions %d: the scenario's placement (mode %s) has %d partitions", p, sp.ModeOrDefault(), pl.P)
	}
	return onePartitionIfCompat(b, WithExternal(pl, b))
}

// onePartitionIfCompat returns pl, or refuses it when a compatibility
// profile's run would span several partitions: usage, caught before
// anything runs (the fabric would refuse it in each partition, after the
// run started).
func onePartitionIfCompat(b *scenario.Built, pl *Placement) (*Placement, error) {
	if b.Fabric.Compat != nil && pl.P > 1 {
		return nil, fmt.Errorf("%s: compat %s runs in one partition (STrack-Sim orders events of equal time by one global counter), not %d",
			b.File, b.Scenario.Compat, pl.P)
	}
	return pl, nil
}

// WithExternal bounds pl's lookahead by the external elements of b
// (scenario field external, fabric.ExternalLookahead): a partition steps
// them at the end of each of the barrier's windows, so a window must be
// no longer than the smallest delay of a link leaving one, cut or not.
// LookaheadLink then names that link. Every placement of a scenario goes
// through it (ForScenario, the default cut, a node's FromSetup), so the
// launcher, the coordinators and the nodes agree on the lookahead.
func WithExternal(pl *Placement, b *scenario.Built) *Placement {
	if pl == nil || len(b.Fabric.External) == 0 {
		return pl
	}
	nodes := make([]int, 0, len(b.Fabric.External))
	for n := range b.Fabric.External {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	if l, link := fabric.ExternalLookahead(b.Topo, nodes); l < pl.Lookahead {
		pl.Lookahead, pl.LookaheadLink = l, link
	}
	return pl
}
