package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// htsim1024 is htsim's perm1024 set-up: its own fat_tree_1024.topo with
// main_uec.cpp's queue (1 BDP of 4150-byte packets: 43 × 4150) and ECN
// thresholds (20% and 80% of it, marked on dequeue), trimming.
const htsim1024 = `topology:
  type: htsim
  htsim:
    file: fat_tree_1024.topo
    queue: {buffer: 178450, ecn: {mode: red, min: 35690, max: 142760, pmax: 1, on: dequeue}}
switch: {forwarding: spray, trim: {header: 64}}
transport:
  cc: nscc
  ecn: true
  mtu: 4150
workload:
  - type: flows
    flows: [{src: 0, dst: 1000, size: 1MB}]
`

func loadHtsim(t *testing.T, text string) (*Built, error) {
	t.Helper()
	return Load("s.yaml", []byte(text), os.DirFS("../examples/htsim"))
}

// TestNSCC_DerivesHtsimsNumbersFromTheFabric: on htsim's fat_tree_1024,
// NSCC's network RTT is calculate_rtt's (2 × 6 us + 6 × (4150 + 64 bytes)
// at 100 Gb/s = 14.02272 us), the NIC rate 100 Gb/s, trimming on, and the
// per-packet timeout htsim's _min_rto: 15 us + 6 × 178,450 bytes at 100
// Gb/s = 100.656 us; the recovery is uet and the policy mixed over 64
// entropies.
func TestNSCC_DerivesHtsimsNumbersFromTheFabric(t *testing.T) {
	b, err := loadHtsim(t, htsim1024)
	if err != nil {
		t.Fatal(err)
	}
	tc := b.Fabric.Transport
	n := tc.CC.NSCC
	if n == nil || n.NetworkRTT != 14022720*sim.Picosecond || n.LinkRate != 100*sim.GbitPerSecond || !n.Trimming || n.Header != 64 {
		t.Fatalf("NSCC config %+v: want network RTT 14.02272us, 100Gbps, trimming, header 64", n)
	}
	if tc.RTO.Mode != cc.RTOFixed || tc.RTO.Fixed != 100656*sim.Nanosecond || tc.CC.PacketRTO != tc.RTO.Fixed {
		t.Errorf("rto %+v (packet %v): want fixed 100.656us", tc.RTO, tc.CC.PacketRTO)
	}
	if tc.CC.Recovery != "uet" || tc.STrack == nil || tc.STrack.Mode != cc.PathMixed || tc.STrack.Entropies != 64 {
		t.Errorf("recovery %q, paths %+v: want uet and mixed over 64", tc.CC.Recovery, tc.STrack)
	}
	if tc.PDS.AckBytes != 0 {
		t.Errorf("ack_bytes %d: want 0 (the receivers' default, 16384)", tc.PDS.AckBytes)
	}
	// Given values win over the derived ones.
	b, err = loadHtsim(t, strings.Replace(htsim1024, "mtu: 4150", `mtu: 4150
  init_cwnd: 20
  rto: {mode: fixed, value: 50us}
  nscc: {lb: reps, entropies: 128, network_rtt: 20us, link_rate: 400Gbps, ack_bytes: 8KiB, gamma: 0.5, qa_gate: 2, quick_adapt: false, shuffle: false, nic: fifo}`, 1))
	if err != nil {
		t.Fatal(err)
	}
	tc = b.Fabric.Transport
	n = tc.CC.NSCC
	if n.NetworkRTT != 20*sim.Microsecond || n.LinkRate != 400*sim.GbitPerSecond || n.Gamma != 0.5 || n.QAGate != 2 ||
		n.QuickAdapt || n.InitCwnd != 20 || tc.RTO.Fixed != 50*sim.Microsecond || tc.STrack.Mode != cc.PathREPS ||
		tc.STrack.Entropies != 128 || !tc.STrack.NoShuffle || tc.PDS.AckBytes != 8192 || !tc.PDS.FIFONIC {
		t.Errorf("given values not applied: %+v %+v %+v", n, tc.STrack, tc.RTO)
	}
}

// TestNSCC_RefusesWhatItCannotUse: the section without cc nscc, another
// recovery, no ECN, transport.options, an adaptive RTO, unknown policies,
// a non-power-of-two entropy count, and every number out of its range
// (docs/scenario.md, transport.nscc), each error naming its field.
func TestNSCC_RefusesWhatItCannotUse(t *testing.T) {
	for _, c := range []struct{ edit, field string }{
		{"cc: reno\n  nscc: {lb: bitmap}", "transport.nscc"},
		{"cc: nscc\n  recovery: sack", "transport.recovery"},
		{"cc: nscc\n  options: {gamma: '0.5'}", "transport.options"},
		{"cc: nscc\n  rto: {min: 1ms}", "transport.rto"},
		{"cc: nscc\n  nscc: {lb: zigzag}", "transport.nscc.lb"},
		{"cc: nscc\n  nscc: {lb: skip}", "transport.nscc.lb"},
		{"cc: nscc\n  nscc: {entropies: 100}", "transport.nscc.entropies"},
		{"cc: nscc\n  nscc: {entropies: 0}", "transport.nscc.entropies"},
		{"cc: nscc\n  nscc: {gamma: 2}", "transport.nscc.gamma"},
		{"cc: nscc\n  nscc: {max_md: 1}", "transport.nscc.max_md"},
		{"cc: nscc\n  nscc: {delay_alpha: 0}", "transport.nscc.delay_alpha"},
		{"cc: nscc\n  nscc: {fi: 1e300}", "transport.nscc.fi"},
		{"cc: nscc\n  nscc: {eta: -1}", "transport.nscc.eta"},
		{"cc: nscc\n  nscc: {alpha: 1001}", "transport.nscc.alpha"},
		{"cc: nscc\n  nscc: {fi_scale: 1e9}", "transport.nscc.fi_scale"},
		{"cc: nscc\n  nscc: {qa_threshold: 1e300}", "transport.nscc.qa_threshold"},
		{"cc: nscc\n  nscc: {max_cwnd_bdp: -1}", "transport.nscc.max_cwnd_bdp"},
		{"cc: nscc\n  nscc: {max_cwnd_bdp: 1e300}", "transport.nscc.max_cwnd_bdp"},
		{"cc: nscc\n  nscc: {max_cwnd_bdp: .inf}", "transport.nscc.max_cwnd_bdp"},
		{"cc: nscc\n  nscc: {gamma: .inf}", "transport.nscc.gamma"},
		{"cc: nscc\n  nscc: {max_cwnd_bdp: 900, link_rate: 1000Tbps}", "transport.nscc.max_cwnd_bdp"},
		{"cc: nscc\n  nscc: {adjust_bytes: -3}", "transport.nscc.adjust_bytes"},
		{"cc: nscc\n  nscc: {adjust_bytes: 100000000000}", "transport.nscc.adjust_bytes"},
		{"cc: nscc\n  nscc: {network_rtt: 1000s}", "transport.nscc.network_rtt"},
		{"cc: nscc\n  nscc: {base_rtt: 2s}", "transport.nscc.base_rtt"},
		{"cc: nscc\n  nscc: {target_qdelay: 1000s}", "transport.nscc.target_qdelay"},
		{"cc: nscc\n  nscc: {adjust_period: 100000s}", "transport.nscc.adjust_period"},
		{"cc: nscc\n  nscc: {fast_increase_delay: 2s}", "transport.nscc.fast_increase_delay"},
		{"cc: nscc\n  nscc: {reps_buffer: 100000}", "transport.nscc.reps_buffer"},
		{"cc: nscc\n  nscc: {reps_buffer: 40000}", "transport.nscc.reps_buffer"},
		{"cc: nscc\n  nscc: {ack_bytes: 4GiB}", "transport.nscc.ack_bytes"},
		{"cc: nscc\n  nscc: {reps_freeze: 2s}", "transport.nscc.reps_freeze"},
		{"cc: nscc\n  nscc: {qa_gate: 40}", "transport.nscc.qa_gate"},
		{"cc: nscc\n  nscc: {colour: red}", "transport.nscc.colour"},
		{"cc: nscc\n  nscc: {nic: smart}", "transport.nscc.nic"},
	} {
		_, err := loadHtsim(t, strings.Replace(htsim1024, "cc: nscc", c.edit, 1))
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%q: want an error naming %s, got %v", c.edit, c.field, err)
		}
	}
	if _, err := loadHtsim(t, strings.Replace(htsim1024, "ecn: true", "ecn: false", 1)); err == nil ||
		!strings.Contains(err.Error(), "ECN") {
		t.Errorf("nscc without ECN: want an error, got %v", err)
	}
}

// TestNSCC_DiameterOfAFatTree: the derived network RTT follows the
// fabric (calculate_rtt): a k=4 fat-tree with 1 us links and no trimming
// has htsim's 6-link diameter, so 2 × 6 us + 6 × (1500 + 64 bytes) at 100
// Gb/s, and its target is the network RTT; a dumbbell has 3 links of no
// delay.
func TestNSCC_DiameterOfAFatTree(t *testing.T) {
	const ft = `topology:
  type: fattree
  fattree:
    k: 4
    host: {rate: 100Gbps, delay: 1us}
    agg: {rate: 100Gbps, delay: 1us}
    core: {rate: 100Gbps, delay: 1us}
transport: {cc: nscc, ecn: true, mtu: 1500}
workload:
  - type: flows
    flows: [{src: 0, dst: 15, size: 1KB}]
`
	b, err := load(t, ft)
	if err != nil {
		t.Fatal(err)
	}
	n := b.Fabric.Transport.CC.NSCC
	want := 12*sim.Microsecond + 6*(100*sim.GbitPerSecond).TxTime(1500+64)
	if n.NetworkRTT != want || want != 12750720*sim.Picosecond || n.Trimming || nsccTarget(n) != want {
		t.Errorf("k=4 fat-tree: network RTT %v (want %v), trimming %v, target %v (want the RTT)", n.NetworkRTT, want, n.Trimming, nsccTarget(n))
	}
	b, err = load(t, base+"transport: {cc: nscc, ecn: true, mtu: 1500}\n")
	if err != nil {
		t.Fatal(err)
	}
	// dumbbell: 3 links of 0 delay; 10 Gb/s: 3 × (1500 + 64) bytes.
	want = 3 * (10 * sim.GbitPerSecond).TxTime(1500+64)
	if got := b.Fabric.Transport.CC.NSCC.NetworkRTT; got != want || b.Fabric.Transport.CC.NSCC.Trimming {
		t.Errorf("dumbbell: network RTT %v, want %v, and no trimming", got, want)
	}
}

// nsccTarget is the target queueing delay NSCC derives from c.
func nsccTarget(c *cc.NSCCConfig) sim.Time { return cc.NewNSCC(*c, 1000).Target() }

// TestNSCC_REPSFreezesByDefaultWithTrimming: htsim's REPS freezes after a
// timeout for 10 ms (CircularBufferREPS: repsUseFreezing, exit_freeze_after
// 10^10 ps) when switches trim; reps_freeze sets the period, 0 turns it
// off, and without trimming it is off.
func TestNSCC_REPSFreezesByDefaultWithTrimming(t *testing.T) {
	for _, c := range []struct {
		edit string
		want sim.Time
	}{
		{"nscc: {lb: reps}", 10 * sim.Millisecond},
		{"nscc: {lb: reps, reps_freeze: 0}", 0},
		{"nscc: {lb: reps, reps_freeze: 50us}", 50 * sim.Microsecond},
	} {
		b, err := loadHtsim(t, strings.Replace(htsim1024, "mtu: 4150", "mtu: 4150\n  "+c.edit, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Fabric.Transport.STrack.REPSFreeze; got != c.want {
			t.Errorf("%s: freeze %v, want %v", c.edit, got, c.want)
		}
	}
	b, err := loadHtsim(t, strings.Replace(strings.Replace(htsim1024, ", trim: {header: 64}", "", 1), "mtu: 4150", "mtu: 4150\n  nscc: {lb: reps}", 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Fabric.Transport.STrack.REPSFreeze; got != 0 || b.Fabric.Transport.CC.NSCC.Trimming {
		t.Errorf("without trimming: freeze %v (want 0), trimming %v", got, b.Fabric.Transport.CC.NSCC.Trimming)
	}
}

// TestExamples_HtsimScenariosLoad: every scenario in examples/htsim (the
// perm1024 runs on htsim's own files) loads, with its 1024 hosts and 1024
// flows of 2 MB, and STrack's run sprays over 128 entropies.
func TestExamples_HtsimScenariosLoad(t *testing.T) {
	files, _ := filepath.Glob("../examples/htsim/*.yaml")
	if len(files) < 2 {
		t.Fatalf("examples/htsim: %d scenarios, want at least perm1024-nscc and perm1024-strack", len(files))
	}
	for _, f := range files {
		b, err := LoadFile(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if n := b.Topo.NumHosts(); n != 1024 {
			t.Errorf("%s: %d hosts, want 1024", f, n)
		}
		if n := len(b.Fabric.Flows); n != 1024 || b.Fabric.Flows[0].Size != 2000000 {
			t.Errorf("%s: %d flows, want 1024 of 2,000,000 bytes", f, n)
		}
		if strings.HasSuffix(f, "perm1024-strack.yaml") {
			if st := b.Fabric.Transport.STrack; b.Fabric.Transport.CC.CC != "strack" || st == nil || st.Entropies != 128 {
				t.Errorf("%s: cc %q, paths %+v: want strack over 128 entropies", f, b.Fabric.Transport.CC.CC, st)
			}
		}
	}
}
