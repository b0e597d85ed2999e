package main

import (
	"path/filepath"
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
