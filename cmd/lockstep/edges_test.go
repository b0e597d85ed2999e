package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// The last progress line shows the run's end (summary.json's virtual
// end), not the stale RTO timer (1 s) the engine drains after the last
// flow, nor a distributed run's last window.
func TestRun_LastProgressLineIsTheRunsEnd(t *testing.T) {
	s := filepath.Join("..", "..", "examples", "dumbbell.yaml")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"one process", []string{"--partitions", "1"}},
		{"2 in-memory partitions", []string{"--partitions", "2", "--transport", "memory"}},
		{"2 partitions over NATS", []string{"--partitions", "2"}},
	} {
		out := filepath.Join(t.TempDir(), "out")
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"run", s, "--out", out, "--progress"}, c.args...), &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr.String())
		}
		var sum struct {
			EndPs int64 `json:"virtual_end_ps"`
		}
		if err := json.Unmarshal(readOut(t, out, "summary.json"), &sum); err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`virtual (\S+)`).FindAllStringSubmatch(stderr.String(), -1)
		if len(m) == 0 {
			t.Fatalf("%s: no progress line in %q", c.name, stderr.String())
		}
		if got, want := m[len(m)-1][1], sim.Time(sum.EndPs).String(); got != want || sum.EndPs == 0 {
			t.Errorf("%s: last progress line at virtual %s, want the run's end %s", c.name, got, want)
		}
	}
}

// lockstep topo prints the node names (by tier for a small fabric, every
// node with --nodes), and they are the names an impairment's link takes.
func TestTopo_NodesAreTheNamesImpairmentsTake(t *testing.T) {
	const topo = `topology:
  type: fattree
  fattree: {k: 4, host: {rate: 10Gbps, delay: 1us}, agg: {rate: 10Gbps, delay: 1us}, core: {rate: 10Gbps, delay: 1us}}
workload:
  - type: permutation
    size: 10KB
`
	dir := write(t, map[string]string{"s.yaml": topo})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"topo", filepath.Join(dir, "s.yaml")}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, w := range []string{"tier 0 nodes: h0 h1 ", "tier 3 nodes: core0 core1 core2 core3\n"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("topo (36 nodes) lacks %q:\n%s", w, stdout.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"topo", filepath.Join(dir, "s.yaml"), "--nodes"}, &stdout, &stderr); code != 0 {
		t.Fatalf("--nodes: exit %d: %s", code, stderr.String())
	}
	lines := regexp.MustCompile(`(?m)^  (\S+) (host|switch) (\d+): (.*)$`).FindAllStringSubmatch(stdout.String(), -1)
	if len(lines) != 16+20 {
		t.Fatalf("--nodes: %d node lines, want 36:\n%s", len(lines), stdout.String())
	}
	// Every switch and its first neighbour make a link an impairment accepts.
	var imp strings.Builder
	imp.WriteString("impairments:\n")
	for _, l := range lines {
		if l[2] == "switch" {
			fmt.Fprintf(&imp, "  - {link: [%s, %s], loss: 0.1%%}\n", l[1], strings.Fields(l[4])[0])
		}
	}
	dir2 := write(t, map[string]string{"s.yaml": topo + imp.String()})
	if code := run([]string{"validate", filepath.Join(dir2, "s.yaml")}, &stdout, &stderr); code != 0 {
		t.Errorf("the names topo --nodes prints are not link names: exit %d: %s", code, stderr.String())
	}
	// A large fabric says how to list them.
	stdout.Reset()
	if code := run([]string{"topo", "../../examples/fattree-k8-permutation.yaml"}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "nodes: 208 (lockstep topo --nodes lists their names)") {
		t.Errorf("k=8 topo: exit %d, want the --nodes hint:\n%s", code, stdout.String())
	}
}

// lockstep experiment without a name lists the experiments and their
// pages; with one it writes into out/experiments (not the checked-in
// docs/experiments, which --docs asks for), under the page name the help
// and the list give (multi_loss.md for multi-loss).
func TestExperiment_ListsAndWritesOutsideTheDocs(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"experiment"}, &stdout, &stderr); code != 0 {
		t.Fatalf("experiment: exit %d: %s", code, stderr.String())
	}
	for _, w := range []string{"multi-loss   multi_loss.md", "hystart", "scalable", "spraying"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("experiment (no name) lacks %q:\n%s", w, stdout.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"experiment", "--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "multi_loss.md") ||
		!strings.Contains(stdout.String(), "out/experiments") {
		t.Errorf("experiment --help: exit %d, want multi_loss.md and out/experiments in:\n%s", code, stdout.String())
	}
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if code := run([]string{"experiment", "multi-loss", "--examples", examples, "--quiet", "--quick"}, &stdout, &stderr); code != 0 {
		t.Fatalf("experiment multi-loss: exit %d: %s", code, stderr.String())
	}
	for _, f := range []string{"out/experiments/multi_loss.md", "out/experiments/multi_loss/fct.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("experiment multi-loss wrote no %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "docs")); err == nil {
		t.Errorf("experiment multi-loss wrote into docs/ without --docs")
	}
	stderr.Reset()
	if code := run([]string{"experiment", "multi-loss", "--docs", "--out", "x"}, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "--docs and --out") {
		t.Errorf("--docs with --out: exit %d %q, want %d naming both", code, stderr.String(), exitUsage)
	}
	stderr.Reset()
	if code := run([]string{"experiment", "multi-loss", "--docs", "--quick"}, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "--quick and --docs") {
		t.Errorf("--quick with --docs: exit %d %q, want %d naming both", code, stderr.String(), exitUsage)
	}
}
