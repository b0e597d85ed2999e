package topologies

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// square is two switches with two hosts each, plus a spare switch.
func square() GraphConfig {
	return GraphConfig{
		Name: "square",
		Nodes: []GraphNode{
			{Name: "a", Kind: "host"}, {Name: "s1", Kind: "switch", Tier: 1, Latency: 50 * sim.Nanosecond},
			{Name: "b", Kind: "host"}, {Name: "s2", Kind: "switch", Tier: 2},
			{Name: "c", Kind: "host"}, {Name: "d", Kind: "host"},
		},
		Links: []GraphLink{
			{A: "a", B: "s1"},
			{A: "b", B: "s1", Rate: 10 * gbps},
			{A: "s1", B: "s2", Delay: 5 * sim.Microsecond, Queue: &QueueConfig{Buffer: 77}},
			{A: "c", B: "s2"},
			{A: "d", B: "s2"},
		},
		Defaults: TierConfig{Rate: 25 * gbps, Delay: sim.Microsecond, Queue: QueueConfig{Buffer: 1000}},
	}
}

func TestGraph_BuildsNodesLinksDefaultsAndHostOrder(t *testing.T) {
	topo, err := Graph(square())
	if err != nil {
		t.Fatalf("expected no error, got %v", err)
	}
	ix := mustCompile(t, topo)
	if err := topo.Validate(); err != nil {
		t.Fatalf("Validate: expected nil, got %v", err)
	}
	if topo.Name != "square" {
		t.Errorf("name: expected square, got %s", topo.Name)
	}
	wantHosts := []int{0, 2, 4, 5}
	if len(topo.Hosts) != len(wantHosts) {
		t.Fatalf("hosts: expected %v, got %v", wantHosts, topo.Hosts)
	}
	for i := range wantHosts {
		if topo.Hosts[i] != wantHosts[i] {
			t.Fatalf("hosts: expected %v (node order), got %v", wantHosts, topo.Hosts)
		}
	}
	l := topo.Links
	if l[0].Rate != 25*gbps || l[0].Delay != sim.Microsecond || l[0].Queue.Buffer != 1000 || l[0].Tier != 1 {
		t.Errorf("link a-s1: expected the defaults and tier 1, got %+v", l[0])
	}
	if l[1].Rate != 10*gbps {
		t.Errorf("link b-s1: expected its own rate 10Gbps, got %v", l[1].Rate)
	}
	if l[2].Delay != 5*sim.Microsecond || l[2].Queue.Buffer != 77 || l[2].Tier != 2 || l[2].Rate != 25*gbps {
		t.Errorf("link s1-s2: expected own delay and queue, default rate, tier 2; got %+v", l[2])
	}
	if topo.Nodes[1].Latency != 50*sim.Nanosecond {
		t.Errorf("s1: expected latency 50ns, got %v", topo.Nodes[1].Latency)
	}
	if st := ix.Stats(); st.MinHostPath != 2 || st.MaxHostPath != 3 || st.Switches != 2 {
		t.Errorf("stats: expected host paths 2..3 and 2 switches, got %+v", st)
	}
}

func TestGraph_Errors(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*GraphConfig)
		want string
	}{
		{"duplicate name", func(c *GraphConfig) { c.Nodes[3].Name = "s1" }, `graph.nodes[3] "s1": duplicate name (also nodes[1])`},
		{"empty name", func(c *GraphConfig) { c.Nodes[2].Name = "" }, "graph.nodes[2].name: must not be empty"},
		{"bad kind", func(c *GraphConfig) { c.Nodes[1].Kind = "router" }, `graph.nodes[1] "s1".kind: must be "host" or "switch", got "router"`},
		{"negative latency", func(c *GraphConfig) { c.Nodes[1].Latency = -1 }, `graph.nodes[1] "s1".latency: must not be negative, got -1ps`},
		{"no hosts", func(c *GraphConfig) {
			for i := range c.Nodes {
				c.Nodes[i].Kind = "switch"
			}
		}, "graph.nodes: no node is a host"},
		{"unknown endpoint A", func(c *GraphConfig) { c.Links[1].A = "zz" }, `graph.links[1] (zz-s1).a: unknown node "zz"`},
		{"unknown endpoint B", func(c *GraphConfig) { c.Links[2].B = "s9" }, `graph.links[2] (s1-s9).b: unknown node "s9"`},
		{"self-loop", func(c *GraphConfig) { c.Links[2].B = "s1" }, `graph.links[2] (s1-s1): self-loop on "s1"`},
		{"no rate anywhere", func(c *GraphConfig) { c.Defaults.Rate = 0 }, "graph.links[0] (a-s1).rate: not set, and graph.defaults.rate is not set either"},
		{"negative rate", func(c *GraphConfig) { c.Links[1].Rate = -1 }, "graph.links[1] (b-s1).rate: must be positive, got -1bps"},
		{"negative delay", func(c *GraphConfig) { c.Links[3].Delay = -sim.Nanosecond }, "graph.links[3] (c-s2).delay: must not be negative, got -1ns"},
		{"negative buffer", func(c *GraphConfig) { c.Links[2].Queue = &QueueConfig{Buffer: -1} },
			"graph.links[2] (s1-s2).queue.buffer: must not be negative, got -1 bytes"},
		{"bad defaults", func(c *GraphConfig) { c.Defaults.Delay = -sim.Nanosecond }, "graph.defaults.delay: must not be negative, got -1ns"},
		{"host with no link", func(c *GraphConfig) { c.Links = c.Links[:4] }, `graph: host "d" has no link`},
		{"disconnected hosts", func(c *GraphConfig) { c.Links = append(c.Links[:2], c.Links[3:]...) },
			`graph: hosts "a" and "c" are not connected (hosts never forward)`},
		{"connected only through a host", func(c *GraphConfig) {
			c.Links[2] = GraphLink{A: "b", B: "s2"} // b is on s1 and s2; a and c only via b
		}, `graph: hosts "a" and "c" are not connected (hosts never forward)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := square()
			tc.mod(&cfg)
			_, err := Graph(cfg)
			wantErr(t, err, tc.want)
		})
	}
}

func TestGraph_DirectHostLinkConnectsTwoHosts(t *testing.T) {
	topo, err := Graph(GraphConfig{
		Nodes:    []GraphNode{{Name: "x", Kind: "host"}, {Name: "y", Kind: "host"}},
		Links:    []GraphLink{{A: "x", B: "y"}},
		Defaults: tierOf(gbps),
	})
	if err != nil {
		t.Fatalf("expected no error, got %v", err)
	}
	if topo.Name != "graph" {
		t.Errorf("name: expected the default graph, got %s", topo.Name)
	}
	ix, err := CompileWith(topo, CompileOptions{Pairs: []HostPair{{0, 1}, {1, 0}}})
	if err != nil {
		t.Fatalf("CompileWith: expected no error, got %v", err)
	}
	if got := ix.PairHops(); len(got) != 2 || got[0] != 1 || got[1] != 1 {
		t.Errorf("x to y and back: expected 1 hop each (the direct link), got %v", got)
	}
}
