package topologies

import (
	"fmt"
	"math"

	"github.com/lockstep-sim/lockstep/sim"
)

// LeafSpineConfig is the requested state of a two-tier leaf-spine fabric.
type LeafSpineConfig struct {
	Leaves, Spines, HostsPerLeaf int
	Host                         TierConfig // host-leaf links
	// Fabric sets the leaf-spine links. A zero Fabric.Rate is derived from
	// Oversubscription.
	Fabric TierConfig
	// Oversubscription is a leaf's host bandwidth over its uplink
	// bandwidth: HostsPerLeaf*Host.Rate / (Spines*Fabric.Rate). Zero means
	// 1 when Fabric.Rate is derived, and "whatever the rates give" when it
	// is set; when both are set they must agree.
	Oversubscription float64
	// SwitchLatency is every switch's forwarding latency (Node.Latency).
	SwitchLatency sim.Time
}

// oversubTolerance is the relative error allowed between a given
// Oversubscription and the one the rates give.
const oversubTolerance = 1e-9

// LeafSpine builds a leaf-spine fabric: every leaf links to every spine.
// Nodes are the hosts h0.. (node i is host i; leaf l serves hosts
// l*HostsPerLeaf ..), then leaf0.., then spine0... Links are all host
// links (tier 1) in host order, then leaf-spine links (tier 2), leaf by
// leaf, spines in order. This is htsim's 2-tier FatTreeTopology wiring.
func LeafSpine(cfg LeafSpineConfig) (*Topology, error) {
	if cfg.Leaves < 1 {
		return nil, fmt.Errorf("leafspine.leaves: must be at least 1, got %d", cfg.Leaves)
	}
	if cfg.Spines < 1 {
		return nil, fmt.Errorf("leafspine.spines: must be at least 1, got %d", cfg.Spines)
	}
	if cfg.HostsPerLeaf < 1 {
		return nil, fmt.Errorf("leafspine.hostsPerLeaf: must be at least 1, got %d", cfg.HostsPerLeaf)
	}
	if err := checkTier("leafspine.host", cfg.Host, false); err != nil {
		return nil, err
	}
	if err := checkTier("leafspine.fabric", cfg.Fabric, true); err != nil {
		return nil, err
	}
	if cfg.SwitchLatency < 0 {
		return nil, fmt.Errorf("leafspine.switchLatency: must not be negative, got %v", cfg.SwitchLatency)
	}
	o := cfg.Oversubscription
	if !finite(o) || o < 0 {
		return nil, fmt.Errorf("leafspine.oversubscription: must be positive (or 0 for the default), got %v", o)
	}
	fabric := cfg.Fabric
	hostBW := float64(cfg.HostsPerLeaf) * float64(cfg.Host.Rate)
	if fabric.Rate == 0 {
		if o == 0 {
			o = 1
		}
		r := math.Round(hostBW / (float64(cfg.Spines) * o))
		if r < 1 || r >= math.MaxInt64 {
			return nil, fmt.Errorf("leafspine.fabric.rate: %d hosts x %v over %d spines at oversubscription %v gives %v bit/s, out of range",
				cfg.HostsPerLeaf, cfg.Host.Rate, cfg.Spines, o, r)
		}
		fabric.Rate = sim.Bandwidth(r)
	} else if o != 0 {
		got := hostBW / (float64(cfg.Spines) * float64(fabric.Rate))
		if math.Abs(got-o) > oversubTolerance*o {
			return nil, fmt.Errorf("leafspine.oversubscription: %v disagrees with fabric.rate %v: %d hosts x %v over %d spines x %v is %v",
				o, fabric.Rate, cfg.HostsPerLeaf, cfg.Host.Rate, cfg.Spines, fabric.Rate, got)
		}
	}
	p := &tieredPlan{
		name:        fmt.Sprintf("leafspine-%dx%dx%d", cfg.Leaves, cfg.Spines, cfg.HostsPerLeaf),
		tiers:       2,
		pods:        1,
		hostsPerTor: cfg.HostsPerLeaf,
		torsPerPod:  cfg.Leaves,
		aggsPerPod:  cfg.Spines,
		bundle1:     1,
		link:        [3]TierConfig{cfg.Host, fabric},
		latency:     [3]sim.Time{cfg.SwitchLatency, cfg.SwitchLatency},
		names:       [3]string{"leaf", "spine"},
	}
	if err := p.checkSize("leafspine"); err != nil {
		return nil, err
	}
	return p.build(), nil
}
