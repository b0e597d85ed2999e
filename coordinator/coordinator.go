package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/internal/liveness"
	"github.com/lockstep-sim/lockstep/internal/member"
	"github.com/lockstep-sim/lockstep/internal/wire"
)

// Peer is a raft voter.
type Peer struct {
	ID   string
	Addr string // host:port of its raft TCP transport
}

// Config configures one coordinator replica.
type Config struct {
	// Conn is the NATS connection; the coordinator does not close it.
	Conn *nats.Conn
	Run  string
	// Setup is the run every node fetches. Every replica must be given the
	// same run (the first leader records its RunConfig in raft; the others
	// refuse to lead a different one).
	Setup *wire.Setup
	// Creds are this replica's member credentials (nil: the run has
	// none). An abort the replica publishes should be Creds.Abort(reason):
	// signed, so that nodes on a server without member permissions take it.
	Creds *member.Creds
	// ID is this replica's raft server id; Addr the address its raft TCP
	// transport binds (default 127.0.0.1:0, usable for a single replica).
	ID   string
	Addr string
	// Peers lists every voter, this one included (nil: this one alone).
	Peers []Peer
	// Dir holds the BoltDB log and the snapshots ("": in memory).
	Dir string
	// MarkEvery is the number of windows between progress marks (default
	// 256).
	MarkEvery uint64
	// ResyncEvery is how often a leader repeats a rollback that not every
	// node has confirmed (default 100ms); StatusEvery how often a leader
	// publishes its status (default 250ms), and how often it expects the
	// nodes' statuses.
	ResyncEvery time.Duration
	StatusEvery time.Duration
	// PeerTimeout is how long a node that has spoken may then stay silent,
	// and how long the NATS server may stay unreachable, before the leader
	// fails the run (default liveness.DefaultTimeout). It aborts the run
	// naming the partition.
	PeerTimeout time.Duration
	// StallAfter is how long a leader waits without progress in the
	// nodes' statuses (and at least two status intervals) before it asks
	// the nodes to resend their reports and batches (messages lost in a
	// NATS outage; default 500ms).
	StallAfter time.Duration
	// JoinTimeout bounds how long a replica that has never known a raft
	// leader waits for one (its peers starting, an election) before it
	// fails (default 60s). Once it has known one, PeerTimeout bounds a
	// time without a leader and without a leader's status.
	JoinTimeout time.Duration
	// Election is raft's heartbeat and election timeout (default 300ms,
	// for a loopback or LAN cluster; 50ms for a single replica).
	Election time.Duration
	Logger   *slog.Logger
	// RaftLog receives raft's own errors (nil: discard). Its warnings
	// (elections, failed heartbeats) are routine in a failover.
	RaftLog io.Writer
	// OnStart, if set, is called by Run with the started replica (for
	// metrics and probes: RaftState).
	OnStart func(*Coordinator)
}

// DefaultMarkEvery is Config.MarkEvery's default.
const DefaultMarkEvery = 256

// Coordinator is one running replica.
type Coordinator struct {
	cfg   Config
	log   *slog.Logger
	subj  wire.Subjects
	rcfg  RunConfig
	fsm   *FSM
	raft  *raft.Raft
	trans *raft.NetworkTransport
	// raftAuth is the authenticated raft stream layer (nil without member
	// credentials).
	raftAuth *authStream
	store    io.Closer // the BoltDB store, if any
	// final is the raft state just before raft shut down (RaftState
	// reports it afterwards, for a replica that lingers for its metrics).
	final atomic.Pointer[RaftInfo]

	notify chan bool
	props  chan Command
	// finishSeen says a leader's status said the run finished; over is
	// closed when, besides, there is no raft leader any more: a follower
	// that has not applied the finish (the leader may exit before it sends
	// the commit index) and has nothing left to wait for. statusSub hears
	// the status, and heard is when a leader's status last came (unix ns).
	finishSeen atomic.Bool
	over       chan struct{}
	statusSub  *nats.Subscription
	heard      atomic.Int64
	done       chan struct{} // closed by Close
	wg         sync.WaitGroup

	mu      sync.Mutex
	lead    *leader // guarded by mu; nil unless leading
	err     error   // guarded by mu; the first fatal error
	failed  chan struct{}
	closing bool // guarded by mu
}

// Start starts a replica: raft (bootstrapping the cluster if this replica
// has no state yet), and the goroutines that follow leadership.
func Start(cfg Config) (*Coordinator, error) {
	if cfg.Conn == nil || cfg.Setup == nil {
		return nil, fmt.Errorf("coordinator: Conn and Setup are required")
	}
	subj, err := wire.NewSubjects(cfg.Run)
	if err != nil {
		return nil, err
	}
	if cfg.ID == "" {
		cfg.ID = "c0"
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.MarkEvery == 0 {
		cfg.MarkEvery = DefaultMarkEvery
	}
	if cfg.ResyncEvery <= 0 {
		cfg.ResyncEvery = 100 * time.Millisecond
	}
	if cfg.StatusEvery <= 0 {
		cfg.StatusEvery = 250 * time.Millisecond
	}
	if cfg.PeerTimeout <= 0 {
		cfg.PeerTimeout = liveness.DefaultTimeout
	}
	if cfg.JoinTimeout <= 0 {
		cfg.JoinTimeout = DefaultJoinTimeout
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = 500 * time.Millisecond
	}
	if cfg.Election <= 0 {
		cfg.Election = 300 * time.Millisecond
		if len(cfg.Peers) <= 1 {
			// Alone, a replica waits one heartbeat timeout before it
			// elects itself: keep that short.
			cfg.Election = 10 * time.Millisecond
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	su := cfg.Setup
	c := &Coordinator{cfg: cfg, log: log.With("coordinator", cfg.ID), subj: subj, fsm: &FSM{},
		rcfg: RunConfig{Digest: su.Digest, Seed: seedOf(su), P: su.P, Part: su.Part, Lookahead: su.Lookahead, StopAt: su.StopAt,
			Deadlock: su.Deadlock, DeadlockEvery: su.DeadlockEvery},
		notify: make(chan bool, 16), props: make(chan Command, 64), done: make(chan struct{}), failed: make(chan struct{}),
		over: make(chan struct{})}
	sub, err := cfg.Conn.Subscribe(subj.Status(), c.onStatus)
	if err != nil {
		return nil, fmt.Errorf("coordinator %s: subscribe to the leader's status: %w", cfg.ID, err)
	}
	c.statusSub = sub
	if err := c.startRaft(); err != nil {
		_ = sub.Unsubscribe()
		c.closeRaft()
		return nil, err
	}
	c.wg.Add(3)
	go c.watch()
	go c.propose()
	go c.deadline()
	return c, nil
}

// DefaultJoinTimeout is Config.JoinTimeout's default.
const DefaultJoinTimeout = 60 * time.Second

// onStatus hears the leader's status: a heartbeat (progress, for
// deadline), and the end of the run when it says finished.
func (c *Coordinator) onStatus(msg *nats.Msg) {
	m, err := wire.Decode(msg.Data)
	if err != nil || m.Kind != wire.KindControl || m.Control.Type != wire.TypeStatus {
		return
	}
	var st wire.Status
	if m.Control.UnmarshalBody(&st) != nil {
		return
	}
	c.heard.Store(time.Now().UnixNano())
	if st.Phase == barrier.PhaseFinished.String() {
		c.finishSeen.Store(true)
	}
}

// deadline is the replica's own liveness check (docs/design.md §10: every
// wait has a deadline). A replica with neither a raft leader nor a
// leader's status for PeerTimeout (JoinTimeout until it first knew a
// leader) fails: the others are gone, or it is cut off from them, and the
// run cannot go on through it. Without it a follower that missed the end
// of the run would stand for election for ever. A replica that has heard
// a leader say the run finished stops as soon as there is no leader (it
// does not stop while there is one: the leader may need it to commit the
// finish).
func (c *Coordinator) deadline() {
	defer c.wg.Done()
	every := liveness.Interval(c.cfg.PeerTimeout, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	last, known := time.Now(), false
	for {
		select {
		case <-c.done:
			return
		case now := <-t.C:
			heard := time.Unix(0, c.heard.Load())
			addr, _ := c.raft.LeaderWithID()
			if addr == "" && c.finishSeen.Load() {
				close(c.over)
				return
			}
			if addr != "" || now.Sub(heard) < 2*liveness.Interval(c.cfg.PeerTimeout, c.cfg.StatusEvery)+every {
				last, known = now, true
				continue
			}
			wait, what := c.cfg.PeerTimeout, "no raft leader and no leader status"
			if !known {
				wait, what = c.cfg.JoinTimeout, "no raft leader elected"
			}
			if now.Sub(last) > wait {
				c.fail(fmt.Errorf("coordinator %s: %s for %v (the other coordinators are gone or unreachable)", c.cfg.ID, what, wait))
				return
			}
		}
	}
}

func seedOf(su *wire.Setup) uint64 { return su.Seed }

func (c *Coordinator) startRaft() error {
	cfg := c.cfg
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.Election
	rc.ElectionTimeout = cfg.Election
	rc.LeaderLeaseTimeout = cfg.Election / 2
	rc.CommitTimeout = 5 * time.Millisecond
	rc.SnapshotThreshold = 1024
	rc.NotifyCh = c.notify
	out := cfg.RaftLog
	if out == nil {
		out = io.Discard
	}
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft-" + cfg.ID, Level: hclog.Error, Output: out})

	var trans *raft.NetworkTransport
	if cfg.Creds != nil && len(cfg.Creds.CoordinatorKeys) > 0 {
		// Only the run's coordinators may connect (raftauth.go).
		s, err := newAuthStream(cfg.Addr, cfg.ID, cfg.Creds)
		if err != nil {
			return fmt.Errorf("coordinator %s: raft transport on %s: %w", cfg.ID, cfg.Addr, err)
		}
		c.raftAuth = s
		trans = raft.NewNetworkTransport(s, 3, 2*time.Second, out)
	} else {
		t, err := raft.NewTCPTransport(cfg.Addr, nil, 3, 2*time.Second, out)
		if err != nil {
			return fmt.Errorf("coordinator %s: raft transport on %s: %w", cfg.ID, cfg.Addr, err)
		}
		trans = t
	}
	c.trans = trans
	var logs raft.LogStore
	var stable raft.StableStore
	var snaps raft.SnapshotStore
	if cfg.Dir == "" {
		m := raft.NewInmemStore()
		logs, stable, snaps = m, m, raft.NewInmemSnapshotStore()
	} else {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return fmt.Errorf("coordinator %s: %w", cfg.ID, err)
		}
		bs, err := OpenBoltStore(filepath.Join(cfg.Dir, "raft.db"))
		if err != nil {
			return err
		}
		c.store = bs
		fs, err := raft.NewFileSnapshotStore(cfg.Dir, 2, out)
		if err != nil {
			return fmt.Errorf("coordinator %s: %w", cfg.ID, err)
		}
		logs, stable, snaps = bs, bs, fs
	}
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("coordinator %s: %w", cfg.ID, err)
	}
	r, err := raft.NewRaft(rc, c.fsm, logs, stable, snaps, trans)
	if err != nil {
		return fmt.Errorf("coordinator %s: %w", cfg.ID, err)
	}
	c.raft = r
	if !has {
		var servers []raft.Server
		for _, p := range cfg.Peers {
			servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
		}
		if len(servers) == 0 {
			servers = []raft.Server{{ID: rc.LocalID, Address: trans.LocalAddr()}}
		}
		// Every replica bootstraps with the same configuration; raft lets
		// all but the first fail harmlessly.
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil &&
			!errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("coordinator %s: bootstrap: %w", cfg.ID, err)
		}
	}
	return nil
}

// RaftRejected counts raft connections refused as not from a coordinator
// of the run.
func (c *Coordinator) RaftRejected() uint64 {
	if c.raftAuth == nil {
		return 0
	}
	return c.raftAuth.rejected.Load()
}

// Addr is the raft transport's address.
func (c *Coordinator) Addr() string { return string(c.trans.LocalAddr()) }

// Leading reports whether this replica currently leads.
func (c *Coordinator) Leading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lead != nil
}

// State returns the replicated control state as this replica has applied it.
func (c *Coordinator) State() ControlState { return c.fsm.State() }

// Failed is closed when the replica hit a fatal error (Err says which).
func (c *Coordinator) Failed() <-chan struct{} { return c.failed }

// Err is the first fatal error, or nil.
func (c *Coordinator) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Coordinator) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !c.closing {
		c.err = err
		c.log.Error("fatal", "err", err)
		close(c.failed)
	}
}

// Close stops leading and shuts raft down.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return nil
	}
	c.closing = true
	l := c.lead
	c.lead = nil
	c.mu.Unlock()
	if l != nil {
		l.stop()
	}
	close(c.done)
	if c.statusSub != nil {
		_ = c.statusSub.Unsubscribe()
	}
	err := c.closeRaft()
	c.wg.Wait()
	return err
}

func (c *Coordinator) closeRaft() error {
	var errs []error
	if c.raft != nil {
		in := c.RaftState()
		c.final.Store(&in)
		errs = append(errs, c.raft.Shutdown().Error())
	}
	if c.trans != nil {
		errs = append(errs, c.trans.Close())
	}
	if c.store != nil {
		errs = append(errs, c.store.Close())
	}
	return errors.Join(errs...)
}

// watch follows leadership changes.
func (c *Coordinator) watch() {
	defer c.wg.Done()
	for {
		select {
		case <-c.done:
			return
		case isLeader := <-c.notify:
			c.mu.Lock()
			old := c.lead
			c.lead = nil
			c.mu.Unlock()
			if old != nil {
				old.stop()
				c.log.Info("lost leadership", "term", old.term)
			}
			if isLeader {
				c.becomeLeader()
			}
		}
	}
}

// propose applies commands one at a time, off the per-window path.
func (c *Coordinator) propose() {
	defer c.wg.Done()
	for {
		select {
		case <-c.done:
			return
		case cmd := <-c.props:
			if err := c.raft.Apply(cmd.Encode(), 5*time.Second).Error(); err != nil {
				c.log.Debug("proposal failed", "op", cmd.Op, "err", err)
			} else if cmd.Op == OpCheckpoint {
				// Say so at once: the launcher writes the manifest from
				// the status (a resume finds the newest checkpoint).
				c.mu.Lock()
				l := c.lead
				c.mu.Unlock()
				if l != nil {
					l.status()
				}
			}
		}
	}
}

// enqueue proposes cmd asynchronously; marks are dropped when the queue is
// full (a later mark supersedes them), other commands wait.
func (c *Coordinator) enqueue(cmd Command) {
	if cmd.Op == OpMark {
		select {
		case c.props <- cmd:
		default:
		}
		return
	}
	select {
	case c.props <- cmd:
	case <-c.done:
	}
}

// apply proposes cmd and waits for it to be applied.
func (c *Coordinator) apply(cmd Command) error {
	f := c.raft.Apply(cmd.Encode(), 5*time.Second)
	if err := f.Error(); err != nil {
		return err
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return err
	}
	return nil
}

// Run starts a replica and keeps it until ctx ends, it fails, or the run
// finishes (the finish is applied: every node has its finishing grant, and
// the results go to the collector, not to the coordinators). It returns
// nil unless the replica failed.
func Run(ctx context.Context, cfg Config) error {
	c, err := Start(cfg)
	if err != nil {
		return err
	}
	if cfg.OnStart != nil {
		cfg.OnStart(c)
	}
	select {
	case <-ctx.Done():
	case <-c.Failed():
	case <-c.fsm.Finished():
		c.log.Info("run finished")
		// Say so, so that a follower that has not applied the finish
		// (this replica may exit before raft tells it the entry is
		// committed) does not wait for a leader that is gone.
		c.mu.Lock()
		l := c.lead
		c.mu.Unlock()
		if l != nil {
			l.status()
			_ = cfg.Conn.FlushTimeout(time.Second)
		}
	case <-c.over:
		c.log.Info("run finished (the last leader's status said so; it is gone)")
	}
	_ = c.Close() // shutting down raft mid-run may report closed transports
	return c.Err()
}
