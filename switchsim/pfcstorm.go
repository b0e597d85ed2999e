package switchsim

import "github.com/lockstep-sim/lockstep/sim"

// The PFC storm watchdog (Config.PFC.Storm; docs/decisions.md "PFC storms
// and the watchdog").
//
// Sources. Guo et al., "RDMA over Commodity Ethernet at Scale", SIGCOMM
// 2016, §4.3: a NIC whose receive pipeline stopped sent PAUSE frames
// without end, the pause spread from its ToR to the whole fabric, and
// the switch-side watchdog they built with the vendors monitors a port
// that cannot drain its queue while it keeps receiving PAUSE frames,
// then turns the port's lossless mode off and discards the packets to
// and from the NIC, and turns it on again once the PAUSE frames have
// been gone for a while. SONiC's pfcwd (sonic-swss orchagent
// pfc_detect_*.lua, pfc_restore.lua, pfcactionhandler.cpp) does the same
// per (port, priority): a queue paused at two polls in a row with PFC
// frames received and no resume in between for the detection time is in
// a storm; the action "drop" clears the port's PFC enable bit for the
// priority and adds ingress and egress drop rules for it, "forward" only
// clears the bit (the port transmits, paused or not); the queue is
// restored once no PFC frame for the priority arrived for the
// restoration time. Juniper's and Arista's PFC watchdogs are alike.
//
// The model. Detection is exact rather than polled: a class queue whose
// peer has paused it without a break since T (refreshes before expiry
// extend one pause; a lapse or a resume ends it) is checked at
// T + Detect, and is in a storm if it holds packets then (with nothing
// queued it is checked again a detection time later, for as long as the
// pause lasts). Mitigation: the pause in force ends at once and PAUSE
// frames for the class on that port are counted but ignored; with
// StormDrop the class's queued packets are discarded, and so are the
// class's packets routed to the port or arriving by it. Restoration: once
// no PAUSE frame for the class has arrived on the port for Restore. The
// switch's own PAUSE frames to that peer are not changed (NB(storm):
// SONiC's cleared enable bit stops those too).

// armStormCheck sets the storm check of egress port j, class c, at at.
func (s *Switch) armStormCheck(e *sim.Engine, j, c int, at sim.Time) {
	s.Ports[j].cx[c].checkAt = at
	e.Schedule(s.ID, at, timerStorm<<timerShift|int64(j*s.nc+c), sim.NoPacket)
}

// stormCheck is the detection check of class queue idx (port * nc +
// class): a storm if the queue has been paused without a break for the
// detection time and holds packets.
func (s *Switch) stormCheck(e *sim.Engine, idx int) {
	j, c := idx/s.nc, idx%s.nc
	pt := &s.Ports[j]
	cq := &pt.cx[c]
	now := e.Now()
	if cq.checkAt != now || cq.storm {
		return // superseded by a later pause's check
	}
	cq.checkAt = 0
	if cq.pausedUntil <= now {
		return // the pause ended
	}
	if pt.class(c).q.Len() == 0 {
		s.armStormCheck(e, j, c, now+s.cfg.PFC.Storm.Detect)
		return
	}
	cq.storm = true
	pt.cc[c].Storms++
	cq.pausedTime += now - cq.pausedSince
	cq.pausedSince, cq.pausedUntil = now, now
	if s.cfg.PFC.Storm.Action == StormDrop {
		s.storming++
		s.dropQueued(e, j, c)
	}
	cq.restoreAt = now + s.cfg.PFC.Storm.Restore
	e.Schedule(s.ID, cq.restoreAt, timerRestore<<timerShift|int64(idx), sim.NoPacket)
	s.kick(e, pt, j)
}

// stormRestore is the restoration check of class queue idx: the port
// honours PAUSE frames for the class again once none has arrived for the
// restoration time.
func (s *Switch) stormRestore(e *sim.Engine, idx int) {
	j, c := idx/s.nc, idx%s.nc
	pt := &s.Ports[j]
	cq := &pt.cx[c]
	now := e.Now()
	if !cq.storm || cq.restoreAt != now {
		return
	}
	if quiet := cq.lastRx + s.cfg.PFC.Storm.Restore; quiet > now {
		cq.restoreAt = quiet
		e.Schedule(s.ID, quiet, timerRestore<<timerShift|int64(idx), sim.NoPacket)
		return
	}
	cq.storm = false
	cq.restoreAt = 0
	pt.cc[c].Restores++
	if s.cfg.PFC.Storm.Action == StormDrop {
		s.storming--
	}
}

// dropQueued discards the packets of class c queued at port pt (the drop
// action), returning their bytes to the buffer and to PFC's ingress
// accounting.
func (s *Switch) dropQueued(e *sim.Engine, j int, c int) {
	pt := &s.Ports[j]
	cq := pt.class(c)
	for cq.q.Len() > 0 {
		p, sz := cq.take()
		in := int16(-1)
		if s.pfc {
			in = pt.in[c].Pop()
		}
		if s.sojourn {
			s.enqAt[j*s.nc+c].Pop()
		}
		size := int64(sz)
		pt.queued -= size
		s.addOcc(cq, c, -size)
		s.release(e, int(in), c, size)
		pt.Dropped++
		pt.cc[c].Dropped++
		pt.cc[c].StormDrops++
		e.Pool.Free(p)
	}
}

// stormDrop drops packet p of class c, bound for port pt and arrived by
// port in, when the drop action of a storm holds either port for c, and
// reports whether it did. The drop counts on the port in the storm.
// Precondition: s.storming > 0.
func (s *Switch) stormDrop(e *sim.Engine, pt *Port, p sim.PktRef, c, in int) bool {
	at := pt
	if pt.portX == nil || !pt.cx[c].storm {
		if in < 0 || s.Ports[in].portX == nil || !s.Ports[in].cx[c].storm {
			return false
		}
		at = &s.Ports[in]
	}
	at.Dropped++
	at.cc[c].Dropped++
	at.cc[c].StormDrops++
	e.Pool.Free(p)
	return true
}
