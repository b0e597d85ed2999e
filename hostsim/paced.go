package hostsim

import (
	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// The NIC side of RDMA queue pairs (cc.NICScheduled with cc.RatePaced:
// DCQCN, and any rate-paced controller that declares it). An RDMA NIC
// does not queue a flow's packets in one FIFO ahead of time: its
// scheduler picks, whenever the port can take a packet, among the queue
// pairs whose rate limiter allows one (HPCC's ns-3 RdmaEgressQueue
// GetNextQindex, qbb-net-device.cc DequeueAndTransmit in ns3-rdma), and a
// paused priority stops its queue pairs, not a queue of built packets. So
// a paced flow hands a packet to the NIC only when the NIC is idle, its
// FIFO (ACKs, NAKs, CNPs) is empty and the flow's class is not paused;
// otherwise it waits in the host's ready ring and the NIC serves the ring
// in arrival order when it frees (round robin among the flows that are
// ready). The flow's pacer (cc.Pacer) says when it may send next: a pace
// timer wakes it, unless the NIC will still be busy by then, in which case
// it joins the ring at once and needs no timer (a flow at line rate sends
// back to back with no pacing event).
//
// The per-packet path allocates nothing: the ring grows to the number of
// paced flows of the host once.

// RateStats counts the events rate-based transports add to a run.
type RateStats struct {
	// PaceTimers, CCTimers and CNPTimers are the timer events scheduled
	// for pacing, for the controllers' own timers (DCQCN's rate increase)
	// and for the notification points' deferred CNPs.
	PaceTimers, CCTimers, CNPTimers uint64
	// CNPs and NAKs are the CNPs and RoCE NAKs receivers sent.
	CNPs, NAKs uint64
}

// nicFree reports whether a data packet of class c may start on the NIC
// now: the NIC is idle, its FIFO is empty and c is not paused.
func (h *Host) nicFree(e *sim.Engine, c int) bool {
	return !h.busy && h.nic.Len() == 0 && h.pausedUntil[c&7] <= e.Now()
}

// serveReady lets the paced flows waiting for the NIC send, in order,
// while the NIC is free. A flow whose class is paused goes back to the
// end of the ring.
func (h *Host) serveReady(e *sim.Engine) {
	for n := h.ready.Len(); n > 0 && !h.busy && h.nic.Len() == 0; n-- {
		s := h.T.senders[h.ready.Pop()]
		s.waiting = false
		if s.done() {
			continue
		}
		if h.pausedUntil[s.spec.Class&7] > e.Now() {
			s.wait(h)
			continue
		}
		s.trySendPaced(h, e)
	}
}

// wait puts the sender in the host's ready ring.
func (s *Sender) wait(h *Host) {
	s.waiting = true
	h.ready.Push(s.spec.ID)
}

// trySendPaced is trySend for a rate-based flow: at most one packet, and
// only onto a free NIC (see above); then the wake-up for the next one.
func (s *Sender) trySendPaced(h *Host, e *sim.Engine) {
	if !s.waiting {
		s.sendPaced(h, e)
	}
	s.armRecoveryTimer(h, e)
	s.armCCTimer(h, e)
}

func (s *Sender) sendPaced(h *Host, e *sim.Engine) {
	ep := &s.ep
	now := e.Now()
	ep.BeginSend()
	seg, ok := ep.Next(now)
	if !ok {
		if ep.PaceBlocked() {
			s.armPace(h, e, ep.PaceAt())
		}
		return
	}
	if !h.nicFree(e, s.spec.Class) {
		s.wait(h)
		return
	}
	cfg := &h.T.Cfg
	s.sendSegment(h, e, cfg, &h.T.Records[s.spec.ID], seg)
	// The packet started at once: the NIC is busy until it is out. Ask
	// what comes next (Next does not change the state).
	free := now + e.Links[h.Link].Spec.Rate.TxTime(int(seg.Len+cfg.Header))
	ep.BeginSend()
	_, ok = ep.Next(now)
	switch {
	case ok:
		s.wait(h) // paced faster than the link: the NIC decides
	case !ep.PaceBlocked():
		// Nothing more to send now (a window, or the end of data).
	case ep.PaceAt() <= free:
		s.wait(h) // the NIC frees no earlier than the pacer: no timer
	default:
		s.armPace(h, e, ep.PaceAt())
	}
}

// armCCTimer keeps a timer event at or before the controller's own
// deadline (DCQCN's rate-increase timer).
func (s *Sender) armCCTimer(h *Host, e *sim.Engine) {
	if s.armAt(h, e, &s.ccTimerAt, s.ep.CCDeadline(), timerCC) {
		h.T.Rate.CCTimers++
	}
}

func (s *Sender) onCCTimer(h *Host, e *sim.Engine) {
	now := e.Now()
	if now != s.ccTimerAt || s.done() {
		return
	}
	s.ccTimerAt = sim.Never
	act := s.ep.OnDeadline(now, cc.TimerCC)
	s.record(h, act)
	s.trySend(h, e)
}

// onCNP hands a congestion notification packet to the endpoint.
func (s *Sender) onCNP(h *Host, e *sim.Engine) {
	if s.done() {
		return
	}
	act := s.ep.OnCNP(e.Now())
	s.record(h, act)
	s.trySend(h, e)
}
