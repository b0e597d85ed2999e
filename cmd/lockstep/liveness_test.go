package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/results"
)

// Issue 10, items 3, 5 and 6: liveness with deadlines, exit statuses,
// partial results. Every case runs real processes against a real NATS
// server on loopback and must end within a bound.

// fixedNATS is a NATS server on a fixed loopback port, so that it can be
// stopped and started again where the run's members reconnect.
type fixedNATS struct {
	t    *testing.T
	port int
	mu   sync.Mutex
	srv  *server.Server
}

func newFixedNATS(t *testing.T) *fixedNATS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	n := &fixedNATS{t: t, port: port}
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.stop)
	return n
}

func (n *fixedNATS) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

func (n *fixedNATS) start() error {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: n.port, NoLog: true, NoSigs: true,
		MaxPayload: 8 << 20})
	if err != nil {
		return err
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		return fmt.Errorf("NATS did not start on port %d", n.port)
	}
	n.mu.Lock()
	n.srv = s
	n.mu.Unlock()
	return nil
}

func (n *fixedNATS) stop() {
	n.mu.Lock()
	s := n.srv
	n.srv = nil
	n.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// onWindow calls f once, from a NATS callback, when the leader's status
// reaches window w; opts are more connection options (credentials).
func onWindow(t *testing.T, url, runID string, w uint64, f func(), opts ...nats.Option) {
	t.Helper()
	nc, err := nats.Connect(url, append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	subj, _ := wire.NewSubjects(runID)
	var once sync.Once
	if _, err := nc.Subscribe(subj.Status(), func(msg *nats.Msg) {
		m, err := wire.Decode(msg.Data)
		if err != nil || m.Control == nil {
			return
		}
		var st wire.Status
		if m.Control.UnmarshalBody(&st) != nil || st.Window < w {
			return
		}
		once.Do(f)
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// nodePID finds `lockstep node ... --partition part` of run runID.
func nodePID(t *testing.T, runID string, part int) int {
	pids := childPIDs(t, "node", "--run "+runID, fmt.Sprintf("--partition %d", part))
	if len(pids) != 1 {
		t.Errorf("found node %d as pids %v, want one", part, pids)
		return 0
	}
	return pids[0]
}

// checkPartial checks a failed run's --out: whole fct.csv, queues.csv and
// summary.json, no temporary file, "complete": false and a reason that
// contains want.
func checkPartial(t *testing.T, dir, want string) results.Summary {
	t.Helper()
	var sum results.Summary
	if err := json.Unmarshal(readOut(t, dir, "summary.json"), &sum); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if sum.Complete || sum.StoppedBy != "incomplete" || !strings.Contains(sum.Reason, want) {
		t.Errorf("summary.json: complete %v, stopped_by %q, reason %q; want false, incomplete and %q", sum.Complete,
			sum.StoppedBy, sum.Reason, want)
	}
	fct := strings.Split(strings.TrimRight(string(readOut(t, dir, "fct.csv")), "\n"), "\n")
	if fct[0] != results.FCTHeader || len(fct) != sum.Flows+1 {
		t.Errorf("fct.csv: %d lines, header %q; want %d flows", len(fct)-1, fct[0], sum.Flows)
	}
	unfinished := 0
	for _, l := range fct[1:] {
		col := strings.Split(l, ",")
		if len(col) != strings.Count(results.FCTHeader, ",")+1 {
			t.Errorf("fct.csv: cut line %q", l)
		} else if col[11] == "false" {
			unfinished++
		} else if col[11] != "true" {
			t.Errorf("fct.csv: cut line %q", l)
		}
	}
	if unfinished != sum.Flows-sum.FlowsFinished {
		t.Errorf("fct.csv: %d unfinished rows, summary says %d of %d finished", unfinished, sum.FlowsFinished, sum.Flows)
	}
	if q := string(readOut(t, dir, "queues.csv")); !strings.HasPrefix(q, results.QueuesHeader+"\n") || !strings.HasSuffix(q, "\n") {
		t.Errorf("queues.csv is not whole: %.80q", q)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left in --out", e.Name())
		}
	}
	return sum
}

// ownLines counts the launcher's own lines on stderr (the children's are
// prefixed with their names).
func ownLines(stderr string) int {
	n := 0
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "lockstep:") {
			n++
		}
	}
	return n
}

// distRun runs `lockstep run` in this process and returns its exit status,
// stderr and how long it took.
func distRun(args ...string) (int, string, time.Duration) {
	var out, errb bytes.Buffer
	start := time.Now()
	code := run(args, &out, &errb)
	return code, errb.String(), time.Since(start)
}

// TestLiveness_NodeStopped: SIGSTOP a node process mid-run. Continued
// before --peer-timeout, the run completes with the files of an
// undisturbed run; never continued, it fails within the timeout naming
// the partition, exit 3, with partial results marked incomplete.
func TestLiveness_NodeStopped(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	const timeout = 3 * time.Second
	for _, cont := range []bool{true, false} {
		name := map[bool]string{true: "continued", false: "never continued"}[cont]
		ns := newFixedNATS(t)
		runID := fmt.Sprintf("stop-%v-%d", cont, os.Getpid())
		stopped := make(chan time.Time, 1)
		var pid int
		onWindow(t, ns.url(), runID, 20, func() {
			if pid = nodePID(t, runID, 1); pid == 0 {
				stopped <- time.Time{}
				return
			}
			_ = syscall.Kill(pid, syscall.SIGSTOP)
			stopped <- time.Now()
			if cont {
				// The fault: one second stopped, a third of the timeout.
				time.AfterFunc(time.Second, func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
			}
		})
		out := filepath.Join(dir, "out-"+strings.ReplaceAll(name, " ", "-"))
		code, stderr, took := distRun("run", s, "--out", out, "--quiet", "--partitions", "4", "--procs",
			"--nats", ns.url(), "--run-id", runID, "--status-every", "10ms", "--peer-timeout", timeout.String())
		var at time.Time
		select {
		case at = <-stopped:
		default:
			t.Fatalf("%s: the run ended (exit %d, %v) before a node was stopped; stderr: %s", name, code, took, stderr)
		}
		if at.IsZero() {
			t.FailNow()
		}
		verdict := time.Since(at)
		if cont {
			if code != exitOK {
				t.Fatalf("%s: exit %d, want 0; stderr: %s", name, code, stderr)
			}
			sameFiles(t, name, single, out)
			var sum results.Summary
			if err := json.Unmarshal(readOut(t, out, "summary.json"), &sum); err != nil || !sum.Complete {
				t.Errorf("%s: summary.json complete %v (%v), want true", name, sum.Complete, err)
			}
			t.Logf("%s: completed %v after the stop", name, verdict)
			ns.stop()
			continue
		}
		last := lastLine(stderr)
		if code != exitFailed || !strings.HasPrefix(last, "lockstep: partition 1: no heartbeat") {
			t.Errorf("%s: exit %d, last line %q; want 3 and a line naming partition 1", name, code, last)
		}
		if verdict > timeout+3*time.Second {
			t.Errorf("%s: verdict %v after the stop, want within the %v timeout and a bound", name, verdict, timeout)
		}
		t.Logf("%s: verdict %v after the stop: %s", name, verdict, last)
		sum := checkPartial(t, out, "partition 1")
		if len(sum.MissingPartitions) != 1 || sum.MissingPartitions[0] != 1 {
			t.Errorf("%s: missing partitions %v, want [1]", name, sum.MissingPartitions)
		}
		if pids := childPIDs(t, "--run "+runID); len(pids) != 0 {
			t.Errorf("%s: processes of the run still alive: %v", name, pids)
		}
		ns.stop()
	}
}

// TestLiveness_NATSOutage: the NATS server the run uses (--nats) is shut
// down mid-run. Started again on the same port within --peer-timeout, the
// run completes with the files of an undisturbed run; never started
// again, the run fails with a one-line reason, exit 3, within the bound.
func TestLiveness_NATSOutage(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	const timeout = 3 * time.Second
	for _, back := range []bool{true, false} {
		name := map[bool]string{true: "restarted", false: "gone for good"}[back]
		ns := newFixedNATS(t)
		runID := fmt.Sprintf("outage-%v-%d", back, os.Getpid())
		down := make(chan time.Time, 1)
		onWindow(t, ns.url(), runID, 20, func() {
			go func() { // not from the server's own callback
				ns.stop()
				down <- time.Now()
				if back {
					// The fault: one second without a server.
					time.AfterFunc(time.Second, func() {
						if err := ns.start(); err != nil {
							t.Errorf("restart NATS: %v", err)
						}
					})
				}
			}()
		})
		out := filepath.Join(dir, "out-"+strings.ReplaceAll(name, " ", "-"))
		code, stderr, took := distRun("run", s, "--out", out, "--quiet", "--partitions", "4", "--procs",
			"--nats", ns.url(), "--run-id", runID, "--status-every", "10ms", "--peer-timeout", timeout.String())
		var at time.Time
		select {
		case at = <-down:
		default:
			t.Fatalf("%s: the run ended (exit %d, %v) before NATS was stopped; stderr: %s", name, code, took, stderr)
		}
		verdict := time.Since(at)
		if back {
			if code != exitOK {
				t.Fatalf("%s: exit %d, want 0; stderr: %s", name, code, stderr)
			}
			sameFiles(t, name, single, out)
			t.Logf("%s: completed %v after the server went down", name, verdict)
			ns.stop()
			continue
		}
		last := lastLine(stderr)
		if code != exitFailed || !strings.Contains(last, "NATS") || ownLines(stderr) != 1 {
			t.Errorf("%s: exit %d, stderr %q; want 3 and one line about NATS", name, code, stderr)
		}
		if verdict > timeout+4*time.Second {
			t.Errorf("%s: verdict %v after the server went down, want within %v and a bound", name, verdict, timeout)
		}
		t.Logf("%s: verdict %v after the server went down: %s", name, verdict, last)
		checkPartial(t, out, "NATS")
		if pids := childPIDs(t, "--run "+runID); len(pids) != 0 {
			t.Errorf("%s: processes of the run still alive: %v", name, pids)
		}
	}
}

// TestLiveness_ExternalWithoutCoordinator: `run --external` with nobody
// else on the run says what it waits for and gives up, exit 3.
func TestLiveness_ExternalWithoutCoordinator(t *testing.T) {
	requireWired(t)
	ns := startNATS(t)
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	out := filepath.Join(dir, "out")
	code, stderr, took := distRun("run", filepath.Join(dir, "r.yaml"), "--out", out, "--quiet", "--external",
		"--nats", ns.ClientURL(), "--run-id", "nobody-home", "--partitions", "2", "--join-timeout", "1s")
	if code != exitFailed {
		t.Errorf("exit %d, want 3; stderr: %s", code, stderr)
	}
	if !strings.Contains(stderr, "lockstep: waiting for the coordinator leader and partitions 0, 1 of run nobody-home") {
		t.Errorf("stderr does not say what it waits for:\n%s", stderr)
	}
	if last := lastLine(stderr); !strings.Contains(last, "gave up after 1s waiting for the coordinator leader and partitions 0, 1") {
		t.Errorf("last line %q, want it to give up naming what it waited for", last)
	}
	if took > 5*time.Second {
		t.Errorf("took %v with --join-timeout 1s", took)
	}
	t.Logf("gave up after %v: %s", took, lastLine(stderr))
	checkPartial(t, out, "gave up")
}

// TestExitStatuses is the table of docs/design.md §10 and README "Exit
// statuses": 0 success, 2 bad input, 3 a failed run, 4 an internal error
// (a recovered panic: one line and a stack trace in a file).
func TestExitStatuses(t *testing.T) {
	requireWired(t)
	ns := startNATS(t)
	dir := write(t, map[string]string{"s.yaml": goodTopo + goodFlows,
		"bad.yaml": strings.Replace(goodTopo, "senders: 2", "senderz: 2", 1) + goodFlows})
	s := filepath.Join(dir, "s.yaml")
	cases := []struct {
		name  string
		args  []string
		panic bool
		code  int
		want  string // in the last stderr line
	}{
		{"success", []string{"run", s, "--out", filepath.Join(dir, "ok"), "--quiet"}, false, exitOK, ""},
		{"bad scenario", []string{"run", filepath.Join(dir, "bad.yaml"), "--out", filepath.Join(dir, "bad")}, false, exitUsage, "unknown field"},
		{"bad flag", []string{"run", s, "--bogus"}, false, exitUsage, "unknown flag"},
		{"bad timeout", []string{"run", s, "--out", filepath.Join(dir, "bt"), "--partitions", "2", "--peer-timeout", "-1s"}, false, exitUsage, "--peer-timeout"},
		{"node without --run", []string{"node", "--nats", ns.ClientURL()}, false, exitUsage, "required"},
		{"validate bad", []string{"validate", filepath.Join(dir, "bad.yaml")}, false, exitUsage, "unknown field"},
		{"failed run", []string{"run", s, "--out", filepath.Join(dir, "failed"), "--quiet", "--external", "--nats", ns.ClientURL(),
			"--run-id", "exit-status", "--partitions", "2", "--join-timeout", "200ms"}, false, exitFailed, "gave up"},
		{"internal error", []string{"run", s, "--out", filepath.Join(dir, "crash"), "--quiet"}, true, exitInternal, "internal error: boom"},
	}
	for _, c := range cases {
		testHook = nil
		if c.panic {
			testHook = func(string) { panic("boom") }
		}
		code, stderr, _ := distRun(c.args...)
		testHook = nil
		if code != c.code {
			t.Errorf("%s: exit %d, want %d; stderr: %s", c.name, code, c.code, stderr)
		}
		if c.want != "" && !strings.Contains(lastLine(stderr), c.want) {
			t.Errorf("%s: last stderr line %q, want %q", c.name, lastLine(stderr), c.want)
		}
		if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, ".go:") {
			t.Errorf("%s: a stack trace on stderr:\n%s", c.name, stderr)
		}
		if c.panic {
			_, file, ok := strings.Cut(strings.TrimSpace(stderr), "stack trace in ")
			if !ok || strings.Count(stderr, "\n") != 1 {
				t.Errorf("%s: stderr %q, want one line naming the stack trace file", c.name, stderr)
				continue
			}
			if filepath.Dir(file) != filepath.Join(dir, "crash") {
				t.Errorf("%s: stack trace in %s, want it in the output directory", c.name, file)
			}
			b, err := os.ReadFile(file)
			if err != nil || !strings.Contains(string(b), "goroutine ") || !strings.Contains(string(b), "boom") {
				t.Errorf("%s: stack trace file %s: %v\n%s", c.name, file, err, b)
			}
		}
	}
}

// TestRun_InterruptWritesPartial: Ctrl-C (SIGINT) in the middle of a
// single-process run writes what it has, marked incomplete, exit 3: in one
// partition, and in the in-memory partitions of the default cut (which
// once ran on to the end).
func TestRun_InterruptWritesPartial(t *testing.T) {
	for _, args := range [][]string{{"--partitions", "1"}, {"--partitions", "2", "--transport", "memory"}, {"--partitions", "2"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) { interruptWritesPartial(t, args) })
	}
}

func interruptWritesPartial(t *testing.T, args []string) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	// The example's 2 MB flows end in a third of a second, which a loaded
	// machine can take to deliver the signal: 64 MB flows run for seconds,
	// so the interrupt always lands in the middle.
	scen := k8WithFlows(t, dir, "64MB")
	cmd := exec.Command(os.Args[0], append([]string{"run", scen, "--out", out, "--progress"}, args...)...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer close(done)
	timer := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	// A progress line past virtual time 0 says the run is under way (every
	// partition has built and computed).
	var errs bytes.Buffer
	buf := make([]byte, 4096)
	for !underWay(errs.String()) {
		n, err := stderr.Read(buf)
		errs.Write(buf[:n])
		if err != nil {
			t.Fatalf("the run ended before it showed progress: %v\n%s", err, errs.String())
		}
	}
	at := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest := new(bytes.Buffer)
	_, _ = rest.ReadFrom(stderr)
	errs.Write(rest.Bytes())
	err = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	last := lastLine(errs.String())
	if code != exitFailed || !strings.Contains(last, "interrupted") {
		t.Fatalf("exit %d (%v), last line %q; want 3 and interrupted", code, err, last)
	}
	t.Logf("exit %d %v after SIGINT: %s", code, time.Since(at), last)
	sum := checkPartial(t, out, "interrupted")
	if sum.FlowsFinished >= sum.Flows {
		t.Errorf("%d of %d flows finished: the interrupt came too late to test anything", sum.FlowsFinished, sum.Flows)
	}
	if len(sum.MissingPartitions) > 0 || sum.EndPs == 0 {
		t.Errorf("summary.json: partitions %v missing, end %d ps: an interrupt must keep what every partition computed", sum.MissingPartitions, sum.EndPs)
	}
}

// underWay reports whether progress output shows a virtual time past 0.
func underWay(progress string) bool {
	for _, m := range regexp.MustCompile(`virtual\s+(\S+)`).FindAllStringSubmatch(progress, -1) {
		if !strings.HasPrefix(m[1], "0") {
			return true
		}
	}
	return false
}
