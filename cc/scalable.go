package cc

import (
	"fmt"
	"math"

	"github.com/lockstep-sim/lockstep/sim"
)

// Scalable is Scalable TCP in one of two variants.
//
// "kelly" follows T. Kelly, "Scalable TCP: Improving Performance in
// Highspeed Wide Area Networks", ACM CCR 33(2), 2003, §2:
//
//   - congestion avoidance: for each acknowledgement received in a round
//     trip time without congestion, cwnd <- cwnd + a, a = 0.01 segments;
//   - on the first detection of congestion in a round trip time,
//     cwnd <- cwnd - ceil(b * cwnd), b = 0.125 (so about cwnd * 0.875;
//     the ceiling, in whole segments, is the paper's).
//
// The window is kept in hundredths of a segment, so a = 1 unit and the
// arithmetic is exact integer arithmetic. "Per acknowledgement" is taken
// literally: an ACK that acknowledges new data adds a, whatever it covers
// (a stretch ACK counts once). Slow start is standard TCP's, as the paper
// says: RFC 5681 §3.1 with RFC 3465 §2.2 byte counting (min(N, 2*SMSS) per
// ACK), capped at ssthresh.
//
// "linux" follows net/ipv4/tcp_scalable.c, in packets as the kernel
// counts:
//
//   - tcp_scalable_cong_avoid: slow start by tcp_slow_start (cwnd grows by
//     the packets acknowledged, up to ssthresh; the rest spills into
//     congestion avoidance), then tcp_cong_avoid_ai(tp, min(cwnd,
//     TCP_SCALABLE_AI_CNT = 100), acked): one packet more for every
//     min(cwnd, 100) packets acknowledged;
//   - tcp_scalable_ssthresh: ssthresh = max(cwnd - (cwnd >>
//     TCP_SCALABLE_MD_SCALE = 3), 2).
//
// Bytes acknowledged are turned into packets with the remainder carried to
// the next ACK (the kernel counts whole skbs).
//
// "linux-2019" is tcp_scalable.c before commit "tcp: fix stretch ACK bugs
// in Scalable" (Pengcheng Yang, March 2020, Linux 5.7), which raised
// TCP_SCALABLE_AI_CNT from 50 to 100 "because we are now precisely
// accounting for stretch ACKs, including delayed ACKs". Before it (Linux
// 4.x to 5.6):
//
//   - below ssthresh, tcp_slow_start(tp, acked): cwnd = min(cwnd + acked,
//     ssthresh), the leftover discarded (Scalable ignored its return);
//   - otherwise tcp_cong_avoid_ai(tp, min(cwnd, TCP_SCALABLE_AI_CNT = 50),
//     1): one count per ACK, whatever it acknowledges ("We use 50 instead
//     of 100 to account for delayed ack"), so one packet more per
//     min(cwnd, 50) ACKs.
//
// ns-3's TcpScalable uses the same divisor (attribute AIFactor, 50) but
// counts segments acknowledged, not ACKs, and drops the remainder of its
// division; we do not offer it as a variant: its slow start (ns-3
// TcpNewReno: one segment per ACK) and its ssthresh (from the bytes in
// flight) differ too. The even older 2.6-3.x code (snd_cwnd_cnt++ per ACK,
// increase when it *exceeds* min(cwnd, 50)) grew one packet per 51 ACKs;
// not modelled either.
//
// Both variants, on a congestion event (the host reports at most one per
// window of data, the paper's "first detection of congestion in a given
// round trip time"):
//   - loss (fast retransmit) and ECN echo: ssthresh = the reduced window
//     (at least 2 segments, as RFC 5681 eq. 4 and the kernel's "2U"), and
//     cwnd = ssthresh. Like Reno here, cwnd drops at once instead of by
//     inflation (RFC 5681 §3.2) or PRR (Linux): see Reno's comment;
//   - RTO: ssthresh as above and cwnd = 1 segment (RFC 5681 §3.1's loss
//     window; Linux tcp_enter_loss sets packets in flight + 1, which is 1
//     once everything is marked lost). A further RTO before any new data
//     is acknowledged keeps ssthresh (RFC 5681 §3.1 after eq. 4; Linux
//     tcp_enter_loss only recomputes ssthresh on the first timeout);
//   - end of fast recovery: cwnd = ssthresh (RFC 5681 §3.2 step 6; Linux
//     tcp_end_cwnd_reduction).
//
// The window does not grow while the sender is in recovery. Deviation:
// AckEvent.CwndLimited is not consulted (Linux returns early when
// !tcp_is_cwnd_limited); Reno does not consult it either.
type Scalable struct {
	variant string
	mss     int64
	core    scalableCore
	// recovering: between OnCongestion(CongLoss) and the end of recovery.
	recovering bool
	// afterRTO: an RTO happened and no new data was acknowledged since.
	afterRTO bool
}

var (
	_ Controller = (*Scalable)(nil)
	_ Observer   = (*Scalable)(nil)
)

// Scalable TCP constants.
const (
	// scalableKellyUnits is how many window units make a segment in the
	// kelly variant: a = 0.01 segment is one unit (Kelly 2003 §2).
	scalableKellyUnits = 100
	// scalableKellyBInv is 1/b, b = 0.125 (Kelly 2003 §2).
	scalableKellyBInv = 8
	// scalableAICnt is TCP_SCALABLE_AI_CNT (tcp_scalable.c), in packets,
	// since Linux 5.7; scalableAICnt2019 is its value before (counted in
	// ACKs then).
	scalableAICnt     = 100
	scalableAICnt2019 = 50
	// scalableMDScale is TCP_SCALABLE_MD_SCALE (tcp_scalable.c): the
	// window loses cwnd >> 3 on congestion.
	scalableMDScale = 3
	// scalableMinSsthresh is the smallest ssthresh, in segments (RFC 5681
	// eq. 4's 2*SMSS; tcp_scalable_ssthresh's 2U).
	scalableMinSsthresh = 2
	// scalableNoSsthresh is the "arbitrarily high" initial ssthresh (RFC
	// 5681 §3.1), in the variants' own units.
	scalableNoSsthresh = math.MaxInt64 / 4
)

// ScalableVariants lists the variants NewScalable accepts.
var ScalableVariants = []string{"kelly", "linux", "linux-2019"}

// scalableCore is one variant's window arithmetic, in its own units.
type scalableCore interface {
	// ack handles newly acknowledged bytes outside recovery.
	ack(acked int64)
	// reduce sets ssthresh (unless keepSsthresh) and cwnd after
	// congestion; lossWindow selects the RTO's 1-segment window.
	reduce(keepSsthresh, lossWindow bool)
	exitRecovery()
	cwndBytes() int64
	ssthreshBytes() int64
	inSlowStart() bool
}

// NewScalable returns Scalable TCP in variant "kelly", "linux" or
// "linux-2019", with an
// initial window of initCwnd segments of mss bytes.
func NewScalable(variant string, mss, initCwnd int64) (*Scalable, error) {
	if mss <= 0 {
		return nil, fmt.Errorf("scalable: mss must be positive, got %d", mss)
	}
	if initCwnd <= 0 {
		return nil, fmt.Errorf("scalable: init_cwnd must be positive, got %d", initCwnd)
	}
	s := &Scalable{variant: variant, mss: mss}
	switch variant {
	case "kelly":
		s.core = &scalableKelly{mss: mss, cwnd: initCwnd * scalableKellyUnits,
			ssthresh: scalableNoSsthresh}
	case "linux":
		s.core = &scalableLinux{mss: mss, cwnd: initCwnd, ssthresh: scalableNoSsthresh, aiCnt: scalableAICnt}
	case "linux-2019":
		s.core = &scalableLinux{mss: mss, cwnd: initCwnd, ssthresh: scalableNoSsthresh,
			aiCnt: scalableAICnt2019, perAck: true}
	default:
		return nil, fmt.Errorf("scalable: unknown variant %q (known: %v)", variant, ScalableVariants)
	}
	return s, nil
}

// Variant names the variant: "kelly", "linux" or "linux-2019".
func (s *Scalable) Variant() string { return s.variant }

// OnAck implements Controller.OnAck.
func (s *Scalable) OnAck(ev *AckEvent) {
	if !ev.InRecovery {
		s.recovering = false
	}
	if ev.Acked <= 0 {
		return
	}
	s.afterRTO = false
	if ev.InRecovery {
		return
	}
	s.core.ack(ev.Acked)
}

// OnCongestion implements Controller.OnCongestion.
func (s *Scalable) OnCongestion(ev *CongestionEvent) {
	switch ev.Kind {
	case CongRTO:
		s.core.reduce(s.afterRTO, true)
		s.afterRTO = true
		s.recovering = false
	case CongLoss:
		s.core.reduce(false, false)
		s.recovering = true
	default:
		s.core.reduce(false, false)
	}
}

// OnRecoveryExit implements Controller.OnRecoveryExit.
func (s *Scalable) OnRecoveryExit(now sim.Time) {
	s.recovering = false
	s.core.exitRecovery()
}

// Cwnd implements Controller.Cwnd.
func (s *Scalable) Cwnd() int64 { return s.core.cwndBytes() }

// Ssthresh implements Controller.Ssthresh.
func (s *Scalable) Ssthresh() int64 { return s.core.ssthreshBytes() }

// State implements Observer.State.
func (s *Scalable) State() CongState {
	switch {
	case s.recovering:
		return StateRecovery
	case s.core.inSlowStart():
		return StateSlowStart
	}
	return StateCongestionAvoidance
}

// scalableKelly is the paper's arithmetic. Units are hundredths of a
// segment. Invariant: cwnd >= 1 unit.
type scalableKelly struct {
	mss      int64
	cwnd     int64
	ssthresh int64
}

func (k *scalableKelly) ack(acked int64) {
	if k.cwnd < k.ssthresh {
		// RFC 5681 §3.1 slow start, RFC 3465 §2.2: min(N, L*SMSS), L = 2.
		inc := min(acked, renoABCLimit*k.mss) * scalableKellyUnits / k.mss
		k.cwnd = min(k.cwnd+inc, k.ssthresh)
		return
	}
	// Kelly 2003 §2: cwnd <- cwnd + 0.01 per acknowledgement.
	k.cwnd++
}

func (k *scalableKelly) reduce(keepSsthresh, lossWindow bool) {
	if !keepSsthresh {
		// Kelly 2003 §2: cwnd - ceil(0.125 * cwnd), the ceiling taken in
		// whole segments: ceil(cwnd/8 segments) = ceil(units / 800).
		const perSeg = scalableKellyUnits * scalableKellyBInv
		dec := (k.cwnd + perSeg - 1) / perSeg * scalableKellyUnits
		k.ssthresh = max(k.cwnd-dec, scalableMinSsthresh*scalableKellyUnits)
	}
	if lossWindow {
		k.cwnd = scalableKellyUnits // RFC 5681 §3.1: LW = 1 segment
		return
	}
	k.cwnd = k.ssthresh
}

func (k *scalableKelly) exitRecovery() { k.cwnd = k.ssthresh }

func (k *scalableKelly) cwndBytes() int64 { return k.cwnd * k.mss / scalableKellyUnits }

func (k *scalableKelly) ssthreshBytes() int64 {
	if k.ssthresh == scalableNoSsthresh {
		return math.MaxInt64 / 2
	}
	return k.ssthresh * k.mss / scalableKellyUnits
}

func (k *scalableKelly) inSlowStart() bool { return k.cwnd < k.ssthresh }

// scalableLinux is tcp_scalable.c's arithmetic in packets, today's
// (aiCnt 100, counting packets) or before 5.7 (aiCnt 50, perAck: counting
// ACKs). Invariant: cwnd >= 1, 0 <= rem < mss.
type scalableLinux struct {
	mss      int64
	cwnd     int64 // tp->snd_cwnd
	ssthresh int64 // tp->snd_ssthresh
	cnt      int64 // tp->snd_cwnd_cnt
	rem      int64 // acknowledged bytes not yet a whole packet
	aiCnt    int64 // TCP_SCALABLE_AI_CNT
	perAck   bool  // linux-2019: tcp_cong_avoid_ai(tp, w, 1), no spill
}

func (l *scalableLinux) ack(acked int64) {
	n := l.rem + acked
	pkts := n / l.mss
	l.rem = n % l.mss
	switch {
	case l.cwnd < l.ssthresh:
		// tcp_slow_start: cwnd = min(cwnd + acked, ssthresh); the
		// leftover goes on to congestion avoidance (before 5.7 it was
		// discarded).
		c := min(l.cwnd+pkts, l.ssthresh)
		pkts -= c - l.cwnd
		l.cwnd = c
		if pkts == 0 || l.perAck {
			return
		}
	case l.perAck:
		// Before 5.7: tcp_cong_avoid_ai(tp, min(cwnd, 50), 1), one count
		// for every ACK of new data, whatever it acknowledges.
		pkts = 1
	case pkts == 0:
		return
	}
	// tcp_cong_avoid_ai(tp, min(cwnd, TCP_SCALABLE_AI_CNT), acked).
	w := min(l.cwnd, l.aiCnt)
	if l.cnt >= w {
		// "If credits accumulated at a higher w, apply them gently now."
		l.cnt = 0
		l.cwnd++
	}
	l.cnt += pkts
	if l.cnt >= w {
		delta := l.cnt / w
		l.cnt -= delta * w
		l.cwnd += delta
	}
}

func (l *scalableLinux) reduce(keepSsthresh, lossWindow bool) {
	if !keepSsthresh {
		// tcp_scalable_ssthresh.
		l.ssthresh = max(l.cwnd-(l.cwnd>>scalableMDScale), scalableMinSsthresh)
	}
	l.cnt = 0 // tcp_init_cwnd_reduction, tcp_enter_loss
	if lossWindow {
		l.cwnd = 1
		return
	}
	l.cwnd = l.ssthresh
}

func (l *scalableLinux) exitRecovery() { l.cwnd = l.ssthresh }

func (l *scalableLinux) cwndBytes() int64 { return l.cwnd * l.mss }

func (l *scalableLinux) ssthreshBytes() int64 {
	if l.ssthresh == scalableNoSsthresh {
		return math.MaxInt64 / 2
	}
	return l.ssthresh * l.mss
}

func (l *scalableLinux) inSlowStart() bool { return l.cwnd < l.ssthresh }
