package switchsim

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// The prefetch ahead of an arrival (Switch.Prefetch) asks for the port
// likelyPort names; it helps only while that is the port OnArrive then
// forwards by. An edge switch of a k=4 fat-tree has two equal-cost ports
// up to every host outside its rack: with ECMP and with spraying, every
// packet must leave by the port likelyPort gave it, and both up ports
// must be used.
func TestSwitch_LikelyPortIsOnArrivesPort(t *testing.T) {
	tc := topologies.TierConfig{Rate: 10 * sim.GbitPerSecond, Delay: sim.Microsecond}
	topo, err := topologies.FatTree(topologies.FatTreeConfig{K: 4, Host: tc, Agg: tc, Core: tc})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := topologies.Compile(topo)
	if err != nil {
		t.Fatal(err)
	}
	edge := -1
	for i, n := range topo.Nodes {
		if n.Kind == topologies.Switch && n.Tier == 1 {
			edge = i
			break
		}
	}
	if edge < 0 {
		t.Fatal("no edge switch")
	}
	hosts := ix.Routes().NumHosts()
	for _, fwd := range []Forwarding{ECMP, Spray} {
		n := len(ix.Ports(edge))
		specs := make([]sim.LinkSpec, n)
		ports := make([]Port, n)
		for i := range specs {
			specs[i] = sim.LinkSpec{From: 0, FromPort: i, To: 1, Rate: 10 * sim.GbitPerSecond, Delay: sim.Microsecond}
			ports[i] = Port{Link: sim.LinkID(i), Peer: 1, Queue: topologies.QueueConfig{Buffer: 1 << 30}}
		}
		e, err := sim.NewEngine(1, 2, specs, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := New(0, edge, ports, ix.Routes(), fwd)
		if err := s.Configure(e, &Config{}); err != nil {
			t.Fatal(err)
		}
		rng := sim.NewRand(7, 0)
		used := map[int32]int{}
		multi := 0
		for i := 0; i < 400; i++ {
			p := e.Pool.Alloc()
			pk := e.Pool.Get(p)
			pk.Size, pk.Payload, pk.Flags = 1000, 936, sim.FlagData
			pk.SrcHost, pk.DstHost = int32(rng.IntN(hosts)), int32(rng.IntN(hosts))
			pk.SrcPort, pk.DstPort, pk.Entropy = uint16(rng.Uint32()), uint16(rng.Uint32()), uint16(rng.Uint32())
			want := s.likelyPort(pk)
			if len(ix.Routes().Next(edge, int(pk.DstHost))) > 1 {
				multi++
			}
			before := make([]uint64, n)
			for j := range s.Ports {
				before[j] = s.Ports[j].Enqueued + s.Ports[j].Dropped
			}
			s.OnArrive(e, p, -1)
			got := int32(-1)
			for j := range s.Ports {
				if s.Ports[j].Enqueued+s.Ports[j].Dropped != before[j] {
					got = int32(j)
				}
			}
			if got != want {
				t.Fatalf("%v: packet %d (host %d -> %d): OnArrive forwarded by port %d, likelyPort said %d", fwd, i, pk.SrcHost, pk.DstHost, got, want)
			}
			used[got]++
		}
		if multi < 100 || len(used) < 3 {
			t.Fatalf("%v: %d packets had several routes, ports used %v: the picks were not exercised", fwd, multi, used)
		}
	}
}
