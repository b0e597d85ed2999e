package partition

import (
	"slices"
	"testing"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// borderFabric is a line of switches with hosts on it, cut between s4 and
// h5 (lookahead 1 us):
//
//	h0 -2us- s1 -100ns- s2 -1us- s3 -500ns- s4 -1us- | h5 (partition 1)
//	                    |        |
//	                  h6 100ns  h7 100ns
//
// s4 receives the cut link; s3 is 500 ns from it (< L), h7 100 ns from s3;
// s2 is 1 us from s3 (not < L), so s2, s1, h6 and h0 are interior.
func borderFabric(s4Latency sim.Time) (*topologies.Topology, []int) {
	ns := sim.Nanosecond
	t := &topologies.Topology{Nodes: []topologies.Node{
		{Name: "h0", Kind: topologies.Host}, {Name: "s1", Kind: topologies.Switch}, {Name: "s2", Kind: topologies.Switch},
		{Name: "s3", Kind: topologies.Switch}, {Name: "s4", Kind: topologies.Switch, Latency: s4Latency},
		{Name: "h5", Kind: topologies.Host}, {Name: "h6", Kind: topologies.Host}, {Name: "h7", Kind: topologies.Host},
	}, Links: []topologies.Link{
		{A: 4, B: 5, Rate: 100 * sim.GbitPerSecond, Delay: 1000 * ns},
		{A: 3, B: 4, Rate: 100 * sim.GbitPerSecond, Delay: 500 * ns},
		{A: 2, B: 3, Rate: 100 * sim.GbitPerSecond, Delay: 1000 * ns},
		{A: 1, B: 2, Rate: 100 * sim.GbitPerSecond, Delay: 100 * ns},
		{A: 0, B: 1, Rate: 100 * sim.GbitPerSecond, Delay: 2000 * ns},
		{A: 2, B: 6, Rate: 100 * sim.GbitPerSecond, Delay: 100 * ns},
		{A: 3, B: 7, Rate: 100 * sim.GbitPerSecond, Delay: 100 * ns},
	}, Hosts: []int{0, 5, 6, 7}}
	return t, []int{0, 0, 0, 0, 0, 1, 0, 0}
}

// chainFlows: flow 0 (h6 -> h7) activates flow 1 (h0 -> h6) when h7 has
// every byte, delay later: a signal from h7 to h0.
func chainFlows(delay sim.Time) []hostsim.FlowSpec {
	return []hostsim.FlowSpec{
		{ID: 0, Src: 2, Dst: 3, Size: 1000, Next: hostsim.NewFlowNext([]int32{1}, nil)},
		{ID: 1, Src: 0, Dst: 2, Size: 1000, Need: 1, Delay: delay},
	}
}

func TestBorder_LinksAndSignalsShorterThanTheLookahead(t *testing.T) {
	ns := sim.Nanosecond
	for _, c := range []struct {
		name       string
		s4Latency  sim.Time
		flows      []hostsim.FlowSpec
		part       int
		wantBorder []string
	}{
		{"links: s4 receives the cut, s3 and h7 are nearer than L", 0, nil, 0, []string{"s3", "s4", "h7"}},
		{"a signal from h7 to h0 shorter than L pulls h0 in", 0, chainFlows(200 * ns), 0, []string{"h0", "s3", "s4", "h7"}},
		{"a signal as long as L does not", 0, chainFlows(1000 * ns), 0, []string{"s3", "s4", "h7"}},
		{"s4's latency lengthens s4 -> s3 to L: only s4", 800 * ns, nil, 0, []string{"s4"}},
		{"the other side: h5 alone", 0, nil, 1, []string{"h5"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			topo, part := borderFabric(c.s4Latency)
			pl, err := MakeFlows(topo, nil, c.flows, nil, part)
			if err != nil {
				t.Fatal(err)
			}
			if pl.Lookahead != 1000*ns {
				t.Fatalf("lookahead %v, want 1us", pl.Lookahead)
			}
			b, err := Border(topo, nil, c.flows, nil, pl, c.part)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for n, in := range b {
				if in {
					if part[n] != c.part {
						t.Errorf("%s of partition %d is in partition %d's border", topo.Nodes[n].Name, part[n], c.part)
					}
					got = append(got, topo.Nodes[n].Name)
				}
			}
			want := slices.Sorted(slices.Values(c.wantBorder))
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("border %v, want %v", got, want)
			}
		})
	}
}

func TestBorder_NothingCut(t *testing.T) {
	topo, _ := borderFabric(0)
	pl, err := Make(topo, nil, make([]int, len(topo.Nodes)))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := Border(topo, nil, nil, nil, pl, 0); err != nil || b != nil {
		t.Errorf("one partition: border %v, %v; want nil (no cut, no border)", b, err)
	}
}
