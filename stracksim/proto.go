package stracksim

import (
	"slices"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
)

// noTime marks a sequence number without an entry in send_times.
const noTime sim.Time = -1

// proto is one host's protocol instance: SimpleTcp and STrackProtocol
// hold every flow the host sends in a HashMap (tx_flows) and iterate it on
// each send tick; each flow's send_times is a HashMap too, iterated for
// timeouts. Both orders are Rust's (rustMap), with hash keys drawn from
// the run's seed.
type proto struct {
	flows *rustMap // tx_flows' keys
}

// active is !all_flows_done() for a host that sends: some flow is not done.
func (w *World) active(h *host) bool {
	m := h.p.flows
	for i := 0; i < m.buckets(); i++ {
		if id, ok := m.at(i); ok && !w.tx[id].done {
			return true
		}
	}
	return false
}

// txFlow is FlowTxState (both protocols'; dup and ca are SimpleTCP's).
// Sequence numbers and windows count packets.
type txFlow struct {
	id, dst, total       int32
	next, base           int32 // next_seq, un_acked_base
	cwnd, ssth, inflight int32
	dup, ca              int32 // dup_ack_count, ca_ack_count
	done                 bool
	// sent is send_times: times by seq (noTime: no entry), keys in times'
	// order. Entries go when a cumulative ACK passes them; a
	// retransmission of a packet below un_acked_base adds one that nothing
	// removes, as in the Rust.
	sent  []sim.Time
	times *rustMap
	retx  []int32 // retransmit_queue
	rec   *hostsim.FlowRecord

	lastCwnd, lastSsth int32 // last cwnd.csv row
}

func newSendTimes(n int32) []sim.Time {
	s := make([]sim.Time, n)
	for i := range s {
		s[i] = noTime
	}
	return s
}

// rxFlow is FlowRxState: next_expected, and SimpleTCP's out_of_order set
// or STrack's 64-bit received_bits (bit i: next_expected + i arrived).
type rxFlow struct {
	total int32
	next  int32
	ooo   []bool
	bits  uint64
	done  bool
}

// scratch holds per-tick buffers, so that ticks do not allocate.
type scratch struct {
	retx, to, sends []int32
}

// sendTick is try_send: for each flow not done, in tx_flows' order,
//
//  1. every send_times entry older than the RTO (now − t > rto) and not in
//     the retransmit queue joins the queue's end, in send_times' order;
//     SimpleTcp then sets ssthresh = max(cwnd/2, min) and cwnd to the
//     initial window (STrack changes nothing);
//  2. up to cwnd packets of the queue are resent (cwnd as it was before
//     step 1), outside the in-flight count;
//  3. new packets go while in_flight < cwnd (again the old cwnd);
//
// and every packet sent gets send_times = now.
func (w *World) sendTick(e *sim.Engine, h *host, now sim.Time) {
	c := &w.cfg
	for b := 0; b < h.p.flows.buckets(); b++ {
		id, ok := h.p.flows.at(b)
		if !ok || w.tx[id].done {
			continue
		}
		f := w.tx[id]
		cwnd, inflight, next := f.cwnd, f.inflight, f.next
		retx := append(w.scr.retx[:0], f.retx...)
		to := w.scr.to[:0]
		for i := 0; i < f.times.buckets(); i++ {
			if seq, ok := f.times.at(i); ok && now-f.sent[seq] > c.RTO && !slices.Contains(retx, seq) {
				to = append(to, seq)
			}
		}
		if len(to) > 0 {
			f.rec.Timeouts++
			if c.Protocol == SimpleTCP {
				f.ssth = max(f.cwnd/2, c.MinCwnd)
				f.cwnd = c.InitCwnd
				f.dup, f.ca = 0, 0
			}
			w.cwndRow(f, now, "rto")
		}
		retx = append(retx, to...)
		sends := w.scr.sends[:0]
		i := 0
		for budget := cwnd; budget > 0 && i < len(retx); budget-- {
			w.data(e, h, f, retx[i], true)
			sends = append(sends, retx[i])
			i++
		}
		for inflight < cwnd && next < f.total {
			w.data(e, h, f, next, false)
			sends = append(sends, next)
			inflight++
			next++
		}
		f.inflight, f.next = inflight, next
		f.retx = append(f.retx[:0], retx[i:]...)
		for _, s := range sends {
			f.times.insert(s)
			f.sent[s] = now
		}
		w.scr.retx, w.scr.to, w.scr.sends = retx, to, sends
	}
}

// data appends data packet seq of f to w.out (Packet::data: DataSize
// bytes, no ECN mark).
func (w *World) data(e *sim.Engine, h *host, f *txFlow, seq int32, retx bool) {
	p := e.Pool.Alloc()
	pkt := e.Pool.Get(p)
	pkt.ID = e.NewPacketID(w.elem)
	pkt.Flow = f.id
	pkt.SrcHost, pkt.DstHost = h.index, f.dst
	pkt.Flags = sim.FlagData
	if retx {
		pkt.Flags |= sim.FlagRetx
		f.rec.Retransmits++
	}
	pkt.Seq = uint64(seq)
	pkt.Size, pkt.Payload = w.cfg.DataSize, w.cfg.DataSize
	f.rec.PacketsSent++
	w.out = append(w.out, p)
}

// control appends an ACK (or a NACK) to w.out: Ack is next_expected;
// a NACK names the data packet in Seq and carries received_bits.
func (w *World) control(e *sim.Engine, h *host, flow int32, ack int32, ce bool) *sim.Packet {
	p := e.Pool.Alloc()
	pkt := e.Pool.Get(p)
	pkt.ID = e.NewPacketID(w.elem)
	pkt.Flow = flow
	pkt.SrcHost, pkt.DstHost = h.index, int32(w.tr.Flows[flow].Src)
	pkt.Flags = sim.FlagAck
	if ce {
		pkt.Flags |= sim.FlagCE
	}
	pkt.Ack = uint64(ack)
	pkt.Size = w.cfg.AckSize
	w.out = append(w.out, p)
	return pkt
}

// onData is the receiver (on_rx_data): it answers every data packet with
// a cumulative ACK that echoes the packet's mark. SimpleTcp keeps every
// out-of-order packet; STrack keeps those less than 64 beyond
// next_expected in its bitmap (the others are discarded) and sends a NACK
// as well when a packet sets a new bit.
func (w *World) onData(e *sim.Engine, h *host, pkt *sim.Packet, now sim.Time) {
	r := &w.rx[pkt.Flow]
	seq := int32(pkt.Seq)
	nack := false
	switch w.cfg.Protocol {
	case SimpleTCP:
		switch {
		case seq < r.next:
		case seq == r.next:
			r.next++
			for r.next < r.total && r.ooo[r.next] {
				r.ooo[r.next] = false
				r.next++
			}
		default:
			r.ooo[seq] = true
		}
	case STrack:
		switch {
		case seq < r.next:
		case seq == r.next:
			r.next++
			r.bits >>= 1
			for r.bits&1 == 1 {
				r.next++
				r.bits >>= 1
			}
		default:
			if off := seq - r.next; off < 64 && r.bits&(1<<uint(off)) == 0 {
				r.bits |= 1 << uint(off)
				nack = true
			}
		}
	}
	w.control(e, h, pkt.Flow, r.next, pkt.Flags&sim.FlagCE != 0)
	if nack {
		n := w.control(e, h, pkt.Flow, r.next, false)
		n.Flags |= sim.FlagNack
		n.Seq = uint64(seq)
		n.Bitmap = r.bits
	}
	rec := &w.tr.Records[pkt.Flow]
	rec.BytesReceived = uint64(min(int64(r.next)*int64(w.cfg.DataSize), w.tr.Flows[pkt.Flow].Size))
	if !r.done && r.next >= r.total {
		r.done = true
		rec.Finished, rec.Finish = true, now
		if rec.AckedAt != 0 {
			w.tr.Done++
		}
	}
}

// onControl is on_tx_control: an ACK or a NACK at the sender.
func (w *World) onControl(h *host, pkt *sim.Packet, now sim.Time) {
	if !h.p.flows.has(pkt.Flow) {
		return
	}
	f := w.tx[pkt.Flow]
	c := &w.cfg
	if pkt.Flags&sim.FlagNack != 0 {
		// on_nack: every hole from the NACK's base below the packet it
		// names that is not in the retransmit queue joins it (a hole resent
		// and still in flight is queued again).
		base, bits := int32(pkt.Ack), pkt.Bitmap
		for i := int32(0); i < 64; i++ {
			s := base + i
			if s >= int32(pkt.Seq) {
				break
			}
			if bits>>uint(i)&1 == 0 && !slices.Contains(f.retx, s) {
				f.retx = append(f.retx, s)
			}
		}
		return
	}
	acked, ecn := int32(pkt.Ack), pkt.Flags&sim.FlagCE != 0
	if ecn {
		f.rec.ECNMarkedAcks++
	}
	event := ""
	switch c.Protocol {
	case SimpleTCP:
		switch {
		case acked == f.base:
			f.dup++
			if f.dup == 3 {
				// Fast retransmit of the first unacknowledged packet.
				f.ssth = max(f.cwnd/2, c.MinCwnd)
				f.cwnd = f.ssth + 3
				if !slices.Contains(f.retx, f.base) {
					f.retx = append(f.retx, f.base)
				}
				event = "fast-retransmit"
			} else if f.dup > 3 {
				f.cwnd = min(f.cwnd+1, c.MaxCwnd) // inflation, never deflated
			}
		case acked > f.base:
			delta := w.advance(f, acked)
			f.dup = 0
			switch {
			case ecn:
				// Every marked ACK that advances halves: no once-per-window guard.
				f.ssth = max(f.cwnd/2, c.MinCwnd)
				f.cwnd = max(f.ssth, c.MinCwnd)
				f.ca = 0
				event = "ecn-reduction"
			case f.cwnd < f.ssth:
				f.cwnd = min(f.cwnd+delta, c.MaxCwnd)
			default:
				f.ca += delta
				if f.ca >= f.cwnd {
					f.cwnd = min(f.cwnd+1, c.MaxCwnd)
					f.ca = 0
				}
			}
		}
	case STrack:
		if acked > f.base {
			w.advance(f, acked)
			if !ecn {
				f.cwnd = min(f.cwnd+1, c.MaxCwnd)
			}
		}
		if ecn {
			// One path: blacklisting it leaves none available, so every
			// marked ACK (advancing or not) halves.
			f.cwnd = max(f.cwnd/2, c.MinCwnd)
			event = "ecn-reduction"
		}
	}
	w.cwndRow(f, now, event)
	if !f.done && f.base >= f.total {
		f.done = true
		f.rec.AckedAt = now
		if w.rx[f.id].done {
			w.tr.Done++
		}
	}
}

// advance moves un_acked_base to acked: send_times entries below it go,
// in_flight drops by the packets acknowledged (saturating). It returns them.
func (w *World) advance(f *txFlow, acked int32) int32 {
	delta := acked - f.base
	for s := f.base; s < acked; s++ {
		f.times.remove(s)
		f.sent[s] = noTime
	}
	f.base = acked
	f.inflight = max(f.inflight-delta, 0)
	return delta
}
