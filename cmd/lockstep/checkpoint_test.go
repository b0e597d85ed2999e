package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// k8Example is the k=8 fat-tree permutation of 2 MB flows: 1.9 ms of
// virtual time, 10 checkpoints at one every 150 µs (none once every flow
// has finished), so a kill after the seventh leaves a good part of the
// run to resume.
const k8Example = "../../examples/fattree-k8-permutation.yaml"

// k8WithFlows writes into dir the k=8 fat-tree permutation with flows of
// size (its 2 MB changed), for a run long enough to be killed or
// interrupted while it runs, and returns its path.
func k8WithFlows(t *testing.T, dir, size string) string {
	t.Helper()
	ex, err := os.ReadFile(k8Example)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Replace(string(ex), "size: 2MB", "size: "+size, 1)
	if long == string(ex) {
		t.Fatal("examples/fattree-k8-permutation.yaml: no \"size: 2MB\" to lengthen")
	}
	p := filepath.Join(dir, "long.yaml")
	if err := os.WriteFile(p, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// sameOutputs fails unless the run in got wrote the files of the run in
// want with the same bytes, summary.json's perf aside.
func sameOutputs(t *testing.T, want, got string) {
	t.Helper()
	list := func(dir string) []string {
		var fs []string
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "checkpoints" {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				fs = append(fs, rel)
			}
			return nil
		})
		sort.Strings(fs)
		return fs
	}
	wf, gf := list(want), list(got)
	if !reflect.DeepEqual(wf, gf) {
		t.Fatalf("files %v, want %v", gf, wf)
	}
	for _, f := range wf {
		if f == "summary.json" {
			if w, g := noTimings(stripped(t, filepath.Join(want, f))), noTimings(stripped(t, filepath.Join(got, f))); !reflect.DeepEqual(w, g) {
				wj, _ := json.Marshal(w)
				gj, _ := json.Marshal(g)
				t.Fatalf("summary.json outside perf:\n%s\nwant\n%s", gj, wj)
			}
			continue
		}
		a, _ := os.ReadFile(filepath.Join(want, f))
		b, _ := os.ReadFile(filepath.Join(got, f))
		if !bytes.Equal(a, b) {
			t.Fatalf("%s differs from the uninterrupted run's (%d and %d bytes)", f, len(b), len(a))
		}
	}
}

// noTimings drops, as scripts/same-outputs.sh does, the wall-clock
// timings of extra.distributed (the rest must be the same).
func noTimings(m map[string]any) map[string]any {
	var drop func(x any) any
	drop = func(x any) any {
		switch v := x.(type) {
		case map[string]any:
			o := map[string]any{}
			for k, e := range v {
				if !strings.Contains(k, "second") && !strings.Contains(k, "wait") && !strings.Contains(k, "wall") &&
					!strings.Contains(k, "window_us") && !strings.Contains(k, "rtt") {
					o[k] = drop(e)
				}
			}
			return o
		case []any:
			o := make([]any, len(v))
			for i, e := range v {
				o[i] = drop(e)
			}
			return o
		}
		return x
	}
	return drop(m).(map[string]any)
}

// killAfter starts `lockstep run args...` as a child process, and kills it
// (SIGKILL) once it has written n checkpoints into ckdir. It fails if the
// run ended by itself first.
func killAfter(t *testing.T, ckdir string, n int, args ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"run"}, args...)...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	var errs bytes.Buffer
	cmd.Stderr = &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	seen := map[string]bool{}
	deadline := time.Now().Add(90 * time.Second)
	for len(seen) < n {
		select {
		case err := <-exited:
			t.Fatalf("the run ended (%v) after %d checkpoints, before the kill: %s", err, len(seen), errs.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no %d checkpoints in %s within 90 s", n, ckdir)
		}
		ents, _ := os.ReadDir(ckdir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "ckpt-") {
				seen[e.Name()] = true
			}
		}
		time.Sleep(2 * time.Millisecond) // a poll, bounded by the deadline
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-exited
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !st.Signaled() {
		t.Fatalf("the run ended with %v before the kill: %s", err, errs.String())
	}
}

// TestCheckpoint_KilledRunResumesByteIdentical kills a run (SIGKILL) at
// several points, in one partition and in in-memory partitions, resumes
// it with `lockstep resume`, and compares every output with an
// uninterrupted run's.
func TestCheckpoint_KilledRunResumesByteIdentical(t *testing.T) {
	dir := t.TempDir()
	scen := k8Example
	for _, mode := range []struct {
		name  string
		args  []string
		kills []int // after how many checkpoints (-tags slow)
		quick []int // the same in make test
	}{
		{"one partition", []string{"--partitions", "1"}, []int{1, 4, 7}, []int{1, 7}},
		{"2 in memory", []string{"--partitions", "2", "--transport", "memory"}, []int{2, 6}, []int{4}},
	} {
		if !slowTests {
			mode.kills = mode.quick
		}
		ref := filepath.Join(dir, "ref-"+mode.args[1])
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"run", scen, "--out", ref, "--cwnd", "--quiet"}, mode.args...), &stdout, &stderr); code != 0 {
			t.Fatalf("%s: reference run: exit %d: %s", mode.name, code, stderr.String())
		}
		for _, n := range mode.kills {
			out := filepath.Join(dir, mode.args[1]+"-"+string(rune('a'+n)))
			ckdir := filepath.Join(out, "checkpoints")
			killAfter(t, ckdir, n, append([]string{scen, "--out", out, "--cwnd", "--quiet", "--checkpoint-every", "150us"}, mode.args...)...)
			stdout.Reset()
			stderr.Reset()
			if code := run([]string{"resume", out}, &stdout, &stderr); code != 0 {
				t.Fatalf("%s, killed after %d checkpoints: resume: exit %d: %s", mode.name, n, code, stderr.String())
			}
			if !strings.Contains(stderr.String(), "resuming") {
				t.Errorf("resume said nothing of where it resumes from: %q", stderr.String())
			}
			sameOutputs(t, ref, out)
			var s struct {
				Perf struct {
					Checkpoints ckptPerf `json:"checkpoints"`
				} `json:"perf"`
			}
			data, _ := os.ReadFile(filepath.Join(out, "summary.json"))
			if err := json.Unmarshal(data, &s); err != nil || s.Perf.Checkpoints.ResumedFrom == nil || s.Perf.Checkpoints.ResumedFrom.TimePS <= 0 {
				t.Errorf("%s: summary.json perf.checkpoints %+v (%v): want where it resumed from", mode.name, s.Perf.Checkpoints, err)
			}
		}
	}
}

// TestCheckpoint_CorruptCheckpointIsRefused corrupts and truncates the
// newest checkpoints of a killed run: resume refuses each with one line
// naming the file, and goes on from the newest good one; with none good
// it exits 2 naming them.
func TestCheckpoint_CorruptCheckpointIsRefused(t *testing.T) {
	dir := t.TempDir()
	scen := k8Example
	ref := filepath.Join(dir, "ref")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", scen, "--out", ref, "--quiet", "--partitions", "1"}, &stdout, &stderr); code != 0 {
		t.Fatalf("reference run: exit %d: %s", code, stderr.String())
	}
	out := filepath.Join(dir, "out")
	ckdir := filepath.Join(out, "checkpoints")
	killAfter(t, ckdir, 4, scen, "--out", out, "--quiet", "--partitions", "1", "--checkpoint-every", "150us", "--checkpoint-keep", "3")
	var cks []string
	ents, _ := os.ReadDir(ckdir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "ckpt-") {
			cks = append(cks, filepath.Join(ckdir, e.Name()))
		}
	}
	// Three kept; a fourth when the kill came between writing the newest
	// and removing the oldest.
	if len(cks) < 3 || len(cks) > 4 {
		t.Fatalf("%d checkpoints kept, want 3", len(cks))
	}
	cks = cks[len(cks)-3:]
	// The newest: a flipped byte in its graph; the one before: truncated.
	newest := filepath.Join(cks[2], stateName)
	data, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-len(data)/3] ^= 0x40
	if err := os.WriteFile(newest, data, 0o644); err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(cks[1], stateName)
	if err := os.Truncate(second, 1000); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"resume", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], newest) || !strings.Contains(lines[0], "header SHA-256") && !strings.Contains(lines[0], "section graph") ||
		!strings.Contains(lines[1], second) || !strings.Contains(lines[1], "truncated") || !strings.Contains(lines[2], cks[0]) {
		t.Fatalf("stderr %q: want the corrupted and the truncated file refused by name, then resuming from %s", stderr.String(), cks[0])
	}
	sameOutputs(t, ref, out)
	// None good (the resumed run wrote checkpoints of its own): exit 2,
	// naming each.
	files, _ := filepath.Glob(filepath.Join(ckdir, "ckpt-*", stateName))
	if len(files) == 0 {
		t.Fatalf("the resumed run left no checkpoint in %s", ckdir)
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		data[len(data)/2] ^= 1
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stderr.Reset()
	code := run([]string{"resume", out}, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "none usable") {
		t.Fatalf("resume with no good checkpoint: exit %d, %q; want 2 and none usable", code, stderr.String())
	}
	for _, f := range files {
		if !strings.Contains(stderr.String(), f) {
			t.Errorf("stderr does not name %s: %q", f, stderr.String())
		}
	}
}
