package switchsim

import (
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// ecnAQM marks by each port's topologies.ECNConfig: never (drop-tail
// only), by a step threshold K (DCTCP, RFC 8257 §3.1's switch), or by a
// RED-like ramp from Min to Max with PMax at Max (Floyd and Jacobson, "Random
// Early Detection Gateways for Congestion Avoidance", ToN 1993, with the
// instantaneous queue: weight 1, as DCTCP deployments configure RED);
// on arrival by the occupancy the packet finds, or on dequeue by the
// backlog behind it (htsim's UEC queues). Only ECN-capable packets are
// marked, never dropped (drop-tail is the buffer policy's).
//
// Module "ecn" keeps each port's setting (the tiers' ecn); "droptail",
// "step" and "red" set every port of the switch alike (set).
type ecnAQM struct {
	set *topologies.ECNConfig // nil: the ports' own
}

// DecidesOnDequeue implements DequeueAQM (ports with ecn on dequeue).
func (ecnAQM) DecidesOnDequeue() {}

// OnEnqueue implements AQM.OnEnqueue.
func (ecnAQM) OnEnqueue(s *Switch, e *sim.Engine, pkt *sim.Packet, port, _ int, backlog int64) Verdict {
	return s.ecnOnArrival(e, &s.Ports[port], pkt, backlog)
}

// OnDequeue implements AQM.OnDequeue.
func (ecnAQM) OnDequeue(s *Switch, e *sim.Engine, pkt *sim.Packet, port, _ int, _ sim.Time, behind int64) Verdict {
	return s.ecnOnDequeue(e, &s.Ports[port], pkt, behind)
}

// ecnOnArrival is ecnAQM's decision on admission.
func (s *Switch) ecnOnArrival(e *sim.Engine, pt *Port, pkt *sim.Packet, backlog int64) Verdict {
	if !pt.ecnDeq && pkt.Flags&sim.FlagECT != 0 && s.markPort(e, pt, backlog) {
		return Mark
	}
	return Pass
}

// ecnOnDequeue is ecnAQM's decision as a packet starts serialising.
func (s *Switch) ecnOnDequeue(e *sim.Engine, pt *Port, pkt *sim.Packet, behind int64) Verdict {
	if pt.ecnDeq && pkt.Flags&sim.FlagECT != 0 && s.markPort(e, pt, behind) {
		return Mark
	}
	return Pass
}

// markPort decides ECN marking at port pt from an occupancy: by the
// port's copies of its ECN mode and step threshold (in the lines every
// packet touches), or by RED from Queue.ECN.
func (s *Switch) markPort(e *sim.Engine, pt *Port, occ int64) bool {
	switch pt.ecnMode {
	case topologies.ECNOff:
		return false
	case topologies.ECNStep:
		return occ > pt.ecnK
	case topologies.ECNRED:
		return s.mark(e, &pt.Queue.ECN, occ)
	}
	return false
}

// mark decides ECN marking from an occupancy. RED draws from the switch's
// own random stream.
func (s *Switch) mark(e *sim.Engine, c *topologies.ECNConfig, occ int64) bool {
	switch c.Mode {
	case topologies.ECNOff:
		return false
	case topologies.ECNStep:
		return occ > c.K
	case topologies.ECNRED:
		switch {
		case occ <= c.Min:
			return false
		case occ >= c.Max:
			return true
		}
		p := c.PMax * float64(occ-c.Min) / float64(c.Max-c.Min)
		return e.Rand(s.ID).Float64() < p
	}
	return false
}
