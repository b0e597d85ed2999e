package extswitch_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/examples/extswitch"
	"github.com/lockstep-sim/lockstep/fabric"
	lnode "github.com/lockstep-sim/lockstep/node"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
)

// fatTreeYAML is fatTree's fabric as a scenario (ECN by a step on the
// ToR tier, on dequeue at the cores, small buffers, a switch latency)
// with an incast and a permutation: queues, drops, marks and ties.
const fatTreeYAML = `seed: 7
topology:
  type: fattree
  fattree:
    k: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 64KiB, ecn: {mode: step, k: 20KiB}}
    agg:  {rate: 100Gbps, delay: 2us, buffer: 64KiB}
    core: {rate: 100Gbps, delay: 1us, buffer: 64KiB, ecn: {mode: step, k: 16KiB, on: dequeue}}
    switch_latency: 300ns
transport: {mtu: 4096, ecn: true, rto: {min: 1ms, initial: 2ms}}
workload:
  - {type: incast, n: 8, dst: 0, size: 300KB}
  - {type: permutation, size: 200KB}
`

// externalYAML replaces a ToR, an aggregation switch and every core.
const externalYAML = fatTreeYAML + `external:
  - {switch: tor0}
  - {switch: agg1, element: aggregation-1}
  - {switch: "core*"}
`

func load(t *testing.T, yaml string) *scenario.Built {
	t.Helper()
	b, err := scenario.Load("s.yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// connect gives every external element of b a fresh example switch in
// this process, and returns them by element name.
func connect(b *scenario.Built) map[string]*extswitch.Switch {
	els := map[string]*extswitch.Switch{}
	b.ConnectExternal(func(el string) fabric.ExternalPeer {
		s := extswitch.New()
		els[el] = s
		return s
	})
	return els
}

// writeOut writes o into a new directory and returns it.
func writeOut(t *testing.T, o *results.Outputs) string {
	t.Helper()
	dir := t.TempDir()
	if err := o.WriteDir(dir, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sameDirs checks that every file but summary.json is byte-identical.
func sameDirs(t *testing.T, what, want, got string) {
	t.Helper()
	ws, _ := os.ReadDir(want)
	n := 0
	for _, e := range ws {
		if e.Name() == "summary.json" {
			continue
		}
		a, _ := os.ReadFile(filepath.Join(want, e.Name()))
		b, err := os.ReadFile(filepath.Join(got, e.Name()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: %s differs from the built-in run (%d vs %d bytes, %v)", what, e.Name(), len(b), len(a), err)
		}
		n++
	}
	if n < 2 {
		t.Fatalf("%s: the built-in run wrote %d files", what, n)
	}
}

// TestExternalSwitch_PartitionedSameAsTheBuiltIn: the fat-tree with six
// switches replaced by the example switch (the scenario's external
// list), run in one process and in 2, 4 and 20 (one per element)
// in-memory partitions, each stepping its external elements in the
// barrier's windows, writes every output byte-identical to the run with
// lockstep's own switches, queues.csv included (the external ones' rows
// from their counters).
func TestExternalSwitch_PartitionedSameAsTheBuiltIn(t *testing.T) {
	ref, err := runner.Run(load(t, fatTreeYAML), runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := ref.Summary(); s.FlowsFinished != s.Flows || s.QueueDrops == 0 || s.Marks == 0 {
		t.Fatalf("want every flow finished, drops and marks: %+v", s)
	}
	want := writeOut(t, ref.Outputs)

	b := load(t, externalYAML)
	if len(b.External) != 6 {
		t.Fatalf("%d external elements, want 6", len(b.External))
	}
	els := connect(b)
	one, err := runner.Run(b, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := one.Fabric.ExternalErr(); err != nil {
		t.Fatal(err)
	}
	sameDirs(t, "one process", want, writeOut(t, one.Outputs))
	if els["aggregation-1"] == nil || els["core3"] == nil {
		t.Fatalf("elements %v", els)
	}

	for _, p := range []int{2, 4, 20} {
		b := load(t, externalYAML)
		connect(b)
		pl, err := partition.ForScenario(b, p)
		if p == 20 {
			pl, err = partition.MakeFlows(b.Topo, nil, b.Fabric.Flows, nil, perElement(len(b.Topo.Nodes)))
			pl = partition.WithExternal(pl, b)
		}
		if err != nil {
			t.Fatal(err)
		}
		r, err := lnode.RunLocal(b, pl, lnode.LocalOptions{Parallel: true})
		if err != nil {
			t.Fatalf("%d partitions: %v", p, err)
		}
		sameDirs(t, "in-memory partitions", want, writeOut(t, r.Outputs))
	}
}

func perElement(n int) []int {
	part := make([]int, n)
	for i := range part {
		part[i] = i
	}
	return part
}

// TestExternalSwitch_NoCheckpoints: an in-memory run with external
// elements refuses to checkpoint (their state is not lockstep's).
func TestExternalSwitch_NoCheckpoints(t *testing.T) {
	b := load(t, externalYAML)
	connect(b)
	pl, err := partition.ForScenario(b, 2)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lnode.RunLocal(b, pl, lnode.LocalOptions{Checkpoint: func(*lnode.LocalState) error { return nil }, CheckpointEvery: 1})
	if err == nil || !strings.Contains(err.Error(), "cannot checkpoint") {
		t.Fatalf("want a refusal, got %v", err)
	}
}
