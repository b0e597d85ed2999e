package scenario

import (
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
)

const stormBase = `topology:
  type: leafspine
  leafspine:
    leaves: 2
    spines: 2
    hosts_per_leaf: 2
    host: {rate: 100Gbps, delay: 1us%s}
    fabric: {rate: 100Gbps, delay: 1us}
switch:
  classes: [{lossless: true}, {}]
  pfc: {xoff: 32KiB, xon: 16KiB%s}
impairments:
  - %s
workload:
  - type: flows
    flows: [{src: 0, dst: 3, size: 100KB}]
`

func stormYAML(tier, pfc, imp string) string {
	return strings.Replace(strings.Replace(strings.Replace(stormBase, "%s", tier, 1), "%s", pfc, 1), "%s", imp, 1)
}

// TestPFCStorm_Fields: a host's pfc_storm and the switches' storm
// watchdog reach the fabric's configuration with their defaults (until:
// never; xon xoff/2 when xoff is given; restoration: the detection time;
// action drop), per tier too; neither changes the digest of a scenario
// without them.
func TestPFCStorm_Fields(t *testing.T) {
	b, err := load(t, stormYAML("", ", storm_watchdog: {detection_time: 100us}", "{host: h1, pfc_storm: {at: 10us, xoff: 20KB, drain: 1Gbps, nic_watchdog: 1ms}}"))
	if err != nil {
		t.Fatal(err)
	}
	st := b.Fabric.Storms
	if len(st) != 1 || st[0].Host != 1 || st[0].At != 10*sim.Microsecond || st[0].Until != sim.Never || st[0].XOFF != 20000 ||
		st[0].XON != 10000 || st[0].Drain != sim.GbitPerSecond || st[0].Watchdog != sim.Millisecond || st[0].Quanta != 0 {
		t.Errorf("storm: got %+v", st)
	}
	w := b.Fabric.Switch.PFC.Storm
	if w == nil || *w != (switchsim.StormWatchdog{Detect: 100 * sim.Microsecond, Restore: 100 * sim.Microsecond, Action: switchsim.StormDrop}) {
		t.Errorf("watchdog: got %+v", w)
	}
	b, err = load(t, stormYAML(", switch: {pfc: {xoff: 32KiB, storm_watchdog: {detection_time: 1ms, restoration_time: 2ms, action: forward}}}", "",
		"{host: h0, pfc_storm: {until: 1ms}}"))
	if err != nil {
		t.Fatal(err)
	}
	if w := b.Fabric.SwitchTiers[1].PFC.Storm; b.Fabric.Switch.PFC.Storm != nil || w == nil || w.Action != switchsim.StormForward || w.Restore != 2*sim.Millisecond {
		t.Errorf("per tier: want the leaves' watchdog only, got %+v, %+v", b.Fabric.Switch.PFC.Storm, w)
	}
	if !b.Fabric.PFCReport() {
		t.Errorf("want pfc.csv with a storm")
	}
	// Without the new fields the canonical encoding has none of them.
	b, err = load(t, stormYAML("", "", "{link: [h0, leaf0], loss: 1%}"))
	if err != nil {
		t.Fatal(err)
	}
	if e := string(b.Effective()); strings.Contains(e, "Storm") || strings.Contains(e, `"Host":"`) {
		t.Errorf("effective scenario mentions the new fields: %s", e)
	}
}

func TestPFCStorm_BadInput(t *testing.T) {
	for _, c := range []struct{ tier, pfc, imp, want string }{
		{"", "", "{host: h9, pfc_storm: {}}", `impairments[0].host: no host named "h9"`},
		{"", "", "{host: leaf0, pfc_storm: {}}", `impairments[0].host: no host named "leaf0"`},
		{"", "", "{host: h0}", "impairments[0].pfc_storm: a host impairment needs its fault"},
		{"", "", "{pfc_storm: {}}", "impairments[0].host: pfc_storm needs the host"},
		{"", "", "{host: h0, link: [h0, leaf0], pfc_storm: {}}", "impairments[0].link: an impairment names a link or a host"},
		{"", "", "{host: h0, loss: 1%, pfc_storm: {}}", "impairments[0].host: a host takes pfc_storm only"},
		{"", "", "{host: h0, pfc_storm: {at: 2ms, until: 1ms}}", "impairments[0].pfc_storm.until: must be after at"},
		{"", "", "{host: h0, pfc_storm: {until: 0s}}", "impairments[0].pfc_storm.until: must be positive, got 0"},
		{"", "", "{host: h0, pfc_storm: {xon: 1KB}}", "impairments[0].pfc_storm.xon: needs xoff"},
		{"", "", "{host: h0, pfc_storm: {xoff: 1KB, xon: 2KB}}", "impairments[0].pfc_storm.xon: needs xoff, and 0 <= xon <= xoff"},
		{"", "", "{host: h0, pfc_storm: {quanta: 70000}}", "impairments[0].pfc_storm.quanta: must be 1..65535"},
		{"", "", "{host: h0, pfc_storm: {drain: -1Gbps}}", "impairments[0].pfc_storm.drain"},
		{"", "", "{host: h0, pfc_storm: {nic_watchdog: 3601s}}", "impairments[0].pfc_storm.nic_watchdog: must be a positive duration up to 3600s"},
		{"", "", "{host: h0, pfc_storm: {bogus: 1}}", "bogus"},
		{", switch: {off: [pfc]}", "", "{host: h0, pfc_storm: {}}", "impairments[0].pfc_storm: host h0's switch has no lossless class"},
		{"", ", storm_watchdog: {}", "{link: [h0, leaf0]}", `switch.pfc.storm_watchdog: missing required field "detection_time"`},
		{"", ", storm_watchdog: {detection_time: 2s}", "{link: [h0, leaf0]}", "switch.pfc.storm_watchdog.detection_time: must be a positive duration up to 1s"},
		{"", ", storm_watchdog: {detection_time: 1ms, action: shout}", "{link: [h0, leaf0]}", `switch.pfc.storm_watchdog.action: unknown storm action "shout"`},
		{"", ", storm_watchdog: {detection_time: 1ms, restoration_time: 0s}", "{link: [h0, leaf0]}", "switch.pfc.storm_watchdog.restoration_time: must be positive, got 0"},
	} {
		_, err := load(t, stormYAML(c.tier, c.pfc, c.imp))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %s %s: want one line with %q, got %v", c.tier, c.pfc, c.imp, c.want, err)
		}
	}
	two := strings.Replace(stormYAML("", "", "{host: h0, pfc_storm: {}}"), "workload:", "  - {host: h0, pfc_storm: {}}\nworkload:", 1)
	if _, err := load(t, two); err == nil || !strings.Contains(err.Error(), "impairments[1].host: h0 has a pfc_storm already") {
		t.Errorf("two storms on one host: got %v", err)
	}
}
