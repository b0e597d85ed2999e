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
	in    int // ingress port of every packet (-1: unknown)
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
	// Link i leaves by port i; link len(tp)+i comes in by it (cut-through
	// reads the ingress rate from it).
	specs := make([]sim.LinkSpec, 2*len(tp))
	sp := make([]switchsim.Port, len(tp))
	for i, p := range tp {
		l := topo.Links[p.Link]
		specs[i] = sim.LinkSpec{From: sim.ElemID(leaf), FromPort: i, To: sim.ElemID(p.Peer), Rate: l.Rate, Delay: l.Delay}
		specs[len(tp)+i] = sim.LinkSpec{From: sim.ElemID(p.Peer), To: sim.ElemID(leaf), Rate: l.Rate, Delay: l.Delay}
		sp[i] = switchsim.Port{Link: sim.LinkID(i), In: sim.LinkID(len(tp) + i), Peer: sim.ElemID(p.Peer), Queue: l.Queue}
	}
	e, err := sim.NewEngine(1, len(topo.Nodes), specs, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &forwardBench{e: e, s: switchsim.New(sim.ElemID(leaf), leaf, sp, ix.Routes(), mode), hosts: len(topo.Hosts), in: -1}
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
	pk.SetClass(i % 3)
	fb.s.OnArrive(e, p, fb.in)
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
		case sim.EvTimer: // PFC timers; the switch does not sample queues here
			fb.s.OnTimer(e, ev.Arg)
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

// mechanisms are the optional switch configurations the benchmarks and
// the allocation test cover.
var mechanisms = []struct {
	name string
	mode switchsim.Forwarding
	cfg  switchsim.Config
}{
	{"classes-dwrr", switchsim.ECMP, switchsim.Config{Classes: []switchsim.Class{{Weight: 1}, {Weight: 2}, {}}, ControlClass: 2}},
	{"pfc", switchsim.ECMP, switchsim.Config{Classes: []switchsim.Class{{Lossless: true}, {Lossless: true}, {}}, ControlClass: 2,
		PFC: switchsim.PFC{XOFF: 32 << 10, XON: 16 << 10, Watchdog: sim.Millisecond}}},
	{"shared", switchsim.ECMP, switchsim.Config{Classes: []switchsim.Class{{Alpha: 1}}, Shared: switchsim.Shared{Size: 4 << 20, Reserved: 8 << 10}}},
	{"trim", switchsim.ECMP, switchsim.Config{Classes: []switchsim.Class{{}, {}}, ControlClass: 1, Trim: switchsim.Trim{Enabled: true}}},
	{"adaptive", switchsim.Adaptive, switchsim.Config{}},
	{"flowlet", switchsim.Flowlet, switchsim.Config{FlowletGap: 10 * sim.Microsecond}},
	{"cut-through", switchsim.ECMP, switchsim.Config{CutThrough: switchsim.CutThrough{Enabled: true}}},
	// Modules without a field of their own (switchsim.Pipeline).
	{"codel", switchsim.ECMP, switchsim.Config{Modules: switchsim.Pipeline{AQM: switchsim.ModuleRef{Name: "codel",
		Options: map[string]string{"target_us": "1", "interval_us": "10", "ecn": "true"}}}}},
	{"drill", switchsim.ECMP, switchsim.Config{Modules: switchsim.Pipeline{Forward: switchsim.ModuleRef{Name: "drill"}}}},
	{"strict", switchsim.ECMP, switchsim.Config{Classes: []switchsim.Class{{Weight: 1}, {Weight: 2}, {}}, ControlClass: 2,
		Modules: switchsim.Pipeline{Schedule: switchsim.ModuleRef{Name: "strict"}}}},
}

func newMechBench(tb testing.TB, i int) *forwardBench {
	m := mechanisms[i]
	fb := newForwardBench(tb, 16, m.mode)
	if err := fb.s.Configure(fb.e, &m.cfg); err != nil {
		tb.Fatal(err)
	}
	fb.in = 1
	return fb
}

// BenchmarkSwitchMechanisms is BenchmarkSwitchForward (16 ports) with each
// optional mechanism on. It must report 0 allocs/op.
//
//	go test ./switchsim -run - -bench SwitchMechanisms -benchmem
func BenchmarkSwitchMechanisms(b *testing.B) {
	for i, m := range mechanisms {
		b.Run(m.name, func(b *testing.B) {
			fb := newMechBench(b, i)
			for k := range 1000 {
				fb.forward(k)
			}
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				fb.forward(k)
				k++
			}
		})
	}
}

func TestSwitchMechanisms_DoNotAllocate(t *testing.T) {
	for i, m := range mechanisms {
		fb := newMechBench(t, i)
		for k := range 1000 {
			fb.forward(k)
		}
		k := 0
		allocs := testing.AllocsPerRun(100, func() {
			fb.forward(k)
			k++
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per forwarded packet, want 0", m.name, allocs)
		}
		if m.cfg.CutThrough.Enabled {
			var cut uint64
			for p := range fb.s.Ports {
				cut += fb.s.Ports[p].Totals().CutThrough
			}
			if cut == 0 {
				t.Errorf("%s: no packet cut through; the path was not measured", m.name)
			}
		}
	}
}
