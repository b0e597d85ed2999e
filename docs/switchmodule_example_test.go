package docs

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
)

// tcn is a miniature AQM module, the one docs/adding-a-switch-module.md
// walks through: TCN (Bai, Chen, Chen, Han, Tian and Wang, "Enabling
// ECN in Multi-Service Multi-Queue Data Centers", NSDI 2016, §4) marks
// an ECN-capable packet as it leaves the queue when it waited there
// longer than a threshold, whatever the queue's length.
type tcn struct{ threshold sim.Time }

var (
	_ switchsim.AQM         = tcn{}
	_ switchsim.SojournUser = tcn{}
	_ switchsim.DequeueAQM  = tcn{}
)

// OnEnqueue implements switchsim.AQM.OnEnqueue: TCN does nothing on
// arrival.
func (tcn) OnEnqueue(*switchsim.Switch, *sim.Engine, *sim.Packet, int, int, int64) switchsim.Verdict {
	return switchsim.Pass
}

// OnDequeue implements switchsim.AQM.OnDequeue (NSDI 2016 §4.1: "mark
// the packet if its sojourn time exceeds the threshold"). pkt is nil when
// the core reports an empty queue after a drop; TCN never drops.
func (t tcn) OnDequeue(_ *switchsim.Switch, _ *sim.Engine, pkt *sim.Packet, _, _ int, sojourn sim.Time, _ int64) switchsim.Verdict {
	if pkt != nil && sojourn > t.threshold {
		return switchsim.Mark
	}
	return switchsim.Pass
}

// NeedsSojourn implements switchsim.SojournUser: the core stamps queued
// packets so that OnDequeue gets their sojourn time.
func (tcn) NeedsSojourn() {}

// DecidesOnDequeue implements switchsim.DequeueAQM: the core calls
// OnDequeue.
func (tcn) DecidesOnDequeue() {}

// tcnScenario: 8 DCTCP senders into one receiver behind a leaf-spine,
// every switch running the AQM the scenario names.
const tcnScenario = `topology:
  type: leafspine
  leafspine:
    leaves: 2
    spines: 2
    hosts_per_leaf: 8
    host: {rate: 100Gbps, delay: 1us, buffer: 512KiB}
    fabric: {rate: 100Gbps, delay: 1us, buffer: 512KiB}
transport: {cc: dctcp, ecn: true}
switch:
  modules:
    aqm: {name: %s, options: {%s}}
workload:
  - type: incast
    dst: 0
    n: 8
    size: 1MB
`

// A registered module joins a run by name: register it in a registry
// beside the built-ins, hand the registry to the scenario, select it in
// switch.modules. Here TCN with a 4 µs threshold against the same incast
// on drop-tail switches (no marks, so DCTCP fills the buffer and loses).
func Example_switchModule() {
	reg := switchsim.Builtins()
	err := reg.Register(switchsim.Module{
		Stage: switchsim.StageAQM, Name: "tcn",
		Doc:     "TCN (Bai et al. NSDI 2016): mark on dequeue when the sojourn time exceeds a threshold",
		Options: []switchsim.OptionDoc{{Key: "threshold_us", Default: "10", Doc: "the sojourn threshold, microseconds"}},
		New: func(o *switchsim.Options, _ *switchsim.Env) (any, error) {
			t, err := o.Micros("threshold_us", 10*sim.Microsecond)
			return tcn{threshold: t}, err
		},
	})
	if err != nil {
		panic(err)
	}
	for _, aqm := range [][2]string{{"tcn", "threshold_us: 4"}, {"droptail", ""}} {
		b, err := scenario.Load("tcn.yaml", fmt.Appendf(nil, tcnScenario, aqm[0], aqm[1]), nil, scenario.WithSwitchModules(reg))
		if err != nil {
			panic(err)
		}
		r, err := runner.Run(b, runner.Options{})
		if err != nil {
			panic(err)
		}
		var marked, dropped uint64
		for n := 0; n < r.Fabric.NumNodes(); n++ {
			if s := r.Fabric.Switch(n); s != nil {
				for i := range s.Ports {
					marked += s.Ports[i].Marked
					dropped += s.Ports[i].Dropped
				}
			}
		}
		sum := r.Summary()
		fmt.Printf("%s: %d of %d flows finished, %d packets marked, %d dropped\n", aqm[0], sum.FlowsFinished, sum.Flows, marked, dropped)
	}
	// Output:
	// tcn: 8 of 8 flows finished, 1599 packets marked, 0 dropped
	// droptail: 8 of 8 flows finished, 0 packets marked, 402 dropped
}
