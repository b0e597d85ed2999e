package sim

import "testing"

// Engine.Ahead(k), which the prefetches ahead of an event read, is the
// event Step returns k steps after the next one while they are in the
// same time slot, and nil when the slot holds fewer; the prefetches
// themselves change nothing Step returns.
func TestEngine_AheadIsTheEventKStepsOn(t *testing.T) {
	const k = 4
	e, err := NewEngine(1, 8, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRand(3, 0)
	for i := 0; i < 3000; i++ {
		// Many events per 4.1 ns slot, and gaps of empty slots.
		e.Schedule(ElemID(r.IntN(8)), Time(r.IntN(40))*Time(1)<<slotShift+Time(r.IntN(3)), int64(i), NoPacket)
	}
	type key struct {
		at       Time
		dst, src ElemID
		seq      uint64
	}
	var pending []key // Ahead's answers, for the step they name
	var steps []key
	seen, none := 0, 0
	for {
		var want key
		if a := e.Ahead(k); a != nil {
			want = key{a.At, a.Dst, a.Src, a.Seq}
			seen++
		} else {
			none++
		}
		pending = append(pending, want)
		ev := e.Step(Never)
		if ev == nil {
			break
		}
		steps = append(steps, key{ev.At, ev.Dst, ev.Src, ev.Seq})
	}
	for i, want := range pending {
		if want == (key{}) {
			continue
		}
		// Before step i the slot's front is step i's event: k on from
		// it is step i + k's.
		if j := i + k; j >= len(steps) || steps[j] != want {
			t.Fatalf("before step %d: Ahead(%d) = %+v, step %d is %+v", i, k, want, j, steps[min(j, len(steps)-1)])
		}
	}
	if seen < 2000 || none == 0 {
		t.Fatalf("Ahead answered %d times and was nil %d times: the slots were not exercised", seen, none)
	}
}
