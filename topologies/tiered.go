package topologies

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// tieredPlan describes a 2- or 3-tier folded Clos built the way htsim's
// FatTreeTopology::init_network wires it (sim/datacenter/fat_tree_topology.cpp
// in Broadcom/csg-htsim). LeafSpine, FatTree and ParseHtsimTopo all build
// through it, so a fat-tree from FatTree and the same fabric read from a
// .topo file are identical node for node and link for link.
//
// Numbering: hosts first (node i is host i), then ToRs, aggregation
// switches and core switches. ToR t serves hosts t*hostsPerTor ..
// (t+1)*hostsPerTor-1; pod p holds ToRs p*torsPerPod.. and aggregation
// switches p*aggsPerPod..; every ToR links to every aggregation switch of
// its pod (bundle1 parallel links each); the aggregation switch at position
// q of its pod links to cores q, q+aggsPerPod, q+2*aggsPerPod, ...
// (coreGroups of them, bundle2 parallel links each). With 2 tiers there is
// one pod and no core.
//
// Links are created in htsim's order (all host links, then ToR-agg, then
// agg-core), so a switch's port numbers are htsim's FatTreeSwitch port
// numbers.
type tieredPlan struct {
	name                   string
	tiers                  int // switch tiers: 2 or 3
	pods                   int
	hostsPerTor            int
	torsPerPod, aggsPerPod int
	cores                  int // 3 tiers only
	coreGroups             int // distinct cores per aggregation switch
	bundle1, bundle2       int // parallel ToR-agg and agg-core links
	link                   [3]TierConfig
	latency                [3]sim.Time // switch latency of ToR, agg, core
	names                  [3]string   // node name prefixes of ToR, agg, core
}

// size returns the number of nodes and links the plan builds, or ok=false
// if they exceed the package limits (or int).
func (p *tieredPlan) size() (nodes, links int, ok bool) {
	const lim = maxLinks
	tors, ok1 := mulLimit(p.pods, p.torsPerPod, lim)
	hosts, ok2 := mulLimit(tors, p.hostsPerTor, lim)
	aggs, ok3 := mulLimit(p.pods, p.aggsPerPod, lim)
	up1, ok4 := mulLimit(tors, p.aggsPerPod, lim)
	up1, ok5 := mulLimit(up1, p.bundle1, lim)
	up2, ok6 := mulLimit(aggs, p.coreGroups, lim)
	up2, ok7 := mulLimit(up2, p.bundle2, lim)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
		return 0, 0, false
	}
	cores := 0
	if p.tiers == 3 {
		cores = p.cores
	} else {
		up2 = 0
	}
	return hosts + tors + aggs + cores, hosts + up1 + up2, true
}

// checkSize reports a plan beyond the package's size limits.
func (p *tieredPlan) checkSize(field string) error {
	nodes, links, ok := p.size()
	if !ok {
		return fmt.Errorf("%s: the fabric would exceed the limits of %d nodes and %d links", field, maxNodes, maxLinks)
	}
	return checkSize(field, nodes, links)
}

// build creates the topology. Preconditions: the plan is consistent (every
// count positive, cores == coreGroups*aggsPerPod for 3 tiers) and within
// the size limits.
func (p *tieredPlan) build() *Topology {
	nodes, links, _ := p.size()
	tors := p.pods * p.torsPerPod
	hosts := tors * p.hostsPerTor
	aggs := p.pods * p.aggsPerPod
	t := &Topology{
		Name:  p.name,
		Nodes: make([]Node, 0, nodes),
		Links: make([]Link, 0, links),
		Hosts: make([]int, hosts),
	}
	for h := 0; h < hosts; h++ {
		t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("h%d", h), Kind: Host})
		t.Hosts[h] = h
	}
	torBase := len(t.Nodes)
	for i := 0; i < tors; i++ {
		t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("%s%d", p.names[0], i), Kind: Switch, Tier: 1, Latency: p.latency[0]})
	}
	aggBase := len(t.Nodes)
	for i := 0; i < aggs; i++ {
		t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("%s%d", p.names[1], i), Kind: Switch, Tier: 2, Latency: p.latency[1]})
	}
	coreBase := len(t.Nodes)
	if p.tiers == 3 {
		for i := 0; i < p.cores; i++ {
			t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("%s%d", p.names[2], i), Kind: Switch, Tier: 3, Latency: p.latency[2]})
		}
	}
	add := func(a, b, tier int) {
		c := &p.link[tier-1]
		t.Links = append(t.Links, Link{A: a, B: b, Rate: c.Rate, Delay: c.Delay, Queue: c.Queue, Tier: tier})
	}
	// Hosts to ToRs (htsim: "links from lower layer pod switch to server").
	for tor := 0; tor < tors; tor++ {
		for l := 0; l < p.hostsPerTor; l++ {
			add(tor*p.hostsPerTor+l, torBase+tor, 1)
		}
	}
	// ToRs to the aggregation switches of their pod.
	for tor := 0; tor < tors; tor++ {
		pod := tor / p.torsPerPod
		for a := pod * p.aggsPerPod; a < (pod+1)*p.aggsPerPod; a++ {
			for b := 0; b < p.bundle1; b++ {
				add(torBase+tor, aggBase+a, 2)
			}
		}
	}
	// Aggregation switches to cores.
	if p.tiers == 3 {
		for a := 0; a < aggs; a++ {
			pos := a % p.aggsPerPod
			for l := 0; l < p.coreGroups; l++ {
				core := pos + p.aggsPerPod*l
				for b := 0; b < p.bundle2; b++ {
					add(aggBase+a, coreBase+core, 3)
				}
			}
		}
	}
	return t
}
