package results

import (
	"slices"
	"testing"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// TestIdealFCTRoutes_SameAsCompiling checks that the ideal FCTs over the
// routes a one-process fabric keeps (with CompilePorts' adjacency) are the
// ones IdealFCT gets by compiling the topology, on a fat-tree with mixed
// rates and a rail fabric with NVLink hops.
func TestIdealFCTRoutes_SameAsCompiling(t *testing.T) {
	ft, err := topologies.FatTree(topologies.FatTreeConfig{K: 4, SwitchLatency: 100 * sim.Nanosecond,
		Host: topologies.TierConfig{Rate: 25 * sim.GbitPerSecond, Delay: sim.Microsecond},
		Agg:  topologies.TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: 2 * sim.Microsecond},
		Core: topologies.TierConfig{Rate: 40 * sim.GbitPerSecond, Delay: 3 * sim.Microsecond}})
	if err != nil {
		t.Fatal(err)
	}
	rail, err := topologies.Rail(topologies.RailConfig{Servers: 4, GPUs: 2, ServersPerLeaf: 2, Spines: 2,
		Host: topologies.TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: sim.Microsecond}, Fabric: topologies.TierConfig{Rate: 200 * sim.GbitPerSecond, Delay: sim.Microsecond},
		NVLink: &topologies.TierConfig{Rate: 900 * sim.GbitPerSecond, Delay: 100 * sim.Nanosecond}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := hostsim.Config{MTU: 4096, Header: 64}
	for name, topo := range map[string]*topologies.Topology{"fattree": ft, "rail": rail} {
		var flows []hostsim.FlowSpec
		n := len(topo.Hosts)
		for s := range n {
			for _, size := range []int64{100, 4032, 1 << 20} {
				flows = append(flows, hostsim.FlowSpec{Src: s, Dst: (s*7 + 3) % n, Size: size})
			}
		}
		ix, err := topologies.Compile(topo)
		if err != nil {
			t.Fatal(err)
		}
		want := IdealFCT(topo, cfg, flows)
		got := IdealFCTRoutes(topo, cfg, flows, ix.Routes())
		if !slices.Equal(got, want) {
			t.Errorf("%s: ideal FCTs over kept routes %v, compiled %v", name, got, want)
		}
		if !slices.ContainsFunc(want, func(v sim.Time) bool { return v > 0 }) {
			t.Errorf("%s: no ideal FCT computed: %v", name, want)
		}
	}
}
