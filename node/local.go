package node

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// LocalOptions tune RunLocal.
type LocalOptions struct {
	// Parallel runs each window's partitions in goroutines. The result is
	// the same either way.
	Parallel bool
	// Window, if set, is called after every grant with the cores, between
	// windows (for progress).
	Window func(g barrier.Grant, cores []*Core)
	// Stop, when closed, ends the run at the next window boundary: RunLocal
	// then returns what every partition has, merged by
	// results.MergePartial with StopReason (complete false), and
	// ErrStopped.
	Stop       <-chan struct{}
	StopReason string
	// Checkpoint, if set, is handed the run's state at window boundaries
	// (every partition ran the last window and every report is stepped):
	// at the first boundary at or after each multiple of CheckpointEvery
	// of virtual time, and at the next boundary whenever CheckpointDue,
	// if set, says one is due (a wall-clock interval). An error ends the
	// run with it.
	Checkpoint      func(*LocalState) error
	CheckpointEvery sim.Time
	CheckpointDue   func() bool
	// Restore, if set, is called once every partition is built and set
	// up: it restores the state from a checkpoint, and the run goes on
	// from there.
	Restore func(*LocalState) error
	// TwoPhase lets each partition, once it ran a window, run the next
	// window's first phase (Core.EnableTwoPhase, Core.RunAhead) while
	// the slower ones finish theirs. Not with Checkpoint or Restore: a
	// checkpoint holds partitions at a window boundary.
	TwoPhase bool
}

// LocalState is what a checkpoint of an in-memory run holds: the barrier
// and every partition's core, at the boundary after Window, at virtual
// time Time (the window's end).
type LocalState struct {
	Barrier *barrier.Barrier
	Cores   []*Core
	Window  uint64
	Time    sim.Time
}

// Roots are the state's objects, for internal/snapshot.
func (s *LocalState) Roots() []any {
	rs := []any{s.Barrier}
	for _, c := range s.Cores {
		rs = append(rs, c)
	}
	return rs
}

// Anchors are what the state refers to and a fresh build recreates.
func (s *LocalState) Anchors() []any {
	var as []any
	for _, c := range s.Cores {
		as = append(as, c.F.SnapshotAnchors()...)
	}
	return as
}

// ErrStopped is RunLocal's error when LocalOptions.Stop ended the run; the
// LocalRun it returns with it holds the partial outputs.
var ErrStopped = errors.New("node: run stopped")

// LocalRun is a finished in-memory run.
type LocalRun struct {
	Outputs *results.Outputs
	Results []*PartResult // by partition
	Barrier barrier.Stats
	Cores   []*Core
}

// RunLocal runs scenario b cut by pl with every partition in this process:
// a Barrier and P Cores joined by an in-memory transport that delivers
// every batch as it is produced. It is the NATS run without NATS, used to
// test that partitioning changes no result, and by `lockstep run
// --partitions P --transport memory`.
func RunLocal(b *scenario.Built, pl *partition.Placement, opt LocalOptions) (*LocalRun, error) {
	bar, err := barrier.New(BarrierConfig(b, pl))
	if err != nil {
		return nil, err
	}
	cores := make([]*Core, pl.P)
	for i := range cores {
		if cores[i], err = NewCore(b, pl, i, 0); err != nil {
			return nil, fmt.Errorf("partition %d: %w", i, err)
		}
	}
	if (opt.Checkpoint != nil || opt.Restore != nil) && len(b.External) > 0 {
		return nil, fmt.Errorf("node: a run with external elements cannot checkpoint or restore: their state is not the fabric's")
	}
	twoPhase := false
	if opt.TwoPhase && opt.Checkpoint == nil && opt.Restore == nil {
		for _, c := range cores {
			on, err := c.EnableTwoPhase(b, pl)
			if err != nil {
				return nil, err
			}
			twoPhase = twoPhase || on
		}
	}
	for _, c := range cores {
		out, err := c.Setup()
		if err != nil {
			return nil, err
		}
		if err := bar.Step(out.Report); err != nil {
			return nil, err
		}
	}
	st := &LocalState{Barrier: bar, Cores: cores}
	if opt.Restore != nil {
		if err := opt.Restore(st); err != nil {
			return nil, err
		}
	}
	// The next virtual checkpoint, after the boundary the run starts at
	// (st.Time after a restore).
	nextCk := sim.Never
	if opt.Checkpoint != nil && opt.CheckpointEvery > 0 {
		nextCk = (st.Time/opt.CheckpointEvery + 1) * opt.CheckpointEvery
	}
	first := true
	outs := make([]Output, pl.P)
	errs := make([]error, pl.P)
	// Wall-clock statistics, as a node process records them (NodePerf):
	// a partition runs its window, then waits for the slowest one.
	perf := make([]NodePerf, pl.P)
	took := make([]time.Duration, pl.P)
	ahead := make([]time.Duration, pl.P)
	start := time.Now()
	run := func(i int) {
		t := time.Now()
		outs[i], errs[i] = cores[i].Run()
		if twoPhase && errs[i] == nil {
			// The next window's first phase, while the slower
			// partitions finish this one (its report is made).
			t1 := time.Now()
			if n := cores[i].RunAhead(); n > 0 {
				ahead[i] = time.Since(t1)
				perf[i].AheadEvents += n
				perf[i].AheadWindows++
			}
		}
		took[i] = time.Since(t)
	}
	for {
		if !first && opt.Checkpoint != nil && (st.Time >= nextCk || opt.CheckpointDue != nil && opt.CheckpointDue()) {
			if err := opt.Checkpoint(st); err != nil {
				return nil, err
			}
			if opt.CheckpointEvery > 0 {
				nextCk = (st.Time/opt.CheckpointEvery + 1) * opt.CheckpointEvery
			}
		}
		first = false
		g, ok := bar.Ready()
		if !ok {
			return nil, fmt.Errorf("node: barrier has no grant after every report")
		}
		bar.Advance()
		if opt.Window != nil {
			opt.Window(g, cores)
		}
		for _, c := range cores {
			if ok, why := c.Accept(g); !ok {
				return nil, fmt.Errorf("node %d rejected grant %d: %s", c.part, g.Window, why)
			}
		}
		if g.Finished {
			break
		}
		select {
		case <-opt.Stop:
			return stopLocal(b, cores, perf, time.Since(start).Seconds(), opt.StopReason, bar)
		default:
		}
		t0 := time.Now()
		if opt.Parallel {
			var wg sync.WaitGroup
			for i := range cores {
				wg.Go(func() { run(i) })
			}
			wg.Wait()
		} else {
			for i := range cores {
				run(i)
			}
		}
		window := time.Since(t0)
		for i := range perf {
			p := &perf[i]
			p.RunSeconds += took[i].Seconds()
			p.ComputeSeconds += took[i].Seconds()
			p.Windows++
			p.AheadSeconds += ahead[i].Seconds()
			ahead[i] = 0
			wait := (window - took[i]).Seconds()
			p.MaxWait = max(p.MaxWait, wait)
			slowest := slices.Max(took)
			p.ImbalanceSeconds += (slowest - took[i]).Seconds()
		}
		for i := range cores {
			if xe := (*fabric.ExternalError)(nil); errors.As(errs[i], &xe) {
				// An external element failed: what every partition has,
				// as a failed run's (the others ran the window).
				err := fmt.Errorf("partition %d: %w", i, errs[i])
				return failLocal(b, cores, bar, err), err
			}
			if errs[i] != nil {
				return nil, fmt.Errorf("partition %d: %w", i, errs[i])
			}
			for k := range outs[i].Batches {
				bt := &outs[i].Batches[k]
				if err := cores[bt.To].Deliver(bt); err != nil {
					return nil, err
				}
			}
			if err := bar.Step(outs[i].Report); err != nil {
				return nil, err
			}
		}
		st.Window, st.Time = g.Window, g.End
	}
	wall := time.Since(start).Seconds()
	rs := make([]*PartResult, pl.P)
	for i, c := range cores {
		rs[i] = c.Result()
		perf[i].WallSeconds = wall
		perf[i].WaitSeconds = max(0, wall-perf[i].RunSeconds)
		rs[i].Perf = perf[i]
	}
	parts, err := Parts(rs)
	if err != nil {
		return nil, err
	}
	out, err := results.Merge(b, parts)
	if err != nil {
		return nil, err
	}
	return &LocalRun{Outputs: out, Results: rs, Barrier: bar.Stats(), Cores: cores}, nil
}

// stopLocal ends an in-memory run that was told to stop between windows:
// every partition's part as it stands, merged as a failed run's.
func stopLocal(b *scenario.Built, cores []*Core, perf []NodePerf, wall float64, reason string, bar *barrier.Barrier) (*LocalRun, error) {
	if reason == "" {
		reason = "stopped"
	}
	rs := make([]*PartResult, len(cores))
	parts := make([]*results.Part, len(cores))
	for i, c := range cores {
		rs[i] = c.Result()
		perf[i].WallSeconds = wall
		perf[i].WaitSeconds = max(0, wall-perf[i].RunSeconds)
		rs[i].Perf = perf[i]
		parts[i] = &rs[i].Part
	}
	out := results.MergePartial(b, len(cores), parts, reason)
	return &LocalRun{Outputs: out, Results: rs, Barrier: bar.Stats(), Cores: cores}, ErrStopped
}

// failLocal is the partial run of an in-memory run that failed with err
// (an external element's error): every partition's part as it stands,
// merged as a failed run's.
func failLocal(b *scenario.Built, cores []*Core, bar *barrier.Barrier, err error) *LocalRun {
	rs := make([]*PartResult, len(cores))
	parts := make([]*results.Part, len(cores))
	for i, c := range cores {
		rs[i] = c.PartialResult()
		parts[i] = &rs[i].Part
	}
	out := results.MergePartial(b, len(cores), parts, err.Error())
	return &LocalRun{Outputs: out, Results: rs, Barrier: bar.Stats(), Cores: cores}
}
