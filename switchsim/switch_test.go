package switchsim

import (
	"math"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// oneSwitch is switch element 0 with one egress port towards element 1, and
// a route table in which every host goes out of port 0.
func oneSwitch(t *testing.T, q topologies.QueueConfig) (*Switch, *sim.Engine) {
	t.Helper()
	tc := topologies.TierConfig{Rate: 10 * sim.GbitPerSecond, Delay: sim.Microsecond}
	topo, err := topologies.Dumbbell(topologies.DumbbellConfig{Senders: 1, Receivers: 1, Host: tc, Bottleneck: tc})
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.NewEngine(1, 2, []sim.LinkSpec{{From: 0, To: 1, Rate: 10 * sim.GbitPerSecond}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Node 1 of the dumbbell is "left" (hosts first): its route to host 1
	// (the receiver) leaves by its port towards "right".
	left := -1
	for i, n := range topo.Nodes {
		if n.Name == "left" {
			left = i
		}
	}
	ix, err := topologies.Compile(topo)
	if err != nil {
		t.Fatal(err)
	}
	next := ix.Routes().Next(left, 1)
	ports := make([]Port, len(ix.Ports(left)))
	for i := range ports {
		ports[i] = Port{Link: 0, Peer: 1, Queue: q}
	}
	if len(next) != 1 {
		t.Fatalf("left has %d routes to host 1, want 1", len(next))
	}
	return New(0, left, ports, ix.Routes(), ECMP), e
}

func arrive(s *Switch, e *sim.Engine, size int32, ect bool) sim.PktRef {
	p := e.Pool.Alloc()
	pk := e.Pool.Get(p)
	pk.Size, pk.DstHost = size, 1
	if ect {
		pk.Flags = sim.FlagECT
	}
	s.OnArrive(e, p, -1)
	return p
}

func egress(s *Switch) *Port {
	for i := range s.Ports {
		if s.Ports[i].Enqueued > 0 || s.Ports[i].Dropped > 0 {
			return &s.Ports[i]
		}
	}
	return &s.Ports[0]
}

func TestSwitch_DropTailCountsTheInServicePacket(t *testing.T) {
	s, e := oneSwitch(t, topologies.QueueConfig{Buffer: 10 * 1024})
	for i := 0; i < 12; i++ {
		arrive(s, e, 1024, false)
	}
	pt := egress(s)
	// Ten 1024-byte packets fit in 10,240 bytes, one of them in service.
	if pt.Enqueued != 10 || pt.Dropped != 2 || pt.PeakBytes != 10240 || pt.Queued() != 9 {
		t.Fatalf("enqueued %d dropped %d peak %d queued %d; want 10, 2, 10240, 9",
			pt.Enqueued, pt.Dropped, pt.PeakBytes, pt.Queued())
	}
}

func TestSwitch_ECNStepMarksAboveK(t *testing.T) {
	s, e := oneSwitch(t, topologies.QueueConfig{Buffer: 1 << 20,
		ECN: topologies.ECNConfig{Mode: topologies.ECNStep, K: 5 * 1024}})
	// Occupancy found on arrival: 0, 1024, ..., so packets 0-5 see <= K and
	// packet 6 on see 6144 > 5120.
	var marked []bool
	for i := 0; i < 9; i++ {
		p := arrive(s, e, 1024, true)
		marked = append(marked, e.Pool.Get(p).Flags&sim.FlagCE != 0)
	}
	for i, m := range marked {
		if m != (i >= 6) {
			t.Fatalf("marks %v: want the first 6 unmarked and the rest marked (occupancy > K=5120)", marked)
		}
	}
	// Non-ECT packets are never marked.
	if p := arrive(s, e, 1024, false); e.Pool.Get(p).Flags&sim.FlagCE != 0 {
		t.Fatal("a non-ECT packet was marked")
	}
	if egress(s).Marked != 3 {
		t.Fatalf("marked counter %d, want 3", egress(s).Marked)
	}
}

func TestSwitch_REDProbabilityRamp(t *testing.T) {
	c := topologies.ECNConfig{Mode: topologies.ECNRED, Min: 10000, Max: 30000, PMax: 0.2}
	s, e := oneSwitch(t, topologies.QueueConfig{Buffer: 1 << 20, ECN: c})
	for _, tc := range []struct {
		occ  int64
		want float64
	}{{5000, 0}, {10000, 0}, {20000, 0.1}, {25000, 0.15}, {30000, 1}, {40000, 1}} {
		n := 0
		const trials = 40000
		for i := 0; i < trials; i++ {
			if s.mark(e, &c, tc.occ) {
				n++
			}
		}
		got := float64(n) / trials
		if math.Abs(got-tc.want) > 0.01 {
			t.Errorf("occupancy %d: marked %.3f, want %.3f (linear from min to pmax at max, 1 above)", tc.occ, got, tc.want)
		}
	}
}

// TestSwitch_SettleAppliesAPassedElidedCompletion: a packet that starts on
// an idle port gets no transmit-done event (sim.Engine.TransmitLazy); once
// the engine is past its end, the port still counts it until something
// settles the port. Settle (what the live view calls between batches)
// frees it, as the event would have, and leaves a port still serialising
// alone.
func TestSwitch_SettleAppliesAPassedElidedCompletion(t *testing.T) {
	s, e := oneSwitch(t, topologies.QueueConfig{Buffer: 10 * 1024})
	arrive(s, e, 1000, false)
	pt := egress(s)
	if !pt.lazy || pt.Occupancy() != 1000 {
		t.Fatalf("after one packet on an idle port: lazy %v, occupancy %d; want an elided completion and 1000 bytes", pt.lazy, pt.Occupancy())
	}
	s.Settle(e) // at time 0 the packet is still being serialised (800 ns at 10 Gb/s)
	if !pt.lazy || pt.Occupancy() != 1000 {
		t.Fatalf("Settle during serialisation: lazy %v, occupancy %d; want the packet still in service", pt.lazy, pt.Occupancy())
	}
	// The packet's arrival at the far end (this link has no propagation
	// delay): at 800 ns, ordered after the completion's key (at 800 ns,
	// owner 0), which is therefore past.
	ev, ok := e.Next(sim.Never)
	if !ok || ev.At != 800*sim.Nanosecond || ev.Dst != 1 {
		t.Fatalf("next event %+v, %v: want the arrival at element 1 at 800 ns", ev, ok)
	}
	if pt.Occupancy() != 1000 {
		t.Fatalf("past the elided completion, before Settle: occupancy %d, want 1000 (nothing settled the port yet)", pt.Occupancy())
	}
	events := e.Stats.Events
	s.Settle(e)
	if pt.lazy || pt.Occupancy() != 0 {
		t.Errorf("after Settle: lazy %v, occupancy %d; want the completion applied and an empty port", pt.lazy, pt.Occupancy())
	}
	if e.Stats.Events != events+1 {
		t.Errorf("events %d -> %d: the settled completion counts as the one event it stands for", events, e.Stats.Events)
	}
}
