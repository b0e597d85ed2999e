package sim

import (
	"math"
	"slices"
	"testing"
	"unsafe"
)

func TestEventQueue_OrdersByPartitionIndependentKey(t *testing.T) {
	r := NewRand(1, 2)
	var q eventQueue
	var ref []Event
	for i := 0; i < 5000; i++ {
		ev := Event{At: Time(r.IntN(50)), Dst: ElemID(r.IntN(4)), Src: ElemID(r.IntN(4)), Seq: uint64(r.IntN(8))}
		q.push(ev)
		ref = append(ref, ev)
	}
	slices.SortFunc(ref, func(a, b Event) int {
		if a.Before(&b) {
			return -1
		}
		if b.Before(&a) {
			return 1
		}
		return 0
	})
	for i := range ref {
		got := q.pop()
		if got.At != ref[i].At || got.Dst != ref[i].Dst || got.Src != ref[i].Src || got.Seq != ref[i].Seq {
			t.Fatalf("pop %d: got (%v,%d,%d,%d), want (%v,%d,%d,%d)", i, got.At, got.Dst, got.Src, got.Seq,
				ref[i].At, ref[i].Dst, ref[i].Src, ref[i].Seq)
		}
	}
}

func TestTxTime_ExactPicoseconds(t *testing.T) {
	cases := []struct {
		rate  Bandwidth
		bytes int
		want  Time
	}{
		{800 * GbitPerSecond, 1500, 15 * Nanosecond},
		{100 * GbitPerSecond, 4096, 327680 * Picosecond},
		{40 * GbitPerSecond, 1024, 204800 * Picosecond},
		{3 * GbitPerSecond, 1, 2667 * Picosecond}, // 2666.67 rounds up
	}
	for _, c := range cases {
		if got := c.rate.TxTime(c.bytes); got != c.want {
			t.Errorf("%v.TxTime(%d) = %d ps, want %d ps", c.rate, c.bytes, got, c.want)
		}
	}
}

func TestRing_FIFOAcrossGrowth(t *testing.T) {
	var r Ring[int]
	next := 0
	for i := 0; i < 1000; i++ {
		r.Push(i)
		if i%3 == 0 {
			if got := r.Pop(); got != next {
				t.Fatalf("pop = %d, want %d", got, next)
			}
			next++
		}
	}
	for r.Len() > 0 {
		if got := r.Pop(); got != next {
			t.Fatalf("pop = %d, want %d", got, next)
		}
		next++
	}
	if next != 1000 {
		t.Fatalf("popped %d items, want 1000", next)
	}
}

func TestPool_ReusesAndZeroes(t *testing.T) {
	var p Pool
	a := p.Alloc()
	p.Get(a).Seq = 99
	p.Free(a)
	b := p.Alloc()
	if b != a {
		t.Fatalf("Alloc after Free = %d, want the freed %d", b, a)
	}
	if p.Get(b).Seq != 0 {
		t.Fatalf("reused packet not zeroed: Seq = %d", p.Get(b).Seq)
	}
	// Pointers stay valid across growth.
	ptr := p.Get(b)
	for i := 0; i < 3*chunkSize; i++ {
		p.Alloc()
	}
	ptr.Seq = 7
	if p.Get(b).Seq != 7 {
		t.Fatal("pointer from Get went stale after the pool grew")
	}
	if p.Live() != 1+3*chunkSize {
		t.Fatalf("Live = %d, want %d", p.Live(), 1+3*chunkSize)
	}
}

// twoElems is a link 0 -> 1 with the given spec fields.
func twoElems(t *testing.T, seed uint64, s LinkSpec) *Engine {
	t.Helper()
	s.From, s.To = 0, 1
	e, err := NewEngine(seed, 2, []LinkSpec{s}, nil)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	return e
}

// sendAll transmits n packets of size bytes back to back over link 0 and
// returns their arrival times (in arrival order) and the packets' Seq.
func sendAll(e *Engine, n, size int) (at []Time, seqs []uint64) {
	sent := 0
	send := func() {
		p := e.Pool.Alloc()
		pk := e.Pool.Get(p)
		pk.Size = int32(size)
		pk.Seq = uint64(sent)
		sent++
		e.Transmit(0, p)
	}
	send()
	for {
		ev, ok := e.Next(Never)
		if !ok {
			return
		}
		switch ev.Kind {
		case EvTxDone:
			if sent < n {
				send()
			}
		case EvArrive:
			at = append(at, ev.At)
			seqs = append(seqs, e.Pool.Get(ev.Pkt).Seq)
			e.Pool.Free(ev.Pkt)
		case EvTimer: // sendAll arms no timers
		}
	}
}

func TestLink_SerialisationAndPropagation(t *testing.T) {
	e := twoElems(t, 1, LinkSpec{Rate: 10 * GbitPerSecond, Delay: 3 * Microsecond})
	at, _ := sendAll(e, 3, 1250) // 1 us each at 10 Gb/s
	want := []Time{4 * Microsecond, 5 * Microsecond, 6 * Microsecond}
	if !slices.Equal(at, want) {
		t.Fatalf("arrivals %v, want %v", at, want)
	}
	if e.OnWire() != 0 || e.Pool.Live() != 0 {
		t.Fatalf("after the run: %d on wire, %d live packets, want 0 and 0", e.OnWire(), e.Pool.Live())
	}
}

// TestLink_WireSpillsPastItsSlots sends more packets than a wire keeps in
// the engine's slots (wireSlots) onto a long link: they arrive in order,
// a serialisation apart, and the wire counts them while they propagate.
func TestLink_WireSpillsPastItsSlots(t *testing.T) {
	e := twoElems(t, 1, LinkSpec{Rate: 10 * GbitPerSecond, Delay: 20 * Microsecond})
	const n = 2*wireSlots + 1
	at, seqs := sendAll(e, n, 1250) // 1 us each: all 17 on the wire at once
	if len(at) != n {
		t.Fatalf("%d arrivals, want %d", len(at), n)
	}
	for i := range at {
		if want := Time(21+i) * Microsecond; at[i] != want || seqs[i] != uint64(i) {
			t.Fatalf("arrival %d: packet %d at %v, want packet %d at %v", i, seqs[i], at[i], i, want)
		}
	}
	if e.OnWire() != 0 || e.Pool.Live() != 0 {
		t.Fatalf("after the run: %d on wire, %d live packets, want 0 and 0", e.OnWire(), e.Pool.Live())
	}
	// Packets on the wire count while they propagate, slots and spill.
	e = twoElems(t, 1, LinkSpec{Rate: 10 * GbitPerSecond, Delay: 20 * Microsecond})
	for sent := 0; sent < n; {
		p := e.Pool.Alloc()
		e.Pool.Get(p).Size = 1250
		e.Transmit(0, p)
		if sent++; sent < n {
			if ev, ok := e.Next(Never); !ok || ev.Kind != EvTxDone {
				t.Fatalf("after packet %d: event %+v, want its transmit-done", sent, ev)
			}
		}
	}
	if got := e.OnWire(); got != n {
		t.Fatalf("OnWire = %d, want %d", got, n)
	}
}

func TestLink_IndependentLossRate(t *testing.T) {
	e := twoElems(t, 5, LinkSpec{Rate: 100 * GbitPerSecond, Impair: &Impairments{Loss: 0.1}})
	const n = 20000
	at, _ := sendAll(e, n, 100)
	lost := n - len(at)
	// Binomial(20000, 0.1): sd = 42; allow 5 sd.
	if math.Abs(float64(lost)-0.1*n) > 5*math.Sqrt(n*0.1*0.9) {
		t.Fatalf("lost %d of %d, want about %d", lost, n, n/10)
	}
	if e.Links[0].LostRandom != uint64(lost) || e.Stats.LinkLost != uint64(lost) {
		t.Fatalf("counters: link %d, engine %d, want %d", e.Links[0].LostRandom, e.Stats.LinkLost, lost)
	}
}

func TestLink_GilbertElliottBursts(t *testing.T) {
	// Mean loss = P/(P+R) with LossBad=1: 0.01/(0.01+0.25) = 3.85%;
	// mean burst length 1/R = 4 packets.
	e := twoElems(t, 9, LinkSpec{Rate: 100 * GbitPerSecond,
		Impair: &Impairments{GE: &GilbertElliott{P: 0.01, R: 0.25, LossBad: 1}}})
	const n = 200000
	_, seqs := sendAll(e, n, 100)
	lost := n - len(seqs)
	rate := float64(lost) / n
	if want := 0.01 / 0.26; math.Abs(rate-want) > 0.15*want {
		t.Fatalf("loss rate %.4f, want %.4f +-15%%", rate, want)
	}
	// Count bursts of consecutive losses.
	bursts, prev := 0, uint64(0)
	for i, s := range seqs {
		if (i == 0 && s > 0) || (i > 0 && s > prev+1) {
			bursts++
		}
		prev = s
	}
	mean := float64(lost) / float64(bursts)
	if math.Abs(mean-4) > 0.6 {
		t.Fatalf("mean burst length %.2f, want about 4 (1/R)", mean)
	}
}

func TestLink_ReorderingOvertakes(t *testing.T) {
	e := twoElems(t, 3, LinkSpec{Rate: 100 * GbitPerSecond, Delay: Microsecond,
		Impair: &Impairments{ReorderProb: 0.05, ReorderDelay: 2 * Microsecond}})
	_, seqs := sendAll(e, 10000, 1000)
	if len(seqs) != 10000 {
		t.Fatalf("delivered %d, want all 10000 (reordering loses nothing)", len(seqs))
	}
	out := 0
	for i := 1; i < len(seqs); i++ {
		if seqs[i] < seqs[i-1] {
			out++
		}
	}
	if out == 0 || e.Links[0].Reordered == 0 {
		t.Fatalf("no packet was overtaken (reordered counter %d)", e.Links[0].Reordered)
	}
}

func TestLink_JitterBounds(t *testing.T) {
	const jit = 500 * Nanosecond
	e := twoElems(t, 4, LinkSpec{Rate: 100 * GbitPerSecond, Delay: Microsecond, Impair: &Impairments{Jitter: jit}})
	// One packet at a time, so that only jitter moves arrivals.
	var lo, hi Time = Never, 0
	ser := (100 * GbitPerSecond).TxTime(1000)
	for i := 0; i < 2000; i++ {
		p := e.Pool.Alloc()
		e.Pool.Get(p).Size = 1000
		sentAt := e.Now()
		e.Transmit(0, p)
		for {
			ev, ok := e.Next(Never)
			if !ok {
				break
			}
			if ev.Kind == EvArrive {
				d := ev.At - sentAt - ser - Microsecond
				lo, hi = min(lo, d), max(hi, d)
				e.Pool.Free(ev.Pkt)
			}
		}
	}
	if lo < 0 || hi > jit || hi-lo < jit*9/10 {
		t.Fatalf("extra delay in [%v, %v], want spread over [0, %v]", lo, hi, jit)
	}
}

func TestLink_FlapLosesPacketsWhileDown(t *testing.T) {
	// 1250 B at 10 Gb/s = 1 us each, 1 us propagation. Down at 10 us for 5 us.
	e := twoElems(t, 1, LinkSpec{Rate: 10 * GbitPerSecond, Delay: Microsecond,
		Impair: &Impairments{Schedule: []LinkChange{{At: 10 * Microsecond, Kind: ChangeDown}, {At: 15 * Microsecond, Kind: ChangeUp}}}})
	at, _ := sendAll(e, 30, 1250)
	for _, a := range at {
		if a > 10*Microsecond && a < 16*Microsecond {
			t.Errorf("a packet arrived at %v, while the link was down or started down", a)
		}
	}
	// Packets started at 8us (arrive 10us: lost, in flight at 10us), 9..14 us
	// lost; the one starting at 15us arrives at 17us.
	if lost := e.Links[0].LostDown; lost != 7 {
		t.Fatalf("lost while down: %d, want 7 (start times 8..14 us)", lost)
	}
}

func TestLink_RateChange(t *testing.T) {
	e := twoElems(t, 1, LinkSpec{Rate: 10 * GbitPerSecond,
		Impair: &Impairments{Schedule: []LinkChange{{At: 2 * Microsecond, Kind: ChangeRate, Rate: 5 * GbitPerSecond}}}})
	at, _ := sendAll(e, 4, 1250)
	want := []Time{1 * Microsecond, 2 * Microsecond, 4 * Microsecond, 6 * Microsecond}
	if !slices.Equal(at, want) {
		t.Fatalf("arrivals %v, want %v (rate halves at 2us)", at, want)
	}
}

func TestNewEngine_RejectsBadLinks(t *testing.T) {
	for _, s := range []LinkSpec{
		{From: 0, To: 1, Rate: 0},
		{From: 0, To: 1, Rate: -5},
		{From: 0, To: 1, Rate: 10, Delay: -1},
		{From: 0, To: 7, Rate: 10},
	} {
		if _, err := NewEngine(1, 2, []LinkSpec{s}, nil); err == nil {
			t.Errorf("NewEngine accepted %+v", s)
		}
	}
}

func TestRemote_OutboxAndInject(t *testing.T) {
	spec := []LinkSpec{{From: 0, To: 1, Rate: 10 * GbitPerSecond, Delay: Microsecond}}
	a, _ := NewEngine(1, 2, spec, func(id ElemID) bool { return id == 0 })
	b, _ := NewEngine(1, 2, spec, func(id ElemID) bool { return id == 1 })
	p := a.Pool.Alloc()
	a.Pool.Get(p).Size = 1250
	a.Pool.Get(p).Seq = 42
	a.Transmit(0, p)
	if len(a.Outbox()) != 1 || a.Pool.Live() != 0 {
		t.Fatalf("outbox %d, live %d: want the packet exported and freed", len(a.Outbox()), a.Pool.Live())
	}
	rp := a.Outbox()[0]
	b.Inject(&rp)
	ev, ok := b.Next(Never)
	if !ok || ev.Kind != EvArrive || ev.At != 2*Microsecond || b.Pool.Get(ev.Pkt).Seq != 42 {
		t.Fatalf("injected arrival %+v ok=%v, want EvArrive at 2us with seq 42", ev, ok)
	}
}

// BenchmarkTransmitArrive is the per-packet core path: allocate, transmit,
// deliver, free. It must not allocate.
//
//	go test ./sim -run - -bench . -benchmem
func BenchmarkTransmitArrive(b *testing.B) {
	e, _ := NewEngine(1, 2, []LinkSpec{{From: 0, To: 1, Rate: 100 * GbitPerSecond, Delay: Microsecond}}, nil)
	// Warm up pool, rings and heap.
	for i := 0; i < 64; i++ {
		p := e.Pool.Alloc()
		e.Pool.Get(p).Size = 1500
		e.Transmit(0, p)
		for {
			ev, ok := e.Next(Never)
			if !ok {
				break
			}
			if ev.Kind == EvArrive {
				e.Pool.Free(ev.Pkt)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		p := e.Pool.Alloc()
		e.Pool.Get(p).Size = 1500
		e.Transmit(0, p)
		for {
			ev, ok := e.Next(Never)
			if !ok {
				break
			}
			if ev.Kind == EvArrive {
				e.Pool.Free(ev.Pkt)
			}
		}
	}
}

func BenchmarkEventQueue(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run("n="+itoa(n), func(b *testing.B) {
			var q eventQueue
			r := NewRand(1, 1)
			for i := 0; i < n; i++ {
				q.push(Event{At: Time(r.Int64N(1 << 30))})
			}
			b.ReportAllocs()
			for b.Loop() {
				ev := q.pop()
				ev.At += Time(r.Int64N(1 << 20))
				q.push(ev)
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func TestLink_LossSchedule(t *testing.T) {
	// No loss until 1 ms, then every packet is lost.
	e := twoElems(t, 1, LinkSpec{Rate: 10 * GbitPerSecond,
		Impair: &Impairments{Schedule: []LinkChange{{At: Millisecond, Kind: ChangeLoss, Loss: 1}}}})
	at, _ := sendAll(e, 2000, 1250) // 1 us each: 1000 before, 1000 after
	if len(at) != 1000 || e.Links[0].LostRandom != 1000 {
		t.Fatalf("delivered %d, lost %d; want 1000 and 1000", len(at), e.Links[0].LostRandom)
	}
}

// TestLayout_HotFieldsShareALine pins the layouts that keep the per-packet
// path's reads in few cache lines: a Link is three whole lines whose first
// holds what a transmission and an arrival touch (the wire's place in the
// slots included), and a Packet's forwarding header is
// its first 24 bytes in a size that keeps it inside one line for three
// packets of four.
func TestLayout_HotFieldsShareALine(t *testing.T) {
	var l Link
	if got := unsafe.Sizeof(l); got%64 != 0 {
		t.Errorf("Link: expected a multiple of 64 bytes, got %d", got)
	}
	for name, off := range map[string]uintptr{"busyUntil": unsafe.Offsetof(l.busyUntil), "lazySeq": unsafe.Offsetof(l.lazySeq),
		"psPerByte": unsafe.Offsetof(l.psPerByte), "delay": unsafe.Offsetof(l.delay), "TxBytes": unsafe.Offsetof(l.TxBytes),
		"to": unsafe.Offsetof(l.to), "toPort": unsafe.Offsetof(l.toPort), "slot": unsafe.Offsetof(l.slot),
		"wh": unsafe.Offsetof(l.wh), "wn": unsafe.Offsetof(l.wn), "impaired": unsafe.Offsetof(l.impaired)} {
		if off >= 64 {
			t.Errorf("Link.%s: expected in the first 64 bytes, at %d", name, off)
		}
	}
	var p Packet
	if got := unsafe.Sizeof(p); got%16 != 0 {
		t.Errorf("Packet: expected a multiple of 16 bytes, got %d", got)
	}
	if got := unsafe.Offsetof(p.Size) + unsafe.Sizeof(p.Size); got > 24 {
		t.Errorf("Packet: expected the header in the first 24 bytes, it ends at %d", got)
	}
}

// TestTxTime_ExactRatesMultiply checks the multiplication a link does for
// rates that divide 8 Tb/s against Bandwidth.TxTime, and that other rates
// keep the division.
func TestTxTime_ExactRatesMultiply(t *testing.T) {
	r := NewRand(9, 9)
	for _, rate := range []Bandwidth{GbitPerSecond, 10 * GbitPerSecond, 25 * GbitPerSecond, 40 * GbitPerSecond,
		56 * GbitPerSecond, 100 * GbitPerSecond, 200 * GbitPerSecond, 400 * GbitPerSecond, 800 * GbitPerSecond,
		3 * GbitPerSecond, 123456789} {
		l := Link{rate: rate, psPerByte: exactPsPerByte(rate)}
		exact := int64(8*Second)%int64(rate) == 0
		if (l.psPerByte > 0) != exact {
			t.Fatalf("%v: expected psPerByte set %v, got %d", rate, exact, l.psPerByte)
		}
		for range 1000 {
			n := int32(r.IntN(1 << 17))
			if got, want := l.txTime(n), rate.TxTime(int(n)); got != want {
				t.Fatalf("%v, %d bytes: expected %v (TxTime), got %v", rate, n, want, got)
			}
		}
	}
}
