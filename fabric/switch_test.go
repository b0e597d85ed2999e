package fabric_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// switchRun is a finished run of the switch mechanisms' fabric tests.
type switchRun struct {
	f       *fabric.Fabric
	drops   uint64
	pauses  uint64 // PAUSE frames received by switches and hosts
	trimmed uint64
	fct     []sim.Time // by flow; 0 when unfinished
	end     sim.Time
}

func (r *switchRun) maxFCT(flows ...int) sim.Time {
	var m sim.Time
	for _, i := range flows {
		m = max(m, r.fct[i])
	}
	return m
}

// runSwitch builds and runs a fabric until every flow finished (or the
// limit) and gathers the switch counters.
func runSwitch(t *testing.T, topo *topologies.Topology, flows []hostsim.FlowSpec, sw switchsim.Config, fwd switchsim.Forwarding, limit sim.Time) *switchRun {
	t.Helper()
	cfg := hostsim.DefaultConfig()
	cfg.MTU = 4096
	cfg.RTO.Min = sim.Millisecond
	cfg.RTO.Initial = 2 * sim.Millisecond // a lost first window waits 2ms, not 1s
	f, err := fabric.New(fabric.Config{Topo: topo, Flows: flows, Transport: cfg, Seed: 1, Switch: sw, Forwarding: fwd})
	if err != nil {
		t.Fatal(err)
	}
	for f.RunUntilBatch(limit, 1<<16) {
		if f.Done() || f.Deadlock() != nil {
			break
		}
	}
	r := &switchRun{f: f, fct: make([]sim.Time, len(flows)), end: f.Engine().Now()}
	for i := range flows {
		if rec := f.Transport().Records[i]; rec.Finished {
			r.fct[i] = rec.Finish - flows[i].Start
		}
	}
	for n := 0; n < f.NumNodes(); n++ {
		s := f.Switch(n)
		if s == nil {
			continue
		}
		r.pauses += s.CtlConsumed
		for i := range s.Ports {
			r.drops += s.Ports[i].Dropped
			r.trimmed += s.Ports[i].Totals().Trimmed
		}
	}
	for h := 0; h < f.NumHosts(); h++ {
		r.pauses += f.Host(h).PausesRecv
	}
	return r
}

func leafSpine(t *testing.T, leaves, spines, hpl int, buffer int64) *topologies.Topology {
	t.Helper()
	tier := topologies.TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: sim.Microsecond, Queue: topologies.QueueConfig{Buffer: buffer}}
	topo, err := topologies.LeafSpine(topologies.LeafSpineConfig{Leaves: leaves, Spines: spines, HostsPerLeaf: hpl, Host: tier, Fabric: tier})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// incastFlows: 32 senders on leaves 1 and 2 to host 0 (leaf 0).
func incastFlows(n int, size int64) []hostsim.FlowSpec {
	flows := make([]hostsim.FlowSpec, n)
	for i := range flows {
		flows[i] = hostsim.FlowSpec{ID: int32(i), Src: 16 + i, Dst: 0, Size: size}
	}
	return flows
}

func pfcConfig() switchsim.Config {
	return switchsim.Config{Classes: []switchsim.Class{{Lossless: true, Alpha: 1}},
		PFC: switchsim.PFC{XOFF: 32 << 10, XON: 16 << 10}}
}

// TestPFC_LosslessIncast: a 32-to-1 incast drops under drop-tail and does
// not under PFC, which pauses instead, and finishes within 1.25 times the
// receiver link's serialisation time of all the bytes.
func TestPFC_LosslessIncast(t *testing.T) {
	const n, size = 32, 256 << 10
	flows := incastFlows(n, size)
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	dt := runSwitch(t, leafSpine(t, 3, 4, 16, 128<<10), flows, switchsim.Config{}, 0, sim.Second)
	pfc := runSwitch(t, leafSpine(t, 3, 4, 16, 128<<10), incastFlows(n, size), pfcConfig(), 0, sim.Second)
	ideal := n * (100 * sim.GbitPerSecond).TxTime(size)
	t.Logf("32->1 incast of %d KiB each (ideal %v): drop-tail %d drops, max FCT %v; PFC %d drops, %d pauses, max FCT %v",
		size>>10, ideal, dt.drops, dt.maxFCT(all...), pfc.drops, pfc.pauses, pfc.maxFCT(all...))
	if dt.drops == 0 {
		t.Errorf("expected drops under drop-tail, got none")
	}
	if pfc.drops != 0 {
		t.Errorf("expected no drops under PFC, got %d", pfc.drops)
	}
	if pfc.pauses == 0 {
		t.Errorf("expected PAUSE frames under PFC, got none")
	}
	for i, d := range pfc.fct {
		if d == 0 {
			t.Fatalf("flow %d did not finish under PFC", i)
		}
	}
	if m := pfc.maxFCT(all...); m > ideal*5/4 {
		t.Errorf("expected the PFC incast to finish within 1.25 x %v, got %v", ideal, m)
	}
	if c := pfc.f.Conservation(); c.Balance() != 0 {
		t.Errorf("conservation: %+v", c)
	}
}

// TestPFC_HOLBlockingVictim: a victim flow from leaf 1 to host 1 (leaf 0,
// an idle port) shares the upstream ports of an incast to host 0. Under
// drop-tail it runs near line rate; under PFC the pauses the incast causes
// stop it too (head-of-line blocking).
func TestPFC_HOLBlockingVictim(t *testing.T) {
	const n, size = 32, 256 << 10
	mk := func(incast bool) []hostsim.FlowSpec {
		var flows []hostsim.FlowSpec
		if incast {
			flows = incastFlows(n, size)
		}
		return append(flows, hostsim.FlowSpec{ID: int32(len(flows)), Src: 20, Dst: 1, Size: 2 << 20})
	}
	alone := runSwitch(t, leafSpine(t, 3, 4, 16, 128<<10), mk(false), pfcConfig(), 0, sim.Second)
	dt := runSwitch(t, leafSpine(t, 3, 4, 16, 128<<10), mk(true), switchsim.Config{}, 0, sim.Second)
	pfc := runSwitch(t, leafSpine(t, 3, 4, 16, 128<<10), mk(true), pfcConfig(), 0, sim.Second)
	va, vd, vp := alone.fct[0], dt.fct[n], pfc.fct[n]
	t.Logf("victim 2 MiB: alone %v, beside the incast under drop-tail %v (x%.2f), under PFC %v (x%.2f)",
		va, vd, float64(vd)/float64(va), vp, float64(vp)/float64(va))
	if va == 0 || vd == 0 || vp == 0 {
		t.Fatalf("the victim did not finish: %v %v %v", va, vd, vp)
	}
	if float64(vp) < 2*float64(va) || vp < vd*3/2 {
		t.Errorf("expected PFC to slow the victim at least 2x (and 1.5x more than drop-tail): alone %v, drop-tail %v, PFC %v", va, vd, vp)
	}
}

// ring5 is five switches in a ring, one host each; flow i goes from host i
// two hops clockwise, so every ring port carries a first hop and a transit
// hop and the lossless buffers depend on each other in a cycle.
func ring5(t *testing.T) (*topologies.Topology, []hostsim.FlowSpec) {
	t.Helper()
	var nodes []topologies.GraphNode
	var links []topologies.GraphLink
	for i := 0; i < 5; i++ {
		nodes = append(nodes, topologies.GraphNode{Name: fmt.Sprintf("h%d", i), Kind: "host"})
	}
	for i := 0; i < 5; i++ {
		nodes = append(nodes, topologies.GraphNode{Name: fmt.Sprintf("s%d", i), Kind: "switch", Tier: 1})
		links = append(links, topologies.GraphLink{A: fmt.Sprintf("h%d", i), B: fmt.Sprintf("s%d", i)},
			topologies.GraphLink{A: fmt.Sprintf("s%d", i), B: fmt.Sprintf("s%d", (i+1)%5)})
	}
	topo, err := topologies.Graph(topologies.GraphConfig{Nodes: nodes, Links: links,
		Defaults: topologies.TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: sim.Microsecond, Queue: topologies.QueueConfig{Buffer: 1 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	var flows []hostsim.FlowSpec
	for i := 0; i < 5; i++ {
		for k := 0; k < 4; k++ {
			flows = append(flows, hostsim.FlowSpec{ID: int32(len(flows)), Src: i, Dst: (i + 2) % 5, Size: 64 << 20})
		}
	}
	return topo, flows
}

// TestPFC_DeadlockDetected: the ring's cyclic buffer dependency locks up
// under PFC; the search finds the cycle of five paused ring ports on its
// grid and the run stops there with a one-line report naming them.
func TestPFC_DeadlockDetected(t *testing.T) {
	topo, flows := ring5(t)
	sw := pfcConfig()
	sw.PFC.Watchdog = 500 * sim.Microsecond
	r := runSwitch(t, topo, flows, sw, 0, 100*sim.Millisecond)
	d := r.f.Deadlock()
	if d == nil {
		t.Fatalf("expected a PFC deadlock report, got none (ran to %v, %d pauses)", r.end, r.pauses)
	}
	rep := d.Report(topo)
	t.Logf("stopped at %v (virtual): %s", d.At, rep)
	if strings.Contains(rep, "\n") || !strings.HasPrefix(rep, "pfc deadlock at ") {
		t.Errorf("expected one line naming a pfc deadlock, got %q", rep)
	}
	if d.At > 20*sim.Millisecond || r.end >= d.At {
		t.Errorf("expected detection within 20ms, with no event at or after it: at %v, last event %v", d.At, r.end)
	}
	// docs/decisions.md "PFC deadlock detection": the grid is watchdog/2
	// = 250us, and the run stops at the first grid time at which every
	// port of the cycle has been paused for the watchdog (500us): the
	// smallest multiple of 250us at or after the last port's pause + 500us.
	var formed sim.Time
	for _, p := range d.Cycle {
		formed = max(formed, p.Since)
	}
	if grid, want := 250*sim.Microsecond, formed+sw.PFC.Watchdog; d.At != (want+grid-1)/grid*grid {
		t.Errorf("cycle complete at %v: want the stop at the first multiple of %v at or after %v, got %v", formed, grid, want, d.At)
	}
	// The cycle is the five ring switches, each waiting for the next.
	if len(d.Cycle) != 5 {
		t.Fatalf("expected a cycle of the 5 ring ports, got %+v", d.Cycle)
	}
	for i, p := range d.Cycle {
		next := d.Cycle[(i+1)%len(d.Cycle)]
		if p.Peer != next.Elem || d.At-p.Since < sw.PFC.Watchdog || p.Until <= d.At {
			t.Errorf("port %d of the cycle %+v: want it paused by the next element for at least %v at %v", i, p, sw.PFC.Watchdog, d.At)
		}
	}
	// Without the watchdog the ring makes no progress at all: a deadlock,
	// not a slow run.
	sw.PFC.Watchdog = 0
	topo, flows = ring5(t)
	f, err := fabric.New(fabric.Config{Topo: topo, Flows: flows, Transport: hostsim.DefaultConfig(), Seed: 1, Switch: sw})
	if err != nil {
		t.Fatal(err)
	}
	delivered := func() (n uint64) {
		for _, rec := range f.Transport().Records {
			n += rec.BytesReceived
		}
		return n
	}
	f.RunUntil(5 * sim.Millisecond)
	at5 := delivered()
	f.RunUntil(10 * sim.Millisecond)
	if at10 := delivered(); at10 != at5 {
		t.Errorf("expected the ring to be stuck without the watchdog, but it delivered %d more bytes from 5ms to 10ms", at10-at5)
	}
	t.Logf("without the watchdog: %d bytes delivered by 5ms and none after", at5)
}

// TestTrim_IncastLosesNoPayload: under a 32-to-1 incast with drop-tail
// buffers, trimming cuts the packets that do not fit to their headers
// instead of dropping them; every header reaches the receiver and every
// flow delivers every byte.
func TestTrim_IncastLosesNoPayload(t *testing.T) {
	const n, size = 32, 256 << 10
	trim := switchsim.Config{Classes: []switchsim.Class{{Alpha: 1}, {Alpha: 1}}, ControlClass: 1, Trim: switchsim.Trim{Enabled: true}}
	dt := runSwitch(t, leafSpine(t, 3, 4, 16, 128<<10), incastFlows(n, size), switchsim.Config{}, 0, sim.Second)
	tr := runSwitch(t, leafSpine(t, 3, 4, 16, 128<<10), incastFlows(n, size), trim, 0, sim.Second)
	timeouts := func(r *switchRun) (n uint64) {
		for _, rec := range r.f.Transport().Records {
			n += rec.Timeouts
		}
		return n
	}
	var recvTrimmed uint64
	for h := 0; h < tr.f.NumHosts(); h++ {
		recvTrimmed += tr.f.Host(h).Trimmed
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	t.Logf("32->1 incast: drop-tail %d drops, %d timeouts, max FCT %v; trimming %d drops, %d trimmed (%d seen by the receiver), %d timeouts, max FCT %v",
		dt.drops, timeouts(dt), dt.maxFCT(all...), tr.drops, tr.trimmed, recvTrimmed, timeouts(tr), tr.maxFCT(all...))
	if tr.drops != 0 || tr.trimmed == 0 || recvTrimmed != tr.trimmed {
		t.Errorf("expected trims and no drops, every trimmed header delivered: drops %d, trimmed %d, received %d", tr.drops, tr.trimmed, recvTrimmed)
	}
	for i, rec := range tr.f.Transport().Records {
		if !rec.Finished || rec.BytesReceived != size {
			t.Fatalf("flow %d: finished %v, %d of %d bytes", i, rec.Finished, rec.BytesReceived, size)
		}
	}
	// TCP answers a trimmed header with one duplicate ACK only (fast
	// retransmit wants three), so trimming does not yet shorten its
	// recovery: the timeouts are logged, not checked.
}

// slowUplink is two leaves of four hosts and two spines; leaf l0's uplink
// to s1 runs at 25 Gb/s, the others at 100 Gb/s.
func slowUplink(t *testing.T) *topologies.Topology {
	t.Helper()
	var nodes []topologies.GraphNode
	var links []topologies.GraphLink
	for i := 0; i < 8; i++ {
		nodes = append(nodes, topologies.GraphNode{Name: fmt.Sprintf("h%d", i), Kind: "host"})
		links = append(links, topologies.GraphLink{A: fmt.Sprintf("h%d", i), B: fmt.Sprintf("l%d", i/4)})
	}
	nodes = append(nodes, topologies.GraphNode{Name: "l0", Kind: "switch", Tier: 1}, topologies.GraphNode{Name: "l1", Kind: "switch", Tier: 1},
		topologies.GraphNode{Name: "s0", Kind: "switch", Tier: 2}, topologies.GraphNode{Name: "s1", Kind: "switch", Tier: 2})
	links = append(links, topologies.GraphLink{A: "l0", B: "s0"}, topologies.GraphLink{A: "l0", B: "s1", Rate: 25 * sim.GbitPerSecond},
		topologies.GraphLink{A: "l1", B: "s0"}, topologies.GraphLink{A: "l1", B: "s1"})
	topo, err := topologies.Graph(topologies.GraphConfig{Nodes: nodes, Links: links,
		Defaults: topologies.TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: sim.Microsecond, Queue: topologies.QueueConfig{Buffer: 1 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// TestAdaptive_SteersAwayFromASlowLink: four flows cross from l0 to l1 by
// s0 (100 Gb/s) or s1 (25 Gb/s). ECMP hashes them regardless of the rates;
// per-packet adaptive routing and flowlets send the slow link a share near
// its share of the capacity (1/5).
func TestAdaptive_SteersAwayFromASlowLink(t *testing.T) {
	var flows []hostsim.FlowSpec
	for i := 0; i < 4; i++ {
		for k := 0; k < 4; k++ {
			flows = append(flows, hostsim.FlowSpec{ID: int32(len(flows)), Src: i, Dst: 4 + (i+k)%4, Size: 1 << 20})
		}
	}
	share := func(fwd switchsim.Forwarding) (float64, sim.Time) {
		topo := slowUplink(t)
		r := runSwitch(t, topo, append([]hostsim.FlowSpec(nil), flows...), switchsim.Config{FlowletGap: 10 * sim.Microsecond}, fwd, sim.Second)
		var fast, slow uint64
		l0 := r.f.Switch(8)
		for i := range l0.Ports {
			switch topo.Nodes[l0.Ports[i].Peer].Name {
			case "s0":
				fast = l0.Ports[i].TxPackets
			case "s1":
				slow = l0.Ports[i].TxPackets
			}
		}
		var m sim.Time
		for _, d := range r.fct {
			if d == 0 {
				t.Fatalf("%v: a flow did not finish", fwd)
			}
			m = max(m, d)
		}
		return float64(slow) / float64(fast+slow), m
	}
	ecmp, fe := share(switchsim.ECMP)
	ad, fa := share(switchsim.Adaptive)
	fl, ff := share(switchsim.Flowlet)
	t.Logf("share of l0's packets on the 25G uplink: ecmp %.3f (max FCT %v), adaptive %.3f (%v), flowlet %.3f (%v)", ecmp, fe, ad, fa, fl, ff)
	if ad > 0.3 || fl > 0.35 {
		t.Errorf("expected adaptive and flowlet forwarding to give the slow link at most 0.3 / 0.35 of the packets, got %.3f, %.3f", ad, fl)
	}
	if fa >= fe {
		t.Errorf("expected adaptive routing to finish sooner than ECMP: %v vs %v", fa, fe)
	}
}
