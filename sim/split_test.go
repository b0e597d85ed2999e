package sim

import (
	"testing"
)

// toyRun builds 8 elements on a ring of links, seeds timers, and runs
// them to horizon: every event signals another element and, when its link
// is idle, sends a packet on it. border, if not nil, splits the queue. It
// returns the events in the order Step gave them.
func toyRun(t *testing.T, border []bool, horizon Time) []Event {
	t.Helper()
	const n = 8
	var links []LinkSpec
	for i := range n {
		links = append(links, LinkSpec{From: ElemID(i), To: ElemID((i + 1) % n), Rate: 100 * GbitPerSecond, Delay: Time(700 + 300*i)})
	}
	e, err := NewEngine(3, n, links, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		e.Schedule(ElemID(i), Time(100*i), 0, NoPacket)
	}
	if border != nil {
		e.SplitQueue(border)
	}
	var got []Event
	for {
		ev := e.Step(horizon)
		if ev == nil {
			break
		}
		got = append(got, *ev)
		d := ev.Dst
		r := e.Rand(d)
		if ev.Kind == EvArrive {
			e.Pool.Free(ev.Pkt)
		}
		if ev.Kind == EvTxDone {
			continue
		}
		e.Signal(d, ElemID(r.IntN(n)), e.Now()+Time(r.IntN(3000)), 1)
		if l := e.Links[d]; l.BusyUntil() <= e.Now() {
			p := e.Pool.Alloc()
			e.Pool.Get(p).Size = int32(64 + r.IntN(1500))
			e.Transmit(LinkID(d), p)
		}
	}
	return got
}

// TestSplitQueue_StepKeepsTheKeyOrder: with the queue split, Step gives
// the events in the same order as one queue, whatever the split.
func TestSplitQueue_StepKeepsTheKeyOrder(t *testing.T) {
	want := toyRun(t, nil, 200_000)
	if len(want) < 1000 {
		t.Fatalf("the toy run has %d events, want >= 1000", len(want))
	}
	for _, border := range [][]bool{
		{true, false, false, true, false, true, false, false},
		{false, false, false, false, false, false, false, false},
		{true, true, true, true, true, true, true, true},
	} {
		got := toyRun(t, border, 200_000)
		if len(got) != len(want) {
			t.Fatalf("border %v: %d events, want %d", border, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("border %v: event %d is %+v, want %+v", border, i, got[i], want[i])
			}
		}
	}
}

// TestSplitQueue_StepInteriorLeavesTheBorder: StepInterior gives only
// the events of interior elements before its horizon, in key order; Step
// then gives the border ones and the later ones, and the clock ends where
// the latest event left it.
func TestSplitQueue_StepInteriorLeavesTheBorder(t *testing.T) {
	e, err := NewEngine(1, 4, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		e.Schedule(ElemID(i%4), Time(1000-10*i), int64(i), NoPacket)
	}
	border := []bool{false, true, false, true}
	e.SplitQueue(border)
	var prev *Event
	n := 0
	for ev := e.StepInterior(700); ev != nil; ev = e.StepInterior(700) {
		if border[ev.Dst] || ev.At >= 700 {
			t.Fatalf("StepInterior(700) gave %+v: a border element's, or not before 700", *ev)
		}
		if prev != nil && !prev.Before(ev) {
			t.Fatalf("StepInterior: %+v after %+v", *ev, *prev)
		}
		c := *ev
		prev = &c
		n++
	}
	if n != 4 { // elements 0 and 2 (even i) before 700: i = 32..38
		t.Errorf("StepInterior ran %d events, want 4", n)
	}
	if e.Now() != 680 {
		t.Errorf("now %v after StepInterior, want 680ps (its last event)", e.Now())
	}
	m := 0
	for ev := e.Step(690); ev != nil; ev = e.Step(690) {
		if !border[ev.Dst] {
			t.Fatalf("Step(690) gave %+v again", *ev)
		}
		m++
	}
	if e.Now() != 680 {
		t.Errorf("now %v after Step(690) ran border events to 670ps, want 680ps (where StepInterior left it)", e.Now())
	}
	last := Time(0)
	for ev := e.Step(800); ev != nil; ev = e.Step(800) {
		if !border[ev.Dst] && ev.At < 700 {
			t.Fatalf("Step gave %+v again", *ev)
		}
		if ev.At < last {
			t.Fatalf("Step went back to %v from %v", ev.At, last)
		}
		last = ev.At
		m++
	}
	if e.Now() != 790 {
		t.Errorf("now %v at the window's end, want 790ps", e.Now())
	}
	if got := e.QueueLen(); got != 40-n-m {
		t.Errorf("%d events left, want %d", got, 40-n-m)
	}
}
