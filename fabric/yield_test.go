package fabric_test

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
)

// TestYieldEvery: on one thread (GOMAXPROCS=1, a node process's), a
// fabric told to yield every 200 events (rounded up to 256) lets another
// goroutine run about once per 256 events while RunUntil (a window) or
// RunInterior (a node's run-ahead) computes, where a node's NATS server
// would write a published report to its routes; the run's results are the
// same as without yields. A fabric that never yields lets it run only when
// the runtime preempts it (every 10 ms).
func TestYieldEvery(t *testing.T) {
	t.Run("RunUntil", func(t *testing.T) {
		testYieldEvery(t, func(f *fabric.Fabric) uint64 { return f.RunUntil(sim.Second) })
	})
	t.Run("RunInterior", func(t *testing.T) {
		testYieldEvery(t, func(f *fabric.Fabric) uint64 {
			f.Engine().SplitQueue(make([]bool, f.Engine().NumElements())) // no border: every element's events
			return f.RunInterior(sim.Second, nil)
		})
	})
}

func testYieldEvery(t *testing.T, step func(*fabric.Fabric) uint64) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	topo := star(t, 3, 100*sim.GbitPerSecond, 100*sim.GbitPerSecond, sim.Microsecond)
	flows := []hostsim.FlowSpec{{ID: 0, Src: 0, Dst: 1, Size: 8 << 20}, {ID: 1, Src: 2, Dst: 1, Size: 8 << 20}}
	run := func(every uint32) (events, others uint64, fct []sim.Time) {
		f, err := fabric.New(fabric.Config{Topo: topo, Flows: flows, Transport: hostsim.DefaultConfig(), Seed: 1,
			Switch: switchsim.Config{}})
		if err != nil {
			t.Fatal(err)
		}
		f.YieldEvery(every)
		var ran atomic.Uint64
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !stop.Load() {
				ran.Add(1)
				runtime.Gosched()
			}
		}()
		runtime.Gosched() // let it start
		ran.Store(0)
		events = step(f)
		others = ran.Load()
		stop.Store(true)
		<-done
		for _, rec := range f.Transport().Records {
			if !rec.Finished {
				t.Fatalf("a flow did not finish")
			}
			fct = append(fct, rec.Finish)
		}
		return events, others, fct
	}
	events, others, fct := run(200)
	if events < 20*256 {
		t.Fatalf("%d events: too few to tell", events)
	}
	// Yields count the events RunUntil dispatches, which the engine's
	// own (link arrivals it handles inside Step) do not pass through:
	// between a quarter of the events over 256 and all of them. Without
	// yields the other goroutine runs a few times at most in the 20–50 ms
	// of this run, when the runtime preempts RunUntil.
	if most := events / 256; others < most/4 || others > most+2 {
		t.Errorf("yielding every 256 of %d events, another goroutine ran %d times; want %d to %d", events, others, most/4, most)
	}
	events0, others0, fct0 := run(0)
	if events0 != events {
		t.Errorf("%d events without yields, %d with", events0, events)
	}
	for i := range fct {
		if fct[i] != fct0[i] {
			t.Errorf("flow %d: FCT %v with yields, %v without", i, fct[i], fct0[i])
		}
	}
	t.Logf("%d events: another goroutine ran %d times with yields, %d without", events, others, others0)
}
