package cc

import (
	"math"
	"math/bits"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// The kernel's constants as real numbers, for closed-form references.
const (
	// cubicCKernel is C as tcp_cubic.c computes with it: cube_rtt_scale =
	// bic_scale*10 = 410 over 2^10 (RFC 9438 §5.1 C = 0.4).
	cubicCKernel = 410.0 / 1024.0
	// cubicBetaReal is beta = 717/1024 (RFC 9438 §4.6 beta_cubic = 0.7).
	cubicBetaReal = 717.0 / 1024.0
)

// icbrt is the exact integer cube root floor(cbrt(a)).
func icbrt(a uint64) uint64 {
	x := uint64(math.Cbrt(float64(a)))
	for x > 0 && cube128Greater(x, a) {
		x--
	}
	for !cube128Greater(x+1, a) {
		x++
	}
	return x
}

// cube128Greater reports x^3 > a without overflow.
func cube128Greater(x, a uint64) bool {
	hi, lo := bits.Mul64(x, x)
	if hi != 0 {
		return true
	}
	hi, lo = bits.Mul64(lo, x)
	return hi != 0 || lo > a
}

// TestCubic_TcpCubicC_CubicRoot_SmallValues: for a in [0..63] cubic_root
// returns ((v[a] + 35) >> 6), the table holding about cbrt(a << 18) - 1 =
// 64*cbrt(a) - 1: that is floor(cbrt(a) + 34/64), cbrt(a) rounded with the
// cut at .47, so |x - cbrt(a)| < 34/64 (the hand refinements of the table
// stay within that).
func TestCubic_TcpCubicC_CubicRoot_SmallValues(t *testing.T) {
	for a := uint64(0); a < 64; a++ {
		got := float64(cubicRoot(a))
		if exact := math.Cbrt(float64(a)); math.Abs(got-exact) >= 34.0/64 {
			t.Errorf("cubicRoot(%d): want within 34/64 of cbrt = %.3f, got %.0f", a, exact, got)
		}
	}
}

// TestCubic_TcpCubicC_CubicRoot_Property checks cubic_root against exact
// integer cube roots. Bound, from the algorithm: the table seeds x0 from the
// top 4-6 bits of a, so x0 is within ~5% of cbrt(a); one Newton-Raphson
// step squares that (<= 0.25%); 341/1024 for 1/3 costs 0.1%; x*(x-1) for
// x^2 and the integer truncations cost at most about 2 units. So |x -
// cbrt(a)| <= 0.5% of cbrt(a) + 2. The mean relative error must be near
// the kernel's documented "Avg err ~= 0.195%" (allowed: 0.3%).
func TestCubic_TcpCubicC_CubicRoot_Property(t *testing.T) {
	var sum float64
	var n int
	check := func(a uint64) {
		got := float64(cubicRoot(a))
		exact := float64(icbrt(a))
		if diff := math.Abs(got - exact); diff > 0.005*exact+2 {
			t.Fatalf("cubicRoot(%d): want %v within 0.5%%+2, got %v (diff %v)", a, exact, got, diff)
		}
		if a >= 1<<30 {
			sum += math.Abs(got-math.Cbrt(float64(a))) / math.Cbrt(float64(a))
			n++
		}
	}
	// Every value up to 2^16, then a deterministic log-uniform sweep.
	for a := uint64(0); a < 1<<16; a++ {
		check(a)
	}
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i < 200000; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		shift := 16 + x%47 // 2^16 .. 2^62
		check(x >> (63 - shift))
	}
	if mean := sum / float64(n); mean > 0.003 {
		t.Errorf("mean relative error over %d values >= 2^30: want <= 0.3%% (documented ~0.195%%), got %.4f%%", n, 100*mean)
	}
}

// TestCubic_TcpCubicC_CubicRoot_HandComputed runs cubic_root by hand:
//   - a = 64: fls64 = 7, b = (7*84>>8)-1 = 1, shift = 64>>3 = 8, v[8] = 123,
//     x = (133<<1)>>6 = 4; a/(4*3) = 5, x = (8+5)*341>>10 = 4.
//   - a = 1000: fls64 = 10, b = 2, shift = 1000>>6 = 15, v[15] = 156,
//     x = (166<<2)>>6 = 10; a/(10*9) = 11, x = (20+11)*341>>10 = 10.
//   - a = cube_factor*300 = 2681735677*300 = 804520703100 (K for W_max -
//     cwnd = 300): fls64 = 40, b = 12, shift = a>>36 = 11, v[11] = 138,
//     x = (148<<12)>>6 = 9472; a/(9472*9471) = 8968,
//     x = (18944+8968)*341>>10 = 9294.
func TestCubic_TcpCubicC_CubicRoot_HandComputed(t *testing.T) {
	for _, tc := range []struct {
		a    uint64
		want uint32
	}{{64, 4}, {1000, 10}, {804520703100, 9294}} {
		if got := cubicRoot(tc.a); got != tc.want {
			t.Errorf("cubicRoot(%d): want %d, got %d", tc.a, tc.want, got)
		}
	}
	if c := NewCubic(DefaultCubicConfig(), cubicTestMSS, 10); c.cubeFactor != 2681735677 || c.cubeRTTScale != 410 || c.betaScale != 15 {
		t.Errorf("want cube_factor 2^40/410 = 2681735677, cube_rtt_scale 410, beta_scale 8*1741/3/307 = 15, got %d, %d, %d",
			c.cubeFactor, c.cubeRTTScale, c.betaScale)
	}
}

// TestCubic_TcpCubicC_TargetOneDelayMinAhead: bictcp_update aims at
// W(t + delay_min). At the epoch start, W_max 1000, cwnd 700 (K = 9294),
// by hand:
//   - delay_min 100 ms: t = usecs_to_jiffies(100000) << 10 / HZ = 102,
//     offs = 9192, delta = 410*9192^3 >> 40 = 289, target = 711,
//     cnt = 700/11 = 63;
//   - delay_min 1 us: t = 1<<10/1000 = 1, offs = 9293, delta = 299,
//     target = 701, cnt = 700/1 = 700.
func TestCubic_TcpCubicC_TargetOneDelayMinAhead(t *testing.T) {
	for _, tc := range []struct {
		delayMinUs uint32
		wantCnt    uint32
	}{{100000, 63}, {1, 700}} {
		c := newTestCubic("off")
		c.lastMaxCwnd, c.cwnd, c.ssthresh, c.delayMin = 1000, 700, 700, tc.delayMinUs
		c.OnAck(&AckEvent{Now: 5 * sim.Second, Acked: cubicTestMSS, SndUna: 1000, SndNxt: 700000, CwndLimited: true, MSS: cubicTestMSS})
		if c.bicK != 9294 || c.cnt != tc.wantCnt {
			t.Errorf("delay_min %d us: want K 9294 and cnt %d, got %d and %d", tc.delayMinUs, tc.wantCnt, c.bicK, c.cnt)
		}
	}
}

// newTestCubic is a Cubic with the kernel defaults and the given HyStart.
func newTestCubic(hystart string, mutate ...func(*CubicConfig)) *Cubic {
	cfg := DefaultCubicConfig()
	cfg.HyStart = hystart
	for _, m := range mutate {
		m(&cfg)
	}
	return NewCubic(cfg, cubicTestMSS, 10)
}

const cubicTestMSS = 1000

// cubicCADriver acknowledges an ACK-clocked flow at a fixed RTT with no queue:
// each round, cwnd packets are acknowledged one by one, evenly spread over
// the RTT.
type cubicCADriver struct {
	c        *Cubic
	now      sim.Time
	rtt      sim.Time
	una, nxt uint64
}

func (d *cubicCADriver) ack(acked int64) {
	d.una += uint64(acked)
	d.nxt = max(d.nxt, d.una+uint64(d.c.Cwnd()))
	d.c.OnAck(&AckEvent{Now: d.now, Acked: acked, RTT: d.rtt, SndUna: d.una, SndNxt: d.nxt,
		CwndLimited: true, MSS: cubicTestMSS, PriorInFlight: d.c.Cwnd()})
}

// round acknowledges one window and returns the window it started with.
func (d *cubicCADriver) round() int64 {
	n := d.c.Cwnd() / cubicTestMSS
	step := d.rtt / sim.Time(n)
	for i := int64(0); i < n; i++ {
		d.now += step
		d.ack(cubicTestMSS)
	}
	d.now += d.rtt - step*sim.Time(n)
	return n
}

// cubicEnterCA puts a fresh Cubic in congestion avoidance after a loss at wmax
// packets: one slow-start ACK sets delay_min to the driver's RTT, then the
// window is set to wmax and a loss reduces it.
func cubicEnterCA(d *cubicCADriver, wmax uint32) {
	d.now = sim.Second
	d.ack(cubicTestMSS) // delay_min = rtt
	d.c.cwnd = wmax
	d.c.OnCongestion(&CongestionEvent{Now: d.now, Kind: CongLoss, MSS: cubicTestMSS})
	d.c.OnRecoveryExit(d.now)
}

// TestCubic_TcpCubicC_RecalcSsthresh: cubictcp_recalc_ssthresh gives
// ssthresh = max(cwnd*717/1024, 2) and W_max = cwnd when cwnd >= W_max.
func TestCubic_TcpCubicC_RecalcSsthresh(t *testing.T) {
	for _, tc := range []struct{ cwnd, ssthresh uint32 }{
		{1000, 700}, // 717000/1024 = 700.2
		{100, 70},   // 71700/1024 = 70.02
		{10, 7},     // 7170/1024 = 7.002
		{3, 2},      // 2151/1024 = 2.1
		{2, 2},      // 1434/1024 = 1.4, at least 2
	} {
		c := newTestCubic("off")
		c.cwnd = tc.cwnd
		c.OnCongestion(&CongestionEvent{Kind: CongLoss, MSS: cubicTestMSS})
		if c.ssthresh != tc.ssthresh || c.cwnd != tc.ssthresh {
			t.Errorf("loss at cwnd %d: want ssthresh=cwnd=%d, got ssthresh %d cwnd %d", tc.cwnd, tc.ssthresh, c.ssthresh, c.cwnd)
		}
		if c.lastMaxCwnd != tc.cwnd {
			t.Errorf("loss at cwnd %d: want last_max_cwnd %d, got %d", tc.cwnd, tc.cwnd, c.lastMaxCwnd)
		}
		if got, want := c.Cwnd(), int64(tc.ssthresh)*cubicTestMSS; got != want || c.Ssthresh() != want {
			t.Errorf("loss at cwnd %d: want Cwnd()=Ssthresh()=%d bytes, got %d and %d", tc.cwnd, want, got, c.Ssthresh())
		}
	}
}

// TestCubic_TcpCubicC_FastConvergence: a loss below the previous W_max
// sets W_max = cwnd*(1024+717)/2048 (RFC 9438 §4.7: W_max*(1+beta)/2); with
// fast_convergence off, W_max = cwnd.
func TestCubic_TcpCubicC_FastConvergence(t *testing.T) {
	for _, tc := range []struct {
		fc          bool
		wantLastMax uint32
	}{
		{true, 680},  // 800*1741/2048 = 680.07
		{false, 800}, // cwnd
	} {
		c := newTestCubic("off", func(cfg *CubicConfig) { cfg.FastConvergence = tc.fc })
		c.lastMaxCwnd = 1000
		c.cwnd = 800
		c.OnCongestion(&CongestionEvent{Kind: CongLoss, MSS: cubicTestMSS})
		if c.lastMaxCwnd != tc.wantLastMax {
			t.Errorf("fast_convergence=%v, loss at 800 < W_max 1000: want last_max_cwnd %d, got %d", tc.fc, tc.wantLastMax, c.lastMaxCwnd)
		}
		if c.ssthresh != 560 { // 800*717/1024 = 560.2
			t.Errorf("fast_convergence=%v: want ssthresh 560, got %d", tc.fc, c.ssthresh)
		}
	}
}

// TestCubic_TcpCubicC_K: after a loss at W_max, the epoch's K is
// cubic_root(cube_factor*(W_max-cwnd)) in 1/1024 s; in closed form (RFC
// 9438 §4.2 eq. 2) K = cbrt(W_max*(1-beta)/C) seconds. The kernel
// subtracts the integer ssthresh, so W_max - cwnd is 300 for W_max 1000;
// the cube-root bound (0.5% + 2 units) applies.
func TestCubic_TcpCubicC_K(t *testing.T) {
	for _, wmax := range []uint32{100, 1000, 10000, 100000} {
		d := &cubicCADriver{c: newTestCubic("off"), rtt: 10 * sim.Millisecond}
		cubicEnterCA(d, wmax)
		d.round()
		diff := float64(wmax - d.c.ssthresh)
		want := 1024 * math.Cbrt(diff/cubicCKernel)
		got := float64(d.c.bicK)
		if math.Abs(got-want) > 0.005*want+2 {
			t.Errorf("W_max %d: want K = %.1f/1024 s (cbrt(%.0f/C)), got %.0f", wmax, want, diff, got)
		}
		// And against W_max*(1-beta) with the real-valued beta.
		if rf := 1024 * math.Cbrt(float64(wmax)*(1-cubicBetaReal)/cubicCKernel); math.Abs(got-rf) > 0.006*rf+2 {
			t.Errorf("W_max %d: want K near cbrt(W_max(1-beta)/C) = %.1f/1024 s, got %.0f", wmax, rf, got)
		}
		if d.c.bicOriginPoint != wmax {
			t.Errorf("W_max %d: want origin point W_max, got %d", wmax, d.c.bicOriginPoint)
		}
	}
}

// TestCubic_TcpCubicC_TrajectoryAfterLoss follows cwnd in congestion
// avoidance after a loss at W_max = 1000 (RTT 10 ms, TCP friendliness off
// so the cubic function alone drives the window) and compares it, round by
// round, with RFC 9438 eq. 1, W(t) = C(t-K)^3 + W_max, t from the epoch
// start. Tolerance: the kernel aims at W(t + delay_min) and reaches it
// about one RTT later, so cwnd may be off by W'(t) times (two RTTs plus
// the K error of the cube-root bound), plus 2 packets of integer rounding
// (truncated delta, cnt = floor(cwnd/(target-cwnd)), t in jiffies).
func TestCubic_TcpCubicC_TrajectoryAfterLoss(t *testing.T) {
	rtt := 10 * sim.Millisecond
	d := &cubicCADriver{c: newTestCubic("off", func(cfg *CubicConfig) { cfg.TCPFriendliness = false }), rtt: rtt}
	cubicEnterCA(d, 1000)
	wmax := 1000.0
	k := math.Cbrt((wmax - 700) / cubicCKernel)
	dk := 0.005*k + 2.0/1024
	start := d.now
	checked := 0
	for d.now-start < sim.Time(2*k*float64(sim.Second)) {
		tt := float64(d.now-start) / float64(sim.Second)
		d3 := tt - k
		want := cubicCKernel*d3*d3*d3 + wmax // C*(t-K)^3 + Wmax (RFC 9438 eq. 1)
		slope := 3 * cubicCKernel * (tt - k) * (tt - k)
		tol := slope*(dk+2*rtt.Seconds()) + 2
		got := float64(d.c.cwnd)
		if math.Abs(got-want) > tol {
			t.Fatalf("t=%.3fs (K=%.3fs): want cwnd W(t)=%.1f ± %.1f, got %.0f", tt, k, want, tol, got)
		}
		d.round()
		checked++
	}
	if checked < 1000 {
		t.Fatalf("want at least 1000 rounds checked over 2K, got %d", checked)
	}
}

// TestCubic_RFC9438_4_3_TCPFriendlyRegion: with a small RTT and W_max
// (10 ms, 100 packets) the Reno emulation dominates; CUBIC "SHOULD" then
// grow at least like W_est = cwnd_epoch + alpha*t/RTT with alpha =
// 3(1-beta)/(1+beta) (RFC 9438 §4.3 eq. 4). Linux emulates Reno with
// tcp_cwnd += 1 per cwnd*beta_scale/8 packets ACKed (beta_scale = 15, so
// 8/15 >= alpha per RTT) and caps cnt at cwnd/(tcp_cwnd-cwnd). But it only
// brings tcp_cwnd up to date when it recomputes cnt, which, while cwnd
// does not change, happens every HZ/32 = 31 jiffies: the emulation seen
// lags by up to alpha*31ms/RTT packets, cwnd needs one more RTT (alpha) to
// follow, and the packet in the making costs 1. Hence the tolerance
// alpha*(31ms/RTT + 1) + 1 (3.2 packets at 10 ms, 9.7 at 2 ms, 1.9 at
// 50 ms): the kernel is this much short of
// the RFC's "at least" (the unmerged 2024 series "tcp_cubic: fix to run
// bictcp_update() at least once per RTT" addresses it).
// Without tcp_friendliness, the cubic function alone is far below W_est
// after 1 s (W(1 s) = 86.7 vs W_est = 122.9).
func TestCubic_RFC9438_4_3_TCPFriendlyRegion(t *testing.T) {
	alpha := 3 * (1 - 0.7) / (1 + 0.7)
	for _, rtt := range []sim.Time{2 * sim.Millisecond, 10 * sim.Millisecond, 50 * sim.Millisecond} {
		testCubicFriendly(t, alpha, rtt, true)
	}
	testCubicFriendly(t, alpha, 10*sim.Millisecond, false)
}

func testCubicFriendly(t *testing.T, alpha float64, rtt sim.Time, friendly bool) {
	t.Helper()
	tol := alpha*(float64(cubicHZ/32*jiffy)/float64(rtt)+1) + 1
	d := &cubicCADriver{c: newTestCubic("off", func(cfg *CubicConfig) { cfg.TCPFriendliness = friendly }), rtt: rtt}
	cubicEnterCA(d, 100)
	epoch := float64(d.c.cwnd)
	start := d.now
	var at1s float64
	for d.now-start <= sim.Second {
		tt := float64(d.now - start)
		west := epoch + alpha*tt/float64(rtt)
		got := float64(d.c.cwnd)
		if friendly && got < west-tol {
			t.Fatalf("RTT %v, t=%v: want cwnd >= W_est-%.1f = %.1f, got %.0f", rtt, d.now-start, tol, west-tol, got)
		}
		at1s = got
		d.round()
	}
	west1s := epoch + alpha*float64(sim.Second)/float64(rtt)
	if !friendly && at1s > west1s-20 {
		t.Errorf("tcp_friendliness off: want cwnd well below W_est(1s)=%.1f, got %.0f", west1s, at1s)
	}
}

// TestCubic_TcpCubicC_MaxIncrement: cnt >= 2 ("The maximum rate of cwnd
// increase CUBIC allows is 1 packet per 2 packets ACKed"): far below a
// remote target the window grows by half the packets acknowledged.
func TestCubic_TcpCubicC_MaxIncrement(t *testing.T) {
	d := &cubicCADriver{c: newTestCubic("off"), rtt: 10 * sim.Millisecond}
	cubicEnterCA(d, 1000)
	d.round() // the epoch starts
	// 30 s later (no ACK meanwhile): t - K is about 20 s, the target far
	// above cwnd, so cwnd/(target-cwnd) = 0 and the clamp makes cnt 2.
	d.now += 30 * sim.Second
	before := d.c.cwnd
	for i := 0; i < 100; i++ {
		d.ack(cubicTestMSS)
	}
	if d.c.cnt != 2 {
		t.Errorf("want cnt 2, got %d", d.c.cnt)
	}
	if got := d.c.cwnd - before; got != 50 {
		t.Errorf("100 packets ACKed with cnt 2: want cwnd +50, got +%d", got)
	}
}

// TestCubic_TcpCong_SlowStartSpillsIntoCA: tcp_slow_start grows cwnd by
// the packets acknowledged up to ssthresh and returns the rest to
// congestion avoidance. From cwnd 18, ssthresh 20, an ACK of 5 packets
// gives cwnd 20 and 3 packets to bictcp_update: with last_max_cwnd = 0 the
// target is cwnd itself (K = 0), cnt = 100*cwnd capped at 20, and
// tcp_cong_avoid_ai(20, 3) leaves snd_cwnd_cnt = 3.
func TestCubic_TcpCong_SlowStartSpillsIntoCA(t *testing.T) {
	c := newTestCubic("off")
	c.cwnd, c.ssthresh = 18, 20
	c.OnAck(&AckEvent{Now: sim.Second, Acked: 5 * cubicTestMSS, RTT: 10 * sim.Millisecond, SndUna: 5000, SndNxt: 20000,
		CwndLimited: true, MSS: cubicTestMSS})
	if c.cwnd != 20 || c.cwndCnt != 3 || c.cnt != 20 {
		t.Errorf("want cwnd 20, snd_cwnd_cnt 3, cnt 20, got %d, %d, %d", c.cwnd, c.cwndCnt, c.cnt)
	}
	if got := c.SlowStartExitReason(); got != "ssthresh" {
		t.Errorf("want exit reason %q, got %q", "ssthresh", got)
	}
}

// TestCubic_TcpCong_NotCwndLimited: cubictcp_cong_avoid returns at once
// when !tcp_is_cwnd_limited; in recovery the window does not grow either.
func TestCubic_TcpCong_NotCwndLimited(t *testing.T) {
	c := newTestCubic("off")
	c.OnAck(&AckEvent{Now: sim.Second, Acked: 5 * cubicTestMSS, RTT: 10 * sim.Millisecond, SndUna: 5000, SndNxt: 10000, MSS: cubicTestMSS})
	c.OnAck(&AckEvent{Now: sim.Second, Acked: 5 * cubicTestMSS, RTT: 10 * sim.Millisecond, SndUna: 10000, SndNxt: 10000,
		CwndLimited: true, InRecovery: true, MSS: cubicTestMSS})
	if c.cwnd != 10 {
		t.Errorf("want cwnd 10 unchanged, got %d", c.cwnd)
	}
	c.OnAck(&AckEvent{Now: sim.Second, Acked: 5 * cubicTestMSS, RTT: 10 * sim.Millisecond, SndUna: 15000, SndNxt: 20000,
		CwndLimited: true, MSS: cubicTestMSS})
	if c.cwnd != 15 {
		t.Errorf("cwnd-limited ACK of 5 packets in slow start: want cwnd 15, got %d", c.cwnd)
	}
}

// TestCubic_TcpInput_RTO: tcp_enter_loss recomputes ssthresh (first RTO
// only), sets cwnd to 1 and cubictcp_state(TCP_CA_Loss) clears the CUBIC
// state (W_max, delay_min, epoch).
func TestCubic_TcpInput_RTO(t *testing.T) {
	d := &cubicCADriver{c: newTestCubic("linux"), rtt: 10 * sim.Millisecond}
	cubicEnterCA(d, 1000)
	for i := 0; i < 50; i++ {
		d.round()
	}
	c := d.c
	cw := c.cwnd
	reason := c.LastSlowStartExit()
	c.OnCongestion(&CongestionEvent{Now: d.now, Kind: CongRTO, MSS: cubicTestMSS})
	if got := c.LastSlowStartExit(); got != reason {
		t.Errorf("RTO in congestion avoidance: want the last exit %q unchanged, got %q", reason, got)
	}
	if want := max(cw*717/1024, 2); c.ssthresh != want || c.cwnd != 1 {
		t.Errorf("RTO at cwnd %d: want ssthresh %d, cwnd 1, got %d, %d", cw, want, c.ssthresh, c.cwnd)
	}
	if c.lastMaxCwnd != 0 || c.delayMin != 0 || c.epochStarted || c.cnt != 0 || c.tcpCwnd != 0 {
		t.Errorf("RTO: want bictcp_reset state, got W_max %d delay_min %d epoch %v cnt %d tcp_cwnd %d",
			c.lastMaxCwnd, c.delayMin, c.epochStarted, c.cnt, c.tcpCwnd)
	}
	ss := c.ssthresh
	c.OnCongestion(&CongestionEvent{Now: d.now + sim.Second, Kind: CongRTO, MSS: cubicTestMSS})
	if c.ssthresh != ss {
		t.Errorf("second RTO without progress: want ssthresh kept at %d, got %d", ss, c.ssthresh)
	}
	if c.State().String() != "slow-start" {
		t.Errorf("after RTO: want state slow-start, got %q", c.State())
	}
	if got := c.LastSlowStartExit(); got != "rto" {
		t.Errorf("RTO in slow start: want last exit %q, got %q", "rto", got)
	}
}

// TestCubic_TcpInput_RTOInRecoveryKeepsSsthresh: an RTO during fast
// recovery (high_seq not yet acknowledged) does not reduce ssthresh again.
func TestCubic_TcpInput_RTOInRecoveryKeepsSsthresh(t *testing.T) {
	c := newTestCubic("off")
	c.cwnd = 100
	c.OnCongestion(&CongestionEvent{Kind: CongLoss, MSS: cubicTestMSS})
	c.OnCongestion(&CongestionEvent{Kind: CongRTO, MSS: cubicTestMSS})
	if c.ssthresh != 70 || c.cwnd != 1 {
		t.Errorf("want ssthresh 70 kept and cwnd 1, got %d and %d", c.ssthresh, c.cwnd)
	}
}

// TestCubic_TcpInput_CWR: after an ECN reduction the window stays put
// until SndUna passes the SndNxt of the reduction (TCP_CA_CWR).
func TestCubic_TcpInput_CWR(t *testing.T) {
	c := newTestCubic("off")
	c.cwnd = 100
	c.OnAck(&AckEvent{Now: sim.Second, Acked: cubicTestMSS, SndUna: 1000, SndNxt: 100000, CwndLimited: true, MSS: cubicTestMSS})
	c.OnCongestion(&CongestionEvent{Kind: CongECN, MSS: cubicTestMSS})
	// The slow-start ACK made cwnd 101; 101*717/1024 = 70.7.
	if c.cwnd != 70 || c.State().String() != "cwr" {
		t.Fatalf("ECN at cwnd 101: want cwnd 70 in cwr, got %d in %q", c.cwnd, c.State())
	}
	cw := c.cwnd
	c.OnAck(&AckEvent{Now: sim.Second, Acked: cubicTestMSS, SndUna: 100000, SndNxt: 200000, CwndLimited: true, MSS: cubicTestMSS})
	if c.cwnd != cw || c.State().String() != "cwr" {
		t.Errorf("ACK up to high_seq: want cwnd %d in cwr, got %d in %q", cw, c.cwnd, c.State())
	}
	c.OnAck(&AckEvent{Now: sim.Second, Acked: cubicTestMSS, SndUna: 101000, SndNxt: 200000, CwndLimited: true, MSS: cubicTestMSS})
	if c.State().String() != "congestion-avoidance" {
		t.Errorf("ACK past high_seq: want congestion-avoidance, got %q", c.State())
	}
}

// TestCubic_TcpInput_LossDuringCWR: tcp_enter_recovery does not reduce
// again when already in a cwnd reduction (CWR after ECN).
func TestCubic_TcpInput_LossDuringCWR(t *testing.T) {
	c := newTestCubic("off")
	c.cwnd = 100
	c.OnCongestion(&CongestionEvent{Kind: CongECN, MSS: cubicTestMSS})
	c.OnCongestion(&CongestionEvent{Kind: CongLoss, MSS: cubicTestMSS})
	if c.cwnd != 70 || c.ssthresh != 70 || c.State().String() != "recovery" {
		t.Errorf("ECN then loss at cwnd 100: want one reduction to 70 and recovery, got cwnd %d ssthresh %d %q",
			c.cwnd, c.ssthresh, c.State())
	}
}

// TestCubic_TcpCubicC_DiscardSamplesAfterRecovery: cubictcp_acked drops
// RTT samples within HZ (1 s) of the epoch start, so delay_min does not
// move then.
func TestCubic_TcpCubicC_DiscardSamplesAfterRecovery(t *testing.T) {
	d := &cubicCADriver{c: newTestCubic("off"), rtt: 10 * sim.Millisecond}
	cubicEnterCA(d, 100)
	d.round() // starts the epoch
	d.rtt = 5 * sim.Millisecond
	d.round()
	if d.c.delayMin != 10000 {
		t.Errorf("sample within 1 s of the epoch: want delay_min 10000 us kept, got %d", d.c.delayMin)
	}
	d.now += sim.Second
	d.round()
	if d.c.delayMin != 5000 {
		t.Errorf("sample 1 s after the epoch: want delay_min 5000 us, got %d", d.c.delayMin)
	}
}

// cubicPipe is a bottleneck of one packet per tx behind a base RTT, with an
// unlimited queue: packet i is acknowledged at max(sent_i + base,
// ack_{i-1} + tx). The sender always has data and sends while in flight <
// cwnd.
type cubicPipe struct {
	c        *Cubic
	base, tx sim.Time
	now      sim.Time
	sent     []sim.Time
	head     int
	lastArr  sim.Time
	una, nxt uint64
}

func newCubicPipe(c *Cubic, base, tx sim.Time) *cubicPipe {
	p := &cubicPipe{c: c, base: base, tx: tx}
	p.send()
	return p
}

func (p *cubicPipe) inFlight() int64 { return int64(len(p.sent) - p.head) }

func (p *cubicPipe) send() {
	for p.inFlight()*cubicTestMSS < p.c.Cwnd() {
		p.sent = append(p.sent, p.now)
		p.nxt += cubicTestMSS
	}
}

func (p *cubicPipe) step() {
	s := p.sent[p.head]
	p.head++
	arr := max(s+p.base, p.lastArr+p.tx)
	p.lastArr, p.now = arr, arr
	p.una += cubicTestMSS
	prior := (p.inFlight() + 1) * cubicTestMSS
	p.c.OnAck(&AckEvent{Now: arr, Acked: cubicTestMSS, RTT: arr - s, SndUna: p.una, SndNxt: p.nxt,
		CwndLimited: prior >= p.c.Cwnd(), PriorInFlight: prior, MSS: cubicTestMSS})
	p.send()
}

// TestCubic_HyStart_ExitsBeforeLoss: behind a FIFO bottleneck with an
// unlimited queue every HyStart variant but "off" leaves slow start by
// itself, with ssthresh = cwnd (hystart_update: "tp->snd_ssthresh =
// tcp_snd_cwnd(tp)"); "off" never does. Where, in BDPs, follows from the
// thresholds: the Linux variants' train must exceed minRTT/2, which needs
// cwnd >= BDP/2 at the round's start, and the round before did not exit, so
// the exit lies in [BDP/2, 2.5 BDP]; the 2011 proposal needs a 2*minRTT
// train or an RTT of 2*minRTT (a queue of one BDP): cwnd >= 2 BDP; HyStart++
// needs a round whose minimum RTT is 4 ms higher, so a queue: cwnd > BDP.
func TestCubic_HyStart_ExitsBeforeLoss(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi float64 // exit cwnd bounds in BDPs, hi = 0 for none
	}{
		{"off", 0, 0},
		{"linux-2008", 0.5, 2.5},
		{"proposal-2011", 2, 0},
		{"linux-2011", 0.5, 2.5},
		{"linux-2014", 0.5, 2.5},
		{"linux", 0.5, 2.5},
		{"hystart++", 1, 0},
	} {
		for _, tx := range []sim.Time{10 * sim.Microsecond, 100 * sim.Microsecond} {
			testHyStartExit(t, tc.name, 10*sim.Millisecond, tx, tc.lo, tc.hi)
		}
	}
}

func testHyStartExit(t *testing.T, name string, base, tx sim.Time, lo, hi float64) {
	t.Helper()
	bdp := float64(base / tx)
	c := newTestCubic(name)
	p := newCubicPipe(c, base, tx)
	for i := 0; i < 200000 && c.inSlowStart(); i++ {
		p.step()
	}
	exited := !c.inSlowStart()
	if name == "off" {
		if exited {
			t.Errorf("off: want slow start to go on, got exit at cwnd %d (%q)", c.cwnd, c.LastSlowStartExit())
		}
		return
	}
	if !exited {
		t.Errorf("%s: want an exit from slow start, got cwnd %d still in slow start", name, c.cwnd)
		return
	}
	reason := c.SlowStartExitReason()
	switch reason {
	case "hystart-ack-train", "hystart-delay":
		if name == "hystart++" {
			t.Errorf("hystart++: want css-exit, got %q", reason)
		}
	case "css-exit":
	default:
		t.Errorf("%s: want a HyStart exit reason, got %q", name, reason)
	}
	if w := float64(c.cwnd) / bdp; w < lo || (hi > 0 && w > hi) {
		t.Errorf("%s, tx %v: want exit cwnd in [%v, %v] BDPs of %.0f packets, got %d (%s)", name, tx, lo, hi, bdp, c.cwnd, reason)
	}
	if reason != "css-exit" && c.ssthresh != c.cwnd {
		t.Errorf("%s: want ssthresh = cwnd at exit, got %d and %d", name, c.ssthresh, c.cwnd)
	}
}

// TestCubic_HyStartPlusPlus_States: the exit reasons and states of a
// HyStart++ flow: "css-entry" and "conservative-slow-start" in CSS, then
// "css-exit" and "congestion-avoidance".
func TestCubic_HyStartPlusPlus_States(t *testing.T) {
	c := newTestCubic("hystart++")
	p := newCubicPipe(c, 10*sim.Millisecond, 10*sim.Microsecond)
	sawCSS := false
	for i := 0; i < 200000 && c.inSlowStart(); i++ {
		p.step()
		if c.InCSS() {
			sawCSS = true
			if c.SlowStartExitReason() != "css-entry" || c.State().String() != "conservative-slow-start" {
				t.Fatalf("in CSS: want reason css-entry and state conservative-slow-start, got %q and %q",
					c.SlowStartExitReason(), c.State())
			}
		}
	}
	if !sawCSS || c.SlowStartExitReason() != "css-exit" || c.State().String() != "congestion-avoidance" {
		t.Errorf("want CSS then css-exit into congestion-avoidance, got CSS seen %v, reason %q, state %q",
			sawCSS, c.SlowStartExitReason(), c.State())
	}
}

// TestCubic_ExitReasons_Congestion: a loss, an ECN mark or an RTO during
// slow start end it with reason "loss", "ecn" or "rto".
func TestCubic_ExitReasons_Congestion(t *testing.T) {
	for _, k := range []CongestionKind{CongLoss, CongECN, CongRTO} {
		c := newTestCubic("linux")
		c.cwnd = 50
		c.OnCongestion(&CongestionEvent{Kind: k, MSS: cubicTestMSS})
		if got := c.LastSlowStartExit(); got != k.String() {
			t.Errorf("%v in slow start: want reason %q, got %q", k, k.String(), got)
		}
		if k != CongRTO && c.SlowStartExitReason() != k.String() {
			t.Errorf("%v: want SlowStartExitReason %q, got %q", k, k.String(), c.SlowStartExitReason())
		}
	}
}

// TestCubicConfig_Validate rejects unknown HyStart names and out-of-range
// parameters.
func TestCubicConfig_Validate(t *testing.T) {
	good := DefaultCubicConfig()
	if err := good.Validate(); err != nil {
		t.Fatalf("default config: want valid, got %v", err)
	}
	for _, bad := range []CubicConfig{
		{HyStart: "linux-2007"},
		{HyStart: "linux", Beta: 1024},
		{HyStart: "linux", Beta: -1},
		{HyStart: "linux", BicScale: -3},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: want an error, got nil", bad)
		}
	}
}

// TestCubic_OnAckDoesNotAllocate: the per-ACK path must not allocate
// (docs/design.md §8).
func TestCubic_OnAckDoesNotAllocate(t *testing.T) {
	for _, name := range HyStartVariantNames {
		c := newTestCubic(name)
		ev := AckEvent{Acked: cubicTestMSS, RTT: 10 * sim.Millisecond, CwndLimited: true, MSS: cubicTestMSS}
		if n := testing.AllocsPerRun(1000, func() {
			ev.Now += 10 * sim.Microsecond
			ev.SndUna += cubicTestMSS
			ev.SndNxt = ev.SndUna + uint64(c.Cwnd())
			c.OnAck(&ev)
		}); n != 0 {
			t.Errorf("%s: want 0 allocations per OnAck, got %v", name, n)
		}
	}
}

// BenchmarkCubicOnAck measures one congestion-avoidance ACK.
//
//	go test ./cc/ -run '^$' -bench CubicOnAck -benchmem
func BenchmarkCubicOnAck(b *testing.B) {
	c := newTestCubic("linux")
	c.cwnd = 1000
	c.OnCongestion(&CongestionEvent{Kind: CongLoss, MSS: cubicTestMSS})
	c.OnRecoveryExit(0)
	ev := AckEvent{Acked: cubicTestMSS, RTT: 10 * sim.Millisecond, CwndLimited: true, MSS: cubicTestMSS}
	b.ReportAllocs()
	for b.Loop() {
		ev.Now += 10 * sim.Microsecond
		ev.SndUna += cubicTestMSS
		ev.SndNxt = ev.SndUna + uint64(c.Cwnd())
		c.OnAck(&ev)
	}
}
