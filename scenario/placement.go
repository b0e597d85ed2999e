package scenario

import (
	"fmt"
	"slices"

	"github.com/lockstep-sim/lockstep/topologies"
)

// Placement modes (the `placement.mode` values).
const (
	// PlacementAuto cuts the longest-delay links first and balances the
	// elements' expected load (package partition documents the heuristic).
	PlacementAuto = "auto"
	// PlacementPerElement puts every host and every switch in its own
	// partition: the literal "each element is a process" form.
	PlacementPerElement = "per-element"
	// PlacementMap takes every node's partition from Placement.Map.
	PlacementMap = "map"
)

// Placement is the scenario's `placement:` section: how a distributed run
// (`lockstep run --partitions`) cuts the fabric into partitions, one per
// node process (docs/design.md §3). A single-process run ignores it.
//
//	placement: {mode: auto, partitions: 4}
//	placement: {mode: per-element}
//	placement:
//	  mode: map
//	  map: {h0: 0, h1: 0, left: 0, right: 1, h2: 1, h3: 1}
type Placement struct {
	// Mode: auto (default), per-element or map.
	Mode string `yaml:"mode"`
	// Partitions is P for mode auto (default: `--partitions`, else 2).
	Partitions int `yaml:"partitions"`
	// Map gives every node (by name) its partition, numbered 0..P-1 with
	// none empty; mode map only.
	Map map[string]int `yaml:"map"`
	// TwoPhase: a node runs, while it waits for the next window's grant,
	// the events that no packet of the window it ended can reach
	// (docs/decisions.md, "Two-phase windows"). Unset: on over NATS, off
	// in memory (measured slower there); true: on in memory too; false:
	// off. The outputs are the same either way.
	TwoPhase *bool `yaml:"two_phase"`
}

// Asks says the section asks for a distributed run: it is there and says
// more than two_phase (which only tunes a run distributed by the
// command line).
func (p *Placement) Asks() bool {
	return p != nil && (p.TwoPhase == nil || p.Mode != "" || p.Partitions != 0 || p.Map != nil)
}

// TwoPhaseOrDefault is TwoPhase with the default of a run over NATS
// filled in (true).
func (p *Placement) TwoPhaseOrDefault() bool { return p == nil || p.TwoPhase == nil || *p.TwoPhase }

// TwoPhaseInMemory says an in-memory run uses two-phase windows: only
// when TwoPhase is set true.
func (p *Placement) TwoPhaseInMemory() bool { return p != nil && p.TwoPhase != nil && *p.TwoPhase }

// ModeOrDefault is Mode with the default filled in.
func (p *Placement) ModeOrDefault() string {
	if p.Mode == "" {
		return PlacementAuto
	}
	return p.Mode
}

// Validate checks the section against the built topology. Errors are
// *Error values naming file and the field under `placement`.
func (p *Placement) Validate(file string, t *topologies.Topology) error {
	errf := func(path, format string, args ...any) error {
		return &Error{File: file, Path: "placement" + path, Msg: fmt.Sprintf(format, args...)}
	}
	n := len(t.Nodes)
	mode := p.ModeOrDefault()
	switch mode {
	case PlacementAuto, PlacementPerElement, PlacementMap:
	default:
		return errf(".mode", "unknown mode %q (known: auto, per-element, map)", p.Mode)
	}
	if p.Partitions < 0 {
		return errf(".partitions", "must not be negative, got %d", p.Partitions)
	}
	if p.Partitions != 0 && mode != PlacementAuto {
		return errf(".partitions", "only for mode auto: mode %s fixes the number of partitions", mode)
	}
	if p.Partitions > n {
		return errf(".partitions", "the fabric has %d nodes, so at most %d partitions, got %d", n, n, p.Partitions)
	}
	if mode != PlacementMap {
		if len(p.Map) != 0 {
			return errf(".map", "only for mode map, but mode is %s", mode)
		}
		return nil
	}
	if len(p.Map) == 0 {
		return errf(".map", "must give every node's partition for mode map")
	}
	byName := make(map[string]int, n)
	for i, nd := range t.Nodes {
		byName[nd.Name] = i
	}
	// Sorted keys, so that the error for several bad names is always the
	// same one.
	names := make([]string, 0, len(p.Map))
	for name := range p.Map {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := 0
	for _, name := range names {
		if _, ok := byName[name]; !ok {
			return errf(".map."+name, "no node named %q", name)
		}
		v := p.Map[name]
		if v < 0 {
			return errf(".map."+name, "partition must not be negative, got %d", v)
		}
		if v >= n {
			return errf(".map."+name, "partition %d is out of range: the fabric has %d nodes", v, n)
		}
		parts = max(parts, v+1)
	}
	used := make([]bool, parts)
	for i, nd := range t.Nodes {
		v, ok := p.Map[nd.Name]
		if !ok {
			return errf(".map", "node %s (node %d) has no partition: mode map must place every node", nd.Name, i)
		}
		used[v] = true
	}
	if i := slices.Index(used, false); i >= 0 {
		return errf(".map", "partition %d is empty: partitions must be numbered 0..%d with none empty", i, parts-1)
	}
	return nil
}

// NodeMap returns every node's partition for mode map, by node index.
// Precondition: Validate returned nil and the mode is map.
func (p *Placement) NodeMap(t *topologies.Topology) []int {
	part := make([]int, len(t.Nodes))
	for i, nd := range t.Nodes {
		part[i] = p.Map[nd.Name]
	}
	return part
}
