package partition

import (
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
)

// depFlows: flow 0 (host 0 -> 4) activates flow 1, which host 1 sends,
// delay later; both hosts are senders on the left of the dumbbell.
func depFlows(delay sim.Time) []hostsim.FlowSpec {
	return []hostsim.FlowSpec{
		{ID: 0, Src: 0, Dst: 4, Size: 1000, Next: &hostsim.FlowNext{Recv: []int32{1}}},
		{ID: 1, Src: 1, Dst: 5, Size: 1000, Need: 1, Delay: delay},
	}
}

// TestDeps_Design11_ZeroDelayKeepsHostsTogether: a zero-delay dependency
// is a link that cannot be cut, and a positive one bounds the lookahead.
func TestDeps_Design11_ZeroDelayKeepsHostsTogether(t *testing.T) {
	topo := dumbbell(t, sim.Microsecond, 10*sim.Microsecond)
	per := make([]int, len(topo.Nodes))
	for i := range per {
		per[i] = i
	}
	if _, err := MakeFlows(topo, nil, depFlows(0), nil, per); err == nil || !strings.Contains(err.Error(), "h1 and h4 depend on each other with a delay of 0ps") {
		t.Fatalf("per element with a zero-delay dependency between hosts 4 and 1: %v", err)
	}
	pl, err := MakeFlows(topo, nil, depFlows(300*sim.Nanosecond), nil, per)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Lookahead != 300*sim.Nanosecond || pl.LookaheadLink != -1 {
		t.Errorf("lookahead %v (link %d), want 300ns set by the dependency (-1)", pl.Lookahead, pl.LookaheadLink)
	}
	for _, c := range pl.Cuts {
		if c.Link >= len(topo.Links) {
			t.Errorf("cut lists pseudo link %d", c.Link)
		}
	}
	for p := 2; p <= 4; p++ {
		pl, err := AutoFlows(topo, nil, depFlows(0), nil, p)
		if err != nil {
			t.Fatal(err)
		}
		if pl.Part[topo.Hosts[4]] != pl.Part[topo.Hosts[1]] {
			t.Errorf("P=%d: hosts 4 and 1 depend on each other with no delay but are apart: %v", p, pl.Part)
		}
	}
}

// TestDeps_TasksAreOnTheirHost: a compute task is a point on its host, so
// flow 0's arrival at host 4 activating a task on host 2 with no delay
// keeps hosts 4 and 2 together, and the task's own activation of flow 1
// (host 1) 200ns later bounds the lookahead.
func TestDeps_TasksAreOnTheirHost(t *testing.T) {
	topo := dumbbell(t, sim.Microsecond, 10*sim.Microsecond)
	per := make([]int, len(topo.Nodes))
	for i := range per {
		per[i] = i
	}
	flows := []hostsim.FlowSpec{
		{ID: 0, Src: 0, Dst: 4, Size: 1000, Next: &hostsim.FlowNext{Recv: []int32{hostsim.TaskRef(0)}}},
		{ID: 1, Src: 1, Dst: 5, Size: 1000, Need: 1, Delay: 200 * sim.Nanosecond},
	}
	tasks := []hostsim.TaskSpec{{Host: 2, Need: 1, Next: []int32{1}}}
	if _, err := MakeFlows(topo, nil, flows, tasks, per); err == nil || !strings.Contains(err.Error(), "h2 and h4 depend on each other") {
		t.Fatalf("a zero-delay activation of a task on host 2 from host 4, cut: %v", err)
	}
	tasks[0].Delay = 500 * sim.Nanosecond
	pl, err := MakeFlows(topo, nil, flows, tasks, per)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Lookahead != 200*sim.Nanosecond {
		t.Errorf("lookahead %v, want 200ns (the task's activation of flow 1)", pl.Lookahead)
	}
}
