package topologies

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func railCfg(joined bool) RailConfig {
	tc := TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: sim.Microsecond, Queue: QueueConfig{Buffer: 1 << 20}}
	return RailConfig{Servers: 4, GPUs: 2, ServersPerLeaf: 2, Spines: 2, Joined: joined, Host: tc, Fabric: tc}
}

// TestRail_NICiOnRailI: NIC g of every server hangs off a leaf of rail g,
// and the rails meet at the shared spines.
func TestRail_NICiOnRailI(t *testing.T) {
	topo, err := Rail(railCfg(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(topo.Hosts) != 8 || len(topo.Nodes) != 8+4+2 {
		t.Fatalf("%d hosts, %d nodes; want 8 and 14", len(topo.Hosts), len(topo.Nodes))
	}
	for h := 0; h < 8; h++ {
		s, g := h/2, h%2
		l := topo.Links[h]
		want := fmt.Sprintf("rail%d-leaf%d", g, s/2)
		if l.A != h || topo.Nodes[l.B].Name != want {
			t.Errorf("host %d is on %s, want %s", h, topo.Nodes[l.B].Name, want)
		}
	}
	ix, err := Compile(topo)
	if err != nil {
		t.Fatal(err)
	}
	// Host 1 is on rail 1: from rail0-leaf0 the way goes up to both spines.
	if next := ix.Routes().Next(topo.Links[0].B, 1); len(next) != 2 {
		t.Errorf("rail0-leaf0 has %d next hops to host 1 (rail 1), want 2 spines", len(next))
	}
	if _, err := Rail(railCfg(false)); err == nil || !strings.Contains(err.Error(), "NVLink") {
		t.Errorf("separate rails: %v, want the NVLink error", err)
	}
	bad := railCfg(true)
	bad.Servers = 3
	if _, err := Rail(bad); err == nil {
		t.Error("servers_per_leaf not dividing servers: want an error")
	}
}
