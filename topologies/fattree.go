package topologies

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// FatTreeConfig is the requested state of a 3-tier k-ary fat-tree.
type FatTreeConfig struct {
	// K is the switch radix: K pods of K/2 ToR (edge) and K/2 aggregation
	// switches, (K/2)^2 core switches, K^3/4 hosts. Even, at least 2.
	K    int
	Host TierConfig // host-ToR links (tier 1)
	Agg  TierConfig // ToR-agg links (tier 2)
	Core TierConfig // agg-core links (tier 3)
	// SwitchLatency is every switch's forwarding latency (Node.Latency).
	SwitchLatency sim.Time
	// Oversubscribed multiplies the hosts per ToR (htsim's meaning): each
	// ToR serves Oversubscribed*K/2 hosts over K/2 uplinks. 0 or 1: none.
	Oversubscribed int
}

// FatTree builds a k-ary fat-tree (Al-Fares et al., SIGCOMM 2008).
//
// Nodes: hosts h0.. (node i is host i), then tor0.., agg0.., core0...
// ToR t serves hosts t*H .. t*H+H-1 (H = Oversubscribed*K/2) and sits in
// pod t/(K/2); each ToR links to every aggregation switch of its pod; the
// aggregation switch at position q of its pod links to cores q, q+K/2,
// q+K, ... (K/2 of them). Al-Fares numbers the cores the other way round
// (position q takes cores q*K/2 .. q*K/2+K/2-1); the two fabrics are the
// same up to the names of the cores. We follow htsim's striping so that
// FatTree and ParseHtsimTopo give identical topologies.
//
// Links come in htsim's order: host links, then ToR-agg, then agg-core.
func FatTree(cfg FatTreeConfig) (*Topology, error) {
	k := cfg.K
	if k < 2 || k%2 != 0 {
		return nil, fmt.Errorf("fattree.k: must be even and >= 2, got %d", k)
	}
	if k > 1024 {
		return nil, fmt.Errorf("fattree.k: must be at most 1024, got %d", k)
	}
	f := cfg.Oversubscribed
	if f < 0 {
		return nil, fmt.Errorf("fattree.oversubscribed: must not be negative, got %d", f)
	}
	if f == 0 {
		f = 1
	}
	if f > maxNodes {
		return nil, fmt.Errorf("fattree.oversubscribed: must be at most %d, got %d", maxNodes, f)
	}
	if err := checkTier("fattree.host", cfg.Host, false); err != nil {
		return nil, err
	}
	if err := checkTier("fattree.agg", cfg.Agg, false); err != nil {
		return nil, err
	}
	if err := checkTier("fattree.core", cfg.Core, false); err != nil {
		return nil, err
	}
	if cfg.SwitchLatency < 0 {
		return nil, fmt.Errorf("fattree.switchLatency: must not be negative, got %v", cfg.SwitchLatency)
	}
	half := k / 2
	name := fmt.Sprintf("fattree-k%d", k)
	if f > 1 {
		name = fmt.Sprintf("fattree-k%d-o%d", k, f)
	}
	sl := cfg.SwitchLatency
	p := &tieredPlan{
		name:        name,
		tiers:       3,
		pods:        k,
		hostsPerTor: f * half,
		torsPerPod:  half,
		aggsPerPod:  half,
		cores:       half * half,
		coreGroups:  half,
		bundle1:     1,
		bundle2:     1,
		link:        [3]TierConfig{cfg.Host, cfg.Agg, cfg.Core},
		latency:     [3]sim.Time{sl, sl, sl},
		names:       [3]string{"tor", "agg", "core"},
	}
	if err := p.checkSize("fattree.k"); err != nil {
		return nil, err
	}
	return p.build(), nil
}
