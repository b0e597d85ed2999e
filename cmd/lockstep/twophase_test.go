package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twoPhaseYAML is a ring all-reduce (signals between hosts cross the cut)
// on a k=4 fat-tree whose partitions keep interior elements, with a
// lossless class and PFC (PAUSE frames cross the cut too).
const twoPhaseYAML = `name: two-phase
topology:
  type: fattree
  fattree:
    k: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 64KiB}
    agg: {rate: 100Gbps, delay: 1us, buffer: 64KiB}
    core: {rate: 100Gbps, delay: 1us, buffer: 64KiB}
switch:
  classes: [{lossless: true}, {}]
  pfc: {xoff: 24KiB, xon: 12KiB}
transport: {cc: dctcp, ecn: true, init_cwnd: 64}
workload:
  - type: collective
    size: 1MB
    collective: {job: dp, op: allreduce, algorithm: ring, ranks: 8, chunks: 4, pipeline: 2, iterations: 2, compute: 20us}
  - {type: incast, n: 6, dst: 3, size: 200KB}
output: {cwnd: {all: true}, queues: {interval: 20us}}
`

// TestRunDistributed_TwoPhaseSameFiles: two-phase windows (on by default
// over NATS, placement.two_phase: false turns them off; in memory only
// with two_phase: true) write the single-process run's files over NATS,
// in goroutines and in node processes, and in memory; with them on the
// nodes do run first phases; node processes report their CPU time.
func TestRunDistributed_TwoPhaseSameFiles(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1") // for the child processes only
	dir := write(t, map[string]string{"on.yaml": twoPhaseYAML, "off.yaml": twoPhaseYAML + "placement: {two_phase: false}\n",
		"mem.yaml": twoPhaseYAML + "placement: {two_phase: true}\n"})
	single := filepath.Join(dir, "single")
	runCLI(t, "run", filepath.Join(dir, "on.yaml"), "--out", single, "--quiet")
	for _, c := range []struct {
		name, file  string
		args        []string
		ahead, proc bool
	}{
		{"2 partitions over NATS, two-phase", "on.yaml", []string{"--partitions", "2"}, true, false},
		{"2 partitions over NATS, one phase", "off.yaml", []string{"--partitions", "2"}, false, false},
		{"2 node processes, two-phase", "on.yaml", []string{"--partitions", "2", "--procs"}, true, true},
		{"2 partitions in memory, one phase (the default)", "on.yaml", []string{"--partitions", "2", "--transport", "memory"}, false, false},
		{"2 partitions in memory, two-phase", "mem.yaml", []string{"--partitions", "2", "--transport", "memory"}, true, false},
	} {
		out := filepath.Join(dir, strings.NewReplacer(" ", "_", ",", "").Replace(c.name))
		runCLI(t, append([]string{"run", filepath.Join(dir, c.file), "--out", out, "--quiet"}, c.args...)...)
		sameFiles(t, c.name, single, out)
		var sum struct {
			Extra struct {
				Distributed struct {
					PerNode []struct {
						AheadSeconds float64 `json:"ahead_seconds"`
						WallSeconds  float64 `json:"wall_seconds"`
						CPUSeconds   float64 `json:"cpu_seconds"`
						RunqSeconds  float64 `json:"runq_wait_seconds"`
					} `json:"per_node"`
					LauncherCPU float64 `json:"launcher_cpu_seconds"`
				} `json:"distributed"`
			} `json:"extra"`
		}
		data, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &sum); err != nil {
			t.Fatal(err)
		}
		var ahead float64
		for _, n := range sum.Extra.Distributed.PerNode {
			ahead += n.AheadSeconds
		}
		if c.ahead && ahead == 0 {
			t.Errorf("%s: no node ran a first phase (ahead_seconds 0 in summary.json)", c.name)
		}
		if !c.ahead && ahead != 0 {
			t.Errorf("%s: first phases ran for %vs", c.name, ahead)
		}
		// The launcher of node processes says what the embedded server
		// and the coordinators cost it; with the nodes in it, it says
		// nothing.
		if lc := sum.Extra.Distributed.LauncherCPU; c.proc && lc <= 0 || !c.proc && lc != 0 {
			t.Errorf("%s: launcher_cpu_seconds %v", c.name, lc)
		}
		// A node process says what CPU it had; goroutine nodes share
		// theirs and say nothing.
		for i, n := range sum.Extra.Distributed.PerNode {
			if c.proc && (n.CPUSeconds <= 0 || n.CPUSeconds > 2*n.WallSeconds+1) {
				t.Errorf("%s: node %d: cpu_seconds %v over %vs of wall time", c.name, i, n.CPUSeconds, n.WallSeconds)
			}
			if !c.proc && (n.CPUSeconds != 0 || n.RunqSeconds != 0) {
				t.Errorf("%s: node %d in a shared process: cpu_seconds %v, runq_wait_seconds %v", c.name, i, n.CPUSeconds, n.RunqSeconds)
			}
			// Linux says how long its threads waited for a CPU: never
			// none over a run with thousands of wake-ups (a wake-up
			// waits some nanoseconds at least), never above the wall
			// time of all its threads.
			if _, err := os.Stat("/proc/self/schedstat"); c.proc && err == nil && (n.RunqSeconds <= 0 || n.RunqSeconds > 64*n.WallSeconds) {
				t.Errorf("%s: node %d: runq_wait_seconds %v over %vs of wall time", c.name, i, n.RunqSeconds, n.WallSeconds)
			}
		}
	}
}
