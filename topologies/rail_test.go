package topologies

import (
	"fmt"
	"slices"
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

func railNVLinkCfg(joined bool) RailConfig {
	c := railCfg(joined)
	c.Spines = 1
	nv := TierConfig{Rate: 900 * sim.GbitPerSecond, Delay: 100 * sim.Nanosecond, Queue: QueueConfig{Buffer: 4 << 20}}
	c.NVLink, c.NVSwitchLatency = &nv, 50*sim.Nanosecond
	return c
}

// TestRail_NVLinkWiring: with NVLink every GPU hangs off its own NIC, the
// NIC off its rail's leaf and its server's NVSwitch; NICs and NVSwitch of
// one server share a group; separate rails are allowed.
func TestRail_NVLinkWiring(t *testing.T) {
	topo, err := Rail(railNVLinkCfg(false))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := Compile(topo)
	if err != nil {
		t.Fatal(err)
	}
	// 8 GPUs, 4 leaves (2 per rail), 2 spines (1 per rail), 8 NICs, 4 NVSwitches.
	if len(topo.Nodes) != 8+4+2+8+4 || len(topo.Links) != 8+8+4+8 {
		t.Fatalf("%d nodes and %d links, want 26 and 28", len(topo.Nodes), len(topo.Links))
	}
	name := func(n int) string { return topo.Nodes[n].Name }
	for h := 0; h < 8; h++ {
		s, g := h/2, h%2
		ports := ix.Ports(h)
		if len(ports) != 1 || name(ports[0].Peer) != fmt.Sprintf("h%d-nic", h) || topo.Links[ports[0].Link].Rate != 900*sim.GbitPerSecond {
			t.Fatalf("GPU h%d: ports %+v, want one NVLink-rate link to h%d-nic", h, ports, h)
		}
		nic := ports[0].Peer
		var peers []string
		for _, p := range ix.Ports(nic) {
			peers = append(peers, name(p.Peer))
		}
		want := []string{fmt.Sprintf("h%d", h), fmt.Sprintf("rail%d-leaf%d", g, s/2), fmt.Sprintf("server%d-nvswitch", s)}
		if strings.Join(peers, " ") != strings.Join(want, " ") {
			t.Errorf("h%d-nic links to %v, want %v", h, peers, want)
		}
		nvs := ix.Ports(nic)[2].Peer
		if topo.Nodes[nic].Group != s+1 || topo.Nodes[nvs].Group != s+1 || topo.Nodes[nvs].Latency != 50*sim.Nanosecond {
			t.Errorf("h%d-nic group %d, %s group %d latency %v; want group %d and 50ns",
				h, topo.Nodes[nic].Group, name(nvs), topo.Nodes[nvs].Group, topo.Nodes[nvs].Latency, s+1)
		}
	}
	bad := railNVLinkCfg(false)
	bad.NVLink = nil
	if _, err := Rail(bad); err == nil || !strings.Contains(err.Error(), "rail.nvlink") {
		t.Errorf("separate rails, 2 NICs, no NVLink: %v, want an error naming rail.nvlink", err)
	}
	bad = railCfg(true)
	bad.NVSwitchLatency = sim.Nanosecond
	if _, err := Rail(bad); err == nil {
		t.Error("nvswitch_latency without nvlink: want an error")
	}
}

// walk follows the routes from host src to host dst taking every
// equal-cost choice, and returns the node names of every path.
func walk(t *testing.T, topo *Topology, ix *Index, src, dst int) [][]string {
	t.Helper()
	var out [][]string
	var rec func(node int, path []string)
	rec = func(node int, path []string) {
		path = append(path, topo.Nodes[node].Name)
		if node == topo.Hosts[dst] {
			out = append(out, path)
			return
		}
		if len(path) > 20 {
			t.Fatalf("path too long: %v", path)
		}
		for _, p := range ix.Routes().Next(node, dst) {
			rec(ix.Ports(node)[p].Peer, slices.Clone(path))
		}
	}
	rec(ix.Ports(topo.Hosts[src])[0].Peer, []string{topo.Nodes[topo.Hosts[src]].Name})
	return out
}

// TestRail_NVLink_CrossRailTakesSourceNVLink: GPU 0 of server 0 (rail 0)
// to GPU 1 of server 1 (rail 1), rails separate: the only route crosses
// server 0's NVSwitch to NIC 1 and rail 1 (PXN), never server 1's NVLink
// (which is as short); with joined rails the spine is an equal-cost
// alternative. Within a server the route is NVLink only; on a rail, the
// rail only.
func TestRail_NVLink_CrossRailTakesSourceNVLink(t *testing.T) {
	for _, joined := range []bool{false, true} {
		topo, err := Rail(railNVLinkCfg(joined))
		if err != nil {
			t.Fatal(err)
		}
		ix, err := CompileWith(topo, CompileOptions{Pairs: []HostPair{{0, 3}, {0, 1}, {0, 2}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			src, dst int
			want     string
			hops     int32
		}{
			{0, 3, "h0 h0-nic server0-nvswitch h1-nic rail1-leaf0 h3-nic h3", 6},
			{0, 1, "h0 h0-nic server0-nvswitch h1-nic h1", 4},
			{0, 2, "h0 h0-nic rail0-leaf0 h2-nic h2", 4},
		} {
			var got []string
			for _, p := range walk(t, topo, ix, c.src, c.dst) {
				got = append(got, strings.Join(p, " "))
			}
			want := []string{c.want}
			if joined && c.src == 0 && c.dst == 3 {
				// Joined rails: the spine is as short, and ECMP takes both.
				want = []string{"h0 h0-nic rail0-leaf0 spine0 rail1-leaf0 h3-nic h3", c.want}
			}
			if !slices.Equal(got, want) {
				t.Errorf("joined %v: h%d -> h%d takes %q, want %q", joined, c.src, c.dst, got, want)
			}
		}
		if hops := ix.PairHops(); hops[0] != 6 || hops[1] != 4 || hops[2] != 4 {
			t.Errorf("joined %v: pair hops %v, want [6 4 4]", joined, hops)
		}
	}
}
