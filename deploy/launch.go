// Package deploy launches a distributed run on one machine (docs/design.md §7:
// "the same processes run locally under `lockstep run --procs`"): an
// embedded NATS server (or an external one), one in-process coordinator or
// three coordinator processes with raft over loopback TCP, and P nodes as
// goroutines or as `lockstep node` child processes. It hands the
// coordinators the run's setup (NewSetup: the effective scenario, which
// every node rebuilds and checks against its digest), collects the nodes'
// results over NATS (Collector) and merges them (results.Merge).
//
// Every process it starts is gone when Run returns: children live in
// their own process groups (so a terminal's Ctrl-C reaches only the
// launcher, which then stops them), die with the launcher (Linux
// Pdeathsig), and are killed and reaped on every return path.
package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/coordinator"
	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/internal/checkpoint"
	"github.com/lockstep-sim/lockstep/internal/liveness"
	"github.com/lockstep-sim/lockstep/internal/member"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// Options describe a distributed run.
type Options struct {
	Built     *scenario.Built
	Placement *partition.Placement
	// Procs runs the nodes as child processes (else goroutines).
	Procs bool
	// NodesServe, with Procs and the embedded server, has every node
	// process run a NATS server of its own in process (whose client port
	// takes the node's own key only; NodeServerOptions), joined by routes
	// on loopback to the launcher's server and to each other: a node's
	// reports and batches go through its own server and one route, never
	// through the launcher's process (docs/decisions.md, "Node processes
	// serve").
	NodesServe bool
	// External starts neither nodes nor coordinators: they run elsewhere
	// (`lockstep node`, `lockstep coordinator`, e.g. on Kubernetes) on
	// the same NATS server and run id, and this process only collects and
	// merges the results. It needs NATS and RunID.
	External bool
	// Coordinators is 1 (in this process) or 3 (child processes, raft over
	// loopback TCP).
	Coordinators int
	// NATS is an external server's URL ("": embedded on loopback), with
	// Auth the client options (credentials, TLS) and ChildArgs the flags
	// that give child processes the same.
	NATS      string
	Auth      []nats.Option
	ChildArgs []string
	// Exe is the lockstep binary for child processes (default
	// os.Executable()), ExeEnv extra environment for them.
	Exe    string
	ExeEnv []string
	// RunID names the run on NATS (default: random).
	RunID string
	// Dir holds the coordinators' raft state (default: a temporary
	// directory, removed at the end).
	Dir string
	// NodeProfile, with Procs, makes node i write a CPU profile to
	// NodeProfile.node<i> (lockstep node --cpuprofile).
	NodeProfile string
	// MarkEvery is the coordinators' progress-mark interval in windows,
	// StatusEvery their leader's status interval (0: their defaults).
	MarkEvery   uint64
	StatusEvery time.Duration
	// Stderr receives the children's standard error.
	Stderr io.Writer
	Logger *slog.Logger
	// OnStatus, if set, sees every leader status message (progress, and
	// tests that kill the leader); OnNodeStatus every node's progress.
	OnStatus     func(wire.Status)
	OnNodeStatus func(wire.NodeStatus)
	// OnChild, if set, is called when a child process starts.
	OnChild func(Child)
	// PeerTimeout is how long a node or the coordinator leader that has
	// spoken may then stay silent, and how long the NATS server may stay
	// unreachable, before the run fails (default liveness.DefaultTimeout):
	// the grace period within which they may come back, with the run's
	// outputs unchanged. Every process of the run gets it.
	PeerTimeout time.Duration
	// JoinTimeout is how long the launcher waits for the coordinator
	// leader and every node to be heard from at all (default 60s). An
	// External run reports on Stderr what it is waiting for.
	JoinTimeout time.Duration
	// PartialWait bounds how long a failed run waits for the surviving
	// nodes' partial results (default 3s).
	PartialWait time.Duration
	// ElementKeys, for a scenario with external elements on the embedded
	// server, is a directory where the launcher writes each element's
	// key (NAME.nk, its nkey seed, mode 0600), then the server's URL
	// (url) and the run id (run): the elements log in with them and may
	// only answer on their own subjects, and only the node that steps an
	// element may call it (members.go).
	ElementKeys string
	// CheckpointEvery makes every node store its part of a checkpoint at
	// the first window boundary at or after each multiple of this virtual
	// time (0: no checkpoints), into CheckpointDir ("": the NATS
	// server's JetStream object store), where the launcher writes each
	// committed checkpoint's manifest and keeps the last CheckpointKeep
	// (docs/decisions.md, "Distributed checkpoints").
	CheckpointEvery sim.Time
	CheckpointDir   string
	CheckpointKeep  int
	// MaxRestarts bounds the rollbacks after a lost node (0: a lost node
	// fails the run). With Procs, the launcher starts a new node process
	// for a node that exits before its result is in, if a checkpoint is
	// committed and restarts remain.
	MaxRestarts int
	// Resume is the checkpoint the run starts from (nil: the start).
	Resume *wire.CheckpointRef
}

// DefaultJoinTimeout is Options.JoinTimeout's default.
const DefaultJoinTimeout = 60 * time.Second

// Child is a child process the launcher started.
type Child struct {
	Role string // "node" or "coordinator"
	Name string // "node 2", "coordinator c1"
	ID   string // raft id for coordinators
	PID  int
}

// Result is a finished distributed run.
type Result struct {
	Outputs *results.Outputs
	Results []*node.PartResult // the nodes' results, by partition
	RunID   string
	Wall    time.Duration
	Leaders []wire.Status // the first status seen of every leader term, in order
	// CoordinatorsLost counts coordinator processes that died during the run.
	CoordinatorsLost int
	// Rejected counts the messages refused as not from a member, or not
	// from the member they claim (the nodes' own counts are in their
	// results' Perf).
	Rejected node.Rejected
	// RTTMicros is the median NATS round trip the launcher measured
	// during the run, µs (node.RTTSampler).
	RTTMicros float64
	// Restarts are the rollbacks after a lost node, as raft committed
	// them; Checkpoints counts the checkpoints committed, LastCheckpoint
	// is the last one (nil: none).
	Restarts       []wire.Restart
	Checkpoints    int
	LastCheckpoint *wire.CheckpointRef
}

// A run that fails after it started returns, with its error, a Result
// whose Outputs are what it had (results.MergePartial: Complete false, the
// reason, the partitions missing) and whose Results are the parts that
// came (nil where missing).

// ErrInterrupted marks a run stopped by its context (Ctrl-C).
var ErrInterrupted = errors.New("deploy: run interrupted")

type launch struct {
	o    Options
	log  *slog.Logger
	out  *syncWriter // o.Stderr, shared by the children
	subj wire.Subjects
	url  string
	srv  *server.Server
	// route is the launcher's server's route address and routeToken the
	// run's route password, when the node processes serve (NodesServe).
	route, routeToken string
	conns             []*nats.Conn
	fatal             chan error
	tmpDir            string

	col   *Collector
	creds *member.Set   // nil: External (the members' keys are elsewhere)
	viol  *violationLog // the embedded server's refusals
	// rejectedBy is the last rejected count in each leader term's status,
	// by term; guarded by mu.
	rejectedBy map[uint64]uint64
	// abortsRejected counts aborts the launcher refused (not signed by the
	// launcher or a coordinator).
	abortsRejected atomic.Uint64
	credsDir       string // the children's credential files (0700)

	mu       sync.Mutex
	children []*child       // guarded by mu
	leaders  []wire.Status  // guarded by mu
	lost     int            // guarded by mu; coordinators that died
	closers  []func() error // guarded by mu; in-process coordinators
	// peers is when each node was last heard from, leaderAt the leader;
	// dead the partitions whose process exited; aborted the reason of an
	// abort another member published.
	peers    *liveness.Peers // guarded by mu
	leaderAt time.Time       // guarded by mu; zero until the first status
	dead     map[int]bool    // guarded by mu
	aborted  string          // guarded by mu
	// ckpt is the last checkpoint committed (from the leader's status),
	// ckpts the count, restarts the rollbacks raft has, spawned the node
	// processes started after a loss; guarded by mu.
	ckpt     *wire.CheckpointRef
	ckpts    int
	restarts []wire.Restart
	spawned  int
	finished bool // a leader said the run finished
}

type child struct {
	Child
	cmd  *exec.Cmd
	done chan struct{} // closed when reaped
	err  error         // exit status, valid after done
}

// Run runs the distributed run o describes and returns its merged result.
// On any failure it stops every process it started before returning; the
// error names the partition or coordinator that failed.
func Run(ctx context.Context, o Options) (res *Result, err error) {
	if o.Coordinators == 0 {
		o.Coordinators = 1
	}
	if o.Coordinators != 1 && o.Coordinators != 3 {
		return nil, fmt.Errorf("deploy: %d coordinators; 1 or 3 are supported", o.Coordinators)
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.PeerTimeout <= 0 {
		o.PeerTimeout = liveness.DefaultTimeout
	}
	if o.JoinTimeout <= 0 {
		o.JoinTimeout = DefaultJoinTimeout
	}
	if o.PartialWait <= 0 {
		o.PartialWait = 3 * time.Second
	}
	// While its node processes run, the launcher keeps the cores they
	// leave (launcherProcs); it gets its own back for the merge, or at
	// the latest when Run returns.
	ownProcs := func() {}
	if o.Procs {
		if n, ok := launcherProcs(o.Placement.P, runtime.NumCPU()); ok {
			var once sync.Once
			prev := runtime.GOMAXPROCS(n)
			ownProcs = func() { once.Do(func() { runtime.GOMAXPROCS(prev) }) }
			defer ownProcs()
		}
	}
	// Once the nodes are done (the first result chunk, or every result
	// in), tail gives the launcher its cores back, a GC that lets its heap
	// grow while the results are decoded and merged (resultsGC, until Run
	// returns), and starts on the flows' ideal FCTs (summary.json's
	// slowdowns), which need every switch's routes and so a route
	// compile in a launcher without a fabric (results.IdealFCT), while
	// the results arrive.
	var tailOnce sync.Once
	restoreGC := func() {}
	var ideal []sim.Time
	idealDone := make(chan struct{})
	tail := func() {
		tailOnce.Do(func() {
			ownProcs()
			restoreGC = resultsGC()
			go func() {
				defer close(idealDone)
				ideal = results.IdealFCT(o.Built.Topo, o.Built.Fabric.Transport, o.Built.Fabric.Flows)
			}()
		})
	}
	defer func() {
		tailOnce.Do(func() {}) // restoreGC as the tail set it, if it ran
		restoreGC()
	}()
	if o.External && (o.NATS == "" || o.RunID == "") {
		return nil, fmt.Errorf("deploy: an external run needs a NATS URL and a run id")
	}
	if o.RunID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		o.RunID = "run-" + hex.EncodeToString(b[:])
	}
	subj, err := wire.NewSubjects(o.RunID)
	if err != nil {
		return nil, err
	}
	su := NewSetup(o.Built, o.Placement)
	su.CheckpointEvery, su.CheckpointDir, su.MaxRestarts, su.Resume = int64(o.CheckpointEvery), o.CheckpointDir, o.MaxRestarts, o.Resume
	l := &launch{o: o, log: o.Logger, subj: subj, out: &syncWriter{w: o.Stderr}, fatal: make(chan error, 64),
		peers: liveness.NewPeers(o.Placement.P), dead: map[int]bool{}, rejectedBy: map[uint64]uint64{}}
	if !o.External {
		// Per-run member keys (internal/member): the embedded server's
		// logins, and the launcher's signature on the setup.
		ids := []string{"c0"}
		if o.Coordinators == 3 {
			ids = []string{"c1", "c2", "c3"}
		}
		if l.creds, err = member.NewSet(o.RunID, ids, o.Placement.P, o.NATS == ""); err != nil {
			return nil, err
		}
		if err := l.elementMembers(); err != nil {
			return nil, err
		}
		su.Sig = l.creds.Launcher.Sign(wire.SetupMessage(o.RunID, su))
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	// Nodes in this process outlive an interrupt until the run is over:
	// they must still hear the abort and push what they computed.
	nodeCtx, nodeCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		nodeCancel()
		cancel(errors.New("deploy: run over"))
		if cerr := l.cleanup(err != nil); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if err := l.startNATS(); err != nil {
		return nil, err
	}
	if err := l.writeElementKeys(); err != nil {
		return nil, err
	}
	nc, err := l.connect("launcher", l.member(member.Launcher))
	if err != nil {
		return nil, err
	}
	// The first result chunk says the nodes are done computing (a node
	// sends its result after the finishing grant, or when the run fails).
	if err := l.collect(nc, tail); err != nil {
		return nil, err
	}
	// The round trip is measured over the network the nodes use: its own
	// TCP connection, also to the embedded server (an in-process one
	// would measure two goroutine hand-offs, not the nodes' path).
	rttConn, err := l.rttConn()
	if err != nil {
		return nil, err
	}
	rtt := node.StartRTT(rttConn, 50*time.Millisecond)
	defer rtt.Median()
	if !o.External {
		if err := l.startCoordinators(ctx, su); err != nil {
			return nil, err
		}
		if err := l.startNodes(ctx, nodeCtx); err != nil {
			return nil, err
		}
	}
	go l.watch(ctx, nc, start)
	var failure error
	select {
	case <-l.col.Done():
		if err := doneFailure(l.col.Results()); err != nil {
			failure = l.abortReason(err)
		}
	case err := <-l.fatal:
		failure = l.abortReason(err)
	case <-ctx.Done():
		failure = fmt.Errorf("%w: %v", ErrInterrupted, context.Cause(ctx))
	}
	if failure != nil {
		return l.partial(nc, start, failure)
	}
	tail() // the nodes are done
	rs := l.col.Results()
	l.mu.Lock()
	leaders := append([]wire.Status(nil), l.leaders...)
	lost := l.lost
	l.mu.Unlock()
	parts, err := node.Parts(rs)
	if err != nil {
		return nil, err
	}
	<-idealDone
	out, err := results.MergeIdeal(o.Built, parts, ideal)
	if err != nil {
		return nil, err
	}
	res = &Result{Outputs: out, Results: rs, RunID: o.RunID, Wall: time.Since(start), Leaders: leaders,
		CoordinatorsLost: lost, Rejected: l.rejected(), RTTMicros: rtt.Median()}
	l.ckptResult(res)
	return res, nil
}

// ckptResult fills in res's checkpoint and restart fields.
func (l *launch) ckptResult(res *Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	res.Restarts = slices.Clone(l.restarts)
	res.Checkpoints, res.LastCheckpoint = l.ckpts, l.ckpt
}

// rejected gathers the refusal counts.
func (l *launch) rejected() node.Rejected {
	r := node.Rejected{Launcher: l.col.Rejected() + l.abortsRejected.Load()}
	if l.viol != nil {
		r.NATS = l.viol.n.Load()
	}
	l.mu.Lock()
	for _, n := range l.rejectedBy {
		r.Coordinators += n
	}
	l.mu.Unlock()
	for _, res := range l.col.Results() {
		if res != nil {
			r.Nodes += res.Perf.Rejected
		}
	}
	return r
}

// member returns the credentials of the member called name (nil without
// member keys).
func (l *launch) member(name string) *member.Creds {
	if l.creds == nil {
		return nil
	}
	for _, c := range l.creds.All() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// doneFailure is why a run whose every node has pushed its result failed,
// or nil when none is partial. A node that failed on its own (an external
// element) says why in its result, and every node may have pushed one
// before the Failures watcher passed the first reason on, so a reason is
// looked for first; without one another member aborted the run.
func doneFailure(rs []*node.PartResult) error {
	for _, r := range rs {
		if r.Partial() && r.Reason != "" {
			return fmt.Errorf("partition %d: %s", r.Part.Partition, r.Reason)
		}
	}
	for _, r := range rs {
		if r.Partial() {
			return fmt.Errorf("partition %d: aborted", r.Part.Partition)
		}
	}
	return nil
}

// abortReason prefers the reason of an abort another member published
// (a leader that saw a node go silent) to err, which may be a consequence
// (a node process that exited because of the abort).
func (l *launch) abortReason(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.aborted != "" {
		return errors.New(l.aborted)
	}
	return err
}

// partial ends a run that failed with failure: it tells every member
// (abort, with the reason), waits up to PartialWait for the parts of the
// nodes still alive (they push them on abort), and returns what it has,
// merged by results.MergePartial, with failure.
func (l *launch) partial(nc *nats.Conn, start time.Time, failure error) (*Result, error) {
	reason := oneLine(failure.Error())
	if errors.Is(failure, ErrInterrupted) {
		reason = "interrupted"
	}
	l.mu.Lock()
	if l.aborted == "" {
		l.aborted = reason
	}
	l.mu.Unlock()
	if data, err := wire.NewEncoder().Control(wire.TypeAbort, l.member(member.Launcher).Abort(reason)); err == nil && nc.IsConnected() {
		_ = nc.Publish(l.subj.Abort(), data)
		_ = nc.FlushTimeout(time.Second)
	}
	alive := max(4*liveness.Interval(l.o.PeerTimeout, 250*time.Millisecond), 200*time.Millisecond)
	deadline := time.Now().Add(l.o.PartialWait)
	for nc.IsConnected() && time.Now().Before(deadline) {
		now := time.Now()
		waiting := false
		l.mu.Lock()
		for i := 0; i < l.o.Placement.P; i++ {
			if !l.col.Has(i) && !l.dead[i] && l.peers.Seen(i) && l.peers.Since(i, now) < alive {
				waiting = true
			}
		}
		l.mu.Unlock()
		if !waiting {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling against the deadline above
	}
	rs := l.col.Results()
	var parts []*results.Part
	for _, r := range rs {
		if r != nil {
			parts = append(parts, &r.Part)
		}
	}
	out := results.MergePartial(l.o.Built, l.o.Placement.P, parts, reason)
	l.mu.Lock()
	leaders := append([]wire.Status(nil), l.leaders...)
	lost := l.lost
	l.mu.Unlock()
	res := &Result{Outputs: out, Results: rs, RunID: l.o.RunID, Wall: time.Since(start), Leaders: leaders,
		CoordinatorsLost: lost}
	l.ckptResult(res)
	return res, failure
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// watch is the launcher's deadline check, every heartbeat interval until
// ctx ends: the NATS server must come back within PeerTimeout; the leader
// and every node must be heard from within JoinTimeout (an External run
// says on Stderr what it waits for); once heard from, the leader must
// speak again within PeerTimeout until the first result comes, and every
// node until its result is in. The time the launcher itself is cut off
// counts against NATS, not against the others.
func (l *launch) watch(ctx context.Context, nc *nats.Conn, start time.Time) {
	o := l.o
	every := liveness.Interval(o.PeerTimeout, 250*time.Millisecond)
	tk := time.NewTicker(every)
	defer tk.Stop()
	conn := liveness.NewConn(nc)
	say := min(time.Second, max(o.JoinTimeout/4, 10*time.Millisecond))
	var said time.Time
	for {
		var now time.Time
		select {
		case <-ctx.Done():
			return
		case now = <-tk.C:
		}
		up, _, err := conn.Check(now, o.PeerTimeout)
		if err != nil {
			l.failf("%v", err)
			return
		}
		l.mu.Lock()
		if !up {
			l.peers.Pause(now)
			if !l.leaderAt.IsZero() {
				l.leaderAt = now
			}
			l.mu.Unlock()
			continue
		}
		var missing []int
		for _, i := range l.peers.Unseen() {
			if !l.col.Has(i) {
				missing = append(missing, i)
			}
		}
		var silent []int
		for _, i := range l.peers.Silent(now, o.PeerTimeout) {
			if !l.col.Has(i) && !l.dead[i] {
				silent = append(silent, i)
			}
		}
		noLeader := l.leaderAt.IsZero()
		leaderGone := !noLeader && now.Sub(l.leaderAt) > o.PeerTimeout
		l.mu.Unlock()
		anyResult := false
		for i := 0; i < o.Placement.P && !anyResult; i++ {
			anyResult = l.col.Has(i)
		}
		if noLeader && anyResult {
			noLeader = false
		}
		if noLeader || len(missing) > 0 {
			var what []string
			if noLeader {
				what = append(what, "the coordinator leader")
			}
			if len(missing) > 0 {
				what = append(what, "partitions "+liveness.List(missing))
			}
			w := strings.Join(what, " and ")
			if now.Sub(start) > o.JoinTimeout {
				l.failf("gave up after %v waiting for %s of run %s on %s", o.JoinTimeout, w, o.RunID, l.url)
				return
			}
			if o.External && now.Sub(said) >= say {
				said = now
				fmt.Fprintf(l.out, "lockstep: waiting for %s of run %s on %s (%.0fs of %v)\n", w, o.RunID, l.url,
					now.Sub(start).Seconds(), o.JoinTimeout)
			}
		}
		if len(silent) > 0 && l.canRestart(ctx) {
			// A hung node process is a lost node: killed, its exit
			// starts a new one (restartNode), and the run rolls back.
			for _, i := range silent {
				l.killNode(i, 0)
				l.mu.Lock()
				l.peers.Heard(i, now) // the new process gets the timeout again
				l.mu.Unlock()
			}
			silent = nil
		}
		switch {
		case leaderGone && !anyResult:
			l.failf("coordinator: no status from the leader for %v", o.PeerTimeout)
			return
		case len(silent) > 0:
			l.failf("%v", liveness.SilentError(silent[0], o.PeerTimeout))
			return
		}
	}
}

// elementMembers gives the scenario's external elements keys of their
// own when the run's server is the embedded one (which only lets its
// members in): ElementKeys must say where to put them.
func (l *launch) elementMembers() error {
	b, pl := l.o.Built, l.o.Placement
	if len(b.External) == 0 || l.o.NATS != "" {
		if l.o.ElementKeys != "" {
			return fmt.Errorf("deploy: element keys are for external elements on the embedded NATS server (no --nats)")
		}
		return nil
	}
	if l.o.ElementKeys == "" {
		return fmt.Errorf("deploy: %d external elements on the embedded NATS server need a directory for their keys (--element-keys)", len(b.External))
	}
	byPart := make([][]string, pl.P)
	for _, x := range b.External {
		byPart[pl.Part[x.Node]] = append(byPart[pl.Part[x.Node]], x.Element)
	}
	return l.creds.AddElements(byPart)
}

// writeElementKeys writes the elements' keys, then the server's URL and
// the run id, into ElementKeys (mode 0700; url last: once it is there,
// everything is), and says so on Stderr.
func (l *launch) writeElementKeys() error {
	if l.creds == nil || len(l.creds.Elements) == 0 {
		return nil
	}
	dir := l.o.ElementKeys
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("deploy: element keys: %w", err)
	}
	var names []string
	for _, x := range l.o.Built.External {
		names = append(names, x.Element)
		c := l.creds.Elements[x.Element]
		if err := os.WriteFile(filepath.Join(dir, x.Element+".nk"), []byte(c.Seed+"\n"), 0o600); err != nil {
			return fmt.Errorf("deploy: element keys: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "run"), []byte(l.o.RunID+"\n"), 0o600); err != nil {
		return fmt.Errorf("deploy: element keys: %w", err)
	}
	// The url is the sign that everything is there: it appears whole
	// (renamed into place), so a reader polling for it never sees it empty.
	if err := results.WriteFileAtomic(filepath.Join(dir, "url"), func(w io.Writer) error {
		_, err := io.WriteString(w, l.url+"\n")
		return err
	}); err != nil {
		return fmt.Errorf("deploy: element keys: %w", err)
	}
	fmt.Fprintf(l.out, "lockstep: external elements %s of run %s: serve them on %s with their keys in %s "+
		"(extswitch -nats %s -run %s -element NAME -nkey %s/NAME.nk)\n", strings.Join(names, ","), l.o.RunID, l.url, dir,
		l.url, l.o.RunID, dir)
	return nil
}

func (l *launch) startNATS() error {
	if l.o.NATS != "" {
		l.url = l.o.NATS
		return nil
	}
	// Only the run's members may connect, each with its own permissions
	// (members.go).
	opts, err := ServerOptions(l.o.RunID, l.creds)
	if err != nil {
		return err
	}
	if l.o.Procs && l.o.NodesServe {
		// The nodes' servers join this one by a route on loopback, with
		// a password of the run's: no other server can.
		var tok [24]byte
		if _, err := rand.Read(tok[:]); err != nil {
			return err
		}
		l.routeToken = hex.EncodeToString(tok[:])
		opts.Cluster = RouteCluster(l.routeToken)
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("deploy: embedded NATS: %w", err)
	}
	l.viol = &violationLog{}
	srv.SetLoggerV2(l.viol, false, false, false)
	go srv.Start()
	if !ServerReady(srv, 10*time.Second) {
		srv.Shutdown()
		return fmt.Errorf("deploy: embedded NATS did not start")
	}
	l.srv = srv
	l.url = srv.ClientURL()
	if l.routeToken != "" {
		a := srv.ClusterAddr()
		if a == nil {
			srv.Shutdown()
			return fmt.Errorf("deploy: embedded NATS: no route listener")
		}
		l.route = fmt.Sprintf("nats://127.0.0.1:%d", a.Port)
	}
	return nil
}

// ServerReady waits up to d for srv to accept connections. The server's
// own ReadyForConnections sleeps 25 ms between its checks, which is most
// of a short run's start-up; this checks every millisecond (each check
// looks for up to 100 µs).
func ServerReady(srv *server.Server, d time.Duration) bool {
	end := time.Now().Add(d)
	for {
		if srv.ReadyForConnections(100 * time.Microsecond) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// connect opens a NATS connection for a component of this process, as
// member c (nil: with the operator's credentials only), with extra
// options after the run's; to the embedded server, if any, in process.
func (l *launch) connect(name string, c *member.Creds, extra ...nats.Option) (*nats.Conn, error) {
	return l.dial(name, c, l.srv != nil, extra...)
}

// rttConn is the connection the round trip is sampled on: over the
// network, as node processes connect, even to the embedded server.
func (l *launch) rttConn() (*nats.Conn, error) {
	return l.dial("launcher rtt", l.member(member.Launcher), false)
}

// dial is connect, in process (to the embedded server) or over the
// network (TCP, as the node processes connect).
func (l *launch) dial(name string, c *member.Creds, inProcess bool, extra ...nats.Option) (*nats.Conn, error) {
	opts := append(append(append([]nats.Option{nats.Name("lockstep " + name)}, liveness.ClientOptions()...), extra...), l.o.Auth...)
	if c != nil {
		mo, err := c.Options()
		if err != nil {
			return nil, err
		}
		opts = append(opts, mo...)
	}
	if inProcess {
		opts = append(opts, nats.InProcessServer(l.srv))
	}
	var nc *nats.Conn
	var err error
	if l.srv == nil {
		// A server of the deployment's (--nats): it may start with the
		// run (docker compose, a Kubernetes apply), so wait for it as the
		// nodes and coordinators do, within the join timeout.
		nc, err = liveness.ConnectWait(l.url, l.o.JoinTimeout, l.o.Stderr, "launcher", opts...)
	} else {
		nc, err = nats.Connect(l.url, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("deploy: %s: connect to NATS %s: %w", name, l.url, err)
	}
	l.mu.Lock()
	l.conns = append(l.conns, nc)
	l.mu.Unlock()
	return nc, nil
}

func (l *launch) failf(format string, args ...any) {
	select {
	case l.fatal <- fmt.Errorf(format, args...):
	default:
	}
}

// collect receives the nodes' results and the leaders' status.
func (l *launch) collect(nc *nats.Conn, first func()) error {
	col, err := NewCollector(nc, l.o.RunID, l.o.Placement.P, l.member(member.Launcher), first)
	if err != nil {
		return err
	}
	l.col = col
	go func() {
		if err := <-col.Errors(); err != nil {
			l.failf("%v", err)
		}
	}()
	go func() {
		// A node that failed on its own (an external element) says why in
		// the partial result it pushed, before its process exits.
		if err := <-col.Failures(); err != nil {
			l.failf("%v", err)
		}
	}()
	_, err = nc.Subscribe(l.subj.Status(), func(msg *nats.Msg) {
		m, err := wire.Decode(msg.Data)
		if err != nil || m.Kind != wire.KindControl || m.Control.Type != wire.TypeStatus {
			return
		}
		var st wire.Status
		if m.Control.UnmarshalBody(&st) != nil {
			return
		}
		l.mu.Lock()
		l.leaderAt = time.Now()
		if n := len(l.leaders); n == 0 || l.leaders[n-1].Term < st.Term {
			l.leaders = append(l.leaders, st)
		}
		l.rejectedBy[st.Term] = max(l.rejectedBy[st.Term], st.Rejected)
		l.finished = l.finished || st.Phase == barrier.PhaseFinished.String()
		var hung []int
		if len(st.Restarts) > len(l.restarts) {
			for _, r := range st.Restarts[len(l.restarts):] {
				if r.Silent {
					hung = append(hung, r.Partition)
				}
			}
			l.restarts = slices.Clone(st.Restarts)
		}
		var committed *wire.CheckpointRef
		if c := st.Checkpoint; c != nil && (l.ckpt == nil || c.Window > l.ckpt.Window) {
			if l.o.Resume == nil || c.Window != l.o.Resume.Window {
				committed = c
			}
			l.ckpt = c
		}
		l.ckpts = max(l.ckpts, int(st.Checkpoints))
		l.mu.Unlock()
		for _, i := range hung {
			l.killNode(i, l.o.PeerTimeout/2)
		}
		if committed != nil {
			l.committed(committed)
		}
		if l.o.OnStatus != nil {
			l.o.OnStatus(st)
		}
	})
	if err != nil {
		return err
	}
	_, err = nc.Subscribe(l.subj.NodeStatuses(), func(msg *nats.Msg) {
		m, err := wire.Decode(msg.Data)
		if err != nil || m.Kind != wire.KindControl || m.Control.Type != wire.TypeNodeStatus {
			return
		}
		var st wire.NodeStatus
		if m.Control.UnmarshalBody(&st) != nil {
			return
		}
		if from, ok := l.subj.Sender(msg.Subject); !ok || from != st.Partition {
			return // not from the node it names: neither a heartbeat nor progress
		}
		l.mu.Lock()
		l.peers.Heard(st.Partition, time.Now())
		l.mu.Unlock()
		if l.o.OnNodeStatus != nil {
			l.o.OnNodeStatus(st)
		}
	})
	if err != nil {
		return err
	}
	_, err = nc.Subscribe(l.subj.Abort(), func(msg *nats.Msg) {
		m, err := wire.Decode(msg.Data)
		if err != nil || m.Kind != wire.KindControl || m.Control.Type != wire.TypeAbort {
			return
		}
		var a wire.Abort
		if m.Control.UnmarshalBody(&a) != nil {
			return
		}
		if !l.member(member.Launcher).TrustsAbort(&a) {
			l.abortsRejected.Add(1)
			return
		}
		l.mu.Lock()
		first := l.aborted == ""
		if first {
			l.aborted = oneLine(a.Reason)
		}
		l.mu.Unlock()
		if first {
			l.failf("%s", oneLine(a.Reason))
		}
	})
	if err != nil {
		return err
	}
	return nc.Flush()
}

// freePorts returns n loopback TCP ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

func (l *launch) startCoordinators(ctx context.Context, su *wire.Setup) error {
	if l.o.Coordinators == 1 {
		nc, err := l.connect("coordinator", l.member(member.Coordinator("c0")))
		if err != nil {
			return err
		}
		c, err := coordinator.Start(coordinator.Config{Conn: nc, Run: l.o.RunID, Setup: su, ID: "c0",
			Creds:     l.member(member.Coordinator("c0")),
			MarkEvery: l.o.MarkEvery, StatusEvery: l.o.StatusEvery, PeerTimeout: l.o.PeerTimeout, Logger: l.log})
		if err != nil {
			return err
		}
		go func() {
			select {
			case <-c.Failed():
				// Its verdict on a node names the partition; say who else
				// failed.
				if m := c.Err().Error(); strings.HasPrefix(m, "partition ") || strings.HasPrefix(m, "coordinator ") {
					l.failf("%s", m)
				} else {
					l.failf("coordinator c0: %s", m)
				}
			case <-ctx.Done():
			}
		}()
		l.mu.Lock()
		l.closers = append(l.closers, c.Close)
		l.mu.Unlock()
		return nil
	}
	dir := l.o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "lockstep-raft-*")
		if err != nil {
			return err
		}
		l.tmpDir = d
		dir = d
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	var peers []string
	for i, p := range ports {
		peers = append(peers, fmt.Sprintf("c%d=127.0.0.1:%d", i+1, p))
	}
	// Every replica serves the setup this process built (the effective
	// scenario, after every edit), not the scenario file.
	setup := filepath.Join(dir, "setup.msgpack")
	if err := WriteSetup(setup, su); err != nil {
		return err
	}
	for i, p := range ports {
		id := fmt.Sprintf("c%d", i+1)
		args := []string{"coordinator", "--setup", setup, "--nats", l.url, "--run", l.o.RunID, "--id", id,
			"--raft-addr", fmt.Sprintf("127.0.0.1:%d", p), "--peers", strings.Join(peers, ","),
			"--raft-dir", filepath.Join(dir, id), "--peer-timeout", l.o.PeerTimeout.String(),
			"--join-timeout", l.o.JoinTimeout.String()}
		if l.o.MarkEvery > 0 {
			args = append(args, "--mark-every", strconv.FormatUint(l.o.MarkEvery, 10))
		}
		if l.o.StatusEvery > 0 {
			args = append(args, "--status-every", l.o.StatusEvery.String())
		}
		if err := l.spawn(ctx, "coordinator", "coordinator "+id, id, l.member(member.Coordinator(id)), append(args, l.o.ChildArgs...)); err != nil {
			return err
		}
	}
	return nil
}

// startNodes starts the nodes: processes tied to ctx, or goroutines that run
// under nodeCtx, which an interrupt (ctx) does not end.
func (l *launch) startNodes(ctx, nodeCtx context.Context) error {
	for i := 0; i < l.o.Placement.P; i++ {
		if l.o.Procs {
			if err := l.spawnNode(ctx, i); err != nil {
				return err
			}
			continue
		}
		creds := l.member(member.Node(i))
		nc, err := l.connect(fmt.Sprintf("node %d", i), creds, node.ConnOptions()...)
		if err != nil {
			return err
		}
		go func() {
			err := node.Run(nodeCtx, node.Config{Conn: nc, Run: l.o.RunID, Partition: i, Creds: creds, Logger: l.log,
				StatusEvery: l.o.StatusEvery, PeerTimeout: l.o.PeerTimeout})
			if err != nil && ctx.Err() == nil && nodeCtx.Err() == nil {
				l.failf("partition %d: %v", i, err)
			}
		}()
	}
	return nil
}

// spawnNode starts node i's process.
func (l *launch) spawnNode(ctx context.Context, i int) error {
	args := []string{"node", "--nats", l.url}
	if l.route != "" {
		// Its own server, joined to this one and (by gossip) to the
		// other nodes': it waits for a route to each of them.
		args = []string{"node", "--route", l.route, "--cluster-size", strconv.Itoa(l.o.Placement.P + 1)}
	}
	args = append(args, "--run", l.o.RunID, "--partition", strconv.Itoa(i), "--peer-timeout", l.o.PeerTimeout.String())
	if l.o.StatusEvery > 0 {
		args = append(args, "--status-every", l.o.StatusEvery.String())
	}
	if l.o.NodeProfile != "" {
		args = append(args, "--cpuprofile", fmt.Sprintf("%s.node%d", l.o.NodeProfile, i))
	}
	return l.spawn(ctx, "node", fmt.Sprintf("node %d", i), "", l.member(member.Node(i)), append(args, l.o.ChildArgs...))
}

// restartNode starts a new process for partition part, whose process c
// exited before its result was in, when the run can go on without it: a
// checkpoint is committed and restarts remain (the leader then rolls every
// node back to it when the new process asks for the setup). It returns
// false when the run cannot.
func (l *launch) restartNode(ctx context.Context, part int, c *child) bool {
	l.mu.Lock()
	ok := l.restartable(ctx)
	if ok {
		l.spawned++
	}
	l.mu.Unlock()
	if !ok {
		return false
	}
	fmt.Fprintf(l.out, "lockstep: partition %d: node process %d exited (%v); starting a new one, which resumes from the last checkpoint\n",
		part, c.PID, exitText(c.err))
	if err := l.spawnNode(ctx, part); err != nil {
		l.failf("partition %d: restart: %v", part, err)
	}
	return true
}

// canRestart says a lost node process can be replaced now.
func (l *launch) canRestart(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.restartable(ctx)
}

// restartable is canRestart; precondition: mu held. After the finish
// there is nothing to roll back to: the others are done (a node lost while
// it sends its result fails the run).
func (l *launch) restartable(ctx context.Context) bool {
	return l.o.Procs && l.ckpt != nil && l.spawned < l.o.MaxRestarts && l.aborted == "" && !l.finished && ctx.Err() == nil
}

// killNode kills partition i's node process, found silent (by the
// launcher, or by the leader, which rolled the run back without it): its
// exit starts a new one (restartNode). It leaves alone a process heard from
// within the last silentFor (a new one already started).
func (l *launch) killNode(i int, silentFor time.Duration) {
	name := fmt.Sprintf("node %d", i)
	l.mu.Lock()
	var c *child
	for _, k := range l.children {
		if k.Name == name {
			c = k // the newest
		}
	}
	heard := l.peers.Since(i, time.Now())
	l.mu.Unlock()
	if c == nil || heard < silentFor {
		return
	}
	select {
	case <-c.done:
	default:
		fmt.Fprintf(l.out, "lockstep: partition %d: node process %d silent; killing it\n", i, c.PID)
		_ = syscall.Kill(-c.PID, syscall.SIGKILL)
	}
}

// committed records checkpoint ref, which raft committed: with a
// checkpoint directory, its manifest goes next to the nodes' parts (so
// that `lockstep resume` reads it), and the older checkpoints beyond
// CheckpointKeep are removed (with JetStream, nothing to do here).
func (l *launch) committed(ref *wire.CheckpointRef) {
	if l.o.CheckpointDir != "" {
		st := checkpoint.Store{Dir: l.o.CheckpointDir, Keep: max(l.o.CheckpointKeep, 1)}
		if _, err := st.Commit(node.Manifest(ref, l.o.Built.Digest(), l.o.Placement.P)); err != nil {
			fmt.Fprintf(l.out, "lockstep: checkpoint of window %d: manifest not written: %v\n", ref.Window, err)
		}
	}
}

// spawn starts a child process in its own process group. Its member
// credentials c go in a file only this user can read, named in its
// environment (member.Env), never in its argv.
func (l *launch) spawn(ctx context.Context, role, name, id string, creds *member.Creds, args []string) error {
	exe := l.o.Exe
	if exe == "" {
		e, err := os.Executable()
		if err != nil {
			return fmt.Errorf("deploy: cannot find the lockstep binary: %w", err)
		}
		exe = e
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), l.o.ExeEnv...)
	if role == "node" {
		if n, ok := nodeProcs(l.o.Placement.P, runtime.NumCPU()); ok {
			cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(n))
		}
		if l.routeToken != "" {
			cmd.Env = append(cmd.Env, RouteTokenEnv+"="+l.routeToken)
		}
	}
	if creds != nil {
		path, err := l.credsFile(creds)
		if err != nil {
			return err
		}
		cmd.Env = append(cmd.Env, member.Env+"="+path)
	}
	pw := &prefixWriter{w: l.out, prefix: name + ": "}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("deploy: start %s: %w", name, err)
	}
	c := &child{Child: Child{Role: role, Name: name, ID: id, PID: cmd.Process.Pid}, cmd: cmd, done: make(chan struct{})}
	l.mu.Lock()
	l.children = append(l.children, c)
	l.mu.Unlock()
	if l.o.OnChild != nil {
		l.o.OnChild(c.Child)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
		if ctx.Err() != nil {
			return
		}
		switch role {
		case "node":
			var part int
			fmt.Sscanf(name, "node %d", &part)
			if !l.col.Has(part) && l.restartNode(ctx, part, c) {
				return
			}
			if !l.col.Has(part) || c.err != nil {
				l.mu.Lock()
				l.dead[part] = true
				cut := len(l.conns) > 0 && !l.conns[0].IsConnected()
				l.mu.Unlock()
				if cut {
					// A node that gave up on NATS: the launcher's own
					// deadline on NATS gives the reason, soon.
					return
				}
				l.failf("partition %d: node process %d exited: %v", part, c.Child.PID, exitText(c.err))
			}
		case "coordinator":
			if c.err == nil {
				return // it saw the run finish
			}
			l.mu.Lock()
			l.lost++
			lost := l.lost
			l.mu.Unlock()
			if lost > (l.o.Coordinators-1)/2 {
				l.failf("%s (pid %d) exited: %v; %d of %d coordinators lost, no raft quorum", name, c.Child.PID,
					exitText(c.err), lost, l.o.Coordinators)
			} else {
				l.log.Warn("coordinator exited; the others continue", "name", name, "err", exitText(c.err))
			}
		}
	}()
	return nil
}

// resultsGCHeap and resultsGCPercent: resultsGC's bound on the live heap
// and the GC percent it sets under it.
const (
	resultsGCHeap    = 256 << 20
	resultsGCPercent = 400
)

// resultsGC sets the GC percent to resultsGCPercent while the nodes'
// results are decoded and merged, unless GOGC is set or the live heap is
// over resultsGCHeap, and returns what sets it back. A launcher whose
// nodes run elsewhere holds no fabric, so its heap is small (about 20
// MB on the k=32 permutation) next to what decoding and merging the
// results allocate (a few times the results' bytes): at the default
// percent that ran five GC cycles in 80 ms, one with 17 ms of assists on
// the decoding goroutines. At most resultsGCHeap times the percent more
// memory. The percent is the process's: runs in one process (tests) share
// it, and the last to restore puts back what the first found.
func resultsGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[0].Value.Uint64() > resultsGCHeap {
		return func() {}
	}
	gcRaised.Lock()
	if gcRaised.n == 0 {
		gcRaised.prev = debug.SetGCPercent(resultsGCPercent)
	}
	gcRaised.n++
	gcRaised.Unlock()
	return sync.OnceFunc(func() {
		gcRaised.Lock()
		defer gcRaised.Unlock()
		if gcRaised.n--; gcRaised.n == 0 {
			debug.SetGCPercent(gcRaised.prev)
		}
	})
}

// gcRaised counts the runs between resultsGC and its restore, and keeps
// the percent the first of them found.
var gcRaised struct {
	sync.Mutex
	n, prev int
}

// nodeProcs is the GOMAXPROCS of each of p node processes on a machine of
// cpus cores: its share of the cores (at least 1), unless GOMAXPROCS is set
// already (ok false). The nodes of one machine all compute at once in a
// window; a Go runtime that schedules more threads than its share (a GC
// mark worker is a quarter of them) only preempts the other nodes, whose
// windows then end later, and everyone waits for the slowest.
func nodeProcs(p, cpus int) (int, bool) {
	if os.Getenv("GOMAXPROCS") != "" || p <= 0 {
		return 0, false
	}
	return max(1, cpus/p), true
}

// launcherProcs is the GOMAXPROCS of a launcher whose p node processes
// share its machine of cpus cores: the cores their shares (nodeProcs)
// leave, at least 1, unless GOMAXPROCS is set (ok false). While the nodes
// run, the launcher only relays their messages (the embedded NATS server)
// and hosts the coordinators: a runtime with more threads than that wakes
// idle threads to look for work on every message, CPU the nodes lose
// (k=16 in 2 processes on 2 cores: 375–459 µs of the launcher's CPU a
// window with 2 threads, 270–332 with 1; docs/decisions.md).
func launcherProcs(p, cpus int) (int, bool) {
	n, ok := nodeProcs(p, cpus)
	if !ok {
		return 0, false
	}
	return max(1, cpus-p*n), true
}

// credsFile writes c into the launcher's private directory.
func (l *launch) credsFile(c *member.Creds) (string, error) {
	if l.credsDir == "" {
		d, err := os.MkdirTemp("", "lockstep-creds-*") // mode 0700
		if err != nil {
			return "", err
		}
		l.credsDir = d
	}
	path := filepath.Join(l.credsDir, c.Name+".json")
	if err := member.Write(path, c); err != nil {
		return "", fmt.Errorf("deploy: credentials for %s: %w", c.Name, err)
	}
	return path, nil
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0 before it finished"
	}
	return err.Error()
}

// cleanup stops everything: it tells every process of the run to stop,
// closes the in-process components, kills the children's process groups
// and waits until each is reaped, then shuts NATS down.
func (l *launch) cleanup(failed bool) error {
	l.mu.Lock()
	conns := l.conns
	children := l.children
	closers := l.closers
	l.mu.Unlock()
	if failed && len(conns) > 0 && conns[0].IsConnected() {
		enc := wire.NewEncoder()
		a := l.member(member.Launcher).Abort("the launcher stopped the run")
		if data, err := enc.Control(wire.TypeAbort, a); err == nil {
			_ = conns[0].Publish(l.subj.Abort(), data)
			_ = conns[0].FlushTimeout(time.Second)
		}
	}
	// Nodes exit by themselves after a successful run (after their last
	// result chunk is acknowledged); give them a moment. Coordinators never
	// do. Then SIGTERM, and SIGKILL after a grace period.
	if !failed {
		wait := time.NewTimer(5 * time.Second)
	nodes:
		for _, c := range children {
			if c.Role != "node" {
				continue
			}
			select {
			case <-c.done:
			case <-wait.C:
				break nodes
			}
		}
		wait.Stop()
	}
	for _, c := range children {
		select {
		case <-c.done:
		default:
			// SIGCONT too: a stopped process acts on SIGTERM only once
			// it runs again.
			_ = syscall.Kill(-c.PID, syscall.SIGTERM)
			_ = syscall.Kill(-c.PID, syscall.SIGCONT)
		}
	}
	grace := time.NewTimer(3 * time.Second)
	defer grace.Stop()
	for _, c := range children {
		select {
		case <-c.done:
		case <-grace.C:
			for _, k := range children {
				_ = syscall.Kill(-k.PID, syscall.SIGKILL)
			}
			<-c.done
		}
	}
	var errs []error
	for _, cl := range closers {
		if err := cl(); err != nil && !failed {
			l.log.Debug("close", "err", err)
		}
	}
	for _, nc := range conns {
		nc.Close()
	}
	if l.srv != nil {
		l.srv.Shutdown()
		l.srv.WaitForShutdown()
	}
	if l.tmpDir != "" {
		errs = append(errs, os.RemoveAll(l.tmpDir))
	}
	if l.credsDir != "" {
		errs = append(errs, os.RemoveAll(l.credsDir))
	}
	return errors.Join(errs...)
}

// syncWriter serialises writes from several children.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// prefixWriter prefixes every line a child writes.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	mid    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		if !p.mid {
			if _, err := io.WriteString(p.w, p.prefix); err != nil {
				return 0, err
			}
		}
		i := strings.IndexByte(string(b), '\n')
		if i < 0 {
			p.mid = true
			_, err := p.w.Write(b)
			return n, err
		}
		if _, err := p.w.Write(b[:i+1]); err != nil {
			return 0, err
		}
		p.mid = false
		b = b[i+1:]
	}
	return n, nil
}
