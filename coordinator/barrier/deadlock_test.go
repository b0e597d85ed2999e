package barrier

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// TestDeadlock_WindowsStopAtGridTimesAndTheUnionFindsTheCycle: with a
// deadlock search, no window straddles a grid time; each node reports only
// its own paused ports, and the cycle that spans both nodes is found over
// their union, at the first grid time it is long-paused, which finishes
// the run there.
func TestDeadlock_WindowsStopAtGridTimesAndTheUnionFindsTheCycle(t *testing.T) {
	const grid, thr = 10 * sim.Microsecond, 20 * sim.Microsecond
	b, err := New(Config{Nodes: 2, Lookahead: 4 * sim.Microsecond, StopAt: sim.Never, DeadlockThreshold: thr, DeadlockEvery: grid})
	if err != nil {
		t.Fatal(err)
	}
	rep := func(node int, w uint64, next, at sim.Time, paused ...sim.PausedPort) Report {
		return Report{Node: node, Window: w, NextEvent: next, MinSent: sim.Never, Sent: zeros(2), PausedAt: at, Paused: paused}
	}
	stepAll(t, b, rep(0, 0, 8*sim.Microsecond, 0), rep(1, 0, 9*sim.Microsecond, 0))
	g, _ := b.Ready()
	b.Advance()
	if g.Start != 8*sim.Microsecond || g.End != grid {
		t.Fatalf("window 1: want [8us, 10us) (clamped at the grid time), got [%v, %v)", g.Start, g.End)
	}
	// Element 5 (node 0) waits for 6 (node 1), which waits for 5: paused
	// since 3us, long-paused from 23us, the grid time 30us.
	p0 := sim.PausedPort{Elem: 5, Peer: 6, Port: 1, Since: 3 * sim.Microsecond, Until: sim.Second}
	p1 := sim.PausedPort{Elem: 6, Peer: 5, Port: 2, Since: 3 * sim.Microsecond, Until: sim.Second}
	stepAll(t, b, rep(0, 1, 12*sim.Microsecond, g.End, p0), rep(1, 1, 25*sim.Microsecond, g.End, p1))
	g, _ = b.Ready()
	b.Advance()
	if g.Finished || g.Start != 12*sim.Microsecond || g.End != 16*sim.Microsecond {
		t.Fatalf("window 2: want [12us, 16us) and no deadlock before 20us, got %+v", g)
	}
	stepAll(t, b, rep(0, 2, 40*sim.Microsecond, g.End, p0), rep(1, 2, 41*sim.Microsecond, g.End, p1))
	g, _ = b.Ready()
	if !g.Finished || g.Reason != FinishDeadlock || g.Start != 30*sim.Microsecond || len(g.Cycle) != 2 ||
		g.Cycle[0] != p0 || g.Cycle[1] != p1 {
		t.Fatalf("want the deadlock at 30us with the cycle [5->6, 6->5], got %+v", g)
	}
}
