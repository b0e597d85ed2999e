package barrier_test

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/sim"
)

// A coordinator shell feeds reports in and publishes what Ready returns.
// Here two nodes report their setup window and the first window by hand.
func ExampleBarrier() {
	b, err := barrier.New(barrier.Config{
		Nodes: 2, Lookahead: sim.Microsecond, StopAt: sim.Never, Term: 1,
	})
	if err != nil {
		panic(err)
	}
	us := func(t sim.Time) int64 { return int64(t / sim.Microsecond) }
	show := func() {
		g, ok := b.Ready()
		if !ok {
			fmt.Println("no grant")
			return
		}
		b.Advance()
		if g.Finished {
			fmt.Printf("window %d: finished (%v)\n", g.Window, g.Reason)
			return
		}
		fmt.Printf("window %d: [%dus, %dus) expect %v\n", g.Window, us(g.Start), us(g.End), g.Expect)
	}

	// Window 0 is setup: each node reports its first event.
	for n, first := range []sim.Time{10 * sim.Microsecond, sim.Never} {
		if err := b.Step(barrier.Report{Node: n, Window: 0, Term: 1,
			NextEvent: first, MinSent: sim.Never, Sent: []uint32{0, 0}}); err != nil {
			panic(err)
		}
		show()
	}

	// In window 1 node 0 sends node 1 one batch, arriving at 12us.
	_ = b.Step(barrier.Report{Node: 0, Window: 1, Term: 1,
		NextEvent: sim.Never, MinSent: 12 * sim.Microsecond, Sent: []uint32{0, 1}})
	_ = b.Step(barrier.Report{Node: 1, Window: 1, Term: 1,
		NextEvent: sim.Never, MinSent: sim.Never, Sent: []uint32{0, 0}})
	show()

	_ = b.Step(barrier.Report{Node: 0, Window: 2, Term: 1,
		NextEvent: sim.Never, MinSent: sim.Never, Sent: []uint32{0, 0}})
	_ = b.Step(barrier.Report{Node: 1, Window: 2, Term: 1,
		NextEvent: sim.Never, MinSent: sim.Never, Sent: []uint32{0, 0}})
	show()
	// Output:
	// no grant
	// window 1: [10us, 11us) expect [0 0]
	// window 2: [12us, 13us) expect [0 1]
	// window 3: finished (idle)
}
