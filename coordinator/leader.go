package coordinator

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/internal/liveness"
	"github.com/lockstep-sim/lockstep/internal/wire"
)

// leader is the coordinator's shell of one leadership term. The nodes run
// the barrier among themselves (coordinator/barrier package doc, "Peers")
// and the leader hears none of their reports: it follows the run from the
// nodes' statuses (their heartbeats, which carry the window each node
// accepted) and records from them what must survive it in raft: the
// joins, a progress mark every MarkEvery windows, the finish. No
// coordinator is on the per-window path, and the leader's server delivers
// it nothing per window (docs/decisions.md, "The leader hears no
// reports").
type leader struct {
	c    *Coordinator
	term uint64

	mu      sync.Mutex
	enc     *wire.Encoder // guarded by mu
	joined  bool          // guarded by mu; joins proposed
	stopped bool          // guarded by mu
	// windows and starts are, by node, the last window its status in this
	// epoch said it accepted and that window's start; last is the window
	// every node accepted (their minimum) and its start, first what last
	// was when this term began. Guarded by mu.
	windows []uint64
	starts  []int64
	last    progressAt
	first   uint64
	// progress is when last last advanced; peers when each node was last
	// heard from; finals the nodes that said they finished (NodeStatus),
	// finished that the finish was proposed.
	progress time.Time       // guarded by mu
	finals   []bool          // guarded by mu
	finished bool            // guarded by mu
	peers    *liveness.Peers // guarded by mu
	// rejected counts checkpoint parts dropped as not from the node they
	// claim (or undecodable); guarded by mu.
	rejected uint64
	// epoch is the run's epoch (ControlState.Epoch); heard says which
	// nodes spoke in it (a setup request from one of them is a new
	// incarnation: a lost node); rb is the rollback under way, until
	// every node said it restored; parts the checkpoint parts stored in
	// this epoch, by window, until every one is in. Guarded by mu.
	epoch uint64
	heard []bool
	rb    *pendingRollback
	parts map[uint64]*ckParts

	subs []*nats.Subscription
	quit chan struct{}
	wg   sync.WaitGroup
}

// progressAt is a window and its start (ps).
type progressAt struct {
	Window uint64
	Start  int64
}

// pendingRollback is a rollback whose nodes have not all restored yet.
type pendingRollback struct {
	msg       []byte // the rollback message, published again until done
	confirmed []bool
}

// ckParts gathers the parts of the checkpoint at one window.
type ckParts struct {
	ref  wire.CheckpointRef
	have []bool
	n    int
}

// becomeLeader makes this replica the run's leader for raft's current
// term: it waits until the FSM has applied every committed entry, records
// the run's configuration (or checks it against the recorded one), takes
// the run's progress from the last mark (the nodes' statuses bring it up
// to date) and starts serving.
func (c *Coordinator) becomeLeader() {
	term := c.raft.CurrentTerm()
	if err := c.raft.Barrier(5 * time.Second).Error(); err != nil {
		c.log.Warn("not leading: cannot catch up", "term", term, "err", err)
		return
	}
	st := c.fsm.State()
	if st.Phase == 0 {
		if err := c.apply(Command{Op: OpConfigure, Config: c.rcfg, Ckpt: c.cfg.Setup.Resume}); err != nil {
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
	p := st.Config.P
	l := &leader{c: c, term: term, enc: wire.NewEncoder(), quit: make(chan struct{}),
		joined: st.Phase >= PhaseRunning, progress: time.Now(), peers: liveness.NewPeers(p),
		windows: make([]uint64, p), starts: make([]int64, p),
		finals: make([]bool, p), epoch: st.Epoch, heard: make([]bool, p), parts: map[uint64]*ckParts{}}
	if st.Epoch > 0 && st.Restore != nil {
		// A rollback its predecessor may not have seen through: say it
		// again until every node is in the epoch (those already there
		// ignore it).
		l.rb = l.rollbackMsg(st.Restore, st.Restarts[len(st.Restarts)-1].Partition)
	}
	if st.HasMark {
		l.last = progressAt{Window: st.Mark.Window, Start: st.Mark.Start}
	}
	l.first = l.last.Window
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

// start subscribes to setup requests, the nodes' statuses and their
// checkpoint parts, and starts the ticker. A finished run only serves
// status.
func (l *leader) start(finished bool) error {
	nc := l.c.cfg.Conn
	s := l.c.subj
	if !finished {
		for _, sc := range []struct {
			subject string
			cb      nats.MsgHandler
		}{{s.Setup(), l.onSetup}, {s.NodeStatuses(), l.onNodeStatus}, {s.Checkpoints(), l.onCheckpoint}} {
			sub, err := nc.Subscribe(sc.subject, sc.cb)
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

// tick publishes the status, checks the deadlines and repeats a pending
// rollback.
func (l *leader) tick(finished bool) {
	defer l.wg.Done()
	cfg := l.c.cfg
	resync := time.NewTicker(cfg.ResyncEvery)
	status := time.NewTicker(liveness.Interval(cfg.PeerTimeout, cfg.StatusEvery))
	defer resync.Stop()
	defer status.Stop()
	l.status()
	conn := liveness.NewConn(cfg.Conn)
	for {
		select {
		case <-l.quit:
			return
		case <-resync.C:
			if !finished {
				l.repeatRollback()
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
// speak again within it, and a run whose nodes' statuses show no progress
// for StallAfter (or a connection that just came back) has the nodes
// resend their last reports and batches, so that whatever an outage lost
// is sent again. Copies change nothing: nodes drop batches and reports
// they have.
func (l *leader) watch(conn *liveness.Conn, now time.Time) {
	cfg := l.c.cfg
	up, reconnected, err := conn.Check(now, cfg.PeerTimeout)
	if err != nil {
		l.c.fail(fmt.Errorf("coordinator %s: %w", cfg.ID, err))
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || l.finished {
		return
	}
	if !up {
		l.peers.Pause(now)
		l.progress = now
		return
	}
	if silent := l.peers.Silent(now, cfg.PeerTimeout); len(silent) > 0 {
		err := liveness.SilentError(silent[0], cfg.PeerTimeout)
		if cs := l.c.fsm.State(); cs.Checkpoint != nil && len(cs.Restarts) < cfg.Setup.MaxRestarts {
			// A hung node is lost too: roll back (its launcher, or its
			// own restart, brings a new incarnation), and give it the
			// timeout again.
			l.peers.Heard(silent[0], now)
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				if rerr := l.rollback(silent[0], true); rerr != nil {
					l.abort(fmt.Errorf("%v; %w", err, rerr))
				}
			}()
			return
		}
		if data, eerr := l.enc.Control(wire.TypeAbort, cfg.Creds.Abort(err.Error())); eerr == nil {
			_ = cfg.Conn.Publish(l.c.subj.Abort(), data)
			_ = cfg.Conn.FlushTimeout(time.Second)
		}
		l.c.fail(err)
		return
	}
	// Progress is known from statuses, a heartbeat apart: a run is
	// stalled only if two of them brought none.
	if reconnected || now.Sub(l.progress) > max(cfg.StallAfter, 2*cfg.StatusEvery) {
		l.progress = now
		_ = cfg.Conn.Publish(l.c.subj.Resync(), l.enc.Resync(wire.Resync{Term: l.term, Epoch: l.epoch}))
		l.c.log.Info("no progress: resync request sent", "window", l.last.Window, "reconnected", reconnected)
	}
}

// onNodeStatus records a node's heartbeat and the progress it brings:
// once every node spoke, the joins; the window every node accepted, with a
// mark every MarkEvery windows; and the finish once every node finished.
func (l *leader) onNodeStatus(msg *nats.Msg) {
	m, err := wire.Decode(msg.Data)
	if err != nil || m.Kind != wire.KindControl || m.Control.Type != wire.TypeNodeStatus {
		return
	}
	var st wire.NodeStatus
	if m.Control.UnmarshalBody(&st) != nil {
		return
	}
	if from, ok := l.c.subj.Sender(msg.Subject); !ok || from != st.Partition {
		return // not from the node it names
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st.Partition < 0 || st.Partition >= len(l.finals) {
		return
	}
	l.peers.Heard(st.Partition, time.Now())
	if st.Epoch != l.epoch {
		return // a node that has not restored yet, or a stale status
	}
	l.heard[st.Partition] = true
	if !l.stopped && !l.finished {
		l.advance(st)
	}
	if rb := l.rb; rb != nil && !l.stopped {
		rb.confirmed[st.Partition] = true
		if !slices.Contains(rb.confirmed, false) {
			// Every node restored the checkpoint: the resends of those
			// that restored first may have reached nodes still in the
			// old epoch, so everyone resends once more.
			l.rb = nil
			l.progress = time.Now()
			_ = l.c.cfg.Conn.Publish(l.c.subj.Resync(), l.enc.Resync(wire.Resync{Term: l.term, Epoch: l.epoch}))
			l.c.log.Warn("rollback done: every node restored its part", "epoch", l.epoch)
		}
	}
	if !st.Finished || l.stopped || l.finished {
		return
	}
	// The nodes finish on their own replicas' grant: when all of them
	// say so, the run is over.
	l.finals[st.Partition] = true
	for _, f := range l.finals {
		if !f {
			return
		}
	}
	l.finished = true
	l.c.enqueue(Command{Op: OpFinish, Window: st.Window, Reason: st.Reason})
	// At once (l.mu is held here): followers and the launcher stop
	// waiting.
	l.wg.Add(1)
	go func() { defer l.wg.Done(); l.status() }()
}

// advance records node st.Partition's window and what follows from it.
// Precondition: mu held, st in the leader's epoch.
func (l *leader) advance(st wire.NodeStatus) {
	if st.Window <= l.windows[st.Partition] {
		return
	}
	l.windows[st.Partition], l.starts[st.Partition] = st.Window, st.Start
	if !l.joined && !slices.Contains(l.heard, false) {
		// Every node set up and accepted a window: all have joined.
		l.joined = true
		all := make([]int, len(l.heard))
		for i := range all {
			all[i] = i
		}
		l.c.enqueue(Command{Op: OpJoin, Joined: all})
	}
	k := 0
	for i, w := range l.windows {
		if w < l.windows[k] {
			k = i
		}
	}
	if l.windows[k] <= l.last.Window {
		return
	}
	prev := l.last.Window
	l.last = progressAt{Window: l.windows[k], Start: l.starts[k]}
	l.progress = time.Now()
	if every := l.c.cfg.MarkEvery; prev == 0 || l.last.Window/every > prev/every {
		l.c.enqueue(Command{Op: OpMark, Mark: Mark{Window: l.last.Window, Start: l.last.Start, Term: l.term}})
	}
}

func (l *leader) status() {
	cs := l.c.fsm.State()
	l.mu.Lock()
	st := wire.Status{ID: l.c.cfg.ID, Term: l.term, PID: os.Getpid(), Window: l.last.Window, Start: l.last.Start,
		Phase: PhaseRunning.String(), Grants: l.last.Window - min(l.first, l.last.Window), Rejected: l.rejected + l.c.RaftRejected(),
		Epoch: cs.Epoch, Checkpoint: cs.Checkpoint, Checkpoints: cs.Checkpoints, Restarts: cs.Restarts}
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

// onSetup answers a node's setup request with the run, this term, the
// epoch and the checkpoint a node joining in it restores. A request from a
// node that already spoke in this epoch (or any, once the run started,
// unless a rollback waits for that node) comes from a new incarnation of
// a lost node: every node goes back to the last committed checkpoint
// (rollback), or the run fails if there is none or the restarts are used
// up.
func (l *leader) onSetup(msg *nats.Msg) {
	part := -1
	if m, err := wire.Decode(msg.Data); err == nil && m.Kind == wire.KindControl && m.Control.Type == wire.TypeSetupRequest {
		var rq wire.SetupRequest
		if m.Control.UnmarshalBody(&rq) == nil && rq.Partition >= 0 && rq.Partition < l.c.rcfg.P {
			part = rq.Partition
		}
	}
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	lost := part >= 0 && (l.heard[part] || l.joined && (l.rb == nil || l.rb.confirmed[part]))
	l.mu.Unlock()
	if lost {
		if err := l.rollback(part, false); err != nil {
			l.abort(err)
			return
		}
	}
	cs := l.c.fsm.State()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	su := *l.c.cfg.Setup // with the launcher's signature, if any
	su.Term, su.Epoch, su.Restore = l.term, l.epoch, cs.Restore
	data, err := l.enc.Control(wire.TypeSetup, &su)
	if err != nil {
		l.c.log.Error("encode setup", "err", err)
		return
	}
	_ = msg.Respond(data)
}

// rollback starts a new epoch in which every node restores the last
// committed checkpoint, because partition lost's node was lost: raft
// commits it first (so that a new leader goes on with it), then every
// node is told (and told again until each says it restored).
func (l *leader) rollback(lost int, silent bool) error {
	cs := l.c.fsm.State()
	maxR := l.c.cfg.Setup.MaxRestarts
	switch {
	case cs.Checkpoint == nil:
		return fmt.Errorf("partition %d: its node was lost (a new one asked for the setup) and no checkpoint is committed to restart from", lost)
	case len(cs.Restarts) >= maxR:
		return fmt.Errorf("partition %d: its node was lost and the run has restarted %d times (--max-restarts %d)", lost, len(cs.Restarts), maxR)
	}
	// Where the run was: the furthest window a node's status named, and
	// at least the checkpoint's (every node passed it).
	l.mu.Lock()
	at := max(l.last.Window, slices.Max(l.windows), cs.Checkpoint.Window)
	l.mu.Unlock()
	r := wire.Restart{Epoch: cs.Epoch + 1, Partition: lost, LostAt: at, FromWindow: cs.Checkpoint.Window, Silent: silent}
	if err := l.c.apply(Command{Op: OpRollback, Epoch: r.Epoch, Restart: r}); err != nil {
		return fmt.Errorf("partition %d: its node was lost and the rollback was not committed: %w", lost, err)
	}
	cs = l.c.fsm.State()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return nil
	}
	l.epoch = cs.Epoch
	clear(l.heard)
	clear(l.finals)
	clear(l.parts)
	clear(l.windows)
	clear(l.starts)
	l.finished = false
	// Progress starts over at the checkpoint, as the nodes do.
	l.last = progressAt{Window: cs.Restore.Window, Start: cs.Restore.TimePS}
	l.first = min(l.first, l.last.Window)
	l.progress = time.Now()
	l.rb = l.rollbackMsg(cs.Restore, lost)
	_ = l.c.cfg.Conn.Publish(l.c.subj.Rollback(), l.rb.msg)
	l.c.log.Warn("node lost: rolling back", "partition", lost, "epoch", l.epoch, "window", cs.Restore.Window, "lost_at", at)
	return nil
}

// rollbackMsg is the pending rollback to ref in the leader's epoch.
// Precondition: mu held.
func (l *leader) rollbackMsg(ref *wire.CheckpointRef, lost int) *pendingRollback {
	r := wire.Rollback{Epoch: l.epoch, Lost: lost, To: *ref}
	l.c.cfg.Creds.SignRollback(&r)
	data, err := l.enc.Control(wire.TypeRollback, r)
	if err != nil {
		l.c.log.Error("encode rollback", "err", err)
	}
	return &pendingRollback{msg: data, confirmed: make([]bool, l.c.rcfg.P)}
}

// repeatRollback publishes the pending rollback again (it may have been
// lost, or a node was restarting).
func (l *leader) repeatRollback() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rb != nil && !l.stopped && l.rb.msg != nil {
		_ = l.c.cfg.Conn.Publish(l.c.subj.Rollback(), l.rb.msg)
	}
}

// abort fails the run with err: every member is told.
func (l *leader) abort(err error) {
	cfg := l.c.cfg
	l.mu.Lock()
	data, eerr := l.enc.Control(wire.TypeAbort, cfg.Creds.Abort(err.Error()))
	l.mu.Unlock()
	if eerr == nil {
		_ = cfg.Conn.Publish(l.c.subj.Abort(), data)
		_ = cfg.Conn.FlushTimeout(time.Second)
	}
	l.c.fail(err)
}

// onCheckpoint records a node's stored part; once every part of a window's
// checkpoint is in (in this epoch), the checkpoint is committed.
func (l *leader) onCheckpoint(msg *nats.Msg) {
	m, err := wire.Decode(msg.Data)
	var cs wire.CheckpointStored
	if err == nil && (m.Kind != wire.KindControl || m.Control.Type != wire.TypeCheckpointStored) {
		err = fmt.Errorf("%v message", m.Kind)
	}
	if err == nil {
		err = m.Control.UnmarshalBody(&cs)
	}
	if err == nil {
		if from, ok := l.c.subj.Sender(msg.Subject); !ok || from != cs.Partition || from >= l.c.rcfg.P {
			err = fmt.Errorf("part of partition %d on %s", cs.Partition, msg.Subject)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.rejected++
		l.c.log.Warn("checkpoint part rejected", "subject", msg.Subject, "err", err)
		return
	}
	if l.stopped || cs.Epoch != l.epoch {
		return
	}
	ck := l.parts[cs.Window]
	if ck == nil {
		ck = &ckParts{ref: wire.CheckpointRef{Window: cs.Window, TimePS: cs.TimePS, Parts: make([]wire.CheckpointPart, l.c.rcfg.P)},
			have: make([]bool, l.c.rcfg.P)}
		l.parts[cs.Window] = ck
	}
	if !ck.have[cs.Partition] {
		ck.have[cs.Partition] = true
		ck.n++
	}
	ck.ref.Parts[cs.Partition] = cs.Part
	if ck.n < len(ck.have) {
		return
	}
	for w := range l.parts {
		if w <= cs.Window {
			delete(l.parts, w)
		}
	}
	ref := ck.ref
	l.c.enqueue(Command{Op: OpCheckpoint, Ckpt: &ref, Epoch: l.epoch})
	l.c.log.Info("checkpoint complete", "window", ref.Window, "epoch", l.epoch)
}
