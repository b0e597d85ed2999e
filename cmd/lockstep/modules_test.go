package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// modulesYAML selects switch modules per tier: CoDel with ECN marking on
// every switch, DRILL on the leaves, ECMP on the spines, strict priority
// and a dynamic pool given as module options.
const modulesYAML = `topology:
  type: leafspine
  leafspine:
    leaves: 4
    spines: 2
    hosts_per_leaf: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 256KiB, switch: {modules: {forward: {name: drill, options: {samples: 2, memory: 1}}}}}
    fabric: {rate: 100Gbps, delay: 1us, buffer: 256KiB}
transport: {cc: dctcp, ecn: true}
switch:
  classes: [{weight: 1}, {weight: 2}, {}]
  modules:
    aqm: {name: codel, options: {target_us: 4, interval_us: 40, ecn: true}}
    schedule: {name: strict}
    buffer: {name: dynamic, options: {size_bytes: 2000000, reserved_bytes: 8192}}
workload:
  - type: incast
    dst: 0
    n: 12
    size: 512KB
  - type: permutation
    class: 1
    size: 256KB
`

// TestRunDistributed_SwitchModulesSameFiles: a run whose switches use
// modules chosen per tier (DRILL draws from the switches' random
// streams, CoDel keeps per-queue state) writes the same files in one
// partition, cut in 2 and 4 in memory, and in 2 over NATS; CoDel marked.
func TestRunDistributed_SwitchModulesSameFiles(t *testing.T) {
	requireWired(t)
	dir := write(t, map[string]string{"m.yaml": modulesYAML})
	s := filepath.Join(dir, "m.yaml")
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
	marked := 0
	for _, r := range strings.Split(strings.TrimSpace(string(readOut(t, single, "queues.csv"))), "\n")[1:] {
		if f := strings.Split(r, ","); f[7] != "0" {
			marked++
		}
	}
	if marked == 0 {
		t.Errorf("queues.csv: no port marked; CoDel with ecn was not exercised")
	}
}
