package cc

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/lockstep-sim/lockstep/sim"
)

// Cubic is CUBIC as Linux implements it in net/ipv4/tcp_cubic.c (v2.3,
// mainline as of 2025, commit 25c1a9ca53db included), with the kernel's
// units and integer arithmetic, and a selectable HyStart (hystart.go,
// docs/hystart-variants.md).
//
// The window is counted in packets like the kernel's snd_cwnd, with
// snd_cwnd_cnt for the fractional growth; Cwnd() is packets*MSS bytes.
// Acknowledged bytes become packets by rounding up (the kernel counts
// skbs, and only a flow's last segment is short).
//
// Time: bictcp_update runs on tcp_jiffies32 with HZ = 1000 (jiffies32:
// now/1 ms, truncated to u32), delay_min is in microseconds (rtt_us), and
// t = ((jiffies - epoch_start) + usecs_to_jiffies(delay_min)) << 10 / HZ is
// in 1/1024 s (BICTCP_HZ).
//
// Per ACK, in tcp_ack's order:
//
//  1. cubictcp_acked (pkts_acked): an RTT sample is dropped within 1 s
//     (HZ jiffies) of the epoch start ("Discard delay samples right after
//     fast recovery"), otherwise it lowers delay_min and goes to HyStart
//     (HyStart++ instead grows cwnd first, RFC 9406 §4.2).
//  2. cubictcp_cong_avoid, unless the sender is in recovery or CWR (Linux
//     tcp_cong_control: no growth while tcp_in_cwnd_reduction) or was not
//     cwnd-limited (AckEvent.CwndLimited, tcp_is_cwnd_limited): below
//     ssthresh, tcp_slow_start (cwnd += acked packets, at most up to
//     ssthresh; the rest goes to congestion avoidance); then bictcp_update
//     computes cnt and tcp_cong_avoid_ai adds one packet per cnt packets
//     acknowledged.
//
// bictcp_update: W(t) = C*(t-K)^3 + W_max with C = bic_scale*10/1024 =
// 0.4004 (cube_rtt_scale = 410) and K = cubic_root(cube_factor*(W_max -
// cwnd)), cube_factor = 2^40/410; the target is W(t + delay_min); cnt =
// cwnd/(target - cwnd), or 100*cwnd at or above the target; cnt <= 20 while
// last_max_cwnd = 0; the TCP-friendly region emulates Reno (tcp_cwnd grows
// by one per cwnd*beta_scale/8 packets acknowledged, beta_scale = 15, i.e.
// 3(1-beta)/(1+beta) per RTT) and caps cnt at cwnd/(tcp_cwnd - cwnd); and
// cnt >= 2 ("1 packet per 2 packets ACKed, meaning cwnd grows at 1.5x per
// RTT"). cnt is recomputed at most once per jiffy, and only every HZ/32
// jiffies while cwnd has not changed.
//
// Congestion (cubictcp_recalc_ssthresh): epoch_start = 0; W_max =
// cwnd*(1024+beta)/2048 if cwnd < W_max and fast convergence is on, else
// cwnd; ssthresh = max(cwnd*beta/1024, 2), beta = 717.
//   - Loss and ECN: cwnd = ssthresh at once (Linux reaches it by PRR and
//     tcp_end_cwnd_reduction; see Reno for why cwnd drops at once here).
//     After ECN the window stays put until SndUna passes the SndNxt of the
//     reduction (TCP_CA_CWR). A loss or ECN mark during recovery or CWR
//     does not reduce again (tcp_enter_recovery, tcp_enter_cwr).
//   - RTO (tcp_enter_loss): ssthresh is recomputed unless an RTO already
//     happened with no new data acknowledged since, or the sender was in
//     fast recovery or CWR (high_seq not yet acknowledged); cwnd = 1
//     (packets in flight + 1, with everything marked lost); then
//     cubictcp_state(TCP_CA_Loss): bictcp_reset (W_max, delay_min, the
//     epoch... all zero) and bictcp_hystart_reset.
//
// Not modelled: CA_EVENT_TX_START (cubictcp_cwnd_event shifts epoch_start
// by the idle time when an application-limited sender starts again; the
// hosts have no notion of idle restarts yet), undo (tcp_reno_undo_cwnd),
// initial_ssthresh (0 in the kernel, so ssthresh starts at
// TCP_INFINITE_SSTHRESH) and snd_cwnd_clamp (~0).
type Cubic struct {
	mss             int64
	fastConvergence bool
	tcpFriendliness bool
	beta            uint32 // beta, in 1/BICTCP_BETA_SCALE
	betaScale       uint32 // beta_scale = 8*(1024+beta)/3/(1024-beta)
	cubeRTTScale    uint32 // cube_rtt_scale = bic_scale*10
	cubeFactor      uint64 // cube_factor = 2^40/(bic_scale*10)

	cwnd     uint32 // snd_cwnd, packets; invariant: >= 1
	cwndCnt  uint32 // snd_cwnd_cnt: packets acked towards the next increase
	ssthresh uint32 // snd_ssthresh, packets

	// struct bictcp. Times are tcp_jiffies32.
	cnt            uint32 // increase cwnd by 1 after cnt packets ACKed
	lastMaxCwnd    uint32 // W_max
	lastCwnd       uint32 // cwnd at the last cnt computation
	lastTime       uint32 // jiffies of the last cnt computation
	bicOriginPoint uint32 // origin point of the cubic function
	bicK           uint32 // K, in 1/1024 s
	bicTarget      uint32 // bic_target of the last cnt computation (a local in the kernel)
	delayMin       uint32 // delay_min, us; 0 = none yet
	epochStart     uint32 // beginning of the epoch, valid iff epochStarted
	ackCnt         uint32 // packets ACKed in the epoch (Reno emulation)
	tcpCwnd        uint32 // the emulated Reno cwnd
	// epochStarted stands for the kernel's "epoch_start != 0" (its
	// sentinel 0 is a valid jiffies value at the start of a simulation).
	epochStarted bool

	hy HyStart
	// perAckSS: slow start grows one packet per ACK (CubicConfig.SlowStart
	// "per-ack").
	perAckSS bool

	srtt       sim.Time // smoothed RTT (tcp_rtt_estimator's srtt), 0 = none
	pacingRate int64    // sk_pacing_rate estimate, bytes/s, for hystart_ack_delay
	lastSndNxt uint64   // SndNxt of the latest ACK (the kernel's snd_nxt)
	recovering bool     // TCP_CA_Recovery: from CongLoss to the end of recovery
	cwr        bool     // TCP_CA_CWR: from CongECN until SndUna > cwrHighSeq
	cwrHighSeq uint64   // high_seq of the CWR episode
	afterRTO   bool     // an RTO happened and nothing new was ACKed since
	exitReason string   // why slow start last ended; see SlowStartExitReason
}

var (
	_ Controller    = (*Cubic)(nil)
	_ Observer      = (*Cubic)(nil)
	_ SlowStartExit = (*Cubic)(nil)
)

// CUBIC constants, named as in net/ipv4/tcp_cubic.c and include/net/tcp.h.
const (
	// bictcpBetaScale is BICTCP_BETA_SCALE: beta is in 1/1024.
	bictcpBetaScale = 1024
	// bictcpHZ is BICTCP_HZ: t and K are in 1/2^10 s.
	bictcpHZ = 10
	// cubicBeta is the module parameter beta: 717/1024 = 0.7.
	cubicBeta = 717
	// cubicBicScale is bic_scale: C = bic_scale*10/1024 = 0.4.
	cubicBicScale = 41
	// cubicHZ is the kernel's HZ (CONFIG_HZ=1000): one jiffy is 1 ms.
	cubicHZ = 1000
	// tcpInfiniteSsthresh is TCP_INFINITE_SSTHRESH.
	tcpInfiniteSsthresh = 0x7fffffff
	// cubicMaxCntInit is the cnt cap while last_max_cwnd = 0 ("increase
	// cwnd 5% per RTT").
	cubicMaxCntInit = 20
)

// jiffy is the duration of one tick of tcp_jiffies32.
const jiffy = sim.Second / cubicHZ

// CubicConfig parameterises a Cubic.
type CubicConfig struct {
	// HyStart names the slow-start exit detector, one of
	// HyStartVariantNames: "off", "linux-2008", "proposal-2011",
	// "linux-2011", "linux-2014", "linux" (today's kernel) or "hystart++"
	// (RFC 9406). "" means "linux".
	HyStart string
	// HyStartHZ runs "linux-2008" on the jiffies clock of a kernel built
	// with this HZ (100, 250, 300 or 1000; cc/jiffies.go); 0 keeps the
	// default approximation (HZ = 1000, RTT samples in microseconds
	// rounded up). Other detectors refuse it.
	HyStartHZ int
	// SlowStart selects the slow-start growth: "linux" (or "") is today's
	// tcp_slow_start, cwnd += the packets an ACK acknowledges, the rest
	// spilling into congestion avoidance; "per-ack" is tcp_slow_start with
	// the default sysctl tcp_abc = 0 of the 2.6 and early 3.x kernels:
	// one packet per ACK, whatever it acknowledges, and nothing spills.
	SlowStart string
	// FastConvergence is the module parameter fast_convergence.
	FastConvergence bool
	// TCPFriendliness is the module parameter tcp_friendliness.
	TCPFriendliness bool
	// Beta is the multiplicative decrease in 1/1024 (module parameter
	// beta); 0 means 717.
	Beta int
	// BicScale sets C = BicScale*10/1024 (module parameter bic_scale); 0
	// means 41, C = 0.4.
	BicScale int
}

// DefaultCubicConfig is the kernel's defaults: today's HyStart, fast
// convergence and TCP friendliness on, beta = 717, bic_scale = 41.
func DefaultCubicConfig() CubicConfig {
	return CubicConfig{HyStart: "linux", FastConvergence: true, TCPFriendliness: true,
		Beta: cubicBeta, BicScale: cubicBicScale}
}

// Validate checks the names and ranges.
func (c CubicConfig) Validate() error {
	variant := HyStartLinux
	if c.HyStart != "" {
		v, err := ParseHyStartVariant(c.HyStart)
		if err != nil {
			return err
		}
		variant = v
	}
	if c.HyStartHZ != 0 {
		if err := checkHyStartHZ(variant, c.HyStartHZ); err != nil {
			return err
		}
	}
	switch c.SlowStart {
	case "", "linux":
	case "per-ack":
		if variant == HyStartPlusPlus {
			return &OptionValueError{Module: "cubic", Key: "slow_start",
				Err: fmt.Errorf("per-ack does not combine with hystart++ (RFC 9406 §4.2 sets its own growth)")}
		}
	default:
		return &OptionValueError{Module: "cubic", Key: "slow_start",
			Err: fmt.Errorf("must be linux or per-ack, got %q", c.SlowStart)}
	}
	if c.Beta < 0 || c.Beta >= bictcpBetaScale {
		return fmt.Errorf("cubic: beta must be in [1, %d) (0 for the default), got %d", bictcpBetaScale, c.Beta)
	}
	if c.BicScale < 0 || c.BicScale > 1<<20 {
		return fmt.Errorf("cubic: bic_scale must be in [1, %d] (0 for the default), got %d", 1<<20, c.BicScale)
	}
	return nil
}

// NewCubic returns a Cubic with an initial window of initCwnd packets of
// mss bytes and ssthresh at TCP_INFINITE_SSTHRESH.
//
// Preconditions: cfg.Validate() == nil, mss > 0, initCwnd > 0.
func NewCubic(cfg CubicConfig, mss, initCwnd int64) *Cubic {
	if err := cfg.Validate(); err != nil || mss <= 0 || initCwnd <= 0 || initCwnd > math.MaxUint32 {
		panic(fmt.Sprintf("cc: NewCubic(%+v, mss=%d, initCwnd=%d): invalid arguments (%v)", cfg, mss, initCwnd, err))
	}
	variant := HyStartLinux
	if cfg.HyStart != "" {
		variant, _ = ParseHyStartVariant(cfg.HyStart)
	}
	beta := uint32(cfg.Beta)
	if beta == 0 {
		beta = cubicBeta
	}
	bicScale := uint64(cfg.BicScale)
	if bicScale == 0 {
		bicScale = cubicBicScale
	}
	c := &Cubic{
		mss:             mss,
		fastConvergence: cfg.FastConvergence,
		tcpFriendliness: cfg.TCPFriendliness,
		beta:            beta,
		// cubictcp_register: "Precompute a bunch of the scaling factors
		// that are used per-packet based on SRTT of 100ms".
		betaScale:    8 * (bictcpBetaScale + beta) / 3 / (bictcpBetaScale - beta),
		cubeRTTScale: uint32(bicScale * 10),                              // 1024*c/rtt
		cubeFactor:   (uint64(1) << (10 + 3*bictcpHZ)) / (bicScale * 10), // 2^40/410
		cwnd:         uint32(initCwnd),
		ssthresh:     tcpInfiniteSsthresh,
		hy:           NewHyStart(variant),
		perAckSS:     cfg.SlowStart == "per-ack",
	}
	if cfg.HyStartHZ != 0 {
		c.hy, _ = NewHyStartHZ(variant, cfg.HyStartHZ) // checked by Validate
	}
	return c
}

// HyStartVariant is the slow-start exit detector in use.
func (c *Cubic) HyStartVariant() HyStartVariant { return c.hy.Variant() }

// InCSS reports whether HyStart++ is in Conservative Slow Start.
func (c *Cubic) InCSS() bool { return c.hy.InCSS() }

func (c *Cubic) inSlowStart() bool { return c.cwnd < c.ssthresh } // tcp_in_slow_start

// OnAck implements Controller.OnAck.
func (c *Cubic) OnAck(ev *AckEvent) {
	if !ev.InRecovery {
		c.recovering = false
	}
	if ev.SndNxt > c.lastSndNxt {
		c.lastSndNxt = ev.SndNxt
	}
	if c.cwr && ev.SndUna > c.cwrHighSeq {
		c.cwr = false // tcp_try_to_open: the CWR episode is over
	}
	if ev.Acked <= 0 {
		return
	}
	c.afterRTO = false // icsk_retransmits = 0 on forward progress
	acked := uint32(min((ev.Acked+c.mss-1)/c.mss, math.MaxUint32))
	if ev.RTT > 0 {
		c.sampleSRTT(ev.RTT)
	}
	if c.hy.GrowthBeforeDetection() {
		c.congAvoid(ev, acked)
		c.acked(ev)
	} else {
		c.acked(ev)
		c.congAvoid(ev, acked)
	}
	if c.hy.Variant() == HyStartLinux {
		c.updatePacingRate(ev)
	}
}

// acked is cubictcp_acked: delay_min, then HyStart.
func (c *Cubic) acked(ev *AckEvent) {
	rtt := ev.RTT
	if rtt > 0 {
		now := jiffies32(ev.Now)
		// "Discard delay samples right after fast recovery".
		if c.epochStarted && int32(now-c.epochStart) < cubicHZ {
			rtt = 0
		} else {
			delay := max(uint32(min(rtt/sim.Microsecond, math.MaxUint32)), 1)
			// "first time call or link delay decreases"
			if c.delayMin == 0 || c.delayMin > delay {
				c.delayMin = delay
			}
		}
	}
	if c.hy.Variant() == HyStartPlusPlus {
		rtt = ev.RTT // RFC 9406 takes every sample; it has no discard rule
	}
	ha := HyStartAck{
		Now: ev.Now, RTT: rtt, SndUna: ev.SndUna, SndNxt: ev.SndNxt,
		Cwnd: int64(c.cwnd), InSlowStart: c.inSlowStart(),
		Paced: ev.Paced, PacingRate: c.pacingRate,
	}
	switch c.hy.OnAck(&ha) {
	case HyStartExitAckTrain:
		c.ssthresh = c.cwnd // hystart_update: tp->snd_ssthresh = tcp_snd_cwnd(tp)
		c.exitReason = "hystart-ack-train"
	case HyStartExitDelay:
		c.ssthresh = c.cwnd
		c.exitReason = "hystart-delay"
	case HyStartCSSExit:
		c.ssthresh = c.cwnd // RFC 9406 §4.2: ssthresh = cwnd
		c.exitReason = "css-exit"
	case HyStartNone, HyStartCSSEntry, HyStartCSSResume:
		// No exit: CSS entry and resume are reported by the HyStart
		// state itself (SlowStartExitReason).
	}
}

// congAvoid is cubictcp_cong_avoid, behind tcp_cong_control's gate.
func (c *Cubic) congAvoid(ev *AckEvent, acked uint32) {
	if ev.InRecovery || c.cwr || !ev.CwndLimited {
		return
	}
	if c.inSlowStart() {
		c.hy.OnSlowStartAck(ev.Now, ev.SndUna, ev.SndNxt)
		if c.perAckSS {
			// 2.6.x tcp_slow_start with sysctl_tcp_abc = 0: "cnt =
			// tp->snd_cwnd; tp->snd_cwnd_cnt += cnt; while
			// (tp->snd_cwnd_cnt >= tp->snd_cwnd) {...; tp->snd_cwnd++;}"
			// adds exactly one packet per call, and cong_avoid did
			// either slow start or congestion avoidance, never both.
			// Deviation: capped at ssthresh (the kernel's "snd_cwnd <=
			// snd_ssthresh" let it reach ssthresh + 1).
			c.cwnd = min(c.cwnd+1, c.ssthresh)
			if !c.inSlowStart() {
				c.exitReason = "ssthresh"
			}
			return
		}
		c.cwnd, acked = c.hy.SlowStart(c.cwnd, c.ssthresh, acked, ev.Paced)
		if !c.inSlowStart() {
			c.exitReason = "ssthresh"
		}
		if acked == 0 {
			return
		}
	}
	c.update(jiffies32(ev.Now), acked)
	c.congAvoidAI(c.cnt, acked)
}

// update is bictcp_update: it sets cnt.
func (c *Cubic) update(now, acked uint32) {
	cwnd := c.cwnd
	c.ackCnt += acked // count the number of ACKed packets

	if c.lastCwnd == cwnd && int32(now-c.lastTime) <= cubicHZ/32 {
		return
	}
	// "The CUBIC function can update ca->cnt at most once per jiffy."
	if !(c.epochStarted && now == c.lastTime) {
		c.lastCwnd = cwnd
		c.lastTime = now
		if !c.epochStarted {
			c.epochStarted = true
			c.epochStart = now // record beginning
			c.ackCnt = acked   // start counting
			c.tcpCwnd = cwnd   // syn with cubic
			if c.lastMaxCwnd <= cwnd {
				c.bicK = 0
				c.bicOriginPoint = cwnd
			} else {
				// "Compute new K based on (wmax-cwnd) * (srtt>>3 / HZ) / c
				// * 2^(3*bictcp_HZ)"
				c.bicK = cubicRoot(c.cubeFactor * uint64(c.lastMaxCwnd-cwnd))
				c.bicOriginPoint = c.lastMaxCwnd
			}
		}
		// t = (s32)(jiffies - epoch_start) + usecs_to_jiffies(delay_min),
		// in 1/1024 s.
		t := uint64(int64(int32(now - c.epochStart)))
		t += uint64(usecsToJiffies(c.delayMin))
		t <<= bictcpHZ
		t /= cubicHZ
		var offs uint64
		if t < uint64(c.bicK) { // t - K
			offs = uint64(c.bicK) - t
		} else {
			offs = t - uint64(c.bicK)
		}
		// c/rtt * (t-K)^3, truncated to u32 as the kernel's delta.
		delta := uint32((uint64(c.cubeRTTScale) * offs * offs * offs) >> (10 + 3*bictcpHZ))
		var target uint32
		if t < uint64(c.bicK) {
			target = c.bicOriginPoint - delta // below origin
		} else {
			target = c.bicOriginPoint + delta // above origin
		}
		c.bicTarget = target
		if target > cwnd {
			c.cnt = cwnd / (target - cwnd)
		} else {
			c.cnt = 100 * cwnd // very small increment
		}
		// "The initial growth of cubic function may be too conservative
		// when the available bandwidth is still unknown."
		if c.lastMaxCwnd == 0 && c.cnt > cubicMaxCntInit {
			c.cnt = cubicMaxCntInit
		}
	}
	// tcp_friendliness:
	if c.tcpFriendliness {
		delta := (cwnd * c.betaScale) >> 3
		// "while (ca->ack_cnt > delta) { ca->ack_cnt -= delta;
		// ca->tcp_cwnd++; }", in one step: it runs (ack_cnt-1)/delta
		// times.
		if delta > 0 && c.ackCnt > delta {
			n := (c.ackCnt - 1) / delta
			c.ackCnt -= n * delta
			c.tcpCwnd += n
		}
		if c.tcpCwnd > cwnd { // if bic is slower than tcp
			maxCnt := cwnd / (c.tcpCwnd - cwnd)
			if c.cnt > maxCnt {
				c.cnt = maxCnt
			}
		}
	}
	// "The maximum rate of cwnd increase CUBIC allows is 1 packet per 2
	// packets ACKed, meaning cwnd grows at 1.5x per RTT."
	c.cnt = max(c.cnt, 2)
}

// congAvoidAI is tcp_cong_avoid_ai: one packet more per w packets acked.
func (c *Cubic) congAvoidAI(w, acked uint32) {
	// "If credits accumulated at a higher w, apply them gently now."
	if c.cwndCnt >= w {
		c.cwndCnt = 0
		c.cwnd++
	}
	c.cwndCnt += acked
	if c.cwndCnt >= w {
		delta := c.cwndCnt / w
		c.cwndCnt -= delta * w
		c.cwnd += delta
	}
}

// recalcSsthresh is cubictcp_recalc_ssthresh, in the kernel's u32
// arithmetic.
func (c *Cubic) recalcSsthresh() uint32 {
	c.epochStarted = false // end of epoch
	// Wmax and fast convergence.
	if c.cwnd < c.lastMaxCwnd && c.fastConvergence {
		c.lastMaxCwnd = c.cwnd * (bictcpBetaScale + c.beta) / (2 * bictcpBetaScale)
	} else {
		c.lastMaxCwnd = c.cwnd
	}
	return max(c.cwnd*c.beta/bictcpBetaScale, 2)
}

// reset is bictcp_reset (cubictcp_state(TCP_CA_Loss)).
func (c *Cubic) reset() {
	c.cnt, c.lastMaxCwnd, c.lastCwnd, c.lastTime = 0, 0, 0, 0
	c.bicOriginPoint, c.bicK, c.delayMin, c.bicTarget = 0, 0, 0, 0
	c.epochStart, c.ackCnt, c.tcpCwnd = 0, 0, 0
	c.epochStarted = false
}

// OnCongestion implements Controller.OnCongestion.
func (c *Cubic) OnCongestion(ev *CongestionEvent) {
	switch ev.Kind {
	case CongLoss, CongECN:
		if c.recovering || c.cwr {
			// tcp_enter_cwr acts only from TCP_CA_Open/Disorder, and
			// tcp_enter_recovery skips tcp_init_cwnd_reduction when
			// already in a cwnd reduction (CWR): no second reduction.
			if ev.Kind == CongLoss {
				c.recovering, c.cwr = true, false
			}
			return
		}
		c.noteSlowStartEnd(ev.Kind.String())
		c.hy.OnCongestion()
		// tcp_init_cwnd_reduction: ssthresh = ca_ops->ssthresh(sk),
		// snd_cwnd_cnt = 0; the reduction itself is done at once.
		c.ssthresh = c.recalcSsthresh()
		c.cwnd = c.ssthresh
		c.cwndCnt = 0
		if ev.Kind == CongLoss {
			c.recovering = true
		} else {
			c.cwr, c.cwrHighSeq = true, c.lastSndNxt
		}
	case CongRTO:
		c.noteSlowStartEnd("rto")
		// tcp_enter_loss: "Reduce ssthresh if it has not yet been made
		// inside this window."
		if !c.recovering && !c.cwr && !c.afterRTO {
			c.ssthresh = c.recalcSsthresh()
		}
		c.cwnd = 1 // tcp_packets_in_flight(tp) + 1, all marked lost
		c.cwndCnt = 0
		c.reset()
		c.hy.Restart(ev.Now, c.lastSndNxt) // bictcp_hystart_reset
		c.recovering, c.cwr, c.afterRTO = false, false, true
	}
}

// noteSlowStartEnd records why slow start (or CSS) ends, if it does.
func (c *Cubic) noteSlowStartEnd(reason string) {
	if c.inSlowStart() || c.hy.InCSS() {
		c.exitReason = reason
	}
}

// OnRecoveryExit implements Controller.OnRecoveryExit: cwnd = ssthresh
// (tcp_end_cwnd_reduction).
func (c *Cubic) OnRecoveryExit(now sim.Time) {
	c.recovering = false
	if c.ssthresh < tcpInfiniteSsthresh {
		c.cwnd = c.ssthresh
	}
}

// Cwnd implements Controller.Cwnd.
func (c *Cubic) Cwnd() int64 { return int64(c.cwnd) * c.mss }

// Ssthresh implements Controller.Ssthresh.
func (c *Cubic) Ssthresh() int64 { return int64(c.ssthresh) * c.mss }

// State implements Observer.State: recovery, cwr,
// conservative slow start (HyStart++ CSS), slow start or
// congestion avoidance.
func (c *Cubic) State() CongState {
	switch {
	case c.recovering:
		return StateRecovery
	case c.cwr:
		return StateCWR
	case c.hy.InCSS():
		return StateConservativeSlowStart
	case c.inSlowStart():
		return StateSlowStart
	}
	return StateCongestionAvoidance
}

// SlowStartExitReason implements SlowStartExit. While in CSS it is
// "css-entry"; in slow start it is ""; otherwise it says how the latest
// slow start ended: "hystart-ack-train", "hystart-delay", "css-exit"
// (HyStart++ finished CSS), "ssthresh" (cwnd reached ssthresh), "loss",
// "ecn" or "rto" (a congestion event during slow start or CSS).
func (c *Cubic) SlowStartExitReason() string {
	switch {
	case c.hy.InCSS():
		return "css-entry"
	case c.inSlowStart():
		return ""
	}
	return c.exitReason
}

// LastSlowStartExit is the latest slow-start end recorded, whatever the
// current state (after an RTO in slow start it is "rto" while the next
// slow start runs).
func (c *Cubic) LastSlowStartExit() string { return c.exitReason }

// sampleSRTT keeps the smoothed RTT as tcp_rtt_estimator does (RFC 6298
// §2: srtt = 7/8 srtt + 1/8 rtt).
func (c *Cubic) sampleSRTT(rtt sim.Time) {
	if c.srtt == 0 {
		c.srtt = rtt
		return
	}
	c.srtt += (rtt - c.srtt) / 8
}

// updatePacingRate estimates sk_pacing_rate as tcp_update_pacing_rate sets
// it after each ACK: mss * max(cwnd, packets_out) / srtt, times 200% while
// cwnd < ssthresh/2 (tcp_pacing_ss_ratio) and 120% after
// (tcp_pacing_ca_ratio). packets_out is taken from PriorInFlight. Only
// hystart_ack_delay() reads it, on the next ACK as in the kernel.
func (c *Cubic) updatePacingRate(ev *AckEvent) {
	if c.srtt <= 0 {
		return
	}
	ratio := uint64(120)
	if c.cwnd < c.ssthresh/2 {
		ratio = 200
	}
	n := max(uint64(c.cwnd), uint64((ev.PriorInFlight+c.mss-1)/c.mss))
	// bytes/s = mss*n*ratio/100 * 1e12/srtt(ps), with a 128-bit product.
	hi, lo := bits.Mul64(uint64(c.mss)*n*ratio, uint64(sim.Second/100))
	srtt := uint64(c.srtt)
	if hi >= srtt {
		c.pacingRate = math.MaxInt64
		return
	}
	q, _ := bits.Div64(hi, lo, srtt)
	c.pacingRate = int64(min(q, math.MaxInt64))
}

// jiffies32 is tcp_jiffies32 at now.
func jiffies32(now sim.Time) uint32 { return uint32(now / jiffy) }

// usecsToJiffies is usecs_to_jiffies for HZ = 1000: it rounds up.
func usecsToJiffies(us uint32) uint32 { return (us + 1_000_000/cubicHZ - 1) / (1_000_000 / cubicHZ) }

// cubicRootV is the table of cubic_root: "cbrt(x) MSB values for x MSB
// values in [0..63]. Precomputed then refined by hand - Willy Tarreau".
var cubicRootV = [64]uint8{
	0, 54, 54, 54, 118, 118, 118, 118,
	123, 129, 134, 138, 143, 147, 151, 156,
	157, 161, 164, 168, 170, 173, 176, 179,
	181, 185, 187, 190, 192, 194, 197, 199,
	200, 202, 204, 206, 209, 211, 213, 215,
	217, 219, 221, 222, 224, 225, 227, 229,
	231, 232, 234, 236, 237, 239, 240, 242,
	244, 245, 246, 248, 250, 251, 252, 254,
}

// cubicRoot is the kernel's cubic_root: a table lookup followed by one
// Newton-Raphson iteration ("Avg err ~= 0.195%"), in u32 arithmetic.
func cubicRoot(a uint64) uint32 {
	b := uint32(bits.Len64(a)) // fls64
	if b < 7 {
		// a in [0..63]
		return (uint32(cubicRootV[a]) + 35) >> 6
	}
	b = ((b * 84) >> 8) - 1
	shift := a >> (b * 3)
	x := ((uint32(cubicRootV[shift]) + 10) << b) >> 6
	// x_{k+1} = (2*x_k + a/x_k^2)/3, with x*(x-1) and 341/1024 for 1/3.
	x = 2*x + uint32(a/(uint64(x)*uint64(x-1)))
	x = (x * 341) >> 10
	return x
}
