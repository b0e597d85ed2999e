package cc

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// TestPacer_LongRunRateIsExact: packets of any size sent as soon as the
// pacer allows take exactly bytes × 8 / rate, to the picosecond: the
// remainder of each gap is carried (cc/pacer.go).
func TestPacer_LongRunRateIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, rate := range []int64{40e9, 100e9, 33_333_333_333, 1e6 + 7} {
		var p Pacer
		p.SetRate(rate)
		now := sim.Time(0)
		var bytes int64
		for range 10000 {
			n := int64(64 + r.IntN(9000))
			p.OnSent(now, n)
			bytes += n
			now = p.Next()
		}
		exact := mulDiv(bytes*8, int64(sim.Second), rate)
		if d := int64(now) - exact; d < 0 || d > 1 {
			t.Fatalf("rate %d: %d bytes end at %d ps, want %d (floor of bytes*8/rate)", rate, bytes, now, exact)
		}
	}
}

// mulDiv is a*b/c without overflow.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}

// TestPacer_RateChangeRetimesGap: a new rate re-times the gap after the
// last packet (HPCC rdma-hw.cc ChangeRate): 1000 B at 40 Gb/s is 200 ns,
// at 20 Gb/s 400 ns, at 80 Gb/s 100 ns; before any packet there is none.
func TestPacer_RateChangeRetimesGap(t *testing.T) {
	var p Pacer
	p.SetRate(40e9)
	if p.Next() != 0 {
		t.Fatalf("next %v before any packet, want 0", p.Next())
	}
	p.OnSent(1000, 1000)
	for _, c := range []struct {
		rate int64
		want sim.Time
	}{{40e9, 1000 + 200_000}, {20e9, 1000 + 400_000}, {80e9, 1000 + 100_000}, {0, 1000}} {
		p.SetRate(c.rate)
		if p.Next() != c.want {
			t.Fatalf("rate %d: next %v, want %v", c.rate, p.Next(), c.want)
		}
	}
}

// alphaRef is eq. 2 stepped one K at a time from the CNP at t0 (value a0
// after eq. 1) to now.
func alphaRef(a0 float64, t0, now, k sim.Time, g float64) float64 {
	a := a0
	for t := t0 + k; t <= now; t += k {
		a = decay(a, g)
	}
	return a
}

// TestDCQCN_3_1_AlphaDecayMatchesStepping: the controller computes eq. 2's
// decay lazily (no timer event per K); at any time it equals stepping
// alpha = (1 - g) alpha once per K since the last CNP, across random CNP
// times.
func TestDCQCN_3_1_AlphaDecayMatchesStepping(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cfg := DCQCNPaper()
	for trial := range 50 {
		d := NewDCQCN(cfg)
		d.SetLink(40e9, 0)
		now := sim.Time(0)
		var lastCNP sim.Time
		var a0 float64
		for step := range 40 {
			now += sim.Time(r.Int64N(int64(400 * sim.Microsecond)))
			if step%3 == 0 {
				before := d.AlphaAt(now)
				want := alphaRef(a0, lastCNP, now, cfg.AlphaPeriod, cfg.G)
				if step == 0 {
					want = 0 // not engaged yet
				}
				if math.Abs(before-want) > 1e-12 {
					t.Fatalf("trial %d step %d: alpha at %v = %.15f, want %.15f", trial, step, now, before, want)
				}
				d.OnCNP(now)
				if step == 0 {
					before = cfg.InitAlpha
				}
				a0 = decay(before, cfg.G) + cfg.G // eq. 1
				lastCNP = now
				if math.Abs(d.Alpha()-a0) > 1e-12 {
					t.Fatalf("trial %d: alpha after the CNP %.15f, want %.15f", trial, d.Alpha(), a0)
				}
			}
			for d.Deadline() <= now {
				d.OnTimer(d.Deadline())
			}
		}
	}
}

// TestDCQCN_RatesStayBetweenMinAndLine: whatever the CNPs, timers and
// bytes, MinRate <= Rc <= Rt <= line rate, and the timer stops only at
// line rate.
func TestDCQCN_RatesStayBetweenMinAndLine(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, cfg := range []DCQCNConfig{DCQCNPaper(), DCQCNConnectX(), DCQCNHPCC()} {
		if cfg.Stages == StagesPaper {
			cfg.ByteCounter = 100_000
		}
		d := NewDCQCN(cfg)
		line := int64(100e9)
		d.SetLink(sim.Bandwidth(line), 0)
		now := sim.Time(0)
		for range 20000 {
			now += sim.Time(r.Int64N(int64(20 * sim.Microsecond)))
			for d.Deadline() <= now {
				d.OnTimer(d.Deadline())
			}
			switch r.IntN(10) {
			case 0:
				d.OnCNP(now)
			default:
				d.OnSend(now, 4096)
			}
			if !(cfg.MinRate <= d.Rate() && d.Rate() <= d.TargetRate() && d.TargetRate() <= line) {
				t.Fatalf("%+v: rates Rc %d Rt %d outside [%d, %d] or Rc > Rt", cfg, d.Rate(), d.TargetRate(), cfg.MinRate, line)
			}
			if d.timerAt == sim.Never && d.active && !d.cutPending && d.Rate() != line {
				t.Fatalf("the increase timer stopped at Rc %d below line rate", d.Rate())
			}
		}
	}
}

// TestDCQCN_Options: the profile, then key by key overrides with units;
// a bad value names its key.
func TestDCQCN_Options(t *testing.T) {
	ctl, err := NewController(Config{CC: "dcqcn", MSS: 1000, InitCwnd: 10, Options: map[string]string{
		"profile": "connectx", "timer": "55us", "rai": "40Mbps", "byte_counter": "10MB", "f": "5",
		"min_rate": "100Mb/s", "cnp_interval": "50us", "alpha_update": "on-cnp", "g": "0.00390625"}})
	if err != nil {
		t.Fatal(err)
	}
	c := ctl.(*DCQCN).Config()
	want := DCQCNConnectX()
	want.Timer, want.RAI, want.ByteCounter, want.F = 55*sim.Microsecond, 40*Mbps, 10_000_000, 5
	want.MinRate, want.CNPInterval, want.AlphaMode, want.G = 100*Mbps, 50*sim.Microsecond, AlphaOnCNP, 1.0/256
	if c != want {
		t.Fatalf("config %+v, want %+v", c, want)
	}
	ctl, err = NewController(Config{CC: "dcqcn", MSS: 1000, InitCwnd: 10, Options: map[string]string{
		"profile": "hpcc", "window": "rate", "window_rtt": "12us"}})
	if err != nil {
		t.Fatal(err)
	}
	want = DCQCNHPCC()
	want.Window, want.WindowRTT = WindowRate, 12*sim.Microsecond
	if c := ctl.(*DCQCN).Config(); c != want {
		t.Fatalf("config %+v, want %+v", c, want)
	}
	for _, bad := range []map[string]string{{"timer": "55"}, {"rai": "fast"}, {"f": "0"}, {"g": "2"},
		{"profile": "cx9"}, {"byte_counter": "1.5"}, {"alpha_update": "sometimes"}, {"stages": "hyper"},
		{"window": "bdp"}, {"window_rtt": "-1us"}, {"stages": "timer"}} {
		_, err := NewController(Config{CC: "dcqcn", MSS: 1000, InitCwnd: 10, Options: bad})
		var ve *OptionValueError
		if !errors.As(err, &ve) {
			t.Fatalf("options %v: error %v, want an OptionValueError naming the key", bad, err)
		}
		for k := range bad {
			if ve.Key != k {
				t.Fatalf("options %v: error names %q, want %q", bad, ve.Key, k)
			}
		}
	}
}

// TestDCQCN_Window: without a window DCQCN's is unlimited; WindowFixed
// is B·T and WindowRate Rc·T (HPCC's ns-3 GetWin), T the flow's base RTT
// unless WindowRTT gives one, never below one byte.
func TestDCQCN_Window(t *testing.T) {
	line := 100 * sim.GbitPerSecond
	for _, c := range []struct {
		w      Window
		rtt    sim.Time
		before int64 // at line rate
		after  int64 // after one cut with alpha = 1 (Rc = 50 Gb/s)
	}{
		{WindowOff, 0, unlimitedWindow, unlimitedWindow},
		{WindowFixed, 0, 125000, 125000},
		{WindowRate, 0, 125000, 62500},
		{WindowRate, 20 * sim.Microsecond, 250000, 125000},
	} {
		cfg := DCQCNPaper()
		cfg.Window, cfg.WindowRTT = c.w, c.rtt
		d := NewDCQCN(cfg)
		d.SetLink(line, 10*sim.Microsecond)
		if got := d.Cwnd(); got != c.before {
			t.Errorf("window %d, T %v: cwnd %d at line rate, want %d", c.w, c.rtt, got, c.before)
		}
		d.OnCNP(0)
		if got := d.Cwnd(); got != c.after {
			t.Errorf("window %d, T %v: cwnd %d at Rc %d, want %d", c.w, c.rtt, got, d.Rate(), c.after)
		}
	}
	cfg := DCQCNPaper()
	cfg.Window, cfg.MinRate = WindowRate, 1
	d := NewDCQCN(cfg)
	d.SetLink(line, sim.Nanosecond)
	for range 60 {
		d.OnCNP(0)
	}
	if got := d.Cwnd(); got != 1 {
		t.Errorf("Rc %d b/s over 1 ns: cwnd %d, want the floor of 1 byte", d.Rate(), got)
	}
}

// BenchmarkDCQCNEndpoint is the per-packet path of a DCQCN sender: Next,
// OnSent (pacer and byte counter), an ACK per packet, a CNP every 100
// packets and the controller's timers. It must not allocate.
// go test ./cc -run - -bench DCQCNEndpoint -benchmem
func BenchmarkDCQCNEndpoint(b *testing.B) {
	ctl := NewDCQCN(DCQCNPaper())
	rec := NewRoCERecovery(NakGoBackN, 1000, 1<<50)
	ep, err := NewEndpoint(EndpointConfig{MSS: 1000, Size: 1 << 50, RTO: RTOConfig{Mode: RTOFixed, Fixed: sim.Second},
		Header: 64, LineRate: 100 * sim.GbitPerSecond}, ctl, rec)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	now := sim.Time(0)
	var ack Ack
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		now = max(now, ep.PaceAt())
		if d := ep.CCDeadline(); d <= now {
			ep.OnDeadline(d, TimerCC)
		}
		ep.BeginSend()
		seg, ok := ep.Next(now)
		if !ok {
			b.Fatalf("blocked at %v", now)
		}
		ep.OnSent(now, seg, rng)
		ack.Ack = seg.Seq + uint64(seg.Len)
		ep.OnAck(now, &ack)
		n++
		if n%100 == 0 {
			ep.OnCNP(now)
		}
	}
}

// TestDCQCN_ClampWithoutFlagsFollowsTheByteCounter: with clamp_tgt_rate
// and clamp_tgt_rate_after_time_inc both off, a cut sets Rt = Rc only if
// the byte counter raised the rate since the last cut (ns3-rdma's default
// branch; docs/decisions.md "Target clamp"). Line rate 40 Gb/s, α = 1 at
// every CNP (eq. 1 keeps it at 1), B = 1000 bytes:
//
//	CNP 1: bc = 0, no clamp: Rt = 40, Rc = 20 Gb/s
//	CNP 2: bc = 0, no clamp: Rt = 40, Rc = 10 (a clamp would give Rt = 20)
//	1000 bytes sent: one byte-counter event, fast recovery: Rc = 25
//	CNP 3: bc = 1, clamp: Rt = 25, Rc = 12.5 Gb/s
func TestDCQCN_ClampWithoutFlagsFollowsTheByteCounter(t *testing.T) {
	cfg := DCQCNPaper()
	cfg.ClampTarget, cfg.ClampAfterTimeInc, cfg.ByteCounter = false, false, 1000
	d := NewDCQCN(cfg)
	d.SetLink(40e9, 0)
	check := func(step string, rc, rt int64) {
		t.Helper()
		if d.Rate() != rc || d.TargetRate() != rt {
			t.Fatalf("%s: Rc %d Rt %d, want %d and %d", step, d.Rate(), d.TargetRate(), rc, rt)
		}
	}
	d.OnCNP(0)
	check("CNP 1", 20e9, 40e9)
	d.OnCNP(sim.Microsecond)
	check("CNP 2", 10e9, 40e9)
	if !d.OnSend(2*sim.Microsecond, 1000) {
		t.Fatalf("1000 bytes with B = 1000: no byte-counter event")
	}
	check("byte counter", 25e9, 40e9)
	d.OnCNP(3 * sim.Microsecond)
	check("CNP 3", 12_500_000_000, 25e9)
}

// TestDCQCN_TimerReachesLineRateAndStops: after a cut the timer alone
// brings Rc back to exactly the line rate and then stops (cc/dcqcn.go
// rounds (Rt + Rc)/2 up; rounding down would leave Rc one bit per second
// short and the timer running for ever). Paper parameters, no byte
// counter, line 40 Gb/s. The first CNP (α = 1): Rc = 20, Rt = 40 Gb/s.
// Five fast-recovery events (eq. 3): 30, 35, 37.5, 38.75, 39.375 Gb/s;
// then additive increase (eq. 4) with Rt capped at 40 Gb/s: each event
// takes the gap g to floor(g/2), and g = 625,000,000 bit/s (30 bits)
// reaches 0 in 30 events. 35 events in all, every T = 55 us.
func TestDCQCN_TimerReachesLineRateAndStops(t *testing.T) {
	cfg := DCQCNPaper()
	cfg.ByteCounter = 0
	d := NewDCQCN(cfg)
	d.SetLink(40e9, 0)
	d.OnCNP(0)
	fr := []int64{30e9, 35e9, 37_500_000_000, 38_750_000_000, 39_375_000_000}
	for i := 0; d.Deadline() != sim.Never; i++ {
		if i == 100 {
			t.Fatalf("after 100 timer events Rc %d Rt %d, the timer still runs", d.Rate(), d.TargetRate())
		}
		d.OnTimer(d.Deadline())
		if i < len(fr) && d.Rate() != fr[i] {
			t.Fatalf("fast-recovery event %d: Rc %d, want %d", i+1, d.Rate(), fr[i])
		}
	}
	if d.Rate() != 40e9 || d.TimerEvents != 35 || d.State() != StateLineRate {
		t.Fatalf("Rc %d after %d timer events, state %v; want 40e9 after 35, line-rate", d.Rate(), d.TimerEvents, d.State())
	}
}
