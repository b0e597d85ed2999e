package main

import (
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// benchDistYAML is a k=4 fat-tree permutation, small enough for
// bench-dist's five modes to take seconds under the race detector.
const benchDistYAML = `name: bench-dist-k4
seed: 3
topology:
  type: fattree
  fattree:
    k: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 1MiB}
    agg:  {rate: 100Gbps, delay: 1us, buffer: 1MiB}
    core: {rate: 100Gbps, delay: 1us, buffer: 1MiB}
transport: {cc: reno, mtu: 4096}
workload:
  - {type: permutation, size: 4MB}
`

// TestBenchDist_EveryMode runs scripts/bench-dist.sh (make bench-dist)
// with this test binary as lockstep on a small fat-tree, P=2, every mode
// but containers (PHASES=1, ONESERVER=1), and reads the CSV it writes: a row per mode;
// the same number of windows in every distributed mode (the grants do not
// depend on the transport or the phases); for node processes the
// per-window split, the round trip, the nodes' CPU and the launcher's;
// and the closing lines. A summary.json field the script reads that was
// renamed or dropped fails it.
func TestBenchDist_EveryMode(t *testing.T) {
	requireWired(t)
	for _, tool := range []string{"python3", "bash", "awk"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing (bench-dist needs it)", tool)
			}
			t.Skipf("no %s to run scripts/bench-dist.sh", tool)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := write(t, map[string]string{"k4.yaml": benchDistYAML})
	out := filepath.Join(dir, "dist.csv")
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "bench-dist.sh"), exe)
	cmd.Env = append(os.Environ(), asMainEnv+"=1", "SCENARIOS="+filepath.Join(dir, "k4.yaml"), "P=2", "REPS=1",
		"PHASES=1", "ONESERVER=1", "CSV="+out)
	stdout, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench-dist: %v\n%s", err, stdout)
	}
	for _, want := range []string{"k4: median wall", "k4: median CPU", "procs: median net wait per window",
		"procs reach", "procs-1ph reach", "procs-1srv reach", "every run's row in " + out} {
		if !strings.Contains(string(stdout), want) {
			t.Errorf("bench-dist's output has no %q:\n%s", want, stdout)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("an empty CSV")
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	rows := map[string][]string{}
	for _, r := range recs[1:] {
		rows[r[col["mode"]]] = r
	}
	num := func(mode, field string) float64 {
		t.Helper()
		r, ok := rows[mode]
		i, ok2 := col[field]
		if !ok || !ok2 {
			t.Fatalf("no %s row or no %s column in %v", mode, field, recs)
		}
		v, err := strconv.ParseFloat(r[i], 64)
		if err != nil {
			t.Fatalf("%s %s: %q: %v", mode, field, r[i], err)
		}
		return v
	}
	if len(rows) != 6 {
		t.Errorf("modes %v, want 1, mem, procs, mem-2ph, procs-1ph, procs-1srv", rows)
	}
	windows := num("mem", "windows")
	for _, m := range []string{"1", "mem", "procs", "mem-2ph", "procs-1ph", "procs-1srv"} {
		if num(m, "wall_s") <= 0 || num(m, "run_s") <= 0 || num(m, "tree_cpu_s") <= 0 {
			t.Errorf("%s: wall %v run %v CPU %v", m, num(m, "wall_s"), num(m, "run_s"), num(m, "tree_cpu_s"))
		}
		if m == "1" {
			continue
		}
		if w := num(m, "windows"); w != windows || w < 10 {
			t.Errorf("%s: %v windows, want %v as in memory (and more than a few)", m, w, windows)
		}
		// Every distributed run splits its windows (a field the script
		// no longer finds is an empty cell, which fails here).
		for _, field := range []string{"compute_us", "imbalance_us", "net_us"} {
			if v := num(m, field); v < 0 {
				t.Errorf("%s: %s %v", m, field, v)
			}
		}
	}
	for _, m := range []string{"procs", "procs-1ph", "procs-1srv"} {
		for _, field := range []string{"compute_us", "cpu", "launcher_us"} {
			if num(m, field) <= 0 {
				t.Errorf("%s: %s %v, want > 0", m, field, num(m, field))
			}
		}
		// The round trip is sampled every 50 ms of the run.
		if rows[m][col["rtt_us"]] == "" && num(m, "run_s") >= 0.1 {
			t.Errorf("%s: no round trip sampled in a %v s run", m, num(m, "run_s"))
		}
	}
	if num("procs", "ahead_us") <= 0 || num("procs-1ph", "ahead_us") != 0 {
		t.Errorf("ahead: %v with two-phase windows, %v without; want > 0 and 0", num("procs", "ahead_us"), num("procs-1ph", "ahead_us"))
	}
}
