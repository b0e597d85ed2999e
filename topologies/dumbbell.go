package topologies

import (
	"fmt"
)

// DumbbellConfig is the requested state of a dumbbell: Senders hosts on
// switch "left", Receivers hosts on switch "right", and one bottleneck
// link between the two switches.
type DumbbellConfig struct {
	Senders, Receivers int
	Host               TierConfig // every host link
	Bottleneck         TierConfig // the left-right link
}

// Dumbbell builds a dumbbell. Hosts are numbered senders first (h0 ..
// h{Senders-1} on "left"), then receivers; node i is host i, followed by
// "left" and "right". Links are the sender links, the receiver links, and
// last the bottleneck. Host links are tier 1; the bottleneck is tier 2
// (the fabric tier), though both switches are tier-1 nodes.
func Dumbbell(cfg DumbbellConfig) (*Topology, error) {
	if cfg.Senders < 1 {
		return nil, fmt.Errorf("dumbbell.senders: must be at least 1, got %d", cfg.Senders)
	}
	if cfg.Receivers < 1 {
		return nil, fmt.Errorf("dumbbell.receivers: must be at least 1, got %d", cfg.Receivers)
	}
	if cfg.Senders > maxNodes-2 || cfg.Receivers > maxNodes-2-cfg.Senders {
		return nil, fmt.Errorf("dumbbell.receivers: %d senders and %d receivers exceed the limit of %d nodes",
			cfg.Senders, cfg.Receivers, maxNodes)
	}
	if err := checkTier("dumbbell.host", cfg.Host, false); err != nil {
		return nil, err
	}
	if err := checkTier("dumbbell.bottleneck", cfg.Bottleneck, false); err != nil {
		return nil, err
	}
	hosts := cfg.Senders + cfg.Receivers
	t := &Topology{
		Name:  fmt.Sprintf("dumbbell-%dx%d", cfg.Senders, cfg.Receivers),
		Nodes: make([]Node, 0, hosts+2),
		Links: make([]Link, 0, hosts+1),
		Hosts: make([]int, hosts),
	}
	for h := 0; h < hosts; h++ {
		t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("h%d", h), Kind: Host})
		t.Hosts[h] = h
	}
	left, right := hosts, hosts+1
	t.Nodes = append(t.Nodes,
		Node{Name: "left", Kind: Switch, Tier: 1},
		Node{Name: "right", Kind: Switch, Tier: 1})
	hl := cfg.Host
	for h := 0; h < hosts; h++ {
		sw := left
		if h >= cfg.Senders {
			sw = right
		}
		t.Links = append(t.Links, Link{A: h, B: sw, Rate: hl.Rate, Delay: hl.Delay, Queue: hl.Queue, Tier: 1})
	}
	b := cfg.Bottleneck
	t.Links = append(t.Links, Link{A: left, B: right, Rate: b.Rate, Delay: b.Delay, Queue: b.Queue, Tier: 2})
	return t, nil
}
