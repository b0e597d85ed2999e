package fabric_test

import (
	"testing"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// star is hosts h0..h<n-1> on one switch; h0's link runs at in, the
// others at out; every link has delay d.
func star(t *testing.T, n int, in, out sim.Bandwidth, d sim.Time) *topologies.Topology {
	t.Helper()
	nodes := []topologies.GraphNode{{Name: "s", Kind: "switch", Tier: 1}}
	var links []topologies.GraphLink
	for i := 0; i < n; i++ {
		name := string(rune('a' + i))
		nodes = append(nodes, topologies.GraphNode{Name: name, Kind: "host"})
		r := out
		if i == 0 {
			r = in
		}
		links = append(links, topologies.GraphLink{A: name, B: "s", Rate: r, Delay: d})
	}
	topo, err := topologies.Graph(topologies.GraphConfig{Nodes: nodes, Links: links,
		Defaults: topologies.TierConfig{Rate: out, Delay: d, Queue: topologies.QueueConfig{Buffer: 1 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// onePacketFCTs runs the flows (one packet each) and returns their FCTs.
func onePacketFCTs(t *testing.T, topo *topologies.Topology, flows []hostsim.FlowSpec, ct bool) ([]sim.Time, uint64) {
	t.Helper()
	cfg := hostsim.DefaultConfig()
	sw := switchsim.Config{CutThrough: switchsim.CutThrough{Enabled: ct}}
	f, err := fabric.New(fabric.Config{Topo: topo, Flows: flows, Transport: cfg, Seed: 1, Switch: sw})
	if err != nil {
		t.Fatal(err)
	}
	f.RunUntil(sim.Second)
	fct := make([]sim.Time, len(flows))
	for i, rec := range f.Transport().Records {
		if !rec.Finished {
			t.Fatalf("flow %d did not finish", i)
		}
		fct[i] = rec.Finish - flows[i].Start
	}
	var cut uint64
	for n := 0; n < f.NumNodes(); n++ {
		if s := f.Switch(n); s != nil {
			for i := range s.Ports {
				cut += s.Ports[i].Totals().CutThrough
			}
		}
	}
	return fct, cut
}

// TestCutThrough_OnePacketFCTIsTheAnalyticSum: one 1500-byte packet from
// a to b through one switch, links of rate r and delay d. Store-and-
// forward: the switch sends once the last byte is in, so the FCT is
// 2·S/r + 2·d. Cut-through: it sends once the 64-byte header is in, so
// the FCT is H/r + S/r + 2·d (the header's time on the first link, then
// the whole packet on the second). With the egress faster than the
// ingress (a at 25 Gb/s, b at 100 Gb/s) it stores and forwards:
// S/r_in + S/r_out + 2·d.
func TestCutThrough_OnePacketFCTIsTheAnalyticSum(t *testing.T) {
	const d = sim.Microsecond
	const size, mtu, hdr = 1436, 1500, 64 // payload; bytes on the wire; header
	r := 100 * sim.GbitPerSecond
	flow := []hostsim.FlowSpec{{ID: 0, Src: 0, Dst: 1, Size: size}}
	sf, n := onePacketFCTs(t, star(t, 2, r, r, d), flow, false)
	if want := 2*r.TxTime(mtu) + 2*d; sf[0] != want || n != 0 {
		t.Errorf("store-and-forward: want FCT %v (2·S/r + 2·d), got %v (%d cut through)", want, sf[0], n)
	}
	ct, n := onePacketFCTs(t, star(t, 2, r, r, d), flow, true)
	// The switch takes the header as arrived at TxTime(S) - TxTime(H)
	// before the last byte; TxTime rounds up to a picosecond, so the sum
	// is written with the same terms.
	if want := r.TxTime(hdr) + r.TxTime(mtu) + 2*d; ct[0] != want || n != 1 {
		t.Errorf("cut-through: want FCT %v (H/r + S/r + 2·d), got %v (%d cut through)", want, ct[0], n)
	}
	t.Logf("one packet of %d bytes at %v, delay %v: store-and-forward %v, cut-through %v", mtu, r, d, sf[0], ct[0])

	slow := 25 * sim.GbitPerSecond
	ct, n = onePacketFCTs(t, star(t, 2, slow, r, d), flow, true)
	if want := slow.TxTime(mtu) + r.TxTime(mtu) + 2*d; ct[0] != want || n != 0 {
		t.Errorf("egress faster than ingress: want store-and-forward's %v, got %v (%d cut through)", want, ct[0], n)
	}
}

// TestCutThrough_BusyEgressStoresAndForwards: c's packet (sent at 0) is
// on the egress to b when a's header arrives (a starts at half a packet
// time), and gone when a's last byte arrives: the egress was busy when
// the header came, so a's packet is stored and forwarded, FCT 2·S/r + 2·d;
// c's own packet found the egress idle and cut through.
func TestCutThrough_BusyEgressStoresAndForwards(t *testing.T) {
	const d = sim.Microsecond
	const size, mtu, hdr = 1436, 1500, 64
	r := 100 * sim.GbitPerSecond
	flows := []hostsim.FlowSpec{{ID: 0, Src: 2, Dst: 1, Size: size},
		{ID: 1, Src: 0, Dst: 1, Size: size, Start: r.TxTime(mtu) / 2}}
	fct, n := onePacketFCTs(t, star(t, 3, r, r, d), flows, true)
	if want := r.TxTime(hdr) + r.TxTime(mtu) + 2*d; fct[0] != want {
		t.Errorf("c's packet: want the cut-through FCT %v, got %v", want, fct[0])
	}
	if want := 2*r.TxTime(mtu) + 2*d; fct[1] != want || n != 1 {
		t.Errorf("a's packet behind a busy egress: want store-and-forward's %v, got %v (%d cut through, want 1)", want, fct[1], n)
	}
}
