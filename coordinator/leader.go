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

// leader is the barrier shell of one leadership term: it feeds the nodes'
// reports to the Barrier and publishes its grants (docs/design.md §3). It is
// the only per-window path through the coordinator, and raft is not on
// it: progress marks are proposed asynchronously.
type leader struct {
	c    *Coordinator
	term uint64

	mu      sync.Mutex
	bar     *barrier.Barrier // guarded by mu
	enc     *wire.Encoder    // guarded by mu
	last    barrier.Grant    // guarded by mu; the last grant published
	joined  bool             // guarded by mu; joins proposed
	stopped bool             // guarded by mu
	// granted says this term published l.last; progress is when the last
	// report was accepted; peers when each node was last heard from.
	granted  bool            // guarded by mu
	progress time.Time       // guarded by mu
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
// restores the barrier from the last progress mark, moves it to the new
// term (which starts a resynchronisation: barrier package doc, "Terms and
// failover") and starts serving.
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
		DeadlockEvery: sim.Time(st.Config.DeadlockEvery)})
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
	bar.SetTerm(term)
	l := &leader{c: c, term: term, bar: bar, enc: wire.NewEncoder(), quit: make(chan struct{}),
		joined: st.Phase >= PhaseRunning, progress: time.Now(), peers: liveness.NewPeers(st.Config.P)}
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

// tick asks the nodes to resend while the barrier resynchronises, and
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
// speak again within it, and a barrier that made no progress for
// StallAfter (or a connection that just came back) gets its last grant
// again and a resync request, so that whatever an outage lost is sent
// again. Copies change nothing: nodes ignore grants they hold and drop
// batches they have, and the barrier refuses reports it has.
func (l *leader) watch(conn *liveness.Conn, now time.Time) {
	cfg := l.c.cfg
	up, reconnected, err := conn.Check(now, cfg.PeerTimeout)
	if err != nil {
		l.c.fail(fmt.Errorf("coordinator %s: %w", cfg.ID, err))
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || l.bar.Phase() == barrier.PhaseFinished {
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
	if l.bar.Phase() == barrier.PhaseCollecting && (reconnected || now.Sub(l.progress) > cfg.StallAfter) {
		l.progress = now
		if l.granted {
			_ = cfg.Conn.Publish(l.c.subj.Grant(), l.enc.Grant(&l.last))
		}
		_ = cfg.Conn.Publish(l.c.subj.Resync(), l.enc.Resync(wire.Resync{Term: l.term}))
		l.c.log.Info("no progress: grant and resync request sent again", "window", l.last.Window, "reconnected", reconnected)
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
	l.peers.Heard(st.Partition, time.Now())
}

func (l *leader) resync() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || l.bar.Phase() != barrier.PhaseResyncing {
		return
	}
	_ = l.c.cfg.Conn.Publish(l.c.subj.Resync(), l.enc.Resync(wire.Resync{Term: l.term}))
}

func (l *leader) status() {
	l.mu.Lock()
	st := wire.Status{ID: l.c.cfg.ID, Term: l.term, PID: os.Getpid(), Window: l.last.Window, Start: int64(l.last.Start),
		Phase: l.bar.Phase().String(), Grants: l.bar.Stats().Grants, Rejected: l.rejected + l.c.RaftRejected()}
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

// onReport feeds a report to the barrier and publishes what it grants.
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
	l.peers.Heard(m.Report.Node, time.Now())
	if err := l.bar.Step(*m.Report); err != nil {
		// Stale, duplicate and early reports are normal around a
		// failover; anything else is a broken node.
		l.c.log.Debug("report refused", "node", m.Report.Node, "epoch", m.Report.Window, "err", err)
		if errors.Is(err, barrier.ErrBadReport) {
			l.c.log.Warn("bad report", "node", m.Report.Node, "epoch", m.Report.Window, "err", err)
		}
		return
	}
	l.progress = time.Now()
	g, ok := l.bar.Ready()
	if !ok {
		return
	}
	if err := l.c.cfg.Conn.Publish(l.c.subj.Grant(), l.enc.Grant(&g)); err != nil {
		l.c.log.Error("publish grant", "epoch", g.Window, "err", err)
		return // Ready returns it again with the next report or resync
	}
	l.bar.Advance()
	l.last = g
	l.granted = true
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
		l.c.enqueue(Command{Op: OpFinish, Window: g.Window, Reason: uint8(g.Reason)})
	case g.Window%l.c.cfg.MarkEvery == 0 || g.Window == 1:
		data, err := msgpack.Marshal(l.bar.State())
		if err != nil {
			l.c.log.Error("encode mark", "err", err)
			return
		}
		l.c.enqueue(Command{Op: OpMark, Mark: Mark{Window: g.Window, Start: int64(g.Start), Term: l.term, Barrier: data}})
	}
}
