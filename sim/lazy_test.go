package sim

import (
	"fmt"
	"slices"
	"testing"
)

func TestEventQueue_ReplaceTopKeepsOrder(t *testing.T) {
	r := NewRand(3, 4)
	var q eventQueue
	var ref []Event
	less := compareEvents
	seq := uint64(0)
	next := func(at Time) Event {
		seq++
		return Event{At: at + Time(r.IntN(40)), Dst: ElemID(r.IntN(4)), Src: ElemID(r.IntN(4)), Seq: seq}
	}
	var now Time
	for i := 0; i < 20000; i++ {
		switch k := r.IntN(3); {
		case k == 0 || q.Len() == 0:
			ev := next(now)
			q.push(ev)
			ref = append(ref, ev)
		case k == 1:
			got := q.pop()
			slices.SortFunc(ref, less)
			if less(got, ref[0]) != 0 {
				t.Fatalf("step %d: pop got %+v, want %+v", i, got, ref[0])
			}
			ref = ref[1:]
			now = got.At
		default:
			got := *q.peek()
			slices.SortFunc(ref, less)
			if less(got, ref[0]) != 0 {
				t.Fatalf("step %d: peek got %+v, want %+v", i, got, ref[0])
			}
			now = got.At
			ev := next(now)
			q.replaceTop(ev)
			ref[0] = ev
		}
	}
}

// lazyRig: sources 0 and 3 send packets to element 1, which forwards
// them over link 2 (1 -> 2) from a FIFO queue, with transmit-done events
// (lazy false) or with elided ones (TransmitLazy, TxPassed, Materialize).
type lazyRig struct {
	e       *Engine
	lazy    bool
	q       Ring[PktRef]
	busy    bool
	pending bool // an elided completion of link 2
	trace   []string
}

const lazyOut LinkID = 2

func newLazyRig(t *testing.T, lazy bool) *lazyRig {
	t.Helper()
	rate := 8 * GbitPerSecond // 1 ns per byte
	e, err := NewEngine(1, 4, []LinkSpec{
		{From: 0, To: 1, Rate: rate, Delay: 100 * Nanosecond},
		{From: 3, To: 1, Rate: rate, Delay: 300 * Nanosecond},
		{From: 1, To: 2, Rate: rate, Delay: 50 * Nanosecond},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := &lazyRig{e: e, lazy: lazy}
	if lazy {
		e.OnLazyDone = func(id LinkID) {
			if id != lazyOut || !x.pending {
				t.Fatalf("OnLazyDone(%d) with pending %v", id, x.pending)
			}
			x.pending, x.busy = false, false
		}
	}
	return x
}

func (x *lazyRig) start(p PktRef) {
	e := x.e
	x.busy = true
	x.trace = append(x.trace, fmt.Sprintf("start %d at %v", e.Pool.Get(p).ID, e.Now()))
	if x.lazy && x.q.Len() == 0 {
		x.pending = true
		e.TransmitLazy(lazyOut, p, e.Now())
		return
	}
	e.Transmit(lazyOut, p)
}

func (x *lazyRig) arrive(p PktRef) {
	if x.pending && x.e.TxPassed(lazyOut) {
		x.pending, x.busy = false, false
	}
	// What a switch's admission sees (its occupancy counts the packet in
	// service): at a tie, the completion's key decides.
	x.trace = append(x.trace, fmt.Sprintf("arrive busy %v queued %d", x.busy, x.q.Len()))
	if !x.busy && x.q.Len() == 0 {
		x.start(p)
		return
	}
	x.q.Push(p)
	if x.pending {
		x.pending = false
		x.e.Materialize(lazyOut)
	}
}

func (x *lazyRig) txDone() {
	x.busy = false
	if x.q.Len() > 0 {
		x.start(x.q.Pop())
	}
}

// run sends n packets from each source on a grid of the 100-byte
// transmission time (so that many arrive exactly when link 2 frees),
// running in windows of random lengths, and returns the trace of
// everything but link 2's transmit-dones, and the engine's stats.
func (x *lazyRig) run(n int) ([]string, Stats) {
	e := x.e
	r := NewRand(9, 9)
	for _, src := range []ElemID{0, 3} {
		at := Time(0)
		for i := 0; i < n; i++ {
			at += Time(1+r.IntN(3)) * 100 * Nanosecond
			e.Schedule(src, at, int64(40+r.IntN(3)*30), NoPacket)
		}
	}
	horizon := Time(0)
	for e.QueueLen() > 0 {
		horizon += Time(1+r.IntN(500)) * Nanosecond
		for {
			ev, ok := e.Next(horizon)
			if !ok {
				break
			}
			if ev.Kind != EvTxDone || LinkID(ev.Arg) != lazyOut {
				x.trace = append(x.trace, fmt.Sprintf("%v %d %d %d %d", ev.At, ev.Dst, ev.Src, ev.Seq, ev.Kind))
			}
			switch {
			case ev.Kind == EvTimer: // a source sends ev.Arg bytes
				p := e.Pool.Alloc()
				pk := e.Pool.Get(p)
				pk.ID, pk.Size = e.NewPacketID(ev.Dst), int32(ev.Arg)
				link := LinkID(0)
				if ev.Dst == 3 {
					link = 1
				}
				if e.Links[link].BusyUntil() > e.Now() {
					e.Pool.Free(p)
					continue
				}
				e.Transmit(link, p)
			case ev.Kind == EvTxDone && ev.Dst == 1:
				x.txDone()
			case ev.Kind == EvArrive && ev.Dst == 1:
				x.arrive(ev.Pkt)
			case ev.Kind == EvArrive && ev.Dst == 2:
				e.Pool.Free(ev.Pkt)
			}
		}
		x.trace = append(x.trace, fmt.Sprintf("window %v now %v events %d next %v", horizon, e.Now(), e.Stats.Events, e.NextEventTime()))
	}
	return x.trace, e.Stats
}

// TestTransmitLazy_SameAsEvents: eliding transmit-dones changes neither
// the order of the other events (their keys included), nor when packets
// start (the ties at exactly the completion time resolve as the event's
// key would), nor the events counted, nor the clock and the next event's
// time at each window's end.
func TestTransmitLazy_SameAsEvents(t *testing.T) {
	want, ws := newLazyRig(t, false).run(3000)
	got, gs := newLazyRig(t, true).run(3000)
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			t.Fatalf("line %d: lazy %q, with events %q", i, got[i], want[i])
		}
	}
	if len(want) != len(got) {
		t.Fatalf("lazy trace has %d lines, with events %d", len(got), len(want))
	}
	if gs.Events != ws.Events || gs.Timers != ws.Timers || gs.Sent != ws.Sent {
		t.Fatalf("lazy stats %+v, with events %+v", gs, ws)
	}
	if gs.PeakQueue > ws.PeakQueue {
		t.Fatalf("lazy peak queue %d, more than with events (%d)", gs.PeakQueue, ws.PeakQueue)
	}
}

// BenchmarkTransmitLazy is the per-packet core path of a port with an
// empty queue: transmit with an elided transmit-done, deliver, free, and
// find the completion past (TxPassed) before the next packet. It must not
// allocate.
//
//	go test ./sim -run - -bench TransmitLazy -benchmem
func BenchmarkTransmitLazy(b *testing.B) {
	e, _ := NewEngine(1, 2, []LinkSpec{{From: 0, To: 1, Rate: 100 * GbitPerSecond, Delay: Microsecond}}, nil)
	pending := false
	step := func() {
		if pending && !e.TxPassed(0) {
			panic("the previous completion is not past")
		}
		p := e.Pool.Alloc()
		e.Pool.Get(p).Size = 1500
		e.TransmitLazy(0, p, e.Now())
		pending = true
		for {
			ev, ok := e.Next(Never)
			if !ok {
				break
			}
			e.Pool.Free(ev.Pkt) // only arrivals: no transmit-done events
		}
	}
	for range 64 { // warm up pool, ring and heap
		step()
	}
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}

func TestTransmitLazy_DoesNotAllocate(t *testing.T) {
	e, _ := NewEngine(1, 2, []LinkSpec{{From: 0, To: 1, Rate: 100 * GbitPerSecond, Delay: Microsecond}}, nil)
	step := func() {
		p := e.Pool.Alloc()
		e.Pool.Get(p).Size = 1500
		e.TransmitLazy(0, p, e.Now())
		for {
			ev, ok := e.Next(Never)
			if !ok {
				break
			}
			if ev.Kind != EvArrive {
				t.Fatalf("event of kind %d: a lazy transmit has no transmit-done", ev.Kind)
			}
			e.Pool.Free(ev.Pkt)
		}
		if !e.TxPassed(0) {
			t.Fatal("the completion is not past after the arrival")
		}
	}
	for range 64 {
		step()
	}
	if allocs := testing.AllocsPerRun(100, step); allocs != 0 {
		t.Fatalf("%.1f allocations per lazy transmit, want 0", allocs)
	}
}

// TestEventQueue_SlotsKeepTheKeyOrder drives queues with small slots and
// rings (so that events fall in near, in side, in buckets a turn around
// the ring, and in far, and the window jumps over empty stretches), and
// with slots of many events (sorted by the radix sort, by sequence number
// on equal packed keys, or by the standard sort when ids are too wide),
// with pushes, pops, peeks and replaced tops, against a sorted reference.
func TestEventQueue_SlotsKeepTheKeyOrder(t *testing.T) {
	less := compareEvents
	for _, c := range []struct {
		shift uint
		slots int64
		span  int
		ids   int // element ids drawn from [0, ids)
	}{{0, 64, 40, 3}, {2, 64, 1000, 3}, {3, 128, 5000, 3}, {4, 64, 1 << 20, 3}, {16, 1024, 1 << 30, 3},
		// Big slots of many events (the radix sort), with ties of
		// (time, destination, source) and ids too wide to pack.
		{10, 64, 3000, 5}, {10, 64, 3000, 200000}, {16, 64, 40000, 1 << 31}} {
		t.Run(fmt.Sprintf("shift=%d,slots=%d,span=%d,ids=%d", c.shift, c.slots, c.span, c.ids), func(t *testing.T) {
			r := NewRand(5, uint64(c.span))
			q := eventQueue{shift: c.shift, slots: c.slots}
			var ref []Event // sorted
			insert := func(ev Event) {
				i, _ := slices.BinarySearchFunc(ref, ev, less)
				ref = slices.Insert(ref, i, ev)
			}
			seq := uint64(0)
			next := func(at Time) Event {
				seq++
				d := Time(r.IntN(c.span))
				if r.IntN(8) == 0 {
					d = Time(r.IntN(4)) // ties and near events
				}
				return Event{At: at + d, Dst: ElemID(r.IntN(c.ids)), Src: ElemID(r.IntN(c.ids)), Seq: seq}
			}
			var now Time
			for i := 0; i < 30000; i++ {
				switch k := r.IntN(4); {
				case k <= 1 || q.Len() == 0:
					ev := next(now)
					q.push(ev)
					insert(ev)
				case k == 2:
					got := q.pop()
					if less(got, ref[0]) != 0 {
						t.Fatalf("step %d: pop got %+v, want %+v", i, got, ref[0])
					}
					ref = ref[1:]
					now = got.At
				default:
					got := *q.peek()
					if less(got, ref[0]) != 0 {
						t.Fatalf("step %d: peek got %+v, want %+v", i, got, ref[0])
					}
					now = got.At
					ev := next(now)
					q.replaceTop(ev)
					ref = ref[1:]
					insert(ev)
				}
				if q.Len() != len(ref) {
					t.Fatalf("step %d: expected %d events, got %d", i, len(ref), q.Len())
				}
			}
			for len(ref) > 0 {
				got := q.pop()
				if less(got, ref[0]) != 0 {
					t.Fatalf("draining: pop got %+v, want %+v", got, ref[0])
				}
				ref = ref[1:]
			}
		})
	}
}
