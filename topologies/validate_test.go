package topologies

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// handBuilt is a valid 3-host star built without a builder.
func handBuilt() *Topology {
	g := gbps
	return &Topology{
		Name: "star",
		Nodes: []Node{{Name: "h0", Kind: Host}, {Name: "h1", Kind: Host}, {Name: "h2", Kind: Host},
			{Name: "s", Kind: Switch, Tier: 1}},
		Links: []Link{{A: 0, B: 3, Rate: g, Tier: 1}, {A: 1, B: 3, Rate: g, Tier: 1}, {A: 2, B: 3, Rate: g, Tier: 1}},
		Hosts: []int{0, 1, 2},
	}
}

func TestValidate_AcceptsHandBuiltStar(t *testing.T) {
	topo := handBuilt()
	ix := mustCompile(t, topo)
	if err := topo.Validate(); err != nil {
		t.Fatalf("expected nil, got %v", err)
	}
	if st := ix.Stats(); st != (TopoStats{Hosts: 3, Switches: 1, Links: 3, Diameter: 2, MinHostPath: 2, MaxHostPath: 2}) {
		t.Errorf("stats: expected a 3-host star, got %+v", st)
	}
}

func TestValidate_Errors(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Topology)
		want string
	}{
		{"kind not set", func(tp *Topology) { tp.Nodes[3].Kind = 0 }, `topology "star": node 3 (s): kind is not set`},
		{"negative latency", func(tp *Topology) { tp.Nodes[3].Latency = -sim.Nanosecond },
			`topology "star": node 3 (s): latency must not be negative, got -1ns`},
		{"duplicate name", func(tp *Topology) { tp.Nodes[2].Name = "h0" }, `topology "star": node 2: name "h0" is also node 0's`},
		{"endpoint out of range", func(tp *Topology) { tp.Links[1].B = 9 }, `topology "star": link 1: endpoints 1-9 out of range [0, 4)`},
		{"negative endpoint", func(tp *Topology) { tp.Links[0].A = -1 }, `topology "star": link 0: endpoints -1-3 out of range [0, 4)`},
		{"self-loop", func(tp *Topology) { tp.Links[2].A = 3 }, `topology "star": link 2 (s-s): self-loop`},
		{"zero rate", func(tp *Topology) { tp.Links[0].Rate = 0 }, `topology "star": link 0 (h0-s): rate must be positive, got 0Gbps`},
		{"negative delay", func(tp *Topology) { tp.Links[0].Delay = -sim.Microsecond },
			`topology "star": link 0 (h0-s): delay must not be negative, got -1us`},
		{"negative buffer", func(tp *Topology) { tp.Links[2].Queue.Buffer = -1 },
			`topology "star": link 2 (h2-s): queue.buffer: must not be negative, got -1 bytes`},
		{"bad RED probability", func(tp *Topology) { tp.Links[2].Queue.ECN = ECNConfig{Mode: ECNRED, Min: 1, Max: 2, PMax: 1.5} },
			`topology "star": link 2 (h2-s): queue.ecn.pmax: must be in [0, 1], got 1.5`},
		{"no hosts", func(tp *Topology) { tp.Hosts = nil }, `topology "star": no hosts`},
		{"host out of range", func(tp *Topology) { tp.Hosts[1] = 4 }, `topology "star": host 1: node 4 out of range [0, 4)`},
		{"host is a switch", func(tp *Topology) { tp.Hosts[1] = 3 }, `topology "star": host 1: node 3 (s) is a switch`},
		{"host listed twice", func(tp *Topology) { tp.Hosts[2] = 0 }, `topology "star": host 2: node 0 (h0) is also host 0`},
		{"host node not listed", func(tp *Topology) { tp.Hosts = tp.Hosts[:2] }, `topology "star": node 2 (h2) is a host but not in Hosts`},
		{"host with no link", func(tp *Topology) { tp.Links = tp.Links[:2] }, `topology "star": host 2 (h2) has no link`},
		{"disconnected hosts", func(tp *Topology) {
			tp.Nodes = append(tp.Nodes, Node{Name: "t", Kind: Switch, Tier: 1})
			tp.Links[2].B = 4
		}, `topology "star": hosts h0 and h2 are not connected (hosts never forward)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topo := handBuilt()
			tc.mod(topo)
			wantErr(t, topo.Validate(), tc.want)
		})
	}
}

func TestValidate_AcceptsEveryBuilderOutput(t *testing.T) {
	for _, topo := range testTopologies(t) {
		if err := topo.Validate(); err != nil {
			t.Errorf("%s: expected nil, got %v", topo.Name, err)
		}
	}
}
