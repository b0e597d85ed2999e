package fabric_test

import (
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// TestTasks_ComputeBetweenFlows: a compute task is a point of the
// dependency graph on a host. Task 0 (host 0) fires at 5us and starts
// flow 0 (0 -> 1); when flow 0's last byte is at host 1, task 1 (host 1)
// fires 3us later, and so does task 2 (host 1, which also waits on task
// 1: a chain of compute); task 2 starts flow 1 (1 -> 0) 4us after the
// later of its two causes.
func TestTasks_ComputeBetweenFlows(t *testing.T) {
	tier := topologies.TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: sim.Microsecond, Queue: topologies.QueueConfig{Buffer: 1 << 20}}
	topo, err := topologies.LeafSpine(topologies.LeafSpineConfig{Leaves: 1, Spines: 1, HostsPerLeaf: 2, Host: tier, Fabric: tier})
	if err != nil {
		t.Fatal(err)
	}
	flows := []hostsim.FlowSpec{
		{ID: 0, Src: 0, Dst: 1, Size: 10000, Need: 1, Next: hostsim.NewFlowNext([]int32{hostsim.TaskRef(1), hostsim.TaskRef(2)}, nil)},
		{ID: 1, Src: 1, Dst: 0, Size: 10000, Need: 1},
	}
	tasks := []hostsim.TaskSpec{
		{Host: 0, Start: 5 * sim.Microsecond, Next: []int32{0}},
		{Host: 1, Need: 1, Delay: 3 * sim.Microsecond, Next: []int32{hostsim.TaskRef(2)}},
		{Host: 1, Need: 2, Delay: 4 * sim.Microsecond, Next: []int32{1}},
	}
	f, err := fabric.New(fabric.Config{Topo: topo, Flows: flows, Tasks: tasks, Transport: hostsim.DefaultConfig(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.RunUntil(sim.Never)
	r := f.Transport().Records
	if !r[0].Finished || !r[1].Finished {
		t.Fatalf("flows finished: %v %v", r[0].Finished, r[1].Finished)
	}
	if r[0].StartAt != 5*sim.Microsecond {
		t.Errorf("flow 0 started at %v, want 5us (task 0)", r[0].StartAt)
	}
	// Task 1 fires at finish+3us, task 2 at max(finish, finish+3us)+4us.
	if want := r[0].Finish + 7*sim.Microsecond; r[1].StartAt != want {
		t.Errorf("flow 1 started at %v, want %v (flow 0's arrival + 3us + 4us)", r[1].StartAt, want)
	}
	bad := []hostsim.TaskSpec{{Host: 0, Next: []int32{hostsim.TaskRef(5)}}}
	one := []hostsim.FlowSpec{{ID: 0, Src: 0, Dst: 1, Size: 1000}}
	if _, err := fabric.New(fabric.Config{Topo: topo, Flows: one, Tasks: bad, Transport: hostsim.DefaultConfig()}); err == nil ||
		!strings.Contains(err.Error(), "task 5, which does not exist") {
		t.Errorf("a task activating a missing task: %v", err)
	}
}
