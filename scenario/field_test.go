package scenario_test

import (
	"os"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/scenario"
)

func TestWithField_SetsFieldsWithUnits(t *testing.T) {
	var edits []scenario.Edit
	for _, kv := range [][2]string{
		{"transport.cc", "cubic"},
		{"topology.dumbbell.bottleneck.buffer", "64KiB"},
		{"topology.dumbbell.bottleneck.ecn", "{mode: step, k: 30KB}"},
		{"transport.header", "40"},
		{"transport.options.hystart", "linux-2008"},
		{"workload.0.flows.1.size", "2MB"},
		{"seed", "9"},
	} {
		e, err := scenario.WithField(kv[0], kv[1])
		if err != nil {
			t.Fatalf("WithField(%q, %q): %v", kv[0], kv[1], err)
		}
		edits = append(edits, e)
	}
	b, err := scenario.LoadFile("../examples/dumbbell.yaml", edits...)
	if err != nil {
		t.Fatal(err)
	}
	s := b.Scenario
	bn := s.Topology.Dumbbell.Bottleneck
	if s.Transport.CC != "cubic" || bn.Buffer != 64<<10 || bn.ECN.K != 30000 || *s.Transport.Header != 40 ||
		s.Transport.Options["hystart"] != "linux-2008" || s.Workload[0].Flows[1].Size != 2e6 || b.Seed() != 9 {
		t.Errorf("edits not applied: %+v", s)
	}
	plain, err := scenario.LoadFile("../examples/dumbbell.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if plain.Digest() == b.Digest() {
		t.Error("the edited scenario has the file's digest")
	}
	// The same value as the file's is the file's scenario.
	same, _ := scenario.WithField("transport.cc", "reno")
	b2, err := scenario.LoadFile("../examples/dumbbell.yaml", same)
	if err != nil || b2.Digest() != plain.Digest() {
		t.Errorf("cc reno (as in the file): digest %v, err %v; want the file's", b2.Digest(), err)
	}
}

func TestWithField_Errors(t *testing.T) {
	for _, c := range []struct{ path, value, want string }{
		{"switch.buffer", "1MB", `switch.buffer: no field "buffer" in switch (it has forwarding, flowlet_gap, classes, control_class, pfc, shared_buffer, trim, cut_through, int, modules)`},
		{"transport.ccc", "x", `transport.ccc: no field "ccc" in transport (it has cc, recovery,`},
		{"topology.fattree.k", "eight", `topology.fattree.k: "eight": `},
		{"transport.cc.x", "y", `transport.cc.x: transport.cc is a value, it has no field "x"`},
		{"workload.x", "1", `workload.x: workload is a list: want an index (0, 1, ...), got "x"`},
		{"topology.dumbbell.bottleneck.buffer", "12 apples", `topology.dumbbell.bottleneck.buffer: "12 apples": `},
		{"", "1", "empty field path"},
	} {
		_, err := scenario.WithField(c.path, c.value)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("WithField(%q, %q) = %v, want one line containing %q", c.path, c.value, err, c.want)
		}
	}
	e, err := scenario.WithField("workload.5.size", "1MB")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile("../examples/dumbbell.yaml")
	_, err = scenario.Load("dumbbell.yaml", data, nil, e)
	if err == nil || !strings.Contains(err.Error(), "dumbbell.yaml: edit workload.5.size: index 5: the scenario's workload has 1 entries") {
		t.Errorf("index past the end: %v", err)
	}
}
