package cc

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// hsDriver feeds synthetic ACKs to a HyStart the way Cubic does: the
// detection (OnAck, Linux cubictcp_acked), then, the ACK being cwnd-limited
// and in slow start, the cong_avoid-time round bookkeeping (OnSlowStartAck,
// which only the 2008-2020 kernels had). Each ACK acknowledges one byte.
type hsDriver struct {
	h        HyStart
	now      sim.Time
	una, nxt uint64
	cwnd     int64
	paced    bool
	rate     int64
}

func newHSDriver(v HyStartVariant) *hsDriver {
	return &hsDriver{h: NewHyStart(v), now: sim.Second, cwnd: 20}
}

// boundary makes the next ACK the first one past the round's SndNxt, with
// a new SndNxt far ahead.
func (d *hsDriver) boundary() {
	d.una = d.nxt
	d.nxt += 1 << 20
}

func (d *hsDriver) ack(rtt sim.Time) HyStartEvent {
	d.una++
	a := HyStartAck{Now: d.now, RTT: rtt, SndUna: d.una, SndNxt: d.nxt, Cwnd: d.cwnd,
		InSlowStart: true, Paced: d.paced, PacingRate: d.rate}
	ev := d.h.OnAck(&a)
	d.h.OnSlowStartAck(d.now, d.una, d.nxt)
	return ev
}

// TestHyStart_AckTrain: ACKs closer than 2 ms (HYSTART_ACK_DELTA) extend
// the train; with the RTT flat at 20 ms, each variant exits exactly when
// the train passes its threshold, measured from the round's first ACK:
//   - linux-2008 (jiffies, HZ 1000): curr - round_start >= delay_min>>4 =
//     (20<<3)>>4 = 10 jiffies: at the 10th 1-ms step;
//   - linux-2011, linux-2014 (ms clock): now - round_start > delay_min>>4 =
//     10 ms: at the 11th step;
//   - proposal-2011: the train must reach 2*minRTT = 40 ms: 40th step;
//   - linux (us clock): > (delay_min + hystart_ack_delay)/2 = 10000 us
//     unpaced: 11th 1-ms step, 41st 250-us step (10250 us); with a pacing
//     rate of 524288000 B/s the cushion is 65536*4*1e6/rate = 500 us, so the
//     threshold is 10250 us: 42nd 250-us step (10500 us); paced, not halved:
//     > 20000 us, 21st 1-ms step;
//   - hystart++ (no train test) and off: never.
func TestHyStart_AckTrain(t *testing.T) {
	const minRTT = 20 * sim.Millisecond
	for _, tc := range []struct {
		v       HyStartVariant
		spacing sim.Time
		paced   bool
		rate    int64
		want    int // the step that exits, -1 for never
	}{
		{HyStartLinux2008, sim.Millisecond, false, 0, 10},
		{HyStartLinux2011, sim.Millisecond, false, 0, 11},
		{HyStartLinux2014, sim.Millisecond, false, 0, 11},
		{HyStartProposal2011, sim.Millisecond, false, 0, 40},
		{HyStartLinux, sim.Millisecond, false, 0, 11},
		{HyStartLinux, 250 * sim.Microsecond, false, 0, 41},
		{HyStartLinux, 250 * sim.Microsecond, false, 524288000, 42},
		{HyStartLinux, sim.Millisecond, true, 0, 21},
		{HyStartPlusPlus, sim.Millisecond, false, 0, -1},
		{HyStartOff, sim.Millisecond, false, 0, -1},
	} {
		d := newHSDriver(tc.v)
		d.paced, d.rate = tc.paced, tc.rate
		d.boundary()
		got := -1
		for i := 0; i <= 100; i++ {
			d.now = sim.Second + sim.Time(i)*tc.spacing
			ev := d.ack(minRTT)
			if ev == HyStartExitDelay || ev == HyStartCSSEntry {
				t.Fatalf("%v: flat RTT, want no delay exit, got %v at step %d", tc.v, ev, i)
			}
			if ev == HyStartExitAckTrain {
				got = i
				break
			}
		}
		if got != tc.want {
			t.Errorf("%v spacing %v paced %v rate %d: want ACK-train exit at step %d, got %d",
				tc.v, tc.spacing, tc.paced, tc.rate, tc.want, got)
		}
	}
}

// TestHyStart_AckTrain_Gap: ACKs 3 ms apart (more than the 2 ms
// hystart_ack_delta) never form a train.
func TestHyStart_AckTrain_Gap(t *testing.T) {
	for _, v := range []HyStartVariant{HyStartLinux2008, HyStartLinux2011, HyStartLinux2014, HyStartProposal2011, HyStartLinux} {
		d := newHSDriver(v)
		d.boundary()
		for i := 0; i <= 100; i++ {
			d.now = sim.Second + sim.Time(i)*3*sim.Millisecond
			if ev := d.ack(20 * sim.Millisecond); ev != HyStartNone {
				t.Fatalf("%v: ACKs 3 ms apart, want no exit, got %v at step %d", v, ev, i)
			}
		}
	}
}

// TestHyStart_Delay: one round of 10 samples at minRTT sets delay_min,
// then every sample of the next round is rtt. Each variant exits exactly
// when its threshold is crossed, on the first sample its test looks at:
//   - the classic variants take the minimum of the round's first 8 samples
//     (HYSTART_MIN_SAMPLES) and test from the 9th. The 2008-2019 kernels
//     start the round after the ACK that passes end_seq (in cong_avoid), so
//     that ACK's sample is the old round's: exit at ACK 9 after it; today's
//     kernel starts the round inside hystart_update, so it is the new
//     round's first: ACK 8;
//   - HyStart++ tests once rttSampleCount >= N_RTT_SAMPLE = 8, the ACK that
//     ends a round counting in that round: ACK 8.
//
// Thresholds, minRTT 16 ms (the floors): linux-2008, jiffies<<3:
// ceil(rtt ms)<<3 > 128 + clamp(128>>4 = 8, 16, 128) = 144 (18 ms); linux-2011
// and linux-2014, (rtt_us<<3)/1000 > 128 + 32 (4 ms floor, both /16 and /8
// are below it): 20.125 ms gives 161; linux: > 16000 + clamp(2000, 4000,
// 16000) = 20000 us; hystart++: >= 16 + max(4, min(2, 16)) = 20 ms.
//
// minRTT 100 ms (/16 against /8): 2008 and 2011: > 800 + 800>>4 = 850
// (106.25 ms); 2014: > 800 + 800>>3 = 900 (112.5 ms); linux: > 100000 +
// 12500 us; hystart++: >= 100 + 12.5 ms. So 110 ms exits the /16 variants
// only.
//
// minRTT 200 ms (the 16 ms cap): 2011: > 1600 + 100 (212.5 ms); 2014: >
// 1600 + min(200, 128) = 1728 (216 ms); linux: > 200000 + 16000 us;
// hystart++: >= 200 + min(25, 16) ms.
//
// proposal-2011: linux-2011's test, and the round's largest sample must
// reach 2*minRTT: 110 ms alone does not exit; with one sample of 200 ms it
// does (1600 >= 2*800), with 199.999 ms it does not (1599).
func TestHyStart_Delay(t *testing.T) {
	ms := func(f float64) sim.Time { return sim.Time(f * float64(sim.Millisecond)) }
	for _, tc := range []struct {
		v      HyStartVariant
		minRTT sim.Time
		rtt    sim.Time
		peak   sim.Time // if set, the 3rd sample of the round
		want   int      // the ACK after the boundary that exits, -1 for never
	}{
		{HyStartLinux2008, ms(16), ms(18), 0, -1},
		{HyStartLinux2008, ms(16), ms(18.001), 0, 9},
		{HyStartLinux2011, ms(16), ms(20.124), 0, -1},
		{HyStartLinux2011, ms(16), ms(20.125), 0, 9},
		{HyStartLinux2014, ms(16), ms(20.124), 0, -1},
		{HyStartLinux2014, ms(16), ms(20.125), 0, 9},
		{HyStartLinux, ms(16), ms(20), 0, -1},
		{HyStartLinux, ms(16), ms(20.001), 0, 8},
		{HyStartPlusPlus, ms(16), ms(19.999), 0, -1},
		{HyStartPlusPlus, ms(16), ms(20), 0, 8},

		{HyStartLinux2008, ms(100), ms(106), 0, -1},
		{HyStartLinux2008, ms(100), ms(106.001), 0, 9},
		{HyStartLinux2011, ms(100), ms(106.374), 0, -1},
		{HyStartLinux2011, ms(100), ms(106.375), 0, 9},
		{HyStartLinux2014, ms(100), ms(112.624), 0, -1},
		{HyStartLinux2014, ms(100), ms(112.625), 0, 9},
		{HyStartLinux, ms(100), ms(112.5), 0, -1},
		{HyStartLinux, ms(100), ms(112.501), 0, 8},
		{HyStartPlusPlus, ms(100), ms(112.499), 0, -1},
		{HyStartPlusPlus, ms(100), ms(112.5), 0, 8},
		{HyStartLinux2008, ms(100), ms(110), 0, 9},
		{HyStartLinux2011, ms(100), ms(110), 0, 9},
		{HyStartLinux2014, ms(100), ms(110), 0, -1},
		{HyStartLinux, ms(100), ms(110), 0, -1},

		{HyStartLinux2011, ms(200), ms(212.5), 0, -1},
		{HyStartLinux2011, ms(200), ms(212.625), 0, 9},
		{HyStartLinux2014, ms(200), ms(216.124), 0, -1},
		{HyStartLinux2014, ms(200), ms(216.125), 0, 9},
		{HyStartLinux, ms(200), ms(216), 0, -1},
		{HyStartLinux, ms(200), ms(216.001), 0, 8},
		{HyStartPlusPlus, ms(200), ms(215.999), 0, -1},
		{HyStartPlusPlus, ms(200), ms(216), 0, 8},

		{HyStartProposal2011, ms(100), ms(110), 0, -1},
		{HyStartProposal2011, ms(100), ms(110), ms(200), 9},
		{HyStartProposal2011, ms(100), ms(110), ms(199.999), -1},

		{HyStartOff, ms(16), ms(1000), 0, -1},
	} {
		d := newHSDriver(tc.v)
		step := func() { d.now += 5 * sim.Millisecond } // no ACK trains
		d.boundary()
		for i := 0; i < 10; i++ {
			if ev := d.ack(tc.minRTT); ev != HyStartNone {
				t.Fatalf("%v: round at minRTT, want nothing, got %v", tc.v, ev)
			}
			step()
		}
		d.boundary()
		got := -1
		for i := 0; i <= 30; i++ {
			rtt := tc.rtt
			if i == 3 && tc.peak != 0 {
				rtt = tc.peak
			}
			ev := d.ack(rtt)
			step()
			if ev == HyStartNone {
				continue
			}
			if ev != HyStartExitDelay && ev != HyStartCSSEntry {
				t.Fatalf("%v minRTT %v rtt %v: want a delay exit, got %v at ACK %d", tc.v, tc.minRTT, tc.rtt, ev, i)
			}
			got = i
			break
		}
		if got != tc.want {
			t.Errorf("%v minRTT %v rtt %v peak %v: want delay exit at ACK %d after the boundary, got %d",
				tc.v, tc.minRTT, tc.rtt, tc.peak, tc.want, got)
		}
	}
}

// TestHyStart_Linux_CurrRTTEverySample: today's kernel lowers curr_rtt on
// every sample of the round (commit b344579ca8478, "tcp_cubic: fix
// spurious HYSTART_DELAY exit upon drop in min RTT"), the older ones only
// on the first 8: a low 9th sample keeps today's kernel in slow start.
func TestHyStart_Linux_CurrRTTEverySample(t *testing.T) {
	// Eight high samples, then a low one: only today's kernel lets it
	// lower curr_rtt before the test.
	d := newHSDriver(HyStartLinux)
	d.boundary()
	for i := 0; i < 10; i++ {
		d.ack(100 * sim.Millisecond)
		d.now += 5 * sim.Millisecond
	}
	d.boundary()
	for i := 0; i < 8; i++ { // samples 1-8 of the round, high
		d.ack(200 * sim.Millisecond)
		d.now += 5 * sim.Millisecond
	}
	if d.h.currRTT != 200000 || d.h.sampleCnt != 8 {
		t.Fatalf("after 8 samples: want curr_rtt 200000 us, sample_cnt 8, got %d, %d", d.h.currRTT, d.h.sampleCnt)
	}
	// The 9th sample is low: curr_rtt drops to it before the test.
	if ev := d.ack(100 * sim.Millisecond); ev != HyStartNone {
		t.Errorf("linux, 9th sample at minRTT: want no exit (curr_rtt lowered first), got %v", ev)
	}
	if d.h.currRTT != 100000 {
		t.Errorf("linux: want curr_rtt 100000 us after the low sample, got %d", d.h.currRTT)
	}
	// linux-2014: the 10th ACK (9th round sample) is tested against the
	// minimum of the first 8 only.
	o := newHSDriver(HyStartLinux2014)
	o.boundary()
	for i := 0; i < 10; i++ {
		o.ack(100 * sim.Millisecond)
		o.now += 5 * sim.Millisecond
	}
	o.boundary()
	for i := 0; i < 9; i++ { // the boundary ACK (old round) and 8 samples
		o.ack(200 * sim.Millisecond)
		o.now += 5 * sim.Millisecond
	}
	if ev := o.ack(100 * sim.Millisecond); ev != HyStartExitDelay {
		t.Errorf("linux-2014, 9th sample at minRTT: want a delay exit (curr_rtt from the first 8), got %v", ev)
	}
}

// TestHyStart_LowWindow: below hystart_low_window = 16 packets the
// classic tests do not run, but today's kernel still starts rounds
// (commit 25c1a9ca53db moved the low-window test after the round reset),
// as the older kernels did in cong_avoid.
func TestHyStart_LowWindow(t *testing.T) {
	for _, v := range []HyStartVariant{HyStartLinux2008, HyStartLinux2011, HyStartLinux2014, HyStartLinux} {
		d := newHSDriver(v)
		d.cwnd = 15
		d.boundary()
		for i := 0; i <= 50; i++ {
			d.now = sim.Second + sim.Time(i)*sim.Millisecond
			if ev := d.ack(20 * sim.Millisecond); ev != HyStartNone {
				t.Fatalf("%v, cwnd 15: want no exit, got %v at step %d", v, ev, i)
			}
		}
		if d.h.endSeq != d.nxt {
			t.Errorf("%v, cwnd 15: want the round started at SndNxt %d, got end_seq %d", v, d.nxt, d.h.endSeq)
		}
	}
}

// TestHyStart_Restart: after an exit the classic detector is latched
// (ca->found); an RTO's bictcp_reset clears found and delay_min, and
// bictcp_hystart_reset starts a round at the given SndNxt.
func TestHyStart_Restart(t *testing.T) {
	d := newHSDriver(HyStartLinux)
	d.boundary()
	exits := 0
	for i := 0; i <= 40; i++ {
		d.now = sim.Second + sim.Time(i)*sim.Millisecond
		if d.ack(20*sim.Millisecond) != HyStartNone {
			exits++
		}
	}
	if exits != 1 || !d.h.Found() {
		t.Fatalf("want exactly one exit and found set, got %d exits, found %v", exits, d.h.Found())
	}
	d.h.Restart(d.now, 12345)
	if d.h.Found() || d.h.delayMin != 0 || d.h.endSeq != 12345 || d.h.sampleCnt != 0 {
		t.Errorf("after Restart: want found false, delay_min 0, end_seq 12345, sample_cnt 0, got %v %d %d %d",
			d.h.Found(), d.h.delayMin, d.h.endSeq, d.h.sampleCnt)
	}
}

// hsppToCSS drives a HyStart++ into CSS: a round at 100 ms, then a round
// at 120 ms that enters CSS on its 8th sample (120 >= 100 + 12.5 ms); it
// returns with that round still open.
func hsppToCSS(t *testing.T) *hsDriver {
	t.Helper()
	d := newHSDriver(HyStartPlusPlus)
	d.boundary()
	for i := 0; i < 10; i++ {
		d.ack(100 * sim.Millisecond)
		d.now += 5 * sim.Millisecond
	}
	d.boundary()
	for i := 0; i <= 8; i++ {
		ev := d.ack(120 * sim.Millisecond)
		d.now += 5 * sim.Millisecond
		if (ev == HyStartCSSEntry) != (i == 8) {
			t.Fatalf("want CSS entry at ACK 8 only, got %v at ACK %d", ev, i)
		}
	}
	if !d.h.InCSS() || d.h.cssBaseline != 120*sim.Millisecond {
		t.Fatalf("want CSS with baseline 120 ms, got in CSS %v baseline %v", d.h.InCSS(), d.h.cssBaseline)
	}
	return d
}

// TestHyStart_RFC9406_4_2_CSSRounds: "CSS lasts at most CSS_ROUNDS rounds.
// If the transition into CSS happens in the middle of a round, that
// partial round counts towards the limit": entered in round 2, CSS ends
// with round 6, at the ACK that ends it ("If CSS_ROUNDS rounds are
// complete, enter congestion avoidance").
func TestHyStart_RFC9406_4_2_CSSRounds(t *testing.T) {
	d := hsppToCSS(t)
	for round := 3; round <= 7; round++ {
		d.boundary()
		ev := d.ack(125 * sim.Millisecond) // ends round round-1
		d.now += 5 * sim.Millisecond
		if round == 7 {
			if ev != HyStartCSSExit || d.h.InCSS() {
				t.Fatalf("end of round 6: want CSS exit, got %v (in CSS %v)", ev, d.h.InCSS())
			}
			break
		}
		if ev != HyStartNone || !d.h.InCSS() || d.h.cssRounds != round-1 {
			t.Fatalf("end of round %d: want CSS going on with %d rounds, got %v (in CSS %v, %d rounds)",
				round-1, round-1, ev, d.h.InCSS(), d.h.cssRounds)
		}
		for i := 0; i < 10; i++ {
			if ev := d.ack(125 * sim.Millisecond); ev != HyStartNone {
				t.Fatalf("round %d in CSS: want nothing, got %v", round, ev)
			}
			d.now += 5 * sim.Millisecond
		}
	}
	// HyStart++ is over: no more events.
	d.boundary()
	for i := 0; i < 20; i++ {
		if ev := d.ack(500 * sim.Millisecond); ev != HyStartNone {
			t.Fatalf("after CSS: want nothing, got %v", ev)
		}
	}
}

// TestHyStart_RFC9406_4_2_CSSResume: in CSS, a round whose minimum RTT
// (after N_RTT_SAMPLE samples) is below cssBaselineMinRtt means the exit
// was spurious: "resume slow start including HyStart++".
func TestHyStart_RFC9406_4_2_CSSResume(t *testing.T) {
	d := hsppToCSS(t)
	d.boundary()
	d.ack(121 * sim.Millisecond) // ends round 2; its sample is round 2's
	for i := 1; i <= 8; i++ {
		ev := d.ack(119 * sim.Millisecond)
		if (ev == HyStartCSSResume) != (i == 8) {
			t.Fatalf("want the resume at round sample 8 only, got %v at %d", ev, i)
		}
	}
	if d.h.InCSS() || d.h.cssRounds != 0 {
		t.Errorf("after resume: want standard slow start, got in CSS %v rounds %d", d.h.InCSS(), d.h.cssRounds)
	}
	// HyStart++ runs again: the next round at 140 ms (>= 119 + 14.9 ms)
	// re-enters CSS.
	d.boundary()
	got := HyStartNone
	for i := 0; i <= 8 && got == HyStartNone; i++ {
		got = d.ack(140 * sim.Millisecond)
	}
	if got != HyStartCSSEntry {
		t.Errorf("after resume, a 140 ms round: want CSS entry, got %v", got)
	}
}

// TestHyStart_RFC9406_4_2_Growth: in standard slow start cwnd += min(N,
// L*SMSS), L = 8 when not paced and infinity when paced (§4.3); in CSS
// cwnd += min(N, L*SMSS)/CSS_GROWTH_DIVISOR (4), the remainder carried.
// The other variants grow as tcp_slow_start: up to ssthresh, the rest
// returned for congestion avoidance.
func TestHyStart_RFC9406_4_2_Growth(t *testing.T) {
	h := NewHyStart(HyStartPlusPlus)
	if cw, left := h.SlowStart(100, tcpInfiniteSsthresh, 20, false); cw != 108 || left != 0 {
		t.Errorf("unpaced ACK of 20: want cwnd 108 (L = 8), got %d (left %d)", cw, left)
	}
	if cw, _ := h.SlowStart(100, tcpInfiniteSsthresh, 20, true); cw != 120 {
		t.Errorf("paced ACK of 20: want cwnd 120 (L infinite), got %d", cw)
	}
	d := hsppToCSS(t)
	cw := uint32(100)
	for i, want := range []uint32{100, 100, 100, 101, 101, 101, 101, 102} {
		cw, _ = d.h.SlowStart(cw, tcpInfiniteSsthresh, 1, false)
		if cw != want {
			t.Fatalf("CSS, ACK %d of one packet: want cwnd %d, got %d", i+1, want, cw)
		}
	}
	if cw, _ := d.h.SlowStart(200, tcpInfiniteSsthresh, 20, false); cw != 202 {
		t.Errorf("CSS, ACK of 20 unpaced: want cwnd 202 (min(20, 8)/4), got %d", cw)
	}
	l := NewHyStart(HyStartLinux)
	if cw, left := l.SlowStart(18, 20, 5, false); cw != 20 || left != 3 {
		t.Errorf("tcp_slow_start from 18, ssthresh 20, 5 acked: want cwnd 20, 3 left, got %d, %d", cw, left)
	}
	if cw, left := l.SlowStart(100, tcpInfiniteSsthresh, 20, false); cw != 120 || left != 0 {
		t.Errorf("tcp_slow_start, 20 acked: want cwnd 120, 0 left, got %d, %d", cw, left)
	}
}

// TestHyStart_RFC9406_4_2_InitialSlowStartOnly: after a congestion event
// or an RTO HyStart++ no longer runs ("An implementation SHOULD use
// HyStart++ only for the initial slow start") and slow start is standard.
func TestHyStart_RFC9406_4_2_InitialSlowStartOnly(t *testing.T) {
	for _, end := range []func(h *HyStart){
		func(h *HyStart) { h.OnCongestion() },
		func(h *HyStart) { h.Restart(sim.Second, 0) },
	} {
		d := newHSDriver(HyStartPlusPlus)
		end(&d.h)
		d.boundary()
		for i := 0; i < 10; i++ {
			d.ack(100 * sim.Millisecond)
		}
		d.boundary()
		for i := 0; i < 20; i++ {
			if ev := d.ack(200 * sim.Millisecond); ev != HyStartNone {
				t.Fatalf("HyStart++ ended: want no CSS, got %v", ev)
			}
		}
		if cw, _ := d.h.SlowStart(100, tcpInfiniteSsthresh, 20, false); cw != 120 {
			t.Errorf("HyStart++ ended: want standard slow start (cwnd 120), got %d", cw)
		}
	}
}

// TestHyStart_ParseVariant accepts the documented names and rejects others.
func TestHyStart_ParseVariant(t *testing.T) {
	for i, name := range HyStartVariantNames {
		v, err := ParseHyStartVariant(name)
		if err != nil || v != HyStartVariant(i+1) || v.String() != name {
			t.Errorf("%q: want variant %d named %q, got %v (%v)", name, i+1, name, v, err)
		}
	}
	if _, err := ParseHyStartVariant("hystart2"); err == nil {
		t.Errorf("hystart2: want an error, got nil")
	}
}
