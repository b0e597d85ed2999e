package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The distributed checkpoints (docs/decisions.md, "Distributed
// checkpoints"): node processes killed (SIGKILL) during a run over NATS,
// the launcher killed then `lockstep resume`, corrupted and truncated
// parts refused by name.

// killPoint is where a test kills a node: once at least one checkpoint is
// committed (its manifest written, so the launcher knows) and the nodes
// have begun checkpoint dir number dirs (counting the pruned ones): while
// they write it, or, with committed, once the newest is committed (between
// two checkpoints).
type killPoint struct {
	dirs      int
	committed bool
	part      int
}

// ckptWatch follows a checkpoint directory: the checkpoint directories
// seen so far and whether one has been committed (has a manifest).
type ckptWatch struct {
	dir       string
	seen      map[string]bool
	committed bool // one has been
	newest    bool // the newest seen is
}

func (w *ckptWatch) poll() {
	ents, _ := os.ReadDir(w.dir) // in name order: ckpt-<window, 12 digits>
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "ckpt-") {
			continue
		}
		w.seen[e.Name()] = true
		_, err := os.Stat(filepath.Join(w.dir, e.Name(), "manifest.json"))
		w.newest = err == nil
		w.committed = w.committed || w.newest
	}
}

// nodeProcess returns the PID of the `lockstep node --partition part`
// child process of this process (0: none running).
func nodeProcess(part int) int {
	ents, _ := os.ReadDir("/proc")
	me := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, the last ')' ends it.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(me) {
			continue
		}
		cl, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(cl), "\x00")
		if len(args) > 1 && args[1] == "node" && strings.Contains(string(cl), "\x00--partition\x00"+strconv.Itoa(part)+"\x00") {
			return pid
		}
	}
	return 0
}

// runKilling runs `lockstep args...` in this process and kills partition
// at.part's node process at point at; it returns the run's exit status,
// stdout and stderr.
func runKilling(t *testing.T, ckdir string, at killPoint, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(args, &stdout, &stderr) }()
	w := &ckptWatch{dir: ckdir, seen: map[string]bool{}}
	deadline := time.Now().Add(3 * time.Minute)
	killed := false
	for !killed {
		select {
		case code := <-done:
			t.Fatalf("the run ended (exit %d) before the kill at %+v (%d checkpoint dirs seen, committed %v): %s",
				code, at, len(w.seen), w.committed, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no kill point %+v within 3 minutes", at)
		}
		w.poll()
		if w.committed && len(w.seen) >= at.dirs && (!at.committed || w.newest) {
			if pid := nodeProcess(at.part); pid > 0 {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
				continue
			}
		}
		time.Sleep(2 * time.Millisecond) // a poll, bounded by the deadline
	}
	select {
	case code := <-done:
		return code, stdout.String(), stderr.String()
	case <-time.After(5 * time.Minute):
		t.Fatalf("the run did not end within 5 minutes of the kill")
	}
	return 0, "", ""
}

// ckptSummary is what the tests read of summary.json's perf.checkpoints.
func ckptSummary(t *testing.T, out string) ckptPerf {
	t.Helper()
	var s struct {
		Complete bool `json:"complete"`
		Perf     struct {
			Checkpoints *ckptPerf `json:"checkpoints"`
		} `json:"perf"`
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil || s.Perf.Checkpoints == nil {
		t.Fatalf("%s/summary.json: no perf.checkpoints (%v)", out, err)
	}
	if !s.Complete {
		t.Errorf("%s/summary.json: not complete", out)
	}
	return *s.Perf.Checkpoints
}

// randomLong is randomYAML (random losses, bursts, reordering, RED,
// spraying, an incast, cwnd, queue samples and pcap) with 4 MB flows:
// about 3,400 windows in 4 partitions.
func randomLong(t *testing.T) string {
	t.Helper()
	long := strings.Replace(randomYAML, "size: 1MB", "size: 4MB", 1)
	if long == randomYAML {
		t.Fatal("randomYAML: no \"size: 1MB\" to lengthen")
	}
	return filepath.Join(write(t, map[string]string{"r.yaml": long}), "r.yaml")
}

// killedNodes kills a random node process of a 4-partition --procs run
// with 3 coordinators at each point, and checks that every run completes
// (exit 0) with the single-process run's files, having restarted once.
func killedNodes(t *testing.T, scen string, points []killPoint, every string, seed uint64) {
	t.Setenv(asMainEnv, "1") // for the child processes only
	dir := t.TempDir()
	single := filepath.Join(dir, "single")
	runCLI(t, "run", scen, "--out", single, "--quiet", "--partitions", "1")
	rng := rand.New(rand.NewPCG(seed, 22))
	for _, at := range points {
		at.part = rng.IntN(4)
		n := at.dirs
		out := filepath.Join(dir, fmt.Sprintf("kill-%d-%v-node-%d", n, at.committed, at.part))
		code, _, stderr := runKilling(t, out+".ckpt", at, "run", scen, "--out", out, "--quiet", "--checkpoint-dir", out+".ckpt",
			"--partitions", "4", "--procs", "--coordinators", "3", "--checkpoint-every", every)
		if code != 0 {
			t.Fatalf("node %d killed at checkpoint dir %d: exit %d: %s", at.part, n, code, stderr)
		}
		if !strings.Contains(stderr, fmt.Sprintf("partition %d: node process", at.part)) {
			t.Errorf("stderr does not say partition %d's process was restarted: %s", at.part, stderr)
		}
		sameFiles(t, out, single, out)
		cp := ckptSummary(t, out)
		if cp.Restarts != 1 || len(cp.Restarted) != 1 || cp.Restarted[0].Partition != at.part ||
			cp.Restarted[0].FromWindow == 0 || cp.Restarted[0].FromWindow > cp.Restarted[0].LostAt {
			t.Errorf("node %d killed at checkpoint dir %d: perf.checkpoints restarts %d %+v: want one restart of partition %d from a checkpoint's window",
				at.part, n, cp.Restarts, cp.Restarted, at.part)
		}
		if cp.Written == 0 || cp.Bytes == 0 {
			t.Errorf("perf.checkpoints %+v: want the checkpoints counted", cp)
		}
		t.Logf("node %d killed at checkpoint dir %d (committed %v): restarted %+v", at.part, n, at.committed, cp.Restarted)
	}
}

// TestCheckpoint_NodeKilledRunGoesOn kills a random node process of a
// 4-partition --procs run with 3 coordinators at two points (the issue's
// five are TestCheckpoint_NodeKilledAtFivePoints, -tags slow): each run
// rolls back to the last committed checkpoint, goes on with a new node
// process, and writes the single-process run's files.
func TestCheckpoint_NodeKilledRunGoesOn(t *testing.T) {
	requireWired(t)
	if testing.Short() {
		t.Skip("4 node processes and 3 coordinator processes, twice")
	}
	killedNodes(t, randomLong(t), []killPoint{{dirs: 2}, {dirs: 9, committed: true}}, "100us", 1)
}

// TestCheckpoint_NodeLostWithoutCheckpointFails: a node lost before any
// checkpoint is committed fails the run as without checkpoints (exit 3,
// partial results).
func TestCheckpoint_NodeLostWithoutCheckpointFails(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	scen := randomLong(t)
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"run", scen, "--out", out, "--quiet", "--partitions", "4", "--procs", "--checkpoint-every", "1s"}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if pid := nodeProcess(3); pid > 0 {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no node process 3 within 2 minutes")
		}
		time.Sleep(2 * time.Millisecond) // a poll, bounded by the deadline
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the run did not end within 3 minutes of the kill")
	}
	if code != exitFailed || !strings.Contains(stderr.String(), "partition 3") {
		t.Fatalf("exit %d, stderr %q: want 3 and partition 3 named", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Errorf("no partial results: %v", err)
	}
}

// TestCheckpoint_LauncherKilledResumes kills the launcher of a
// 4-partition --procs run (its children die with it) once checkpoints are
// committed, corrupts the newest committed checkpoint's part of node 1
// and truncates the one before's part of node 2: `lockstep resume`
// refuses both by name, resumes from the third, and writes the
// single-process run's files.
func TestCheckpoint_LauncherKilledResumes(t *testing.T) {
	requireWired(t)
	if testing.Short() {
		t.Skip("4 node processes and 3 coordinator processes, twice")
	}
	t.Setenv(asMainEnv, "1")
	scen := randomLong(t)
	dir := t.TempDir()
	single := filepath.Join(dir, "single")
	runCLI(t, "run", scen, "--out", single, "--quiet", "--partitions", "1")
	out := filepath.Join(dir, "out")
	ckdir := filepath.Join(dir, "ckpt") // outside out, whose files are compared
	cmd := exec.Command(os.Args[0], "run", scen, "--out", out, "--quiet", "--partitions", "4", "--procs", "--coordinators", "3",
		"--checkpoint-every", "100us", "--checkpoint-keep", "3", "--checkpoint-dir", ckdir)
	var errs bytes.Buffer
	cmd.Stderr = &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	committed := func() []string {
		ms, _ := filepath.Glob(filepath.Join(ckdir, "ckpt-*", "manifest.json"))
		return ms
	}
	deadline := time.Now().Add(3 * time.Minute)
	for len(committed()) < 3 {
		select {
		case err := <-exited:
			t.Fatalf("the run ended (%v) before 3 committed checkpoints: %s", err, errs.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no 3 committed checkpoints in %s within 3 minutes", ckdir)
		}
		time.Sleep(2 * time.Millisecond) // a poll, bounded by the deadline
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	// The children die with the launcher (Pdeathsig); the resumed run
	// must not meet them.
	ms := committed()
	if len(ms) < 3 {
		t.Fatalf("%d committed checkpoints after the kill, want 3", len(ms))
	}
	newest, second, third := filepath.Dir(ms[len(ms)-1]), filepath.Dir(ms[len(ms)-2]), filepath.Dir(ms[len(ms)-3])
	flipped := filepath.Join(newest, "part-1.ckpt")
	data, err := os.ReadFile(flipped)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-len(data)/3] ^= 0x40
	if err := os.WriteFile(flipped, data, 0o644); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(second, "part-2.ckpt")
	if err := os.Truncate(truncated, 1000); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"resume", ckdir}, &stdout, &stderr); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr.String())
	}
	var refusedFlipped, refusedTruncated bool
	for _, l := range strings.Split(stderr.String(), "\n") {
		refusedFlipped = refusedFlipped || strings.Contains(l, "refused") && strings.Contains(l, flipped) &&
			(strings.Contains(l, "SHA-256") || strings.Contains(l, "section"))
		refusedTruncated = refusedTruncated || strings.Contains(l, "refused") && strings.Contains(l, truncated) && strings.Contains(l, "truncated")
	}
	if !refusedFlipped || !refusedTruncated || !strings.Contains(stderr.String(), "resuming") || !strings.Contains(stderr.String(), third) {
		t.Fatalf("stderr %q: want %s and %s refused by name, and the run resumed from %s", stderr.String(), flipped, truncated, third)
	}
	// The refused ones are of windows the resumed run checkpoints again:
	// removed first, so that no stale part or manifest mixes with the new.
	for _, d := range []string{newest, second} {
		if !strings.Contains(stderr.String(), "removed "+d) {
			t.Errorf("stderr does not say %s was removed: %q", d, stderr.String())
		}
	}
	sameFiles(t, "resumed", single, out)
	cp := ckptSummary(t, out)
	if cp.ResumedFrom == nil || cp.ResumedFrom.Window == 0 || !strings.HasSuffix(third, fmt.Sprintf("%012d", cp.ResumedFrom.Window)) {
		t.Errorf("perf.checkpoints.resumed_from %+v: want %s", cp.ResumedFrom, third)
	}
}

// TestCheckpoint_HungNodeIsReplaced stops a node process (SIGSTOP) once a
// checkpoint is committed: silent for --peer-timeout, it is lost like a
// dead one (killed, replaced, every node rolled back), and the run
// completes with the single-process run's files.
func TestCheckpoint_HungNodeIsReplaced(t *testing.T) {
	requireWired(t)
	if testing.Short() {
		t.Skip("4 node processes, a 3 s peer timeout")
	}
	t.Setenv(asMainEnv, "1")
	scen := randomLong(t)
	dir := t.TempDir()
	single := filepath.Join(dir, "single")
	runCLI(t, "run", scen, "--out", single, "--quiet", "--partitions", "1")
	out := filepath.Join(dir, "out")
	ckdir := filepath.Join(dir, "ckpt")
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"run", scen, "--out", out, "--quiet", "--checkpoint-dir", ckdir, "--partitions", "4", "--procs",
			"--checkpoint-every", "100us", "--peer-timeout", "3s", "--status-every", "50ms"}, &stdout, &stderr)
	}()
	w := &ckptWatch{dir: ckdir, seen: map[string]bool{}}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		select {
		case code := <-done:
			t.Fatalf("the run ended (exit %d) before the stop: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no committed checkpoint within 3 minutes")
		}
		w.poll()
		if pid := nodeProcess(1); w.committed && pid > 0 {
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			break
		}
		time.Sleep(2 * time.Millisecond) // a poll, bounded by the deadline
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("the run did not end within 5 minutes of the stop")
	}
	if code != 0 || !strings.Contains(stderr.String(), "partition 1: node process") {
		t.Fatalf("exit %d: %s; want 0 and node 1's process replaced", code, stderr.String())
	}
	sameFiles(t, "hung node replaced", single, out)
	cp := ckptSummary(t, out)
	if cp.Restarts < 1 || cp.Restarted[0].Partition != 1 {
		t.Errorf("perf.checkpoints restarts %d %+v: want partition 1 restarted", cp.Restarts, cp.Restarted)
	}
	t.Logf("restarted %+v; stderr:\n%s", cp.Restarted, stderr.String())
}
