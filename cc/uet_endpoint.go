package cc

import "github.com/lockstep-sim/lockstep/sim"

// The endpoint's UET seams (UEC 1.0 PDS and NSCC; uet-htsim uec.cpp):
// trim NACKs naming one packet (OnNack, processNack), per-packet timeouts
// reported by a recovery that owns its timers (rtxTimerExpired), and the
// ack-request flag of data packets (set_ar). Each is found once by type
// assertion; a module without them is driven exactly as before.

// Nack is a trim NACK as the sender receives it: the receiver got the
// header of the packet at Seq, whose payload a switch cut (UecSink::nack).
type Nack struct {
	Seq     uint64
	Entropy uint16 // the trimmed packet's entropy
	// LastHop: the switch that trimmed it was the receiver's last hop.
	LastHop bool
	// ECE: the trimmed header carried a CE mark.
	ECE bool
	// TSecr echoes the trimmed packet's send time; HasTSecr says it does.
	TSecr    sim.Time
	HasTSecr bool
}

// uetSeams are the UET seams of an endpoint's modules, found once by type
// assertion (kept apart so that other flows pay one pointer).
type uetSeams struct {
	nackRec   NackRecovery
	nackCtl   NackReactor
	toCtl     TimeoutReactor
	toPaths   TimedOutPaths
	stamp     SendStamper
	ownTimers bool // the recovery times packets out itself: no RTO
	ownECN    bool // the controller reads ECE itself (ECNReactor)
	pds       bool // UET PDS receivers: data packets may request an ACK
	ne        NackEvent
}

// initUET finds the UET seams of the modules; the struct is allocated
// only for modules that have some.
func (ep *Endpoint) initUET() {
	nackRec, _ := ep.rec.(NackRecovery)
	nackCtl, _ := ep.ctl.(NackReactor)
	toCtl, _ := ep.ctl.(TimeoutReactor)
	toPaths, _ := ep.rec.(TimedOutPaths)
	stamp, _ := ep.rec.(SendStamper)
	_, ownTimers := ep.rec.(OwnTimeouts)
	_, pds := ep.rec.(PDSAcker)
	_, ownECN := ep.ctl.(ECNReactor)
	if nackRec == nil && nackCtl == nil && toCtl == nil && toPaths == nil && stamp == nil && !ownTimers && !pds && !ownECN {
		return
	}
	ep.uet = &uetSeams{nackRec: nackRec, nackCtl: nackCtl, toCtl: toCtl, toPaths: toPaths, stamp: stamp,
		ownTimers: ownTimers, pds: pds, ownECN: ownECN}
}

// OnSerialise tells a recovery whose timers run from serialisation
// (SendStamper, UET's) that the data packet at seq started serialising at
// now. Its deadline can only move later, so a timer the owner armed
// earlier fires early and is re-armed.
func (ep *Endpoint) OnSerialise(now sim.Time, seq uint64) {
	if ep.done || ep.uet == nil || ep.uet.stamp == nil {
		return
	}
	ep.st = ep.uet.stamp.OnSerialise(now, seq)
}

// ackRequest is htsim's set_ar rule: a retransmission, the flow's last new
// packet, and a packet after which the window has no room for another
// (in_flight + pkt >= cwnd) ask for an ACK at once.
func (ep *Endpoint) ackRequest(seg Segment) bool {
	return seg.Retx || seg.Seq+uint64(seg.Len) >= ep.cfg.Size || ep.st.Pipe+seg.Len >= ep.cwnd
}

// packetTimeouts tells the controller and the path manager that the
// recovery's timers declared bytes lost.
func (ep *Endpoint) packetTimeouts(now sim.Time, bytes int64) {
	if ep.uet != nil && ep.uet.toCtl != nil {
		ep.uet.toCtl.OnPacketTimeout(now, bytes)
		ep.readCtl()
	} else {
		ep.congestion(now, CongRTO, ep.st.Flight)
	}
	if ep.pm != nil && ep.uet != nil && ep.uet.toPaths != nil {
		for _, e := range ep.uet.toPaths.TimedOutEntropies() {
			ep.pm.OnTimeout(now, e)
		}
	}
}

// onTrimNack is OnNack for a trim NACK that came as an ACK flagged
// Trimmed (the hosts' wire form): Echo names the packet, TSecr its send
// time, bit 0 of Bitmap a last-hop trim.
func (ep *Endpoint) onTrimNack(now sim.Time, a *Ack) Actions {
	n := Nack{Seq: a.Echo, Entropy: a.Entropy, LastHop: a.Bitmap&1 != 0, ECE: a.ECE,
		TSecr: a.TSecr, HasTSecr: a.HasTSecr}
	return ep.OnNack(now, &n)
}

// OnNack processes a trim NACK at now (uec.cpp processNack): the recovery
// takes the packet out of the flight and queues it (nothing happens if it
// is not outstanding), the controller reacts (NackReactor: NSCC's
// updateCwndOnNack), and the path manager hears of the entropy: a trim in
// the fabric penalises it, a last-hop trim (incast, not the path's fault)
// counts as an ACK with the header's mark. Actions.Send asks the owner to
// send (the retransmission).
func (ep *Endpoint) OnNack(now sim.Time, n *Nack) Actions {
	if ep.done || ep.uet == nil || ep.uet.nackRec == nil {
		return Actions{}
	}
	u := ep.uet
	prior := ep.st.Pipe
	bytes, st, ok := u.nackRec.OnNack(now, n.Seq)
	ep.st = st
	if !ok {
		return Actions{}
	}
	if u.nackCtl != nil {
		ev := &u.ne
		*ev = NackEvent{Now: now, Bytes: bytes, LastHop: n.LastHop, PriorInFlight: prior, MSS: ep.mss}
		if n.HasTSecr {
			ev.RTT = now - n.TSecr
		}
		u.nackCtl.OnNack(ev)
		ep.readCtl()
	}
	if ep.pm != nil {
		if n.LastHop {
			ep.pm.OnAck(now, n.Entropy, n.ECE, ep.cwnd/ep.mss)
		} else {
			ep.pm.OnNack(now, n.Entropy)
		}
	}
	act := Actions{Nack: true, Send: true}
	act.Sampled = ep.traceSample(now, "trim-nack")
	return act
}
