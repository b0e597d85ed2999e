package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inputCase is one hostile or mistaken scenario of issue 10 ("Input"):
// run and validate must both refuse it with exit status 2 and the same
// one line, naming the file and the field, and write nothing.
type inputCase struct {
	name  string
	files map[string]string // under the test's directory; s.yaml is run
	args  []string          // extra flags for run and validate
	want  []string          // substrings of the line
	not   []string          // substrings it must not have (file contents)
}

const inputLeafSpine = `topology:
  type: leafspine
  leafspine:
    leaves: 2
    spines: 2
    hosts_per_leaf: 2
    host: {rate: 10Gbps, delay: 1us}
    fabric: {rate: 10Gbps, delay: 1us}
`

const inputFatTree = `topology:
  type: fattree
  fattree:
    k: 4
    oversubscribed: 0
    host: {rate: 10Gbps}
    agg: {rate: 10Gbps}
    core: {rate: 10Gbps}
`

const inputCDF = "0 0\n1000 50\n10000 100\n"

func inputCases() []inputCase {
	s := func(text string) map[string]string { return map[string]string{"s.yaml": text} }
	cm := func(file string) string { return goodTopo + "workload:\n  - {type: cm, file: " + file + "}\n" }
	return []inputCase{
		// Switch modules (issue 24).
		{name: "unknown switch module", files: s(goodTopo + goodFlows + "switch:\n  modules:\n    aqm: {name: pie}\n"),
			want: []string{"s.yaml: switch.modules.aqm.name: unknown aqm module \"pie\" (known: ecn, droptail, step, red, codel)"}},
		{name: "bad switch module option", files: s(goodTopo + goodFlows + "switch:\n  modules:\n    forward: {name: drill, options: {samples: many}}\n"),
			want: []string{"s.yaml: switch.modules.forward.options.samples: want a whole number in [1, 16], got \"many\""}},
		// Crashes.
		{name: "cm is /dev/zero", files: s(cm("/dev/zero")),
			want: []string{"s.yaml", "workload[0].file", "/dev/zero", "outside the scenario's folder", "--allow-outside"}},
		{name: "cm is /dev/zero, allowed outside", files: s(cm("/dev/zero")), args: []string{"--allow-outside"},
			want: []string{"s.yaml", "workload[0].file", "larger than the 64 MiB limit"}},
		{name: "cm is /dev/urandom, allowed outside", files: s(cm("/dev/urandom")), args: []string{"--allow-outside"},
			want: []string{"s.yaml", "workload[0].file", "larger than the 64 MiB limit"}},
		{name: "leaf-spine with 100000 leaves", files: s(strings.Replace(strings.Replace(inputLeafSpine, "leaves: 2", "leaves: 100000", 1), "hosts_per_leaf: 2", "hosts_per_leaf: 1", 1) + goodFlows),
			args: []string{"--max-memory", "0"}, want: []string{"s.yaml", "topology", "too large"}},
		{name: "leaf-spine with 100000 leaves over the memory limit", files: s(strings.Replace(strings.Replace(inputLeafSpine, "leaves: 2", "leaves: 100000", 1), "hosts_per_leaf: 2", "hosts_per_leaf: 1", 1) + goodFlows),
			args: []string{"--max-memory", "1GiB"}, want: []string{"s.yaml", "topology", "the fabric needs about", "more than the 1.0 GB"}},
		{name: "leaf-spine with 10^9 leaves", files: s(strings.Replace(inputLeafSpine, "leaves: 2", "leaves: 1000000000", 1) + goodFlows),
			want: []string{"s.yaml", "topology", "leafspine", "limit"}},
		{name: "queues sampled every 1ps", files: s(goodTopo + goodFlows + "output: {queues: {interval: 1ps}}\n"),
			want: []string{"s.yaml", "output.queues.interval", "at least 100ns"}},
		// Zero is not "unset".
		{name: "mtu 0", files: s(goodTopo + "transport: {mtu: 0}\n" + goodFlows),
			want: []string{"s.yaml", "transport.mtu", "must be positive, got 0"}},
		{name: "init_cwnd 0", files: s(goodTopo + "transport: {init_cwnd: 0}\n" + goodFlows),
			want: []string{"s.yaml", "transport.init_cwnd", "must be positive, got 0"}},
		// DCTCP's g = 0 is refused, not taken as "the default" (issue 13).
		{name: "dctcp g 0", files: s(goodTopo + "transport: {cc: dctcp, ecn: true, options: {g: 0}}\n" + goodFlows),
			want: []string{"s.yaml", "transport.options.g", "must be in (0, 1]", "got 0"}},
		{name: "dctcp init_alpha 1.5", files: s(goodTopo + "transport: {cc: dctcp, ecn: true, options: {init_alpha: 1.5}}\n" + goodFlows),
			want: []string{"s.yaml", "transport.options.init_alpha", "must be in [0, 1]"}},
		{name: "cubic hystart_hz with today's hystart", files: s(goodTopo + "transport: {cc: cubic, options: {hystart_hz: 250}}\n" + goodFlows),
			want: []string{"s.yaml", "transport.options.hystart_hz", "linux-2008 only"}},
		{name: "cubic hystart_hz 500", files: s(goodTopo + "transport: {cc: cubic, options: {hystart: linux-2008, hystart_hz: 500}}\n" + goodFlows),
			want: []string{"s.yaml", "transport.options.hystart_hz", "one of [100 250 300 1000]"}},
		{name: "bottleneck buffer 0", files: s(strings.Replace(goodTopo, "bottleneck: {rate: 10Gbps", "bottleneck: {buffer: 0, rate: 10Gbps", 1) + goodFlows),
			want: []string{"s.yaml", "topology.dumbbell.bottleneck.buffer", "must be positive, got 0"}},
		{name: "stop_at 0", files: s("stop_at: 0s\n" + goodTopo + goodFlows),
			want: []string{"s.yaml", "stop_at", "must be positive, got 0"}},
		{name: "placement partitions 0", files: s(goodTopo + goodFlows + "placement: {partitions: 0}\n"),
			want: []string{"s.yaml", "placement.partitions", "must be positive, got 0"}},
		{name: "fattree oversubscribed 0", files: s(inputFatTree + "workload:\n  - {type: permutation, size: 10KB}\n"),
			want: []string{"s.yaml", "topology.fattree.oversubscribed", "must be positive, got 0"}},
		{name: "cwnd of a flow that does not exist", files: s(goodTopo + goodFlows + "output: {cwnd: {flows: [99999]}}\n"),
			want: []string{"s.yaml", "output.cwnd.flows[0]", "flow 99999 does not exist"}},
		// Absurd values.
		{name: "mtu 1e12", files: s(goodTopo + "transport: {mtu: 1e12}\n" + goodFlows),
			want: []string{"s.yaml", "transport.mtu", "at most 65535"}},
		{name: "init_cwnd 2e12", files: s(goodTopo + "transport: {init_cwnd: 2e12}\n" + goodFlows),
			want: []string{"s.yaml", "transport.init_cwnd", "at most 65536"}},
		{name: "flow of 2^63-1 bytes", files: s(goodTopo + "workload:\n  - type: flows\n    flows: [{src: 0, dst: 2, size: 9223372036854775807}]\n"),
			want: []string{"s.yaml", "workload[0].flows[0].size", "limit of 1099511627776"}},
		{name: "all-to-all of 4096 hosts", files: s(strings.Replace(strings.Replace(goodTopo, "senders: 2", "senders: 2048", 1), "receivers: 2", "receivers: 2048", 1) + "workload:\n  - {type: alltoall, size: 1KB}\n"),
			args: []string{"--max-memory", "0"}, want: []string{"s.yaml", "workload[0].hosts", "limit of 4194304 flows"}},
		{name: "all-to-all of 4096 hosts over the memory limit", files: s(strings.Replace(strings.Replace(goodTopo, "senders: 2", "senders: 2048", 1), "receivers: 2", "receivers: 2048", 1) + "workload:\n  - {type: alltoall, size: 1KB}\n"),
			args: []string{"--max-memory", "8GiB"}, want: []string{"s.yaml", "workload[0]", "alltoall makes 16773120 flows", "more than the"}},
		{name: "max-memory is not a size", files: s(goodTopo + goodFlows),
			args: []string{"--max-memory", "lots"}, want: []string{"--max-memory", "lots"}},
		// Validate passed, run refused.
		{name: "host-host link", files: s(`topology:
  type: graph
  graph:
    defaults: {rate: 10Gbps, delay: 1us}
    nodes: [{name: a, kind: host}, {name: b, kind: host}, {name: s, kind: switch}]
    links: [{a: a, b: b}, {a: a, b: s}, {a: b, b: s}]
workload:
  - type: flows
    flows: [{src: 0, dst: 1, size: 1MB}]
`), want: []string{"s.yaml", "topology", "host a has 2 links"}},
		// Fields of other workload types.
		{name: "incast with poisson's load and cdf", files: s(inputLeafSpine + "workload:\n  - {type: incast, dst: 0, n: 2, size: 1KB, load: 0.5, cdf: missing.cdf}\n"),
			want: []string{"s.yaml", "workload[0].load", "not a field of type incast", "dst, senders, n, size, start"}},
		{name: "permutation with dst", files: s(inputLeafSpine + "workload:\n  - {type: permutation, size: 1KB, dst: 3}\n"),
			want: []string{"s.yaml", "workload[0].dst", "not a field of type permutation"}},
		{name: "poisson with size", files: map[string]string{"s.yaml": inputLeafSpine + "workload:\n  - {type: poisson, load: 0.3, cdf: w.cdf, duration: 10us, size: 1KB}\n", "w.cdf": inputCDF},
			want: []string{"s.yaml", "workload[0].size", "not a field of type poisson"}},
		// ECN-driven congestion control without ECN.
		{name: "dctcp without ecn", files: s(goodTopo + "transport: {cc: dctcp}\n" + goodFlows),
			want: []string{"s.yaml", "transport.cc", "dctcp", "transport.ecn: true"}},
		// Files outside the scenario's folder; contents never quoted.
		{name: "cm outside the folder", files: map[string]string{"sc/s.yaml": cm("../secret.cm"), "secret.cm": "root:x:0:0:root:/root:/bin/bash secret words\n"},
			want: []string{"s.yaml", "workload[0].file", "../secret.cm", "outside the scenario's folder"}, not: []string{"root:x", "secret words"}},
		{name: "cm outside, allowed: only the token at fault", files: map[string]string{"sc/s.yaml": cm("../secret.cm"), "secret.cm": "root:x:0:0:root:/root:/bin/bash,secret,words,beyond,the,first,forty,bytes and more\n"},
			args: []string{"--allow-outside"}, want: []string{"s.yaml", "workload[0].file", "secret.cm:1", "unknown keyword"}, not: []string{"first,forty", "and more"}},
		{name: "topo is an absolute path", files: s("topology: {type: htsim, htsim: {file: /etc/hostname}}\n" + goodFlows),
			want: []string{"s.yaml", "topology.htsim.file", "outside the scenario's folder"}},
		{name: "cdf through a symlink out of the folder", files: map[string]string{"sc/s.yaml": inputLeafSpine + "workload:\n  - {type: poisson, load: 0.3, cdf: link.cdf, duration: 10us}\n", "w.cdf": inputCDF},
			want: []string{"s.yaml", "workload[0].cdf", "link.cdf", "outside the scenario's folder"}},
	}
}

// TestInput_RunAndValidateRefuseTheSameWay is issue 10's table: every
// case exits 2 with one line naming file and field, identically from run
// and validate, and leaves no --out directory.
func TestInput_RunAndValidateRefuseTheSameWay(t *testing.T) {
	for _, c := range inputCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := write(t, c.files)
			file := filepath.Join(dir, "s.yaml")
			if _, ok := c.files["sc/s.yaml"]; ok {
				file = filepath.Join(dir, "sc", "s.yaml")
			}
			if strings.Contains(c.name, "symlink") {
				if err := os.Symlink(filepath.Join(dir, "w.cdf"), filepath.Join(dir, "sc", "link.cdf")); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(dir, "out")
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"run", file, "--out", out, "--quiet"}, c.args...), &stdout, &stderr)
			msg := stderr.String()
			t.Logf("exit %d: %s", code, strings.ReplaceAll(strings.TrimSpace(msg), dir, "DIR"))
			if code != exitUsage {
				t.Fatalf("run: exit status %d, want %d; stderr: %s", code, exitUsage, msg)
			}
			if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") {
				t.Fatalf("run: want exactly one line on stderr, got %q", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", strings.TrimSpace(msg), w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(msg, w) {
					t.Errorf("error %q quotes %q", strings.TrimSpace(msg), w)
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("bad input created --out (%v)", err)
			}
			var vout, verr bytes.Buffer
			if vc := run(append([]string{"validate", file}, c.args...), &vout, &verr); vc != exitUsage || verr.String() != msg {
				t.Errorf("validate: status %d, stderr %q; want %d and run's line %q", vc, verr.String(), exitUsage, msg)
			}
		})
	}
}

// TestInput_AllowOutsideReadsSharedFiles: a file beside the scenario's
// folder is read with --allow-outside, and the run is then unchanged.
func TestInput_AllowOutsideReadsSharedFiles(t *testing.T) {
	dir := write(t, map[string]string{
		"sc/s.yaml": inputLeafSpine + "workload:\n  - {type: poisson, load: 0.3, cdf: ../w.cdf, duration: 20us}\n",
		"w.cdf":     inputCDF,
	})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"validate", filepath.Join(dir, "sc", "s.yaml"), "--allow-outside"}, &stdout, &stderr); code != 0 {
		t.Fatalf("validate --allow-outside: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), ": ok: 4 hosts") {
		t.Errorf("validate printed %q", stdout.String())
	}
}

// TestInput_CompatProfileRefusesPartitions: a compatibility profile runs
// in one partition; asking for more is a usage error (exit 2, one line
// naming the file, no --out), not a run that fails after it started.
func TestInput_CompatProfileRefusesPartitions(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "examples", "multi_loss_stracksim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := write(t, map[string]string{"s.yaml": string(text)})
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", filepath.Join(dir, "s.yaml"), "--out", out, "--quiet", "--partitions", "2", "--transport", "memory"}, &stdout, &stderr)
	msg := stderr.String()
	if code != exitUsage || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "s.yaml: compat stracksim runs in one partition") {
		t.Fatalf("want exit %d and one line naming the file, got exit %d: %q", exitUsage, code, msg)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input created --out (%v)", err)
	}
}
