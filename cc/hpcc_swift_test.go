package cc

import (
	"errors"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// hpccAckLoop feeds HPCC one ACK with one INT record per call, the record
// advancing 1 us and 12500 bytes (line rate at 100 Gb/s).
func hpccAckLoop(h *HPCC) func() {
	tel := &sim.Telemetry{NHops: 1, Hops: [sim.MaxINTHops]sim.INTHop{{Rate: 100 * sim.GbitPerSecond}}}
	ev := &AckEvent{MSS: 1000, Acked: 1000, Tel: tel}
	return func() {
		tel.Hops[0].TS += sim.Microsecond
		tel.Hops[0].TxBytes += 12500
		ev.Now += sim.Microsecond
		ev.SndUna += 1000
		ev.SndNxt = ev.SndUna + 50000
		h.OnAck(ev)
	}
}

// BenchmarkHPCCOnAck is one ACK with INT through HPCC's controller.
//
//	go test ./cc -run - -bench 'HPCC|Swift' -benchmem
func BenchmarkHPCCOnAck(b *testing.B) {
	h := NewHPCC(DefaultHPCCConfig(), 1000, 10)
	h.SetLink(100*sim.GbitPerSecond, 10*sim.Microsecond)
	step := hpccAckLoop(h)
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}

// BenchmarkSwiftOnAck is one ACK with an RTT sample and an endpoint delay
// through Swift's controller.
func BenchmarkSwiftOnAck(b *testing.B) {
	s := NewSwift(DefaultSwiftConfig(), 1000, 10)
	s.SetHops(3)
	tel := &sim.Telemetry{EndpointDelay: sim.Microsecond}
	ev := &AckEvent{MSS: 1000, Acked: 1000, Tel: tel}
	b.ReportAllocs()
	for b.Loop() {
		ev.Now += sim.Microsecond
		ev.RTT = 25*sim.Microsecond + ev.Now%(10*sim.Microsecond)
		s.OnAck(ev)
	}
}

// TestHPCCSwift_OnAckAllocatesNothing: the per-ACK path of both
// controllers allocates nothing (docs/adding-a-cc-module.md).
func TestHPCCSwift_OnAckAllocatesNothing(t *testing.T) {
	h := NewHPCC(DefaultHPCCConfig(), 1000, 10)
	h.SetLink(100*sim.GbitPerSecond, 10*sim.Microsecond)
	if n := testing.AllocsPerRun(1000, hpccAckLoop(h)); n != 0 {
		t.Errorf("HPCC OnAck: %v allocations per ACK, want 0", n)
	}
	s := NewSwift(DefaultSwiftConfig(), 1000, 10)
	ev := &AckEvent{MSS: 1000, Acked: 1000, RTT: 30 * sim.Microsecond, Tel: &sim.Telemetry{}}
	if n := testing.AllocsPerRun(1000, func() {
		ev.Now += sim.Microsecond
		s.OnAck(ev)
		s.OnCongestion(&CongestionEvent{Now: ev.Now, Kind: CongRTO, MSS: 1000})
	}); n != 0 {
		t.Errorf("Swift OnAck and OnCongestion: %v allocations, want 0", n)
	}
}

// TestDescribe_HPCCNICScheduledFromOptions: HPCC's nic_scheduled option
// declares the NICScheduled capability (the host then serves the flows as
// RDMA queue pairs); invalid options fall back to the defaults, so the
// capabilities stay visible for validation to report the option.
func TestDescribe_HPCCNICScheduledFromOptions(t *testing.T) {
	for _, c := range []struct {
		opts     map[string]string
		nic, int bool
	}{
		{nil, false, true},
		{map[string]string{"nic_scheduled": "true"}, true, true},
		{map[string]string{"nic_scheduled": "false"}, false, true},
		{map[string]string{"nic_scheduled": "true", "eta": "7"}, false, true},
	} {
		caps := Describe(Config{CC: "hpcc", Options: c.opts})
		if caps.NICScheduled != c.nic || caps.NeedsINT != c.int {
			t.Errorf("options %v: NICScheduled %v NeedsINT %v, want %v and %v", c.opts, caps.NICScheduled, caps.NeedsINT, c.nic, c.int)
		}
	}
	ctl, err := NewController(Config{CC: "hpcc", MSS: 1000, InitCwnd: 10, Options: map[string]string{"nic_scheduled": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ctl.(HPCCQueuePair); !ok {
		t.Fatalf("nic_scheduled: controller %T, want HPCCQueuePair", ctl)
	}
	if _, err := NewController(Config{CC: "hpcc", MSS: 1000, InitCwnd: 10, Options: map[string]string{"nic_scheduled": "maybe"}}); err == nil {
		t.Fatalf("nic_scheduled: maybe: want an error, got none")
	}
}

// TestHPCCSwift_BadOptionNamesItsKey: a value out of range, NaN or
// infinite is refused with an OptionValueError naming the option
// (scenario reports it as transport.options.KEY); NaN used to pass some
// checks (w_ai, ai, beta) and make every window NaN.
func TestHPCCSwift_BadOptionNamesItsKey(t *testing.T) {
	for _, c := range []struct{ cc, key, value string }{
		{"hpcc", "eta", "0"}, {"hpcc", "eta", "NaN"}, {"hpcc", "max_stage", "-1"}, {"hpcc", "max_stage", "2.5"},
		{"hpcc", "w_ai", "NaN"}, {"hpcc", "w_ai", "-1"}, {"hpcc", "w_ai", "+Inf"}, {"hpcc", "base_rtt_us", "NaN"},
		{"hpcc", "min_rate_gbps", "-1"},
		{"swift", "ai", "NaN"}, {"swift", "ai", "0"}, {"swift", "beta", "NaN"}, {"swift", "max_mdf", "1"},
		{"swift", "base_target_us", "0"}, {"swift", "per_hop_us", "NaN"}, {"swift", "fs_range_us", "-1"},
		{"swift", "endpoint_target_us", "0"}, {"swift", "fs_min", "0"}, {"swift", "fs_max", "+Inf"},
		{"swift", "fs_max", "0.05"}, {"swift", "min_cwnd", "0"}, {"swift", "max_cwnd", "+Inf"},
		{"swift", "max_cwnd", "0.001"}, {"swift", "retx_reset", "0"},
	} {
		_, err := NewController(Config{CC: c.cc, MSS: 1000, InitCwnd: 10, Options: map[string]string{c.key: c.value}})
		var ve *OptionValueError
		if !errors.As(err, &ve) || ve.Module != c.cc || ve.Key != c.key {
			t.Errorf("%s %s=%s: error %v, want an OptionValueError naming %s.%s", c.cc, c.key, c.value, err, c.cc, c.key)
		}
	}
	for _, cc := range []string{"hpcc", "swift"} {
		if _, err := NewController(Config{CC: cc, MSS: 1000, InitCwnd: 10}); err != nil {
			t.Errorf("%s with its defaults: %v", cc, err)
		}
	}
}
