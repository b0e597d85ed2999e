package switchsim

import (
	"math"
	"slices"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// codelHarness drives one CoDel queue as a link that sends one packet
// every step does: each serve dequeues packets at one time until one
// leaves (after a drop the next is dequeued at once, RFC 8289 §5.4's
// loop). Drops and marks are recorded with their times.
type codelHarness struct {
	a            *CoDel
	q            *codelQ
	drops, marks []sim.Time
}

func newCoDelHarness(ecn bool) *codelHarness {
	a := NewCoDel(CoDelTarget, CoDelInterval, 1500, ecn, 1, 1)
	return &codelHarness{a: a, q: &a.q[0]}
}

// serve dequeues at now, every packet having waited sojourn with behind
// bytes left behind it.
func (h *codelHarness) serve(now, sojourn sim.Time, behind int64, ect bool) {
	pkt := &sim.Packet{Size: 1500}
	if ect {
		pkt.Flags |= sim.FlagECT
	}
	for {
		switch h.a.dequeue(h.q, now, pkt, sojourn, behind) {
		case Drop:
			h.drops = append(h.drops, now)
			continue
		case Mark:
			h.marks = append(h.marks, now)
		case Pass:
		}
		return
	}
}

// run serves one packet per millisecond over [from, to] ms.
func (h *codelHarness) run(from, to int, sojourn sim.Time, behind int64, ect bool) {
	for t := from; t <= to; t++ {
		h.serve(sim.Time(t)*sim.Millisecond, sojourn, behind, ect)
	}
}

// schedule is RFC 8289's drop schedule from a state entered at enter
// with count c0, as the dequeue times of a link that sends once per
// millisecond see it: the entering drop, then drops at the first
// millisecond at or after each drop_next, drop_next growing by
// INTERVAL/√count (§5.5), count by one per drop. It is computed here in
// milliseconds, independently of the code's picoseconds.
func schedule(enterMs float64, c0 int, n int) []sim.Time {
	const interval = 100.0 // ms, §4.3
	out := []sim.Time{sim.Time(enterMs) * sim.Millisecond}
	next := enterMs + interval/math.Sqrt(float64(c0))
	for k := c0 + 1; len(out) < n; k++ {
		out = append(out, sim.Time(math.Ceil(next-1e-9))*sim.Millisecond)
		next += interval / math.Sqrt(float64(k))
	}
	return out
}

func TestCoDel_RFC8289_5_3_BelowTargetNeverDrops(t *testing.T) {
	h := newCoDelHarness(false)
	h.run(1, 2000, CoDelTarget-sim.Microsecond, 1<<20, false)
	if len(h.drops) != 0 {
		t.Fatalf("sojourn below TARGET for 2 s: want no drop, got %d (first at %v)", len(h.drops), h.drops[0])
	}
}

func TestCoDel_RFC8289_4_4_OneMTUBacklogNeverDrops(t *testing.T) {
	h := newCoDelHarness(false)
	h.run(1, 2000, 50*sim.Millisecond, 1500, false)
	if len(h.drops) != 0 {
		t.Fatalf("a backlog of one MTU: want no drop whatever the sojourn, got %d", len(h.drops))
	}
}

// TestCoDel_RFC8289_5_4_DropSchedule: a standing delay of 10 ms from 1 ms
// on sets first_above_time to 101 ms (§5.3); the first packet dequeued
// then is dropped and the state entered with count 1 (§5.4); later drops
// follow the control law t + INTERVAL/√count (§5.5).
func TestCoDel_RFC8289_5_4_DropSchedule(t *testing.T) {
	h := newCoDelHarness(false)
	h.run(1, 700, 10*sim.Millisecond, 1<<20, false)
	want := schedule(101, 1, 12)
	got := h.drops[:min(len(h.drops), len(want))]
	if !slices.Equal(got, want) {
		t.Fatalf("drops: want %v, got %v", want, h.drops)
	}
	if h.q.count != uint32(len(h.drops)) {
		t.Errorf("count: want %d after %d drops, got %d", len(h.drops), len(h.drops), h.q.count)
	}
}

// TestCoDel_RFC8289_5_4_LeaveAndReenter: a packet below TARGET ends the
// dropping state; above TARGET again for an INTERVAL, the state is
// entered again with count = count − lastcount (here 4 − 1 = 3: less than
// 16 intervals have passed), so the first gap is INTERVAL/√3; after
// more than 16 intervals of calm it restarts at count 1.
func TestCoDel_RFC8289_5_4_LeaveAndReenter(t *testing.T) {
	h := newCoDelHarness(false)
	h.run(1, 340, 10*sim.Millisecond, 1<<20, false) // drops at 101, 201, 272, 330: count 4
	if len(h.drops) != 4 || h.q.count != 4 {
		t.Fatalf("first episode: want 4 drops, count 4; got %v, count %d", h.drops, h.q.count)
	}
	h.run(341, 341, sim.Millisecond, 1<<20, false)
	if h.q.dropping {
		t.Fatalf("a packet below TARGET must end the dropping state")
	}
	h.drops = nil
	h.run(342, 600, 10*sim.Millisecond, 1<<20, false) // above again: first_above_time 442
	want := schedule(442, 3, 4)
	if !slices.Equal(h.drops[:min(4, len(h.drops))], want) {
		t.Fatalf("re-entry within 16 intervals: want %v (count 3), got %v", want, h.drops)
	}

	far := newCoDelHarness(false)
	far.run(1, 340, 10*sim.Millisecond, 1<<20, false)
	far.run(341, 2400, sim.Millisecond, 1<<20, false) // calm for 2.06 s > 16 intervals
	far.drops = nil
	far.run(2401, 2800, 10*sim.Millisecond, 1<<20, false)
	if want := schedule(2501, 1, 3); !slices.Equal(far.drops[:min(3, len(far.drops))], want) {
		t.Fatalf("re-entry after 16 intervals: want %v (count 1), got %v", want, far.drops)
	}
}

// TestCoDel_ECNMarksOnTheSameSchedule: with ecn, ECN-capable packets are
// marked where they would be dropped, on the same schedule, and none is
// dropped; packets that are not ECN-capable are still dropped.
func TestCoDel_ECNMarksOnTheSameSchedule(t *testing.T) {
	h := newCoDelHarness(true)
	h.run(1, 700, 10*sim.Millisecond, 1<<20, true)
	if len(h.drops) != 0 {
		t.Fatalf("ECN-capable packets: want no drop, got %v", h.drops)
	}
	if want := schedule(101, 1, 12); !slices.Equal(h.marks[:min(len(h.marks), 12)], want) {
		t.Fatalf("marks: want %v, got %v", want, h.marks)
	}
	n := newCoDelHarness(true)
	n.run(1, 300, 10*sim.Millisecond, 1<<20, false)
	if len(n.drops) == 0 || len(n.marks) != 0 {
		t.Fatalf("not ECN-capable: want drops and no marks, got %d drops, %d marks", len(n.drops), len(n.marks))
	}
}

// TestCoDel_RFC8289_5_3_EmptyQueueResets: the queue running empty after
// the entering drop (a nil packet) ends the dropping state and resets
// first_above_time, so the delay must stay above TARGET for a whole
// INTERVAL again.
func TestCoDel_RFC8289_5_3_EmptyQueueResets(t *testing.T) {
	h := newCoDelHarness(false)
	h.run(1, 101, 10*sim.Millisecond, 1<<20, false)
	if len(h.drops) != 1 || !h.q.dropping {
		t.Fatalf("want the entering drop at 101 ms; got %v, dropping %v", h.drops, h.q.dropping)
	}
	h.a.dequeue(h.q, 101*sim.Millisecond, nil, 0, 0)
	if h.q.dropping || h.q.firstAbove != 0 {
		t.Fatalf("an empty queue: want dropping false and first_above_time 0, got %v and %v", h.q.dropping, h.q.firstAbove)
	}
	h.drops = nil
	h.run(102, 201, 10*sim.Millisecond, 1<<20, false)
	if len(h.drops) != 0 {
		t.Fatalf("want no drop before 202 ms (first_above_time = 102 + 100), got %v", h.drops)
	}
	h.run(202, 202, 10*sim.Millisecond, 1<<20, false)
	if len(h.drops) != 1 {
		t.Fatalf("want a drop at 202 ms, got %v", h.drops)
	}
}
