package hostsim

import (
	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// The receiving side of RoCEv2 (a RoCE recovery, cc.NakRecovery, and
// DCQCN's notification point, cc.CNPReactor).
//
// Sequence errors (cc/roce_recovery.go has the sender's side):
//   - go-back-N: a packet beyond the expected sequence is dropped; the
//     first one of a gap makes the receiver send a NAK with the expected
//     sequence, and no other NAK goes for that gap (IBTA vol. 1
//     §9.7.5.2.8; a lost NAK or resend is the sender's timeout to
//     recover);
//   - selective repeat: the packet is kept, and every out-of-order packet
//     is answered by a NAK carrying the cumulative ACK and the packet's
//     range (IRN, Mittal et al., SIGCOMM 2018, §3.1).
// In-order and duplicate packets are acknowledged as any receiver does
// (at once, or by the delayed-ACK rules when transport.delayed_ack is on).
//
// The notification point (Zhu et al., SIGCOMM 2015, §3.1): "if a marked
// packet arrives for a flow, and no CNP has been sent for the flow in the
// last N microseconds, a CNP is sent immediately. Then, the NIC generates
// at most one CNP packet every N microseconds for the flow, if any packet
// that arrives within that time window was marked." A CNP carries no
// payload; switches queue it in their control class.

// roceRx is a RoCE receiver's state beyond the ACK machinery: the gap a
// go-back-N NAK was sent for, and the notification point's last CNP,
// whether a marked packet came since, and its pending timer.
type roceRx struct {
	nakSent    bool
	nakFor     uint64
	cnpSent    bool
	cnpMarked  bool
	cnpLast    sim.Time
	cnpTimerAt sim.Time
}

// outOfOrder handles a data packet beyond the expected sequence for a
// RoCE recovery and reports whether it did (the caller then stops).
func (r *Receiver) outOfOrder(h *Host, e *sim.Engine, p sim.PktRef, pkt *sim.Packet) bool {
	mode := h.T.Caps.Nak
	if mode == 0 || pkt.Seq <= r.rcvNxt {
		return false
	}
	switch mode {
	case cc.NakGoBackN:
		// Dropped. One NAK per gap: the gap is the expected sequence.
		if r.rx.nakSent && r.rx.nakFor == r.rcvNxt {
			return true
		}
		r.rx.nakSent, r.rx.nakFor = true, r.rcvNxt
		r.nak = true
		r.sendAck(h, e, sim.NoPacket, nil, false)
	case cc.NakSelective:
		r.accept(pkt.Seq, pkt.Seq+uint64(pkt.Payload))
		r.nak = true
		r.sendAck(h, e, p, pkt, false)
	}
	h.T.Rate.NAKs++
	return true
}

// notify is the notification point: a CE-marked packet arrived.
func (r *Receiver) notify(h *Host, e *sim.Engine) {
	now := e.Now()
	iv := h.T.cnpInterval
	if !r.rx.cnpSent || now-r.rx.cnpLast >= iv {
		r.sendCNP(h, e)
		return
	}
	// Within the window of the last CNP: one more when it ends.
	r.rx.cnpMarked = true
	at := r.rx.cnpLast + iv
	if r.rx.cnpTimerAt > at {
		r.rx.cnpTimerAt = at
		h.T.Rate.CNPTimers++
		e.Schedule(h.ID, at, timerArg(r.flow, timerCNP), sim.NoPacket)
	}
}

func (r *Receiver) onCNPTimer(h *Host, e *sim.Engine) {
	if e.Now() != r.rx.cnpTimerAt {
		return
	}
	r.rx.cnpTimerAt = sim.Never
	if r.rx.cnpMarked && !r.done {
		r.sendCNP(h, e)
	}
	r.rx.cnpMarked = false
}

// sendCNP sends a congestion notification packet to the flow's sender.
func (r *Receiver) sendCNP(h *Host, e *sim.Engine) {
	p, c := r.control(h, e, 17) // RoCEv2 is UDP (port 4791)
	c.Entropy = uint16(sim.Mix64(uint64(h.T.Flows[r.flow].ID)))
	c.Flags = sim.FlagCNP
	r.rx.cnpSent, r.rx.cnpLast, r.rx.cnpMarked = true, e.Now(), false
	h.T.Rate.CNPs++
	h.send(e, p)
}
