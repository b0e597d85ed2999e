// Package runner runs a built scenario in one process: it runs the
// fabric, makes its one results.Part and merges it, so a single-process
// run writes its outputs through the same results.Outputs as a
// partitioned one. The CLI and the tests both use it.
package runner

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// Progress is a snapshot handed to Options.Progress.
type Progress struct {
	Now       sim.Time
	Limit     sim.Time
	Events    uint64
	FlowsDone int
	Flows     int
	// Final marks the last call, at the end of the run: Now is then the
	// run's virtual end (the summary's), not the engine's clock.
	Final bool
}

// Options tune a run.
type Options struct {
	// Progress, if set, is called every ProgressEvery events (default
	// 1<<18) and once at the end (Progress.Final, Now the run's end).
	Progress      func(Progress)
	ProgressEvery int
	// Stop, if set, ends the run early when it is closed (checked every
	// ProgressEvery events): Run then returns what the fabric has so far,
	// merged by results.MergePartial with Complete false and StopReason
	// as its reason.
	Stop       <-chan struct{}
	StopReason string
	// Setup, if set, is called once the fabric is built, before the
	// first event (the CLI times setup with it).
	Setup func()
	// Observe, if set, is called with the fabric between event batches
	// (every ProgressEvery events and once at the end), on the goroutine
	// that runs it: the one moment the fabric may be read. It must only
	// read, and copy what it keeps (the live view, lockstep run --ui).
	Observe func(*fabric.Fabric)
	// Checkpoint, if set, is handed the run's state at boundaries: every
	// CheckpointEvery of virtual time (at the first multiple of it after
	// which an event is due, every event before it run), and between
	// event batches when CheckpointDue, if set, says one is due (a
	// wall-clock interval). An error ends the run with it.
	Checkpoint      func(*State) error
	CheckpointEvery sim.Time
	CheckpointDue   func() bool
	// Restore, if set, is called once the fabric and its recorder are
	// built, before the first event: it restores them from a checkpoint
	// (internal/checkpoint), and the run goes on from there.
	Restore func(*State) error
}

// State is what a checkpoint of a run in one process holds: the fabric
// and its recorder (what the outputs are made from), at virtual Time.
type State struct {
	Fabric   *fabric.Fabric
	Recorder *results.Recorder
	Time     sim.Time
}

// Roots are the state's objects, for internal/snapshot.
func (s *State) Roots() []any { return []any{s.Fabric, s.Recorder} }

// Anchors are what the state refers to and a fresh build recreates.
func (s *State) Anchors() []any { return s.Fabric.SnapshotAnchors() }

// Result is a finished run: its outputs (the merge of its one part) and
// the fabric as the run left it.
type Result struct {
	*results.Outputs
	Fabric *fabric.Fabric
}

// Run builds the fabric of b and runs it until the last event or the time
// limit (stop_at, else max_time).
func Run(b *scenario.Built, opt Options) (*Result, error) {
	f, err := Prepare(b)
	if err != nil {
		return nil, err
	}
	return RunPrepared(b, f, opt)
}

// Prepare builds the fabric of b as Run does, without running it: what
// `lockstep validate` builds, so that whatever Run would refuse it refuses
// with the same message (a *scenario.Error).
func Prepare(b *scenario.Built) (*fabric.Fabric, error) {
	f, err := fabric.New(b.Fabric)
	if err != nil {
		return nil, &scenario.Error{File: b.File, Path: "topology", Msg: err.Error()}
	}
	return f, nil
}

// RunPrepared is Run with the fabric Prepare built from b, which must not
// have run.
func RunPrepared(b *scenario.Built, f *fabric.Fabric, opt Options) (*Result, error) {
	limit := b.Limit()
	final := false
	every := opt.ProgressEvery
	if every <= 0 {
		every = 1 << 18
	}
	// report hands out a snapshot at now: the engine's clock between
	// batches, the run's end (Outputs.End) at the end. The clock is not the
	// end: after the last flow finishes the engine may still drain a stale
	// timer (an RTO armed for 1 s), which moves it past the run's end.
	report := func(now sim.Time) {
		if opt.Observe != nil {
			opt.Observe(f)
		}
		if opt.Progress != nil {
			opt.Progress(Progress{Now: now, Limit: limit, Events: f.Engine().Stats.Events,
				FlowsDone: f.Transport().Done, Flows: len(b.Fabric.Flows), Final: final})
		}
	}
	if (opt.Checkpoint != nil || opt.Restore != nil) && f.HasExternal() {
		return nil, fmt.Errorf("runner: a run with external elements cannot checkpoint or restore: their state is not the fabric's")
	}
	rec := results.NewRecorder(b, f)
	st := &State{Fabric: f, Recorder: rec}
	if opt.Restore != nil {
		if err := opt.Restore(st); err != nil {
			return nil, err
		}
	}
	if opt.Setup != nil {
		opt.Setup()
	}
	next := sim.Never // the next virtual checkpoint
	if opt.Checkpoint != nil && opt.CheckpointEvery > 0 {
		next = nextCheckpoint(f.Engine().Now(), opt.CheckpointEvery)
	}
	for {
		r := f.RunBatch(limit, next, every)
		if r == fabric.BatchOver {
			break
		}
		if r == fabric.BatchPaused {
			st.Time = next
			// Once every flow has finished (and no compute task waits),
			// what is left is the drain of stale timers: a resume from here
			// would only replay them, so no checkpoint is taken (a kill
			// then resumes from the last one). Outputs are the same either
			// way.
			if !workDone(b, f) {
				if err := opt.Checkpoint(st); err != nil {
					return nil, err
				}
			}
			next = nextCheckpoint(f.Engine().NextEventTime(), opt.CheckpointEvery)
			continue
		}
		report(f.Engine().Now())
		select {
		case <-opt.Stop:
			why := opt.StopReason
			if why == "" {
				why = "stopped"
			}
			out := results.MergePartial(b, 1, []*results.Part{rec.Part(0, 0)}, why)
			final = true
			report(out.End)
			return &Result{Outputs: out, Fabric: f}, nil
		default:
		}
		if opt.Checkpoint != nil && opt.CheckpointDue != nil && opt.CheckpointDue() {
			st.Time = f.Engine().Now()
			if err := opt.Checkpoint(st); err != nil {
				return nil, err
			}
		}
	}
	if err := f.ExternalErr(); err != nil {
		// An external element failed (its error names it): what the run
		// has, marked incomplete, as for a failed distributed run.
		out := results.MergePartial(b, 1, []*results.Part{rec.Part(0, 0)}, err.Error())
		final = true
		report(out.End)
		return &Result{Outputs: out, Fabric: f}, nil
	}
	res, err := finish(b, f, rec)
	if err != nil {
		return nil, err
	}
	final = true
	report(res.End)
	return res, nil
}

// workDone says that every flow of a one-partition run has finished and
// it has no compute tasks (whose firing times are outputs too).
func workDone(b *scenario.Built, f *fabric.Fabric) bool {
	return len(b.Fabric.Tasks) == 0 && f.Transport().Done == len(b.Fabric.Flows)
}

// nextCheckpoint is the first multiple of every after t.
func nextCheckpoint(t, every sim.Time) sim.Time {
	if every <= 0 || t >= sim.Never-every {
		return sim.Never
	}
	return (t/every + 1) * every
}

// FromFabric is the result of a fabric built from b that the caller ran
// itself (experiments that sample it as it runs). It has no captures:
// a scenario with output.pcap is an error.
func FromFabric(b *scenario.Built, f *fabric.Fabric) (*Result, error) {
	if len(b.PcapHosts) > 0 {
		return nil, fmt.Errorf("runner: %s: output.pcap needs the captures runner.Run attaches before the run", b.File)
	}
	return finish(b, f, results.NewRecorder(b, f))
}

func finish(b *scenario.Built, f *fabric.Fabric, rec *results.Recorder) (*Result, error) {
	why := results.FinishDrained
	if f.Engine().NextEventTime() != sim.Never {
		why = results.FinishLimit
	}
	var d *fabric.Deadlock
	if d = f.Deadlock(); d != nil {
		// The run failed: its outputs are marked incomplete (Outputs.Reason
		// is the report) and the caller exits as for a failed run.
		why = results.FinishDeadlock
	}
	p := rec.Part(0, why)
	p.Deadlock = d
	// One partition: the fabric holds every switch's routes, so the ideal
	// FCTs need not compile them again.
	var ideal []sim.Time
	if r := f.Routes(); r != nil && r.NumNodes() == len(b.Topo.Nodes) && f.AllLocal() {
		ideal = results.IdealFCTRoutes(b.Topo, b.Fabric.Transport, b.Fabric.Flows, r)
	}
	out, err := results.MergeIdeal(b, []*results.Part{p}, ideal)
	if err != nil {
		return nil, err
	}
	return &Result{Outputs: out, Fabric: f}, nil
}
