package barrier

import (
	"errors"
	"fmt"
	"slices"

	"github.com/lockstep-sim/lockstep/sim"
)

// Errors returned by Follower.
var (
	// ErrLateMessage marks a batch message that arrives after the window
	// that needed it has finished: a causality violation.
	ErrLateMessage = errors.New("barrier: message arrived after its window")
	// ErrNoWindow marks Finish without an open window: the node finished
	// its window already and waits for the next grant, or the run is over.
	ErrNoWindow = errors.New("barrier: no open window")
)

// Follower is a node's side of the barrier, pure like Barrier: it decides
// which grants to accept, counts the batch messages the node receives, says
// when the node may start a window, and keeps the node's last two reports so
// it can resend them to a new leader. A node starts with the setup window 0
// open: it calls Finish once for it before any grant.
//
// Batch messages carry the window they were sent in; the messages sent
// during window w are the ones a node needs before it starts window w+1.
//
// It is not safe for concurrent use.
type Follower struct {
	node int
	// term is the newest raft term seen, in a grant or a resend request.
	term uint64
	// window is the last accepted window (0: setup) and grant its grant
	// (zero for window 0).
	window uint64
	grant  Grant
	// finished says the node has finished window; over that it accepted a
	// finishing grant.
	finished, over bool
	// recv[w] counts messages received that window w needs (sent during
	// w-1). Invariant: no key < window.
	recv map[uint64]uint32
	// last holds the last two reports, oldest first; nlast of them valid.
	last  [2]Report
	nlast int
}

// NewFollower returns the follower of node node, which has seen term term.
func NewFollower(node int, term uint64) *Follower {
	return &Follower{node: node, term: term, recv: make(map[uint64]uint32)}
}

// Accept decides whether the node takes grant g. It rejects, with a reason,
// grants from a term older than the newest it has seen, grants for windows
// it already accepted (duplicates after a failover), grants that skip a
// window or arrive before the node finished its current one, and anything
// after a finishing grant. Any grant raises the newest term seen to its own.
func (f *Follower) Accept(g Grant) (ok bool, reason string) {
	if g.Term < f.term {
		return false, fmt.Sprintf("stale term %d < %d", g.Term, f.term)
	}
	f.term = g.Term
	switch {
	case f.over:
		return false, "run finished"
	case g.Window <= f.window:
		return false, fmt.Sprintf("duplicate: window %d already accepted", g.Window)
	case g.Window > f.window+1:
		return false, fmt.Sprintf("gap: window %d after %d", g.Window, f.window)
	case !f.finished:
		return false, fmt.Sprintf("window %d not finished", f.window)
	case len(g.Expect) <= f.node:
		return false, fmt.Sprintf("expect has %d counts, node is %d", len(g.Expect), f.node)
	}
	f.window, f.grant, f.finished = g.Window, g.clone(), false
	f.over = g.Finished
	for w := range f.recv {
		if w < g.Window {
			delete(f.recv, w)
		}
	}
	return true, ""
}

// Receive records a batch message sent during window sentIn. It fails if
// the window that needed the message is already finished.
func (f *Follower) Receive(sentIn uint64) error {
	need := sentIn + 1
	if need < f.window || need == f.window && f.finished {
		return fmt.Errorf("%w: sent in window %d, node %d finished window %d",
			ErrLateMessage, sentIn, f.node, need)
	}
	f.recv[need]++
	return nil
}

// Received is the number of messages received that window needs (those
// sent during window-1).
func (f *Follower) Received(window uint64) uint32 { return f.recv[window] }

// ReadyToRun says the node may start grant g's window: g is the accepted
// grant, the window has not run yet, the run is not over, and exactly
// g.Expect[node] messages for it have arrived. More messages than expected
// (a duplicate delivery) keep it false: the shell must deduplicate.
func (f *Follower) ReadyToRun(g Grant) bool {
	return !g.Finished && g.Window == f.window && g.Window > 0 && !f.finished &&
		f.node < len(g.Expect) && f.recv[g.Window] == g.Expect[f.node]
}

// Finish closes the open window: it fills r's Node, Window and Term (the
// newest term seen), keeps a copy for Resend and returns the report to send.
// The caller fills NextEvent, MinSent, Sent and Done.
func (f *Follower) Finish(r Report) (Report, error) {
	if f.over || f.finished {
		return Report{}, fmt.Errorf("%w: node %d, window %d finished", ErrNoWindow, f.node, f.window)
	}
	if end := f.grant.End; r.NextEvent < end || r.MinSent < end {
		return Report{}, fmt.Errorf("%w: node %d window %d ends at %v, next event %v, min sent %v",
			ErrBadReport, f.node, f.window, end, r.NextEvent, r.MinSent)
	}
	r.Node, r.Window, r.Term = f.node, f.window, f.term
	r.Sent = slices.Clone(r.Sent)
	f.finished = true
	f.last[0] = f.last[1]
	f.last[1] = r.clone()
	f.nlast = min(f.nlast+1, 2)
	return r, nil
}

// Resend answers a new leader of term term: it raises the newest term seen
// and returns the node's last two reports (oldest first, fewer before the
// node has finished two windows) stamped with that term. A request from an
// older term than the newest seen gets nothing.
func (f *Follower) Resend(term uint64) []Report {
	if term < f.term {
		return nil
	}
	f.term = term
	out := make([]Report, 0, f.nlast)
	for _, r := range f.last[2-f.nlast:] {
		r = r.clone()
		r.Term = term
		out = append(out, r)
	}
	return out
}

// Last returns the node's last two reports as they were sent (oldest
// first, fewer before the node has finished two windows): what a node of a
// peer run resends when asked, since there the term never changes (package
// doc, "Peers").
func (f *Follower) Last() []Report {
	out := make([]Report, 0, f.nlast)
	for _, r := range f.last[2-f.nlast:] {
		out = append(out, r.clone())
	}
	return out
}

// Term is the newest raft term the follower has seen.
func (f *Follower) Term() uint64 { return f.term }

// Window is the last accepted window (0 before any grant) and Finished
// whether the node has finished it.
func (f *Follower) Window() (w uint64, finished bool) { return f.window, f.finished }

// Start is the last accepted window's start (0 before any).
func (f *Follower) Start() sim.Time { return f.grant.Start }

// Grant is the last accepted grant (false before any).
func (f *Follower) Grant() (Grant, bool) {
	if f.window == 0 {
		return Grant{}, false
	}
	return f.grant.clone(), true
}

// Over says the node accepted a finishing grant.
func (f *Follower) Over() bool { return f.over }
