package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/internal/checkpoint"
	"github.com/lockstep-sim/lockstep/internal/liveness"
	"github.com/lockstep-sim/lockstep/internal/member"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/sim"
)

// ResultChunkBytes is the size of the pieces a node's result is sent in,
// under NATS's default 1 MiB payload limit.
const ResultChunkBytes = 512 << 10

// Config configures a node process.
type Config struct {
	// Conn is the NATS connection; the node does not close it.
	Conn *nats.Conn
	// Run is the run id; Partition this node's partition.
	Run       string
	Partition int
	// SetupTimeout bounds the wait for a coordinator to answer the setup
	// request (0: until ctx ends).
	SetupTimeout time.Duration
	// RequestTimeout bounds one request (default 2s); requests are retried.
	RequestTimeout time.Duration
	// StatusEvery is how often the node publishes its progress (default
	// 250ms); it is also its heartbeat (at most PeerTimeout/4 apart).
	StatusEvery time.Duration
	// PeerTimeout is how long the coordinator leader or the NATS server
	// may be silent or unreachable before the node gives up, pushes what
	// it has (PartialResult) and fails (default liveness.DefaultTimeout).
	PeerTimeout time.Duration
	// Creds are this node's member credentials (internal/member; nil: the
	// run has none, e.g. a node started by hand on an operator's server).
	// With them the node accepts only a setup the launcher signed, signs
	// its result chunks, and (unless the server enforces who may publish
	// on the abort subject) only signed aborts.
	Creds *member.Creds
	// Logger (nil: discard).
	Logger *slog.Logger
	// Store keeps the checkpoint parts (nil: the setup's CheckpointDir,
	// else the server's JetStream object store).
	Store PartStore
	// Observe, if set, sees the node's Progress at every heartbeat once
	// it has joined the run, and when it finishes (metrics, readiness).
	Observe func(Progress)
	// OwnProcess says the node is alone in its process (lockstep node):
	// its result then has the process's CPU time, involuntary context
	// switches and run-queue wait over the run (NodePerf.CPUSeconds,
	// Preempted, RunqSeconds), which tell a node's compute slowed by other
	// processes on its cores from its own.
	OwnProcess bool
	// Interest, when the node's server is one of several joined by
	// routes, says whether that server knows of a subscription to a
	// subject (its own clients' or, through a route, another server's).
	// After the setup the node waits, within SetupTimeout, until its
	// server knows every peer's subscriptions before it publishes: a
	// subscription reaches the other servers over a route, after the peer
	// subscribed, and a batch published before it arrives would be lost.
	// Nil: one server, which knows every subscription once its client has
	// flushed.
	Interest func(subject string) bool
	// Routes, when the node runs its own server, is how many other
	// servers that server had routes to when the node joined (summary.json
	// per_node routes; 0: the node is a client of a server elsewhere).
	Routes int
}

// ErrAborted marks a run that another process abandoned.
var ErrAborted = errors.New("node: run aborted")

// inboxLen is the capacity of the channel every subscription of a node
// delivers to. NATS's reader puts a message straight into it (no
// subscription goroutine, no lock: one hand-off less per message than a
// callback), and drops it if the channel is full. A node holds at most the
// messages of the window after the one it runs (each peer's report and
// batches; peers are never two windows ahead), far below this; a message
// lost anyway is sent again on the leader's resync request.
const inboxLen = 1 << 16

// ConnOptions are the NATS options of a connection that is one node's
// alone (Config.Conn): the server does not echo the node's own messages
// back to it. Every window a node publishes its report on the subject all
// nodes hear (report.*); without NoEcho the server writes it back and the
// node reads, decodes and drops it (errOwn), a message in and out per
// window on the path of the barrier. A connection several nodes share
// (tests) must not have it: they would not hear each other.
func ConnOptions() []nats.Option { return []nats.Option{nats.NoEcho()} }

// Run is a node process's life (docs/design.md §3, §7): subscribe, fetch the
// setup from a coordinator, build the partition, then loop: take grants,
// batches and resync requests; whenever the accepted window can run, run
// it, publish its batches and its report; when the finishing grant comes,
// send the result and return. It returns an error if the run is aborted,
// ctx ends, or a message breaks causality.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("node", cfg.Partition)
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 2 * time.Second
	}
	if cfg.StatusEvery <= 0 {
		cfg.StatusEvery = 250 * time.Millisecond
	}
	if cfg.PeerTimeout <= 0 {
		cfg.PeerTimeout = liveness.DefaultTimeout
	}
	subj, err := wire.NewSubjects(cfg.Run)
	if err != nil {
		return err
	}
	nc := cfg.Conn
	q := make(chan *nats.Msg, inboxLen)
	var subs []*nats.Subscription
	defer func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}()
	// Its own batches last: a server that knows of that subscription
	// knows of the others (a route carries them in order; Interest).
	for _, s := range []string{subj.Reports(), subj.Resync(), subj.Abort(), subj.Status(), subj.Rollback(), subj.Batches(cfg.Partition)} {
		sub, err := nc.ChanSubscribe(s, q)
		if err != nil {
			return fmt.Errorf("node %d: subscribe %s: %w", cfg.Partition, s, err)
		}
		subs = append(subs, sub)
	}
	if err := nc.FlushTimeout(cfg.RequestTimeout); err != nil {
		return fmt.Errorf("node %d: %w", cfg.Partition, err)
	}

	start := time.Now()
	var ru0 Usage // the process's, when the node is alone in it
	ruOK := false
	if cfg.OwnProcess {
		ru0, ruOK = ProcessUsage()
	}
	perf := NodePerf{Routes: uint64(max(cfg.Routes, 0))}
	su, err := fetchSetup(ctx, nc, subj, cfg, &perf.Rejected)
	if err != nil {
		return err
	}
	b, pl, err := FromSetup(su)
	if err != nil {
		return fmt.Errorf("node %d: %w", cfg.Partition, err)
	}
	ConnectElements(b, nc, cfg.Run, ElementTimeout(cfg.PeerTimeout)) // the scenario's external elements, if any
	// A peer run (coordinator/barrier package doc, "Peers"): the node
	// steps every node's report into a replica of the barrier and takes
	// its grants from it; the leader follows from the node's statuses.
	core, err := NewPeerCore(b, pl, cfg.Partition)
	if err != nil {
		return fmt.Errorf("node %d: %w", cfg.Partition, err)
	}
	if cfg.Interest != nil {
		if err := awaitPeers(ctx, cfg, subj, pl.P); err != nil {
			return err
		}
	}
	// epoch is the run's epoch this node is in (wire.Batch.Epoch).
	epoch := su.Epoch
	log.Info("partition built", "elements", pl.Elements[cfg.Partition], "term", su.Term, "lookahead", pl.Lookahead)

	enc := wire.NewEncoder()
	publish := func(s string, data []byte) error {
		if err := nc.Publish(s, data); err != nil {
			if errors.Is(err, nats.ErrReconnectBufExceeded) {
				// Lost in an outage: a resend request asks again.
				log.Warn("publish lost while reconnecting", "subject", s)
				return nil
			}
			return fmt.Errorf("node %d: publish %s: %w", cfg.Partition, s, err)
		}
		return nil
	}
	// fail ends the run for this node: it pushes what it has to the
	// collector (bounded by RequestTimeout), unless it was stopped from
	// outside (then nobody collects) or NATS is away, and returns err.
	fail := func(err error) error {
		if ctx.Err() == nil && nc.IsConnected() {
			pctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
			res := core.PartialResult()
			if xe := (*fabric.ExternalError)(nil); errors.As(err, &xe) {
				res.Reason = err.Error() // the launcher reports it (deploy.Collector.Failures)
			}
			if perr := sendResult(pctx, nc, subj, cfg, res); perr != nil {
				log.Warn("partial result not sent", "err", perr)
			}
			cancel()
		}
		return err
	}
	statusEvery := liveness.Interval(cfg.PeerTimeout, cfg.StatusEvery)
	conn := liveness.NewConn(nc)
	leaderAt := time.Now()
	var batches, batchBytes uint64 // published, for Observe
	var statusMu sync.Mutex        // heartbeat runs from the result sender's goroutine too
	heartbeat := func() {
		statusMu.Lock()
		defer statusMu.Unlock()
		w, _ := core.Window()
		if cfg.Observe != nil {
			cfg.Observe(progress(core, w, perf, batches, batchBytes, false))
		}
		st := wire.NodeStatus{Partition: cfg.Partition, Window: w, Start: int64(core.Start()), Events: core.F.Engine().Stats.Events,
			Now: int64(core.F.Engine().Now()), Epoch: epoch}
		if core.Over() {
			st.Finished, st.Reason = true, uint8(core.Final().Reason)
		}
		if data, err := enc.Control(wire.TypeNodeStatus, st); err == nil {
			_ = nc.Publish(subj.NodeStatus(cfg.Partition), data)
		}
	}
	// tick is the node's deadline check, every heartbeat interval: the
	// NATS server must come back and the leader must speak within
	// PeerTimeout; the time the node itself is cut off does not count
	// against the leader.
	tick := func(now time.Time) error {
		up, _, err := conn.Check(now, cfg.PeerTimeout)
		if err != nil {
			return fmt.Errorf("node %d: %w", cfg.Partition, err)
		}
		if !up {
			leaderAt = now
			return nil
		}
		if d := now.Sub(leaderAt); d > cfg.PeerTimeout {
			return fmt.Errorf("node %d: no status from the coordinator leader for %v", cfg.Partition, cfg.PeerTimeout)
		}
		heartbeat()
		return nil
	}
	// The per-window send path encodes into one reused buffer (Publish
	// copies it) on subjects computed once.
	batchSubj := make([]string, pl.P)
	for j := range batchSubj {
		batchSubj[j] = subj.Batch(j, cfg.Partition)
	}
	reportSubj := subj.Report(cfg.Partition)
	var ebuf []byte
	var encodeT, publishT time.Duration // of the window being sent
	sendReport := func(r *barrier.Report, busy time.Duration) error {
		t0 := time.Now()
		ebuf = wire.AppendReport(ebuf[:0], r, uint64(busy.Nanoseconds()), epoch)
		t1 := time.Now()
		err := publish(reportSubj, ebuf)
		encodeT, publishT = encodeT+t1.Sub(t0), publishT+time.Since(t1)
		return err
	}
	sendBatches := func(bs []wire.Batch) error {
		for k := range bs {
			bt := bs[k]
			bt.Epoch = epoch
			t0 := time.Now()
			ebuf = wire.AppendBatch(ebuf[:0], &bt)
			t1 := time.Now()
			batches, batchBytes = batches+1, batchBytes+uint64(len(ebuf))
			err := publish(batchSubj[bt.To], ebuf)
			encodeT, publishT = encodeT+t1.Sub(t0), publishT+time.Since(t1)
			if err != nil {
				return err
			}
		}
		return nil
	}
	heard0 := make([]bool, pl.P) // a window-0 report heard from each peer
	var busy peerBusy
	ownBusy := make(map[uint64]time.Duration, 2) // by window, the last two

	// Checkpoints (docs/decisions.md, "Distributed checkpoints"): at the
	// first window boundary at or after each multiple of CheckpointEvery
	// of virtual time (every node sees the same grants, so all agree
	// without a message) the node stores its part and says so on
	// ckpt.<i>; the leader commits the checkpoint once every part is in.
	// Per-window messages carry the epoch; a rollback starts a new one.
	every := sim.Time(su.CheckpointEvery)
	store := cfg.Store
	if store == nil && su.CheckpointDir != "" {
		store = &DirStore{Store: checkpoint.Store{Dir: su.CheckpointDir}}
	}
	if store == nil && (every > 0 || su.Restore != nil) {
		if store, err = NewJetStreamStore(ctx, nc, cfg.Run, cfg.RequestTimeout); err != nil {
			return fmt.Errorf("node %d: checkpoints: %w", cfg.Partition, err)
		}
	}
	ckw := checkpoint.NewWriter("", 1)
	nextCk := nextCheckpoint(0, every)
	fresh := true // core is built and not set up yet
	save := func() error {
		t0 := time.Now()
		w, _ := core.Window()
		data, err := core.EncodeCheckpoint(ckw, b.Digest())
		if err == nil {
			err = store.Put(ctx, w, cfg.Partition, data)
		}
		if err != nil {
			return fmt.Errorf("node %d: checkpoint of window %d (%s): %w", cfg.Partition, w, store.Where(w, cfg.Partition), err)
		}
		st := wire.CheckpointStored{Partition: cfg.Partition, Epoch: epoch, Window: w, TimePS: int64(core.End()),
			Part: WirePart(checkpoint.NewPart(PartName(cfg.Partition), data))}
		msg, err := enc.Control(wire.TypeCheckpointStored, st)
		if err != nil {
			return err
		}
		nextCk = nextCheckpoint(core.End(), every)
		perf.Checkpoints++
		perf.CheckpointBytes += uint64(len(data))
		perf.CheckpointSeconds += time.Since(t0).Seconds()
		log.Info("checkpoint stored", "window", w, "bytes", len(data), "seconds", time.Since(t0).Seconds())
		return publish(subj.Checkpoint(cfg.Partition), msg)
	}
	// resend publishes the node's last reports and the batches another
	// node may still need (a resync request, a restore). Copies are
	// harmless.
	resend := func() error {
		for _, r := range core.LastReports() {
			if err := sendReport(&r, 0); err != nil {
				return err
			}
		}
		sent := core.Sent()
		log.Info("resent reports and batches", "batches", len(sent), "epoch", epoch)
		return sendBatches(sent)
	}
	// restore puts the node at checkpoint ref in epoch e: a freshly built
	// partition (the one built at start, if unused) into which its part is
	// decoded; then it says so (its status carries the epoch) and resends
	// what its peers may need.
	restore := func(ref *wire.CheckpointRef, e uint64) error {
		t0 := time.Now()
		if store == nil {
			return fmt.Errorf("node %d: no checkpoint store to restore window %d from", cfg.Partition, ref.Window)
		}
		data, err := store.Get(ctx, ref, cfg.Partition)
		if err != nil {
			return fmt.Errorf("node %d: restore: %w", cfg.Partition, err)
		}
		c := core
		if !fresh {
			if c, err = NewPeerCore(b, pl, cfg.Partition); err != nil {
				return fmt.Errorf("node %d: %w", cfg.Partition, err)
			}
		}
		if _, err := c.Setup(); err != nil {
			return err
		}
		if _, err := c.RestoreCheckpoint(store.Where(ref.Window, cfg.Partition), data, b.Digest()); err != nil {
			return fmt.Errorf("node %d: restore: %w", cfg.Partition, err)
		}
		if w, _ := c.Window(); w != ref.Window {
			return fmt.Errorf("node %d: restore: %s holds window %d, not %d", cfg.Partition, store.Where(ref.Window, cfg.Partition), w, ref.Window)
		}
		core, epoch, fresh = c, e, false
		nextCk = nextCheckpoint(core.End(), every)
		for i := range heard0 {
			heard0[i] = true // no window 0 to republish
		}
		perf.Restores++
		log.Info("restored checkpoint", "window", ref.Window, "epoch", e, "seconds", time.Since(t0).Seconds())
		heartbeat()
		return resend()
	}
	if su.Restore != nil {
		if err := restore(su.Restore, su.Epoch); err != nil {
			return err
		}
	} else {
		fresh = false
		out, err := core.Setup()
		if err != nil {
			return err
		}
		if err := sendBatches(out.Batches); err != nil {
			return err
		}
		if err := sendReport(&out.Report, 0); err != nil {
			return err
		}
	}

	waitFrom := time.Now()
	var decodeT time.Duration // since waitFrom
	var aheadT time.Duration  // Core.RunAhead's time before waitFrom
	nextStatus := waitFrom.Add(statusEvery)
	hb := time.NewTicker(statusEvery)
	defer hb.Stop()
	heartbeat()
	// runReady runs every window the core may run now, publishing each
	// one's batches and report, and stores a checkpoint at the boundaries
	// that call for one.
	runReady := func() error {
		for core.Runnable() {
			if ctx.Err() != nil {
				// Stopped from outside: do not start another window.
				return fmt.Errorf("node %d: %w", cfg.Partition, context.Cause(ctx))
			}
			t0 := time.Now()
			w, _ := core.Window()
			wait := t0.Sub(waitFrom) - decodeT
			perf.WaitSeconds += wait.Seconds()
			perf.MaxWait = max(perf.MaxWait, wait.Seconds())
			perf.DecodeSeconds += decodeT.Seconds()
			if w > 1 {
				imb := busy.max(w-1) - ownBusy[w-1]
				perf.ImbalanceSeconds += min(max(0, imb), max(0, wait)).Seconds()
			}
			out, err := core.Run()
			if err != nil {
				return fmt.Errorf("node %d: %w", cfg.Partition, err)
			}
			// The window's compute includes its first phase, run
			// ahead while the node waited (aheadT).
			compute := time.Since(t0) + aheadT
			perf.ComputeSeconds += compute.Seconds()
			perf.Windows++
			encodeT, publishT = 0, 0
			if err := sendBatches(out.Batches); err != nil {
				return err
			}
			// The report's busy time covers the batches' encoding and
			// publishing; the report's own are too small to matter.
			if err := sendReport(&out.Report, compute+encodeT+publishT); err != nil {
				return err
			}
			// Publish only buffers; the connection's flusher goroutine
			// writes. Let it run now: if this report completes the
			// window, the next one is runnable at once, and a node with
			// one thread (GOMAXPROCS=1, deploy's default for a machine's
			// share) would otherwise hold its report through a whole
			// window of compute while its peers wait for it.
			runtime.Gosched()
			ownBusy[w] = compute + encodeT + publishT
			delete(ownBusy, w-2)
			perf.EncodeSeconds += encodeT.Seconds()
			perf.PublishSeconds += publishT.Seconds()
			if core.End() >= nextCk && !core.Over() {
				if err := save(); err != nil {
					return err
				}
			}
			// Two-phase windows: while the peers' reports and batches
			// come, run what none of them can reach (Core.RunAhead),
			// after the report and any checkpoint of this boundary.
			// Its time counts in the next window's busy time.
			var ahead time.Duration
			if core.TwoPhase() && !core.Runnable() {
				// The report must be on the wire before this
				// compute: yield until the flusher wrote it (a few
				// times at most; with GOMAXPROCS=1 it runs then).
				for i := 0; i < 4; i++ {
					if n, err := nc.Buffered(); err != nil || n == 0 {
						break
					}
					runtime.Gosched()
				}
				t1 := time.Now()
				if n := core.RunAhead(); n > 0 {
					ahead = time.Since(t1)
					perf.AheadSeconds += ahead.Seconds()
					perf.AheadEvents += n
					perf.AheadWindows++
				}
			}
			aheadT = ahead
			waitFrom, decodeT = time.Now(), 0
			perf.RunSeconds += waitFrom.Sub(t0).Seconds()
			if waitFrom.After(nextStatus) {
				nextStatus = waitFrom.Add(statusEvery)
				heartbeat()
			}
		}
		return nil
	}
	if err := runReady(); err != nil {
		return fail(err)
	}
	var buf []*nats.Msg
	var m wire.Message
	for !core.Over() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d: %w", cfg.Partition, context.Cause(ctx))
		case now := <-hb.C:
			if err := tick(now); err != nil {
				return fail(err)
			}
			continue
		case msg := <-q:
			buf = append(buf, msg)
		}
	drain:
		for len(buf) < inboxLen {
			select {
			case msg := <-q:
				buf = append(buf, msg)
			default:
				break drain
			}
		}
		for _, msg := range buf {
			perf.Messages++
			t0 := time.Now()
			var into *wire.Batch
			if isBatch(msg.Data) {
				into = core.BatchBuffer()
			}
			err := wire.DecodeInto(msg.Data, &m, into)
			if err == nil {
				err = attributed(subj, cfg, msg.Subject, &m)
			}
			if errors.Is(err, errOwn) {
				perf.Echoes++
				continue
			}
			if err != nil {
				// Not from the member it claims (or not a message at
				// all): dropped and counted, never acted on.
				perf.Rejected++
				log.Warn("message rejected", "subject", msg.Subject, "err", err)
				continue
			}
			switch m.Kind {
			case wire.KindGrant, wire.KindControl:
			case wire.KindReport, wire.KindBatch, wire.KindResync:
				if m.Epoch != epoch {
					// From before a rollback, or from a peer that
					// restored before this node heard of the rollback
					// (it resends once the leader asks, in the epoch).
					perf.Stale++
					if m.Kind == wire.KindBatch {
						core.recycle(m.Batch)
					}
					continue
				}
			}
			switch m.Kind {
			case wire.KindReport:
				r := m.Report
				busy.add(r.Window, time.Duration(m.Busy))
				if r.Window == 0 && !heard0[r.Node] {
					// The republish rule: the peer may have published
					// before this node subscribed, and the other way
					// round (barrier package doc, "Peers").
					heard0[r.Node] = true
					w0 := core.SetupReport()
					if err := sendReport(&w0, 0); err != nil {
						return err
					}
				}
				if err := core.Step(*r); err != nil {
					return fail(fmt.Errorf("node %d: %w", cfg.Partition, err))
				}
			case wire.KindBatch:
				if err := core.DeliverOwned(m.Batch); err != nil {
					return fmt.Errorf("node %d: %w", cfg.Partition, err)
				}
			case wire.KindResync:
				// The leader saw no progress (messages lost in a NATS
				// outage, or it fell behind, or a rollback's nodes are
				// all restored): resend the last reports and the batches
				// another node may still need.
				leaderAt = time.Now()
				perf.Resends++
				if err := resend(); err != nil {
					return err
				}
			case wire.KindControl:
				switch m.Control.Type {
				case wire.TypeAbort:
					var a wire.Abort
					if err := m.Control.UnmarshalBody(&a); err != nil || !cfg.Creds.TrustsAbort(&a) {
						perf.Rejected++
						log.Warn("abort rejected", "from", a.From, "err", err)
						continue
					}
					return fail(fmt.Errorf("node %d: %w: %s", cfg.Partition, ErrAborted, a.Reason))
				case wire.TypeRollback:
					var r wire.Rollback
					if err := m.Control.UnmarshalBody(&r); err != nil || !cfg.Creds.TrustsRollback(&r) {
						perf.Rejected++
						log.Warn("rollback rejected", "from", r.From, "err", err)
						continue
					}
					leaderAt = time.Now()
					if r.Epoch <= epoch {
						continue // a repeat, or an old one
					}
					log.Info("rolling back", "epoch", r.Epoch, "window", r.To.Window, "lost", r.Lost)
					if err := restore(&r.To, r.Epoch); err != nil {
						return fail(err)
					}
				case wire.TypeStatus:
					leaderAt = time.Now()
				}
			case wire.KindGrant: // attributed refuses them: grants are the replica's
			}
			decodeT += time.Since(t0)
			if err := runReady(); err != nil {
				return fail(err)
			}
			if core.Over() {
				break
			}
		}
		clear(buf)
		buf = buf[:0]
	}
	// Say so at once: the leader learns the end from the nodes'
	// statuses (it hears no reports).
	heartbeat()
	perf.WallSeconds = time.Since(start).Seconds()
	if ru1, ok := ProcessUsage(); ok && ruOK {
		u := ru1.Since(ru0)
		perf.CPUSeconds, perf.Preempted, perf.RunqSeconds = u.CPU.Seconds(), u.Preempted, u.Runq.Seconds()
	}
	res := core.Result()
	res.Perf = perf
	if cfg.Observe != nil {
		w, _ := core.Window()
		cfg.Observe(progress(core, w, perf, batches, batchBytes, true))
	}
	log.Info("finished", "windows", res.Core.Windows, "events", res.Part.Stats.Events, "reason", res.Final.Reason,
		"duplicates", core.Duplicates(), "ahead_events", perf.AheadEvents, "ahead_windows", perf.AheadWindows)
	// Keep the heartbeat going while the result is sent, so the launcher
	// can tell a slow upload from a dead node; give up if NATS stays away.
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		for {
			select {
			case <-sctx.Done():
				return
			case now := <-hb.C:
				if _, _, err := conn.Check(now, cfg.PeerTimeout); err != nil {
					cancel(fmt.Errorf("node %d: %w", cfg.Partition, err))
					return
				}
				heartbeat()
			}
		}
	}()
	if err := storeResult(sctx, nc, cfg, su, res); err == nil {
		log.Info("result stored in JetStream", "bucket", ResultBucket(cfg.Run))
	} else if !errors.Is(err, errNoJetStream) {
		log.Warn("result not stored in JetStream (request/reply goes on)", "err", err)
	}
	return sendResult(sctx, nc, subj, cfg, res)
}

// awaitPeers waits, within the setup timeout (as fetchSetup), until the node's server
// knows every other node's subscriptions (Config.Interest): a peer's
// subscription to this node's batches, which each node makes last (a
// route carries a server's subscriptions in order, so the peer's others,
// to the reports among them, are known before it).
func awaitPeers(ctx context.Context, cfg Config, subj wire.Subjects, p int) error {
	if cfg.SetupTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.SetupTimeout)
		defer cancel()
	}
	for {
		missing := -1
		for j := 0; j < p && missing < 0; j++ {
			if j != cfg.Partition && !cfg.Interest(subj.Batch(j, cfg.Partition)) {
				missing = j
			}
		}
		if missing < 0 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("node %d: its NATS server has not heard of node %d's subscriptions: %w", cfg.Partition, missing, context.Cause(ctx))
		}
		time.Sleep(time.Millisecond) // polling the server's interest against the setup timeout
	}
}

// attributed checks that a message came from the member it claims: each
// kind arrives only on its own subject (which only its sender may publish
// on, when the server enforces the members' permissions), and a batch's
// From and To are the ones its subject names.
func attributed(subj wire.Subjects, cfg Config, subject string, m *wire.Message) error {
	switch m.Kind {
	case wire.KindResync:
		if subject == subj.Resync() {
			return nil
		}
	case wire.KindBatch:
		from, ok := subj.Sender(subject)
		if ok && subject == subj.Batch(cfg.Partition, from) && int(m.Batch.From) == from && int(m.Batch.To) == cfg.Partition {
			return nil
		}
		return fmt.Errorf("batch from %d to %d on %s", m.Batch.From, m.Batch.To, subject)
	case wire.KindControl:
		switch {
		case subject == subj.Abort() && m.Control.Type == wire.TypeAbort:
			return nil
		case subject == subj.Status() && m.Control.Type == wire.TypeStatus:
			// The leader's status is its heartbeat (internal/liveness).
			return nil
		case subject == subj.Rollback() && m.Control.Type == wire.TypeRollback:
			return nil
		}
	case wire.KindReport:
		// Every node hears every report (report.*); node i publishes on
		// report.i only (the server's permissions).
		from, ok := subj.Sender(subject)
		switch {
		case ok && from == cfg.Partition && m.Report.Node == from:
			return errOwn
		case ok && subject == subj.Report(from) && m.Report.Node == from && from != cfg.Partition:
			return nil
		}
		return fmt.Errorf("report of node %d on %s", m.Report.Node, subject)
	case wire.KindGrant:
		// Grants come from the node's own replica of the barrier.
	}
	return fmt.Errorf("%v message on %s", m.Kind, subject)
}

// errOwn marks the node's own report, heard back on report.*.
var errOwn = errors.New("own report")

// isBatch says the message's kind (its first value after the array
// header) is a batch, so it is decoded into a recycled one.
func isBatch(data []byte) bool { return len(data) > 1 && data[1] == byte(wire.KindBatch) }

// ErrSetupNotSigned marks a setup the launcher did not sign.
var ErrSetupNotSigned = errors.New("node: setup not signed by the run's launcher")

// fetchSetup asks the coordinators for the setup until one answers with a
// setup the launcher signed (when the node has credentials); replies that
// are not are counted in rejected.
func fetchSetup(ctx context.Context, nc *nats.Conn, subj wire.Subjects, cfg Config, rejected *uint64) (*wire.Setup, error) {
	if cfg.SetupTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.SetupTimeout)
		defer cancel()
	}
	var refused error // the last setup refused as not the launcher's
	for {
		su, err := fetchSetupOnce(ctx, nc, subj, cfg)
		if refused != nil && err != nil && ctx.Err() != nil {
			// The wait ran out while asking again: the reason the
			// node has no setup is still the refused one.
			return nil, refused
		}
		if !errors.Is(err, ErrSetupNotSigned) {
			return su, err
		}
		refused = err
		*rejected++
		if ctx.Err() != nil {
			return nil, err // err wraps ErrSetupNotSigned
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err // err wraps ErrSetupNotSigned
		case <-t.C:
		}
	}
}

func fetchSetupOnce(ctx context.Context, nc *nats.Conn, subj wire.Subjects, cfg Config) (*wire.Setup, error) {
	req, err := wire.NewEncoder().Control(wire.TypeSetupRequest, wire.SetupRequest{Partition: cfg.Partition})
	if err != nil {
		return nil, err
	}
	m, err := request(ctx, nc, subj.Setup(), req, cfg.RequestTimeout)
	if err != nil {
		return nil, fmt.Errorf("node %d: setup: %w", cfg.Partition, err)
	}
	if m.Control.Type != wire.TypeSetup {
		var e wire.ErrorReply
		_ = m.Control.UnmarshalBody(&e)
		return nil, fmt.Errorf("node %d: setup refused: %s", cfg.Partition, e.Msg)
	}
	var su wire.Setup
	if err := m.Control.UnmarshalBody(&su); err != nil {
		return nil, err
	}
	// The digest the node checks (FromSetup) is the launcher's only if
	// the launcher signed it.
	if c := cfg.Creds; c != nil && !member.Verify(c.LauncherKey, wire.SetupMessage(c.Run, &su), su.Sig) {
		return nil, fmt.Errorf("node %d: %w", cfg.Partition, ErrSetupNotSigned)
	}
	return &su, nil
}

// request sends a control request and retries it (no responders, timeout)
// until a control reply comes or ctx ends.
func request(ctx context.Context, nc *nats.Conn, subject string, data []byte, each time.Duration) (wire.Message, error) {
	backoff := 2 * time.Millisecond
	for {
		rctx, cancel := context.WithTimeout(ctx, each)
		msg, err := nc.RequestWithContext(rctx, subject, data)
		cancel()
		if err == nil {
			m, err := wire.Decode(msg.Data)
			if err != nil {
				return wire.Message{}, err
			}
			if m.Kind != wire.KindControl {
				return wire.Message{}, fmt.Errorf("reply of kind %v", m.Kind)
			}
			return m, nil
		}
		if ctx.Err() != nil {
			return wire.Message{}, fmt.Errorf("%w (last error: %v)", context.Cause(ctx), err)
		}
		if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
			return wire.Message{}, err
		}
		// A coordinator or the collector is not up yet: wait and retry.
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return wire.Message{}, context.Cause(ctx)
		case <-t.C:
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// sendResult sends the encoded result in chunks, each acknowledged.
func sendResult(ctx context.Context, nc *nats.Conn, subj wire.Subjects, cfg Config, res *PartResult) error {
	data, err := EncodeResult(res)
	if err != nil {
		return fmt.Errorf("node %d: encode result: %w", cfg.Partition, err)
	}
	enc := wire.NewEncoder()
	total := (len(data) + ResultChunkBytes - 1) / ResultChunkBytes
	for i := 0; i < total; i++ {
		chunk := data[i*ResultChunkBytes : min(len(data), (i+1)*ResultChunkBytes)]
		ch := wire.ResultChunk{Partition: cfg.Partition, Index: i, Total: total, Data: chunk}
		if c := cfg.Creds; c != nil {
			ch.Sig = c.Sign(wire.ChunkMessage(c.Run, &ch))
		}
		req, err := enc.Control(wire.TypeResultChunk, ch)
		if err != nil {
			return err
		}
		m, err := request(ctx, nc, subj.Result(cfg.Partition), req, cfg.RequestTimeout)
		if err != nil {
			return fmt.Errorf("node %d: send result: %w", cfg.Partition, err)
		}
		if m.Control.Type != wire.TypeAck {
			var e wire.ErrorReply
			_ = m.Control.UnmarshalBody(&e)
			return fmt.Errorf("node %d: result refused: %s", cfg.Partition, e.Msg)
		}
	}
	return nil
}
