package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/wire"
)

// proc is a lockstep child process of a test, with its stderr and its
// exit.
type proc struct {
	cmd    *exec.Cmd
	stderr *lockedWriter
	done   chan struct{}
}

func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(os.Args[0], args...), stderr: &lockedWriter{w: &bytes.Buffer{}}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), asMainEnv+"=1")
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *proc) errText() string {
	p.stderr.mu.Lock()
	defer p.stderr.mu.Unlock()
	return p.stderr.w.String()
}

func loopbackPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// TestCoordinator_NoReplicaLingersAfterTheRun starts three `lockstep
// coordinator` processes, two `lockstep node` processes and `lockstep run
// --external` by hand (as containers would). Before the run starts, one
// follower is stopped (SIGSTOP): it misses the end of the run, and the
// others exit without waiting for it. Continued after the run, it must
// exit by itself within a bound (status 0 because the last leader said
// the run finished, or 3 with a one-line reason), and so must the others:
// no coordinator remains.
func TestCoordinator_NoReplicaLingersAfterTheRun(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	ns := startNATS(t)
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")

	url, id := ns.ClientURL(), fmt.Sprintf("linger-%d", os.Getpid())
	subj, _ := wire.NewSubjects(id)
	watch, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	statuses := make(chan wire.Status, 1024)
	sub, err := watch.Subscribe(subj.Status(), func(m *nats.Msg) {
		if msg, err := wire.Decode(m.Data); err == nil && msg.Kind == wire.KindControl {
			var st wire.Status
			if msg.Control.UnmarshalBody(&st) == nil {
				select {
				case statuses <- st:
				default:
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	const peerTimeout = 3 * time.Second
	ports := loopbackPorts(t, 3)
	var peers []string
	for i, p := range ports {
		peers = append(peers, fmt.Sprintf("c%d=127.0.0.1:%d", i+1, p))
	}
	coords := map[int]*proc{} // pid -> process
	for i, p := range ports {
		c := startProc(t, "coordinator", s, "--nats", url, "--run", id, "--partitions", "2",
			"--id", fmt.Sprintf("c%d", i+1), "--raft-addr", fmt.Sprintf("127.0.0.1:%d", p),
			"--peers", strings.Join(peers, ","), "--peer-timeout", peerTimeout.String(), "--status-every", "50ms")
		coords[c.cmd.Process.Pid] = c
	}
	// The leader says who it is; stop a follower.
	var leader wire.Status
	select {
	case leader = <-statuses:
	case <-time.After(30 * time.Second):
		t.Fatal("no leader status within 30s")
	}
	var stopped *proc
	for pid, c := range coords {
		if pid != leader.PID {
			stopped = c
			break
		}
	}
	if err := stopped.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		startProc(t, "node", "--nats", url, "--run", id, "--partition", fmt.Sprint(i), "--peer-timeout", peerTimeout.String())
	}
	out := filepath.Join(dir, "external")
	runCLI(t, "run", s, "--out", out, "--quiet", "--external", "--nats", url, "--run-id", id, "--partitions", "2")
	sameFiles(t, "external run with a stopped follower", single, out)
	ended := time.Now()
	if err := stopped.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	// Every coordinator exits by itself within the bound.
	bound := time.NewTimer(peerTimeout + 30*time.Second) // generous: CI machines are loaded
	defer bound.Stop()
	for pid, c := range coords {
		select {
		case <-c.done:
		case <-bound.C:
			t.Fatalf("coordinator pid %d (leader %v, stopped %v) still running %v after the run\nstderr: %s", pid,
				pid == leader.PID, c == stopped, time.Since(ended).Round(time.Millisecond), c.errText())
		}
		code := c.cmd.ProcessState.ExitCode()
		msg := lastLine(c.errText())
		switch {
		case code == 0:
		case code == 3 && c == stopped && strings.HasPrefix(msg, "lockstep: coordinator ") && strings.Contains(msg, "no raft leader"):
		default:
			t.Errorf("coordinator pid %d (leader %v, stopped %v): exit %d, stderr %q; want 0 (or 3 with a one-line reason for the stopped one)",
				pid, pid == leader.PID, c == stopped, code, msg)
		}
	}
	t.Logf("every coordinator gone %v after the run; the stopped one exited %d", time.Since(ended).Round(time.Millisecond),
		stopped.cmd.ProcessState.ExitCode())
}

// TestCoordinator_NoLeaderEverGivesUp: a replica whose peers never come
// exits 3 with a one-line reason after --join-timeout, instead of standing
// for election for ever.
func TestCoordinator_NoLeaderEverGivesUp(t *testing.T) {
	requireWired(t)
	ns := startNATS(t)
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	ports := loopbackPorts(t, 3)
	c := startProc(t, "coordinator", filepath.Join(dir, "r.yaml"), "--nats", ns.ClientURL(), "--run", "alone",
		"--partitions", "2", "--id", "c1", "--raft-addr", fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"--peers", fmt.Sprintf("c1=127.0.0.1:%d,c2=127.0.0.1:%d,c3=127.0.0.1:%d", ports[0], ports[1], ports[2]),
		"--join-timeout", "2s", "--peer-timeout", "2s")
	start := time.Now()
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("a coordinator without peers still runs after 20s\nstderr: %s", c.errText())
	}
	msg := lastLine(c.errText())
	if code := c.cmd.ProcessState.ExitCode(); code != 3 || msg != "lockstep: coordinator c1: no raft leader elected for 2s (the other coordinators are gone or unreachable)" {
		t.Errorf("exit %d after %v, last line %q; want 3 and the reason", code, time.Since(start), msg)
	}
}
