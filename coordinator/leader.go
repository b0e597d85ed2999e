package coordinator

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/internal/liveness"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/sim"
)

// leader is the coordinator's shell of one leadership term. The nodes run
// the barrier among themselves (coordinator/barrier package doc, "Peers"):
// the leader is an observer, a peer replica fed with the same reports,
// whose grants it records (progress marks, the finish) and never
// publishes. No coordinator is on the per-window path.
type leader struct {
	c    *Coordinator
	term uint64

	mu      sync.Mutex
	bar     *barrier.Barrier // guarded by mu
	enc     *wire.Encoder    // guarded by mu
	last    barrier.Grant    // guarded by mu; the last grant observed
	joined  bool             // guarded by mu; joins proposed
	stopped bool             // guarded by mu
	// progress is when the observer last issued a grant; peers when each
	// node was last heard from; finals the nodes that said they finished
	// (NodeStatus), finished that the finish was proposed.
	progress time.Time       // guarded by mu
	finals   []bool          // guarded by mu
	finished bool            // guarded by mu
	peers    *liveness.Peers // guarded by mu
	// rejected counts reports dropped as not from the node they claim
	// (or undecodable); guarded by mu.
	rejected uint64

	subs []*nats.Subscription
	quit chan struct{}
	wg   sync.WaitGroup
}

// becomeLeader makes this replica the run's leader for raft's current
// term: it waits until the FSM has applied every committed entry, records
// the run's configuration (or checks it against the recorded one),
// restores the observer from the last progress mark, resynchronises it
// (the nodes may be far ahead: barrier package doc, "Peers") and starts
// serving.
func (c *Coordinator) becomeLeader() {
	term := c.raft.CurrentTerm()
	if err := c.raft.Barrier(5 * time.Second).Error(); err != nil {
		c.log.Warn("not leading: cannot catch up", "term", term, "err", err)
		return
	}
	st := c.fsm.State()
	if st.Phase == 0 {
		if err := c.apply(Command{Op: OpConfigure, Config: c.rcfg}); err != nil {
			c.log.Warn("not leading: configure failed", "term", term, "err", err)
			if !errors.Is(err, raft.ErrNotLeader) && !isRaftTransient(err) {
				c.fail(err)
			}
			return
		}
		st = c.fsm.State()
	}
	if !sameConfig(st.Config, c.rcfg) {
		c.fail(fmt.Errorf("coordinator %s: the run recorded in raft (digest %s, seed %d, P=%d) is not the one this replica was given (digest %s, seed %d, P=%d)",
			c.cfg.ID, st.Config.Digest, st.Config.Seed, st.Config.P, c.rcfg.Digest, c.rcfg.Seed, c.rcfg.P))
		return
	}
	if err := c.apply(Command{Op: OpLead, Lead: LeaderTerm{ID: c.cfg.ID, Term: term}}); err != nil {
		c.log.Warn("not leading", "term", term, "err", err)
		return
	}
	bar, err := barrier.New(barrier.Config{Nodes: st.Config.P, Lookahead: sim.Time(st.Config.Lookahead),
		StopAt: sim.Time(st.Config.StopAt), DeadlockThreshold: sim.Time(st.Config.Deadlock),
		DeadlockEvery: sim.Time(st.Config.DeadlockEvery), Peer: true})
	if err != nil {
		c.fail(err)
		return
	}
	if st.HasMark {
		var bs barrier.State
		if err := msgpack.Unmarshal(st.Mark.Barrier, &bs); err != nil {
			c.fail(fmt.Errorf("coordinator: decode mark of window %d: %w", st.Mark.Window, err))
			return
		}
		if err := bar.Restore(bs); err != nil {
			c.fail(err)
			return
		}
	}
	bar.Resync()
	l := &leader{c: c, term: term, bar: bar, enc: wire.NewEncoder(), quit: make(chan struct{}),
		joined: st.Phase >= PhaseRunning, progress: time.Now(), peers: liveness.NewPeers(st.Config.P),
		finals: make([]bool, st.Config.P)}
	if st.HasMark {
		l.last = barrier.Grant{Window: st.Mark.Window, Start: sim.Time(st.Mark.Start)}
	}
	if err := l.start(st.Phase == PhaseFinished); err != nil {
		l.stop()
		c.log.Warn("not leading", "term", term, "err", err)
		return
	}
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		l.stop()
		return
	}
	c.lead = l
	c.mu.Unlock()
	c.log.Info("leading", "term", term, "mark", st.Mark.Window, "phase", st.Phase)
}

func isRaftTransient(err error) bool {
	return errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrRaftShutdown) ||
		errors.Is(err, raft.ErrEnqueueTimeout) || errors.Is(err, raft.ErrLeadershipTransferInProgress)
}

// start subscribes to reports and setup requests and starts the ticker.
// A finished run only serves status.
func (l *leader) start(finished bool) error {
	nc := l.c.cfg.Conn
	s := l.c.subj
	if !finished {
		for subject, cb := range map[string]nats.MsgHandler{s.Reports(): l.onReport, s.Setup(): l.onSetup,
			s.NodeStatuses(): l.onNodeStatus} {
			sub, err := nc.Subscribe(subject, cb)
			if err != nil {
				return err
			}
			_ = sub.SetPendingLimits(-1, -1)
			l.subs = append(l.subs, sub)
		}
		if err := nc.Flush(); err != nil {
			return err
		}
	}
	l.wg.Add(1)
	go l.tick(finished)
	return nil
}

// stop ends the term's service. It is idempotent.
func (l *leader) stop() {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.stopped = true
	l.mu.Unlock()
	for _, s := range l.subs {
		_ = s.Unsubscribe()
	}
	close(l.quit)
	l.wg.Wait()
}

// tick asks the nodes to resend while the observer resynchronises, and
// publishes the status.
func (l *leader) tick(finished bool) {
	defer l.wg.Done()
	cfg := l.c.cfg
	resync := time.NewTicker(cfg.ResyncEvery)
	status := time.NewTicker(liveness.Interval(cfg.PeerTimeout, cfg.StatusEvery))
	defer resync.Stop()
	defer status.Stop()
	if !finished {
		l.resync()
	}
	l.status()
	conn := liveness.NewConn(cfg.Conn)
	for {
		select {
		case <-l.quit:
			return
		case <-resync.C:
			if !finished {
				l.resync()
			}
		case now := <-status.C:
			l.status()
			if !finished {
				l.watch(conn, now)
			}
		}
	}
}

// watch is the leader's deadline check, every heartbeat interval: the NATS
// server must come back within PeerTimeout, every node that has spoken must
// speak again within it, and an observer that saw no progress for
// StallAfter (or a connection that just came back) resynchronises and
// asks the nodes to resend their last reports and batches, so that
// whatever an outage lost, at the nodes or here, is sent again. Copies
// change nothing: nodes drop batches and reports they have.
func (l *leader) watch(conn *liveness.Conn, now time.Time) {
	cfg := l.c.cfg
	up, reconnected, err := conn.Check(now, cfg.PeerTimeout)
	if err != nil {
		l.c.fail(fmt.Errorf("coordinator %s: %w", cfg.ID, err))
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || l.finished || l.bar.Phase() == barrier.PhaseFinished {
		return
	}
	if !up {
		l.peers.Pause(now)
		l.progress = now
		return
	}
	if silent := l.peers.Silent(now, cfg.PeerTimeout); len(silent) > 0 {
		err := liveness.SilentError(silent[0], cfg.PeerTimeout)
		if data, eerr := l.enc.Control(wire.TypeAbort, cfg.Creds.Abort(err.Error())); eerr == nil {
			_ = cfg.Conn.Publish(l.c.subj.Abort(), data)
			_ = cfg.Conn.FlushTimeout(time.Second)
		}
		l.c.fail(err)
		return
	}
	if reconnected || now.Sub(l.progress) > cfg.StallAfter {
		l.progress = now
		l.bar.Resync()
		_ = cfg.Conn.Publish(l.c.subj.Resync(), l.enc.Resync(wire.Resync{Term: l.term}))
		l.c.log.Info("no progress: resync request sent", "window", l.last.Window, "reconnected", reconnected)
	}
}

// onNodeStatus records a node's heartbeat.
func (l *leader) onNodeStatus(msg *nats.Msg) {
	m, err := wire.Decode(msg.Data)
	if err != nil || m.Kind != wire.KindControl || m.Control.Type != wire.TypeNodeStatus {
		return
	}
	var st wire.NodeStatus
	if m.Control.UnmarshalBody(&st) != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st.Partition < 0 || st.Partition >= len(l.finals) {
		return
	}
	l.peers.Heard(st.Partition, time.Now())
	if !st.Finished || l.stopped || l.finished {
		return
	}
	// The nodes finish on their own replicas' grant: if the observer
	// missed the last reports, the nodes' word ends the run.
	l.finals[st.Partition] = true
	for _, f := range l.finals {
		if !f {
			return
		}
	}
	l.finished = true
	l.c.enqueue(Command{Op: OpFinish, Window: st.Window, Reason: st.Reason})
}

func (l *leader) resync() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || l.finished || l.bar.Phase() != barrier.PhaseResyncing {
		return
	}
	_ = l.c.cfg.Conn.Publish(l.c.subj.Resync(), l.enc.Resync(wire.Resync{Term: l.term}))
}

func (l *leader) status() {
	l.mu.Lock()
	st := wire.Status{ID: l.c.cfg.ID, Term: l.term, PID: os.Getpid(), Window: l.last.Window, Start: int64(l.last.Start),
		Phase: l.bar.Phase().String(), Grants: l.bar.Stats().Grants, Rejected: l.rejected + l.c.RaftRejected()}
	if l.finished {
		st.Phase = barrier.PhaseFinished.String()
	}
	stopped := l.stopped
	var data []byte
	var err error
	if !stopped {
		data, err = l.enc.Control(wire.TypeStatus, st)
	}
	l.mu.Unlock()
	if stopped || err != nil {
		return
	}
	_ = l.c.cfg.Conn.Publish(l.c.subj.Status(), data)
}

// onSetup answers a node's setup request with the run and this term.
func (l *leader) onSetup(msg *nats.Msg) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	su := *l.c.cfg.Setup // with the launcher's signature, if any
	su.Term = l.term
	data, err := l.enc.Control(wire.TypeSetup, &su)
	if err != nil {
		l.c.log.Error("encode setup", "err", err)
		return
	}
	_ = msg.Respond(data)
}

// onReport feeds a report to the observer and records what it grants.
func (l *leader) onReport(msg *nats.Msg) {
	m, err := wire.Decode(msg.Data)
	if err == nil && m.Kind != wire.KindReport {
		err = fmt.Errorf("%v message", m.Kind)
	}
	if err == nil {
		// Node i publishes on report.i only (the server's permissions),
		// so a report is node i's if it says so.
		if from, ok := l.c.subj.Sender(msg.Subject); !ok || from != m.Report.Node || from >= l.c.rcfg.P {
			err = fmt.Errorf("report of node %d on %s", m.Report.Node, msg.Subject)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.rejected++
		l.c.log.Warn("report rejected", "subject", msg.Subject, "err", err)
		return
	}
	if l.stopped {
		return
	}
	r := *m.Report
	l.peers.Heard(r.Node, time.Now())
	err = l.bar.Step(r)
	if errors.Is(err, barrier.ErrWrongWindow) && l.bar.Phase() == barrier.PhaseCollecting && r.Window > l.bar.Window()+1 {
		// The nodes are ahead (the observer lost reports): catch up
		// from what comes next, and ask for the last reports again.
		l.bar.Resync()
		err = l.bar.Step(r)
		_ = l.c.cfg.Conn.Publish(l.c.subj.Resync(), l.enc.Resync(wire.Resync{Term: l.term}))
	}
	if err != nil {
		// Copies and reports around a resync are normal; anything
		// else is a broken node, which its peers refuse too.
		l.c.log.Debug("report refused", "node", r.Node, "epoch", r.Window, "err", err)
		if errors.Is(err, barrier.ErrBadReport) {
			l.c.log.Warn("bad report", "node", r.Node, "epoch", r.Window, "err", err)
		}
		return
	}
	for {
		g, ok := l.bar.Ready()
		if !ok {
			return
		}
		l.bar.Advance()
		l.observed(g)
	}
}

// observed records a grant the observer issued: the joins after window 0,
// progress marks, the finish.
func (l *leader) observed(g barrier.Grant) {
	l.last = g
	l.progress = time.Now()
	if !l.joined {
		l.joined = true
		all := make([]int, l.c.rcfg.P)
		for i := range all {
			all[i] = i
		}
		// Every node reported window 0: all have joined.
		l.c.enqueue(Command{Op: OpJoin, Joined: all})
	}
	switch {
	case g.Finished:
		if !l.finished {
			l.finished = true
			l.c.enqueue(Command{Op: OpFinish, Window: g.Window, Reason: uint8(g.Reason)})
			// At once (l.mu is held here): followers and the
			// launcher stop waiting.
			l.wg.Add(1)
			go func() { defer l.wg.Done(); l.status() }()
		}
	case g.Window%l.c.cfg.MarkEvery == 0 || g.Window == 1:
		data, err := msgpack.Marshal(l.bar.State())
		if err != nil {
			l.c.log.Error("encode mark", "err", err)
			return
		}
		l.c.enqueue(Command{Op: OpMark, Mark: Mark{Window: g.Window, Start: int64(g.Start), Term: l.term, Barrier: data}})
	}
}
