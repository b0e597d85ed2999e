package cc

import "github.com/lockstep-sim/lockstep/sim"

// SackRecovery is the conservative SACK-based loss recovery of RFC 6675.
// Names in comments are the RFC's (§2): HighACK is SndUna-1, HighData is
// HighSent-1, HighRxt, RescueRxt, RecoveryPoint, DupAcks, DupThresh.
// Sequence variables are kept as exclusive ends (the RFC's value plus
// one), so "S2 > HighRxt" reads s2 >= highRxt here.
//
//   - Every ACK updates the scoreboard (§4 Update(), see Scoreboard).
//   - A duplicate ACK is one whose SACK blocks cover octets between HighACK
//     and HighData not SACKed before (§2), whatever else it does; a
//     cumulative ACK resets DupAcks (§5).
//   - Outside recovery, on a duplicate ACK DupAcks grows; recovery starts
//     when DupAcks >= DupThresh or IsLost(HighACK+1) (§5 (1), (2)), else
//     limited transmit sends new data as the pipe allows (§5 (3)): the
//     host's pipe < cwnd check with Pipe() = SetPipe() is exactly (3.2)-(3.3).
//   - Entering recovery (§5 (4)): RecoveryPoint = HighData; the segment at
//     HighACK+1 is retransmitted even if the window is full
//     (Segment.Force); HighRxt and RescueRxt become its last octet. The
//     Controller sets cwnd = ssthresh = FlightSize/2 (4.2).
//   - In recovery (§5 (B)-(C)), Next() is NextSeg() (§4) rules (1)-(4), the
//     host sends while cwnd - pipe allows; HighRxt follows the
//     retransmissions except the rescue (C.2).
//   - Recovery ends when the cumulative ACK reaches RecoveryPoint (§5 (A));
//     the scoreboard above it is kept.
//   - Rule (4), the rescue retransmission, is implemented: once per
//     recovery, when nothing else can be sent and HighACK > RescueRxt, the
//     highest outstanding unSACKed segment is resent and RescueRxt =
//     RecoveryPoint.
//   - RTO (§5.1): RecoveryPoint = HighData and recovery ends; no new
//     recovery starts until HighACK >= RecoveryPoint. The SACK information
//     is expunged (RFC 2018 §8's SHOULD, which RFC 6675 §5.1 leaves in
//     force) and sending restarts at SndUna (go-back-N), skipping segments
//     SACKed after the timeout (§5.1: use the SACK information that arrives
//     during the recovery that follows an RTO).
//
// Pipe (§4 SetPipe()): for each unSACKed outstanding segment, its bytes
// once if !IsLost() and once more if it was retransmitted in this
// recovery. The RFC tests "S1 <= HighRxt" for the second term; we keep a
// per-segment bit set by each retransmission counted in the pipe. The two
// agree: NextSeg rule (1) picks the smallest lost unSACKed segment above
// HighRxt, and IsLost is monotone (a segment below a lost one has at least
// as many SACKed segments above it), so every unSACKed segment it steps
// over is SACKed; rule (3) picks the smallest unSACKed one; so every
// unSACKed segment in (HighACK, HighRxt] has been retransmitted in this
// recovery, and every retransmission but the rescue raises HighRxt past
// it. The rescue sets no bit, as it does not move HighRxt. The bits are
// cleared when a recovery starts or ends (HighRxt = HighACK again, §5
// (3.1)). scoreboard_test.go checks Pipe, IsLost and NextSeg against an
// octet-by-octet reading of §4 on random ACK sequences.
//
// After an RTO, outside recovery, RFC 6675 defines no pipe. The go-back-N
// retransmissions set the bit and the segments not yet resent carry a lost
// mark, so the pipe counts exactly the data resent since the timeout
// (RFC 5681 §3.1's FlightSize after go-back-N).
//
// Deviations: the RecoveryPoint fence of §5.1 is set by every RTO, not
// only by one during recovery (the expunged scoreboard would otherwise
// count the receiver's re-reported blocks as duplicate ACKs and start a
// second reduction, which RFC 6582 §3.2 step 6 avoids the same way). An
// ACK without new SACK information is never a duplicate here, whatever
// AckInfo.DupCandidate says: without a SACKing receiver only the RTO
// recovers. A recovery that ends and one that starts on the same ACK are
// reported as the start alone.
type SackRecovery struct {
	SeqSpace
	sb        Scoreboard
	dupThresh int
	dupAcks   int
	ltBytes   int64 // new data sent by limited transmit since the last new ACK

	inRecovery    bool
	recoveryPoint uint64 // RecoveryPoint+1; also the §5.1 fence after an RTO
	highRxt       uint64 // HighRxt+1
	rescueRxt     uint64 // RescueRxt+1
	rescueSet     bool   // RescueRxt is defined
	fastRetx      bool   // the retransmission of §5 (4.3) is due
	rescueNext    bool   // Next returned the rescue retransmission of rule (4)
	rescueSeq     uint64 // its first byte
	lostBelow     uint64 // IsLost() holds for unSACKed segments below this one
}

var _ Recovery = (*SackRecovery)(nil)

// NewSackRecovery returns the RFC 6675 recovery for a flow of size bytes,
// with segments of mss bytes and the duplicate threshold dupThresh (3).
func NewSackRecovery(mss int64, size uint64, dupThresh int) *SackRecovery {
	r := &SackRecovery{SeqSpace: SeqSpace{MSS: mss, End: size}, dupThresh: dupThresh}
	r.sb.init(mss, size)
	return r
}

// onSent is OnSent's work.
func (r *SackRecovery) onSent(now sim.Time, seg Segment) {
	i := r.sb.segOf(seg.Seq)
	retx := seg.Seq < r.HighSent
	rescue := retx && r.rescueNext && seg.Seq == r.rescueSeq
	r.rescueNext = false
	r.sb.onSend(i, now, retx, !rescue)
	if retx {
		end := seg.Seq + uint64(seg.Len)
		switch {
		case r.fastRetx && i == r.sb.base:
			// §5 (4.3): HighRxt = RescueRxt = the last octet resent.
			r.fastRetx = false
			r.highRxt = max(r.highRxt, end)
			r.rescueRxt, r.rescueSet = end, true
		case rescue:
			// §4 rule (4): RescueRxt = RecoveryPoint; HighRxt unchanged.
			r.rescueRxt, r.rescueSet = r.recoveryPoint, true
		case r.inRecovery:
			// §5 (C.2).
			r.highRxt = max(r.highRxt, end)
		}
	}
	if !retx && r.dupAcks > 0 && !r.inRecovery {
		r.ltBytes += seg.Len // limited transmit (RFC 3042)
	}
	r.sent(seg)
	r.sb.skipSacked(&r.SeqSpace)
}

// onAck is OnAck's work.
func (r *SackRecovery) onAck(ai *AckInfo) AckVerdict {
	var v AckVerdict
	if ack := min(ai.Ack, r.HighSent); ack > r.Una {
		v.Acked = r.cumAck(ack) - r.sb.advance(ack)
		v.AdvancedUna = true
		r.dupAcks = 0 // §5: a cumulative ACK resets DupAcks
		r.ltBytes = 0
		if r.fastRetx && r.sb.base > r.sb.segOf(r.highRxt) {
			r.fastRetx = false // the segment to resend got acknowledged
		}
	}
	newly := r.sb.sack(ai.Sack, r.Una, r.HighSent)
	v.Acked += newly
	r.lostBelow = r.sb.dupThreshBound(r.dupThresh)
	r.sb.skipSacked(&r.SeqSpace)
	if r.inRecovery && r.Una >= r.recoveryPoint {
		// §5 (A): the end of loss recovery. Outside recovery HighRxt is
		// HighACK again (§5 (3.1)): no retransmission counts twice.
		r.inRecovery, r.fastRetx, r.rescueNext = false, false, false
		r.sb.clearRetx()
		v.ExitRecovery = true
	}
	if newly == 0 {
		return v
	}
	v.Dup = true // §2's duplicate acknowledgment
	if r.inRecovery {
		return v
	}
	r.dupAcks++
	// §5 (1), (2); §5.1: not before HighACK >= RecoveryPoint.
	if r.Una >= r.recoveryPoint && (r.dupAcks >= r.dupThresh || r.lostBelow > r.sb.base) {
		r.enterRecovery()
		v.EnterRecovery = true
		// §5 (4.2), RFC 5681 §3.2 step 2: limited-transmit data is not in
		// the FlightSize that sets ssthresh.
		v.LossFlightSize = r.FlightSize() - r.ltBytes
		// A recovery that ends and a new one that starts on the same ACK
		// are reported as the start only: the Controller's reduction
		// supersedes the deflation at the end.
		v.ExitRecovery = false
		return v
	}
	r.highRxt = r.Una // §5 (3.1)
	return v
}

// enterRecovery is §5 (4.1)-(4.3).
func (r *SackRecovery) enterRecovery() {
	r.inRecovery = true
	r.recoveryPoint = r.HighSent
	r.highRxt = r.Una
	r.rescueSet = false
	r.rescueNext = false
	r.sb.clearRetx()
	r.fastRetx = true
}

// onRTO is OnRTO's work (RFC 6675 §5.1, RFC 5681 §3.1).
func (r *SackRecovery) onRTO(now sim.Time) {
	r.recoveryPoint = r.HighSent
	r.inRecovery, r.fastRetx, r.rescueNext = false, false, false
	r.dupAcks = 0
	r.ltBytes = 0
	r.sb.expunge()
	r.sb.markAllLost()
	r.lostBelow = r.sb.base
	r.Nxt = r.Una
	r.highRxt = r.Una
}

// Next implements Recovery.Next: the fast retransmission, then, in
// recovery, NextSeg() of RFC 6675 §4.
func (r *SackRecovery) Next() (Segment, bool) {
	sb := &r.sb
	r.rescueNext = false
	if r.fastRetx {
		return sb.retxSegment(sb.base, r.Una, true), true
	}
	if !r.inRecovery {
		return sb.newSegment(&r.SeqSpace)
	}
	from := max(sb.base, sb.segCeil(r.highRxt)) // (1.a) S2 > HighRxt
	lim := min(sb.highSack, sb.top)             // (1.b) S2 below the highest SACKed octet
	// (1) The smallest unSACKed S2 with IsLost(S2).
	if i := sb.next(scanLost, from, lim, r.lostBelow); i < lim {
		return sb.retxSegment(i, r.Una, false), true
	}
	// (2) Previously unsent data.
	if seg, ok := sb.newSegment(&r.SeqSpace); ok {
		return seg, true
	}
	// (3) The smallest unSACKed S3 meeting (1.a) and (1.b).
	if i := sb.next(scanUnsacked, from, lim, 0); i < lim {
		return sb.retxSegment(i, r.Una, false), true
	}
	// (4) One rescue retransmission per recovery, of the segment holding
	// the highest outstanding unSACKed octet, when HighACK > RescueRxt.
	if !r.rescueSet || r.Una > r.rescueRxt {
		if i, ok := sb.prevUnsacked(sb.base, sb.top); ok {
			seg := sb.retxSegment(i, r.Una, false)
			r.rescueNext, r.rescueSeq = true, seg.Seq
			return seg, true
		}
	}
	return Segment{}, false
}

// Pipe implements Recovery.Pipe: RFC 6675 §4 SetPipe() in bytes.
func (r *SackRecovery) Pipe() int64 { return r.sb.pipe(r.Una, r.lostBelow) }

// InRecovery implements Recovery.InRecovery.
func (r *SackRecovery) InRecovery() bool { return r.inRecovery }

// Scoreboard gives read access to the SACK scoreboard (for traces/tests).
func (r *SackRecovery) Scoreboard() *Scoreboard { return &r.sb }

// IsLost is RFC 6675 IsLost(seq) with this recovery's DupThresh, or a
// segment marked lost by an RTO.
func (r *SackRecovery) IsLost(seq uint64) bool {
	i := r.sb.segOf(seq)
	return i >= r.sb.base && i < r.sb.top && !r.sb.bit(r.sb.sacked, i) &&
		(i < r.lostBelow || r.sb.bit(r.sb.lost, i))
}

// OnSent implements Recovery.OnSent.
func (r *SackRecovery) OnSent(now sim.Time, seg Segment, _ RTTInfo) SeqState {
	r.onSent(now, seg)
	return r.State()
}

// OnAck implements Recovery.OnAck.
func (r *SackRecovery) OnAck(ai *AckInfo) AckVerdict {
	v := r.onAck(ai)
	v.SeqState = r.State()
	return v
}

// OnRTO implements Recovery.OnRTO.
func (r *SackRecovery) OnRTO(now sim.Time, _ RTTInfo) SeqState {
	r.onRTO(now)
	return r.State()
}

// State implements Recovery.State.
func (r *SackRecovery) State() SeqState { return r.state(r.Pipe(), r.inRecovery, sim.Never) }

// NeedsSack implements SackUser.
func (r *SackRecovery) NeedsSack() {}
