package cc

import (
	"fmt"
	"math/bits"

	"github.com/lockstep-sim/lockstep/sim"
)

// UETRecovery is the packet-level reliability of the UET transport (UEC
// 1.0's packet delivery sublayer, PDS, as uet-htsim's UecSrc runs it:
// processAck, handleCumulativeAck, handleAckno, processNack,
// rtxTimerExpired, sendRtxPacket). Packets carry sequence numbers (PSN =
// Seq/MSS here); the receiver acknowledges cumulatively and with a 64-bit
// SACK bitmap, names every trimmed packet in a NACK, and the sender:
//
//   - retransmits a NACKed packet (lowest PSN first, as htsim's rtx queue
//     is ordered), within the window;
//   - times every packet out on its own, RTO after it (last) started
//     serialising (OnSerialise; until the host reports it, after it was
//     handed over), and retransmits it (htsim's one timer on the earliest
//     send time, re-armed for the next earliest; htsim records a packet
//     when its NIC lets it send); the RTO is fixed, without back-off, as
//     htsim's _min_rto;
//   - infers no loss from holes in the SACK bitmap: with spraying, holes
//     are mostly reordering (htsim's SLEEK heuristic, which would, is off
//     by default and not modelled).
//
// The bitmap's first PSN is max(echoed PSN − 63, cumulative PSN + 1)
// (htsim UecSink::sackBitmapBase), so it covers the 64 packets up to the
// one that triggered the ACK. There are no recovery episodes: the
// controller (NSCC) reacts to each NACK and timeout itself.
//
// Invariant: pipe is the payload of segments sent (or resent) and neither
// acknowledged nor presumed lost.
type UETRecovery struct {
	SeqSpace
	rto   sim.Time
	segs  sim.Ring[uetSeg]  // segment Una/MSS onward, up to Nxt
	lost  []int64           // PSNs queued for retransmission, ascending
	sends sim.Ring[uetSend] // transmissions in send order (per-packet timers)
	pipe  int64
	// timedOut holds the entropies of the packets the last OnDeadline
	// declared lost.
	timedOut []uint16
	// Nacked counts packets a NACK took out of the flight, TimedOut those
	// a timer did, Retransmissions the packets resent.
	Nacked, TimedOut, Retransmissions uint64
}

// uetSeg is one packet's state.
type uetSeg struct {
	sentAt sim.Time
	acked  bool
	lost   bool // presumed lost, queued for retransmission
	ev     uint16
}

// uetSend is one transmission, for the per-packet timers: a packet's
// timer runs from its latest transmission, so older entries are stale.
type uetSend struct {
	at  sim.Time
	psn int64
}

var (
	_ Recovery     = (*UETRecovery)(nil)
	_ NackRecovery = (*UETRecovery)(nil)
	_ OwnTimeouts  = (*UETRecovery)(nil)
	_ PDSAcker     = (*UETRecovery)(nil)
	_ SendStamper  = (*UETRecovery)(nil)
)

// NewUETRecovery returns the recovery of a flow of size bytes whose
// packets time out rto after they leave.
func NewUETRecovery(mss int64, size uint64, rto sim.Time) (*UETRecovery, error) {
	if rto <= 0 {
		return nil, fmt.Errorf("recovery uet: needs a positive per-packet timeout (a fixed rto), got %v", rto)
	}
	return &UETRecovery{SeqSpace: SeqSpace{MSS: mss, End: size}, rto: rto}, nil
}

// at is packet psn's state, nil below Una or not sent yet.
func (r *UETRecovery) at(psn int64) *uetSeg {
	base := int64(r.Una / uint64(r.MSS))
	if psn < base || psn-base >= int64(r.segs.Len()) {
		return nil
	}
	return r.segs.At(int(psn - base))
}

// markAcked records that packet psn arrived, returning its payload if
// that is news.
func (r *UETRecovery) markAcked(psn int64) int64 {
	st := r.at(psn)
	if st == nil || st.acked {
		return 0
	}
	return r.ackSeg(st, psn)
}

// ackSeg is markAcked of packet psn, outstanding or lost, whose state is
// st.
func (r *UETRecovery) ackSeg(st *uetSeg, psn int64) int64 {
	st.acked = true
	n := r.pktLen(psn)
	if !st.lost {
		r.pipe -= n
	} // a queued retransmission leaves the queue lazily, in Next
	return n
}

// markLost takes packet psn (outstanding) out of the flight and queues it.
func (r *UETRecovery) markLost(st *uetSeg, psn int64) int64 {
	st.lost = true
	n := r.pktLen(psn)
	r.pipe -= n
	i := len(r.lost)
	for i > 0 && r.lost[i-1] > psn {
		i--
	}
	r.lost = append(r.lost, 0)
	copy(r.lost[i+1:], r.lost[i:])
	r.lost[i] = psn
	return n
}

// dropLost removes psn from the retransmission queue.
func (r *UETRecovery) dropLost(psn int64) {
	for i, p := range r.lost {
		if p == psn {
			r.lost = append(r.lost[:i], r.lost[i+1:]...)
			return
		}
	}
}

// prune drops stale transmissions from the front of the send log: the
// packet was acknowledged, presumed lost, or sent again since.
func (r *UETRecovery) prune() {
	for r.sends.Len() > 0 {
		f := r.sends.Front()
		if st := r.at(f.psn); st != nil && !st.acked && !st.lost && st.sentAt == f.at {
			return
		}
		r.sends.Pop()
	}
}

// deadline is when the earliest outstanding transmission times out.
func (r *UETRecovery) deadline() sim.Time {
	r.prune()
	if r.sends.Len() == 0 {
		return sim.Never
	}
	return r.sends.Front().at + r.rto
}

// OnSent implements Recovery.OnSent.
func (r *UETRecovery) OnSent(now sim.Time, seg Segment, _ RTTInfo) SeqState {
	psn := int64(seg.Seq / uint64(r.MSS))
	if seg.Seq == r.Nxt {
		r.segs.Push(uetSeg{sentAt: now, ev: seg.Entropy})
		r.sent(seg)
	} else {
		st := r.at(psn)
		if st == nil || st.acked {
			return r.State()
		}
		if st.lost {
			st.lost = false
			r.dropLost(psn)
		}
		st.sentAt, st.ev = now, seg.Entropy
		r.Retransmissions++
	}
	r.pipe += seg.Len
	r.sends.Push(uetSend{at: now, psn: psn})
	return r.State()
}

// OnSerialise implements SendStamper: packet seq's timer restarts now,
// when it starts serialising (a transmission the timers or a NACK already
// gave up on, or one acknowledged, is left alone).
func (r *UETRecovery) OnSerialise(now sim.Time, seq uint64) SeqState {
	psn := int64(seq / uint64(r.MSS))
	if st := r.at(psn); st != nil && !st.acked && !st.lost && st.sentAt < now {
		st.sentAt = now
		r.sends.Push(uetSend{at: now, psn: psn})
	}
	return r.State()
}

// OnAck implements Recovery.OnAck: the echoed packet, the SACK bitmap
// (handleAckno per set bit) and the cumulative ACK (handleCumulativeAck).
func (r *UETRecovery) OnAck(ai *AckInfo) AckVerdict {
	var v AckVerdict
	mss := uint64(r.MSS)
	if ai.EchoValid {
		psn := int64(ai.Echo / mss)
		v.Acked += r.markAcked(psn)
		if ai.Nack {
			// markAcked for each packet the bitmap names, with the
			// segments' base computed once (most of them repeat the
			// previous ACK's and are acknowledged already).
			base := max(psn-63, int64(ai.Ack/mss)+1)
			una := int64(r.Una / mss)
			n := int64(r.segs.Len())
			for b := ai.Bitmap; b != 0; b &= b - 1 {
				p := base + int64(bits.TrailingZeros64(b))
				if p < una || p-una >= n {
					continue
				}
				if st := r.segs.At(int(p - una)); !st.acked {
					v.Acked += r.ackSeg(st, p)
				}
			}
		}
	}
	if ack := min(ai.Ack, r.HighSent); ack > r.Una {
		for r.Una < ack {
			psn := int64(r.Una / mss)
			v.Acked += r.markAcked(psn)
			r.segs.Pop()
			r.Una = min(uint64(psn+1)*mss, r.End)
		}
		if r.Nxt < r.Una {
			r.Nxt = r.Una
		}
		v.AdvancedUna = true
	}
	v.SeqState = r.State()
	return v
}

// OnNack implements NackRecovery (processNack): an outstanding packet
// leaves the flight and waits for retransmission. A NACK for a packet
// already acknowledged or already queued changes nothing (htsim finds no
// send record then and returns).
func (r *UETRecovery) OnNack(now sim.Time, seq uint64) (int64, SeqState, bool) {
	psn := int64(seq / uint64(r.MSS))
	st := r.at(psn)
	if st == nil || st.acked || st.lost {
		return 0, r.State(), false
	}
	n := r.markLost(st, psn)
	r.Nacked++
	return n, r.State(), true
}

// OnDeadline implements TimedRecovery: every packet whose timer expired
// by now is presumed lost and queued (rtxTimerExpired, one packet per
// expiry, all due ones here). The verdict's TimedOut is their payload.
func (r *UETRecovery) OnDeadline(now sim.Time, _ RTTInfo) AckVerdict {
	var v AckVerdict
	r.timedOut = r.timedOut[:0]
	for {
		r.prune()
		if r.sends.Len() == 0 || r.sends.Front().at+r.rto > now {
			break
		}
		f := r.sends.Pop()
		st := r.at(f.psn)
		v.TimedOut += r.markLost(st, f.psn)
		r.timedOut = append(r.timedOut, st.ev)
		r.TimedOut++
	}
	v.SeqState = r.State()
	return v
}

// TimedOutEntropies implements TimedOutPaths.
func (r *UETRecovery) TimedOutEntropies() []uint16 { return r.timedOut }

// OnRTO implements Recovery.OnRTO. The endpoint arms no RTO for a
// recovery that owns its timeouts, so this is only the generic fallback:
// every outstanding packet is presumed lost.
func (r *UETRecovery) OnRTO(now sim.Time, _ RTTInfo) SeqState {
	base := int64(r.Una / uint64(r.MSS))
	for i := 0; i < r.segs.Len(); i++ {
		if st := r.segs.At(i); !st.acked && !st.lost {
			r.markLost(st, base+int64(i))
		}
	}
	return r.State()
}

// Next implements Recovery.Next: queued retransmissions first, lowest PSN
// first, then new data. Entries acknowledged meanwhile are dropped.
func (r *UETRecovery) Next() (Segment, bool) {
	for len(r.lost) > 0 {
		psn := r.lost[0]
		if st := r.at(psn); st != nil && !st.acked && st.lost {
			return Segment{Seq: uint64(psn) * uint64(r.MSS), Len: r.pktLen(psn), Retx: true}, true
		}
		r.lost = append(r.lost[:0], r.lost[1:]...)
	}
	return r.nextNew()
}

// State implements Recovery.State.
func (r *UETRecovery) State() SeqState { return r.state(r.pipe, false, r.deadline()) }

// Pipe is the payload in flight.
func (r *UETRecovery) Pipe() int64 { return r.pipe }

// InRecovery is always false: UET has no recovery episodes.
func (r *UETRecovery) InRecovery() bool { return false }

// Queued is the number of packets waiting for retransmission.
func (r *UETRecovery) Queued() int { return len(r.lost) }

// PDSAcks implements PDSAcker.
func (r *UETRecovery) PDSAcks() {}

// OwnsTimeouts implements OwnTimeouts.
func (r *UETRecovery) OwnsTimeouts() {}
