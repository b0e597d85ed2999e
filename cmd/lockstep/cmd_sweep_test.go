package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A seed-dependent scenario: ECMP hashing and random spraying on a small
// leaf-spine.
const sweepBase = `name: base
topology:
  type: leafspine
  leafspine:
    leaves: 2
    spines: 2
    hosts_per_leaf: 4
    host: {rate: 10Gbps, delay: 1us, buffer: 64KiB}
    fabric: {rate: 10Gbps, delay: 1us, buffer: 64KiB}
switch: {forwarding: spray}
transport: {cc: CC, rto: {min: 1ms}}
workload:
  - type: permutation
    size: 200KB
`

// stripped is summary.json without perf (the only machine-dependent
// part).
func stripped(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "perf")
	return m
}

func TestSweep_RunsAreTheRunAloneAndResume(t *testing.T) {
	dir := write(t, map[string]string{
		"a/base.yaml": strings.Replace(sweepBase, "CC", "reno", 1),
		"b/base.yaml": strings.Replace(sweepBase, "CC", "cubic", 1),
		"a/spec.yaml": "scenario: base.yaml\nparameters:\n  transport.cc: [reno, cubic]\n" +
			"  topology.leafspine.host.buffer: [32KiB, 64KiB]\nseeds: [1, 2]\n",
	})
	out := filepath.Join(dir, "sweep")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"sweep", filepath.Join(dir, "a/spec.yaml"), "--out", out, "--parallel", "2"}, &stdout, &stderr); code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "8 runs (8 run, 0 resumed)") {
		t.Errorf("stdout %q", stdout.String())
	}
	// The point cubic/64KiB/seed 2 is b/base.yaml (cubic, 64KiB) run alone
	// with --seed 2: the same files, byte for byte, but perf.
	alone := filepath.Join(dir, "alone")
	if code := run([]string{"run", filepath.Join(dir, "b/base.yaml"), "--out", alone, "--seed", "2", "--quiet"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr.String())
	}
	point := filepath.Join(out, "cc=cubic,buffer=64KiB", "seed=2")
	for _, f := range []string{"fct.csv", "queues.csv"} {
		a, _ := os.ReadFile(filepath.Join(alone, f))
		p, err := os.ReadFile(filepath.Join(point, f))
		if err != nil || !bytes.Equal(a, p) || len(a) == 0 {
			t.Errorf("%s differs between the sweep's point and the run alone (%v)", f, err)
		}
	}
	sa, sp := stripped(t, filepath.Join(alone, "summary.json")), stripped(t, filepath.Join(point, "summary.json"))
	if ja, _ := json.Marshal(sa); string(ja) != func() string { jp, _ := json.Marshal(sp); return string(jp) }() {
		t.Errorf("summary.json differs:\nalone %s\npoint %s", ja, func() string { jp, _ := json.Marshal(sp); return string(jp) }())
	}
	// Seeds give different runs here (spraying draws per packet).
	f1, _ := os.ReadFile(filepath.Join(out, "cc=cubic,buffer=64KiB", "seed=1", "fct.csv"))
	f2, _ := os.ReadFile(filepath.Join(point, "fct.csv"))
	if bytes.Equal(f1, f2) {
		t.Error("seeds 1 and 2 gave the same fct.csv; the test scenario should depend on the seed")
	}

	rows := readCSV(t, filepath.Join(out, "sweep.csv"))
	if len(rows) != 9 || rows[0][1] != "transport.cc" || rows[0][2] != "topology.leafspine.host.buffer" || rows[0][3] != "seed" {
		t.Fatalf("sweep.csv: %d rows, header %v", len(rows), rows[0])
	}
	for _, want := range []string{"fct_p50_ns", "fct_p99_ns", "fct_p999_ns", "slowdown_p50", "slowdown_p99", "drops", "ecn_marks", "events_per_second"} {
		if !strings.Contains(strings.Join(rows[0], ","), want) {
			t.Errorf("sweep.csv has no %s column", want)
		}
	}
	sum := readCSV(t, filepath.Join(out, "sweep-summary.csv"))
	if len(sum) != 5 || sum[1][3] != "2" || !strings.Contains(strings.Join(sum[0], ","), "slowdown_p99_mean,slowdown_p99_ci95") {
		t.Fatalf("sweep-summary.csv: %v", sum)
	}

	// Again: every run is resumed. Then remove one run's summary: only
	// that one runs.
	stdout.Reset()
	if code := run([]string{"sweep", filepath.Join(dir, "a/spec.yaml"), "--out", out}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "8 runs (0 run, 8 resumed)") {
		t.Fatalf("second sweep: exit %d, stdout %q, stderr %s", code, stdout.String(), stderr.String())
	}
	if err := os.Remove(filepath.Join(point, "summary.json")); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if code := run([]string{"sweep", filepath.Join(dir, "a/spec.yaml"), "--out", out}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "8 runs (1 run, 7 resumed)") {
		t.Fatalf("third sweep: exit %d, stdout %q", code, stdout.String())
	}
	if again := readCSV(t, filepath.Join(out, "sweep.csv")); len(again) != len(rows) {
		t.Errorf("sweep.csv after resuming has %d rows, want %d", len(again), len(rows))
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestSweep_BadSpecIsOneLineNamingFileAndPath(t *testing.T) {
	dir := write(t, map[string]string{"base.yaml": goodTopo + goodFlows})
	for spec, want := range map[string]string{
		"scenario: base.yaml\nparameters:\n  switch.buffer: [1MB]\n":   `spec.yaml: parameters: switch.buffer: no field "buffer" in switch`,
		"scenario: base.yaml\nparameters:\n  transport.cc: [nosuch]\n": `spec.yaml: point cc=nosuch/seed=1:`,
		"scenario: base.yaml\nparameters:\n  transport.mtu: [lots]\n":  `spec.yaml: parameters: transport.mtu: "lots"`,
		"scenario: base.yaml\nparameters:\n  transport.cc: reno\n":     `spec.yaml:3:`,
		"scenario: base.yaml\nseeds: {from: 3, to: 1}\n":               `want from <= to`,
		"scenario: base.yaml\nparameter:\n  transport.cc: [reno]\n":    `spec.yaml:2:`,
		"scenario: nosuch.yaml\nparameters:\n  transport.cc: [reno]\n": `nosuch.yaml`,
	} {
		p := filepath.Join(dir, "spec.yaml")
		if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := run([]string{"sweep", p, "--out", filepath.Join(dir, "out")}, &stdout, &stderr)
		msg := strings.TrimSpace(stderr.String())
		if code != 2 || !strings.Contains(msg, want) || strings.Count(msg, "\n") > 0 {
			t.Errorf("spec %q: exit %d, stderr %q; want exit 2 and one line containing %q", spec, code, msg, want)
		}
	}
}
