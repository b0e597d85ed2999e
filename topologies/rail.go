package topologies

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// RailConfig is the requested state of a rail-optimised fabric: Servers
// servers of GPUs NICs each, NIC g of every server on rail g. Each rail is
// a leaf-spine of its own: leaves of ServersPerLeaf servers' NIC g, every
// leaf of the rail on every one of the rail's Spines. With Joined the
// rails share their spines instead (Spines in all, every leaf of every
// rail on each), so traffic between rails may cross a spine.
//
// With NVLink the servers' intra-server fabric is built too: the hosts
// are then the GPUs, each on its own NIC (a switch node: the GPU's PCIe
// attachment, whose port towards the leaf is the NIC), and every NIC of a
// server on the server's NVSwitch, so that traffic between rails crosses
// the source server's NVLink to the NIC on the destination's rail, as
// NCCL's PXN does (Node.Group). Without NVLink, separate rails (Joined
// false) leave the NICs of a server unconnected, which is an error unless
// the servers have one NIC.
type RailConfig struct {
	Servers, GPUs, ServersPerLeaf, Spines int
	Joined                                bool
	Host                                  TierConfig // NIC-leaf links
	Fabric                                TierConfig // leaf-spine links (rate required)
	SwitchLatency                         sim.Time
	// NVLink, when set, is the GPUs' links to their NICs and the NICs'
	// links to their server's NVSwitch (the GPU-NIC links have no
	// propagation delay; an NVLink hop costs Delay); NVSwitchLatency is
	// the NVSwitch's forwarding latency (a NIC forwards in zero time).
	NVLink          *TierConfig
	NVSwitchLatency sim.Time
}

// Rail builds a rail-optimised fabric. Nodes are the hosts h0.. (NICs,
// or GPUs with NVLink; host s*GPUs+g is NIC or GPU g of server s), then
// the leaves rail<g>-leaf<l> rail by rail, then the spines (spine<j> when
// joined, else rail<g>-spine<j>), then with NVLink the NICs h<i>-nic and
// the NVSwitches server<s>-nvswitch. Links: with NVLink every GPU to its
// NIC (tier 0); every NIC to its leaf in host order (tier 1); every leaf to
// its spines, leaf by leaf (tier 2); with NVLink every NIC to its
// server's NVSwitch (tier 0).
func Rail(cfg RailConfig) (*Topology, error) {
	switch {
	case cfg.Servers < 1:
		return nil, fmt.Errorf("rail.servers: must be at least 1, got %d", cfg.Servers)
	case cfg.GPUs < 1:
		return nil, fmt.Errorf("rail.gpus_per_server: must be at least 1, got %d", cfg.GPUs)
	case cfg.ServersPerLeaf < 1 || cfg.Servers%cfg.ServersPerLeaf != 0:
		return nil, fmt.Errorf("rail.servers_per_leaf: must divide servers (%d), got %d", cfg.Servers, cfg.ServersPerLeaf)
	case cfg.Spines < 1:
		return nil, fmt.Errorf("rail.spines: must be at least 1, got %d", cfg.Spines)
	case cfg.SwitchLatency < 0:
		return nil, fmt.Errorf("rail.switch_latency: must not be negative, got %v", cfg.SwitchLatency)
	case !cfg.Joined && cfg.GPUs > 1 && cfg.NVLink == nil:
		return nil, fmt.Errorf("rail.joined: separate rails leave the NICs of one server unconnected: " +
			"join the rails at the spines, or model the servers' NVLink (rail.nvlink), over which NCCL crosses rails")
	case cfg.NVSwitchLatency < 0:
		return nil, fmt.Errorf("rail.nvswitch_latency: must not be negative, got %v", cfg.NVSwitchLatency)
	case cfg.NVLink == nil && cfg.NVSwitchLatency != 0:
		return nil, fmt.Errorf("rail.nvswitch_latency: needs rail.nvlink")
	}
	if cfg.NVLink != nil {
		if err := checkTier("rail.nvlink", *cfg.NVLink, false); err != nil {
			return nil, err
		}
	}
	if err := checkTier("rail.host", cfg.Host, false); err != nil {
		return nil, err
	}
	if err := checkTier("rail.fabric", cfg.Fabric, false); err != nil {
		return nil, err
	}
	hosts, ok := mulLimit(cfg.Servers, cfg.GPUs, maxNodes)
	if !ok {
		return nil, fmt.Errorf("rail: %d servers of %d NICs is more than %d nodes", cfg.Servers, cfg.GPUs, maxNodes)
	}
	leavesPerRail := cfg.Servers / cfg.ServersPerLeaf
	leaves := leavesPerRail * cfg.GPUs
	spines := cfg.Spines
	if !cfg.Joined {
		spines *= cfg.GPUs
	}
	up := int64(leaves) * int64(cfg.Spines)
	nodes, links := int64(hosts+leaves+spines), up+int64(hosts)
	if cfg.NVLink != nil {
		nodes += int64(hosts + cfg.Servers)
		links += 2 * int64(hosts)
	}
	if err := checkSize("rail", int(min(nodes, int64(maxNodes)+1)), int(min(links, int64(maxLinks)+1))); err != nil {
		return nil, err
	}
	t := &Topology{Name: fmt.Sprintf("rail-%dx%d", cfg.Servers, cfg.GPUs), Hosts: make([]int, hosts)}
	for h := 0; h < hosts; h++ {
		t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("h%d", h), Kind: Host})
		t.Hosts[h] = h
	}
	leafBase := len(t.Nodes)
	for g := 0; g < cfg.GPUs; g++ {
		for l := 0; l < leavesPerRail; l++ {
			t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("rail%d-leaf%d", g, l), Kind: Switch, Tier: 1, Latency: cfg.SwitchLatency})
		}
	}
	spineBase := len(t.Nodes)
	for j := 0; j < spines; j++ {
		name := fmt.Sprintf("spine%d", j)
		if !cfg.Joined {
			name = fmt.Sprintf("rail%d-spine%d", j/cfg.Spines, j%cfg.Spines)
		}
		t.Nodes = append(t.Nodes, Node{Name: name, Kind: Switch, Tier: 2, Latency: cfg.SwitchLatency})
	}
	// With NVLink: the NICs h<i>-nic, then the NVSwitches, after the
	// spines (so leaves and spines keep their indices).
	nicBase, nvsBase := -1, -1
	if cfg.NVLink != nil {
		nicBase = len(t.Nodes)
		for h := 0; h < hosts; h++ {
			t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("h%d-nic", h), Kind: Switch, Group: h/cfg.GPUs + 1})
		}
		nvsBase = len(t.Nodes)
		for s := 0; s < cfg.Servers; s++ {
			t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("server%d-nvswitch", s), Kind: Switch, Latency: cfg.NVSwitchLatency, Group: s + 1})
		}
	}
	add := func(a, b, tier int, c *TierConfig) {
		t.Links = append(t.Links, Link{A: a, B: b, Rate: c.Rate, Delay: c.Delay, Queue: c.Queue, Tier: tier})
	}
	if cfg.NVLink != nil {
		gpu := *cfg.NVLink
		gpu.Delay = 0
		for h := 0; h < hosts; h++ {
			add(h, nicBase+h, 0, &gpu)
		}
	}
	for h := 0; h < hosts; h++ {
		s, g := h/cfg.GPUs, h%cfg.GPUs
		nic := h
		if cfg.NVLink != nil {
			nic = nicBase + h
		}
		add(nic, leafBase+g*leavesPerRail+s/cfg.ServersPerLeaf, 1, &cfg.Host)
	}
	for leaf := 0; leaf < leaves; leaf++ {
		g := leaf / leavesPerRail
		for j := 0; j < cfg.Spines; j++ {
			sp := j
			if !cfg.Joined {
				sp = g*cfg.Spines + j
			}
			add(leafBase+leaf, spineBase+sp, 2, &cfg.Fabric)
		}
	}
	if cfg.NVLink != nil {
		for h := 0; h < hosts; h++ {
			add(nicBase+h, nvsBase+h/cfg.GPUs, 0, cfg.NVLink)
		}
	}
	return t, nil
}
