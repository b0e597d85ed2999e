package cc

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func uetPM(mode PathMode, n int, base uint16) *PathManager {
	return NewPathManager(PathConfig{Mode: mode, Entropies: n}, base)
}

// TestUETPaths_ObliviousShufflesEachCycle: UecMpOblivious XORs the index
// with a mask drawn per cycle, so every cycle of N packets uses each of
// the flow's N entropies exactly once, in an order that changes; the
// upper bits are the flow's.
func TestUETPaths_ObliviousShufflesEachCycle(t *testing.T) {
	const n = 16
	base := uint16(0xabcd)
	p := uetPM(PathOblivious, n, base)
	rng := sim.NewRand(1, 2)
	var orders [][n]uint16
	for range 8 {
		var seen [n]bool
		var order [n]uint16
		for i := range n {
			ev := p.Pick(0, rng, false)
			if ev&^(n-1) != base&^(n-1) {
				t.Fatalf("entropy %#x: want the flow's upper bits %#x", ev, base&^(n-1))
			}
			idx := ev & (n - 1)
			if seen[idx] {
				t.Fatalf("index %d twice in one cycle", idx)
			}
			seen[idx], order[i] = true, idx
		}
		orders = append(orders, order)
	}
	same := true
	for _, o := range orders[1:] {
		same = same && o == orders[0]
	}
	if same {
		t.Error("eight cycles in the same order: the mask is not redrawn per cycle")
	}
	// Feedback changes nothing: marks, trims and timeouts on one entropy
	// and the next cycle still uses every entropy once.
	for range 3 {
		p.OnNack(0, base)
		p.OnTimeout(0, base)
		p.OnAck(0, base, true, 10)
	}
	var seen [n]bool
	for range n {
		seen[p.Pick(0, rng, false)&(n-1)] = true
	}
	for i, ok := range seen {
		if !ok {
			t.Errorf("after feedback, entropy %d missing from a cycle", i)
		}
	}
}

// TestUETPaths_BitmapTimeoutPenaltyCaps: a timeout gives the entropy the
// maximum penalty, 15 (UecMpBitmap::processEv), and penalties cap there:
// the entropy is passed over on the next 15 cycles and used on the 16th.
func TestUETPaths_BitmapTimeoutPenaltyCaps(t *testing.T) {
	const n = 4
	p := NewPathManager(PathConfig{Mode: PathBitmap, Entropies: n, NoShuffle: true}, 0)
	rng := sim.NewRand(1, 2)
	p.OnTimeout(0, 2)
	p.OnAck(0, 2, true, 10)      // +1 ECN: still capped at 15
	p.OnNack(0, 2)               // +4: capped
	p.OnAck(0, 1, false, 10)     // a clean ACK: no penalty
	p.OnAck(0, 0x4001, true, 10) // another flow's entropy: ignored
	uses := 0
	for cycle := 0; cycle < 16; cycle++ {
		for range n - 1 {
			if p.Pick(0, rng, false) == 2 {
				uses++
				if cycle < 15 {
					t.Fatalf("entropy 2 used in cycle %d: its penalty of 15 should keep it out for 15", cycle)
				}
			}
		}
	}
	if p.uet.pen[2] != 0 || p.uet.pen[0] != 0 || p.uet.pen[1] != 0 {
		t.Errorf("penalties %v: want all spent", p.uet.pen)
	}
}

// TestUETPaths_REPSFreezeCyclesTheCache: with freezing on, a timeout stops
// the random exploration: picks cycle through the cached entropies, fresh
// or not, until the freeze ends; the first feedback after it empties the
// cache and explores 16 random entropies (UecMpReps::processEv).
func TestUETPaths_REPSFreezeCyclesTheCache(t *testing.T) {
	freeze := 100 * sim.Microsecond
	p := NewPathManager(PathConfig{Mode: PathREPS, Entropies: 64, REPSBuffer: 4, REPSFreeze: freeze}, 0)
	rng := sim.NewRand(3, 4)
	for _, ev := range []uint16{7, 9, 11} {
		p.OnAck(0, ev, false, 10)
	}
	if got := p.Pick(0, rng, false); got != 7 {
		t.Fatalf("first pick %d: want the earliest cached, 7", got)
	}
	p.OnTimeout(10*sim.Microsecond, 9)
	var got []uint16
	for range 6 {
		got = append(got, p.Pick(20*sim.Microsecond, rng, false))
	}
	want := []uint16{7, 9, 11, 7, 9, 11}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("frozen picks %v: want the cache cycled, %v", got, want)
		}
	}
	p.OnAck(111*sim.Microsecond, 5, false, 10) // freeze over: reset, explore, then cache 5
	if r := &p.uet.reps; r.frozen || r.explore != repsExplore || r.fresh != 1 {
		t.Fatalf("after the freeze: frozen %v, explore %d, fresh %d; want false, 16, 1", r.frozen, r.explore, r.fresh)
	}
	for range repsExplore {
		p.Pick(120*sim.Microsecond, rng, false)
	}
	if got := p.Pick(120*sim.Microsecond, rng, false); got != 5 {
		t.Errorf("after exploring: want the cached 5, got %d", got)
	}
	// Without freezing a timeout changes nothing.
	q := NewPathManager(PathConfig{Mode: PathREPS, Entropies: 64}, 0)
	q.OnTimeout(0, 1)
	if q.uet.reps.frozen {
		t.Error("reps_freeze 0: a timeout must not freeze")
	}
}

// TestUETPaths_ModesParse: the UET policies' names and UET().
func TestUETPaths_ModesParse(t *testing.T) {
	for name, m := range map[string]PathMode{"oblivious": PathOblivious, "bitmap": PathBitmap, "reps": PathREPS, "mixed": PathMixed} {
		got, err := ParsePathMode(name)
		if err != nil || got != m || !got.UET() {
			t.Errorf("%s: got %v %v (UET %v)", name, got, err, got.UET())
		}
	}
	for _, m := range []PathMode{PathSkip, PathReuse} {
		if m.UET() {
			t.Errorf("%v is STrack's, not UET's", m)
		}
	}
}

// go test ./cc/ -run - -bench UETPaths -benchmem
func BenchmarkUETPathsPick(b *testing.B) {
	for _, m := range []PathMode{PathOblivious, PathBitmap, PathREPS, PathMixed} {
		b.Run(m.String(), func(b *testing.B) {
			p := uetPM(m, 128, 0x1234)
			rng := sim.NewRand(1, 1)
			b.ReportAllocs()
			i := uint16(0)
			for b.Loop() {
				ev := p.Pick(0, rng, false)
				i++
				p.OnAck(0, ev, i%7 == 0, 40)
			}
		})
	}
}

// TestUETPaths_BitmapPenaltiesAndTheirSpending: a CE mark costs an entropy
// 1, a trim in the fabric 4 (UecMpBitmap::processEv); a pick that passes
// penalised entropies takes a point off the first only (nextEntropy's
// flag), and a penalised entropy is passed over once per cycle until its
// penalty is spent.
func TestUETPaths_BitmapPenaltiesAndTheirSpending(t *testing.T) {
	p := NewPathManager(PathConfig{Mode: PathBitmap, Entropies: 4, NoShuffle: true}, 0)
	rng := sim.NewRand(1, 2)
	p.OnAck(0, 0, true, 10) // CE: 1
	p.OnNack(0, 1)          // fabric trim: 4
	if pen := p.uet.pen; pen[0] != 1 || pen[1] != 4 || pen[2] != 0 || pen[3] != 0 {
		t.Fatalf("penalties %v: want [1 4 0 0]", pen)
	}
	if ev := p.Pick(0, rng, false); ev != 2 {
		t.Fatalf("first pick %d: want 2 (0 and 1 passed over)", ev)
	}
	if pen := p.uet.pen; pen[0] != 0 || pen[1] != 4 {
		t.Fatalf("penalties %v after one pick: want 0's spent and 1's untouched (only the first passed loses a point)", pen)
	}
	// From here entropy 1 is the first penalised one each cycle meets: it
	// is passed over in 4 cycles and used in the 5th.
	uses := 0
	for cycle := 0; cycle < 5; cycle++ {
		for range 3 {
			if p.Pick(0, rng, false) == 1 {
				uses++
				if cycle < 4 {
					t.Fatalf("entropy 1 used in cycle %d: its penalty of 4 keeps it out for 4", cycle)
				}
			}
		}
	}
	if uses == 0 || p.uet.pen[1] != 0 {
		t.Errorf("entropy 1 used %d times by cycle 5, penalty %d: want used, 0", uses, p.uet.pen[1])
	}
}

// TestUETPaths_REPSRecyclesOnlyCleanACKs: REPS caches the entropy of an
// unmarked ACK only (UecMpReps::processEv: PATH_GOOD); a marked ACK, a
// fabric trim or a timeout leave nothing to reuse, so the next pick is
// random.
func TestUETPaths_REPSRecyclesOnlyCleanACKs(t *testing.T) {
	p := NewPathManager(PathConfig{Mode: PathREPS, Entropies: 64}, 0)
	rng := sim.NewRand(5, 6)
	p.OnAck(0, 7, true, 10)
	p.OnNack(0, 8)
	p.OnTimeout(0, 9)
	p.Pick(0, rng, false)
	if p.uet.Recycled != 0 || p.uet.Random != 1 {
		t.Fatalf("after a marked ACK, a trim and a timeout: recycled %d, random %d; want 0 and 1", p.uet.Recycled, p.uet.Random)
	}
	p.OnAck(0, 11, false, 10)
	if ev := p.Pick(0, rng, false); ev != 11 || p.uet.Recycled != 1 {
		t.Errorf("after a clean ACK of 11: picked %d (recycled %d), want 11 reused", ev, p.uet.Recycled)
	}
}
