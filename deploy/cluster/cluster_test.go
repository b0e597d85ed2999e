//go:build cluster

package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/wire"
)

// longYAML is the k=8 fat-tree permutation with 12 MB flows: about 5200
// windows, several seconds across containers, so that there is a "mid-run"
// to kill, cut and restart things in.
func longYAML(t testing.TB) string {
	b, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "fattree-k8-permutation.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "size: 2MB", "size: 12MB", 1)
	if s == string(b) {
		t.Fatal("fattree-k8-permutation.yaml has no 'size: 2MB' to scale")
	}
	return s
}

// scenarioFile writes a scenario readable by the containers' user.
func scenarioFile(t testing.TB, text string) string {
	p := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	refs     sync.Map // scenario text -> output directory of its single-process run
	refCount atomic.Int64
)

// reference runs the scenario in one process on this host, once.
func reference(t testing.TB, file string) string {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := refs.Load(string(text)); ok {
		return d.(string)
	}
	dir, err := sharedDir(fmt.Sprintf("ref-%d", refCount.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	bin := lockstepHost(t)
	start := time.Now()
	if b, err := exec.Command(bin, "run", file, "--out", out, "--quiet").CombinedOutput(); err != nil {
		t.Fatalf("single-process run: %v: %s", err, b)
	}
	t.Logf("single-process run: %.2fs", time.Since(start).Seconds())
	refs.Store(string(text), out)
	return out
}

// sameOutputs checks docs/design.md §2 across containers: every output
// file byte-identical to the single-process run, summary.json too but for
// its wall-clock, build and distributed-run parts.
func sameOutputs(t testing.TB, want, got string) {
	t.Helper()
	files := func(dir string) map[string][]byte {
		m := map[string][]byte{}
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			if rel == "summary.json" {
				var s map[string]any
				if err := json.Unmarshal(b, &s); err != nil {
					t.Errorf("%s: %v", p, err)
				}
				// How the run was cut shows in these (and only these).
				for _, k := range []string{"perf", "build", "extra", "scenario", "packet_pool_slots", "peak_event_queue"} {
					delete(s, k)
				}
				b, _ = json.Marshal(s)
			}
			m[rel] = b
			return err
		})
		return m
	}
	w, g := files(want), files(got)
	if len(w) < 3 {
		t.Fatalf("the single-process run wrote only %d files", len(w))
	}
	for n, wb := range w {
		if gb, ok := g[n]; !ok {
			t.Errorf("%s missing", n)
		} else if !bytes.Equal(wb, gb) {
			if len(wb) < 2000 {
				t.Errorf("%s differs from the single-process run:\n%s\n%s", n, gb, wb)
			} else {
				t.Errorf("%s differs from the single-process run (%d vs %d bytes)", n, len(gb), len(wb))
			}
		}
	}
	for n := range g {
		if _, ok := w[n]; !ok {
			t.Errorf("%s written, but not by the single-process run", n)
		}
	}
}

// syncBuf is a goroutine-safe buffer.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// launcher is `lockstep run --external` on this host: it starts nothing,
// waits for the containers' run on NATS, collects and merges.
type launcher struct {
	cmd    *exec.Cmd
	stderr syncBuf
	done   chan struct{}
	err    error
	out    string
}

func startLauncher(t testing.TB, file, natsURL, run string, p int, extra ...string) *launcher {
	t.Helper()
	l := &launcher{done: make(chan struct{}), out: filepath.Join(t.TempDir(), "out")}
	args := append([]string{"run", file, "--partitions", fmt.Sprint(p), "--external", "--nats", natsURL,
		"--run-id", run, "--out", l.out, "--quiet"}, extra...)
	l.cmd = exec.Command(lockstepHost(t), args...)
	l.cmd.Stderr = &l.stderr
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { l.err = l.cmd.Wait(); close(l.done) }()
	t.Cleanup(func() {
		select {
		case <-l.done:
		default:
			_ = l.cmd.Process.Kill()
			<-l.done
		}
	})
	return l
}

// wait waits up to d for the launcher and returns its exit status.
func (l *launcher) wait(t testing.TB, d time.Duration) int {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(d):
		t.Fatalf("the launcher is still running after %v; stderr:\n%s", d, l.stderr.String())
	}
	if l.err == nil {
		return 0
	}
	if ee, ok := l.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatal(l.err)
	return -1
}

// watcher follows a run from outside: the leaders' status and the grants.
type watcher struct {
	mu     sync.Mutex
	status []wire.Status // guarded by mu
	grants []grantSeen   // guarded by mu
	nc     *nats.Conn
}

type grantSeen struct {
	at     time.Time
	term   uint64
	window uint64
}

func watch(t testing.TB, url, run string) *watcher {
	t.Helper()
	subj, err := wire.NewSubjects(run)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w := &watcher{nc: nc}
	_, err = nc.Subscribe(subj.Status(), func(m *nats.Msg) {
		msg, err := wire.Decode(m.Data)
		if err != nil || msg.Kind != wire.KindControl || msg.Control.Type != wire.TypeStatus {
			return
		}
		var st wire.Status
		if msg.Control.UnmarshalBody(&st) == nil {
			w.mu.Lock()
			w.status = append(w.status, st)
			w.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = nc.Subscribe(subj.Grant(), func(m *nats.Msg) {
		msg, err := wire.Decode(m.Data)
		if err != nil || msg.Kind != wire.KindGrant {
			return
		}
		w.mu.Lock()
		w.grants = append(w.grants, grantSeen{at: time.Now(), term: msg.Grant.Term, window: msg.Grant.Window})
		w.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// last is the latest leader status (ok false before any).
func (w *watcher) last() (wire.Status, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.status) == 0 {
		return wire.Status{}, false
	}
	return w.status[len(w.status)-1], true
}

// untilWindow waits until the leader has granted window n.
func (w *watcher) untilWindow(t testing.TB, n uint64, d time.Duration) wire.Status {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if st, ok := w.last(); ok && st.Window >= n {
			return st
		}
		time.Sleep(20 * time.Millisecond) // polling the watcher against the deadline
	}
	t.Fatalf("window %d not granted within %v", n, d)
	return wire.Status{}
}

// firstGrantAfter is the first grant seen after at from a term above term.
func (w *watcher) firstGrantAfter(at time.Time, term uint64) (grantSeen, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range w.grants {
		if g.at.After(at) && g.term > term {
			return g, true
		}
	}
	return grantSeen{}, false
}

// deployment is one run across containers, as deploy/compose/ describes
// it: NATS (lockstep nats, JetStream on), three coordinators with raft
// between them, P nodes, all on e's network; the launcher on this host
// reaches NATS through a loopback port.
type deployment struct {
	e       *env
	run     string
	file    string
	p       int
	port    int
	natsURL string // from this host
	peerTO  time.Duration
}

func (e *env) deploy(t testing.TB, file string, p int, peerTimeout time.Duration) *deployment {
	d := &deployment{e: e, run: "r" + e.id, file: file, p: p, port: freePort(t), peerTO: peerTimeout}
	d.natsURL = fmt.Sprintf("nats://127.0.0.1:%d", d.port)
	e.run(container{member: "nats", opts: []string{"-p", fmt.Sprintf("127.0.0.1:%d:4222", d.port)},
		args: []string{"nats", "--addr", "0.0.0.0:4222", "--store", "/tmp/js"}})
	waitNATS(t, d.natsURL)
	return d
}

// waitNATS waits until a NATS server answers on url.
func waitNATS(t testing.TB, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		nc, err := nats.Connect(url, nats.Timeout(time.Second))
		if err == nil {
			nc.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("NATS on %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond) // polling the server against the deadline
	}
}

func (d *deployment) common() []string {
	return []string{"--nats", "nats://nats:4222", "--run", d.run, "--peer-timeout", d.peerTO.String()}
}

// start starts the coordinators and the nodes.
func (d *deployment) start() {
	peers := "c1=c1:7000,c2=c2:7000,c3=c3:7000"
	for _, id := range []string{"c1", "c2", "c3"} {
		d.e.run(container{member: id, opts: []string{"-v", d.file + ":/scenario.yaml:ro"},
			args: append([]string{"coordinator", "/scenario.yaml", "--partitions", fmt.Sprint(d.p), "--id", id,
				"--raft-addr", id + ":7000", "--peers", peers}, d.common()...)})
	}
	for i := 0; i < d.p; i++ {
		d.e.run(container{member: fmt.Sprintf("n%d", i),
			args: append([]string{"node", "--partition", fmt.Sprint(i)}, d.common()...)})
	}
}

func (d *deployment) launcher(t testing.TB, extra ...string) *launcher {
	return startLauncher(t, d.file, d.natsURL, d.run, d.p, append([]string{"--peer-timeout", d.peerTO.String()}, extra...)...)
}

// dump logs every container's output (on failure).
func (d *deployment) dump(t testing.TB, l *launcher) {
	if !t.Failed() {
		return
	}
	t.Logf("launcher:\n%s", l.stderr.String())
	for _, m := range append([]string{"nats", "c1", "c2", "c3"}, d.nodes()...) {
		t.Logf("%s:\n%s", m, d.e.logs(m))
	}
}

func (d *deployment) nodes() []string {
	var s []string
	for i := 0; i < d.p; i++ {
		s = append(s, fmt.Sprintf("n%d", i))
	}
	return s
}

// Case (a): the k=8 permutation across 4 node containers, 3 coordinator
// containers and a NATS container is byte-identical to one process.
func TestCluster_A_SameAsOneProcess(t *testing.T) {
	file := scenarioFile(t, func() string {
		b, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "fattree-k8-permutation.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}())
	ref := reference(t, file)
	e := newEnv(t)
	d := e.deploy(t, file, 4, 20*time.Second)
	start := time.Now()
	l := d.launcher(t)
	defer d.dump(t, l)
	d.start()
	if code := l.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("launcher exit %d:\n%s", code, l.stderr.String())
	}
	t.Logf("k=8 permutation, 4 node containers + 3 coordinators + NATS: %.2fs from the first container to the merged result",
		time.Since(start).Seconds())
	var sum struct {
		Perf struct {
			Wall float64 `json:"wall_seconds"`
		} `json:"perf"`
		Extra struct {
			Distributed struct {
				PerNode []struct {
					Wall float64 `json:"wall_seconds"`
				} `json:"per_node"`
			} `json:"distributed"`
		} `json:"extra"`
	}
	if b, err := os.ReadFile(filepath.Join(l.out, "summary.json")); err == nil && json.Unmarshal(b, &sum) == nil {
		var nodes []string
		for _, n := range sum.Extra.Distributed.PerNode {
			nodes = append(nodes, fmt.Sprintf("%.2fs", n.Wall))
		}
		t.Logf("the launcher's wall time (from its start, waiting for the containers included): %.2fs; each node from its setup to the last window: %s",
			sum.Perf.Wall, strings.Join(nodes, " "))
	}
	sameOutputs(t, ref, l.out)
	// The nodes stored their results in JetStream too (lockstep nats has
	// it on): fetched back, they are the same bytes.
	fetched := filepath.Join(t.TempDir(), "fetched")
	if b, err := exec.Command(lockstepHost(t), "fetch-results", d.run, "--nats", d.natsURL, "--out", fetched).CombinedOutput(); err != nil {
		t.Fatalf("fetch-results: %v: %s", err, b)
	} else {
		t.Logf("%s", bytes.TrimSpace(b))
	}
	sameOutputs(t, ref, fetched)
	for _, m := range d.nodes() {
		if code, err := e.exitCode(m, 30*time.Second); err != nil || code != 0 {
			t.Errorf("%s: exit %d, %v", m, code, err)
		}
	}
	// A coordinator exits once it has applied the run's end; a follower
	// that had not when the others left stays (the cleanup removes it).
	for _, m := range []string{"c1", "c2", "c3"} {
		st, _ := docker("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", e.name(m))
		t.Logf("coordinator %s after the run: %s", m, st)
	}
}

// Case (b): the raft leader's container is killed mid-run; a follower
// takes over and the run completes, byte-identical.
func TestCluster_B_LeaderKilled(t *testing.T) {
	file := scenarioFile(t, longYAML(t))
	ref := reference(t, file)
	e := newEnv(t)
	d := e.deploy(t, file, 4, 20*time.Second)
	w := watch(t, d.natsURL, d.run)
	l := d.launcher(t)
	defer d.dump(t, l)
	d.start()
	st := w.untilWindow(t, 1000, 2*time.Minute)
	killed := time.Now()
	mustDocker(t, "kill", e.name(st.ID))
	t.Logf("killed the leader %s (term %d) at window %d", st.ID, st.Term, st.Window)
	if code := l.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("launcher exit %d:\n%s", code, l.stderr.String())
	}
	g, ok := w.firstGrantAfter(killed, st.Term)
	if !ok {
		t.Fatalf("no grant from a term above %d after the kill", st.Term)
	}
	t.Logf("leader container killed -> next granted window (%d, term %d): %v", g.window, g.term, g.at.Sub(killed))
	if nl, _ := w.last(); nl.ID == st.ID {
		t.Errorf("the last status is still from %s", st.ID)
	}
	sameOutputs(t, ref, l.out)
}

// Case (c): a node's container is cut off the network mid-run and stays
// cut off: the run fails within a bounded time (the peer timeout plus a
// heartbeat) naming the partition, and writes what it has marked
// incomplete. (Reconnected within --peer-timeout it would resume: that
// is case d's ride-through, and liveness_test.go's.)
func TestCluster_C_NodeCutOff(t *testing.T) {
	file := scenarioFile(t, longYAML(t))
	e := newEnv(t)
	const peerTO = 3 * time.Second
	d := e.deploy(t, file, 4, peerTO)
	w := watch(t, d.natsURL, d.run)
	l := d.launcher(t)
	defer func() {
		if t.Failed() {
			d.dump(t, l)
		}
	}()
	d.start()
	w.untilWindow(t, 1000, 2*time.Minute)
	cut := time.Now()
	mustDocker(t, "network", "disconnect", "--force", e.net, e.name("n1"))
	code := l.wait(t, time.Minute)
	took := time.Since(cut)
	t.Logf("node n1 cut off -> run failed after %v: %s", took.Round(10*time.Millisecond), lastLine(l.stderr.String()))
	if code != 3 {
		t.Fatalf("launcher exit %d, want 3:\n%s", code, l.stderr.String())
	}
	if !strings.Contains(l.stderr.String(), "partition 1") {
		t.Errorf("the failure does not name partition 1:\n%s", l.stderr.String())
	}
	if bound := peerTO + 5*time.Second; took > bound {
		t.Errorf("failed after %v, want within %v", took, bound)
	}
	var sum struct {
		Complete *bool `json:"complete"`
	}
	b, err := os.ReadFile(filepath.Join(l.out, "summary.json"))
	if err != nil || json.Unmarshal(b, &sum) != nil || sum.Complete == nil || *sum.Complete {
		t.Errorf("summary.json should say complete: false: %s (%v)", b, err)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Case (d): the NATS container is restarted mid-run (a few seconds
// away, under --peer-timeout): every member reconnects, the leader
// resynchronises and the run completes, byte-identical.
func TestCluster_D_NATSRestarted(t *testing.T) {
	file := scenarioFile(t, longYAML(t))
	ref := reference(t, file)
	e := newEnv(t)
	d := e.deploy(t, file, 4, 20*time.Second)
	w := watch(t, d.natsURL, d.run)
	l := d.launcher(t)
	defer d.dump(t, l)
	d.start()
	st := w.untilWindow(t, 1000, 2*time.Minute)
	at := time.Now()
	mustDocker(t, "restart", "-t", "0", e.name("nats"))
	t.Logf("restarted NATS at window %d (%v)", st.Window, time.Since(at).Round(time.Millisecond))
	if code := l.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("launcher exit %d:\n%s", code, l.stderr.String())
	}
	sameOutputs(t, ref, l.out)
}
