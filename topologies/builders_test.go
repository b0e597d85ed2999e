package topologies

import (
	"fmt"
	"math"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

const gbps = sim.GbitPerSecond

func TestDumbbell_CountsNamesAndHostNumbering(t *testing.T) {
	topo, err := Dumbbell(DumbbellConfig{Senders: 3, Receivers: 2, Host: tierOf(100 * gbps), Bottleneck: tierOf(10 * gbps)})
	if err != nil {
		t.Fatalf("expected no error, got %v", err)
	}
	ix := mustCompile(t, topo)
	if err := topo.Validate(); err != nil {
		t.Fatalf("Validate: expected nil, got %v", err)
	}
	if got := topo.NumHosts(); got != 5 {
		t.Errorf("hosts: expected 5, got %d", got)
	}
	if got := topo.NumSwitches(); got != 2 {
		t.Errorf("switches: expected 2, got %d", got)
	}
	if got := len(topo.Links); got != 6 {
		t.Errorf("links: expected 6, got %d", got)
	}
	left, right := nodeByName(t, topo, "left"), nodeByName(t, topo, "right")
	for h := 0; h < 5; h++ {
		node := topo.Hosts[h]
		if want := fmt.Sprintf("h%d", h); topo.Nodes[node].Name != want {
			t.Errorf("host %d: expected name %s, got %s", h, want, topo.Nodes[node].Name)
		}
		want := left
		if h >= 3 {
			want = right
		}
		if p := ix.Ports(node); len(p) != 1 || p[0].Peer != want {
			t.Errorf("host %d: expected one port to %s, got %+v", h, topo.Nodes[want].Name, p)
		}
	}
	b := topo.Links[len(topo.Links)-1]
	if b.A != left || b.B != right || b.Rate != 10*gbps || b.Tier != 2 {
		t.Errorf("bottleneck: expected left-right 10Gbps tier 2, got %+v", b)
	}
	st := ix.Stats()
	if st.MinHostPath != 2 || st.MaxHostPath != 3 || st.Diameter != 3 {
		t.Errorf("stats: expected min 2, max 3, diameter 3, got %+v", st)
	}
}

func TestDumbbell_Errors(t *testing.T) {
	ok := DumbbellConfig{Senders: 1, Receivers: 1, Host: tierOf(gbps), Bottleneck: tierOf(gbps)}
	cases := []struct {
		name string
		mod  func(*DumbbellConfig)
		want string
	}{
		{"no senders", func(c *DumbbellConfig) { c.Senders = 0 }, "dumbbell.senders: must be at least 1, got 0"},
		{"negative receivers", func(c *DumbbellConfig) { c.Receivers = -1 }, "dumbbell.receivers: must be at least 1, got -1"},
		{"too many hosts", func(c *DumbbellConfig) { c.Receivers = math.MaxInt }, "dumbbell.receivers: 1 senders and..."},
		{"zero bottleneck rate", func(c *DumbbellConfig) { c.Bottleneck.Rate = 0 }, "dumbbell.bottleneck.rate: must be positive, got 0Gbps"},
		{"negative host rate", func(c *DumbbellConfig) { c.Host.Rate = -5 }, "dumbbell.host.rate: must be positive, got -5bps"},
		{"negative delay", func(c *DumbbellConfig) { c.Host.Delay = -sim.Nanosecond }, "dumbbell.host.delay: must not be negative, got -1ns"},
		{"negative buffer", func(c *DumbbellConfig) { c.Bottleneck.Queue.Buffer = -1 }, "dumbbell.bottleneck.queue.buffer: must not be negative, got -1 bytes"},
		{"bad RED", func(c *DumbbellConfig) {
			c.Bottleneck.Queue.ECN = ECNConfig{Mode: ECNRED, Min: 10, Max: 5}
		}, "dumbbell.bottleneck.queue.ecn.max: must be at least ecn.min (10 bytes), got 5 bytes"},
		{"bad ECN mode", func(c *DumbbellConfig) { c.Host.Queue.ECN.Mode = 9 }, "dumbbell.host.queue.ecn.mode: unknown mode 9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			_, err := Dumbbell(cfg)
			wantErr(t, err, tc.want)
		})
	}
}

func TestLeafSpine_Counts(t *testing.T) {
	topo, err := LeafSpine(LeafSpineConfig{Leaves: 4, Spines: 2, HostsPerLeaf: 8, Host: tierOf(25 * gbps), Fabric: tierOf(100 * gbps)})
	if err != nil {
		t.Fatalf("expected no error, got %v", err)
	}
	ix := mustCompile(t, topo)
	if err := topo.Validate(); err != nil {
		t.Fatalf("Validate: expected nil, got %v", err)
	}
	st := ix.Stats()
	want := TopoStats{Hosts: 32, Switches: 6, Links: 32 + 8, Diameter: 4, MinHostPath: 2, MaxHostPath: 4}
	if st != want {
		t.Errorf("stats: expected %+v, got %+v", want, st)
	}
	for _, name := range []string{"h0", "h31", "leaf0", "leaf3", "spine0", "spine1"} {
		nodeByName(t, topo, name)
	}
	// Leaf 1 serves hosts 8..15.
	if p := ix.Ports(topo.Hosts[9]); topo.Nodes[p[0].Peer].Name != "leaf1" {
		t.Errorf("host 9: expected to hang off leaf1, got %s", topo.Nodes[p[0].Peer].Name)
	}
}

func TestLeafSpine_OversubscriptionDerivesFabricRate(t *testing.T) {
	cases := []struct {
		o    float64
		want sim.Bandwidth
	}{
		{0, 100 * gbps}, // default 1: 16 x 25G over 4 spines
		{1, 100 * gbps},
		{2, 50 * gbps},
		{4, 25 * gbps},
		{0.5, 200 * gbps},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("o=%v", tc.o), func(t *testing.T) {
			fabric := tierOf(0)
			topo, err := LeafSpine(LeafSpineConfig{Leaves: 2, Spines: 4, HostsPerLeaf: 16,
				Host: tierOf(25 * gbps), Fabric: fabric, Oversubscription: tc.o})
			if err != nil {
				t.Fatalf("expected no error, got %v", err)
			}
			ix := mustCompile(t, topo)
			for _, l := range topo.Links {
				if l.Tier == 2 && l.Rate != tc.want {
					t.Fatalf("fabric link: expected %v, got %v", tc.want, l.Rate)
				}
			}
			leaf := nodeByName(t, topo, "leaf0")
			var down, up float64
			for _, p := range ix.Ports(leaf) {
				l := topo.Links[p.Link]
				if l.Tier == 1 {
					down += float64(l.Rate)
				} else {
					up += float64(l.Rate)
				}
			}
			wantO := tc.o
			if wantO == 0 {
				wantO = 1
			}
			if got := down / up; math.Abs(got-wantO) > 1e-12 {
				t.Errorf("leaf0 host/uplink bandwidth: expected %v, got %v", wantO, got)
			}
		})
	}
}

func TestLeafSpine_OversubscriptionMustAgreeWithGivenFabricRate(t *testing.T) {
	cfg := LeafSpineConfig{Leaves: 2, Spines: 4, HostsPerLeaf: 16, Host: tierOf(25 * gbps), Fabric: tierOf(100 * gbps), Oversubscription: 1}
	if _, err := LeafSpine(cfg); err != nil {
		t.Fatalf("oversubscription 1 with 16x25G over 4x100G: expected no error, got %v", err)
	}
	cfg.Oversubscription = 2
	_, err := LeafSpine(cfg)
	wantErr(t, err, "leafspine.oversubscription: 2 disagrees with fabric.rate 100Gbps: 16 hosts x 25Gbps over 4 spines x 100Gbps is 1")
	cfg.Oversubscription = 0 // rates alone decide
	if _, err := LeafSpine(cfg); err != nil {
		t.Fatalf("oversubscription 0 with a given fabric rate: expected no error, got %v", err)
	}
}

func TestLeafSpine_Errors(t *testing.T) {
	ok := LeafSpineConfig{Leaves: 2, Spines: 2, HostsPerLeaf: 2, Host: tierOf(gbps), Fabric: tierOf(gbps)}
	cases := []struct {
		name string
		mod  func(*LeafSpineConfig)
		want string
	}{
		{"no leaves", func(c *LeafSpineConfig) { c.Leaves = 0 }, "leafspine.leaves: must be at least 1, got 0"},
		{"no spines", func(c *LeafSpineConfig) { c.Spines = 0 }, "leafspine.spines: must be at least 1, got 0"},
		{"no hosts", func(c *LeafSpineConfig) { c.HostsPerLeaf = -3 }, "leafspine.hostsPerLeaf: must be at least 1, got -3"},
		{"host rate", func(c *LeafSpineConfig) { c.Host.Rate = 0 }, "leafspine.host.rate: must be positive, got 0Gbps"},
		{"fabric rate", func(c *LeafSpineConfig) { c.Fabric.Rate = -1 }, "leafspine.fabric.rate: must be positive, got -1bps"},
		{"fabric delay", func(c *LeafSpineConfig) { c.Fabric.Delay = -sim.Microsecond }, "leafspine.fabric.delay: must not be negative, got -1us"},
		{"negative oversubscription", func(c *LeafSpineConfig) { c.Oversubscription = -2 },
			"leafspine.oversubscription: must be positive (or 0 for the default), got -2"},
		{"NaN oversubscription", func(c *LeafSpineConfig) { c.Oversubscription = math.NaN() },
			"leafspine.oversubscription: must be positive (or 0 for the default), got NaN"},
		{"switch latency", func(c *LeafSpineConfig) { c.SwitchLatency = -1 }, "leafspine.switchLatency: must not be negative, got -1ps"},
		{"derived rate below 1 bit/s", func(c *LeafSpineConfig) {
			c.Host.Rate, c.Fabric.Rate, c.Oversubscription = 1, 0, 1000
		}, "leafspine.fabric.rate: 2 hosts x 1bps over 2 spines at oversubscription 1000 gives 0 bit/s, out of range"},
		{"too large", func(c *LeafSpineConfig) { c.Leaves, c.HostsPerLeaf = 1<<20, 1<<20 },
			"leafspine: the fabric would exceed the limits of 1048576 nodes and 4194304 links"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			_, err := LeafSpine(cfg)
			wantErr(t, err, tc.want)
		})
	}
}

func TestLeafSpine_ECMPLeafHasSpinesChoicesToRemoteLeafHost(t *testing.T) {
	const spines = 5
	topo, err := LeafSpine(LeafSpineConfig{Leaves: 3, Spines: spines, HostsPerLeaf: 4, Host: tierOf(gbps), Fabric: tierOf(gbps)})
	if err != nil {
		t.Fatalf("expected no error, got %v", err)
	}
	ix := mustCompile(t, topo)
	r := ix.Routes()
	leaf0, spine0 := nodeByName(t, topo, "leaf0"), nodeByName(t, topo, "spine0")
	remote, local := 8, 1 // host 8 is on leaf2, host 1 on leaf0
	if got := r.Next(leaf0, remote); len(got) != spines || countPeersOfTier(topo, ix, leaf0, got, 2) != spines {
		t.Errorf("leaf0 -> remote host: expected %d spine ports, got %v", spines, got)
	}
	if got := r.Next(leaf0, local); len(got) != 1 || ix.Ports(leaf0)[got[0]].Peer != topo.Hosts[local] {
		t.Errorf("leaf0 -> own host: expected the one port to it, got %v", got)
	}
	if got := r.Next(spine0, remote); len(got) != 1 {
		t.Errorf("spine0 -> host: expected 1 port, got %v", got)
	}
	if got := r.Next(topo.Hosts[0], remote); len(got) != 0 {
		t.Errorf("host -> host: expected nothing (hosts have no rows), got %v", got)
	}
}

func TestFatTree_CountsForK2K4K8(t *testing.T) {
	cases := []struct {
		k                      int
		hosts, switches, links int
	}{
		{2, 2, 5, 6},
		{4, 16, 20, 48},
		{8, 128, 80, 384},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("k=%d", tc.k), func(t *testing.T) {
			topo := mustFatTree(t, tc.k)
			ix := mustCompile(t, topo)
			if err := topo.Validate(); err != nil {
				t.Fatalf("Validate: expected nil, got %v", err)
			}
			if got := topo.NumHosts(); got != tc.hosts {
				t.Errorf("hosts: expected %d, got %d", tc.hosts, got)
			}
			if got := topo.NumSwitches(); got != tc.switches {
				t.Errorf("switches: expected %d, got %d", tc.switches, got)
			}
			if got := len(topo.Links); got != tc.links {
				t.Errorf("links: expected %d, got %d", tc.links, got)
			}
			byTier := map[int]int{}
			for _, n := range topo.Nodes {
				byTier[n.Tier]++
			}
			half := tc.k / 2
			want := map[int]int{0: tc.hosts, 1: tc.k * half, 2: tc.k * half, 3: half * half}
			for tier, n := range want {
				if byTier[tier] != n {
					t.Errorf("tier %d nodes: expected %d, got %d", tier, n, byTier[tier])
				}
			}
			// Every switch has k ports (the radix).
			for i, n := range topo.Nodes {
				if n.Kind == Switch && len(ix.Ports(i)) != tc.k {
					t.Errorf("%s: expected %d ports, got %d", n.Name, tc.k, len(ix.Ports(i)))
				}
			}
		})
	}
}

func TestFatTree_LinkTiersAndSettingsPerTier(t *testing.T) {
	topo, err := FatTree(FatTreeConfig{K: 4,
		Host:          TierConfig{Rate: 100 * gbps, Delay: 100 * sim.Nanosecond, Queue: QueueConfig{Buffer: 1000}},
		Agg:           TierConfig{Rate: 200 * gbps, Delay: 200 * sim.Nanosecond, Queue: QueueConfig{Buffer: 2000}},
		Core:          TierConfig{Rate: 400 * gbps, Delay: 300 * sim.Nanosecond, Queue: QueueConfig{Buffer: 3000, ECN: ECNConfig{Mode: ECNStep, K: 100}}},
		SwitchLatency: 500 * sim.Nanosecond})
	if err != nil {
		t.Fatalf("expected no error, got %v", err)
	}
	for i, l := range topo.Links {
		lo, hi := topo.Nodes[l.A].Tier, topo.Nodes[l.B].Tier
		if hi != lo+1 || l.Tier != hi {
			t.Fatalf("link %d: expected tier = upper node tier = lower+1, got link tier %d between tiers %d and %d", i, l.Tier, lo, hi)
		}
		wantRate := []sim.Bandwidth{0, 100 * gbps, 200 * gbps, 400 * gbps}[l.Tier]
		wantBuf := []int64{0, 1000, 2000, 3000}[l.Tier]
		if l.Rate != wantRate || l.Delay != sim.Time(l.Tier)*100*sim.Nanosecond || l.Queue.Buffer != wantBuf {
			t.Errorf("link %d tier %d: expected rate %v delay %v buffer %d, got %v %v %d",
				i, l.Tier, wantRate, sim.Time(l.Tier)*100*sim.Nanosecond, wantBuf, l.Rate, l.Delay, l.Queue.Buffer)
		}
		if l.Tier == 3 && l.Queue.ECN.Mode != ECNStep {
			t.Errorf("link %d: expected the core ECN setting, got %+v", i, l.Queue.ECN)
		}
	}
	for _, n := range topo.Nodes {
		want := sim.Time(0)
		if n.Kind == Switch {
			want = 500 * sim.Nanosecond
		}
		if n.Latency != want {
			t.Errorf("%s: expected latency %v, got %v", n.Name, want, n.Latency)
		}
	}
}

func TestFatTree_OversubscribedMultipliesHostsPerToR(t *testing.T) {
	g := 100 * gbps
	topo, err := FatTree(FatTreeConfig{K: 4, Host: tierOf(g), Agg: tierOf(g), Core: tierOf(g), Oversubscribed: 3})
	if err != nil {
		t.Fatalf("expected no error, got %v", err)
	}
	ix := mustCompile(t, topo)
	if got := topo.NumHosts(); got != 48 {
		t.Errorf("hosts: expected 3*4^3/4 = 48, got %d", got)
	}
	if got := topo.NumSwitches(); got != 20 {
		t.Errorf("switches: expected 20, got %d", got)
	}
	tor := nodeByName(t, topo, "tor0")
	down, up := 0, 0
	for _, p := range ix.Ports(tor) {
		if topo.Nodes[p.Peer].Kind == Host {
			down++
		} else {
			up++
		}
	}
	if down != 6 || up != 2 {
		t.Errorf("tor0: expected 6 host ports and 2 uplinks (3:1), got %d and %d", down, up)
	}
	if st := ix.Stats(); st.MinHostPath != 2 || st.MaxHostPath != 6 {
		t.Errorf("stats: expected host paths 2..6, got %+v", st)
	}
	for _, f := range []int{0, 1} {
		topo, err := FatTree(FatTreeConfig{K: 4, Host: tierOf(g), Agg: tierOf(g), Core: tierOf(g), Oversubscribed: f})
		if err != nil || topo.NumHosts() != 16 {
			t.Errorf("oversubscribed %d: expected 16 hosts (none), got %v, %v", f, topo, err)
		}
	}
}

func TestFatTree_K8ECMPSetSizes(t *testing.T) {
	topo := mustFatTree(t, 8)
	ix := mustCompile(t, topo)
	r := ix.Routes()
	tor0, agg0, core0 := nodeByName(t, topo, "tor0"), nodeByName(t, topo, "agg0"), nodeByName(t, topo, "core0")
	// tor0 and agg0 are in pod 0 (hosts 0..15); host 100 is in pod 6.
	const samePod, otherToR, otherPod = 1, 5, 100
	cases := []struct {
		what      string
		node, dst int
		want      int
		peerTier  int
	}{
		{"ToR to a host in another pod: every uplink", tor0, otherPod, 4, 2},
		{"ToR to a host of another ToR in its pod: every uplink", tor0, otherToR, 4, 2},
		{"ToR to its own host: the host port", tor0, samePod, 1, 0},
		{"agg to a host in another pod: every core uplink", agg0, otherPod, 4, 3},
		{"agg to a host in its pod: the one ToR", agg0, otherToR, 1, 1},
		{"core to any host: exactly one port", core0, otherPod, 1, 2},
		{"core to a pod-0 host: exactly one port", core0, samePod, 1, 2},
		{"host to another host: nothing, hosts have no rows", topo.Hosts[0], otherPod, 0, 1},
	}
	for _, tc := range cases {
		got := r.Next(tc.node, tc.dst)
		if len(got) != tc.want || countPeersOfTier(topo, ix, tc.node, got, tc.peerTier) != tc.want {
			t.Errorf("%s: expected %d ports to tier-%d peers, got %v", tc.what, tc.want, tc.peerTier, got)
		}
	}
	if got := r.Next(topo.Hosts[7], 7); len(got) != 0 {
		t.Errorf("a host to itself: expected no ports, got %v", got)
	}
}

func TestFatTree_PathLengthStats(t *testing.T) {
	for _, k := range []int{4, 8} {
		st := mustCompile(t, mustFatTree(t, k)).Stats()
		if st.MinHostPath != 2 || st.MaxHostPath != 6 || st.Diameter != 6 {
			t.Errorf("k=%d: expected host paths 2 (same ToR) .. 6 and diameter 6, got %+v", k, st)
		}
	}
	st := mustCompile(t, mustFatTree(t, 2)).Stats()
	if st.MinHostPath != 6 || st.MaxHostPath != 6 {
		t.Errorf("k=2: expected the two hosts 6 hops apart, got %+v", st)
	}
}

func TestFatTree_Errors(t *testing.T) {
	g := tierOf(gbps)
	ok := FatTreeConfig{K: 4, Host: g, Agg: g, Core: g}
	cases := []struct {
		name string
		mod  func(*FatTreeConfig)
		want string
	}{
		{"odd k", func(c *FatTreeConfig) { c.K = 7 }, "fattree.k: must be even and >= 2, got 7"},
		{"zero k", func(c *FatTreeConfig) { c.K = 0 }, "fattree.k: must be even and >= 2, got 0"},
		{"negative k", func(c *FatTreeConfig) { c.K = -4 }, "fattree.k: must be even and >= 2, got -4"},
		{"huge k", func(c *FatTreeConfig) { c.K = 1 << 40 }, "fattree.k: must be at most 1024, got 1099511627776"},
		{"too many nodes", func(c *FatTreeConfig) { c.K = 160 }, "fattree.k: the fabric would have 1056000 nodes, more than the limit of 1048576"},
		{"too many hosts", func(c *FatTreeConfig) { c.K = 512 }, "fattree.k: the fabric would exceed the limits of 1048576 nodes and 4194304 links"},
		{"host rate", func(c *FatTreeConfig) { c.Host.Rate = 0 }, "fattree.host.rate: must be positive, got 0Gbps"},
		{"agg rate", func(c *FatTreeConfig) { c.Agg.Rate = -1 }, "fattree.agg.rate: must be positive, got -1bps"},
		{"core delay", func(c *FatTreeConfig) { c.Core.Delay = -sim.Nanosecond }, "fattree.core.delay: must not be negative, got -1ns"},
		{"core buffer", func(c *FatTreeConfig) { c.Core.Queue.Buffer = -8 }, "fattree.core.queue.buffer: must not be negative, got -8 bytes"},
		{"negative oversubscription", func(c *FatTreeConfig) { c.Oversubscribed = -1 }, "fattree.oversubscribed: must not be negative, got -1"},
		{"switch latency", func(c *FatTreeConfig) { c.SwitchLatency = -sim.Nanosecond }, "fattree.switchLatency: must not be negative, got -1ns"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			_, err := FatTree(cfg)
			wantErr(t, err, tc.want)
		})
	}
}
