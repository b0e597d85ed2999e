package switchsim

import (
	"slices"

	"github.com/lockstep-sim/lockstep/sim"
)

// Forwarding modules (StageForward). Each picks one of the equal-cost
// ports next; the core takes the only one without asking.

// FlowHash is the switch's salted hash of pkt's 5-tuple (src and dst
// hosts, ports, protocol; SplitMix64): every packet of a flow hashes
// alike, and consecutive tiers do not polarise.
func (s *Switch) FlowHash(pkt *sim.Packet) uint64 {
	h := sim.Mix64(uint64(pkt.SrcHost)<<32 | uint64(uint32(pkt.DstHost)) ^ s.salt)
	return sim.Mix64(h ^ uint64(pkt.SrcPort)<<24 ^ uint64(pkt.DstPort)<<8 ^ uint64(pkt.Proto))
}

// EntropyHash is the switch's salted hash of pkt's entropy value, so an
// entropy value names a path.
func (s *Switch) EntropyHash(pkt *sim.Packet) uint64 {
	return sim.Mix64(uint64(pkt.Entropy) ^ s.salt)
}

// ecmp hashes the 5-tuple: all packets of a flow take one path.
type ecmp struct{}

// Forward implements Forwarder.Forward.
func (ecmp) Forward(s *Switch, _ *sim.Engine, pkt *sim.Packet, next []int32) int32 {
	return next[s.FlowHash(pkt)%uint64(len(next))]
}

// spray hashes the packet's entropy: the sender picks each packet's path.
type spray struct{}

// Forward implements Forwarder.Forward.
func (spray) Forward(s *Switch, _ *sim.Engine, pkt *sim.Packet, next []int32) int32 {
	return next[s.EntropyHash(pkt)%uint64(len(next))]
}

// SteeredByEntropy implements EntropySteered.
func (spray) SteeredByEntropy() {}

// adaptive sends each packet to the equal-cost port with the fewest bytes
// in its buffer (per-packet adaptive routing by local occupancy).
type adaptive struct{}

// Forward implements Forwarder.Forward.
func (adaptive) Forward(s *Switch, e *sim.Engine, pkt *sim.Packet, next []int32) int32 {
	return s.leastLoaded(e, next, s.FlowHash(pkt))
}

// leastLoaded is the port of next with the smallest occupancy, ties broken
// from a hash-chosen start (adaptive routing by local egress occupancy).
func (s *Switch) leastLoaded(e *sim.Engine, next []int32, h uint64) int32 {
	n := uint64(len(next))
	for _, p := range next {
		if pt := &s.Ports[p]; pt.lazy {
			s.settle(e, pt)
		}
	}
	best := next[h%n]
	bo := s.Ports[best].Occupancy()
	for i := uint64(1); i < n; i++ {
		p := next[(h+i)%n]
		if o := s.Ports[p].Occupancy(); o < bo {
			best, bo = p, o
		}
	}
	return best
}

// Occupancy is the bytes in port's buffer (queued and in service), as
// the port's events have left them: a forwarder or buffer policy reads
// egress occupancy through it.
func (s *Switch) Occupancy(e *sim.Engine, port int) int64 {
	pt := &s.Ports[port]
	if pt.lazy {
		s.settle(e, pt)
	}
	return pt.Occupancy()
}

// flowletFwd keeps a flow on its port while its packets come closer than
// the flowlet gap, and picks the least loaded port at a flowlet's start
// (Kandula et al., "Dynamic load balancing without packet reordering",
// CCR 2007; CONGA's flowlet table, Alizadeh et al., SIGCOMM 2014).
type flowletFwd struct {
	gap   sim.Time
	table []flowlet
}

// flowlet is one entry of the flowlet table (CONGA-style: indexed by the
// hash of the 5-tuple, collisions share an entry).
type flowlet struct {
	key  uint64
	last sim.Time
	port int32
}

const flowletSlots = 4096

func newFlowlet(gap sim.Time) *flowletFwd {
	f := &flowletFwd{gap: gap, table: make([]flowlet, flowletSlots)}
	for i := range f.table {
		f.table[i].port = -1
	}
	return f
}

// Forward implements Forwarder.Forward.
func (f *flowletFwd) Forward(s *Switch, e *sim.Engine, pkt *sim.Packet, next []int32) int32 {
	return f.port(s, e, next, s.FlowHash(pkt))
}

// port is Forward for a packet whose FlowHash is h.
func (f *flowletFwd) port(s *Switch, e *sim.Engine, next []int32, h uint64) int32 {
	fl := &f.table[h&(flowletSlots-1)]
	now := e.Now()
	if fl.key != h || fl.port < 0 || now-fl.last > f.gap {
		fl.key = h
		fl.port = s.leastLoaded(e, next, h)
	}
	fl.last = now
	return fl.port
}

// drill is DRILL(d, m) (Ghorbani, Yang, Godfrey, Ganjali and
// Firoozshahian, "DRILL: Micro Load Balancing for Low-latency Data
// Center Networks", SIGCOMM 2017, §3.2): for each packet the switch
// samples d of the equal-cost ports at random, compares them with the m
// least loaded ports it remembers from the previous decision, sends the
// packet to the least loaded of these, and remembers the m least loaded
// of the d+m. Load is the port's occupancy in bytes. Samples are drawn
// with replacement from the switch's random stream. The memory is kept
// per set of equal-cost ports (a direct-mapped table of drillSets
// entries tagged by the set's first port and size), since one switch
// forwards over several sets (uplinks by destination pod, for one).
// Ties go to the earliest candidate: samples in draw order, then memory.
type drill struct {
	d, m int
	sets []drillSet
}

const (
	drillSets   = 64
	drillMaxD   = 16
	drillMaxMem = 4
)

type drillSet struct {
	tag uint64 // first port << 32 | set size; 0: empty
	n   int    // ports remembered
	mem [drillMaxMem]int32
}

func newDrill(d, m int) *drill {
	return &drill{d: d, m: m, sets: make([]drillSet, drillSets)}
}

// Forward implements Forwarder.Forward.
func (f *drill) Forward(s *Switch, e *sim.Engine, _ *sim.Packet, next []int32) int32 {
	tag := uint64(uint32(next[0]))<<32 | uint64(len(next))
	set := &f.sets[sim.Mix64(tag)&(drillSets-1)]
	if set.tag != tag {
		*set = drillSet{tag: tag}
	}
	var cand [drillMaxD + drillMaxMem]int32
	var load [drillMaxD + drillMaxMem]int64
	k := 0
	r := e.Rand(s.ID)
	add := func(p int32) {
		for i := 0; i < k; i++ {
			if cand[i] == p {
				return
			}
		}
		cand[k], load[k] = p, s.Occupancy(e, int(p))
		k++
	}
	for range f.d {
		add(next[r.IntN(len(next))])
	}
	for i := 0; i < set.n; i++ {
		if slices.Contains(next, set.mem[i]) { // sets that share a tag
			add(set.mem[i])
		}
	}
	// Selection sort of the m least loaded to the front, stable in
	// candidate order.
	keep := min(f.m, k)
	for i := 0; i < max(keep, 1); i++ {
		b := i
		for j := i + 1; j < k; j++ {
			if load[j] < load[b] {
				b = j
			}
		}
		if b != i {
			p, l := cand[b], load[b]
			copy(cand[i+1:b+1], cand[i:b])
			copy(load[i+1:b+1], load[i:b])
			cand[i], load[i] = p, l
		}
	}
	set.n = keep
	copy(set.mem[:keep], cand[:keep])
	return cand[0]
}
