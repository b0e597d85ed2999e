package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/deploy"
	"github.com/lockstep-sim/lockstep/internal/member"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
)

// procArgs returns process pid's argv and its environment (Linux /proc:
// what ps shows, and what only its owner can read).
func procArgs(t *testing.T, pid int) (argv string, env map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		t.Skipf("no /proc/%d/cmdline: %v", pid, err)
	}
	e, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		t.Skipf("no /proc/%d/environ: %v", pid, err)
	}
	env = map[string]string{}
	for _, kv := range strings.Split(string(e), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return strings.ReplaceAll(string(b), "\x00", " "), env
}

// flag returns the value after name in a ps-style argv.
func flag(argv, name string) string {
	f := strings.Fields(argv)
	for i := range f[:len(f)-1] {
		if f[i] == name {
			return f[i+1]
		}
	}
	return ""
}

// attack is one forgery: it reports how it was refused, or an error if it
// was not.
type attack struct {
	name string
	// where the refusal is counted: "nats", "launcher", "coordinators",
	// "nodes" ("": dropped without counting)
	counted string
	do      func() error
}

// TestRunDistributed_Issue10_ForgeriesRejected runs a scenario as child
// processes (2 nodes, 3 coordinators) on the embedded server and, mid-run, attacks it as a local
// process that read the children's argv (run id, NATS URL) and, for the
// stolen-credential cases, node 1's credentials file: every forgery of
// issue 10 is refused and counted, the run exits cleanly, and its files
// are byte-identical to an undisturbed single-process run. It also checks
// that no child's argv shows a secret.
func TestRunDistributed_Issue10_ForgeriesRejected(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	// randomYAML with flows 8 times larger: the run lasts long enough
	// (thousands of windows) for the attacks to land mid-run.
	dir := write(t, map[string]string{"r.yaml": strings.Replace(randomYAML, "size: 1MB", "size: 8MB", 1)})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	b, err := loadScenario(s)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, 2)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	nodes := map[string]int{} // child name -> pid
	var coordRejected atomic.Uint64
	started := make(chan struct{})
	var once sync.Once
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type outcome struct {
		res *deploy.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := deploy.Run(ctx, deploy.Options{Built: b, Placement: pl, Procs: true, Coordinators: 3,
			StatusEvery: 5 * time.Millisecond, Stderr: &lockedWriter{w: &stderr},
			OnChild: func(c deploy.Child) {
				mu.Lock()
				nodes[c.Name] = c.PID
				mu.Unlock()
			},
			OnStatus: func(st wire.Status) {
				coordRejected.Store(max(coordRejected.Load(), st.Rejected))
				if st.Window >= 5 {
					once.Do(func() { close(started) })
				}
			}})
		done <- outcome{res, err}
	}()
	select {
	case <-started:
	case o := <-done:
		t.Fatalf("the run ended (err %v) before window 5\nstderr:\n%s", o.err, stderr.String())
	}

	// What ps shows: the run id and the NATS URL, but no secret.
	mu.Lock()
	pid1 := nodes["node 1"]
	var children []int
	for _, pid := range nodes {
		children = append(children, pid)
	}
	mu.Unlock()
	if len(children) != 5 {
		t.Fatalf("children %v, want 2 nodes and 3 coordinators", nodes)
	}
	argv, env := procArgs(t, pid1)
	url, run := flag(argv, "--nats"), flag(argv, "--run")
	if url == "" || run == "" {
		t.Fatalf("node 1's argv %q: no --nats or --run", argv)
	}
	stolen, err := member.Load(env[member.Env])
	if err != nil {
		t.Fatalf("node 1's credentials ($%s=%q): %v", member.Env, env[member.Env], err)
	}
	for _, pid := range children {
		a, e := procArgs(t, pid)
		c, err := member.Load(e[member.Env])
		if err != nil {
			t.Fatalf("pid %d: credentials: %v", pid, err)
		}
		if strings.Contains(a, c.Seed) || strings.Contains(a, "SU") || strings.Contains(a, member.Env) {
			t.Errorf("pid %d's argv %q shows its credentials", pid, a)
		}
		if fi, err := os.Stat(e[member.Env]); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("credentials file %s: mode %v (err %v), want 0600", e[member.Env], fi.Mode().Perm(), err)
		}
	}
	subj, _ := wire.NewSubjects(run)
	enc := wire.NewEncoder()

	// An anonymous process cannot even connect.
	if nc, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Errorf("a connection without credentials to %s was accepted", url)
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("connect without credentials: %v, want an authorization violation", err)
	}
	// Node 1's stolen credentials: every subject it may not use is refused
	// by the server.
	var violations atomic.Int64
	opts, err := stolen.Options()
	if err != nil {
		t.Fatal(err)
	}
	thief, err := nats.Connect(url, append(opts, nats.MaxReconnects(0), nats.ErrorHandler(
		func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				violations.Add(1)
			}
		}))...)
	if err != nil {
		t.Fatalf("connect with node 1's credentials: %v", err)
	}
	defer thief.Close()

	resync := enc.Resync(wire.Resync{Term: 99})
	status, _ := enc.Control(wire.TypeStatus, wire.Status{ID: "c0", Term: 99, Phase: "finished"})
	abort, _ := enc.Control(wire.TypeAbort, wire.Abort{Reason: "forged abort", From: member.Launcher})
	forged := node.PartResult{Part: results.Part{Partition: 0, Digest: b.Digest()}}
	forged.Final.Finished = true
	data, _ := node.EncodeResult(&forged)
	reencoded, _ := enc.Control(wire.TypeResultChunk, wire.ResultChunk{Partition: 0, Index: 0, Total: 1, Data: data})
	bomb := wire.ResultChunk{Partition: 1, Index: 0, Total: 1 << 40, Data: []byte("x")}
	bomb.Sig = stolen.Sign(wire.ChunkMessage(run, &bomb)) // node 1's key, its own subject
	bombMsg, _ := enc.Control(wire.TypeResultChunk, bomb)
	as0 := wire.ResultChunk{Partition: 0, Index: 0, Total: 1, Data: data}
	as0.Sig = stolen.Sign(wire.ChunkMessage(run, &as0))
	as0Msg, _ := enc.Control(wire.TypeResultChunk, as0)
	report0 := enc.Report(&barrier.Report{Node: 0, Window: 1 << 20, Term: 1, NextEvent: 0, MinSent: math.MaxInt64,
		Sent: []uint32{0, 0}, Done: true})

	refusedReply := func(subject string, msg []byte) func() error {
		return func() error {
			r, err := thief.Request(subject, msg, 5*time.Second)
			if err != nil {
				return err
			}
			m, err := wire.Decode(r.Data)
			if err != nil || m.Control == nil || m.Control.Type != wire.TypeError {
				return errors.New("the collector acknowledged the chunk")
			}
			return nil
		}
	}
	publish := func(subject string, msg []byte) func() error {
		return func() error { _ = thief.Publish(subject, msg); return thief.Flush() }
	}
	subscribe := func(subject string) func() error {
		return func() error {
			if _, err := thief.Subscribe(subject, func(*nats.Msg) {}); err != nil {
				return err
			}
			return thief.Flush()
		}
	}
	// Node 1's own report, but of another epoch (as if sent before a
	// rollback, docs/decisions.md "Distributed checkpoints") and for a
	// window far ahead: node 0 drops it unseen; stepped, node 0's replica
	// would refuse it and fail the run.
	stale := wire.AppendReport(nil, &barrier.Report{Node: 1, Window: 1 << 20, MinSent: math.MaxInt64, Sent: []uint32{0, 0}}, 0, 7)
	// A stored checkpoint part in partition 0's name on node 1's subject:
	// the leader (which commits checkpoints from them) refuses it.
	part0, _ := enc.Control(wire.TypeCheckpointStored, wire.CheckpointStored{Partition: 0, Window: 1 << 20})
	attacks := []attack{
		{"node 1's report of another epoch", "", publish(subj.Report(1), stale)},
		// Every node hears reports (the thief's connection is not node
		// 1's, so both do) and refuses one that misnames its sender.
		{"report claiming node 0 on node 1's subject", "nodes", publish(subj.Report(1), report0)},
		{"checkpoint part claiming partition 0 on node 1's subject", "coordinators", publish(subj.Checkpoint(1), part0)},
		{"resync request as the coordinator", "nats", publish(subj.Resync(), resync)},
		{"leader status (finished) as the coordinator", "nats", publish(subj.Status(), status)},
		{"forged abort", "nats", publish(subj.Abort(), abort)},
		{"re-encoded result chunk as node 0", "nats", publish(subj.Result(0), reencoded)},
		{"report as node 0 on node 0's subject", "nats", publish(subj.Report(0), report0)},
		{"batch as node 0", "nats", publish(subj.Batch(1, 0), enc.Batch(&wire.Batch{From: 0, To: 1, Window: 1}))},
		{"subscribe to every result", "nats", subscribe(subj.Results())},
		{"subscribe to node 0's batches", "nats", subscribe(subj.Batches(0))},
		{"chunk with Total 2^40", "launcher", refusedReply(subj.Result(1), bombMsg)},
		{"node 1's chunk claiming partition 0", "launcher", refusedReply(subj.Result(1), as0Msg)},
	}
	// The raft ports are in the coordinators' argv: a connection that
	// does not answer the handshake is refused (and counted by the
	// leader's replica; each replica gets one).
	raftAttempts := 0
	for _, pid := range children {
		a, _ := procArgs(t, pid)
		if addr := flag(a, "--raft-addr"); addr != "" {
			raftAttempts++
			attacks = append(attacks, attack{"raft connection to " + addr, "coordinators", func() error {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return err
				}
				defer c.Close()
				_, _ = c.Write(bytes.Repeat([]byte{0x01}, 100))
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				// Closed (EOF, or a reset: our bytes were unread) before
				// the deadline.
				if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
					return fmt.Errorf("the replica did not close the connection: %v", err)
				}
				return nil
			}})
		}
	}
	if raftAttempts != 3 {
		t.Fatalf("%d coordinators with --raft-addr, want 3", raftAttempts)
	}
	wantNATS := int64(0)
	for _, a := range attacks {
		if err := a.do(); err != nil {
			t.Errorf("%s: %v", a.name, err)
		}
		if a.counted == "nats" {
			wantNATS++
		}
	}
	// The server refused each in order; the thief hears of each refusal.
	deadline := time.Now().Add(10 * time.Second)
	for violations.Load() < wantNATS && time.Now().Before(deadline) {
		_ = thief.FlushTimeout(time.Second)
	}
	if got := violations.Load(); got != wantNATS {
		t.Errorf("the server reported %d permission violations to node 1's thief, want %d", got, wantNATS)
	}
	for coordRejected.Load() < 2 && time.Now().Before(deadline) {
		_ = thief.FlushTimeout(100 * time.Millisecond)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the attacked run did not end")
	}
	if o.err != nil {
		t.Fatalf("attacked run: %v\nstderr:\n%s", o.err, stderr.String())
	}
	r := o.res.Rejected
	t.Logf("rejected: %+v; coordinator status saw %d; %d windows", r, coordRejected.Load(), o.res.Results[0].Core.Windows)
	if r.NATS < uint64(wantNATS)+1 { // +1: the anonymous connection
		t.Errorf("the embedded server counted %d refusals, want >= %d", r.NATS, wantNATS+1)
	}
	if r.Launcher != 2 {
		t.Errorf("the collector counted %d refused chunks, want 2", r.Launcher)
	}
	if r.Coordinators < 2 || coordRejected.Load() < 2 {
		t.Errorf("the leader counted %d (status %d) refused checkpoint parts and raft connections, want >= 2", r.Coordinators,
			coordRejected.Load())
	}
	if r.Nodes != 2 {
		t.Errorf("the nodes counted %d refused messages, want 2 (the misnamed report, at each)", r.Nodes)
	}
	got := filepath.Join(dir, "attacked")
	if err := os.MkdirAll(got, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := o.res.Outputs.WriteDir(got, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "attacked run", single, got)
}

// TestRunDistributed_Issue10_ExternalServerForgeriesRejected is the same
// run on an operator's NATS server that knows nothing of the members (no
// permissions): an anonymous process reaches every subject, and the
// members' own checks refuse what it sends: garbage on a report subject
// and reports and batches that misname their sender (nodes), a checkpoint
// part that misnames its node (the leader), unsigned or wrongly signed
// aborts (nodes), unsigned
// result chunks and a Total=2^40 chunk (launcher). The run finishes and
// its files are byte-identical. (Reports are attributed only by the
// server's permissions, so a well-formed report in node i's own name on
// report.i is not tested on such a server: see docs/decisions.md.)
func TestRunDistributed_Issue10_ExternalServerForgeriesRejected(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	ns := startNATS(t)
	dir := write(t, map[string]string{"r.yaml": strings.Replace(randomYAML, "size: 1MB", "size: 8MB", 1)})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	b, err := loadScenario(s)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, 2)
	if err != nil {
		t.Fatal(err)
	}
	const run = "ext-forgeries"
	var coordRejected atomic.Uint64
	started := make(chan struct{})
	var once sync.Once
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type outcome struct {
		res *deploy.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := deploy.Run(ctx, deploy.Options{Built: b, Placement: pl, Procs: true, NATS: ns.ClientURL(), RunID: run,
			StatusEvery: 5 * time.Millisecond, Stderr: &lockedWriter{w: &stderr},
			OnStatus: func(st wire.Status) {
				coordRejected.Store(max(coordRejected.Load(), st.Rejected))
				if st.Window >= 5 {
					once.Do(func() { close(started) })
				}
			}})
		done <- outcome{res, err}
	}()
	select {
	case <-started:
	case o := <-done:
		t.Fatalf("the run ended (err %v) before window 5\nstderr:\n%s", o.err, stderr.String())
	}
	anon, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	subj, _ := wire.NewSubjects(run)
	enc := wire.NewEncoder()
	stranger, err := member.NewSet(run, nil, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	unsigned, _ := enc.Control(wire.TypeAbort, wire.Abort{Reason: "forged abort", From: member.Launcher})
	a := wire.Abort{Reason: "forged abort", From: member.Launcher}
	a.Sig = stranger.Launcher.Sign(wire.AbortMessage(run, &a))
	strangerSigned, _ := enc.Control(wire.TypeAbort, a)
	forged := node.PartResult{Part: results.Part{Partition: 0, Digest: b.Digest()}}
	data, _ := node.EncodeResult(&forged)
	chunk, _ := enc.Control(wire.TypeResultChunk, wire.ResultChunk{Partition: 0, Index: 0, Total: 1, Data: data})
	bomb, _ := enc.Control(wire.TypeResultChunk, wire.ResultChunk{Partition: 1, Index: 0, Total: 1 << 40, Data: []byte("x")})
	report0 := enc.Report(&barrier.Report{Node: 0, Window: 1 << 20, Term: 1, MinSent: math.MaxInt64, Sent: []uint32{0, 0}})
	part0, _ := enc.Control(wire.TypeCheckpointStored, wire.CheckpointStored{Partition: 0, Window: 1 << 20})

	// Each reaches both nodes (reports, which every node hears, and
	// aborts) or one (batch): 2+2+2+2+1. The misnamed checkpoint part
	// reaches the leader only.
	_ = anon.Publish(subj.Checkpoint(1), part0)
	_ = anon.Publish(subj.Report(1), report0)
	_ = anon.Publish(subj.Report(1), []byte("\x93\x05\xa5garbage"))
	_ = anon.Publish(subj.Abort(), unsigned)
	_ = anon.Publish(subj.Abort(), strangerSigned)
	_ = anon.Publish(subj.Batch(0, 0), enc.Batch(&wire.Batch{From: 1, To: 0, Window: 1}))
	for _, m := range [][]byte{chunk, bomb} {
		r, err := anon.Request(subj.Result(0), m, 5*time.Second)
		if err != nil {
			t.Fatalf("forged chunk: %v", err)
		}
		if d, err := wire.Decode(r.Data); err != nil || d.Control.Type != wire.TypeError {
			t.Errorf("the collector did not refuse a forged chunk")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for coordRejected.Load() < 1 && time.Now().Before(deadline) {
		_ = anon.FlushTimeout(100 * time.Millisecond)
	}
	o := <-done
	if o.err != nil {
		t.Fatalf("attacked run: %v\nstderr:\n%s", o.err, stderr.String())
	}
	r := o.res.Rejected
	t.Logf("rejected: %+v", r)
	// The launcher refuses the two forged chunks and, since it listens for
	// aborts too (a member's abort ends the run), the two forged aborts.
	if r.Nodes != 9 || r.Launcher != 4 || r.Coordinators < 1 {
		t.Errorf("rejected %+v, want 9 by the nodes, 4 by the launcher, >= 1 (the checkpoint part) by the leader", r)
	}
	got := filepath.Join(dir, "attacked")
	if err := os.MkdirAll(got, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := o.res.Outputs.WriteDir(got, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "attacked run on an external server", single, got)
}
