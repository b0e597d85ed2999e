package partition

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

func tier(d sim.Time) topologies.TierConfig {
	return topologies.TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: d, Queue: topologies.QueueConfig{Buffer: 1 << 20}}
}

func dumbbell(t *testing.T, host, bottleneck sim.Time) *topologies.Topology {
	t.Helper()
	topo, err := topologies.Dumbbell(topologies.DumbbellConfig{Senders: 4, Receivers: 4, Host: tier(host), Bottleneck: tier(bottleneck)})
	if err != nil {
		t.Fatalf("dumbbell: %v", err)
	}
	return topo
}

func fattree(t *testing.T, k int, latency sim.Time) *topologies.Topology {
	t.Helper()
	topo, err := topologies.FatTree(topologies.FatTreeConfig{K: k, Host: tier(sim.Microsecond),
		Agg: tier(sim.Microsecond), Core: tier(sim.Microsecond), SwitchLatency: latency})
	if err != nil {
		t.Fatalf("fattree: %v", err)
	}
	return topo
}

// checkInvariants checks what every placement must satisfy, whatever made
// it: counts add up, and the lookahead is the minimum cut delay.
func checkInvariants(t *testing.T, topo *topologies.Topology, pl *Placement) {
	t.Helper()
	if len(pl.Part) != len(topo.Nodes) {
		t.Fatalf("len(Part) = %d, want %d nodes", len(pl.Part), len(topo.Nodes))
	}
	elems := make([]int, pl.P)
	for _, v := range pl.Part {
		elems[v]++
	}
	if !slices.Equal(elems, pl.Elements) {
		t.Errorf("Elements = %v, want %v counted from Part", pl.Elements, elems)
	}
	if slices.Contains(pl.Elements, 0) {
		t.Errorf("empty partition: Elements = %v", pl.Elements)
	}
	ncut := 0
	for _, l := range topo.Links {
		if pl.Part[l.A] != pl.Part[l.B] {
			ncut++
		}
	}
	if ncut != len(pl.Cuts) {
		t.Errorf("%d cut links listed, want %d", len(pl.Cuts), ncut)
	}
	want := sim.Never
	for _, c := range pl.Cuts {
		want = min(want, c.Delay)
	}
	if pl.Lookahead != want {
		t.Errorf("Lookahead = %v, want the smallest cut delay %v", pl.Lookahead, want)
	}
}

// docs/design.md §3: "Partitioning cuts links; the lookahead L is the smallest
// propagation delay of a cut link." A 4x4 dumbbell with 1us host links and
// a 5us bottleneck: cutting only the bottleneck gives L = 5us, and the two
// halves weigh the same (4 hosts of weight 1 + a 5-port switch = 9 each).
func TestAuto_Design3_CutsLongestDelayFirst(t *testing.T) {
	topo := dumbbell(t, sim.Microsecond, 5*sim.Microsecond)
	pl, err := Auto(topo, nil, 2)
	if err != nil {
		t.Fatalf("Auto: %v", err)
	}
	checkInvariants(t, topo, pl)
	if len(pl.Cuts) != 1 || pl.Cuts[0].Link != 8 {
		t.Fatalf("cuts = %+v, want only the bottleneck (link 8)", pl.Cuts)
	}
	if pl.Lookahead != 5*sim.Microsecond || pl.LookaheadLink != 8 {
		t.Errorf("lookahead = %v on link %d, want 5us on link 8", pl.Lookahead, pl.LookaheadLink)
	}
	// 4 hosts of 2*1+1 and a switch of 2*5 ports.
	if !slices.Equal(pl.Load, []int64{22, 22}) {
		t.Errorf("load = %v, want [22 22]", pl.Load)
	}
	if !slices.Equal(pl.Hosts, []int{4, 4}) || !slices.Equal(pl.Elements, []int{5, 5}) {
		t.Errorf("hosts = %v, elements = %v, want [4 4] and [5 5]", pl.Hosts, pl.Elements)
	}
}

// When the long links do not allow a balanced cut (4 partitions of a
// dumbbell: only 2 groups), Auto falls back to the shorter delay.
func TestAuto_FallsBackToShorterDelay(t *testing.T) {
	topo := dumbbell(t, sim.Microsecond, 5*sim.Microsecond)
	pl, err := Auto(topo, nil, 4)
	if err != nil {
		t.Fatalf("Auto: %v", err)
	}
	checkInvariants(t, topo, pl)
	if pl.P != 4 {
		t.Fatalf("P = %d, want 4", pl.P)
	}
	if pl.Lookahead != sim.Microsecond {
		t.Errorf("lookahead = %v, want 1us (host links must be cut)", pl.Lookahead)
	}
}

// The k=8 fat-tree has one delay everywhere: Auto balances the load
// (128 hosts x 1 + 80 switches x 8 ports = 768, 192 per partition) within
// MaxImbalance and keeps most links inside partitions.
func TestAuto_FatTreeBalancedAndLocal(t *testing.T) {
	topo := fattree(t, 8, 0)
	for _, p := range []int{2, 4, 8} {
		pl, err := Auto(topo, nil, p)
		if err != nil {
			t.Fatalf("P=%d: %v", p, err)
		}
		checkInvariants(t, topo, pl)
		if im := pl.Imbalance(); im > MaxImbalance {
			t.Errorf("P=%d: imbalance %.3f, want <= %.2f (load %v)", p, im, MaxImbalance, pl.Load)
		}
		var total int64
		for _, l := range pl.Load {
			total += l
		}
		if total != 128*3+80*8*2 {
			t.Errorf("P=%d: total load %d, want 128*3 + 80*8*2 = 1664", p, total)
		}
		// A round-robin placement cuts almost every link; a local one
		// keeps at least half of the 384 links inside partitions.
		if len(pl.Cuts) > len(topo.Links)/2 {
			t.Errorf("P=%d: %d of %d links cut, want at most half", p, len(pl.Cuts), len(topo.Links))
		}
		again, _ := Auto(topo, nil, p)
		if !slices.Equal(again.Part, pl.Part) {
			t.Errorf("P=%d: two calls placed differently", p)
		}
	}
}

// fabric.New gives a direction the link delay plus the sender's latency.
// With 100ns switch latency, a host->ToR direction takes 1us and ToR->host
// 1.1us; the link's delay for the cut is the smaller, 1us. Cutting only
// switch-to-switch links gives 1.1us.
func TestMake_EngineDelayIncludesSwitchLatency(t *testing.T) {
	topo := fattree(t, 4, 100*sim.Nanosecond)
	// Hosts with their ToR and the ToR's pod in partition 0 or 1 by pod;
	// cores in partition 0: only agg-core links of pod 1 are cut.
	// k=4: pod q has hosts 4q..4q+3, tor2q, tor2q+1, agg2q, agg2q+1.
	part := make([]int, len(topo.Nodes))
	for i, nd := range topo.Nodes {
		var x int
		switch {
		case nd.Kind == topologies.Host:
			x = i / 4
		case strings.HasPrefix(nd.Name, "core"):
			continue
		default:
			if _, err := fmt.Sscanf(strings.TrimLeftFunc(nd.Name, unicode.IsLetter), "%d", &x); err != nil {
				t.Fatalf("node name %q: %v", nd.Name, err)
			}
			x /= 2
		}
		if x >= 2 {
			part[i] = 1
		}
	}
	pl, err := Make(topo, nil, part)
	if err != nil {
		t.Fatalf("Make: %v", err)
	}
	checkInvariants(t, topo, pl)
	if pl.Lookahead != 1100*sim.Nanosecond {
		t.Errorf("switch-switch cut: lookahead = %v, want 1.1us", pl.Lookahead)
	}
	// Move host 0 alone to partition 1: its host link is cut, 1us.
	part[0] = 1
	pl, err = Make(topo, nil, part)
	if err != nil {
		t.Fatalf("Make: %v", err)
	}
	if pl.Lookahead != sim.Microsecond {
		t.Errorf("host link cut: lookahead = %v, want 1us (host -> ToR has no switch latency)", pl.Lookahead)
	}
}

// A scheduled delay change replaces the engine's delay (sim.Link.advance),
// so the lookahead must not exceed the new value.
func TestMake_ScheduledDelayChangeShortensLookahead(t *testing.T) {
	topo := dumbbell(t, sim.Microsecond, 5*sim.Microsecond)
	imps := []fabric.LinkImpairment{{Link: 8, BtoA: true, Imp: &sim.Impairments{
		Schedule: []sim.LinkChange{{At: sim.Millisecond, Kind: sim.ChangeDelay, Delay: 2 * sim.Microsecond}}}}}
	pl, err := Auto(topo, imps, 2)
	if err != nil {
		t.Fatalf("Auto: %v", err)
	}
	if pl.Lookahead != 2*sim.Microsecond {
		t.Errorf("lookahead = %v, want 2us (the scheduled delay)", pl.Lookahead)
	}
}

func TestMake_ZeroDelayCutIsAnErrorNamingTheLink(t *testing.T) {
	topo := dumbbell(t, sim.Microsecond, 0)
	part := []int{0, 0, 0, 0, 1, 1, 1, 1, 0, 1}
	_, err := Make(topo, nil, part)
	if err == nil || !strings.Contains(err.Error(), "link 8 (left - right)") || !strings.Contains(err.Error(), "zero delay") {
		t.Fatalf("err = %v, want a zero-delay error naming link 8 (left - right)", err)
	}
	// Auto never cuts it: with 2 partitions the zero-delay bottleneck
	// stays inside one.
	pl, err := Auto(topo, nil, 2)
	if err != nil {
		t.Fatalf("Auto: %v", err)
	}
	if pl.Part[8] != pl.Part[9] {
		t.Errorf("Auto cut the zero-delay bottleneck: parts %v", pl.Part)
	}
	if _, err := PerElement(topo, nil); err == nil || !strings.Contains(err.Error(), "left - right") {
		t.Errorf("PerElement on a zero-delay link: err = %v, want one naming left - right", err)
	}
}

func TestPerElement_EveryNodeAlone(t *testing.T) {
	topo := fattree(t, 4, 0)
	pl, err := PerElement(topo, nil)
	if err != nil {
		t.Fatalf("PerElement: %v", err)
	}
	checkInvariants(t, topo, pl)
	if pl.P != len(topo.Nodes) || len(pl.Cuts) != len(topo.Links) {
		t.Errorf("P = %d with %d cuts, want %d and %d", pl.P, len(pl.Cuts), len(topo.Nodes), len(topo.Links))
	}
}

func TestMake_RejectsBadMaps(t *testing.T) {
	topo := dumbbell(t, sim.Microsecond, sim.Microsecond)
	cases := []struct {
		part []int
		want string
	}{
		{[]int{0, 0}, "2 entries for 10 nodes"},
		{[]int{0, 0, 0, 0, 2, 2, 2, 2, 0, 2}, "partition 1 is empty"},
		{[]int{0, 0, 0, 0, 0, 0, 0, 0, 0, -1}, "out of range"},
	}
	for _, c := range cases {
		if _, err := Make(topo, nil, c.part); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Make(%v): err = %v, want %q", c.part, err, c.want)
		}
	}
	if _, err := Auto(topo, nil, 11); err == nil || !strings.Contains(err.Error(), "at most 10") {
		t.Errorf("Auto(11): err = %v, want at most 10", err)
	}
}

func TestAuto_OnePartitionCutsNothing(t *testing.T) {
	topo := dumbbell(t, sim.Microsecond, sim.Microsecond)
	pl, err := Auto(topo, nil, 1)
	if err != nil {
		t.Fatalf("Auto: %v", err)
	}
	if len(pl.Cuts) != 0 || pl.Lookahead != sim.Never {
		t.Errorf("one partition: %d cuts, lookahead %v; want none and never", len(pl.Cuts), pl.Lookahead)
	}
}

func TestForScenario_PlacementSection(t *testing.T) {
	const base = `topology:
  type: dumbbell
  dumbbell:
    senders: 1
    receivers: 1
    host: {rate: 10Gbps, delay: 1us}
    bottleneck: {rate: 10Gbps, delay: 3us}
workload:
  - type: flows
    flows: [{src: 0, dst: 1, size: 10KB}]
`
	load := func(extra string) *scenario.Built {
		b, err := scenario.Load("s.yaml", []byte(base+extra), nil)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		return b
	}
	pl, err := ForScenario(load("placement: {mode: map, map: {h0: 0, left: 0, right: 1, h1: 1}}\n"), 0)
	if err != nil {
		t.Fatalf("map: %v", err)
	}
	if !slices.Equal(pl.Part, []int{0, 1, 0, 1}) || pl.Lookahead != 3*sim.Microsecond {
		t.Errorf("map: part %v lookahead %v, want [0 1 0 1] and 3us", pl.Part, pl.Lookahead)
	}
	if _, err := ForScenario(load("placement: {mode: map, map: {h0: 0, left: 0, right: 1, h1: 1}}\n"), 3); err == nil ||
		!strings.Contains(err.Error(), "has 2 partitions") {
		t.Errorf("map with --partitions 3: err = %v, want a mismatch", err)
	}
	pl, err = ForScenario(load("placement: {mode: per-element}\n"), 0)
	if err != nil || pl.P != 4 {
		t.Errorf("per-element: P = %v, err %v; want 4", pl, err)
	}
	pl, err = ForScenario(load("placement: {partitions: 2}\n"), 0)
	if err != nil || pl.P != 2 || pl.Lookahead != 3*sim.Microsecond {
		t.Errorf("auto 2: %+v, %v; want P=2 cut at the 3us bottleneck", pl, err)
	}
	pl, err = ForScenario(load(""), 4)
	if err != nil || pl.P != 4 {
		t.Errorf("no section, --partitions 4: %+v, %v", pl, err)
	}
	bad := []struct{ extra, want string }{
		{"placement: {mode: map, map: {h0: 0, left: 0, right: 1}}\n", "node h1 (node 1) has no partition"},
		{"placement: {mode: map, map: {h0: 0, left: 0, right: 2, h1: 2}}\n", "partition 1 is empty"},
		{"placement: {mode: map, map: {h0: 0, left: 0, right: 1, h1: 1, hx: 1}}\n", `no node named "hx"`},
		{"placement: {mode: per-element, partitions: 2}\n", "only for mode auto"},
		{"placement: {mode: round-robin}\n", "unknown mode"},
		{"placement: {partitions: 9}\n", "at most 4 partitions"},
	}
	for _, c := range bad {
		// scenario.Load itself rejects a bad placement (so does validate);
		// ForScenario repeats the check for Built values made otherwise.
		_, err := scenario.Load("s.yaml", []byte(base+c.extra), nil)
		var se *scenario.Error
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.extra, err, c.want)
		} else if !asScenarioError(err, &se) || !strings.HasPrefix(se.Path, "placement") {
			t.Errorf("%q: err = %#v, want a *scenario.Error under placement", c.extra, err)
		}
	}
}

func asScenarioError(err error, out **scenario.Error) bool {
	e, ok := err.(*scenario.Error)
	*out = e
	return ok
}
