package hostsim

import "github.com/lockstep-sim/lockstep/sim"

// UET's packet delivery sublayer (PDS) at the hosts, for a recovery that
// declares cc.PDSAcker (cc/uet_recovery.go). The receiver follows
// uet-htsim's UecSink (processData, processTrimmed, sack, nack,
// sackBitmapBase): it acknowledges
//
//   - once AckBytes bytes (headers included) arrived since its last ACK
//     (shouldSack, 16384 by default),
//   - at once for a CE-marked packet, a duplicate, the flow's first packet
//     and a packet that requests it (sim.FlagAckReq), and again when the
//     reorder queue an ack request found drains;
//
// each ACK naming the packet that triggered it (Seq, its entropy, its CE
// mark, its send time in TSecr) with the cumulative ACK and a 64-bit SACK
// bitmap whose first packet is max(PSN − 63, cumulative PSN + 1). A
// trimmed packet the receiver does not have is answered by a NACK naming
// it, in the wire form of the receivers' generic trim NACK (receiver.go,
// onTrimmed): an ACK packet with sim.FlagTrimmed, Seq the trimmed
// packet's, its entropy, CE mark and send time (TSecr); UET adds bit 0 of
// Bitmap, set when it was cut at the last hop (the switch noted its Hops
// in the header's Ack). Packet numbers (PSN) are Seq/MSS.

// has reports whether bytes [s, t) all arrived already.
func (r *Receiver) has(s, t uint64) bool {
	if t <= r.rcvNxt {
		return true
	}
	for _, iv := range r.ooo {
		if iv.start <= s && t <= iv.end {
			return true
		}
	}
	return false
}

// onPDSData is UecSink::processData and processTrimmed.
func (r *Receiver) onPDSData(h *Host, e *sim.Engine, pkt *sim.Packet) {
	cfg := &h.T.Cfg
	end := pkt.Seq + uint64(pkt.Payload)
	have := r.has(pkt.Seq, end)
	if pkt.Flags&sim.FlagTrimmed != 0 {
		h.Trimmed++
		if have {
			// The sender is confused: SACK it. Unlike the other ACKs, this
			// one leaves the byte count towards the next as it was
			// (processTrimmed's sack does not clear _accepted_bytes).
			n := r.pdsBytes
			r.sendPDSAck(h, e, pkt, false)
			r.pdsBytes = n
			return
		}
		r.sendPDSNack(h, e, pkt)
		return
	}
	ce := pkt.Flags&sim.FlagCE != 0
	r.pdsBytes += pkt.Size
	if have {
		// A duplicate: acknowledge at once.
		r.sendPDSAck(h, e, pkt, ce)
		return
	}
	force := !r.pdsGot
	r.pdsGot = true
	if pkt.Flags&sim.FlagAckReq != 0 {
		force = true
		r.pdsAckReq = true
	}
	inOrder := pkt.Seq == r.rcvNxt
	r.accept(pkt.Seq, end)
	r.delivered(h, e)
	if inOrder && len(r.ooo) == 0 && r.pdsAckReq {
		force = true
		r.pdsAckReq = false
	}
	every := cfg.PDS.AckBytes
	if every == 0 {
		every = DefaultPDSAckBytes
	}
	if ce || int64(r.pdsBytes) >= every || force {
		r.sendPDSAck(h, e, pkt, ce)
	}
}

// sackBitmap is the SACK bitmap of an ACK triggered by packet psn: bit i
// is set when packet base+i arrived, base = max(psn − 63, cum + 1)
// (UecSink::sackBitmapBase, buildSackBitmap).
func (r *Receiver) sackBitmap(psn, mss uint64) uint64 {
	base := max(int64(psn)-63, int64(r.rcvNxt/mss)+1)
	top := base + 64 // bits for packets base .. top-1
	var b uint64
	for _, iv := range r.ooo {
		// The packets wholly inside iv: from the first that starts in
		// it to the last that ends in it (the flow's last, short, ends
		// at size).
		lo := max(int64((iv.start+mss-1)/mss), base)
		hi := top - 1
		if r.size > iv.end {
			hi = min(hi, int64(iv.end/mss)-1)
		}
		if lo > hi {
			continue
		}
		n := uint(hi - lo + 1)
		m := ^uint64(0)
		if n < 64 {
			m = 1<<n - 1
		}
		b |= m << uint(lo-base)
	}
	return b
}

// sendPDSAck sends the ACK that pkt triggered (UecSink::sack).
func (r *Receiver) sendPDSAck(h *Host, e *sim.Engine, pkt *sim.Packet, ce bool) {
	a, ack := r.control(h, e, 6)
	ack.Flags, ack.Ack = sim.FlagAck, r.rcvNxt
	if ce {
		ack.Flags |= sim.FlagECE
	}
	ack.Entropy, ack.Seq, ack.TSecr = pkt.Entropy, pkt.Seq, pkt.TSval
	ack.Bitmap = r.sackBitmap(pkt.Seq/uint64(h.T.Cfg.CC.MSS), uint64(h.T.Cfg.CC.MSS))
	r.pdsBytes = 0
	h.send(e, a)
}

// sendPDSNack sends the NACK of trimmed packet pkt (UecSink::nack). The
// switch that trimmed it wrote its Hops then into Ack: one link more means
// it was the last hop.
func (r *Receiver) sendPDSNack(h *Host, e *sim.Engine, pkt *sim.Packet) {
	a, nack := r.control(h, e, 6)
	nack.Flags, nack.Ack = sim.FlagAck|sim.FlagTrimmed, r.rcvNxt
	if pkt.Flags&sim.FlagCE != 0 {
		nack.Flags |= sim.FlagECE
	}
	nack.Entropy, nack.Seq, nack.TSecr = pkt.Entropy, pkt.Seq, pkt.TSval
	if uint64(pkt.Hops) == pkt.Ack+1 {
		nack.Bitmap = 1
		h.LastHopNacks++
	}
	h.TrimNacks++
	h.send(e, a)
}
