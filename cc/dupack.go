package cc

import "github.com/lockstep-sim/lockstep/sim"

// dupAckRecovery is the state and the rules that the two cumulative-ACK
// recoveries, Reno (reno_recovery.go) and NewReno (newreno_recovery.go),
// share: the sequence space, RFC 5681 §2's duplicate-ACK count, the new
// data limited transmit (RFC 3042) sent since the last new ACK, and the
// fast retransmission of [SndUna, SndUna+SMSS) that is due. They differ
// in what a new ACK does during fast recovery and in how the window
// inflates; each keeps that in its own onAck.
type dupAckRecovery struct {
	SeqSpace
	dupThresh   int
	dupAcks     int
	inRecovery  bool
	retxPending bool  // the fast retransmission of [Una, Una+MSS) is due
	ltBytes     int64 // new data sent by limited transmit since the last new ACK
}

// onSent records seg: the due retransmission left, or new data left by
// limited transmit (RFC 3042: after duplicates, before fast recovery).
func (d *dupAckRecovery) onSent(_ sim.Time, seg Segment) {
	if d.retxPending && seg.Seq == d.Una {
		d.retxPending = false
	}
	if seg.Seq == d.Nxt && d.dupAcks > 0 && !d.inRecovery {
		d.ltBytes += seg.Len // limited transmit (RFC 3042)
	}
	d.sent(seg)
}

// isDup reports whether ai is a duplicate ACK (RFC 5681 §2): it
// acknowledges nothing new, carries no data or window update, and data is
// outstanding.
func (d *dupAckRecovery) isDup(ai *AckInfo) bool {
	return min(ai.Ack, d.HighSent) == d.Una && ai.DupCandidate && d.Una < d.Nxt
}

// lossFlight is eq. 4's FlightSize at the start of fast recovery: data
// sent by limited transmit is not part of it (RFC 5681 §3.2 step 2).
func (d *dupAckRecovery) lossFlight() int64 { return d.FlightSize() - d.ltBytes }

// goBackN is what an RTO does to the shared state: sending restarts at
// SndUna and the duplicate count, limited transmit and recovery end
// (RFC 5681 §3.1, RFC 6298 §5.4).
func (d *dupAckRecovery) goBackN() {
	d.Nxt = d.Una
	d.dupAcks = 0
	d.ltBytes = 0
	d.inRecovery = false
	d.retxPending = false
}

// Next implements Recovery.Next: the due fast retransmission, sent even
// if the window is full (RFC 5681 §3.2 step 2), else new data.
func (d *dupAckRecovery) Next() (Segment, bool) {
	if d.retxPending {
		n := min(int64(d.End-d.Una), d.MSS)
		return Segment{Seq: d.Una, Len: n, Retx: true, Force: true}, true
	}
	return d.nextNew()
}
