package cc

import (
	"fmt"
	"slices"

	"github.com/lockstep-sim/lockstep/sim"
)

// RackConfig parameterises RackRecovery.
type RackConfig struct {
	// DupThresh: with no reordering seen, the reordering window is zero
	// once this many segments are SACKed (RFC 8985 §6.2 step 4, 3).
	DupThresh int
	// TLP enables the tail loss probe (RFC 8985 §7).
	TLP bool
	// ReoWndMult is the initial RACK.reo_wnd_mult (§6.2 step 4: 1).
	ReoWndMult int
	// ReoWndPersist is how many recoveries a grown multiplier survives
	// without a new D-SACK (§6.2 step 4: 16).
	ReoWndPersist int
	// DSACK enables the D-SACK-based growth of the reordering window
	// (§6.2 step 4; RECOMMENDED by §4, not required).
	DSACK bool
	// MaxAckDelay is TLP.max_ack_delay: the PTO grows by it when one
	// segment is in flight (§7.2, a MAY). Implementation specific; Linux
	// adds TCP_RTO_MIN (200 ms). Set it to the receiver's delayed-ACK
	// timeout, or 0 when the receiver acknowledges every segment.
	MaxAckDelay sim.Time
}

// Constants of RFC 8985.
const (
	rackReoWndPersist = 16                    // §6.2 step 4: RACK.reo_wnd_persist = 16
	tlpInitialPTO     = sim.Second            // §7.2: PTO without an SRTT
	tlpMaxAckDelay    = 200 * sim.Millisecond // Linux TCP_RTO_MIN, added for one segment in flight
)

// DefaultRackConfig is RFC 8985 with every RECOMMENDED part on.
func DefaultRackConfig() RackConfig {
	return RackConfig{DupThresh: 3, TLP: true, ReoWndMult: 1, ReoWndPersist: rackReoWndPersist,
		DSACK: true, MaxAckDelay: tlpMaxAckDelay}
}

// Validate checks the configuration.
func (c *RackConfig) Validate() error {
	switch {
	case c.DupThresh < 1:
		return fmt.Errorf("rack.dup_thresh: must be at least 1, got %d", c.DupThresh)
	case c.ReoWndMult < 1:
		return fmt.Errorf("rack.reo_wnd_mult: must be at least 1, got %d", c.ReoWndMult)
	case c.ReoWndPersist < 1:
		return fmt.Errorf("rack.reo_wnd_persist: must be at least 1, got %d", c.ReoWndPersist)
	case c.MaxAckDelay < 0:
		return fmt.Errorf("rack.max_ack_delay: must not be negative, got %v", c.MaxAckDelay)
	}
	return nil
}

// RackRecovery is RACK-TLP loss detection (RFC 8985) on the SACK
// scoreboard, with the recovery that RFC 8985 §9.2 asks for in place of
// RFC 6675's (which cannot resend a lost retransmission).
//
// RACK (§6):
//   - Every transmission records its time (Segment.xmit_ts, §6.1).
//   - On each ACK (§6.2): step 1 takes RACK.min_RTT from the host
//     (SetRTT); step 2 takes, among the segments newly ACKed or SACKed,
//     those whose RTT is trustworthy (a retransmitted segment is skipped
//     when the ACK's TSecr predates its last transmission or its RTT is
//     below RACK.min_RTT), sets RACK.rtt from the most recently sent of
//     them and advances RACK.xmit_ts/RACK.end_seq to it when it was sent
//     later (ties broken by end_seq); step 3 sets RACK.reordering_seen when
//     a never-retransmitted segment below RACK.fack is delivered; step 4
//     computes RACK.reo_wnd = min(reo_wnd_mult * min_RTT / 4, SRTT), or 0
//     when no reordering has been seen and the sender is in recovery or
//     DupThresh segments are SACKed; step 5 marks lost every unacknowledged
//     segment sent before RACK.xmit_ts whose xmit_ts + RACK.rtt + reo_wnd
//     has passed, and arms the reordering timer for the others.
//   - The D-SACK adaptation of step 4 is implemented (cfg.DSACK): a
//     D-SACK (RFC 2883: the first block below the cumulative ACK or inside
//     the second block) grows reo_wnd_mult once per round trip, and it
//     returns to its initial value after ReoWndPersist recoveries without
//     one.
//   - A segment marked lost and not yet resent is skipped by step 5 (the
//     RFC's xmit_ts = INFINITE_TS). Our scoreboard keeps its lost mark
//     while the retransmission is in flight; the RFC's Segment.lost is
//     "lost mark and no retransmission in flight".
//   - Fast recovery starts when a segment is marked lost (Linux
//     tcp_time_to_recover with RACK: lost_out > 0); RACK never counts
//     duplicate ACKs, its zero window after DupThresh SACKed segments has
//     the same effect (§6.2). RecoveryPoint = HighData, recovery ends when
//     the cumulative ACK reaches it. The first lost segment is resent even
//     if the window is full (Segment.Force, as RFC 6675 §5 (4.3)); then
//     lost segments go first, lowest first, then new data.
//   - A lost retransmission (a retransmission sent in the current recovery
//     and marked lost) triggers an additional congestion response, once
//     per round (§9.3, "in the absence of PRR"): the verdict reports
//     EnterRecovery again and a new round (RecoveryPoint = HighData) starts.
//   - RTO (§6.3): the first unacknowledged segment is marked lost, and the
//     others only when RACK.rtt + reo_wnd has passed since they were sent.
//     This departs from the go-back-N of Recovery.OnRTO on purpose:
//     sending resumes with the lost segments, and SndNxt does not move
//     back. The first is resent at once even if segments still in flight
//     fill the window (RFC 6298 §5.4; Linux tcp_retransmit_timer). SACK
//     information is kept (Linux tcp_timeout_mark_lost; RFC 8985 is
//     silent). No fast recovery starts until the cumulative ACK reaches
//     the data sent before the RTO ("RTO recovery").
//
// TLP (§7):
//   - The PTO is armed after new data is sent (not a probe) and on an ACK
//     that advances SndUna, unless in fast or RTO recovery or with SACKed
//     segments outstanding (§7.2). PTO = 2*SRTT, plus MaxAckDelay when
//     FlightSize is one segment; 1 s without an SRTT; capped at the RTO's
//     expiry when the host reports it (RTTInfo.RTODeadline: on an ACK
//     that advances SndUna, the expiry as that ACK restarts it).
//   - When it fires (§7.3), if no probe is in flight (TLP.end_seq unset)
//     and an RTT sample arrived since the last probe, the next segment is
//     a probe that ignores cwnd (Force): new data if any, else the highest
//     segment sent. TLP.end_seq is cleared when the cumulative ACK passes
//     it and on entering fast or RTO recovery (§7.1).
//   - The TLP loss detection of §7.4 (a congestion response when the
//     probe repaired a single loss) is not implemented: the RFC lets a
//     sender skip it, and RACK detects the losses the probe reveals.
//   - RFC 8985 §7.3 says the sender re-arms the RTO timer after a probe:
//     the RTO belongs to the host, which re-arms it when the probe leaves.
//
// Deadline() is the earlier of the reordering timer and the PTO.
type RackRecovery struct {
	SeqSpace
	cfg RackConfig
	sb  Scoreboard

	// From the host.
	srtt, minRTT sim.Time
	tsecr        sim.Time // TSecr of the ACK being processed; 0 if unknown
	rtoAt        sim.Time // the RTO's expiry; Never if unknown

	// RACK (§5.2).
	xmitTS         sim.Time // RACK.xmit_ts
	endSeq         uint64   // RACK.end_seq
	rackValid      bool     // RACK.segment is set
	rtt            sim.Time // RACK.rtt
	fack           uint64   // RACK.fack
	reorderingSeen bool     // RACK.reordering_seen
	reoWnd         sim.Time // RACK.reo_wnd
	reoWndMult     int      // RACK.reo_wnd_mult
	reoWndPersist  int      // RACK.reo_wnd_persist
	dsackRound     uint64   // RACK.dsack_round
	dsackRoundSet  bool
	reoAt          sim.Time // the reordering timer; Never if not armed

	// Recovery.
	inRecovery    bool
	recoveryPoint uint64   // RecoveryPoint+1 of the current round
	roundStart    sim.Time // when the current round of fast recovery began
	rtoRecovery   bool
	rtoPoint      uint64 // HighData+1 at the RTO
	fastRetx      bool   // the first retransmission of a round is due

	// TLP (§5.3).
	tlpEnd     uint64 // TLP.end_seq
	tlpSet     bool
	tlpRetrans bool // TLP.is_retrans
	ptoAt      sim.Time
	probeNext  bool // the PTO fired: the next segment is a probe
	rttSampled bool // an RTT sample since the last probe (§7.3 condition 2)

	// Scratch for the samples of one ACK.
	bestTS   sim.Time
	bestEnd  uint64
	bestSeen bool
}

var _ TimedRecovery = (*RackRecovery)(nil)

// NewRackRecovery returns RACK-TLP for a flow of size bytes with segments
// of mss bytes. A cfg field left at zero takes its default, except TLP
// and DSACK (booleans: take cfg from DefaultRackConfig to enable them).
func NewRackRecovery(mss int64, size uint64, cfg RackConfig) *RackRecovery {
	d := DefaultRackConfig()
	if cfg.DupThresh <= 0 {
		cfg.DupThresh = d.DupThresh
	}
	if cfg.ReoWndMult <= 0 {
		cfg.ReoWndMult = d.ReoWndMult
	}
	if cfg.ReoWndPersist <= 0 {
		cfg.ReoWndPersist = d.ReoWndPersist
	}
	cfg.MaxAckDelay = max(cfg.MaxAckDelay, 0)
	r := &RackRecovery{SeqSpace: SeqSpace{MSS: mss, End: size}, cfg: cfg,
		reoWndMult: cfg.ReoWndMult, reoAt: sim.Never, ptoAt: sim.Never, rtoAt: sim.Never}
	r.sb.init(mss, size)
	r.sb.collect = true
	return r
}

// setRTT takes the sender's timing that comes with every event: SRTT and
// min_RTT (§6.2 step 4's reordering window) and the RTO deadline (TLP
// caps its probe timer at it, §7.2; 0 means none).
func (r *RackRecovery) setRTT(t RTTInfo) {
	r.srtt, r.minRTT, r.rtoAt = t.SRTT, t.MinRTT, t.RTODeadline
	if r.rtoAt == 0 {
		r.rtoAt = sim.Never
	}
}

// sentAfter is RACK_sent_after (§6.2): (t1, seq1) was sent after (t2, seq2).
func sentAfter(t1 sim.Time, seq1 uint64, t2 sim.Time, seq2 uint64) bool {
	return t1 > t2 || (t1 == t2 && seq1 > seq2)
}

// onSent is OnSent's work.
func (r *RackRecovery) onSent(now sim.Time, seg Segment) {
	i := r.sb.segOf(seg.Seq)
	retx := seg.Seq < r.HighSent
	probe := r.probeNext
	r.probeNext = false
	r.sb.onSend(i, now, retx, true)
	if retx {
		r.fastRetx = false
	}
	r.sent(seg)
	switch {
	case probe:
		// §7.3: remember the probe; no new probe until it is acknowledged
		// and an RTT sample has arrived.
		r.tlpEnd, r.tlpSet, r.tlpRetrans = r.HighSent, true, retx
		r.rttSampled = false
		r.ptoAt = sim.Never
	case !retx:
		r.armPTO(now) // §7.2: after new data that is not a probe
	}
}

// isDSACK reports whether the ACK starts with a D-SACK block (RFC 2883 §4).
func isDSACK(ai *AckInfo) bool {
	if len(ai.Sack) == 0 {
		return false
	}
	b := ai.Sack[0]
	if b.Start < ai.Ack {
		return true
	}
	return len(ai.Sack) > 1 && b.Start >= ai.Sack[1].Start && b.End <= ai.Sack[1].End
}

// deliver is §6.2 steps 2 and 3 for segment i, newly ACKed or SACKed.
// Callers go in ascending order of end_seq.
func (r *RackRecovery) deliver(i uint64, now sim.Time) {
	sb := &r.sb
	end := sb.segEnd(i)
	ts := sb.xmitAt(i)
	retransmitted := sb.bit(sb.ever, i)
	// Step 3.
	if end > r.fack {
		r.fack = end
	} else if end < r.fack && !retransmitted {
		r.reorderingSeen = true
	}
	// Step 2.
	if retransmitted {
		if r.tsecr > 0 && r.tsecr < ts {
			return // the ACK answers an earlier transmission
		}
		if now-ts < r.minRTT {
			return // too soon to be for the last retransmission
		}
	}
	if !r.bestSeen || sentAfter(ts, end, r.bestTS, r.bestEnd) {
		r.bestTS, r.bestEnd, r.bestSeen = ts, end, true
	}
}

// onAck is OnAck's work.
func (r *RackRecovery) onAck(ai *AckInfo) AckVerdict {
	var v AckVerdict
	now := ai.Now
	sb := &r.sb
	r.bestSeen = false
	dsack := isDSACK(ai)
	if ack := min(ai.Ack, r.HighSent); ack > r.Una {
		nb := min(sb.segAfter(ack), sb.top)
		for i := sb.next(scanUnsacked, sb.base, nb, 0); i < nb; i = sb.next(scanUnsacked, i+1, nb, 0) {
			r.deliver(i, now)
		}
		v.Acked = r.cumAck(ack) - sb.advance(ack)
		v.AdvancedUna = true
	}
	newly := sb.sack(ai.Sack, r.Una, r.HighSent)
	v.Acked += newly
	v.Dup = newly > 0
	slices.Sort(sb.newly)
	for _, i := range sb.newly {
		r.deliver(i, now)
	}
	if r.bestSeen {
		// Step 2: RACK.rtt from the most recently sent segment delivered.
		r.rtt = now - r.bestTS
		r.rttSampled = true
		if !r.rackValid || sentAfter(r.bestTS, r.bestEnd, r.xmitTS, r.endSeq) {
			r.xmitTS, r.endSeq, r.rackValid = r.bestTS, r.bestEnd, true
		}
	}
	exiting := false
	if r.inRecovery && r.Una >= r.recoveryPoint {
		r.inRecovery, r.fastRetx = false, false
		v.ExitRecovery = true
		exiting = true
	}
	if r.rtoRecovery && r.Una >= r.rtoPoint {
		r.rtoRecovery = false
		exiting = true
	}
	// Step 4, D-SACK part.
	if r.dsackRoundSet && r.Una >= r.dsackRound {
		r.dsackRoundSet = false
	}
	switch {
	case r.cfg.DSACK && !r.dsackRoundSet && dsack:
		r.dsackRound, r.dsackRoundSet = r.Nxt, true
		r.reoWndMult++
		r.reoWndPersist = r.cfg.ReoWndPersist
	case exiting:
		r.reoWndPersist--
		if r.reoWndPersist <= 0 {
			r.reoWndMult = r.cfg.ReoWndMult
		}
	}
	// §7.4 (in part): the probe is acknowledged.
	if r.tlpSet && r.Una >= r.tlpEnd {
		r.tlpSet = false
	}
	v = r.react(now, r.detectLoss(now), v)
	if v.AdvancedUna {
		r.armPTO(now) // §7.2: on an ACK that advances SndUna
	}
	if r.FlightSize() == 0 {
		r.ptoAt, r.reoAt = sim.Never, sim.Never
	}
	return v
}

// reoWindow is RACK_update_reo_wnd() without the D-SACK part (§6.2 step 4).
func (r *RackRecovery) reoWindow() sim.Time {
	if !r.reorderingSeen {
		if r.inRecovery || r.rtoRecovery {
			return 0
		}
		if r.sb.nSacked >= r.cfg.DupThresh {
			return 0
		}
	}
	return min(sim.Time(r.reoWndMult)*r.minRTT/4, r.srtt)
}

// markLost marks segment i lost; it reports whether a retransmission of
// it sent in the current round of fast recovery was lost.
func (r *RackRecovery) markLost(i uint64) (lostRetx bool) {
	sb := &r.sb
	lostRetx = r.inRecovery && sb.bit(sb.retx, i) && sb.xmitAt(i) >= r.roundStart
	sb.setBit(sb.lost, i)
	sb.clearBit(sb.retx, i)
	return lostRetx
}

// detectLoss is RACK_detect_loss_and_arm_timer() (§6.2 step 5). It
// reports whether a retransmission of the current round was marked lost.
func (r *RackRecovery) detectLoss(now sim.Time) (lostRetx bool) {
	r.reoAt = sim.Never
	if !r.rackValid {
		return false
	}
	r.reoWnd = r.reoWindow()
	sb := &r.sb
	var timeout sim.Time
	check := func(i uint64) bool {
		ts := sb.xmitAt(i)
		if !sentAfter(r.xmitTS, r.endSeq, ts, sb.segEnd(i)) {
			return false
		}
		if remaining := ts + r.rtt + r.reoWnd - now; remaining <= 0 {
			lostRetx = r.markLost(i) || lostRetx
		} else {
			timeout = max(timeout, remaining)
		}
		return true
	}
	// Segments never retransmitted were sent in sequence order, so their
	// xmit_ts grows with the sequence: stop at the first one not sent
	// before RACK.xmit_ts.
	for i := sb.next(scanFresh, sb.base, sb.top, 0); i < sb.top; i = sb.next(scanFresh, i+1, sb.top, 0) {
		if !check(i) {
			break
		}
	}
	// Retransmitted segments in flight, in any order of time.
	for i := sb.next(scanRetxLive, sb.base, sb.top, 0); i < sb.top; i = sb.next(scanRetxLive, i+1, sb.top, 0) {
		check(i)
	}
	if timeout > 0 {
		r.reoAt = now + timeout
	}
	return lostRetx
}

// react starts fast recovery, or a new round of it, after losses.
func (r *RackRecovery) react(now sim.Time, lostRetx bool, v AckVerdict) AckVerdict {
	switch {
	case r.rtoRecovery:
	case !r.inRecovery && r.sb.next(scanLostPending, r.sb.base, r.sb.top, 0) < r.sb.top:
		r.startRound(now)
		v.EnterRecovery, v.ExitRecovery = true, false
	case r.inRecovery && lostRetx:
		// §9.3: a lost retransmission calls for another reduction.
		r.startRound(now)
		v.EnterRecovery = true
	}
	return v
}

// startRound begins fast recovery, or a new round of it.
func (r *RackRecovery) startRound(now sim.Time) {
	r.inRecovery = true
	r.recoveryPoint = r.HighSent
	r.roundStart = now
	r.fastRetx = true
	r.resetTLP() // §7.1
}

func (r *RackRecovery) resetTLP() {
	r.tlpSet, r.probeNext = false, false
	r.ptoAt = sim.Never
}

// armPTO is §7.2: schedule a loss probe, or cancel it where none may be
// scheduled.
func (r *RackRecovery) armPTO(now sim.Time) {
	r.ptoAt = sim.Never
	if !r.cfg.TLP || r.inRecovery || r.rtoRecovery || r.sb.nSacked != 0 || r.FlightSize() == 0 {
		return
	}
	// TLP_calc_PTO().
	pto := tlpInitialPTO
	if r.srtt > 0 {
		pto = 2 * r.srtt
		if r.FlightSize() <= r.MSS {
			pto += r.cfg.MaxAckDelay
		}
	}
	if r.rtoAt != sim.Never && now+pto > r.rtoAt {
		pto = max(r.rtoAt-now, 0)
	}
	r.ptoAt = now + pto
}

// onRTO is OnRTO's work with RACK's marking (§6.3).
func (r *RackRecovery) onRTO(now sim.Time) {
	r.inRecovery = false
	r.rtoRecovery, r.rtoPoint = true, r.HighSent
	r.resetTLP()
	r.reoAt = sim.Never
	r.reoWnd = r.reoWindow()
	sb := &r.sb
	first := sb.next(scanUnsacked, sb.base, sb.top, 0)
	if first < sb.top {
		r.markLost(first)
		// RFC 6298 §5.4: the earliest unacknowledged segment is resent
		// now, whatever the pipe (segments not marked lost stay in it).
		r.fastRetx = true
	}
	for i := sb.next(scanUnsacked, first+1, sb.top, 0); i < sb.top; i = sb.next(scanUnsacked, i+1, sb.top, 0) {
		if sb.bit(sb.lost, i) && !sb.bit(sb.retx, i) {
			continue // already waiting for its retransmission
		}
		if now-sb.xmitAt(i) >= r.rtt+r.reoWnd {
			r.markLost(i)
		}
	}
}

// OnDeadline implements TimedRecovery.OnDeadline: OnDeadlineVerdict with
// the sender's timing.
func (r *RackRecovery) OnDeadline(now sim.Time, rtt RTTInfo) AckVerdict {
	r.setRTT(rtt)
	v := r.OnDeadlineVerdict(now)
	v.SeqState = r.State()
	return v
}

// OnDeadlineVerdict runs the timers due at now: the reordering timer
// (RACK_detect_loss_and_arm_timer, §6.2 step 5) and the PTO (§7.3). Its
// verdict has EnterRecovery set when fast recovery starts, so the host can
// reduce cwnd (CongLoss) before sending.
func (r *RackRecovery) OnDeadlineVerdict(now sim.Time) AckVerdict {
	var v AckVerdict
	if r.reoAt <= now {
		v = r.react(now, r.detectLoss(now), v)
	}
	if r.ptoAt <= now {
		r.ptoAt = sim.Never
		// §7.3 conditions 1 and 2.
		if r.cfg.TLP && !r.tlpSet && r.rttSampled && !r.inRecovery && !r.rtoRecovery && r.FlightSize() > 0 {
			r.probeNext = true
		}
	}
	return v
}

// Deadline is when the next timer expires (SeqState.Deadline).
func (r *RackRecovery) Deadline() sim.Time { return min(r.reoAt, r.ptoAt) }

// Next implements Recovery.Next: a pending loss probe; then lost segments,
// lowest first (the first of a round forced); then new data.
func (r *RackRecovery) Next() (Segment, bool) {
	sb := &r.sb
	if r.probeNext {
		// §7.3: new data if there is some, else the highest segment sent.
		if seg, ok := sb.newSegment(&r.SeqSpace); ok {
			seg.Force = true
			return seg, true
		}
		if sb.top > sb.base {
			return sb.retxSegment(sb.top-1, r.Una, true), true
		}
	}
	if i := sb.next(scanLostPending, sb.base, sb.top, 0); i < sb.top {
		return sb.retxSegment(i, r.Una, r.fastRetx), true
	}
	return sb.newSegment(&r.SeqSpace)
}

// Pipe implements Recovery.Pipe: RFC 6675 SetPipe() with RACK's lost
// marks in place of IsLost() (RFC 8985 §9.2).
func (r *RackRecovery) Pipe() int64 { return r.sb.pipe(r.Una, r.sb.base) }

// InRecovery implements Recovery.InRecovery (fast recovery only; RTO
// recovery lets the window grow in slow start).
func (r *RackRecovery) InRecovery() bool { return r.inRecovery }

// IsLost reports whether the segment holding seq is marked lost and
// waiting for its retransmission.
func (r *RackRecovery) IsLost(seq uint64) bool {
	sb := &r.sb
	i := sb.segOf(seq)
	return i >= sb.base && i < sb.top && sb.bit(sb.lost, i) && !sb.bit(sb.retx, i) && !sb.bit(sb.sacked, i)
}

// ReoWnd is RACK.reo_wnd as last computed.
func (r *RackRecovery) ReoWnd() sim.Time { return r.reoWnd }

// Scoreboard gives read access to the SACK scoreboard (for traces/tests).
func (r *RackRecovery) Scoreboard() *Scoreboard { return &r.sb }

// OnSent implements Recovery.OnSent.
func (r *RackRecovery) OnSent(now sim.Time, seg Segment, rtt RTTInfo) SeqState {
	r.setRTT(rtt)
	r.onSent(now, seg)
	return r.State()
}

// OnAck implements Recovery.OnAck.
func (r *RackRecovery) OnAck(ai *AckInfo) AckVerdict {
	r.setRTT(ai.RTTInfo)
	r.tsecr = ai.TSecr
	v := r.onAck(ai)
	v.SeqState = r.State()
	return v
}

// OnRTO implements Recovery.OnRTO.
func (r *RackRecovery) OnRTO(now sim.Time, rtt RTTInfo) SeqState {
	r.setRTT(rtt)
	r.onRTO(now)
	return r.State()
}

// State implements Recovery.State.
func (r *RackRecovery) State() SeqState { return r.state(r.Pipe(), r.inRecovery, r.Deadline()) }

// NeedsSack implements SackUser: RACK reads SACK blocks (RFC 8985 §6.2).
func (r *RackRecovery) NeedsSack() {}
