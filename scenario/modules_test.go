package scenario

import (
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
)

const modulesBase = `topology:
  type: fattree
  fattree:
    k: 4
    host: {rate: 100Gbps, delay: 1us}
    agg: {rate: 100Gbps, delay: 1us}
    core: {rate: 100Gbps, delay: 1us%s}
switch:
  modules:%s
workload:
  - type: flows
    flows: [{src: 0, dst: 15, size: 100KB}]
`

func modulesScenario(core, global string) string {
	return strings.Replace(strings.Replace(modulesBase, "%s", core, 1), "%s", global, 1)
}

// TestSwitchModules_SelectedPerTier: switch.modules names a module per
// stage with its options; a tier's switch.modules replaces the stages it
// names for that tier's switches and keeps the others.
func TestSwitchModules_SelectedPerTier(t *testing.T) {
	b, err := load(t, modulesScenario(", switch: {modules: {forward: {name: ecmp}}}", `
    forward: {name: drill, options: {samples: 3}}
    aqm: {name: codel, options: {target_us: 10, interval_us: 200, ecn: true}}`))
	if err != nil {
		t.Fatal(err)
	}
	g := b.Fabric.Switch.Modules
	if g.Forward.Name != "drill" || g.Forward.Options["samples"] != "3" || g.AQM.Name != "codel" || g.AQM.Options["ecn"] != "true" {
		t.Errorf("switch section: want drill (samples 3) and codel, got %+v", g)
	}
	core, ok := b.Fabric.SwitchTiers[3]
	if !ok || core.Modules.Forward.Name != "ecmp" || core.Modules.AQM.Name != "codel" {
		t.Errorf("core tier: want ecmp and the section's codel, got %+v", core.Modules)
	}
	if b.Fabric.Transport.Entropy == hostsim.EntropyRandom {
		t.Errorf("no forwarder follows the entropy: senders must keep one per flow")
	}
	// The run uses them: CoDel on every switch but the cores' forwarding.
	if _, err := load(t, modulesScenario("", "\n    trim: {name: none}")); err != nil {
		t.Fatal(err)
	}
}

// TestSwitchModules_EntropySteeredForwarderSprays: a forwarder that
// follows the entropy (switchsim.EntropySteered: spray), named in the
// switch section or in one tier only, makes senders draw a fresh entropy
// per packet, as switch.forwarding: spray does.
func TestSwitchModules_EntropySteeredForwarderSprays(t *testing.T) {
	for _, text := range []string{
		modulesScenario("", "\n    forward: {name: spray}"),
		modulesScenario(", switch: {modules: {forward: {name: spray}}}", " {}"),
	} {
		b, err := load(t, text)
		if err != nil {
			t.Fatal(err)
		}
		if b.Fabric.Transport.Entropy != hostsim.EntropyRandom {
			t.Errorf("want per-packet entropy with a spraying module, got %v", b.Fabric.Transport.Entropy)
		}
	}
}

func TestSwitchModules_BadInput(t *testing.T) {
	for _, c := range []struct{ core, global, want string }{
		{"", "\n    aqm: {name: pie}", `s.yaml: switch.modules.aqm.name: unknown aqm module "pie" (known: ecn, droptail, step, red, codel)`},
		{"", "\n    aqm: {name: codel, options: {target: 5}}",
			`s.yaml: switch.modules.aqm.options.target: codel takes no option "target" (known: target_us, interval_us, mtu_bytes, ecn)`},
		{"", "\n    aqm: {name: codel, options: {target_us: -1}}",
			`s.yaml: switch.modules.aqm.options.target_us: want a number in [0, 1e+09], got "-1"`},
		{"", "\n    aqm: {name: step}", `s.yaml: switch.modules.aqm.options.k_bytes: required`},
		{"", "\n    buffer: {name: dynamic}", `s.yaml: switch.modules.buffer.options.size_bytes: required`},
		{", switch: {modules: {forward: {name: wcmp}}}", " {}",
			`s.yaml: topology.fattree.core.switch.modules.forward.name: unknown forward module "wcmp" (known: ecmp, spray, adaptive, flowlet, drill)`},
		{", switch: {modules: {schedule: {name: dwrr, options: {quantum_bytes: 0}}}}", " {}",
			`s.yaml: topology.fattree.core.switch.modules.schedule.options.quantum_bytes: want a whole number in [1, 1073741824], got "0"`},
		{"", "\n    forward: {options: {samples: 2}}", `switch.modules.forward: missing required field "name"`},
	} {
		_, err := load(t, modulesScenario(c.core, c.global))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("core %q, switch.modules %q: want one line containing %q, got %v", c.core, c.global, c.want, err)
		}
	}
}

// TestSwitchModules_RegisteredModule: a program's own module, registered
// in a registry handed to the scenario (WithSwitchModules), is found by
// name and reaches the switches' configuration with that registry.
func TestSwitchModules_RegisteredModule(t *testing.T) {
	reg := switchsim.Builtins()
	if err := reg.Register(switchsim.Module{Stage: switchsim.StageAQM, Name: "mine",
		New: func(*switchsim.Options, *switchsim.Env) (any, error) { return passAQM{}, nil }}); err != nil {
		t.Fatal(err)
	}
	text := modulesScenario("", "\n    aqm: {name: mine}")
	if _, err := load(t, text); err == nil || !strings.Contains(err.Error(), `unknown aqm module "mine"`) {
		t.Fatalf("without the registry: want an unknown module, got %v", err)
	}
	b, err := Load("s.yaml", []byte(text), Dir(t.TempDir()), WithSwitchModules(reg))
	if err != nil {
		t.Fatal(err)
	}
	if c := b.Fabric.Switch; c.Registry != reg || c.Modules.AQM.Name != "mine" {
		t.Errorf("want the registry and module mine in the switch configuration, got %p, %+v", c.Registry, c.Modules.AQM)
	}
}

type passAQM struct{}

func (passAQM) OnEnqueue(*switchsim.Switch, *sim.Engine, *sim.Packet, int, int, int64) switchsim.Verdict {
	return switchsim.Pass
}

func (passAQM) OnDequeue(*switchsim.Switch, *sim.Engine, *sim.Packet, int, int, sim.Time, int64) switchsim.Verdict {
	return switchsim.Pass
}
