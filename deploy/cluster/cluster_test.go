//go:build cluster

package cluster

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
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

// k8YAML is examples/fattree-k8-permutation.yaml: 2 MB flows, about
// 1,300 windows.
func k8YAML(t testing.TB) string {
	b, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "fattree-k8-permutation.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// longYAML is the k=8 fat-tree permutation with 12 MB flows: about 5200
// windows, several seconds across containers, so that there is a "mid-run"
// to kill, cut and restart things in.
func longYAML(t testing.TB) string {
	b := k8YAML(t)
	s := strings.Replace(b, "size: 2MB", "size: 12MB", 1)
	if s == b {
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

// token is the run's NATS token: the launcher gets it in its environment
// ($LOCKSTEP_NATS_TOKEN), never in its argv.
func startLauncher(t testing.TB, file, natsURL, run, token string, p int, extra ...string) *launcher {
	t.Helper()
	l := &launcher{done: make(chan struct{}), out: filepath.Join(t.TempDir(), "out")}
	args := append([]string{"run", file, "--partitions", fmt.Sprint(p), "--external", "--nats", natsURL,
		"--run-id", run, "--out", l.out, "--quiet"}, extra...)
	l.cmd = exec.Command(lockstepHost(t), args...)
	l.cmd.Env = append(os.Environ(), "LOCKSTEP_NATS_TOKEN="+token)
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

// watcher follows a run from outside: the leaders' status, and when each
// term's leader first spoke (with the window its observer had seen).
type watcher struct {
	mu     sync.Mutex
	status []wire.Status // guarded by mu
	terms  []termSeen    // guarded by mu
	nc     *nats.Conn
}

type termSeen struct {
	at     time.Time
	term   uint64
	window uint64
}

func watch(t testing.TB, url, run, token string) *watcher {
	t.Helper()
	subj, err := wire.NewSubjects(run)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		nats.RetryOnFailedConnect(true), nats.Token(token))
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
			if n := len(w.terms); n == 0 || w.terms[n-1].term < st.Term {
				w.terms = append(w.terms, termSeen{at: time.Now(), term: st.Term, window: st.Window})
			}
			w.mu.Unlock()
		}
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

// firstTermAfter is the first status seen after at from a term above term.
func (w *watcher) firstTermAfter(at time.Time, term uint64) (termSeen, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range w.terms {
		if g.at.After(at) && g.term > term {
			return g, true
		}
	}
	return termSeen{}, false
}

// deployment is one run across containers, as deploy/compose/ describes
// it: NATS (lockstep nats, JetStream on), three coordinators with raft
// between them, P nodes, all on e's network; the launcher on this host
// reaches NATS through a loopback port. NATS requires the run's own
// token, which every member gets from an env file (docker run
// --env-file: not in any argv, on the host or in the containers).
type deployment struct {
	e       *env
	run     string
	file    string
	p       int
	port    int
	natsURL string // from this host
	peerTO  time.Duration
	token   string
	envFile string // LOCKSTEP_NATS_TOKEN=token, mode 0600
	// coordArgs are more arguments for the coordinators (checkpoints).
	coordArgs []string
}

func (e *env) deploy(t testing.TB, file string, p int, peerTimeout time.Duration) *deployment {
	d := &deployment{e: e, run: "r" + e.id, file: file, p: p, port: freePort(t), peerTO: peerTimeout, token: newToken(t)}
	d.envFile = tokenEnvFile(t, d.token)
	d.natsURL = fmt.Sprintf("nats://127.0.0.1:%d", d.port)
	e.run(container{member: "nats", opts: []string{"-p", fmt.Sprintf("127.0.0.1:%d:4222", d.port), "--env-file", d.envFile},
		args: []string{"nats", "--addr", "0.0.0.0:4222", "--store", "/tmp/js"}})
	waitNATS(t, d.natsURL, d.token)
	return d
}

// newToken is a random per-run NATS token.
func newToken(t testing.TB) string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// tokenEnvFile writes a docker --env-file giving LOCKSTEP_NATS_TOKEN.
func tokenEnvFile(t testing.TB, token string) string {
	p := filepath.Join(t.TempDir(), "credentials.env")
	if err := os.WriteFile(p, []byte("LOCKSTEP_NATS_TOKEN="+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// refusesAnonymous checks that the NATS server on url refuses a client
// without the token, and one with a wrong token.
func refusesAnonymous(t testing.TB, url string) {
	t.Helper()
	for what, opts := range map[string][]nats.Option{"no token": nil, "a wrong token": {nats.Token("wrong")}} {
		nc, err := nats.Connect(url, append(opts, nats.MaxReconnects(0), nats.Timeout(5*time.Second))...)
		if err == nil {
			nc.Close()
			t.Errorf("NATS on %s accepted a client with %s", url, what)
		} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Errorf("NATS on %s, a client with %s: %v; want an authorization violation", url, what, err)
		}
	}
}

// waitNATS waits until a NATS server answers on url (with token).
func waitNATS(t testing.TB, url, token string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		nc, err := nats.Connect(url, nats.Timeout(time.Second), nats.Token(token))
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
		d.e.run(container{member: id, opts: []string{"-v", d.file + ":/scenario.yaml:ro", "--env-file", d.envFile},
			args: append(append([]string{"coordinator", "/scenario.yaml", "--partitions", fmt.Sprint(d.p), "--id", id,
				"--raft-addr", id + ":7000", "--peers", peers}, d.common()...), d.coordArgs...)})
	}
	for i := 0; i < d.p; i++ {
		d.e.run(container{member: fmt.Sprintf("n%d", i), opts: []string{"--env-file", d.envFile},
			args: append([]string{"node", "--partition", fmt.Sprint(i)}, d.common()...)})
	}
}

func (d *deployment) launcher(t testing.TB, extra ...string) *launcher {
	return startLauncher(t, d.file, d.natsURL, d.run, d.token, d.p, append([]string{"--peer-timeout", d.peerTO.String()}, extra...)...)
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
// containers and a NATS container is byte-identical to one process. NATS
// requires the run's token: a client without it is refused.
func TestCluster_A_SameAsOneProcess(t *testing.T) {
	file := scenarioFile(t, k8YAML(t))
	ref := reference(t, file)
	e := newEnv(t)
	d := e.deploy(t, file, 4, 20*time.Second)
	refusesAnonymous(t, d.natsURL)
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
	fetch := exec.Command(lockstepHost(t), "fetch-results", d.run, "--nats", d.natsURL, "--out", fetched)
	fetch.Env = append(os.Environ(), "LOCKSTEP_NATS_TOKEN="+d.token)
	if b, err := fetch.CombinedOutput(); err != nil {
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
	// No coordinator lingers: each exits once it has applied the run's
	// end, or heard the last leader say so and found no leader left.
	for _, m := range []string{"c1", "c2", "c3"} {
		if code, err := e.exitCode(m, 30*time.Second); err != nil || code != 0 {
			t.Errorf("coordinator %s: exit %d, %v", m, code, err)
		}
	}
}

// Case (b): the raft leader's container is killed mid-run; a follower
// takes over and the run completes, byte-identical.
func TestCluster_B_LeaderKilled(t *testing.T) {
	file := scenarioFile(t, longYAML(t))
	ref := reference(t, file)
	e := newEnv(t)
	d := e.deploy(t, file, 4, 20*time.Second)
	w := watch(t, d.natsURL, d.run, d.token)
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
	// The nodes run the barrier themselves: the run did not wait for the
	// successor, whose first status may come after the run's end; it must
	// come (the coordinators outlive the nodes until the end is applied).
	g, ok := w.firstTermAfter(killed, st.Term)
	if !ok {
		t.Fatalf("no status from a term above %d after the kill", st.Term)
	}
	t.Logf("leader container killed -> successor's first status (term %d, window %d): %v", g.term, g.window, g.at.Sub(killed))
	if nl, _ := w.last(); nl.ID == st.ID {
		t.Errorf("the last status is still from %s", st.ID)
	}
	sameOutputs(t, ref, l.out)
}

// Case (f), issue 22: the coordinators ask for a checkpoint every 100 µs
// of virtual time (the nodes store their parts in the NATS container's
// JetStream); once one is committed, a node's container is killed (docker
// kill: SIGKILL) and started again with its partition (docker start, as a
// restart policy or Kubernetes would). The new node asks for the setup,
// every node rolls back to the last committed checkpoint, and the run
// completes (exit 0) byte-identical to one process, with the restart in
// raft.
func TestCluster_F_NodeKilledRestarts(t *testing.T) {
	file := scenarioFile(t, longYAML(t))
	ref := reference(t, file)
	e := newEnv(t)
	d := e.deploy(t, file, 4, 20*time.Second)
	d.coordArgs = []string{"--checkpoint-every", "100us", "--max-restarts", "2"}
	w := watch(t, d.natsURL, d.run, d.token)
	l := d.launcher(t)
	defer d.dump(t, l)
	d.start()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if st, ok := w.last(); ok && st.Checkpoint != nil {
			t.Logf("checkpoint of window %d committed; leader at window %d", st.Checkpoint.Window, st.Window)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint committed within 3 minutes")
		}
		time.Sleep(20 * time.Millisecond) // polling the watcher against the deadline
	}
	mustDocker(t, "kill", e.name("n2"))
	mustDocker(t, "start", e.name("n2"))
	if code := l.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("launcher exit %d:\n%s", code, l.stderr.String())
	}
	sameOutputs(t, ref, l.out)
	st, _ := w.last()
	if len(st.Restarts) != 1 || st.Restarts[0].Partition != 2 || st.Restarts[0].FromWindow == 0 {
		t.Errorf("the leader's last status says restarts %+v: want one, of partition 2, from a checkpoint", st.Restarts)
	}
	t.Logf("restarts: %+v", st.Restarts)
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
	w := watch(t, d.natsURL, d.run, d.token)
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
	w := watch(t, d.natsURL, d.run, d.token)
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
