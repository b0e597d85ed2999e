package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// depsYAML has every kind of dependency: htsim triggers whose chain
// crosses leaves (5us, more than the lookahead), and jobs of collectives
// (ring with pipelining, halving-doubling, double binary tree, all-to-all)
// that share the fabric.
const depsYAML = `seed: 5
topology:
  type: leafspine
  leafspine:
    leaves: 2
    spines: 2
    hosts_per_leaf: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 64KiB, ecn: {mode: step, k: 20KiB}}
    fabric: {rate: 100Gbps, delay: 1us, buffer: 64KiB, ecn: {mode: step, k: 20KiB}}
transport: {cc: dctcp, ecn: true, rto: {min: 500us}}
switch: {forwarding: spray}
workload:
  - {type: cm, file: chain.cm, trigger_delay: 5us}
  - {type: collective, size: 400KB, collective: {job: ring, op: allreduce, ranks: 8, chunks: 3, pipeline: 2, iterations: 2, compute: 10us, compute_max: 30us, buckets: 2}}
  - {type: collective, size: 256KB, collective: {job: hd, op: allreduce, algorithm: halving_doubling, ranks: 4, first_host: 4}}
  - {type: collective, size: 300KB, hosts: [7, 2, 5, 0, 3], collective: {job: tree, op: allreduce, algorithm: double_binary_tree, chunks: 2}}
  - {type: collective, size: 80KB, collective: {job: moe, op: alltoall, ranks: 6, delay: 2us}}
`

// TestRunDistributed_Design11_DependenciesSameFiles: dependencies that
// cross partitions go through the lockstep windows, so every output
// (fct.csv, collectives.csv, jobs.csv) is byte-identical in one process,
// in 2 and 4 partitions over memory and over NATS, and per element.
func TestRunDistributed_Design11_DependenciesSameFiles(t *testing.T) {
	requireWired(t)
	cm, err := os.ReadFile("../../examples/collectives/chain.cm")
	if err != nil {
		t.Fatal(err)
	}
	dir := write(t, map[string]string{"d.yaml": depsYAML, "chain.cm": string(cm),
		"pe.yaml": depsYAML + "placement: {mode: per-element}\n"})
	s := filepath.Join(dir, "d.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	if got := string(readOut(t, single, "collectives.csv")); strings.Count(got, "\n") != 6 || strings.Contains(got, ",,") {
		t.Fatalf("collectives.csv should have 5 finished instances:\n%s", got)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"2 partitions, memory", []string{"run", s, "--partitions", "2", "--transport", "memory"}},
		{"4 partitions, memory", []string{"run", s, "--partitions", "4", "--transport", "memory"}},
		{"4 partitions, goroutines over NATS", []string{"run", s, "--partitions", "4"}},
		{"per-element (12 partitions)", []string{"run", filepath.Join(dir, "pe.yaml"), "--transport", "memory"}},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		runCLI(t, append(c.args, "--out", out, "--quiet")...)
		sameFiles(t, c.name, single, out)
	}
}

// parallelYAML is a job with tensor, pipeline and data parallelism on
// separate rails joined by NVLink: compute tasks on every host, pipeline
// sends between servers, TP all-reduces over NVLink, DP all-reduces.
const parallelYAML = `seed: 3
topology:
  type: rail
  rail:
    servers: 2
    gpus_per_server: 4
    servers_per_leaf: 1
    spines: 1
    joined: false
    host: {rate: 100Gbps, delay: 1us, buffer: 256KiB}
    fabric: {rate: 100Gbps, delay: 1us, buffer: 256KiB}
    nvlink: {rate: 800Gbps, delay: 200ns, buffer: 1MiB}
transport: {init_cwnd: 32}
workload:
  - type: collective
    size: 300KB
    collective:
      job: gpt
      op: allreduce
      iterations: 2
      compute: 3us
      parallel: {tp: 2, pp: 2, microbatches: 3, forward: 6us, tp_size: 64KB, pp_size: 100KB}
`

// TestRunDistributed_Design11_ParallelJobSameFiles: a job's compute
// tasks fire in every partition and their dependencies cross partitions
// through the flows; fct.csv, collectives.csv and jobs.csv (whose
// iteration ends come from tasks) are byte-identical however it is cut.
func TestRunDistributed_Design11_ParallelJobSameFiles(t *testing.T) {
	requireWired(t)
	dir := write(t, map[string]string{"p.yaml": parallelYAML})
	s := filepath.Join(dir, "p.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet", "--partitions", "1")
	got := string(readOut(t, single, "jobs.csv"))
	if strings.Count(got, "\n") != 3 || strings.Contains(got, ",,") {
		t.Fatalf("jobs.csv should have 2 finished iterations:\n%s", got)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"3 partitions, memory", []string{"run", s, "--partitions", "3", "--transport", "memory"}},
		{"5 partitions, memory", []string{"run", s, "--partitions", "5", "--transport", "memory"}},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		runCLI(t, append(c.args, "--out", out, "--quiet")...)
		sameFiles(t, c.name, single, out)
	}
}
