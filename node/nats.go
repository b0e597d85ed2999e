package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/liveness"
	"github.com/lockstep-sim/lockstep/internal/wire"
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
	// Logger (nil: discard).
	Logger *slog.Logger
	// Observe, if set, sees the node's Progress at every heartbeat once
	// it has joined the run, and when it finishes (metrics, readiness).
	Observe func(Progress)
}

// ErrAborted marks a run that another process abandoned.
var ErrAborted = errors.New("node: run aborted")

// inbox is an unbounded queue filled by NATS callbacks and drained by the
// node's loop, so that a slow window never makes NATS drop a message.
type inbox struct {
	mu     sync.Mutex
	msgs   []*nats.Msg // guarded by mu
	signal chan struct{}
}

func (q *inbox) push(m *nats.Msg) {
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *inbox) take(buf []*nats.Msg) []*nats.Msg {
	q.mu.Lock()
	buf = append(buf[:0], q.msgs...)
	clear(q.msgs)
	q.msgs = q.msgs[:0]
	q.mu.Unlock()
	return buf
}

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
	q := &inbox{signal: make(chan struct{}, 1)}
	var subs []*nats.Subscription
	defer func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}()
	for _, s := range []string{subj.Batch(cfg.Partition), subj.Grant(), subj.Resync(), subj.Abort(), subj.Status()} {
		sub, err := nc.Subscribe(s, q.push)
		if err != nil {
			return fmt.Errorf("node %d: subscribe %s: %w", cfg.Partition, s, err)
		}
		_ = sub.SetPendingLimits(-1, -1)
		subs = append(subs, sub)
	}
	if err := nc.FlushTimeout(cfg.RequestTimeout); err != nil {
		return fmt.Errorf("node %d: %w", cfg.Partition, err)
	}

	start := time.Now()
	su, err := fetchSetup(ctx, nc, subj, cfg)
	if err != nil {
		return err
	}
	b, pl, err := FromSetup(su)
	if err != nil {
		return fmt.Errorf("node %d: %w", cfg.Partition, err)
	}
	core, err := NewCore(b, pl, cfg.Partition, su.Term)
	if err != nil {
		return fmt.Errorf("node %d: %w", cfg.Partition, err)
	}
	log.Info("partition built", "elements", pl.Elements[cfg.Partition], "term", su.Term, "lookahead", pl.Lookahead)

	enc := wire.NewEncoder()
	publish := func(s string, data []byte) error {
		if err := nc.Publish(s, data); err != nil {
			if errors.Is(err, nats.ErrReconnectBufExceeded) {
				// Lost in an outage: the leader's resync asks again.
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
			if perr := sendResult(pctx, nc, subj, cfg, res); perr != nil {
				log.Warn("partial result not sent", "err", perr)
			}
			cancel()
		}
		return err
	}
	every := liveness.Interval(cfg.PeerTimeout, cfg.StatusEvery)
	conn := liveness.NewConn(nc)
	leaderAt := time.Now()
	var perf NodePerf
	var batches, batchBytes uint64 // published, for Observe
	heartbeat := func() {
		w, _ := core.Window()
		if cfg.Observe != nil {
			cfg.Observe(progress(core, w, perf, batches, batchBytes, false))
		}
		st := wire.NodeStatus{Partition: cfg.Partition, Window: w, Events: core.F.Engine().Stats.Events,
			Now: int64(core.F.Engine().Now())}
		if data, err := enc.Control(wire.TypeNodeStatus, st); err == nil {
			_ = nc.Publish(subj.NodeStatus(), data)
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
	send := func(out Output) error {
		for k := range out.Batches {
			bt := &out.Batches[k]
			data := enc.Batch(bt)
			batches, batchBytes = batches+1, batchBytes+uint64(len(data))
			if err := publish(subj.Batch(int(bt.To)), data); err != nil {
				return err
			}
		}
		return publish(subj.Report(), enc.Report(&out.Report))
	}
	out, err := core.Setup()
	if err != nil {
		return err
	}
	if err := send(out); err != nil {
		return err
	}

	waitFrom := time.Now()
	nextStatus := waitFrom.Add(every)
	hb := time.NewTicker(every)
	defer hb.Stop()
	heartbeat()
	var buf []*nats.Msg
	for !core.Over() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d: %w", cfg.Partition, context.Cause(ctx))
		case now := <-hb.C:
			if err := tick(now); err != nil {
				return fail(err)
			}
			continue
		case <-q.signal:
		}
		buf = q.take(buf)
		for _, msg := range buf {
			perf.Messages++
			m, err := wire.Decode(msg.Data)
			if err != nil {
				return fmt.Errorf("node %d: %s: %w", cfg.Partition, msg.Subject, err)
			}
			switch m.Kind {
			case wire.KindGrant:
				leaderAt = time.Now()
				if ok, why := core.Accept(*m.Grant); !ok {
					log.Debug("grant ignored", "epoch", m.Grant.Window, "term", m.Grant.Term, "why", why)
				}
			case wire.KindBatch:
				if err := core.Deliver(m.Batch); err != nil {
					return fmt.Errorf("node %d: %w", cfg.Partition, err)
				}
			case wire.KindResync:
				// A new leader, or a leader that saw no progress (messages
				// lost in a NATS outage): resend the last reports and the
				// batches another node may still need. Copies are harmless.
				leaderAt = time.Now()
				rs := core.Resend(m.Resync.Term)
				for _, r := range rs {
					if err := publish(subj.Report(), enc.Report(&r)); err != nil {
						return err
					}
				}
				if len(rs) > 0 {
					sent := core.Sent()
					for k := range sent {
						if err := publish(subj.Batch(int(sent[k].To)), enc.Batch(&sent[k])); err != nil {
							return err
						}
					}
					log.Info("resent reports and batches", "term", m.Resync.Term, "batches", len(sent))
				}
			case wire.KindControl:
				switch m.Control.Type {
				case wire.TypeAbort:
					var a wire.Abort
					_ = m.Control.UnmarshalBody(&a)
					return fail(fmt.Errorf("node %d: %w: %s", cfg.Partition, ErrAborted, a.Reason))
				case wire.TypeStatus:
					leaderAt = time.Now()
				}
			case wire.KindReport: // reports go to the coordinator, never to a node
			}
			for core.Runnable() {
				t0 := time.Now()
				wait := t0.Sub(waitFrom).Seconds()
				perf.WaitSeconds += wait
				perf.MaxWait = max(perf.MaxWait, wait)
				out, err := core.Run()
				if err != nil {
					return fmt.Errorf("node %d: %w", cfg.Partition, err)
				}
				if err := send(out); err != nil {
					return err
				}
				waitFrom = time.Now()
				perf.RunSeconds += waitFrom.Sub(t0).Seconds()
				if waitFrom.After(nextStatus) {
					nextStatus = waitFrom.Add(every)
					heartbeat()
				}
			}
			if core.Over() {
				break
			}
		}
		clear(buf)
	}
	perf.WallSeconds = time.Since(start).Seconds()
	res := core.Result()
	res.Perf = perf
	if cfg.Observe != nil {
		w, _ := core.Window()
		cfg.Observe(progress(core, w, perf, batches, batchBytes, true))
	}
	log.Info("finished", "windows", res.Core.Windows, "events", res.Part.Stats.Events, "reason", res.Final.Reason,
		"duplicates", core.Duplicates())
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

// fetchSetup asks the coordinators for the setup until one answers.
func fetchSetup(ctx context.Context, nc *nats.Conn, subj wire.Subjects, cfg Config) (*wire.Setup, error) {
	if cfg.SetupTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.SetupTimeout)
		defer cancel()
	}
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
	return &su, nil
}

// request sends a control request and retries it (no responders, timeout)
// until a control reply comes or ctx ends.
func request(ctx context.Context, nc *nats.Conn, subject string, data []byte, each time.Duration) (wire.Message, error) {
	backoff := 20 * time.Millisecond
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
		req, err := enc.Control(wire.TypeResultChunk, wire.ResultChunk{Partition: cfg.Partition, Index: i, Total: total, Data: chunk})
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
