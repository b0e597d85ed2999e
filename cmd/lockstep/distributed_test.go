package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/spf13/viper"

	"github.com/lockstep-sim/lockstep/deploy"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
)

// asMainEnv makes this test binary act as the lockstep binary: the
// distributed tests start it as their `lockstep node` and `lockstep
// coordinator` child processes (deploy re-executes os.Args[0]).
const asMainEnv = "LOCKSTEP_AS_MAIN"

// requireWired fails a test unless root.go registers the node and
// coordinator commands and run and topo take --partitions.
func requireWired(t testing.TB) {
	t.Helper()
	root := newRoot(viper.New(), io.Discard, io.Discard)
	var missing []string
	for _, c := range []string{"node", "coordinator"} {
		if cmd, _, err := root.Find([]string{c}); err != nil || cmd.Name() != c {
			missing = append(missing, "command "+c)
		}
	}
	for _, c := range []string{"run", "topo"} {
		if cmd, _, err := root.Find([]string{c}); err != nil || cmd.Flags().Lookup("partitions") == nil {
			missing = append(missing, c+" --partitions")
		}
	}
	if len(missing) > 0 {
		t.Fatalf("distributed commands missing from the CLI: %v", missing)
	}
}

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// randomYAML has random loss, Gilbert-Elliott bursts, jitter, reordering,
// RED marking, spraying, small buffers and an incast: every random stream
// is drawn from and queues drop. It asks for every optional output.
const randomYAML = `seed: 7
topology:
  type: leafspine
  leafspine:
    leaves: 2
    spines: 2
    hosts_per_leaf: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 20KiB, ecn: {mode: red, min: 4KB, max: 16KB, pmax: 0.2}}
    fabric: {rate: 100Gbps, delay: 1us, buffer: 20KiB, ecn: {mode: red, min: 4KB, max: 16KB, pmax: 0.2}}
transport: {ecn: true, rto: {min: 500us}}
switch: {forwarding: spray}
impairments:
  - {link: [leaf0, spine0], loss: 0.5%, jitter: 200ns}
  - {link: [leaf1, spine1], gilbert_elliott: {p: 0.001, r: 0.3}, reorder: {prob: 2%, delay: 3us}}
workload:
  - type: permutation
    size: 1MB
  - {type: incast, n: 5, dst: 0, size: 200KB}
output: {cwnd: {all: true}, queues: {interval: 20us}, pcap: {hosts: [0, 5]}}
`

// runCLI runs lockstep in this process and fails the test on a non-zero
// exit status.
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("lockstep %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out.String(), errb.String())
	}
	return out.String()
}

func readOut(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameFiles checks docs/design.md §2's promise: every output file but
// summary.json (which holds wall-clock numbers) is byte-identical.
func sameFiles(t *testing.T, what, wantDir, gotDir string) {
	t.Helper()
	list := func(dir string) map[string][]byte {
		m := map[string][]byte{}
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() == "summary.json" {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			m[rel] = b
			return err
		})
		return m
	}
	w, g := list(wantDir), list(gotDir)
	if len(w) < 2 {
		t.Fatalf("%s: the single-process run wrote only %d files", what, len(w))
	}
	for n, wb := range w {
		if gb, ok := g[n]; !ok {
			t.Errorf("%s: %s missing", what, n)
		} else if !bytes.Equal(wb, gb) {
			t.Errorf("%s: %s differs from the single-process run (%d vs %d bytes)", what, n, len(gb), len(wb))
		}
	}
	for n := range g {
		if _, ok := w[n]; !ok {
			t.Errorf("%s: %s written, but not by the single-process run", what, n)
		}
	}
}

func TestRunDistributed_Design2_RandomScenarioSameFiles(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1") // for the child processes only
	dir := write(t, map[string]string{"r.yaml": randomYAML,
		"pe.yaml": randomYAML + "placement: {mode: per-element}\n"})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"4 partitions, memory", []string{"run", s, "--partitions", "4", "--transport", "memory"}},
		{"4 partitions, goroutines over NATS", []string{"run", s, "--partitions", "4"}},
		{"4 node processes", []string{"run", s, "--partitions", "4", "--procs"}},
		{"per-element (12 partitions)", []string{"run", filepath.Join(dir, "pe.yaml")}},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		stdout := runCLI(t, append(c.args, "--out", out)...)
		if !strings.Contains(stdout, "partitions") {
			t.Errorf("%s: closing line %q does not mention partitions", c.name, stdout)
		}
		sameFiles(t, c.name, single, out)
	}
}

// TestRunDistributed_EditsTravel is issue 8's bug: the command line's
// edits (--cwnd, --queues, --seed, --sender-fct) must reach every node
// over NATS, so that a distributed run writes cwnd.csv and fct.csv's
// sender columns (and every other file) byte-identical to one process,
// with the default transport too.
func TestRunDistributed_EditsTravel(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1") // for the child processes only
	dir := t.TempDir()
	s := filepath.Join("..", "..", "examples", "dumbbell.yaml")
	edits := []string{"--cwnd", "--queues", "10us", "--seed", "3", "--sender-fct", "--quiet"}
	single := filepath.Join(dir, "single")
	runCLI(t, append([]string{"run", s, "--out", single}, edits...)...)
	if _, err := os.Stat(filepath.Join(single, "cwnd.csv")); err != nil {
		t.Fatalf("the single-process run wrote no cwnd.csv: %v", err)
	}
	if h, _, _ := strings.Cut(string(readOut(t, single, "fct.csv")), "\n"); !strings.HasSuffix(h, ",acked_ns,sender_fct_ns") {
		t.Fatalf("--sender-fct: fct.csv header %q has no sender columns", h)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"2 partitions over NATS", []string{"--partitions", "2"}},
		{"2 partitions, 3 coordinator processes", []string{"--partitions", "2", "--coordinators", "3"}},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		runCLI(t, append(append([]string{"run", s, "--out", out}, edits...), c.args...)...)
		sameFiles(t, c.name, single, out)
		var sum struct {
			Seed   uint64 `json:"seed"`
			Digest string `json:"scenario_digest"`
		}
		var want struct {
			Digest string `json:"scenario_digest"`
		}
		if err := json.Unmarshal(readOut(t, out, "summary.json"), &sum); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(readOut(t, single, "summary.json"), &want); err != nil {
			t.Fatal(err)
		}
		if sum.Seed != 3 || sum.Digest != want.Digest {
			t.Errorf("%s: seed %d digest %s; want seed 3 and the single-process digest %s", c.name, sum.Seed, sum.Digest, want.Digest)
		}
		// Outside perf, build and extra (which describe the execution), the
		// summary is the single-process one (docs/scenario.md "Outputs").
		results := func(dir string) string {
			var m map[string]any
			if err := json.Unmarshal(readOut(t, dir, "summary.json"), &m); err != nil {
				t.Fatal(err)
			}
			delete(m, "perf")
			delete(m, "build")
			delete(m, "extra")
			b, _ := json.Marshal(m)
			return string(b)
		}
		if got, want := results(out), results(single); got != want {
			t.Errorf("%s: summary.json outside perf:\n%s\nwant the single-process\n%s", c.name, got, want)
		}
	}
}

// startNATS runs a NATS server in the test (an "external" server for the
// run under test).
func startNATS(t *testing.T) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server did not start")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// alive reports whether process pid exists (and is not a zombie we own).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// childPIDs lists the processes whose command line contains every string
// in want (Linux /proc).
func childPIDs(t *testing.T, want ...string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cl := strings.ReplaceAll(string(b), "\x00", " ")
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(cl, w)
		}
		if ok {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestRunDistributed_NodeKilled_ExitsNamingPartition kills a node process
// mid-run: `lockstep run` must exit 3 within 10 s with a one-line error
// naming the partition, leave no process behind, and write the partial
// results of the surviving partitions (issue 10).
func TestRunDistributed_NodeKilled_ExitsNamingPartition(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	ns := startNATS(t)
	dir := write(t, map[string]string{"r.yaml": randomYAML, "out/fct.csv": "from an earlier run\n"})
	runID := fmt.Sprintf("kill-node-%d", os.Getpid())

	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subj, _ := wire.NewSubjects(runID)
	var once sync.Once
	killed := make(chan time.Time, 1)
	_, err = nc.Subscribe(subj.Status(), func(msg *nats.Msg) {
		m, err := wire.Decode(msg.Data)
		if err != nil || m.Control == nil {
			return
		}
		var st wire.Status
		if m.Control.UnmarshalBody(&st) != nil || st.Window < 20 {
			return
		}
		once.Do(func() {
			pids := childPIDs(t, "node", "--run "+runID, "--partition 1")
			if len(pids) != 1 {
				t.Errorf("found node 1 as pids %v, want one", pids)
				killed <- time.Time{}
				return
			}
			_ = syscall.Kill(pids[0], syscall.SIGKILL)
			killed <- time.Now()
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"run", filepath.Join(dir, "r.yaml"), "--out", filepath.Join(dir, "out"), "--quiet",
		"--partitions", "4", "--procs", "--nats", ns.ClientURL(), "--run-id", runID, "--status-every", "10ms"}, &out, &errb)
	end := time.Now()
	var at time.Time
	select {
	case at = <-killed:
	default:
		t.Fatalf("the run ended (exit %d) before a node could be killed; stderr: %s", code, errb.String())
	}
	if at.IsZero() {
		t.FailNow()
	}
	if code == 0 {
		t.Fatalf("exit status 0 after a node was killed; want non-zero")
	}
	if d := end.Sub(at); d > 10*time.Second {
		t.Errorf("run returned %v after the node died, want < 10s", d)
	}
	t.Logf("node killed; run returned after %v: %s", end.Sub(at), lastLine(errb.String()))
	last := lastLine(errb.String())
	if !strings.HasPrefix(last, "lockstep: partition 1:") {
		t.Errorf("last stderr line %q, want a one-line error naming partition 1", last)
	}
	if code != exitFailed {
		t.Errorf("exit status %d, want %d (a failed run)", code, exitFailed)
	}
	// Issue 10: the survivors' partial results replace what was there,
	// whole and marked incomplete.
	checkPartial(t, filepath.Join(dir, "out"), "partition 1")
	if pids := childPIDs(t, "--run "+runID); len(pids) != 0 {
		t.Errorf("processes of the run still alive after it returned: %v", pids)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestRunDistributed_Design3_LeaderFailover runs three coordinator
// processes, kills the raft leader with SIGKILL mid-run, and checks that
// the run completes with the fct.csv of an undisturbed run (docs/design.md §3:
// "the run survives and its results do not change").
func TestRunDistributed_Design3_LeaderFailover(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	// The nodes do not wait for a leader (they run the barrier among
	// themselves), so the run must outlast the election: 8 MB flows.
	dir := write(t, map[string]string{"r.yaml": strings.Replace(randomYAML, "size: 1MB", "size: 8MB", 1)})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")

	b, err := loadScenario(s)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, 3)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var killedPID int
	var killedTerm uint64
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := deploy.Run(ctx, deploy.Options{Built: b, Placement: pl, Procs: true, Coordinators: 3,
		StatusEvery: 10 * time.Millisecond, MarkEvery: 50, Stderr: &lockedWriter{w: &stderr},
		OnStatus: func(st wire.Status) {
			mu.Lock()
			defer mu.Unlock()
			if killedPID == 0 && st.Window >= 100 {
				killedPID, killedTerm = st.PID, st.Term
				_ = syscall.Kill(st.PID, syscall.SIGKILL)
			}
		}})
	if err != nil {
		t.Fatalf("run with the leader killed: %v\nstderr:\n%s", err, stderr.String())
	}
	if killedPID == 0 {
		t.Fatalf("the leader was never killed: the run ended before window 100")
	}
	t.Logf("killed leader pid %d (term %d); leaders %+v; %d windows", killedPID, killedTerm, res.Leaders,
		res.Results[0].Core.Windows)
	if res.CoordinatorsLost != 1 {
		t.Errorf("%d coordinators lost, want 1", res.CoordinatorsLost)
	}
	var later bool
	for _, l := range res.Leaders {
		later = later || l.Term > killedTerm && l.PID != killedPID
	}
	if !later {
		t.Errorf("leaders %+v: no new leader after term %d", res.Leaders, killedTerm)
	}
	got := filepath.Join(dir, "failover")
	if err := os.MkdirAll(got, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := res.Outputs.WriteDir(got, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "leader killed", single, got)
	if alive(killedPID) {
		t.Errorf("killed leader %d still alive", killedPID)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) string() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func TestTopo_PartitionsShowCutLookaheadBalance(t *testing.T) {
	requireWired(t)
	dir := write(t, map[string]string{"d.yaml": `topology:
  type: dumbbell
  dumbbell:
    senders: 4
    receivers: 4
    host: {rate: 10Gbps, delay: 1us}
    bottleneck: {rate: 10Gbps, delay: 5us}
` + goodFlows})
	out := runCLI(t, "topo", filepath.Join(dir, "d.yaml"), "--partitions", "2")
	for _, want := range []string{"partitions: 2 (auto)", "lookahead: 5us (link 8, left - right)", "cut links: 1 of 9",
		"imbalance 1.000", "cut at 5us: 1 links"} {
		if !strings.Contains(out, want) {
			t.Errorf("topo --partitions 2: output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunDistributed_BadFlagsAreUsageErrors(t *testing.T) {
	requireWired(t)
	dir := write(t, map[string]string{"s.yaml": goodTopo + goodFlows,
		"z.yaml": strings.Replace(goodTopo, "bottleneck: {rate: 10Gbps, delay: 1us}", "bottleneck: {rate: 10Gbps, delay: 0us}", 1) +
			goodFlows + "placement: {mode: per-element}\n"})
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--partitions", "99"}, "at most 6 partitions"},
		{[]string{"--partitions", "2", "--transport", "memory", "--procs"}, "no --procs"},
		{[]string{"--partitions", "2", "--coordinators", "2"}, "want 1 or 3"},
		{[]string{"--transport", "carrier-pigeon"}, "want nats or memory"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		args := append([]string{"run", filepath.Join(dir, "s.yaml"), "--out", filepath.Join(dir, "o")}, c.args...)
		if code := run(args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
	var out, errb bytes.Buffer
	code := run([]string{"run", filepath.Join(dir, "z.yaml"), "--out", filepath.Join(dir, "o")}, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "left - right") || !strings.Contains(errb.String(), "zero delay") {
		t.Errorf("per-element with a zero-delay link: exit %d, stderr %q; want exit 2 naming the link", code, errb.String())
	}
}

// TestRunDistributed_External_StandaloneProcessesWithToken starts a NATS
// server that requires a token, one `lockstep coordinator` and two
// `lockstep node` processes by hand (as a Kubernetes deployment would),
// and `lockstep run --external` only collects and merges: the files equal
// a single-process run's.
func TestRunDistributed_External_StandaloneProcessesWithToken(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, Authorization: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS did not start")
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")

	var errs bytes.Buffer
	lw := &lockedWriter{w: &errs}
	start := func(env []string, args ...string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stderr = lw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	url, id := ns.ClientURL(), fmt.Sprintf("ext-%d", os.Getpid())
	start(nil, "coordinator", s, "--nats", url, "--run", id, "--partitions", "2", "--nats-token", "s3cret")
	for i := 0; i < 2; i++ {
		start([]string{"LOCKSTEP_NATS_TOKEN=s3cret"}, "node", "--nats", url, "--run", id, "--partition", fmt.Sprint(i))
	}
	out := filepath.Join(dir, "external")
	runCLI(t, "run", s, "--out", out, "--quiet", "--external", "--nats", url, "--run-id", id, "--partitions", "2",
		"--nats-token", "s3cret")
	sameFiles(t, "external processes", single, out)

	// Without the token the node cannot connect.
	var o, e bytes.Buffer
	code := run([]string{"node", "--nats", url, "--run", id, "--partition", "0"}, &o, &e)
	if code == 0 || !strings.Contains(strings.ToLower(e.String()), "authorization") {
		t.Errorf("node without a token: exit %d, stderr %q; want an authorization error", code, e.String())
	}
}

// TestDeploy_CancelStopsEveryProcess is Ctrl-C: the context ends mid-run,
// Run returns ErrInterrupted, and no process of the run is left.
func TestDeploy_CancelStopsEveryProcess(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	b, err := loadScenario(filepath.Join(dir, "r.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runID := fmt.Sprintf("cancel-%d", os.Getpid())
	before := runtime.GOMAXPROCS(0)
	gcPercent := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	gcBefore := gcPercent()
	var during atomic.Int64
	var children []deploy.Child
	var mu sync.Mutex
	_, err = deploy.Run(ctx, deploy.Options{Built: b, Placement: pl, Procs: true, Coordinators: 3, RunID: runID,
		StatusEvery: 10 * time.Millisecond,
		OnChild: func(c deploy.Child) {
			mu.Lock()
			children = append(children, c)
			mu.Unlock()
		},
		OnStatus: func(st wire.Status) {
			if st.Window >= 20 {
				// The nodes push their partial results on the abort, and
				// the launcher takes its cores back at the first.
				cancel()
				return
			}
			during.Store(int64(runtime.GOMAXPROCS(0)))
		}})
	if !errors.Is(err, deploy.ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	// While its node processes run, the launcher keeps the cores their
	// shares leave it (at least one), and gets its own back after.
	want := int64(before)
	if os.Getenv("GOMAXPROCS") == "" {
		share := max(1, runtime.NumCPU()/2)
		want = int64(max(1, runtime.NumCPU()-2*share))
	}
	if got := during.Load(); got != want {
		t.Errorf("GOMAXPROCS %d while the nodes ran, want %d", got, want)
	}
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d after the run, want %d as before", got, before)
	}
	// The results' decode and merge may run with another GC percent
	// (deploy's resultsGC); Run puts it back.
	if got := gcPercent(); got != gcBefore {
		t.Errorf("GC percent %d after the run, want %d as before", got, gcBefore)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(children) != 5 {
		t.Errorf("%d children started, want 3 coordinators and 2 nodes", len(children))
	}
	for _, c := range children {
		if alive(c.PID) {
			t.Errorf("%s (pid %d) still alive after Run returned", c.Name, c.PID)
		}
	}
	if pids := childPIDs(t, "--run "+runID); len(pids) != 0 {
		t.Errorf("processes of the run still alive: %v", pids)
	}
}
