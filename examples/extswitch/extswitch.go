// Package extswitch is an example of an element written outside
// lockstep: an output-queued switch that speaks only the element
// protocol (elementproto) and imports nothing else of lockstep. It
// behaves as lockstep's plain built-in switch does (switchsim with its
// default modules: ECMP over the equal-cost ports, drop-tail on each
// port's buffer, ECN by a step threshold on arrival or on dequeue), so a
// run with some switches replaced by it gives the same results as one
// without (extswitch_test.go). RED, classes, PFC and the other
// mechanisms are left out: a real external switch would bring its own.
//
// Use: New(), then Setup and Step with the protocol's messages (as
// fabric.ExternalPeer); a program serving it over a transport calls the
// same two methods.
package extswitch

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/elementproto"
)

// Switch is one external switch's state.
type Switch struct {
	id     int32
	salt   uint64
	ports  []port
	routes [][]int32
	seq    uint64 // the next window expected
	ready  bool
	out    elementproto.Reply
	// NoRoute counts packets dropped for want of a route.
	NoRoute uint64
}

// port is an output port: a FIFO of packets waiting and the one being
// serialised.
type port struct {
	cfg      elementproto.Port
	queue    []queued
	queued   int64 // bytes waiting
	inSvc    int64 // bytes of the packet being serialised (0: idle)
	busyTill int64 // when it ends
	ctr      elementproto.Counters
	// peerFirst: at one time, an arrival from this port's peer comes
	// before a completion of any port (lockstep orders the events of one
	// time by their source element: the completion's is this switch).
	peerFirst bool
}

type queued struct {
	h     uint64
	size  int32
	flags uint16
}

// New returns a switch waiting for its Setup.
func New() *Switch { return &Switch{} }

// mix64 is SplitMix64's finaliser, lockstep's ECMP hash.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Setup takes the Setup message.
func (s *Switch) Setup(msg []byte) error {
	var su elementproto.Setup
	if err := elementproto.Unmarshal(msg, &su); err != nil {
		return err
	}
	if su.Version != elementproto.Version {
		return fmt.Errorf("extswitch: protocol version %d, want %d", su.Version, elementproto.Version)
	}
	s.id, s.routes = su.Element, su.Routes
	s.salt = mix64(uint64(su.Element) + 0x51ed27) // as lockstep salts its switches
	s.ports = make([]port, len(su.Ports))
	for i, p := range su.Ports {
		if p.ECN.Mode > 1 {
			return fmt.Errorf("extswitch: port %d: ECN mode %d (this example marks off or by a step only)", i, p.ECN.Mode)
		}
		s.ports[i] = port{cfg: p, peerFirst: p.Peer < su.Element}
	}
	s.ready = true
	return nil
}

// Step takes a Window message and returns the Reply message.
func (s *Switch) Step(msg []byte) ([]byte, error) {
	if !s.ready {
		return nil, fmt.Errorf("extswitch: a window before the setup")
	}
	var w elementproto.Window
	if err := elementproto.Unmarshal(msg, &w); err != nil {
		return nil, err
	}
	if w.Seq != s.seq {
		return nil, fmt.Errorf("extswitch: window %d, want %d", w.Seq, s.seq)
	}
	s.seq++
	s.out = elementproto.Reply{Seq: w.Seq, Departures: s.out.Departures[:0], Drops: s.out.Drops[:0]}
	for _, a := range w.Arrivals {
		// Completions before the arrival: strictly earlier ones, and those
		// at its time when the switch's own events come first.
		s.completeUntil(a.At, !s.ports[a.Port].peerFirst)
		s.arrive(&a)
	}
	s.completeUntil(w.End, false)
	s.out.Next = -1
	for i := range s.ports {
		if p := &s.ports[i]; len(p.queue) > 0 {
			// The next start: the end of the packet in service.
			if s.out.Next == -1 || p.busyTill < s.out.Next {
				s.out.Next = p.busyTill
			}
		}
	}
	s.out.Counters = s.out.Counters[:0]
	for i := range s.ports {
		s.out.Counters = append(s.out.Counters, s.ports[i].ctr)
	}
	return elementproto.Marshal(&s.out)
}

// completeUntil applies the completions before t (and at t when
// inclusive), starting the queued packets they free the ports for. t is
// at most the window's end, and a completion at the end is left to the
// next window, so every start is inside the window.
func (s *Switch) completeUntil(t int64, inclusive bool) {
	for i := range s.ports {
		p := &s.ports[i]
		for p.inSvc > 0 && (p.busyTill < t || inclusive && p.busyTill == t) {
			at := p.busyTill
			p.inSvc = 0
			if len(p.queue) == 0 {
				break
			}
			q := p.queue[0]
			p.queue = p.queue[1:]
			p.queued -= int64(q.size)
			s.start(i, q, at)
		}
	}
}

// arrive routes, admits and marks one packet, and starts it if its port
// is idle.
func (s *Switch) arrive(a *elementproto.Arrival) {
	pk := &a.Pkt
	var next []int32
	if int(pk.DstHost) < len(s.routes) && pk.DstHost >= 0 {
		next = s.routes[pk.DstHost]
	}
	var j int32
	switch len(next) {
	case 0:
		s.NoRoute++
		s.out.Drops = append(s.out.Drops, a.Handle)
		return
	case 1:
		j = next[0]
	default:
		h := mix64(uint64(pk.SrcHost)<<32 | uint64(uint32(pk.DstHost)) ^ s.salt)
		h = mix64(h ^ uint64(pk.SrcPort)<<24 ^ uint64(pk.DstPort)<<8 ^ uint64(pk.Proto))
		j = next[h%uint64(len(next))]
	}
	p := &s.ports[j]
	size := int64(pk.Size)
	occ := p.queued + p.inSvc
	if occ+size > p.cfg.Buffer {
		p.ctr.Dropped++
		s.out.Drops = append(s.out.Drops, a.Handle)
		return
	}
	flags := pk.Flags
	if e := &p.cfg.ECN; e.Mode == 1 && !e.Dequeue && flags&elementproto.FlagECT != 0 && occ > e.K {
		flags |= elementproto.FlagCE
		p.ctr.Marked++
	}
	p.ctr.Enqueued++
	p.ctr.Bytes += uint64(size)
	p.ctr.PeakBytes = max(p.ctr.PeakBytes, occ+size)
	q := queued{h: a.Handle, size: pk.Size, flags: flags}
	if p.inSvc == 0 && len(p.queue) == 0 {
		s.start(int(j), q, a.At)
		return
	}
	p.queue = append(p.queue, q)
	p.queued += size
}

// start begins serialising q on port i at time at.
func (s *Switch) start(i int, q queued, at int64) {
	p := &s.ports[i]
	if e := &p.cfg.ECN; e.Mode == 1 && e.Dequeue && q.flags&elementproto.FlagECT != 0 && p.queued > e.K {
		q.flags |= elementproto.FlagCE
		p.ctr.Marked++
	}
	p.inSvc = int64(q.size)
	p.busyTill = at + elementproto.TxTime(q.size, p.cfg.RateBps)
	p.ctr.TxPackets++
	s.out.Departures = append(s.out.Departures, elementproto.Departure{Handle: q.h, Port: int32(i), Start: at, Flags: q.flags})
}
