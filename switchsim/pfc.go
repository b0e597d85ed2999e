package switchsim

import (
	"github.com/lockstep-sim/lockstep/sim"
)

// IEEE 802.1Qbb priority-based flow control. A switch accounts the bytes it
// holds by (ingress port, class); above XOFF it sends its upstream peer a
// PAUSE frame for that class with the configured quanta (one quantum is 512
// bit times at the link's rate, 802.3 Annex 31B), refreshes it at half its
// time while still above XON, and sends quanta 0 (resume) once at or below
// XON. A PAUSE frame is a packet on the wire like any other (64 bytes,
// serialised and propagated), sent before any queued data at the next
// frame boundary, and consumed by the peer.

// firstOf is the earlier of two times of an event, 0 meaning "not yet".
func firstOf(a, b sim.Time) sim.Time {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// pauseTime is the time q quanta last on the link of port i.
func (s *Switch) pauseTime(e *sim.Engine, i int, q uint16) sim.Time {
	// Per quantum: q × 512 bits at once would overflow TxTime.
	return sim.Time(q) * e.Links[s.Ports[i].Link].Spec.Rate.TxTime(64)
}

// sendPause sends a PAUSE frame for class c with quanta q out of port in.
func (s *Switch) sendPause(e *sim.Engine, in, c int, q uint16) {
	p := e.Pool.Alloc()
	pkt := e.Pool.Get(p)
	pkt.ID = e.NewPacketID(s.ID)
	pkt.Flow, pkt.SrcHost, pkt.DstHost = -1, -1, -1
	pkt.Flags = sim.FlagPause
	pkt.Size = sim.PauseFrameSize
	pkt.SetPauseQuanta(c, q)
	s.CtlCreated++
	pt := &s.Ports[in]
	k := &pt.cc[c]
	k.PausesSent++
	idx := in*s.nc + c
	if q > 0 {
		k.FirstPauseSent = firstOf(k.FirstPauseSent, e.Now())
		at := e.Now() + max(1, s.pauseTime(e, in, q)/2)
		s.refreshAt[idx] = at
		e.Schedule(s.ID, at, timerPFC<<timerShift|int64(idx), sim.NoPacket)
	} else {
		s.refreshAt[idx] = 0
	}
	pt.ctl.Push(p)
	s.kick(e, pt, in)
}

// refresh re-sends the XOFF of ingress idx if it still holds.
func (s *Switch) refresh(e *sim.Engine, idx int) {
	if !s.xoff[idx] || s.refreshAt[idx] != e.Now() {
		return
	}
	s.sendPause(e, idx/s.nc, idx%s.nc, s.cfg.PFC.Quanta)
}

// onPause applies a PAUSE frame that arrived by port j: the classes it
// enables stop (or resume, for quanta 0) on port j's egress. A class
// whose storm watchdog mitigates a storm counts the frame and ignores it.
func (s *Switch) onPause(e *sim.Engine, j int, pkt *sim.Packet) {
	if j < 0 {
		return
	}
	pt := &s.Ports[j]
	now := e.Now()
	wake := sim.Never
	watch := s.cfg.PFC.Storm != nil
	for c := 0; c < s.nc; c++ {
		if pkt.Bitmap&(1<<uint(c)) == 0 {
			continue
		}
		cq := &pt.cx[c]
		k := &pt.cc[c]
		k.PausesRecv++
		if watch {
			cq.lastRx = now
			if cq.storm {
				continue
			}
		}
		q := pkt.PauseQuanta(c)
		until := now + s.pauseTime(e, j, q)
		if cq.pausedUntil <= now {
			if q == 0 {
				continue
			}
			cq.pausedTime += cq.pausedUntil - cq.pausedSince
			cq.pausedSince = now
			k.FirstPaused = firstOf(k.FirstPaused, now)
			if watch {
				s.armStormCheck(e, j, c, now+s.cfg.PFC.Storm.Detect)
			}
		}
		cq.pausedUntil = until
		if q > 0 {
			wake = min(wake, until)
		}
	}
	if wake != sim.Never {
		e.Schedule(s.ID, wake, timerWake<<timerShift|int64(j), sim.NoPacket)
	}
	s.kick(e, pt, j)
}

// PausedPorts appends to dst the switch's class queues that their peer
// keeps paused at time at while they hold packets (the deadlock search's
// input, sim.FindDeadlock). Precondition: no event of the switch is due
// before at.
func (s *Switch) PausedPorts(at sim.Time, dst []sim.PausedPort) []sim.PausedPort {
	for j := range s.Ports {
		pt := &s.Ports[j]
		if pt.portX == nil {
			continue
		}
		for c := 0; c < pt.NumClasses(); c++ {
			if q := &pt.cx[c]; q.pausedUntil > at && pt.class(c).q.Len() > 0 {
				dst = append(dst, sim.PausedPort{Elem: s.ID, Peer: pt.Peer, Port: int32(j), Class: int32(c),
					Since: q.pausedSince, Until: q.pausedUntil})
			}
		}
	}
	return dst
}
