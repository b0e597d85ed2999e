package cc

import "github.com/lockstep-sim/lockstep/sim"

// RenoRecovery is loss recovery with cumulative ACKs only, as RFC 5681 §3.2
// describes it ("Reno"):
//
//   - an ACK that acknowledges nothing new, while data is outstanding, is a
//     duplicate (RFC 5681 §2);
//   - the DupThresh-th duplicate (3) triggers the fast retransmission of
//     the segment at SndUna (step 2), sent even if the window is full;
//   - every duplicate ACK means a segment has left the network, so it is
//     taken off the pipe estimate (this is step 4's window inflation, kept
//     on the pipe side; see Reno). The first two duplicates thus also let
//     new segments out (limited transmit, RFC 3042);
//   - the first ACK that acknowledges new data ends fast recovery (step 6),
//     even when it does not cover everything sent before the loss: this is
//     Reno's known weakness with several losses per window that NewReno
//     (RFC 6582) fixes.
//
// After an RTO, sending restarts at SndUna (go-back-N).
type RenoRecovery struct {
	dupAckRecovery
}

var _ Recovery = (*RenoRecovery)(nil)

// NewRenoRecovery returns the recovery state for a flow of size bytes.
func NewRenoRecovery(mss int64, size uint64, dupThresh int) *RenoRecovery {
	return &RenoRecovery{dupAckRecovery{SeqSpace: SeqSpace{MSS: mss, End: size}, dupThresh: dupThresh}}
}

// onAck is OnAck's work.
func (r *RenoRecovery) onAck(ai *AckInfo) AckVerdict {
	var v AckVerdict
	if n := r.cumAck(ai.Ack); n > 0 {
		v.Acked = n
		v.AdvancedUna = true
		r.dupAcks = 0
		r.ltBytes = 0
		r.retxPending = false
		if r.inRecovery {
			r.inRecovery = false
			v.ExitRecovery = true
		}
		return v
	}
	if !r.isDup(ai) {
		return v
	}
	r.dupAcks++
	v.Dup = true
	if !r.inRecovery && r.dupAcks == r.dupThresh {
		r.inRecovery = true
		r.retxPending = true
		v.EnterRecovery = true
		v.LossFlightSize = r.lossFlight() // RFC 5681 §3.2 step 2
	}
	return v
}

// onRTO is OnRTO's work.
func (r *RenoRecovery) onRTO(sim.Time) { r.goBackN() }

// Pipe implements Recovery.Pipe: FlightSize less one SMSS per duplicate ACK.
func (r *RenoRecovery) Pipe() int64 {
	return max(r.FlightSize()-int64(r.dupAcks)*r.MSS, 0)
}

// InRecovery implements Recovery.InRecovery.
func (r *RenoRecovery) InRecovery() bool { return r.inRecovery }

// OnSent implements Recovery.OnSent.
func (r *RenoRecovery) OnSent(now sim.Time, seg Segment, _ RTTInfo) SeqState {
	r.onSent(now, seg)
	return r.State()
}

// OnAck implements Recovery.OnAck.
func (r *RenoRecovery) OnAck(ai *AckInfo) AckVerdict {
	v := r.onAck(ai)
	v.SeqState = r.State()
	return v
}

// OnRTO implements Recovery.OnRTO.
func (r *RenoRecovery) OnRTO(now sim.Time, _ RTTInfo) SeqState {
	r.onRTO(now)
	return r.State()
}

// State implements Recovery.State.
func (r *RenoRecovery) State() SeqState { return r.state(r.Pipe(), r.inRecovery, sim.Never) }
