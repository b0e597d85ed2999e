package cc

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// STrack ("STrack: A Reliable Multipath Transport for AI/ML Clusters", Le
// et al., 2024, arXiv 2407.15266). (STrack-Sim's STrack is the stracksim
// compatibility profile, package stracksim.) Sources:
// the paper, and Broadcom/csg-htsim sim/strack.cpp (STrackSrc::adjust_cwnd,
// handle_ack, doNextEvent, choose_route) for constants and formulas. The
// public htsim code has adjust_cwnd disabled and its additive increase
// assigns rather than adds; we add (docs/decisions.md).
//
// Loss recovery is per packet: every ACK names the packet it answers
// (AckInfo.Echo), and an out-of-order arrival makes the receiver attach a
// 64-bit received bitmap after the next expected packet (a NACK). The
// sender retransmits exactly the holes, with an RTO as the last resort.
// A hole is lost when the packet that revealed it was sent after the hole's
// latest transmission; the sender dates each packet, so stale NACKs (sent
// before a retransmission could land) do not repeat it.

// segState is one segment's state in the STrack scoreboard.
type segState struct {
	sentAt sim.Time
	acked  bool
	lost   bool // presumed lost and queued for retransmission
	retx   uint16
}

// StrackRecovery is STrack's per-packet loss recovery.
//
// Invariant: pipe is the payload bytes of segments sent (or resent) and
// neither acknowledged nor presumed lost.
type StrackRecovery struct {
	SeqSpace
	segs       sim.Ring[segState] // segment Una/MSS onward, up to Nxt
	lost       sim.Ring[int64]    // segment indices to resend, in order
	pipe       int64
	inRecovery bool
	recoverPt  uint64 // HighSent when the loss episode began
	// Retransmissions counts segments resent because a NACK showed them
	// missing; RTOResent those resent after a timeout.
	Retransmissions, RTOResent uint64
	// TrimResent counts segments resent because a trim NACK named them.
	TrimResent uint64
	// ReoWnd tolerates reordering: a hole counts as lost only if it was
	// sent more than ReoWnd before the packet that overtook it (0: the
	// published behaviour, every hole below a later packet is lost).
	ReoWnd sim.Time
}

var _ Recovery = (*StrackRecovery)(nil)

// NewStrackRecovery returns the recovery state for a flow of size bytes.
func NewStrackRecovery(mss int64, size uint64) *StrackRecovery {
	return &StrackRecovery{SeqSpace: SeqSpace{MSS: mss, End: size}}
}

// at returns the state of segment idx, or nil when it is below Una or not
// sent yet.
func (r *StrackRecovery) at(idx int64) *segState {
	base := int64(r.Una / uint64(r.MSS))
	if idx < base || idx-base >= int64(r.segs.Len()) {
		return nil
	}
	return r.segs.At(int(idx - base))
}

// onSent is OnSent's work.
func (r *StrackRecovery) onSent(now sim.Time, seg Segment) {
	idx := int64(seg.Seq / uint64(r.MSS))
	if seg.Seq == r.Nxt {
		r.segs.Push(segState{sentAt: now})
		r.sent(seg)
		r.pipe += seg.Len
		return
	}
	st := r.at(idx)
	if st == nil || st.acked {
		return
	}
	if st.lost {
		st.lost = false
		if r.lost.Len() > 0 && *r.lost.Front() == idx {
			r.lost.Pop()
		}
	}
	st.sentAt = now
	st.retx++
	r.pipe += seg.Len
}

// markAcked records that segment idx arrived.
func (r *StrackRecovery) markAcked(idx int64) int64 {
	st := r.at(idx)
	if st == nil || st.acked {
		return 0
	}
	st.acked = true
	n := r.pktLen(idx)
	if !st.lost {
		r.pipe -= n
	} // a lost segment leaves the queue lazily, in Next
	return n
}

// onAck is OnAck's work.
func (r *StrackRecovery) onAck(ai *AckInfo) AckVerdict {
	var v AckVerdict
	// The echoed packet and the bitmap first, while their segments are
	// still on the scoreboard. The echoed packet's send time dates the
	// NACK: only holes (re)sent before it are known to be lost.
	echoSent := sim.Time(-1)
	wasLost := r.lost.Len()
	if ai.EchoValid && ai.Trimmed {
		// A trim NACK names the packet a switch cut (NDP's NACK, htsim
		// ndp.cpp NdpSrc::processNack: the named packet is queued for
		// resending at once). Unless it was resent after the transmission
		// that was cut (TSecr dates it), it is lost.
		idx := int64(ai.Echo / uint64(r.MSS))
		if st := r.at(idx); st != nil && !st.acked && !st.lost && st.sentAt <= ai.TSecr {
			st.lost = true
			r.pipe -= r.pktLen(idx)
			r.lost.Push(idx)
			r.TrimResent++
		}
	} else if ai.EchoValid {
		idx := int64(ai.Echo / uint64(r.MSS))
		if st := r.at(idx); st != nil {
			echoSent = st.sentAt
		}
		v.Acked += r.markAcked(idx)
	}
	if ai.Nack {
		base := int64(ai.Ack / uint64(r.MSS))
		top := -1
		for i := 63; i >= 1; i-- {
			if ai.Bitmap&(1<<uint(i)) != 0 {
				top = i
				break
			}
		}
		for i := 0; i <= top; i++ {
			idx := base + int64(i)
			if ai.Bitmap&(1<<uint(i)) != 0 {
				v.Acked += r.markAcked(idx)
				continue
			}
			// A hole below a packet that arrived. It is lost when its
			// latest transmission went out before the packet this ACK
			// answers (as RACK reasons, RFC 8985 §6.2): a NACK dated
			// before a retransmission must not repeat it.
			st := r.at(idx)
			if st == nil || st.acked || st.lost || st.sentAt+r.ReoWnd >= echoSent {
				continue
			}
			st.lost = true
			r.pipe -= r.pktLen(idx)
			r.lost.Push(idx)
			r.Retransmissions++
		}
	}
	if ack := min(ai.Ack, r.HighSent); ack > r.Una {
		for r.Una < ack {
			idx := int64(r.Una / uint64(r.MSS))
			v.Acked += r.markAcked(idx)
			r.segs.Pop()
			r.Una = min(uint64(idx+1)*uint64(r.MSS), r.End)
		}
		if r.Nxt < r.Una {
			r.Nxt = r.Una
		}
		v.AdvancedUna = true
	}
	if wasLost == 0 && r.lost.Len() > 0 && !r.inRecovery {
		r.inRecovery = true
		r.recoverPt = r.HighSent
		v.EnterRecovery = true
	}
	if r.inRecovery && r.Una >= r.recoverPt {
		r.inRecovery = false
		v.ExitRecovery = !v.EnterRecovery
	}
	return v
}

// onRTO is OnRTO's work: every segment still outstanding is
// presumed lost and resent; segments known to have arrived are not.
func (r *StrackRecovery) onRTO(now sim.Time) {
	r.lost = sim.Ring[int64]{}
	base := int64(r.Una / uint64(r.MSS))
	for i := 0; i < r.segs.Len(); i++ {
		st := r.segs.At(i)
		if st.acked {
			continue
		}
		if !st.lost {
			r.pipe -= r.pktLen(base + int64(i))
		}
		st.lost = true
		r.lost.Push(base + int64(i))
		r.RTOResent++
	}
	r.inRecovery = false
}

// Next implements Recovery.Next: lost segments first, then new data.
func (r *StrackRecovery) Next() (Segment, bool) {
	for r.lost.Len() > 0 {
		idx := *r.lost.Front()
		st := r.at(idx)
		if st == nil || st.acked || !st.lost {
			r.lost.Pop() // acknowledged meanwhile
			continue
		}
		return Segment{Seq: uint64(idx) * uint64(r.MSS), Len: r.pktLen(idx), Retx: true}, true
	}
	return r.nextNew()
}

// Pipe implements Recovery.Pipe.
func (r *StrackRecovery) Pipe() int64 { return r.pipe }

// InRecovery implements Recovery.InRecovery.
func (r *StrackRecovery) InRecovery() bool { return r.inRecovery }

// StrackConfig parameterises STrack's window control. Defaults and their
// sources are in DefaultStrackConfig.
type StrackConfig struct {
	// Alpha is the additive-increase constant: per ACK with an RTT below
	// the target, cwnd grows by Alpha*(target-srtt)/cwnd packets, with the
	// gap in microseconds and cwnd in packets (the paper's units; htsim's
	// disabled code divides picoseconds by bytes, a third of a segment per
	// RTT on 4 KB packets).
	Alpha float64
	// Beta scales the multiplicative decrease: cwnd *= 1 -
	// Beta*(rtt-target)/rtt, at most once per smoothed RTT ...
	Beta float64
	// MaxMDF floors it: cwnd never drops below (1-MaxMDF)*cwnd at once.
	MaxMDF float64
	// BaseTarget and PerHop make the target RTT: BaseTarget + hops*PerHop.
	BaseTarget sim.Time
	PerHop     sim.Time
	// Hops is the flow's path length in links (set by the host).
	Hops int
	// MinCwnd and MaxCwnd clamp the window, in bytes.
	MinCwnd, MaxCwnd int64
	// RTXResetThreshold: after this many consecutive timeouts the window
	// drops to MinCwnd.
	RTXResetThreshold int
	// ReoWnd is the recovery's reordering tolerance (StrackRecovery.ReoWnd).
	ReoWnd sim.Time
	// Variant "htsim-pr4" runs the authors' htsim code instead (StrackPR4,
	// GoBackNRecovery; the fields above except the window clamps are then
	// unused); "" is this controller.
	Variant string
	// PR4 is the htsim PR #4 window's setting.
	PR4 StrackPR4Config
}

// StrackVariants lists the values of StrackConfig.Variant.
var StrackVariants = []string{"", "htsim-pr4"}

// DefaultStrackConfig has htsim's values (strack.cpp STrackSrc::STrackSrc):
// alpha 0.25, beta 0.8, max_mdf 0.5, base target 20 us, h = base/6.55 per
// hop, max cwnd 1000 packets, reset after 5 timeouts. The floor is one
// segment, as in the authors' PR #4 (master's constructor says 10 bytes,
// with sub-packet pacing, which we do not model).
func DefaultStrackConfig(mss int64) StrackConfig {
	return StrackConfig{Alpha: 0.25, Beta: 0.8, MaxMDF: 0.5, BaseTarget: 20 * sim.Microsecond,
		PerHop: 3053435 * sim.Picosecond /* 20 us / 6.55 */, MinCwnd: mss, MaxCwnd: 1000 * mss,
		RTXResetThreshold: 5}
}

// Strack is STrack's RTT-based window control. ECN marks steer paths (the
// host's path manager) and do not touch the window.
type Strack struct {
	cfg      StrackConfig
	mss      int64
	cwnd     float64
	srtt     sim.Time
	lastDec  sim.Time
	decayed  bool // a decrease happened (lastDec valid)
	rxCount  int64
	bdp      int64 // bytes acked in the last base RTT (0: invalid)
	lastBDP  sim.Time
	lastAck  sim.Time
	timeouts int
	state    CongState
}

var _ Controller = (*Strack)(nil)

// NewStrack returns STrack's controller with an initial window of initCwnd
// segments.
func NewStrack(cfg StrackConfig, mss, initCwnd int64) *Strack {
	return &Strack{cfg: cfg, mss: mss, cwnd: float64(initCwnd * mss), state: StateWindow}
}

func (s *Strack) target() sim.Time { return s.cfg.BaseTarget + sim.Time(s.cfg.Hops)*s.cfg.PerHop }

func (s *Strack) canDecrease(now sim.Time) bool { return !s.decayed || now-s.lastDec >= s.srtt }

func (s *Strack) decreaseTo(now sim.Time, w float64) {
	s.cwnd = w
	s.lastDec, s.decayed = now, true
	s.clamp()
}

func (s *Strack) clamp() {
	s.cwnd = min(max(s.cwnd, float64(s.cfg.MinCwnd)), float64(s.cfg.MaxCwnd))
}

// OnAck implements Controller.OnAck (htsim adjust_cwnd).
func (s *Strack) OnAck(ev *AckEvent) {
	now := ev.Now
	if ev.Acked > 0 {
		s.timeouts = 0
		// Achieved BDP: bytes acknowledged per base (minimum) RTT.
		s.rxCount += ev.Acked
		if base := ev.MinRTT; base > 0 && now-s.lastBDP > base {
			if now-s.lastAck < base {
				s.bdp, s.rxCount = s.rxCount, 0
			} else {
				s.bdp, s.rxCount = 0, ev.Acked
			}
			s.lastBDP = now
		}
		s.lastAck = now
	}
	d := ev.RTT
	if d <= 0 {
		return
	}
	if s.srtt == 0 {
		s.srtt = d
	} else {
		s.srtt = (7*s.srtt + d) / 8
	}
	tgt := s.target()
	switch {
	case d < tgt:
		s.state = StateIncrease
		// Additive increase proportional to the gap, in the paper's units
		// (microseconds and packets): alpha*gap_us/cwnd_pkts packets per
		// ACK. No step when the smoothed RTT is above target.
		if gap := tgt - s.srtt; gap > 0 {
			m := float64(s.mss)
			s.cwnd += s.cfg.Alpha * (float64(gap) / float64(sim.Microsecond)) * m * m / s.cwnd
			s.clamp()
		}
	case !s.canDecrease(now):
	case d > 2*tgt && s.bdp > 0:
		s.state = StateFastDecrease
		s.decreaseTo(now, float64(s.bdp))
	default:
		s.state = StateDecrease
		f := max(1-s.cfg.Beta*float64(d-tgt)/float64(d), 1-s.cfg.MaxMDF)
		s.decreaseTo(now, s.cwnd*f)
	}
}

// OnCongestion implements Controller.OnCongestion. Losses that NACKs
// reveal only cause retransmissions: the window is delay-driven (htsim's
// master cuts after 3 duplicate ACKs, PR #4 never does; with spraying most
// holes are reordering). A timeout cuts by MaxMDF once
// per RTT, and RTXResetThreshold timeouts in a row reset the window (htsim
// doNextEvent). ECN does not change the window.
func (s *Strack) OnCongestion(ev *CongestionEvent) {
	switch ev.Kind {
	case CongRTO:
		s.timeouts++
		if s.timeouts >= s.cfg.RTXResetThreshold {
			s.decreaseTo(ev.Now, float64(s.cfg.MinCwnd))
		} else if s.canDecrease(ev.Now) {
			s.decreaseTo(ev.Now, s.cwnd*(1-s.cfg.MaxMDF))
		}
	case CongLoss, CongECN:
		// NACK-found losses only retransmit and ECN steers paths
		// (decisions.md, STrack): the window stays.
	}
}

// OnRecoveryExit implements Controller.OnRecoveryExit (no deflation: the
// window is delay-driven).
func (s *Strack) OnRecoveryExit(now sim.Time) {}

// Cwnd implements Controller.Cwnd.
func (s *Strack) Cwnd() int64 { return int64(s.cwnd) }

// Ssthresh implements Controller.Ssthresh: STrack has no slow start.
func (s *Strack) Ssthresh() int64 { return 0 }

// State implements Observer.
func (s *Strack) State() CongState { return s.state }

func strackCheck(c StrackConfig) error {
	if c.Variant != "" && c.Variant != "htsim-pr4" {
		return fmt.Errorf("strack.variant: unknown %q (known: htsim-pr4)", c.Variant)
	}
	if c.Alpha <= 0 || c.Beta <= 0 || c.MaxMDF <= 0 || c.MaxMDF >= 1 {
		return fmt.Errorf("strack: need alpha > 0, beta > 0 and 0 < max_mdf < 1")
	}
	if c.MinCwnd <= 0 || c.MaxCwnd < c.MinCwnd {
		return fmt.Errorf("strack: need 0 < min_cwnd <= max_cwnd")
	}
	return nil
}

// SetHops sets the flow's path length, which scales the target RTT.
func (s *Strack) SetHops(h int) { s.cfg.Hops = h }

// OnSent implements Recovery.OnSent.
func (r *StrackRecovery) OnSent(now sim.Time, seg Segment, _ RTTInfo) SeqState {
	r.onSent(now, seg)
	return r.State()
}

// OnAck implements Recovery.OnAck.
func (r *StrackRecovery) OnAck(ai *AckInfo) AckVerdict {
	v := r.onAck(ai)
	v.SeqState = r.State()
	return v
}

// OnRTO implements Recovery.OnRTO.
func (r *StrackRecovery) OnRTO(now sim.Time, _ RTTInfo) SeqState {
	r.onRTO(now)
	return r.State()
}

// State implements Recovery.State.
func (r *StrackRecovery) State() SeqState { return r.state(r.Pipe(), r.inRecovery, sim.Never) }

// PerPacketAcks implements PerPacketAcker: STrack's receiver answers every
// packet, echoing its entropy and CE (STrack paper §3).
func (s *Strack) PerPacketAcks() {}

// DefaultPaths implements PathSteerer: htsim's ECMP_FIB_ECN skipping.
func (s *Strack) DefaultPaths() string { return "skip" }

// RequiredRecovery implements RecoveryRequirer.
func (s *Strack) RequiredRecovery() string { return "strack" }

var (
	_ HopAware    = (*Strack)(nil)
	_ PathSteerer = (*Strack)(nil)
)
