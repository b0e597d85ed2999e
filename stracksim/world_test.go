package stracksim

import (
	"slices"
	"testing"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// TestSerialization_TruncatedNanoseconds: Link::serialization_ns is
// size·8·10⁹/bps in integers, so 81.92 ns is 81 ns.
func TestSerialization_TruncatedNanoseconds(t *testing.T) {
	g := sim.GbitPerSecond
	for _, c := range []struct {
		size int32
		rate sim.Bandwidth
		want sim.Time
	}{{1024, 100 * g, 81}, {1024, 40 * g, 204}, {64, 100 * g, 5}, {64, 40 * g, 12}} {
		if got := Serialization(c.size, c.rate); got != c.want*sim.Nanosecond {
			t.Errorf("%d B at %v: %v, want %d ns", c.size, c.rate, got, c.want)
		}
	}
}

// TestPort_AdmitAtTheBoundary: drop when waiting bytes + size > buffer,
// mark any packet (no ECT needed) when waiting bytes + size > k; both
// strict, the packet in service not counted.
func TestPort_AdmitAtTheBoundary(t *testing.T) {
	var c switchsim.Port
	pt := port{buffer: 10240, k: 5120, c: &c}
	var ack sim.Packet
	ack.Flags, ack.Size = sim.FlagAck, 1024
	pt.bytes = 4096
	if !pt.admit(&ack) || ack.Flags&sim.FlagCE != 0 {
		t.Fatalf("4096 + 1024 = 5120 bytes: admitted unmarked expected (flags %#x)", ack.Flags)
	}
	ack.Flags = sim.FlagAck
	pt.bytes = 4097
	if !pt.admit(&ack) || ack.Flags&sim.FlagCE == 0 {
		t.Fatal("4097 + 1024 > 5120: a packet without ECT must be marked")
	}
	pt.bytes = 9216
	if !pt.admit(&ack) || pt.bytes != 10240 {
		t.Fatalf("9216 + 1024 = 10240 fits the buffer (bytes now %d)", pt.bytes)
	}
	pt.bytes = 9217
	if pt.admit(&ack) || pt.bytes != 9217 {
		t.Fatal("9217 + 1024 > 10240 must be dropped and add nothing")
	}
	if c.Dropped != 1 || c.Marked != 2 || c.Enqueued != 3 {
		t.Fatalf("counters %+v, want 1 drop, 2 marks, 3 enqueued", c.PortCounters)
	}
}

func TestPercentiles_ByIndex(t *testing.T) {
	us := func(xs ...int) []sim.Time {
		var r []sim.Time
		for _, x := range xs {
			r = append(r, sim.Time(x)*sim.Microsecond)
		}
		return r
	}
	for _, c := range []struct {
		in       []sim.Time
		p50, p99 int
	}{
		{us(572, 238, 331, 439), 439, 572}, // n = 4: the 3rd and the 4th
		{us(5), 5, 5},
		{us(9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 5, 9}, // n = 10: [5], [min(9, 9)]
	} {
		p50, p99 := Percentiles(c.in)
		if p50 != sim.Time(c.p50)*sim.Microsecond || p99 != sim.Time(c.p99)*sim.Microsecond {
			t.Errorf("%v: %v, %v; want %d us, %d us", c.in, p50, p99, c.p50, c.p99)
		}
	}
	h := make([]sim.Time, 100)
	for i := range h {
		h[i] = sim.Time(99 - i)
	}
	if p50, p99 := Percentiles(h); p50 != 50 || p99 != 99 {
		t.Errorf("n = 100: %v, %v; want sorted[50] = 50 and sorted[99] = 99", p50, p99)
	}
}

// TestSummarize_SimSummaryFromFcts: P95 and Max as SimSummary::from_fcts
// gives them: sorted[min(n·95/100, n−1)] and the largest.
func TestSummarize_SimSummaryFromFcts(t *testing.T) {
	for _, c := range []struct {
		n                  int
		p50, p95, p99, max sim.Time
	}{
		{4, 2, 3, 3, 3},      // [2], [min(3, 3)], [min(3, 3)]
		{20, 10, 19, 19, 19}, // [10], [19], [min(19, 19)]
		{40, 20, 38, 39, 39}, // [20], [38], [min(39, 39)]
		{200, 100, 190, 198, 199},
	} {
		xs := make([]sim.Time, c.n)
		for i := range xs {
			xs[i] = sim.Time(c.n - 1 - i)
		}
		got := Summarize(xs)
		if want := (FCTSummary{P50: c.p50, P95: c.p95, P99: c.p99, Max: c.max}); got != want {
			t.Errorf("n = %d: %+v, want %+v", c.n, got, want)
		}
	}
	if got := Summarize(nil); got != (FCTSummary{}) {
		t.Errorf("no flows: %+v, want zeros", got)
	}
}

// newTestWorld is the multi_loss dumbbell (3 + 3 hosts, 100 and 40 Gb/s,
// 500 ns links, 10240 B buffers marking above 5120 B) with the given
// flows, run by hand event by event.
func newTestWorld(t *testing.T, p Protocol, flows []hostsim.FlowSpec) (*sim.Engine, *World) {
	t.Helper()
	g := sim.GbitPerSecond
	q := topologies.QueueConfig{Buffer: 10240, ECN: topologies.ECNConfig{Mode: topologies.ECNStep, K: 5120}}
	topo, err := topologies.Dumbbell(topologies.DumbbellConfig{Senders: 3, Receivers: 3,
		Host:       topologies.TierConfig{Rate: 100 * g, Delay: 500 * sim.Nanosecond, Queue: q},
		Bottleneck: topologies.TierConfig{Rate: 40 * g, Delay: 500 * sim.Nanosecond, Queue: q}})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := topologies.Compile(topo)
	if err != nil {
		t.Fatal(err)
	}
	dirID := func(i int, aToB bool) sim.LinkID {
		if aToB {
			return sim.LinkID(2 * i)
		}
		return sim.LinkID(2*i + 1)
	}
	specs := make([]sim.LinkSpec, 2*len(topo.Links))
	for i, l := range topo.Links {
		specs[dirID(i, true)] = sim.LinkSpec{From: sim.ElemID(l.A), To: sim.ElemID(l.B), Rate: l.Rate, Delay: l.Delay}
		specs[dirID(i, false)] = sim.LinkSpec{From: sim.ElemID(l.B), To: sim.ElemID(l.A), Rate: l.Rate, Delay: l.Delay}
	}
	e, err := sim.NewEngine(1, len(topo.Nodes), specs, nil)
	if err != nil {
		t.Fatal(err)
	}
	sws := make([]*switchsim.Switch, len(topo.Nodes))
	for n := range topo.Nodes {
		if topo.Nodes[n].Kind == topologies.Switch {
			sws[n] = &switchsim.Switch{Ports: make([]switchsim.Port, len(ix.Ports(n)))}
		}
	}
	fb := &Fabric{Topo: topo, Ports: ix.Ports, Routes: ix.Routes(), Links: specs, Switches: sws,
		Dir: func(node int, p topologies.Port) sim.LinkID { return dirID(p.Link, topo.Links[p.Link].A == node) }}
	tr := hostsim.NewRecordTransport(hostsim.DefaultConfig(), flows)
	w, err := New(e, 0, fb, DefaultConfig(p), tr)
	if err != nil {
		t.Fatal(err)
	}
	return e, w
}

func flow(id int32, src, dst int, size int64, start sim.Time) hostsim.FlowSpec {
	return hostsim.FlowSpec{ID: id, Src: src, Dst: dst, Size: size, Start: start}
}

// TestBaseRTT_OnePacket: a one-packet flow completes at the sender one
// base RTT after it starts: 81 + 500 + 204 + 500 + 81 + 500 ns out and
// 5 + 500 + 12 + 500 + 5 + 500 ns back, 3388 ns (truncated serialisation).
func TestBaseRTT_OnePacket(t *testing.T) {
	e, w := newTestWorld(t, SimpleTCP, []hostsim.FlowSpec{flow(0, 0, 3, 1024, 1000*sim.Nanosecond)})
	for ev, ok := e.Next(sim.Never); ok; ev, ok = e.Next(sim.Never) {
		w.OnEvent(e, &ev)
	}
	rec := w.tr.Records[0]
	if got := rec.AckedAt - rec.StartAt; got != 3388*sim.Nanosecond {
		t.Fatalf("sender-side FCT %v, want 3388ns", got)
	}
	if got := rec.Finish - rec.StartAt; got != 1866*sim.Nanosecond {
		t.Fatalf("the data packet arrived after %v, want 1866ns", got)
	}
}

// TestTicks_Chains: host 0's send ticks are one at the flow's start, one
// TickSent after every tick that sent, one TickIdle after every tick that
// did not while a flow is unfinished, and one at every arrival (each
// arrival starting its own chain); none once the flow is done.
func TestTicks_Chains(t *testing.T) {
	start := 1000 * sim.Nanosecond
	e, w := newTestWorld(t, SimpleTCP, []hostsim.FlowSpec{flow(0, 0, 3, 40*1024, start)})
	var ticks, arrivals, want []sim.Time
	sentTicks, idleTicks := 0, 0
	for ev, ok := e.Next(sim.Never); ok; ev, ok = e.Next(sim.Never) {
		kind, a, _ := unarg(ev.Arg)
		now := e.Now()
		switch {
		case kind == evTick && a == 0:
			ticks = append(ticks, now)
			before, active := w.Created, w.active(&w.hosts[0])
			w.OnEvent(e, &ev)
			switch {
			case w.Created > before:
				want = append(want, now+w.cfg.TickSent)
				sentTicks++
			case active:
				want = append(want, now+w.cfg.TickIdle)
				idleTicks++
			}
			continue
		case kind == evArrive && a == 0:
			arrivals = append(arrivals, now)
			want = append(want, now)
		}
		w.OnEvent(e, &ev)
	}
	want = append(want, start)
	slices.Sort(ticks)
	slices.Sort(want)
	if !slices.Equal(ticks, want) {
		t.Fatalf("%d ticks, want %d (start, +200ns after a sending tick, +25us after an idle one, one per arrival)", len(ticks), len(want))
	}
	if !w.tr.Records[0].Finished || w.tr.Records[0].AckedAt == 0 || sentTicks < 2 || idleTicks == 0 || len(arrivals) < 40 {
		t.Fatalf("the run did not exercise the chains: %d sending, %d idle ticks, %d arrivals", sentTicks, idleTicks, len(arrivals))
	}
	// 1000 ns sends 16; 1200 ns finds the window full; the next is the
	// first ACK, one base RTT (3388 ns) after the start.
	if ticks[1] != start+200*sim.Nanosecond || ticks[2] != start+3388*sim.Nanosecond || arrivals[0] != ticks[2] {
		t.Fatalf("first ticks %v, first arrival %v: want 1us, 1.2us, 4.388us", ticks[:3], arrivals[0])
	}
}
