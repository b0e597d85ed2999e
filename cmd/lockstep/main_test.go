package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/lockstep-sim/lockstep/internal/version"
)

// write puts files into a fresh directory and returns it.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const goodTopo = `topology:
  type: dumbbell
  dumbbell:
    senders: 2
    receivers: 2
    host: {rate: 10Gbps, delay: 1us}
    bottleneck: {rate: 10Gbps, delay: 1us}
`

const goodFlows = `workload:
  - type: flows
    flows: [{src: 0, dst: 2, size: 10KB}]
`

func TestRun_BadInputIsOneLineExit2AndWritesNothing(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		file  string   // the scenario to run (default s.yaml)
		want  []string // substrings of the one-line error
	}{
		{"unknown field", map[string]string{"s.yaml": strings.Replace(goodTopo, "senders: 2", "senderz: 2", 1) + goodFlows},
			"", []string{"s.yaml:4:5:", "topology.dumbbell.senderz", "unknown field"}},
		{"odd fat-tree radix", map[string]string{"s.yaml": `topology:
  type: fattree
  fattree:
    k: 7
    host: {rate: 10Gbps}
    agg: {rate: 10Gbps}
    core: {rate: 10Gbps}
` + goodFlows}, "", []string{"s.yaml", "k", "even"}},
		{"zero bandwidth", map[string]string{"s.yaml": strings.Replace(goodTopo, "host: {rate: 10Gbps", "host: {rate: 0Gbps", 1) + goodFlows},
			"", []string{"s.yaml", "topology.dumbbell.host.rate", "positive"}},
		{"negative bandwidth", map[string]string{"s.yaml": strings.Replace(goodTopo, "host: {rate: 10Gbps", "host: {rate: -10Gbps", 1) + goodFlows},
			"", []string{"s.yaml", "topology.dumbbell.host.rate"}},
		{"negative delay", map[string]string{"s.yaml": strings.Replace(goodTopo, "delay: 1us}\n    bottleneck", "delay: -1us}\n    bottleneck", 1) + goodFlows},
			"", []string{"s.yaml", "topology.dumbbell.host.delay"}},
		{"flow to a missing host", map[string]string{"s.yaml": goodTopo + `workload:
  - type: flows
    flows: [{src: 0, dst: 9, size: 10KB}]
`}, "", []string{"s.yaml", "workload[0]", "dst", "9"}},
		{"unreadable cm", map[string]string{"s.yaml": goodTopo + "workload:\n  - {type: cm, file: nope.cm}\n"},
			"", []string{"s.yaml", "workload[0].file", "nope.cm"}},
		{"malformed cm", map[string]string{"s.yaml": goodTopo + "workload:\n  - {type: cm, file: x.cm}\n",
			"x.cm": "Nodes 4\nConnections 1\n0->1 id 1 start zero size 100\n"},
			"", []string{"x.cm:3", "start"}},
		{"cm trigger", map[string]string{"s.yaml": goodTopo + "workload:\n  - {type: cm, file: x.cm}\n",
			"x.cm": "Nodes 4\nConnections 1\n0->1 id 1 start 0 size 100 send_done_trigger 2\n"},
			"", []string{"x.cm:3", "trigger"}},
		{"unreadable topo", map[string]string{"s.yaml": "topology: {type: htsim, htsim: {file: gone.topo}}\n" + goodFlows},
			"", []string{"s.yaml", "topology.htsim.file", "gone.topo"}},
		{"malformed topo", map[string]string{"s.yaml": "topology: {type: htsim, htsim: {file: f.topo}}\n" + goodFlows,
			"f.topo": "Nodes 16\nTiers 2\nPodsize 16\n\nTier 0\nDownlink_speed_Gbps fast\n"},
			"", []string{"f.topo:6", "Downlink_speed_Gbps"}},
		{"missing scenario", map[string]string{}, "absent.yaml", []string{"absent.yaml", "cannot read"}},
		{"empty scenario", map[string]string{"s.yaml": ""}, "", []string{"s.yaml", "empty"}},
		{"bad size unit", map[string]string{"s.yaml": goodTopo + "workload:\n  - {type: permutation, size: 2 parsecs}\n"},
			"", []string{"s.yaml:9", "workload[0].size"}},
		{"unknown cc", map[string]string{"s.yaml": goodTopo + "transport: {cc: vegas}\n" + goodFlows},
			"", []string{"s.yaml", "transport.cc", "vegas"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := write(t, c.files)
			file := c.file
			if file == "" {
				file = "s.yaml"
			}
			out := filepath.Join(dir, "out")
			var stdout, stderr bytes.Buffer
			code := run([]string{"run", filepath.Join(dir, file), "--out", out, "--quiet"}, &stdout, &stderr)
			if code != exitUsage {
				t.Fatalf("exit status %d, want %d; stderr: %s", code, exitUsage, stderr.String())
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") {
				t.Fatalf("want exactly one line on stderr, got %q", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", strings.TrimSpace(msg), w)
				}
			}
			if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
				t.Errorf("bad input left %d entries in --out", len(ents))
			}
			// validate says the same.
			var vout, verr bytes.Buffer
			if vc := run([]string{"validate", filepath.Join(dir, file)}, &vout, &verr); vc != exitUsage || verr.String() != msg {
				t.Errorf("validate: status %d, stderr %q; want %d and the same line as run", vc, verr.String(), exitUsage)
			}
		})
	}
}

func TestRun_WritesTheThreeFiles(t *testing.T) {
	dir := write(t, map[string]string{"s.yaml": goodTopo + goodFlows})
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", filepath.Join(dir, "s.yaml"), "--out", out, "--seed", "3"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, f := range []string{"fct.csv", "queues.csv", "summary.json"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %v (%d bytes)", f, err, len(b))
		}
	}
	sum, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if !bytes.Contains(sum, []byte(`"seed": 3`)) {
		t.Errorf("--seed 3 not in summary.json: %s", sum)
	}
	ents, _ := os.ReadDir(out)
	if len(ents) != 3 {
		t.Errorf("--out holds %d entries, want exactly the 3 outputs (no temporary files)", len(ents))
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	// Walk the whole command tree, so a new command without help fails.
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, append(append([]string{}, path...), "--help"))
		for _, sub := range c.Commands() {
			if sub.Name() != "help" && sub.Name() != "completion" {
				walk(sub, append(append([]string{}, path...), sub.Name()))
			}
		}
	}
	walk(newRoot(viper.New(), io.Discard, io.Discard), nil)
	if len(paths) < 10 {
		t.Fatalf("only %d commands found: %v", len(paths), paths)
	}
	for _, c := range paths {
		var stdout, stderr bytes.Buffer
		if code := run(c, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "Usage:") {
			t.Errorf("%v: status %d, output %q", c, code, stdout.String())
		}
	}
}

func TestVersion_CommandAndFlag(t *testing.T) {
	want := version.Get().String() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 || stdout.String() != want {
			t.Errorf("%v: status %d, output %q, want %q", args, code, stdout.String(), want)
		}
	}
}

func TestTopo_PrintsFabricFacts(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"topo", "../../examples/fattree-k8-permutation.yaml"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, w := range []string{"hosts:     128", "switches:  80", "links:     384", "diameter:  6", "min 2, max 6"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("topo output lacks %q:\n%s", w, stdout.String())
		}
	}
}

func TestRun_CwndAndQueuesFlags(t *testing.T) {
	dir := write(t, map[string]string{"s.yaml": goodTopo + goodFlows})
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", filepath.Join(dir, "s.yaml"), "--out", out, "--quiet", "--cwnd", "--queues", "100ns"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, f := range []string{"cwnd.csv", "queue_depth.csv"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || strings.Count(string(b), "\n") < 2 {
			t.Errorf("%s: want a header and rows, got %q (%v)", f, b, err)
		}
	}
}
