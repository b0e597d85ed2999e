package scenario

import (
	"strings"
	"testing"
)

const tierBase = `topology:
  type: leafspine
  leafspine:
    leaves: 2
    spines: 2
    hosts_per_leaf: 2
    host: {rate: 100Gbps, delay: 1us%s}
    fabric: {rate: 100Gbps, delay: 1us%s}
switch:
  classes: [{lossless: true}, {}]
  pfc: {xoff: 32KiB, xon: 16KiB, watchdog: 1ms}
  trim: {}
workload:
  - type: flows
    flows: [{src: 0, dst: 3, size: 100KB}]
`

// TestSwitchTier_OverridesPerTier: a tier's switch section replaces the
// switch section's mechanisms for the switches of that tier (leaves take
// host, spines take fabric) and off turns mechanisms off.
func TestSwitchTier_OverridesPerTier(t *testing.T) {
	b, err := load(t, strings.Replace(strings.Replace(tierBase, "%s",
		", switch: {cut_through: {header: 128}, off: [trim]}", 1), "%s",
		", switch: {shared_buffer: {size: 4MiB}, pfc: {xoff: 64KiB}, off: [trim]}", 1))
	if err != nil {
		t.Fatal(err)
	}
	g, tiers := b.Fabric.Switch, b.Fabric.SwitchTiers
	if !g.Trim.Enabled || g.CutThrough.Enabled || g.Shared.Size != 0 {
		t.Errorf("global: want trim only, got %+v", g)
	}
	leaf, spine := tiers[1], tiers[2]
	if !leaf.CutThrough.Enabled || leaf.CutThrough.Header != 128 || leaf.Trim.Enabled || leaf.PFC.XOFF != 32<<10 || !leaf.Classes[0].Lossless {
		t.Errorf("leaves (host section): want cut-through of 128 bytes, no trim, the global PFC, got %+v", leaf)
	}
	if spine.Shared.Size != 4<<20 || spine.PFC.XOFF != 64<<10 || spine.Trim.Enabled || spine.CutThrough.Enabled {
		t.Errorf("spines (fabric section): want a 4MiB shared buffer, xoff 64KiB, no trim, got %+v", spine)
	}
	if w := b.Fabric.Watchdog(); w != 1e9 {
		t.Errorf("watchdog: want 1ms, got %v", w)
	}
	// Off pfc leaves the classes lossy on that tier.
	b, err = load(t, strings.Replace(strings.Replace(tierBase, "%s", "", 1), "%s", ", switch: {off: [pfc]}", 1))
	if err != nil {
		t.Fatal(err)
	}
	if s := b.Fabric.SwitchTiers[2]; s.Classes[0].Lossless || s.PFC.XOFF != 0 {
		t.Errorf("spines with pfc off: want lossy classes and no PFC, got %+v", s)
	}
}

func TestSwitchTier_BadInput(t *testing.T) {
	for _, c := range []struct{ host, fabric, want string }{
		{", switch: {off: [ecn]}", "", `topology.leafspine.host.switch.off[0]: unknown mechanism "ecn"`},
		{", switch: {trim: {}, off: [trim]}", "", "topology.leafspine.host.switch.off[0]: trim is both given and turned off"},
		{", switch: {classes: [{lossless: true}]}", "", "topology.leafspine.host.switch.classes: every switch needs as many classes as switch.classes (2), got 1"},
		{"", ", switch: {pfc: {xoff: 1KiB, watchdog: 2ms}}", "topology.leafspine.fabric.switch.pfc.watchdog: the watchdog is run-wide"},
		{"", ", switch: {cut_through: {header: 100KB}}", "topology.leafspine.fabric.switch.cut_through.header: must be 0 to 9216 bytes"},
		{", switch: {classes: [{lossless: true}, {}], off: [pfc]}", "", "topology.leafspine.host.switch.classes: a lossless class needs pfc"},
	} {
		_, err := load(t, strings.Replace(strings.Replace(tierBase, "%s", c.host, 1), "%s", c.fabric, 1))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("host%q fabric%q: want one line with %q, got %v", c.host, c.fabric, c.want, err)
		}
	}
	_, err := load(t, strings.Replace(base, "bottleneck: {rate: 10Gbps}", "bottleneck: {rate: 10Gbps, switch: {trim: {}}}", 1))
	if err == nil || !strings.Contains(err.Error(), "topology.dumbbell.bottleneck.switch: no switch takes") {
		t.Errorf("dumbbell bottleneck: want an error naming the field, got %v", err)
	}
}
