package cc

import "github.com/lockstep-sim/lockstep/sim"

// NewRenoLossRecovery is loss recovery with cumulative ACKs and NewReno's
// response to partial acknowledgments (RFC 6582 §3.2):
//
//   - A duplicate ACK is as in RenoRecovery (RFC 5681 §2). The first
//     DupThresh-1 of them let new data out (limited transmit, RFC 3042).
//   - Step 1: on the DupThresh-th duplicate, fast retransmit only if the
//     cumulative ACK covers more than `recover`, then set `recover` to the
//     highest sequence number sent. After an RTO `recover` is the highest
//     sequence number sent before the timeout (step 6), so the duplicates
//     that the go-back-N retransmissions provoke do not start a second
//     fast retransmit (the "basic" check; the ACK and timestamp heuristics
//     of §4 are not implemented).
//   - Steps 2-4 as in RFC 5681: the segment at SndUna is resent even if the
//     window is full (Segment.Force); each further duplicate inflates the
//     window by one SMSS.
//   - Step 5, full ACK (covers `recover`): fast recovery ends; the
//     Controller deflates cwnd to ssthresh (option (2) of the step).
//   - Step 5, partial ACK (new data but not up to `recover`): retransmit
//     the first unacknowledged segment at once (Force), deflate the window
//     by the bytes acknowledged and add back one SMSS if at least one SMSS
//     was acknowledged; stay in fast recovery.
//
// Timer: RFC 6582 §3.2 step 5 resets the retransmit timer on the first
// partial ACK only ("Impatient" in §4). The host resets it on every ACK
// that advances SndUna (RFC 6298 §5.3), which is the "Slow-but-Steady"
// variant §4 also allows; the Impatient variant is not implemented.
//
// Window inflation on the pipe side. RFC 5681/6582 send while
// FlightSize + len <= cwnd_rfc, where during fast recovery
// cwnd_rfc = ssthresh + I and I is the inflation: 3*SMSS on entry
// (RFC 5681 §3.2 step 2), +SMSS per further duplicate (step 4), and on a
// partial ACK of N bytes -N, +SMSS when N >= SMSS (RFC 6582 step 5). Our
// Controller keeps cwnd = ssthresh throughout fast recovery (it ignores
// ACKs while InRecovery and is only told of the start and the end), and
// we report Pipe() = FlightSize - I. Then
//
//	FlightSize + len <= cwnd_rfc
//	  <=> FlightSize + len <= ssthresh + I
//	  <=> (FlightSize - I) + len <= ssthresh
//	  <=> Pipe() + len <= cwnd,
//
// which is the host's send test: the two send exactly the same segments.
// On a full ACK, RFC 6582 sets cwnd = ssthresh (I = 0): the Controller's
// OnRecoveryExit does that and our I returns to 0. Before fast recovery,
// limited transmit is I = DupAcks*SMSS for the first DupThresh-1
// duplicates (RFC 3042: FlightSize <= cwnd + 2*SMSS). I may turn negative
// (a partial ACK of more data than the duplicates announced deflates
// cwnd_rfc below ssthresh, as the RFC intends); Pipe() then exceeds
// FlightSize. Pipe() is clamped at 0 for the pathological case
// I > FlightSize (duplicated ACKs), where the RFC would let
// cwnd_rfc - FlightSize > ssthresh bytes out.
type NewRenoLossRecovery struct {
	dupAckRecovery
	recover   uint64 // RFC 6582's recover, plus one (exclusive end); 0 = ISN
	inflation int64  // I above, in bytes
}

var _ Recovery = (*NewRenoLossRecovery)(nil)

// NewNewRenoRecovery returns the NewReno recovery state for a flow of size
// bytes. RFC 6582 §3.2 step 1: recover starts at the initial send sequence
// number, so the first three duplicates may always start fast retransmit.
func NewNewRenoRecovery(mss int64, size uint64, dupThresh int) *NewRenoLossRecovery {
	return &NewRenoLossRecovery{dupAckRecovery: dupAckRecovery{SeqSpace: SeqSpace{MSS: mss, End: size}, dupThresh: dupThresh}}
}

// onAck is OnAck's work.
func (r *NewRenoLossRecovery) onAck(ai *AckInfo) AckVerdict {
	var v AckVerdict
	if n := r.cumAck(ai.Ack); n > 0 {
		v.Acked = n
		v.AdvancedUna = true
		r.dupAcks = 0
		r.ltBytes = 0
		if !r.inRecovery {
			r.inflation = 0
			r.retxPending = false
			return v
		}
		if r.Una >= r.recover {
			// Step 5, full acknowledgment: exit fast recovery.
			r.inRecovery = false
			r.inflation = 0
			r.retxPending = false
			v.ExitRecovery = true
			return v
		}
		// Step 5, partial acknowledgment: retransmit the first unacknowledged
		// segment, deflate by the amount acknowledged, add back one SMSS if
		// at least one SMSS was acknowledged.
		r.retxPending = true
		r.inflation -= n
		if n >= r.MSS {
			r.inflation += r.MSS
		}
		return v
	}
	if !r.isDup(ai) {
		return v
	}
	r.dupAcks++
	v.Dup = true
	switch {
	case r.inRecovery:
		// RFC 5681 §3.2 step 4 (RFC 6582 step 3): inflate by one SMSS.
		r.inflation += r.MSS
	case r.dupAcks < r.dupThresh:
		// RFC 3042 limited transmit.
		r.inflation = int64(r.dupAcks) * r.MSS
	case r.dupAcks == r.dupThresh && r.Una >= r.recover:
		// Step 1: the cumulative ACK covers more than recover.
		r.recover = r.HighSent
		r.inRecovery = true
		r.retxPending = true
		// RFC 5681 §3.2 step 2: cwnd = ssthresh + 3*SMSS.
		r.inflation = int64(r.dupThresh) * r.MSS
		v.EnterRecovery = true
		// RFC 5681 §3.2 step 2 (via RFC 6582 §3.2 step 2): data sent by
		// limited transmit is not part of eq. 4's FlightSize.
		v.LossFlightSize = r.lossFlight()
	}
	// Otherwise step 1 refused fast retransmit (the duplicates belong to
	// data sent before an RTO): no inflation beyond limited transmit.
	return v
}

// onRTO is OnRTO's work: go-back-N, and RFC 6582 §3.2 step 6
// records the highest sequence number sent in recover.
func (r *NewRenoLossRecovery) onRTO(now sim.Time) {
	r.recover = r.HighSent
	r.inflation = 0
	r.goBackN()
}

// Pipe implements Recovery.Pipe: FlightSize less the RFC's window
// inflation (see the type's comment).
func (r *NewRenoLossRecovery) Pipe() int64 { return max(r.FlightSize()-r.inflation, 0) }

// InRecovery implements Recovery.InRecovery.
func (r *NewRenoLossRecovery) InRecovery() bool { return r.inRecovery }

// OnSent implements Recovery.OnSent.
func (r *NewRenoLossRecovery) OnSent(now sim.Time, seg Segment, _ RTTInfo) SeqState {
	r.onSent(now, seg)
	return r.State()
}

// OnAck implements Recovery.OnAck.
func (r *NewRenoLossRecovery) OnAck(ai *AckInfo) AckVerdict {
	v := r.onAck(ai)
	v.SeqState = r.State()
	return v
}

// OnRTO implements Recovery.OnRTO.
func (r *NewRenoLossRecovery) OnRTO(now sim.Time, _ RTTInfo) SeqState {
	r.onRTO(now)
	return r.State()
}

// State implements Recovery.State.
func (r *NewRenoLossRecovery) State() SeqState { return r.state(r.Pipe(), r.inRecovery, sim.Never) }
