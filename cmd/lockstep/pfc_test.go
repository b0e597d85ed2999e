package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pfcYAML is a lossless incast beside a permutation, with trimming in a
// second class: PAUSE frames cross the cut links.
const pfcYAML = `
topology:
  type: leafspine
  leafspine:
    leaves: 3
    spines: 2
    hosts_per_leaf: 8
    host: {rate: 100Gbps, delay: 1us, buffer: 128KiB}
    fabric: {rate: 100Gbps, delay: 1us, buffer: 128KiB}
switch:
  forwarding: adaptive
  classes: [{lossless: true}, {weight: 2}, {}]
  pfc: {xoff: 24KiB, xon: 12KiB, watchdog: 5ms}
  trim: {}
workload:
  - type: incast
    dst: 0
    n: 16
    size: 256KB
  - type: permutation
    size: 512KB
    class: 1
`

// TestRunDistributed_PFCSameFiles: with PFC, trimming and adaptive
// routing on, 2 partitions in memory and over NATS write the same files
// as one process (queues_class.csv included).
func TestRunDistributed_PFCSameFiles(t *testing.T) {
	requireWired(t)
	dir := write(t, map[string]string{"p.yaml": pfcYAML})
	s := filepath.Join(dir, "p.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet", "--partitions", "1")
	if c := string(readOut(t, single, "queues_class.csv")); !strings.Contains(c, "pauses_sent") || strings.Count(c, "\n") < 10 {
		t.Fatalf("queues_class.csv: %q", c)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"2 partitions, memory", []string{"run", s, "--partitions", "2", "--transport", "memory"}},
		{"2 partitions over NATS", []string{"run", s, "--partitions", "2"}},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		runCLI(t, append(c.args, "--out", out, "--quiet")...)
		sameFiles(t, c.name, single, out)
	}
}

// ringYAML is five switches in a ring, one host each, four flows from
// every host two hops clockwise: under PFC the lossless buffers depend on
// each other in a cycle and lock up.
const ringYAML = `
topology:
  type: graph
  graph:
    defaults: {rate: 100Gbps, delay: 1us}
    nodes:
      - {name: h0, kind: host}
      - {name: h1, kind: host}
      - {name: h2, kind: host}
      - {name: h3, kind: host}
      - {name: h4, kind: host}
      - {name: s0, kind: switch, tier: 1}
      - {name: s1, kind: switch, tier: 1}
      - {name: s2, kind: switch, tier: 1}
      - {name: s3, kind: switch, tier: 1}
      - {name: s4, kind: switch, tier: 1}
    links:
      - {a: h0, b: s0}
      - {a: h1, b: s1}
      - {a: h2, b: s2}
      - {a: h3, b: s3}
      - {a: h4, b: s4}
      - {a: s0, b: s1}
      - {a: s1, b: s2}
      - {a: s2, b: s3}
      - {a: s3, b: s4}
      - {a: s4, b: s0}
switch:
  classes: [{lossless: true}]
  pfc: {xoff: 32KiB, xon: 16KiB, watchdog: 500us}
workload:
  - type: flows
    flows:
      - {src: 0, dst: 2, size: 64MB}
      - {src: 0, dst: 2, size: 64MB}
      - {src: 1, dst: 3, size: 64MB}
      - {src: 1, dst: 3, size: 64MB}
      - {src: 2, dst: 4, size: 64MB}
      - {src: 2, dst: 4, size: 64MB}
      - {src: 3, dst: 0, size: 64MB}
      - {src: 3, dst: 0, size: 64MB}
      - {src: 4, dst: 1, size: 64MB}
      - {src: 4, dst: 1, size: 64MB}
`

// TestRun_PFCDeadlockSameReportWhateverTheCut: the ring locks up; one
// process, 2 and 5 partitions in memory and 2 partitions over NATS all
// stop at the same virtual time with the same one-line report naming the
// cycle, exit status 3, and the same outputs, marked incomplete.
func TestRun_PFCDeadlockSameReportWhateverTheCut(t *testing.T) {
	requireWired(t)
	dir := write(t, map[string]string{"r.yaml": ringYAML})
	s := filepath.Join(dir, "r.yaml")
	failed := func(what string, args ...string) (string, string) {
		t.Helper()
		out := filepath.Join(dir, strings.ReplaceAll(what, " ", "_"))
		var so, se bytes.Buffer
		code := run(append(args, "--out", out, "--quiet"), &so, &se)
		last := lastLine(se.String())
		if code != exitFailed || !strings.Contains(last, "pfc deadlock at ") {
			t.Fatalf("%s: want exit %d and a deadlock report, got exit %d: %s", what, exitFailed, code, se.String())
		}
		var sum struct {
			Complete  bool   `json:"complete"`
			StoppedBy string `json:"stopped_by"`
			Reason    string `json:"incomplete_reason"`
		}
		if err := json.Unmarshal(readOut(t, out, "summary.json"), &sum); err != nil {
			t.Fatal(err)
		}
		if sum.Complete || sum.StoppedBy != "pfc-deadlock" || !strings.HasPrefix(sum.Reason, "pfc deadlock at ") {
			t.Errorf("%s: summary.json: want complete false, stopped by pfc-deadlock with the report, got %+v", what, sum)
		}
		return out, sum.Reason
	}
	single, want := failed("single", "run", s, "--partitions", "1")
	t.Logf("one process: %s", want)
	if !strings.Contains(want, "s0 port") || !strings.Contains(want, "-> back to") {
		t.Errorf("the report does not name the cycle: %s", want)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"2 partitions memory", []string{"run", s, "--partitions", "2", "--transport", "memory"}},
		{"5 partitions memory", []string{"run", s, "--partitions", "5", "--transport", "memory"}},
		{"2 partitions NATS", []string{"run", s, "--partitions", "2"}},
	} {
		out, got := failed(c.name, c.args...)
		if got != want {
			t.Errorf("%s: report %q, want the single process's %q", c.name, got, want)
		}
		sameFiles(t, c.name, single, out)
	}
}

// tierYAML has per-tier mechanisms: cut-through and a shared buffer at
// the leaves, PFC and trimming everywhere else; the default cut puts
// leaves and spines in different partitions, so cut-through sends onto
// cut links.
const tierYAML = `
topology:
  type: leafspine
  leafspine:
    leaves: 4
    spines: 2
    hosts_per_leaf: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 64KiB, switch: {cut_through: {}, shared_buffer: {size: 512KiB}}}
    fabric: {rate: 100Gbps, delay: 1us, buffer: 64KiB, ecn: {mode: step, k: 20KB, on: dequeue}}
transport: {ecn: true}
switch:
  classes: [{lossless: true}, {weight: 1}, {}]
  pfc: {xoff: 24KiB, xon: 12KiB, watchdog: 5ms}
  trim: {}
workload:
  - type: permutation
    size: 256KB
    class: 1
  - {type: incast, n: 8, dst: 0, size: 128KB}
output: {queues: {interval: 1us}}
`

// TestRunDistributed_CutThroughAndTiersSameFiles: per-tier cut-through,
// shared buffer, PFC and trimming write the same files in one process, in
// 2 and 4 partitions in memory and in 2 over NATS.
func TestRunDistributed_CutThroughAndTiersSameFiles(t *testing.T) {
	requireWired(t)
	dir := write(t, map[string]string{"t.yaml": tierYAML})
	s := filepath.Join(dir, "t.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet", "--partitions", "1")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"2 partitions, memory", []string{"run", s, "--partitions", "2", "--transport", "memory"}},
		{"4 partitions, memory", []string{"run", s, "--partitions", "4", "--transport", "memory"}},
		{"2 partitions over NATS", []string{"run", s, "--partitions", "2"}},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		runCLI(t, append(c.args, "--out", out, "--quiet")...)
		sameFiles(t, c.name, single, out)
	}
	// The leaves cut through (the spines store and forward) and share
	// their buffer; every class queue is sampled.
	rows := strings.Split(strings.TrimSpace(string(readOut(t, single, "queues_class.csv"))), "\n")
	var leafCut, spineCut, shared int
	for _, r := range rows[1:] {
		f := strings.Split(r, ",")
		if f[15] != "0" && strings.HasPrefix(f[0], "leaf") {
			leafCut++
		}
		if f[15] != "0" && strings.HasPrefix(f[0], "spine") {
			spineCut++
		}
		if f[16] != "0" {
			shared++
		}
	}
	if leafCut == 0 || spineCut != 0 || shared == 0 {
		t.Errorf("queues_class.csv: want cut-through at leaves only and shared-pool use, got %d leaf and %d spine rows with cut-through, %d with shared bytes", leafCut, spineCut, shared)
	}
	if d := string(readOut(t, single, "queue_depth_class.csv")); !strings.HasPrefix(d, "time_ns,switch,port,class,depth_bytes\n") || strings.Count(d, "\n") < 10 {
		t.Errorf("queue_depth_class.csv: %.200s", d)
	}
}

// stormYAML is a PFC storm: host 0's receive pipeline stalls from 0 to
// 500us, with the switches' storm watchdog (forward: host 0's NIC drops
// what its ToR sends through the pause) and host 0 captured.
const stormYAML = `
topology:
  type: leafspine
  leafspine:
    leaves: 3
    spines: 2
    hosts_per_leaf: 4
    host: {rate: 100Gbps, delay: 1us}
    fabric: {rate: 100Gbps, delay: 1us}
transport: {mtu: 4096, rto: {min: 1ms, initial: 2ms}}
switch:
  classes: [{lossless: true}, {}]
  pfc: {xoff: 32KiB, xon: 16KiB, storm_watchdog: {detection_time: 100us, restoration_time: 200us, action: forward}}
impairments:
  - host: h0
    pfc_storm: {at: 0s, until: 500us, nic_watchdog: 1ms}
workload:
  - type: incast
    dst: 0
    senders: [4, 5, 8, 9]
    size: 256KB
  - type: flows
    flows: [{src: 6, dst: 10, size: 2MB}]
output:
  pcap: {hosts: [0]}
`

// TestRunDistributed_PFCStormSameFiles: a PFC storm (the host's PAUSE
// frames cross cut links) and the watchdog write the same files, pfc.csv
// and the storm host's capture included, in one process, in 2 and 3
// partitions in memory and in 2 over NATS.
func TestRunDistributed_PFCStormSameFiles(t *testing.T) {
	requireWired(t)
	dir := write(t, map[string]string{"s.yaml": stormYAML})
	s := filepath.Join(dir, "s.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet", "--partitions", "1")
	pfc := string(readOut(t, single, "pfc.csv"))
	if !strings.HasPrefix(pfc, "node,kind,port,peer,class,") || !strings.Contains(pfc, "\nh0,host,0,leaf0,0,") ||
		!regexp.MustCompile(`\nleaf0,switch,0,h0,0,0,[1-9][0-9]*,,[0-9.]+,[0-9.]+,1,1,0\n`).MatchString(pfc) {
		t.Fatalf("pfc.csv: %.300s", pfc)
	}
	type drops struct {
		Drops    uint64 `json:"drops"`
		NICDrops uint64 `json:"nic_drops"`
	}
	summary := func(dir string) drops {
		var d drops
		if err := json.Unmarshal(readOut(t, dir, "summary.json"), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	want := summary(single)
	if want.NICDrops == 0 || want.Drops < want.NICDrops {
		t.Fatalf("summary.json: want NIC drops counted in the drops, got %+v", want)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"2 partitions, memory", []string{"run", s, "--partitions", "2", "--transport", "memory"}},
		{"3 partitions, memory", []string{"run", s, "--partitions", "3", "--transport", "memory"}},
		{"2 partitions over NATS", []string{"run", s, "--partitions", "2"}},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		runCLI(t, append(c.args, "--out", out, "--quiet")...)
		sameFiles(t, c.name, single, out)
		if got := summary(out); got != want {
			t.Errorf("%s: summary.json drops %+v, want %+v", c.name, got, want)
		}
	}
}
