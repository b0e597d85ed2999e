package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestDistModel_Terms runs scripts/dist-model.py on two made-up summaries
// whose terms are easy to add up by hand (docs/decisions.md, "A model for
// many machines" and "a server per machine"): one partition ran 100
// windows in 1 s (C = 10,000 µs a window), four in-memory partitions sent
// 3,000 packets across the cut with equal events. At P = 16, RTT 40 µs and
// the default unit costs: compute 625, packets 3,750/1,600 × 0.36, reports
// 15 × 2 (--report-us 2; by default the measured 15 × (0.09 + 0.0035 ×
// 16)), latency 0.5 × 40 + 20; the fan-out 16 × 15 = 240 with one
// server (each report to the 15 other nodes; the coordinator hears none),
// 2·16 − 2 = 30 with a server each (and a second server's 20 µs), 15
// with each node serving (no second hop).
func TestDistModel_Terms(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is missing (bench-dist and the model need it)")
		}
		t.Skip("no python3 to run scripts/dist-model.py")
	}
	dir := t.TempDir()
	one := filepath.Join(dir, "one.json")
	part := filepath.Join(dir, "part.json")
	if err := os.WriteFile(one, []byte(`{"perf": {"wall_seconds": 1.0, "setup_seconds": 0}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(part, []byte(`{"extra": {"distributed": {"windows": 100, "cross_packets": 3000,
		"per_node": [{"events": 100}, {"events": 100}, {"events": 100}, {"events": 100}]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	packets := 3750.0 / 1600 * 0.36
	for _, c := range []struct {
		args     []string
		total    float64
		limit    string
		measured bool // the default --report-us (else 2 µs)
	}{
		{nil, 625 + packets + 30 + 40 + 240, "server", false},
		{[]string{"--servers", "machine"}, 625 + packets + 30 + 40 + 20 + 30, "latency", false},
		{[]string{"--servers", "node"}, 625 + packets + 30 + 40 + 15, "latency", false},
		// The measured default: 15 × (0.09 + 0.0035 × 16).
		{nil, 625 + packets + 15*0.146 + 40 + 240, "server", true},
	} {
		args := append([]string{filepath.Join("..", "..", "scripts", "dist-model.py"), "m=" + one + "," + part,
			"--machines", "16", "--rtt", "40"}, c.args...)
		if !c.measured {
			args = append(args, "--report-us", "2")
		}
		out, err := exec.Command(py, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, out)
		}
		m := regexp.MustCompile(`(?m)^m\s+16\s.*\|\s+([0-9.]+) \((\w+)\)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("%v: no line for 16 machines in\n%s", c.args, out)
		}
		got, _ := strconv.ParseFloat(string(m[1]), 64)
		if want := 10000 / c.total; got < want-0.006 || got > want+0.006 || string(m[2]) != c.limit {
			t.Errorf("%v: speed-up %v (%s), want %.2f (%s)", c.args, got, m[2], want, c.limit)
		}
	}
}
