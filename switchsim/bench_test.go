package switchsim_test

import (
	"fmt"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// forwardBench is one leaf switch of a leaf-spine fabric, with an engine
// that holds only the leaf's own link directions (link i leaves by port i).
type forwardBench struct {
	e     *sim.Engine
	s     *switchsim.Switch
	hosts int
}

// newForwardBench builds a leaf with ports/2 hosts and ports/2 spines, and
// 8 leaves, so that most destinations are remote and spread by ECMP over
// ports/2 equal-cost uplinks.
func newForwardBench(tb testing.TB, ports int, mode switchsim.Forwarding) *forwardBench {
	tb.Helper()
	tier := topologies.TierConfig{Rate: 400 * sim.GbitPerSecond, Delay: sim.Microsecond,
		Queue: topologies.QueueConfig{Buffer: 1 << 20, ECN: topologies.ECNConfig{Mode: topologies.ECNStep, K: 100 << 10}}}
	topo, err := topologies.LeafSpine(topologies.LeafSpineConfig{Leaves: 8, Spines: ports / 2, HostsPerLeaf: ports / 2,
		Host: tier, Fabric: tier})
	if err != nil {
		tb.Fatal(err)
	}
	ix, err := topologies.Compile(topo)
	if err != nil {
		tb.Fatal(err)
	}
	leaf := len(topo.Hosts) // the first switch node: leaf0
	tp := ix.Ports(leaf)
	if len(tp) != ports {
		tb.Fatalf("leaf0 has %d ports, want %d", len(tp), ports)
	}
	specs := make([]sim.LinkSpec, len(tp))
	sp := make([]switchsim.Port, len(tp))
	for i, p := range tp {
		l := topo.Links[p.Link]
		specs[i] = sim.LinkSpec{From: sim.ElemID(leaf), FromPort: i, To: sim.ElemID(p.Peer), Rate: l.Rate, Delay: l.Delay}
		sp[i] = switchsim.Port{Link: sim.LinkID(i), Peer: sim.ElemID(p.Peer), Queue: l.Queue}
	}
	e, err := sim.NewEngine(1, len(topo.Nodes), specs, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &forwardBench{e: e, s: switchsim.New(sim.ElemID(leaf), leaf, sp, ix.Routes(), mode), hosts: len(topo.Hosts)}
}

// forward hands the switch one packet for host dst and runs the events it
// causes: the transmit completion and the arrival at the peer, which frees
// the packet.
func (fb *forwardBench) forward(i int) {
	e := fb.e
	p := e.Pool.Alloc()
	pk := e.Pool.Get(p)
	*pk = sim.Packet{Size: 4096, SrcHost: int32(i % 7), DstHost: int32(i % fb.hosts), SrcPort: uint16(i), DstPort: 80,
		Entropy: uint16(i * 40503), Flags: sim.FlagECT}
	fb.s.OnArrive(e, p, -1)
	for {
		ev, ok := e.Next(sim.Never)
		if !ok {
			return
		}
		switch ev.Kind {
		case sim.EvTxDone:
			fb.s.OnTxDone(e, int(ev.Arg))
		case sim.EvArrive:
			e.Pool.Free(ev.Pkt)
		case sim.EvTimer: // the switch does not sample queues here
		}
	}
}

// BenchmarkSwitchForward measures one packet through one switch: route
// lookup, ECMP or spray hash, admission with ECN, transmit and completion.
// It must report 0 allocs/op.
//
//	go test ./switchsim -run - -bench SwitchForward -benchmem
func BenchmarkSwitchForward(b *testing.B) {
	for _, mode := range []switchsim.Forwarding{switchsim.ECMP, switchsim.Spray} {
		for _, ports := range []int{8, 16, 64} {
			b.Run(fmt.Sprintf("%v/ports=%d", mode, ports), func(b *testing.B) {
				fb := newForwardBench(b, ports, mode)
				for i := range 1000 { // warm the pool and the rings
					fb.forward(i)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					fb.forward(i)
					i++
				}
			})
		}
	}
}

func TestSwitchForward_DoesNotAllocate(t *testing.T) {
	fb := newForwardBench(t, 16, switchsim.ECMP)
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		fb.forward(i)
		i++
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per forwarded packet, want 0", allocs)
	}
}
