package cc

import "github.com/lockstep-sim/lockstep/sim"

// RoCERecovery is the loss recovery of a RoCEv2 reliable connection, in
// its two forms.
//
// Go-back-N (NakGoBackN), as RDMA NICs have done since InfiniBand's RC
// transport (IBTA spec vol. 1, §9.7.5.2.8, NAK "PSN sequence error"): the
// responder accepts packets in PSN order only; the first packet beyond
// the expected PSN makes it discard the packet and send one NAK carrying
// the expected PSN, and it sends no other NAK for that gap (later
// out-of-order packets are silently dropped) until the expected packet
// arrives. On the NAK the requester resends everything from that PSN on.
// A lost NAK or a lost resent packet is recovered by the timeout (the
// endpoint's RTO): go back to the oldest unacknowledged byte. This is
// also ns3-rdma's and HPCC's ns-3 model (RdmaHw::RecoverQueue: snd_nxt =
// snd_una on a NACK).
//
// Selective repeat (NakSelective), as IRN (Mittal et al., "Revisiting
// Network Support for RDMA", SIGCOMM 2018, §3.1) and the selective-repeat
// mode of recent NICs do: the responder keeps out-of-order packets and
// answers each with a NAK that carries the cumulative ACK and the
// sequence of the packet that triggered it (here a one-block SACK). The
// requester enters loss recovery on the first NAK, with the highest
// sequence sent as its recovery point; a packet is lost when a later one
// has been selectively acknowledged; it resends the lost packets, before
// new data, once each; it leaves recovery when the cumulative ACK passes
// the recovery point. A timeout resends every packet not selectively
// acknowledged below the highest sent.
//
// Sequence numbers are bytes (a PSN per MSS-sized segment); segments are
// MSS-aligned, so the scoreboard is one entry per segment.
//
// Invariant (SR): sacked holds one entry per segment sent and not
// cumulatively acknowledged, the first at sackBase (<= Una); sackedBytes
// is the payload of the entries set.
type RoCERecovery struct {
	SeqSpace
	mode       NakMode
	inRecovery bool
	recoverPt  uint64 // HighSent when the loss episode began
	nakAt      uint64 // GBN: the expected sequence of the NAK acted on

	// Selective repeat.
	sacked      sim.Ring[bool] // by segment from sackBase
	sackBase    uint64         // the first entry's segment
	sackedBytes int64
	lostBelow   uint64 // segments below this (not SACKed) are lost
	retxNext    uint64 // next byte to consider for a retransmission

	// NAKs counts the NAKs received; GoBacks the go-back-N restarts they
	// caused; SRResent the segments resent selectively.
	NAKs, GoBacks, SRResent uint64
}

var (
	_ Recovery    = (*RoCERecovery)(nil)
	_ NakRecovery = (*RoCERecovery)(nil)
)

// NewRoCERecovery returns the recovery state of a flow of size bytes.
func NewRoCERecovery(mode NakMode, mss int64, size uint64) *RoCERecovery {
	if mode != NakGoBackN && mode != NakSelective {
		panic("cc: roce recovery: invalid mode")
	}
	return &RoCERecovery{SeqSpace: SeqSpace{MSS: mss, End: size}, mode: mode}
}

// NakMode implements NakRecovery.NakMode.
func (r *RoCERecovery) NakMode() NakMode { return r.mode }

// InRecovery reports whether a loss episode is in progress.
func (r *RoCERecovery) InRecovery() bool { return r.inRecovery }

// segLen is the payload of the segment starting at seq.
func (r *RoCERecovery) segLen(seq uint64) int64 {
	return int64(min(uint64(r.MSS), r.End-seq))
}

// OnSent implements Recovery.OnSent.
func (r *RoCERecovery) OnSent(_ sim.Time, seg Segment, _ RTTInfo) SeqState {
	if r.mode == NakSelective {
		if seg.Seq == r.Nxt {
			if seg.Seq >= r.HighSent {
				r.sacked.Push(false)
			}
		} else if seg.Seq >= r.Una {
			r.retxNext = seg.Seq + uint64(seg.Len)
			r.SRResent++
		}
	}
	r.sent(seg)
	if r.mode == NakSelective {
		r.skipSacked()
	}
	return r.State()
}

// OnAck implements Recovery.OnAck.
func (r *RoCERecovery) OnAck(ai *AckInfo) AckVerdict {
	var v AckVerdict
	if n := r.cumAck(ai.Ack); n > 0 {
		v.Acked = n
		v.AdvancedUna = true
		if r.mode == NakSelective {
			r.dropAcked()
		}
	}
	if r.mode == NakSelective {
		for _, b := range ai.Sack {
			v.Acked += r.markSacked(b)
		}
	}
	if ai.Nak {
		r.NAKs++
		switch r.mode {
		case NakGoBackN:
			r.onGoBackNak(ai.Ack, &v)
		case NakSelective:
			if !r.inRecovery {
				r.inRecovery = true
				r.recoverPt = r.HighSent
				r.retxNext = r.Una
				v.EnterRecovery = true
			}
		}
	}
	if r.inRecovery && r.Una >= r.recoverPt && !v.EnterRecovery {
		r.inRecovery = false
		v.ExitRecovery = true
	}
	if r.mode == NakSelective {
		r.skipSacked()
	}
	v.SeqState = r.State()
	return v
}

// onGoBackNak resends from the NAK's expected sequence number, once per
// NAK: a repeat of the NAK acted on in the same episode, or one for data
// already being resent, changes nothing.
func (r *RoCERecovery) onGoBackNak(expected uint64, v *AckVerdict) {
	if expected < r.Una || expected >= r.Nxt || (r.inRecovery && expected == r.nakAt) {
		return
	}
	r.GoBacks++
	r.Nxt = r.Una
	r.nakAt = expected
	r.recoverPt = r.HighSent
	if !r.inRecovery {
		r.inRecovery = true
		v.EnterRecovery = true
	}
}

// dropAcked pops the scoreboard entries of the segments now below Una.
func (r *RoCERecovery) dropAcked() {
	for r.sacked.Len() > 0 && r.sackBase+uint64(r.segLen(r.sackBase)) <= r.Una {
		if r.sacked.Pop() {
			r.sackedBytes -= r.segLen(r.sackBase)
		}
		r.sackBase += uint64(r.MSS)
	}
	r.retxNext = max(r.retxNext, r.Una)
}

// skipSacked moves retxNext past SACKed segments, so that Next finds the
// next hole without scanning them again.
func (r *RoCERecovery) skipSacked() {
	m := uint64(r.MSS)
	for r.retxNext < r.lostBelow {
		i := int((r.retxNext - r.sackBase) / m)
		if i >= r.sacked.Len() || !*r.sacked.At(i) {
			return
		}
		r.retxNext = r.sackBase + uint64(i+1)*m
	}
}

// markSacked records block b as received and returns the payload newly
// acknowledged by it: the segments wholly inside b, above Una.
func (r *RoCERecovery) markSacked(b sim.SackBlock) int64 {
	m := uint64(r.MSS)
	var n int64
	// Segments below b.Start are not in it: start at its first segment
	// rather than scanning the scoreboard from sackBase on every NAK.
	i := 0
	if b.Start > r.sackBase {
		d := b.Start - r.sackBase
		i = int(min(d/m+min(d%m, 1), uint64(r.sacked.Len())))
	}
	for ; i < r.sacked.Len(); i++ {
		seq := r.sackBase + uint64(i)*m
		if seq >= b.End {
			break
		}
		l := r.segLen(seq)
		if seq+uint64(l) > b.End || *r.sacked.At(i) {
			continue
		}
		*r.sacked.At(i) = true
		r.sackedBytes += l
		n += l
		// IRN §3.1: every hole below a selectively acknowledged packet is
		// lost.
		r.lostBelow = max(r.lostBelow, seq)
	}
	return n
}

// OnRTO implements Recovery.OnRTO: go-back-N resends from SndUna; selective
// repeat resends every segment not SACKed below the highest sent.
func (r *RoCERecovery) OnRTO(sim.Time, RTTInfo) SeqState {
	switch r.mode {
	case NakGoBackN:
		r.Nxt = r.Una
		r.inRecovery = false
	case NakSelective:
		r.lostBelow = r.HighSent
		r.retxNext = r.Una
		r.inRecovery = true
		r.recoverPt = r.HighSent
	}
	return r.State()
}

// nextHole is the first segment at or after retxNext, below lostBelow,
// that is neither acknowledged nor SACKed.
func (r *RoCERecovery) nextHole() (uint64, bool) {
	m := uint64(r.MSS)
	start := max(r.retxNext, r.Una)
	for i := int((start - r.sackBase) / m); i < r.sacked.Len(); i++ {
		seq := r.sackBase + uint64(i)*m
		if seq >= r.lostBelow {
			break
		}
		if !*r.sacked.At(i) {
			return seq, true
		}
	}
	return 0, false
}

// Next implements Recovery.Next: selective repeat's lost segments first
// (sent whatever the window: they replace packets that left the network),
// then the segment at SndNxt (a go-back-N resend or new data).
func (r *RoCERecovery) Next() (Segment, bool) {
	if r.mode == NakSelective && r.inRecovery {
		if seq, ok := r.nextHole(); ok {
			return Segment{Seq: seq, Len: r.segLen(seq), Retx: true, Force: true}, true
		}
	}
	return r.nextNew()
}

// Pipe is the bytes in flight: FlightSize, less what was SACKed.
func (r *RoCERecovery) Pipe() int64 { return max(r.FlightSize()-r.sackedBytes, 0) }

// State implements Recovery.State.
func (r *RoCERecovery) State() SeqState { return r.state(r.Pipe(), r.inRecovery, sim.Never) }
