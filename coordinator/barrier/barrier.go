package barrier

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/lockstep-sim/lockstep/sim"
)

// Errors returned by Step. Callers compare with errors.Is; the returned
// errors wrap these with the details.
var (
	// ErrStale marks a report that is ignored because it is out of date: it
	// carries an older term than the barrier's, or (while resynchronising)
	// it is older than reports the node has already resent. Stale reports
	// are counted in Stats.Stale.
	ErrStale = errors.New("barrier: stale report")
	// ErrNewerTerm marks a report from a newer term than the barrier's:
	// this barrier belongs to a deposed leader.
	ErrNewerTerm = errors.New("barrier: report from a newer term")
	// ErrUnknownNode marks a report from a node outside 0..Nodes-1.
	ErrUnknownNode = errors.New("barrier: unknown node")
	// ErrWrongWindow marks a report for a window other than the one whose
	// reports are being collected.
	ErrWrongWindow = errors.New("barrier: report for the wrong window")
	// ErrDuplicate marks a second report from one node for one window.
	ErrDuplicate = errors.New("barrier: duplicate report")
	// ErrBadReport marks a malformed report: wrong Sent length, counts too
	// large, or times that break causality.
	ErrBadReport = errors.New("barrier: bad report")
	// ErrFinished marks a report that arrives after the run has finished.
	ErrFinished = errors.New("barrier: run finished")
)

// Config configures a Barrier. It has no useful zero value: Nodes and
// Lookahead must be set, and StopAt must be sim.Never for no stop time.
type Config struct {
	// Nodes is the number of partitions P, numbered 0..P-1. Nodes >= 1.
	Nodes int
	// Lookahead is L, the smallest propagation delay of a cut link. L > 0.
	Lookahead sim.Time
	// StopAt is the exclusive end of the run: events at times >= StopAt
	// never run. sim.Never means no stop time. StopAt > 0.
	StopAt sim.Time
	// Term is the raft term the barrier starts in; grants carry it.
	Term uint64
	// DeadlockThreshold, when positive, makes the barrier search the
	// nodes' paused ports (Report.Paused) for a PFC deadlock on a grid of
	// period DeadlockEvery (sim.FindDeadlock): windows never straddle a
	// grid time, and the run finishes (FinishDeadlock) at the first grid
	// time with a cycle of ports paused for at least the threshold.
	DeadlockThreshold, DeadlockEvery sim.Time
	// Peer makes the barrier a replica of a peer-to-peer run (package doc,
	// "Peers"): every node steps every node's reports into a barrier of
	// its own and takes its grants from it. In PhaseCollecting a peer keeps
	// any report for Window+1 as early, not only after a resynchronisation:
	// a node that saw the last report of Window before this replica did
	// may already have run Window+1.
	Peer bool
}

// Validate reports whether c can configure a Barrier.
func (c Config) Validate() error {
	switch {
	case c.Nodes < 1:
		return fmt.Errorf("barrier: Nodes = %d, want >= 1", c.Nodes)
	case c.Lookahead <= 0:
		return fmt.Errorf("barrier: Lookahead = %dps, want > 0", int64(c.Lookahead))
	case c.StopAt <= 0:
		return fmt.Errorf("barrier: StopAt = %dps, want > 0 (sim.Never for none)", int64(c.StopAt))
	case c.DeadlockThreshold < 0 || c.DeadlockThreshold > 0 && c.DeadlockEvery <= 0:
		return fmt.Errorf("barrier: DeadlockThreshold = %dps with DeadlockEvery = %dps, want both positive or no threshold",
			int64(c.DeadlockThreshold), int64(c.DeadlockEvery))
	}
	return nil
}

// maxSent bounds each Report.Sent count so that the sums in Grant.Expect fit
// in a uint32 whatever the reports say.
func (c Config) maxSent() uint32 { return math.MaxUint32 / uint32(c.Nodes) }

// Report is what node Node tells the barrier after it finished window
// Window. Window 0 is the setup window (see the package doc).
type Report struct {
	Node   int
	Window uint64
	// Term is the newest raft term the node has seen.
	Term uint64
	// NextEvent is the node's earliest pending event after the window,
	// sim.Never if none. Invariant: NextEvent >= the window's End.
	NextEvent sim.Time
	// MinSent is the earliest arrival time among the packets the node sent
	// to other nodes during the window, sim.Never if none.
	// Invariant: MinSent >= the window's End.
	MinSent sim.Time
	// Sent[j] is the number of batch messages sent to node j during the
	// window. len(Sent) == Config.Nodes, and each count is at most
	// math.MaxUint32/Nodes.
	Sent []uint32
	// Done says the node has nothing left that matters (no unfinished flow;
	// at most bookkeeping timers). Optional; see FinishAllDone.
	Done bool
	// With Config.DeadlockThreshold: Paused lists the node's class queues
	// paused by their peers while holding packets at PausedAt, the
	// window's end (sim.PausedPort; fabric.PausedPorts).
	PausedAt sim.Time
	Paused   []sim.PausedPort
}

func (r Report) clone() Report {
	r.Sent = slices.Clone(r.Sent)
	r.Paused = slices.Clone(r.Paused)
	return r
}

// FinishReason says why a run finished. The zero value means the run has
// not finished.
type FinishReason uint8

// Reasons for finishing, in the order the barrier checks them.
const (
	// FinishIdle: no event is pending anywhere and nothing is in flight.
	FinishIdle FinishReason = 1 + iota
	// FinishAllDone: every node reported Done and nothing is in flight.
	FinishAllDone
	// FinishStopTime: the next event is at or after Config.StopAt.
	FinishStopTime
	// FinishDeadlock: a PFC deadlock at Grant.Start (Grant.Cycle); the
	// run failed.
	FinishDeadlock
)

func (f FinishReason) String() string {
	switch f {
	case 0:
		return "running"
	case FinishIdle:
		return "idle"
	case FinishAllDone:
		return "all-done"
	case FinishStopTime:
		return "stop-time"
	case FinishDeadlock:
		return "pfc-deadlock"
	}
	return fmt.Sprintf("FinishReason(%d)", uint8(f))
}

// Grant lets every node run window Window, or ends the run.
type Grant struct {
	Window uint64
	Term   uint64
	// Start and End bound the window: nodes process events with
	// Start <= time < End. Invariant: Start < End <= Start+L unless
	// Finished; when Finished, Start == End == the time from which nothing
	// runs (StopAt, or the next pending event, or sim.Never).
	Start, End sim.Time
	// Expect[j] is the number of batch messages node j must have received,
	// sent during window Window-1, before it starts. len == Config.Nodes.
	Expect []uint32
	// Idle is the virtual time skipped before this window: Start minus the
	// previous window's End (0 if none was skipped, or not known after a
	// resync).
	Idle sim.Time
	// Finished ends the run; Reason says why. Nodes run nothing more.
	Finished bool
	Reason   FinishReason
	// Cycle is the deadlock's cycle when Reason is FinishDeadlock (at
	// Start).
	Cycle []sim.PausedPort
}

// Len is the window's length in virtual time.
func (g Grant) Len() sim.Time { return g.End - g.Start }

func (g Grant) clone() Grant {
	g.Expect = slices.Clone(g.Expect)
	g.Cycle = slices.Clone(g.Cycle)
	return g
}

// Stats are the counters a shell reports. They are part of State, so a
// restored barrier carries them on.
type Stats struct {
	// Grants counts grants issued, the finishing one included. A grant
	// re-issued after a failover is counted in Reissued instead.
	Grants uint64
	// Covered is the sum of the granted windows' lengths.
	Covered sim.Time
	// IdleSkips counts grants whose Start lay after the previous End, and
	// Skipped sums the time skipped (the grants' Idle).
	IdleSkips uint64
	Skipped   sim.Time
	// Stale counts reports ignored as stale (ErrStale).
	Stale uint64
	// Resyncs counts SetTerm calls that started a resynchronisation, and
	// Reissued the grants a resynchronisation issued again.
	Resyncs  uint64
	Reissued uint64
	// Dropped counts reports that arrived before their window was granted
	// (early reports, see State.Early, and reports resent for a window the
	// resync re-issued) and were dropped when it was granted because they
	// named a time before its end. Only a broken node sends one; the run
	// then waits for that node's report forever.
	Dropped uint64
}

// Phase is the barrier's state.
type Phase uint8

// Phases. The zero value is invalid.
const (
	// PhaseCollecting: collecting the reports for State.Window.
	PhaseCollecting Phase = 1 + iota
	// PhaseResyncing: after SetTerm, collecting the nodes' resent reports.
	PhaseResyncing
	// PhaseFinished: the finishing grant has been issued.
	PhaseFinished
)

func (p Phase) String() string {
	switch p {
	case PhaseCollecting:
		return "collecting"
	case PhaseResyncing:
		return "resyncing"
	case PhaseFinished:
		return "finished"
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// State is everything a Barrier knows, as a plain value for raft snapshots:
// all fields are exported, there are no pointers or maps, and State() and
// Restore() copy it, so it can be encoded with msgpack (or gob, or JSON)
// and restored on another machine.
type State struct {
	Config Config
	Term   uint64
	Phase  Phase
	// Window is the last window granted to run (0: only the setup window),
	// and End its end. In PhaseCollecting these are the window whose
	// reports are being collected and the bound they must respect. In the
	// other phases they record what this barrier last knew.
	Window uint64
	End    sim.Time
	// Granted is the highest window granted, the finishing grant included
	// (0: none). Grants for windows <= Granted are re-issues.
	Granted uint64
	// Reports[i] is node i's report, valid iff Have[i]. In PhaseCollecting
	// it is for Window; in PhaseResyncing it is node i's latest resent
	// report. len == Config.Nodes.
	Reports []Report
	Have    []bool
	// Prior[i] is node i's report for Reports[i].Window-1, valid iff
	// HavePrior[i]; used in PhaseResyncing. len == Config.Nodes.
	Prior     []Report
	HavePrior []bool
	// Early[i] is node i's report for Window+1, valid iff HaveEarly[i];
	// used in PhaseCollecting when Window+1 == EarlyWindow. len ==
	// Config.Nodes.
	Early     []Report
	HaveEarly []bool
	// EarlyWindow is the one window whose reports may arrive before it is
	// granted: the window after the first one collected when the last
	// resynchronisation ended (see stepCollecting). 0: none.
	EarlyWindow uint64
	// Pending is the grant Ready returns, valid iff HasPending.
	Pending    Grant
	HasPending bool
	Stats      Stats
}

// Barrier is the lockstep barrier. It is not safe for concurrent use: a
// shell owns it and feeds it from one goroutine, as with etcd's RawNode.
type Barrier struct {
	s State
	// count is the number of true entries in s.Have.
	count int
	// step handles a report that passed the checks common to all phases.
	// It is set by the become methods and by Restore from s.Phase.
	step func(b *Barrier, r Report) error
}

// New returns a barrier collecting the window-0 (setup) reports.
func New(c Config) (*Barrier, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	n := c.Nodes
	b := &Barrier{s: State{
		Config:    c,
		Term:      c.Term,
		Reports:   make([]Report, n),
		Have:      make([]bool, n),
		Prior:     make([]Report, n),
		HavePrior: make([]bool, n),
		Early:     make([]Report, n),
		HaveEarly: make([]bool, n),
	}}
	b.becomeCollecting(0, 0)
	return b, nil
}

// Step feeds a report to the barrier. A report that completes a window
// makes a grant available from Ready. Errors wrap the sentinels above; on
// error the barrier is unchanged except that stale reports are counted.
func (b *Barrier) Step(r Report) error {
	c := b.s.Config
	if r.Node < 0 || r.Node >= c.Nodes {
		return fmt.Errorf("%w: node %d, want 0..%d", ErrUnknownNode, r.Node, c.Nodes-1)
	}
	if r.Term < b.s.Term {
		b.s.Stats.Stale++
		return fmt.Errorf("%w: node %d window %d term %d, barrier term %d",
			ErrStale, r.Node, r.Window, r.Term, b.s.Term)
	}
	if r.Term > b.s.Term {
		return fmt.Errorf("%w: node %d term %d, barrier term %d",
			ErrNewerTerm, r.Node, r.Term, b.s.Term)
	}
	if len(r.Sent) != c.Nodes {
		return fmt.Errorf("%w: node %d window %d: len(Sent) = %d, want %d",
			ErrBadReport, r.Node, r.Window, len(r.Sent), c.Nodes)
	}
	if i := slices.IndexFunc(r.Sent, func(n uint32) bool { return n > c.maxSent() }); i >= 0 {
		return fmt.Errorf("%w: node %d window %d: Sent[%d] = %d, want <= %d",
			ErrBadReport, r.Node, r.Window, i, r.Sent[i], c.maxSent())
	}
	if r.NextEvent < 0 || r.MinSent < 0 {
		return fmt.Errorf("%w: node %d window %d: negative time (next %v, min sent %v)",
			ErrBadReport, r.Node, r.Window, r.NextEvent, r.MinSent)
	}
	return b.step(b, r)
}

// Ready returns the pending grant, if any. It returns the same grant until
// Advance; after Advance that grant is never returned again. A newer grant
// replaces an unacknowledged one only after every node has reported for the
// older grant's window, that is, when every node already has it.
func (b *Barrier) Ready() (Grant, bool) {
	if !b.s.HasPending {
		return Grant{}, false
	}
	return b.s.Pending.clone(), true
}

// Advance acknowledges the grant last returned by Ready (the shell has
// published it). Without a pending grant it does nothing.
func (b *Barrier) Advance() {
	b.s.Pending = Grant{}
	b.s.HasPending = false
}

// SetTerm moves the barrier to term t, as a newly elected raft leader does,
// and starts a resynchronisation (see the package doc): the pending grant
// and collected reports are dropped, and the nodes' resent reports decide
// the next grant. Terms never decrease: t <= Term() does nothing.
func (b *Barrier) SetTerm(t uint64) {
	if t <= b.s.Term {
		return
	}
	b.s.Term = t
	b.s.Stats.Resyncs++
	b.Advance()
	b.becomeResyncing()
}

// Resync starts a resynchronisation without a new term: the pending grant
// and collected reports are dropped and the reports that come next (resent
// or new) decide the next grant, as after SetTerm. An observer that fell
// behind the nodes (a peer run's coordinator leader, restored from an old
// progress mark, or one that lost reports in an outage) uses it to catch
// up. A finished barrier stays finished.
func (b *Barrier) Resync() {
	if b.s.Phase == PhaseFinished {
		return
	}
	b.s.Stats.Resyncs++
	b.Advance()
	b.becomeResyncing()
}

// Term is the barrier's raft term.
func (b *Barrier) Term() uint64 { return b.s.Term }

// Window is the window whose reports the barrier collects (PhaseCollecting),
// or the last it knew of.
func (b *Barrier) Window() uint64 { return b.s.Window }

// Phase is the barrier's phase.
func (b *Barrier) Phase() Phase { return b.s.Phase }

// Stats returns the barrier's counters.
func (b *Barrier) Stats() Stats { return b.s.Stats }

// State returns a deep copy of the barrier's state, for a snapshot.
func (b *Barrier) State() State { return cloneState(b.s) }

// Restore replaces the barrier's state with a deep copy of s, typically a
// raft snapshot. It checks s for consistency and leaves the barrier
// unchanged on error.
func (b *Barrier) Restore(s State) error {
	if err := validateState(s); err != nil {
		return err
	}
	b.s = cloneState(s)
	b.count = 0
	for _, h := range b.s.Have {
		if h {
			b.count++
		}
	}
	b.step = stepFor(b.s.Phase)
	return nil
}

func stepFor(p Phase) func(*Barrier, Report) error {
	switch p {
	case PhaseCollecting:
		return (*Barrier).stepCollecting
	case PhaseResyncing:
		return (*Barrier).stepResyncing
	case PhaseFinished:
		return (*Barrier).stepFinished
	}
	panic(fmt.Sprintf("barrier: no step function for phase %v", p))
}

// becomeCollecting starts collecting the reports for window w, which ends
// at end. Early reports for w become its first reports.
func (b *Barrier) becomeCollecting(w uint64, end sim.Time) {
	b.s.Phase = PhaseCollecting
	b.step = (*Barrier).stepCollecting
	prev := b.s.Window
	b.s.Window, b.s.End = w, end
	if b.s.EarlyWindow <= w {
		b.s.EarlyWindow = 0
	}
	clearReports(b.s.Reports, b.s.Have)
	b.count = 0
	clearReports(b.s.Prior, b.s.HavePrior)
	if w == prev+1 {
		for i, h := range b.s.HaveEarly {
			if !h {
				continue
			}
			if checkEnd(b.s.Early[i], end) != nil {
				b.s.Stats.Dropped++
				continue
			}
			b.s.Reports[i], b.s.Early[i] = b.s.Early[i], b.s.Reports[i]
			b.s.Have[i] = true
			b.count++
		}
	}
	clearReports(b.s.Early, b.s.HaveEarly)
}

// becomeResyncing starts collecting resent reports. Window and End keep
// what the barrier last knew.
func (b *Barrier) becomeResyncing() {
	b.s.Phase = PhaseResyncing
	b.step = (*Barrier).stepResyncing
	b.s.EarlyWindow = 0
	clearReports(b.s.Reports, b.s.Have)
	b.count = 0
	clearReports(b.s.Prior, b.s.HavePrior)
	clearReports(b.s.Early, b.s.HaveEarly)
}

// becomeFinished ends the run; the finishing grant is already pending.
func (b *Barrier) becomeFinished() {
	b.s.Phase = PhaseFinished
	b.step = (*Barrier).stepFinished
	clearReports(b.s.Reports, b.s.Have)
	b.count = 0
	clearReports(b.s.Prior, b.s.HavePrior)
	clearReports(b.s.Early, b.s.HaveEarly)
}

// clearReports empties rs, keeping the Sent buffers, and clears have.
func clearReports(rs []Report, have []bool) {
	for i := range rs {
		rs[i] = Report{Sent: rs[i].Sent[:0]}
	}
	clear(have)
}

// checkEnd checks that r names no time before end, the end of its window:
// every event before end has run, and packets sent in the window arrive at
// end or later (see the package doc).
func checkEnd(r Report, end sim.Time) error {
	if r.NextEvent < end || r.MinSent < end {
		return fmt.Errorf("%w: node %d window %d ends at %v but reports next event %v, min sent %v",
			ErrBadReport, r.Node, r.Window, end, r.NextEvent, r.MinSent)
	}
	return nil
}

// put stores a copy of r as node r.Node's report, reusing its buffers.
func put(dst *Report, r Report) {
	sent := append(dst.Sent[:0], r.Sent...)
	paused := append(dst.Paused[:0], r.Paused...)
	*dst = r
	dst.Sent, dst.Paused = sent, paused
}

// stepCollecting takes the reports for Window.
//
// Right after a resynchronisation it also keeps reports for Window+1. A
// node that held the old leader's grant for window w+1 when it resent its
// reports (for w-1 and w) finishes w+1 later and reports it in the new
// term. If its report for w-1 reached the new leader before its report for
// w, the resync may already have ended at w-1 (resolve uses whatever
// reports are in; any complete set gives the right grant), so the barrier
// collects w and the report for w+1 is early. It cannot be earlier than
// that: the old leader granted w+1 only after every node finished w, so
// every node resent at least w-1. Early reports are checked against their
// window's end when it is granted.
func (b *Barrier) stepCollecting(r Report) error {
	if r.Window == b.s.Window+1 && (r.Window == b.s.EarlyWindow || b.s.Config.Peer) {
		if b.s.HaveEarly[r.Node] {
			return fmt.Errorf("%w: node %d window %d (early)", ErrDuplicate, r.Node, r.Window)
		}
		put(&b.s.Early[r.Node], r)
		b.s.HaveEarly[r.Node] = true
		return nil
	}
	if r.Window != b.s.Window {
		return fmt.Errorf("%w: node %d window %d, collecting window %d",
			ErrWrongWindow, r.Node, r.Window, b.s.Window)
	}
	if b.s.Have[r.Node] {
		return fmt.Errorf("%w: node %d window %d", ErrDuplicate, r.Node, r.Window)
	}
	if err := checkEnd(r, b.s.End); err != nil {
		return err
	}
	put(&b.s.Reports[r.Node], r)
	b.s.Have[r.Node] = true
	b.count++
	if b.count < b.s.Config.Nodes {
		return nil
	}
	b.issue(b.s.Window, b.s.Reports, b.s.End, true)
	return nil
}

func (b *Barrier) stepFinished(r Report) error {
	return fmt.Errorf("%w: node %d window %d", ErrFinished, r.Node, r.Window)
}

// stepResyncing keeps each node's latest two resent reports and resolves
// the resynchronisation once every node has spoken.
func (b *Barrier) stepResyncing(r Report) error {
	i := r.Node
	latest := &b.s.Reports[i]
	switch {
	case !b.s.Have[i]:
		put(latest, r)
		b.s.Have[i] = true
		b.count++
	case r.Window == latest.Window:
		return fmt.Errorf("%w: node %d window %d (resync)", ErrDuplicate, i, r.Window)
	case r.Window == latest.Window+1:
		b.s.Prior[i], *latest = *latest, b.s.Prior[i]
		b.s.HavePrior[i] = true
		put(latest, r)
	case r.Window > latest.Window+1:
		b.s.HavePrior[i] = false
		put(latest, r)
	case r.Window+1 == latest.Window:
		if b.s.HavePrior[i] {
			return fmt.Errorf("%w: node %d window %d (resync)", ErrDuplicate, i, r.Window)
		}
		put(&b.s.Prior[i], r)
		b.s.HavePrior[i] = true
	default:
		b.s.Stats.Stale++
		return fmt.Errorf("%w: node %d window %d, already resent window %d",
			ErrStale, i, r.Window, latest.Window)
	}
	return b.resolve()
}

// resolve ends a resynchronisation if every node's reports are in.
func (b *Barrier) resolve() error {
	if b.count < b.s.Config.Nodes {
		return nil
	}
	lo, hi := b.s.Reports[0].Window, b.s.Reports[0].Window
	for _, r := range b.s.Reports[1:] {
		lo, hi = min(lo, r.Window), max(hi, r.Window)
	}
	if hi-lo > 1 {
		// A node's newer resent report is still on its way: a correct run
		// never has finished windows more than one apart.
		return nil
	}
	if lo == hi {
		b.issue(hi, b.s.Reports, b.s.End, b.s.Window == hi)
		if b.s.Phase == PhaseCollecting {
			b.s.EarlyWindow = hi + 2
		}
		return nil
	}
	// The old leader granted hi; re-issue it from the lo reports, which the
	// nodes at hi resent as their prior report.
	los := make([]Report, len(b.s.Reports))
	his := make([]Report, 0, len(b.s.Reports))
	for i, r := range b.s.Reports {
		switch {
		case r.Window == lo:
			los[i] = r
		case b.s.HavePrior[i]:
			los[i] = b.s.Prior[i]
			his = append(his, r.clone())
		default:
			return nil // wait for node i's window-lo report
		}
	}
	b.issue(lo, los, b.s.End, b.s.Window == lo)
	if b.s.Phase != PhaseCollecting {
		return nil
	}
	b.s.EarlyWindow = hi + 1
	for _, r := range his {
		// Like early reports, these are checked against the window's end
		// only now; the window matches and the node has no other report.
		if checkEnd(r, b.s.End) != nil {
			b.s.Stats.Dropped++
			continue
		}
		if err := b.stepCollecting(r); err != nil {
			panic(fmt.Sprintf("barrier: resent report %+v for the re-issued window %d: %v",
				r, b.s.Window, err))
		}
	}
	return nil
}

// issue computes the grant that follows window w from its reports (one per
// node), makes it pending and moves to the next phase. prevEnd is window
// w's end if known.
func (b *Barrier) issue(w uint64, reports []Report, prevEnd sim.Time, known bool) {
	g := decide(b.s.Config, b.s.Term, w, reports, prevEnd, known)
	st := &b.s.Stats
	switch {
	case g.Window <= b.s.Granted:
		st.Reissued++
	default:
		b.s.Granted = g.Window
		st.Grants++
		if !g.Finished {
			st.Covered += g.Len()
		}
		if g.Idle > 0 {
			st.IdleSkips++
			st.Skipped += g.Idle
		}
	}
	b.s.Pending, b.s.HasPending = g, true
	if g.Finished {
		b.becomeFinished()
		return
	}
	b.becomeCollecting(g.Window, g.End)
	if b.count == b.s.Config.Nodes {
		// Every node had reported early: every node has this grant.
		b.issue(g.Window, b.s.Reports, g.End, true)
	}
}

// decide is the barrier's rule, a pure function of its arguments: the grant
// that follows window w, given every node's report for w.
func decide(c Config, term, w uint64, reports []Report, prevEnd sim.Time, known bool) Grant {
	m := sim.Never
	allDone, inFlight := true, false
	expect := make([]uint32, c.Nodes)
	for _, r := range reports {
		m = min(m, r.NextEvent, r.MinSent)
		inFlight = inFlight || r.MinSent != sim.Never
		allDone = allDone && r.Done
		for j, n := range r.Sent {
			expect[j] += n // cannot overflow: n <= maxSent
		}
	}
	g := Grant{Window: w + 1, Term: term, Expect: expect}
	if c.DeadlockThreshold > 0 {
		// Every event before the window's end ran and none is due before
		// m: the paused ports describe every grid time in between.
		var paused []sim.PausedPort
		at := sim.Time(0)
		for _, r := range reports {
			paused = append(paused, r.Paused...)
			at = max(at, r.PausedAt)
		}
		if d, cyc, ok := sim.FindDeadlock(paused, at, min(m, c.StopAt-1), c.DeadlockEvery, c.DeadlockThreshold); ok {
			g.Finished, g.Reason, g.Start, g.End, g.Cycle = true, FinishDeadlock, d, d, cyc
			return g
		}
	}
	switch {
	case m == sim.Never:
		g.Finished, g.Reason = true, FinishIdle
	case allDone && !inFlight:
		g.Finished, g.Reason = true, FinishAllDone
	case m >= c.StopAt:
		g.Finished, g.Reason = true, FinishStopTime
	}
	if g.Finished {
		g.Start = min(m, c.StopAt)
		g.End = g.Start
		return g
	}
	g.Start = m
	g.End = min(addSat(m, c.Lookahead), c.StopAt)
	if c.DeadlockThreshold > 0 {
		// A window never straddles a grid time of the deadlock search.
		g.End = min(g.End, sim.NextGrid(m, c.DeadlockEvery))
	}
	if known && m > prevEnd {
		g.Idle = m - prevEnd
	}
	return g
}

// addSat is a+d for d > 0, saturating at sim.Never.
func addSat(a, d sim.Time) sim.Time {
	if a > sim.Never-d {
		return sim.Never
	}
	return a + d
}

func cloneState(s State) State {
	c := s
	c.Reports = cloneReports(s.Reports)
	c.Have = slices.Clone(s.Have)
	c.Prior = cloneReports(s.Prior)
	c.HavePrior = slices.Clone(s.HavePrior)
	c.Early = cloneReports(s.Early)
	c.HaveEarly = slices.Clone(s.HaveEarly)
	c.Pending = s.Pending.clone()
	return c
}

func cloneReports(rs []Report) []Report {
	if rs == nil {
		return nil
	}
	c := make([]Report, len(rs))
	for i, r := range rs {
		c[i] = r.clone()
	}
	return c
}

func validateState(s State) error {
	if err := s.Config.Validate(); err != nil {
		return err
	}
	n := s.Config.Nodes
	sets := []struct {
		name string
		rs   []Report
		have []bool
	}{{"report", s.Reports, s.Have}, {"prior", s.Prior, s.HavePrior}, {"early", s.Early, s.HaveEarly}}
	for _, set := range sets {
		if len(set.rs) != n || len(set.have) != n {
			return fmt.Errorf("barrier: restore: %d %s reports and %d flags for %d nodes",
				len(set.rs), set.name, len(set.have), n)
		}
		for i, r := range set.rs {
			if set.have[i] && (r.Node != i || len(r.Sent) != n) {
				return fmt.Errorf("barrier: restore: %s report %d is for node %d with %d counts",
					set.name, i, r.Node, len(r.Sent))
			}
		}
	}
	for i := range n {
		var ok bool
		switch s.Phase {
		case PhaseCollecting:
			ok = (!s.Have[i] || s.Reports[i].Window == s.Window) && !s.HavePrior[i] &&
				(!s.HaveEarly[i] || s.Early[i].Window == s.Window+1 && (s.EarlyWindow == s.Window+1 || s.Config.Peer))
		case PhaseResyncing:
			ok = !s.HaveEarly[i] &&
				(!s.HavePrior[i] || s.Have[i] && s.Prior[i].Window+1 == s.Reports[i].Window)
		case PhaseFinished:
			ok = !s.Have[i] && !s.HavePrior[i] && !s.HaveEarly[i]
		default:
			return fmt.Errorf("barrier: restore: bad phase %d", uint8(s.Phase))
		}
		if !ok {
			return fmt.Errorf("barrier: restore: node %d's reports do not fit phase %v window %d",
				i, s.Phase, s.Window)
		}
	}
	if s.HasPending && len(s.Pending.Expect) != n {
		return fmt.Errorf("barrier: restore: pending grant has %d counts for %d nodes",
			len(s.Pending.Expect), n)
	}
	return nil
}
