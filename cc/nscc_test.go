package cc

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// htsimPerm1024 is NSCC as htsim's main_uec.cpp sets it up for
// fat_tree_1024.topo: 100 Gb/s, 6 links of 1 us on the diameter, 4150-byte
// packets (64 of header) and 64-byte ACKs, trimming on.
func htsimPerm1024() (NSCCConfig, int64) {
	c := DefaultNSCCConfig()
	// calculate_rtt: 2 * 6 us + 6 * (4150 + 64) * 8 / 100 ns.
	c.NetworkRTT = 12*sim.Microsecond + 6*(332*sim.Nanosecond+5120*sim.Picosecond)
	c.Header = 64
	return c, 4150 - 64
}

// TestNSCC_UEC_3_6_13_3_ScalingOnHtsimPerm1024 checks the constants
// initNsccParams and initNscc derive, computed here from their formulas.
func TestNSCC_UEC_3_6_13_3_ScalingOnHtsimPerm1024(t *testing.T) {
	cfg, mss := htsimPerm1024()
	if cfg.NetworkRTT != 14022720*sim.Picosecond {
		t.Fatalf("network RTT: want 14.02272 us (htsim calculate_rtt), got %v", cfg.NetworkRTT)
	}
	n := NewNSCC(cfg, mss)
	// _target_Qdelay = network_rtt * 0.75 with trimming.
	if want := sim.Time(10517040); n.Target() != want {
		t.Errorf("target: want %v, got %v", want, n.Target())
	}
	// _bdp = 14.02272 us * 12.5 GB/s = 175,284 bytes; _maxwnd = 1.5 BDP.
	if n.MaxCwnd() != 262926 || n.WireCwnd() != 262926 {
		t.Errorf("max and initial window: want 262926 (1.5 * 175284), got %d and %d", n.MaxCwnd(), n.WireCwnd())
	}
	// The endpoint sees the payload of that wire window: 262926 * 4086/4150.
	if want := int64(262926 * 4086 / 4150); n.Cwnd() != want {
		t.Errorf("payload window: want %d, got %d", want, n.Cwnd())
	}
	a := 175284.0 / 150000
	b := 10517040.0 / 12e6
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"alpha", n.alpha, 4.0 * 4086 * a * b / 10517040},
		{"fi", n.fi, 5 * 4086 * a},
		{"eta", n.eta, 0.15 * 4086 * a},
		{"fi_scale", n.fiScale, 0.25 * a},
		{"qa_threshold", n.qaThreshold, 4 * 10517040},
	} {
		if math.Abs(c.got-c.want) > 1e-9*math.Abs(c.want) {
			t.Errorf("%s: want %g, got %g", c.name, c.want, c.got)
		}
	}
	if n.adjustBytes != 8*4150 || n.adjustEvery != cfg.NetworkRTT || n.minCwnd != 4150 {
		t.Errorf("adjust bytes %d (want 8 MTU = 33200), period %v (want the network RTT), min %d (want one MTU)",
			n.adjustBytes, n.adjustEvery, n.minCwnd)
	}
	cfg.Trimming = false
	if n := NewNSCC(cfg, mss); n.Target() != cfg.NetworkRTT {
		t.Errorf("without trimming the target is the network RTT: got %v", n.Target())
	}
}

// TestNSCC_WindowCountsWireBytes: acknowledged payload becomes wire bytes,
// one header per packet (htsim's in_flight counts whole packets).
func TestNSCC_WindowCountsWireBytes(t *testing.T) {
	cfg, mss := htsimPerm1024()
	n := NewNSCC(cfg, mss)
	for _, c := range []struct{ payload, wire int64 }{
		{4 * 4086, 4 * 4150}, {4086, 4150}, {100, 164}, {4086 + 100, 4150 + 164}, {0, 0},
	} {
		if got := n.wire(c.payload); got != c.wire {
			t.Errorf("wire(%d): want %d, got %d", c.payload, c.wire, got)
		}
	}
	n.OnAck(&AckEvent{Now: 20 * sim.Microsecond, Acked: 4 * 4086, RTT: 15 * sim.Microsecond, MSS: mss})
	if n.ignored != 4*4150 {
		t.Errorf("bytes counted after 4 packets: want 16600, got %d", n.ignored)
	}
}

// TestNSCC_QuickAdaptGate: quick adapt does nothing when the bytes
// delivered in its period reach MaxWnd >> qa_gate (quick_adapt's
// _achieved_bytes < (_maxwnd >> _qa_gate)), and fires just below.
func TestNSCC_QuickAdaptGate(t *testing.T) {
	for _, c := range []struct {
		achieved int64
		fires    bool
	}{{225000>>3 - 1000, true}, {225000 >> 3, false}} {
		n := NewNSCC(DefaultNSCCConfig(), 1000)
		n.OnAck(&AckEvent{Now: 13 * sim.Microsecond, Acked: 1000, RTT: 13 * sim.Microsecond}) // starts the period
		n.achieved = c.achieved
		n.OnNack(&NackEvent{Now: 40 * sim.Microsecond, Bytes: 1000, PriorInFlight: 5000})
		if got := n.state == StateQuickAdapt; got != c.fires {
			t.Errorf("achieved %d: quick adapt fired %v, want %v (gate %d)", c.achieved, got, c.fires, 225000>>3)
		}
		if c.fires && n.WireCwnd() != c.achieved {
			t.Errorf("achieved %d: quick adapt sets the window to it, got %d", c.achieved, n.WireCwnd())
		}
		if !c.fires && n.WireCwnd() != 225000-1000 {
			t.Errorf("achieved %d: the NACK takes its packet out: want 224000, got %d", c.achieved, n.WireCwnd())
		}
	}
	cfg := DefaultNSCCConfig()
	cfg.QuickAdapt = false
	n := NewNSCC(cfg, 1000)
	n.OnAck(&AckEvent{Now: 13 * sim.Microsecond, Acked: 1000, RTT: 13 * sim.Microsecond})
	n.OnNack(&NackEvent{Now: 40 * sim.Microsecond, Bytes: 1000})
	if n.QuickAdapts != 0 || n.state != StateNackDecrease {
		t.Errorf("quick_adapt=false: want no quick adapt and a NACK decrease, got %d and %v", n.QuickAdapts, n.state)
	}
}

// TestNSCC_TimeoutCutsOnePacketFlooredNotCapped is
// mark_packet_for_retransmission: the timed-out bytes leave the window,
// which stays at least one MTU.
func TestNSCC_TimeoutCutsOnePacketFlooredNotCapped(t *testing.T) {
	cfg, mss := htsimPerm1024()
	n := NewNSCC(cfg, mss)
	n.OnPacketTimeout(0, 2*mss)
	if n.WireCwnd() != 262926-2*4150 || n.State() != StateTimeoutDecrease {
		t.Errorf("two packets timed out: want %d, got %d (%v)", 262926-2*4150, n.WireCwnd(), n.State())
	}
	n.OnPacketTimeout(0, 1<<30)
	if n.WireCwnd() != 4150 {
		t.Errorf("the window's floor is one MTU: got %d", n.WireCwnd())
	}
	before := n.WireCwnd()
	n.OnCongestion(&CongestionEvent{Kind: CongLoss, FlightSize: 1 << 20, MSS: mss})
	n.OnCongestion(&CongestionEvent{Kind: CongECN, FlightSize: 1 << 20, MSS: mss})
	if n.WireCwnd() != before {
		t.Errorf("NSCC hears losses through NACKs and marks through ACKs: got %d after loss/ECN, want %d", n.WireCwnd(), before)
	}
}

// TestNSCC_BaseRTTFollowsSmallestSample: update_base_rtt lowers the base
// RTT, the BDP and the ceiling, and clamps the window.
func TestNSCC_BaseRTTFollowsSmallestSample(t *testing.T) {
	n := NewNSCC(DefaultNSCCConfig(), 1000)
	n.OnAck(&AckEvent{Now: 13 * sim.Microsecond, Acked: 1000, RTT: 8 * sim.Microsecond})
	// 8 us * 100 Gb/s / 8 = 100,000; ceiling 150,000.
	if n.BaseRTT() != 8*sim.Microsecond || n.MaxCwnd() != 150000 || n.WireCwnd() > 150000 {
		t.Errorf("base %v max %d cwnd %d; want 8us, 150000 and the window clamped", n.BaseRTT(), n.MaxCwnd(), n.WireCwnd())
	}
	n.OnAck(&AckEvent{Now: 14 * sim.Microsecond, Acked: 1000, RTT: 9 * sim.Microsecond})
	if n.BaseRTT() != 8*sim.Microsecond {
		t.Errorf("a larger sample must not raise the base RTT: got %v", n.BaseRTT())
	}
}

func TestNSCCConfig_Validate(t *testing.T) {
	bad := []func(*NSCCConfig){
		func(c *NSCCConfig) { c.LinkRate = 0 },
		func(c *NSCCConfig) { c.NetworkRTT = 0 },
		func(c *NSCCConfig) { c.Gamma = 0 },
		func(c *NSCCConfig) { c.MaxMD = 1 },
		func(c *NSCCConfig) { c.DelayAlpha = 2 },
		func(c *NSCCConfig) { c.MaxWndBDP = 0 },
		func(c *NSCCConfig) { c.AdjustBytes = 0 },
		func(c *NSCCConfig) { c.QAGate = 31 },
		func(c *NSCCConfig) { c.FI = -1 },
		func(c *NSCCConfig) { c.InitCwnd = -1 },
		func(c *NSCCConfig) { c.Header = -1 },
	}
	for i, f := range bad {
		c := DefaultNSCCConfig()
		f(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("case %d (%+v): want an error", i, c)
		}
	}
	c := DefaultNSCCConfig()
	if err := c.Validate(); err != nil {
		t.Errorf("defaults: want valid, got %v", err)
	}
}

// TestNSCC_OptionsThroughTheRegistry: every NSCCConfig field is an option
// with units; an unknown key or a bad value is refused.
func TestNSCC_OptionsThroughTheRegistry(t *testing.T) {
	cfg := Config{CC: "nscc", Recovery: "uet", MSS: 1000, InitCwnd: 10, Options: map[string]string{
		"network_rtt": "14us", "link_rate": "400Gbps", "trimming": "false", "target_qdelay": "5us",
		"gamma": "0.5", "qa_gate": "2", "init_cwnd": "7", "header": "64", "adjust_period": "20us",
		"base_rtt": "10us", "fast_increase_delay": "2us", "max_cwnd_bdp": "2", "adjust_bytes": "4",
		"quick_adapt": "false", "base_rtt_on_nack": "false", "fi": "6", "fi_scale": "0.5", "eta": "0.2",
		"alpha": "3", "delay_alpha": "0.5", "max_md": "0.4", "qa_threshold": "3"}}
	ctl, err := NewController(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := ctl.(*NSCC)
	c := n.cfg
	if c.NetworkRTT != 14*sim.Microsecond || c.LinkRate != 400*sim.GbitPerSecond || c.Trimming ||
		n.Target() != 5*sim.Microsecond || c.Gamma != 0.5 || c.QAGate != 2 || n.WireCwnd() != 7*1064 ||
		n.BaseRTT() != 10*sim.Microsecond || n.adjustEvery != 20*sim.Microsecond || c.QuickAdapt || c.BaseRTTOnNack ||
		c.MaxMD != 0.4 || c.DelayAlpha != 0.5 || c.FastIncreaseDelay != 2*sim.Microsecond {
		t.Errorf("options not applied: %+v", c)
	}
	for k, v := range map[string]string{"network_rtt": "14", "link_rate": "fast", "qa_gate": "40",
		"gamma": "x", "trimming": "maybe", "header": "1.5", "colour": "red"} {
		cfg.Options = map[string]string{k: v}
		_, err := NewController(cfg)
		var ue *UnknownOptionError
		var ve *OptionValueError
		switch {
		case err == nil:
			t.Errorf("%s=%s: want an error", k, v)
		case k == "colour" && !errors.As(err, &ue):
			t.Errorf("%s: want an UnknownOptionError, got %v", k, err)
		case k != "colour" && !strings.Contains(err.Error(), k):
			t.Errorf("%s=%s: the error should name the option, got %v", k, v, err)
		case k != "colour" && (!errors.As(err, &ve) || ve.Key != k):
			t.Errorf("%s=%s: want an OptionValueError for key %s, got %v", k, v, k, err)
		}
	}
}

// TestNSCC_DeclaresUETCapabilities: the registry's NSCC needs the uet
// recovery, reads ECE itself and reacts to NACKs; the uet recovery asks for
// PDS receivers and owns its timeouts.
func TestNSCC_DeclaresUETCapabilities(t *testing.T) {
	caps := Describe(Config{CC: "nscc", Recovery: "uet"})
	if !caps.PDSAcks || caps.Recovery != "uet" || caps.PerPacketAcks || caps.SteersPaths {
		t.Errorf("capabilities %+v: want PDS ACKs and recovery uet only", caps)
	}
	var ctl Controller = NewNSCC(DefaultNSCCConfig(), 1000)
	if _, ok := ctl.(NackReactor); !ok {
		t.Error("NSCC must react to NACKs")
	}
	if _, ok := ctl.(ECNReactor); !ok {
		t.Error("NSCC must read ECE itself")
	}
	if _, err := NewRecovery(Config{Recovery: "uet", MSS: 1000}, 1000); err == nil {
		t.Error("recovery uet without a per-packet timeout: want an error")
	}
}

// go test ./cc/ -run - -bench NSCC -benchmem
func BenchmarkNSCCOnAck(b *testing.B) {
	for _, marked := range []bool{false, true} {
		name := "clean"
		if marked {
			name = "marked"
		}
		b.Run(name, func(b *testing.B) {
			cfg, mss := htsimPerm1024()
			n := NewNSCC(cfg, mss)
			ev := AckEvent{Acked: 4 * mss, MSS: mss, ECE: marked, RTT: 20 * sim.Microsecond, InFlight: 40 * mss}
			b.ReportAllocs()
			for b.Loop() {
				ev.Now += 100 * sim.Nanosecond
				n.OnAck(&ev)
			}
		})
	}
}
