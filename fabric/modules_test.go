package fabric_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// moduleRun is what the module tests compare: every flow's completion
// and every switch port's counters, in node and port order.
type moduleRun struct {
	fct                   []sim.Time
	ports                 []switchsim.PortCounters
	class                 []switchsim.ClassCounters
	drops, marks, trimmed uint64
}

func runModules(t *testing.T, topo *topologies.Topology, flows []hostsim.FlowSpec, ecn bool, sw switchsim.Config,
	fwd switchsim.Forwarding, prep func(*switchsim.Switch)) *moduleRun {
	t.Helper()
	cfg := hostsim.DefaultConfig()
	cfg.MTU = 4096
	cfg.ECN = ecn
	cfg.RTO.Min = sim.Millisecond
	cfg.RTO.Initial = 2 * sim.Millisecond
	f, err := fabric.New(fabric.Config{Topo: topo, Flows: flows, Transport: cfg, Seed: 3, Switch: sw, Forwarding: fwd})
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < f.NumNodes(); n++ {
		if s := f.Switch(n); s != nil && prep != nil {
			prep(s)
		}
	}
	for f.RunUntilBatch(sim.Second, 1<<16) {
		if f.Done() {
			break
		}
	}
	r := &moduleRun{}
	for i := range flows {
		rec := f.Transport().Records[i]
		if !rec.Finished {
			t.Fatalf("flow %d did not finish", i)
		}
		r.fct = append(r.fct, rec.Finish-flows[i].Start)
	}
	for n := 0; n < f.NumNodes(); n++ {
		s := f.Switch(n)
		if s == nil {
			continue
		}
		for i := range s.Ports {
			pt := &s.Ports[i]
			r.ports = append(r.ports, pt.PortCounters)
			r.drops += pt.Dropped
			r.marks += pt.Marked
			for c := 0; c < pt.NumClasses(); c++ {
				r.class = append(r.class, pt.Class(c))
				r.trimmed += pt.Class(c).Trimmed
			}
		}
	}
	if c := f.Conservation(); c.Balance() != 0 {
		t.Fatalf("packets not conserved: %+v", c)
	}
	return r
}

// moduleCases are switch configurations that exercise every built-in
// module, each with a check that it did something.
var moduleCases = []struct {
	name string
	fwd  switchsim.Forwarding
	cfg  switchsim.Config
	ecn  topologies.ECNConfig
	want func(r *moduleRun) error
}{
	{name: "ecmp-step", ecn: topologies.ECNConfig{Mode: topologies.ECNStep, K: 20 << 10},
		want: func(r *moduleRun) error { return positive("marks", r.marks) }},
	{name: "spray-red-dequeue", fwd: switchsim.Spray,
		ecn:  topologies.ECNConfig{Mode: topologies.ECNRED, Min: 8 << 10, Max: 64 << 10, PMax: 0.5, Dequeue: true},
		want: func(r *moduleRun) error { return positive("marks", r.marks) }},
	{name: "adaptive-droptail", fwd: switchsim.Adaptive,
		want: func(r *moduleRun) error { return positive("drops", r.drops) }},
	{name: "flowlet", fwd: switchsim.Flowlet, cfg: switchsim.Config{FlowletGap: 2 * sim.Microsecond},
		want: func(r *moduleRun) error { return positive("drops", r.drops) }},
	{name: "drill", cfg: switchsim.Config{Modules: switchsim.Pipeline{Forward: switchsim.ModuleRef{Name: "drill",
		Options: map[string]string{"samples": "2", "memory": "2"}}}},
		want: func(r *moduleRun) error { return positive("drops", r.drops) }},
	{name: "dwrr-pfc", ecn: topologies.ECNConfig{Mode: topologies.ECNStep, K: 20 << 10},
		cfg:  switchsim.Config{Classes: []switchsim.Class{{Weight: 1}, {Weight: 3}, {}}, ControlClass: 2},
		want: func(r *moduleRun) error { return positive("marks", r.marks) }},
	{name: "strict", cfg: switchsim.Config{Classes: []switchsim.Class{{Weight: 1}, {Weight: 3}, {}}, ControlClass: 2,
		Modules: switchsim.Pipeline{Schedule: switchsim.ModuleRef{Name: "strict"}}},
		want: func(r *moduleRun) error { return positive("drops", r.drops) }},
	{name: "shared-trim", cfg: switchsim.Config{Classes: []switchsim.Class{{Alpha: 0.5}, {}}, ControlClass: 1,
		Shared: switchsim.Shared{Size: 256 << 10, Reserved: 4 << 10}, Trim: switchsim.Trim{Enabled: true}},
		want: func(r *moduleRun) error { return positive("trimmed", r.trimmed) }},
	{name: "codel", cfg: switchsim.Config{Modules: switchsim.Pipeline{AQM: switchsim.ModuleRef{Name: "codel",
		Options: map[string]string{"target_us": "2", "interval_us": "20"}}}},
		want: func(r *moduleRun) error { return positive("drops", r.drops) }},
	{name: "codel-ecn", cfg: switchsim.Config{Modules: switchsim.Pipeline{AQM: switchsim.ModuleRef{Name: "codel",
		Options: map[string]string{"target_us": "2", "interval_us": "20", "ecn": "true"}}}},
		want: func(r *moduleRun) error { return positive("marks", r.marks) }},
}

func positive(what string, n uint64) error {
	if n == 0 {
		return fmt.Errorf("no %s: the module was not exercised", what)
	}
	return nil
}

// moduleTopo is a 3-leaf, 4-spine leaf-spine with small buffers and a
// 16-to-1 incast plus cross traffic, so that queues build on every tier.
func moduleTopo(t *testing.T, ecn topologies.ECNConfig) (*topologies.Topology, []hostsim.FlowSpec) {
	tier := topologies.TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: sim.Microsecond,
		Queue: topologies.QueueConfig{Buffer: 96 << 10, ECN: ecn}}
	topo, err := topologies.LeafSpine(topologies.LeafSpineConfig{Leaves: 3, Spines: 4, HostsPerLeaf: 8, Host: tier, Fabric: tier})
	if err != nil {
		t.Fatal(err)
	}
	var flows []hostsim.FlowSpec
	for i := range 16 {
		f := hostsim.FlowSpec{ID: int32(len(flows)), Src: 8 + i, Dst: 0, Size: 200 << 10}
		f.Class = i % 2
		flows = append(flows, f)
	}
	for i := range 8 {
		flows = append(flows, hostsim.FlowSpec{ID: int32(len(flows)), Src: i, Dst: 16 + (i+3)%8, Size: 400 << 10})
	}
	return topo, flows
}

// TestSwitchModules_InterfaceDispatchSameResults: the core calls a
// built-in module's own code directly (a switch on its kind); called
// through the stage interfaces instead, as a registered module is, every
// built-in gives the same completions and counters. Each case checks
// that its module acted.
func TestSwitchModules_InterfaceDispatchSameResults(t *testing.T) {
	for _, tc := range moduleCases {
		t.Run(tc.name, func(t *testing.T) {
			topo, flows := moduleTopo(t, tc.ecn)
			direct := runModules(t, topo, flows, true, tc.cfg, tc.fwd, nil)
			topo, flows = moduleTopo(t, tc.ecn)
			iface := runModules(t, topo, flows, true, tc.cfg, tc.fwd, (*switchsim.Switch).UseInterfaces)
			if err := tc.want(direct); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(direct.fct, iface.fct) {
				t.Errorf("FCTs differ: direct %v, through interfaces %v", direct.fct, iface.fct)
			}
			if !slices.Equal(direct.ports, iface.ports) || !slices.Equal(direct.class, iface.class) {
				t.Errorf("port counters differ (drops %d/%d, marks %d/%d)", direct.drops, iface.drops, direct.marks, iface.marks)
			}
		})
	}
}
