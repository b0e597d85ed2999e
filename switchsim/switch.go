// Package switchsim models an output-queued switch: each port has a byte
// buffer with drop-tail admission, ECN marking by a step threshold or by a
// RED-like linear ramp, and forwarding over the equal-cost ports of the
// fabric's shortest paths, chosen by a hash of the 5-tuple (ECMP) or by the
// packet's entropy value (spraying).
//
// It does not model input queueing, a shared buffer across ports, PFC,
// trimming or adaptive routing (yet), nor header processing time other than
// a fixed latency, which the fabric adds to the outgoing links.
package switchsim

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// Forwarding selects how a switch picks among equal-cost ports.
type Forwarding uint8

const (
	// ECMP hashes the 5-tuple: all packets of a flow take one path. The
	// zero Forwarding means "not set" (fabric.New picks ECMP).
	ECMP Forwarding = 1 + iota
	// Spray hashes the packet's entropy value: the sender picks the path of
	// each packet.
	Spray
)

func (f Forwarding) String() string {
	switch f {
	case ECMP:
		return "ecmp"
	case Spray:
		return "spray"
	}
	return "invalid"
}

// ParseForwarding maps a scenario name to a Forwarding.
func ParseForwarding(s string) (Forwarding, error) {
	switch s {
	case "ecmp", "":
		return ECMP, nil
	case "spray":
		return Spray, nil
	}
	return 0, fmt.Errorf("unknown forwarding %q (known: ecmp, spray)", s)
}

// PortCounters are a port's statistics.
type PortCounters struct {
	Enqueued  uint64 // packets admitted to the queue
	Dropped   uint64 // packets dropped because the buffer was full
	Marked    uint64 // packets marked CE on admission
	Bytes     uint64 // bytes admitted
	PeakBytes int64  // largest occupancy (queued + in service), bytes
	TxPackets uint64 // packets transmitted
}

// Port is an output port: a queue in front of a link direction.
type Port struct {
	Link  sim.LinkID
	Peer  sim.ElemID
	Queue topologies.QueueConfig
	PortCounters

	q         sim.PktQueue
	busy      bool
	inService int64 // bytes of the packet being serialised
}

// Occupancy is the bytes in the buffer: queued plus the one in service.
func (p *Port) Occupancy() int64 { return p.q.Bytes + p.inService }

// Queued is the number of packets waiting (not in service).
func (p *Port) Queued() int { return p.q.Len() }

// Switch is one switch element.
type Switch struct {
	ID      sim.ElemID
	Node    int // topology node index
	Ports   []Port
	Mode    Forwarding
	NoRoute uint64 // packets with no route (dropped)

	routes *topologies.Routes
	salt   uint64

	// SampleEvery, when positive, records every port's occupancy on a
	// grid of this period while the switch holds packets (queue_depth.csv).
	SampleEvery sim.Time
	Samples     []QueueSample
	sampling    bool    // a sample timer is pending
	lastDepth   []int64 // last recorded occupancy per port
}

// QueueSample is one port's occupancy at one time.
type QueueSample struct {
	Time  sim.Time
	Port  int32
	Bytes int64
}

// New returns a switch for topology node `node` with the given ports.
func New(id sim.ElemID, node int, ports []Port, routes *topologies.Routes, mode Forwarding) *Switch {
	return &Switch{ID: id, Node: node, Ports: ports, routes: routes, Mode: mode,
		salt: sim.Mix64(uint64(id) + 0x51ed27)}
}

// OnArrive forwards packet p that arrived at the switch.
func (s *Switch) OnArrive(e *sim.Engine, p sim.PktRef) {
	pkt := e.Pool.Get(p)
	next := s.routes.Next(s.Node, int(pkt.DstHost))
	var port int32
	switch len(next) {
	case 0:
		s.NoRoute++
		e.Pool.Free(p)
		return
	case 1:
		port = next[0]
	default:
		var h uint64
		if s.Mode == Spray {
			h = sim.Mix64(uint64(pkt.Entropy) ^ s.salt)
		} else {
			h = sim.Mix64(uint64(pkt.SrcHost)<<32 | uint64(uint32(pkt.DstHost)) ^ s.salt)
			h = sim.Mix64(h ^ uint64(pkt.SrcPort)<<24 ^ uint64(pkt.DstPort)<<8 ^ uint64(pkt.Proto))
		}
		port = next[h%uint64(len(next))]
	}
	s.enqueue(e, &s.Ports[port], p, pkt)
}

// enqueue admits pkt to port pt (drop-tail, ECN on admission) and starts
// the transmitter if it is idle.
func (s *Switch) enqueue(e *sim.Engine, pt *Port, p sim.PktRef, pkt *sim.Packet) {
	size := int64(pkt.Size)
	occ := pt.Occupancy()
	if occ+size > pt.Queue.Buffer {
		pt.Dropped++
		e.Pool.Free(p)
		return
	}
	if pkt.Flags&sim.FlagECT != 0 && s.mark(e, &pt.Queue.ECN, occ) {
		pkt.Flags |= sim.FlagCE
		pt.Marked++
	}
	pt.Enqueued++
	pt.Bytes += uint64(size)
	if s.SampleEvery > 0 && !s.sampling {
		s.armSample(e)
	}
	if occ+size > pt.PeakBytes {
		pt.PeakBytes = occ + size
	}
	if !pt.busy {
		s.start(e, pt, p, size)
		return
	}
	pt.q.Push(p)
	pt.q.Bytes += size
}

// mark decides ECN marking from the occupancy found on arrival.
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

func (s *Switch) start(e *sim.Engine, pt *Port, p sim.PktRef, size int64) {
	pt.busy = true
	pt.inService = size
	pt.TxPackets++
	e.Transmit(pt.Link, p)
}

// OnTxDone starts the next packet of the port whose link finished.
func (s *Switch) OnTxDone(e *sim.Engine, port int) {
	pt := &s.Ports[port]
	pt.busy = false
	pt.inService = 0
	if pt.q.Len() == 0 {
		return
	}
	p := pt.q.Pop()
	size := int64(e.Pool.Get(p).Size)
	pt.q.Bytes -= size
	s.start(e, pt, p, size)
}

// Queued is the number of packets waiting in all ports' queues.
func (s *Switch) Queued() int {
	n := 0
	for i := range s.Ports {
		n += s.Ports[i].q.Len()
	}
	return n
}

// armSample schedules the next sample at the next grid point after now.
func (s *Switch) armSample(e *sim.Engine) {
	s.sampling = true
	at := (e.Now()/s.SampleEvery + 1) * s.SampleEvery
	e.Schedule(s.ID, at, 0, sim.NoPacket)
}

// OnTimer takes a queue sample. Sampling continues while any port holds
// packets, so an idle switch schedules nothing and runs can drain.
func (s *Switch) OnTimer(e *sim.Engine) {
	if s.lastDepth == nil {
		s.lastDepth = make([]int64, len(s.Ports))
	}
	busy := false
	for i := range s.Ports {
		d := s.Ports[i].Occupancy()
		if d != s.lastDepth[i] || d > 0 {
			s.Samples = append(s.Samples, QueueSample{Time: e.Now(), Port: int32(i), Bytes: d})
			s.lastDepth[i] = d
		}
		busy = busy || d > 0
	}
	s.sampling = false
	if busy {
		s.armSample(e)
	}
}
