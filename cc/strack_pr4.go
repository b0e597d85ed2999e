package cc

import (
	"github.com/lockstep-sim/lockstep/sim"
)

// STrack as its authors' htsim code runs it: csg-htsim pull request #4,
// sim/strack.cpp (STrackSrc::receivePacket, adjust_cwnd, handle_ack,
// rtx_timer_hook, doNextEvent, choose_route, send_next_packet), as issue
// 13 of this project lists its behaviour after reading that code. Where
// the Broadcom/csg-htsim tree of the same authors shows the same code
// (09ba8bc: count_ecn's skip per path, the commented-out adjust_cwnd,
// queuesize(flow) > 2, _rto *= 2, the timeout's halving and
// _rtx_reset_threshold) we follow it too. Every difference from `strack`
// is in docs/decisions.md ("STrack, htsim PR #4").
//
// Select it with transport.strack.variant: htsim-pr4. The window is fixed
// at the initial window unless its CC is enabled (transport.strack.
// cc_enabled); the initial window is also the maximum. Loss recovery is by
// timeout only (GoBackNRecovery).

// StrackPR4Config parameterises the htsim PR #4 window.
type StrackPR4Config struct {
	// CCEnabled runs the per-ACK window rules; off (htsim's default) the
	// window stays at the initial window, cut only by timeouts.
	CCEnabled bool
}

// PR #4's constants.
const (
	pr4Alpha           = 10 * 1000 / 12 // bytes per µs of gap: 833 in the code's integers
	pr4Target          = 24 * sim.Microsecond
	pr4Beta            = 0.8
	pr4MaxMDF          = 0.5
	pr4Decay           = 0.98
	pr4FastDecrease    = 1.5 // × target: decrease to the achieved BDP above it
	pr4HighDelayBoost  = 2   // × target: unmarked ACKs above it increase
	pr4RTXResetTimeout = 5   // timeouts in a row: the minimum window
)

// StrackPR4 is the window of htsim PR #4's STrackSrc, in bytes.
type StrackPR4 struct {
	cfg      StrackPR4Config
	mss      int64
	cwnd     int64
	max      int64 // the initial window
	ewma     float64
	haveEWMA bool
	w        float64 // EWMA weight: 5·MSS / initial cwnd
	lastDec  sim.Time
	decayed  bool
	rxCount  int64
	bdp      int64
	lastBDP  sim.Time
	lastAck  sim.Time
	timeouts int
	state    CongState
}

var _ Controller = (*StrackPR4)(nil)

// NewStrackPR4 returns the PR #4 window with an initial (and maximum)
// window of initCwnd segments.
func NewStrackPR4(cfg StrackPR4Config, mss, initCwnd int64) *StrackPR4 {
	return &StrackPR4{cfg: cfg, mss: mss, cwnd: initCwnd * mss, max: initCwnd * mss,
		w: min(1, 5/float64(initCwnd)), state: StateWindow}
}

// pkts is cwnd/MSS as the code divides it: whole segments, at least one.
func (s *StrackPR4) pkts() int64 { return max(s.cwnd/s.mss, 1) }

// OnAck implements Controller.OnAck: receivePacket's achieved-BDP
// bookkeeping on every ACK (one MSS per ACK, as the code assumes one ACK
// per data packet), then, with CC on, adjust_cwnd:
//
//   - delay d = now − the echoed send time of this ACK's packet, the raw
//     sample, truncated to whole µs for the increase: below the 24 µs
//     target, cwnd += 833·(24 − d_µs)/(cwnd/MSS);
//   - at or above it, an unmarked ACK with d > 2·target adds
//     5·MSS/(cwnd/MSS); and at most once per base RTT, when the EWMA of
//     the delay (weight 5·MSS/initial cwnd) exceeds the target, cwnd drops
//     to the achieved BDP if d > 1.5·target, else cwnd ×= max(1 −
//     0.8·(d − t)/d, 0.5);
//   - every ACK ends with cwnd = 0.98·cwnd + MSS/(cwnd/MSS), clamped to
//     [MSS, initial window].
func (s *StrackPR4) OnAck(ev *AckEvent) {
	now := ev.Now
	s.rxCount += s.mss
	if base := ev.MinRTT; base > 0 && now-s.lastBDP > base {
		if now-s.lastAck < base {
			s.bdp, s.rxCount = s.rxCount, 0
		} else {
			s.bdp, s.rxCount = 0, s.mss
		}
		s.lastBDP = now
	}
	s.lastAck = now
	if ev.Acked > 0 {
		s.timeouts = 0
	}
	d := ev.Delay
	if !s.cfg.CCEnabled || d <= 0 {
		return
	}
	if !s.haveEWMA {
		s.ewma, s.haveEWMA = float64(d), true
	} else {
		s.ewma += s.w * (float64(d) - s.ewma)
	}
	t := pr4Target
	if dus := int64(d / sim.Microsecond); dus < int64(t/sim.Microsecond) {
		s.state = StateIncrease
		s.cwnd += pr4Alpha * (int64(t/sim.Microsecond) - dus) / s.pkts()
	} else {
		if d > pr4HighDelayBoost*t && !ev.ECE {
			s.cwnd += 5 * s.mss / s.pkts()
		}
		if (!s.decayed || now-s.lastDec >= ev.MinRTT) && s.ewma > float64(t) {
			if float64(d) > pr4FastDecrease*float64(t) && s.bdp > 0 {
				s.state = StateFastDecrease
				s.cwnd = s.bdp
			} else {
				s.state = StateDecrease
				s.cwnd = int64(float64(s.cwnd) * max(1-pr4Beta*float64(d-t)/float64(d), 1-pr4MaxMDF))
			}
			s.lastDec, s.decayed = now, true
		}
	}
	s.cwnd = int64(pr4Decay*float64(s.cwnd)) + s.mss/s.pkts()
	s.clamp()
}

func (s *StrackPR4) clamp() { s.cwnd = min(max(s.cwnd, s.mss), s.max) }

// OnCongestion implements Controller.OnCongestion: a timeout halves the
// window, the fifth in a row (no advancing ACK between) sets it to one
// MSS (doNextEvent, _rtx_reset_threshold). Nothing else cuts it: fast
// retransmit is disabled, and marks steer paths.
func (s *StrackPR4) OnCongestion(ev *CongestionEvent) {
	if ev.Kind != CongRTO {
		return
	}
	s.timeouts++
	if s.timeouts >= pr4RTXResetTimeout {
		s.cwnd = s.mss
	} else {
		s.cwnd = int64(float64(s.cwnd) * (1 - pr4MaxMDF))
	}
	s.lastDec, s.decayed = ev.Now, true
	s.clamp()
}

// OnRecoveryExit implements Controller.OnRecoveryExit (there is no fast
// recovery).
func (s *StrackPR4) OnRecoveryExit(now sim.Time) {}

// Cwnd implements Controller.Cwnd.
func (s *StrackPR4) Cwnd() int64 { return s.cwnd }

// Ssthresh implements Controller.Ssthresh: none.
func (s *StrackPR4) Ssthresh() int64 { return 0 }

// State implements Observer.
func (s *StrackPR4) State() CongState { return s.state }

// PerPacketAcks implements PerPacketAcker: the sink ACKs every packet,
// echoing its path and mark.
func (s *StrackPR4) PerPacketAcks() {}

// DefaultPaths implements PathSteerer: ECMP_FIB_ECN skipping.
func (s *StrackPR4) DefaultPaths() string { return "skip" }

// RequiredRecovery implements RecoveryRequirer.
func (s *StrackPR4) RequiredRecovery() string { return "strack" }

var (
	_ PathSteerer      = (*StrackPR4)(nil)
	_ PerPacketAcker   = (*StrackPR4)(nil)
	_ RecoveryRequirer = (*StrackPR4)(nil)
)

// GoBackNRecovery is PR #4's loss recovery: cumulative ACKs only, no
// reaction to duplicates (handle_ack's dup-ACK count never reaches its
// threshold) nor to NACK bitmaps, and on a timeout every byte from the
// first hole is sent again (doNextEvent: _highest_sent = _last_acked +
// mss, then send_packets).
type GoBackNRecovery struct{ SeqSpace }

var _ Recovery = (*GoBackNRecovery)(nil)

// NewGoBackNRecovery returns the recovery for a flow of size bytes.
func NewGoBackNRecovery(mss int64, size uint64) *GoBackNRecovery {
	return &GoBackNRecovery{SeqSpace{MSS: mss, End: size}}
}

// OnSent implements Recovery.OnSent.
func (r *GoBackNRecovery) OnSent(now sim.Time, seg Segment, _ RTTInfo) SeqState {
	r.sent(seg)
	return r.State()
}

// OnAck implements Recovery.OnAck.
func (r *GoBackNRecovery) OnAck(ai *AckInfo) AckVerdict {
	var v AckVerdict
	v.Acked = r.cumAck(ai.Ack)
	v.AdvancedUna = v.Acked > 0
	v.Dup = !v.AdvancedUna
	v.SeqState = r.State()
	return v
}

// OnRTO implements Recovery.OnRTO: go back to the first hole.
func (r *GoBackNRecovery) OnRTO(now sim.Time, _ RTTInfo) SeqState {
	r.Nxt = r.Una
	return r.State()
}

// Next implements Recovery.Next.
func (r *GoBackNRecovery) Next() (Segment, bool) { return r.nextNew() }

// State implements Recovery.State: everything sent and not acknowledged is
// in flight (htsim's _last_acked + cwnd >= _highest_sent + mss).
func (r *GoBackNRecovery) State() SeqState { return r.state(r.FlightSize(), false, sim.Never) }
