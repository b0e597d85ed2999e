// Package switchsim models an output-queued switch: each port has a byte
// buffer with drop-tail admission, ECN marking by a step threshold or by a
// RED-like linear ramp, and forwarding over the equal-cost ports of the
// fabric's shortest paths, chosen by a hash of the 5-tuple (ECMP) or by the
// packet's entropy value (spraying).
//
// Optional mechanisms (Config): up to 8 traffic classes per port with strict
// priority and DWRR, IEEE 802.1Qbb PFC with PAUSE frames on the wire (the
// paused ports a deadlock search needs, and a PFC storm watchdog), a
// shared buffer with Choudhury-Hahne dynamic
// thresholds, NDP packet trimming, ECN on dequeue, adaptive (per-packet
// or flowlet) forwarding by local egress occupancy, and cut-through
// forwarding.
//
// In-band telemetry (Config.INT) appends per-hop records for HPCC.
//
// The forwarding, classification, admission, marking, scheduling and
// trimming are modules of a pipeline (module.go): the behaviours above
// are its built-in modules, CoDel (RFC 8289), DRILL and strict priority
// are others, and a program registers its own (Registry).
//
// It does not model input queueing, nor header
// processing time other than a fixed latency, which the fabric adds
// to the outgoing links.
package switchsim

import (
	"fmt"
	"unsafe"

	"github.com/lockstep-sim/lockstep/internal/prefetch"
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
	// Adaptive sends each packet to the equal-cost port with the smallest
	// occupancy (per-packet adaptive routing).
	Adaptive
	// Flowlet moves a flow to the least occupied port only after a gap of
	// Config.FlowletGap between its packets.
	Flowlet
)

func (f Forwarding) String() string {
	switch f {
	case ECMP:
		return "ecmp"
	case Spray:
		return "spray"
	case Adaptive:
		return "adaptive"
	case Flowlet:
		return "flowlet"
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
	case "adaptive":
		return Adaptive, nil
	case "flowlet":
		return Flowlet, nil
	}
	return 0, fmt.Errorf("unknown forwarding %q (known: ecmp, spray, adaptive, flowlet)", s)
}

// PortCounters are a port's statistics.
type PortCounters struct {
	Enqueued  uint64 // packets admitted to the queue
	Dropped   uint64 // packets dropped because the buffer was full
	Marked    uint64 // packets marked CE (on admission or on dequeue)
	Bytes     uint64 // bytes admitted
	PeakBytes int64  // largest occupancy (queued + in service), bytes
	TxPackets uint64 // packets transmitted (PAUSE frames not included)
}

// ClassCounters are one class queue's statistics. Trimmed headers count in
// the class they were queued in (the control class).
type ClassCounters struct {
	Enqueued, Dropped, Marked, TxPackets uint64
	Trimmed, TrimBytes                   uint64 // data packets cut to their header here
	// PausesSent counts the PAUSE frames for this class the port sent
	// upstream (its ingress side went over XOFF, was refreshed, or came
	// back under XON); PausesRecv those its peer sent it.
	PausesSent, PausesRecv uint64
	HeadroomDrops          uint64 // lossless packets dropped: PFC headroom exceeded
	// CutThrough counts the packets of the class this port began to send
	// before their last byte had arrived.
	CutThrough uint64
	// SharedPeak is the most bytes the queue held in the shared pool
	// (beyond its reserve; with a shared buffer).
	SharedPeak int64
	PeakBytes  int64
	// FirstPauseSent is when the port first sent an XOFF for the class,
	// FirstPaused when its peer first paused the class (0: never; no
	// PAUSE frame is sent or received at time 0).
	FirstPauseSent, FirstPaused sim.Time
	// Storms counts the PFC storms the watchdog detected on the class
	// queue, Restores the times it honoured PAUSE frames again;
	// StormDrops the packets its drop action discarded (to and from the
	// peer; counted in Dropped too).
	Storms, Restores, StormDrops uint64
}

// classQ is one class queue of a port: its packets with their sizes, and
// its occupancy.
type classQ struct {
	q   sim.Ring[sim.Queued]
	occ int64 // queued plus the packet in service, if it is of this class
}

// add appends packet p of size bytes.
func (cq *classQ) add(p sim.PktRef, size int32) { cq.q.Push(sim.Queued{P: p, Size: size}) }

// take removes the head packet and returns it with its size.
// Precondition: q.Len() > 0.
func (cq *classQ) take() (sim.PktRef, int32) {
	h := cq.q.Pop()
	return h.P, h.Size
}

// portX is the state of a port's optional mechanisms.
type portX struct {
	// more holds the class queues after class 0 (with Config.Classes).
	more []classQ
	cc   []ClassCounters      // per class
	cx   []classX             // per class
	ctl  sim.Ring[sim.PktRef] // PAUSE frames, sent before any class
	// in holds, beside each class queue, the ingress port of each packet
	// (PFC accounting; only with PFC).
	in []sim.Ring[int16]
}

// classX is the scheduling and pause state of a class queue, kept only
// when the switch has classes or PFC.
type classX struct {
	deficit int64 // DWRR
	// The current or last pause interval [pausedSince, pausedUntil).
	pausedSince, pausedUntil sim.Time
	pausedTime               sim.Time // closed pause intervals
	// PFC storm watchdog (pfcstorm.go): storm while it mitigates one;
	// checkAt and restoreAt the times of its pending timers (0: none);
	// lastRx when the last PAUSE frame for the class arrived.
	storm              bool
	checkAt, restoreAt sim.Time
	lastRx             sim.Time
}

// Port is an output port: queues in front of a link direction.
//
// It is three cache lines, and the switch's ports lie whole lines apart
// (TestLayout_PortHotLines): the first line holds what every packet
// reads and writes (class 0's queue, the occupancy, the transmitter's
// state), the second the counters every packet updates and the queue
// configuration admission and marking read (copied from Queue by
// Configure), the third the rest. A packet through a port touches its
// first two lines (at 168 bytes and with the class queues in a slab of
// their own, it touched four or five).
type Port struct {
	cls0      classQ // class 0 (the only one without Config.Classes)
	queued    int64  // bytes queued in all classes
	inService int32  // bytes of the packet being serialised (0 for a PAUSE)
	Link      sim.LinkID
	svcIn     int16 // its ingress port, when its class is lossless
	svcClass  int8  // class of the packet in service; -1: a PAUSE frame
	rr        int8  // DWRR: the class whose turn it is
	busy      bool
	// lazy: the packet in service has no transmit-done event (the queue
	// was empty when it started; sim.Engine.TransmitLazy): settle applies
	// its completion once it is past, and a packet queued behind it
	// materialises the event.
	lazy bool
	// ecnMode and ecnDeq are Queue.ECN's Mode and Dequeue, ecnK its K,
	// buffer Queue.Buffer: Configure copies them beside the state and
	// counters a packet touches.
	ecnMode topologies.ECNMode
	ecnDeq  bool

	PortCounters
	buffer int64
	ecnK   int64

	*portX // nil with one class and no PFC, trimming or cut-through
	Peer   sim.ElemID
	// In is the link direction from Peer into this port (cut-through reads
	// the ingress rate from it).
	In sim.LinkID
	// Queue is the queue's configuration: Configure reads it (a change
	// after Configure has no effect until the next Configure).
	Queue topologies.QueueConfig
}

// class is class queue c of the port.
func (p *Port) class(c int) *classQ {
	if c == 0 {
		return &p.cls0
	}
	return &p.more[c-1]
}

// Occupancy is the bytes in the buffer: queued plus the one in service.
func (p *Port) Occupancy() int64 { return p.queued + int64(p.inService) }

// Queued is the number of packets waiting (not in service).
func (p *Port) Queued() int {
	n := 0
	if p.portX != nil {
		n = p.ctl.Len()
	}
	for c := 0; c < p.NumClasses(); c++ {
		n += p.class(c).q.Len()
	}
	return n
}

// HasClassCounters reports whether the port keeps per-class counters
// (with classes, PFC or trimming).
func (p *Port) HasClassCounters() bool { return p.portX != nil }

// NumClasses is the number of class queues of the port.
func (p *Port) NumClasses() int {
	if p.portX == nil {
		return 1
	}
	return 1 + len(p.more)
}

// Class returns the counters of class c (zero when the port keeps none).
func (p *Port) Class(c int) ClassCounters {
	if p.portX == nil {
		return ClassCounters{}
	}
	return p.cc[c]
}

// ClassOccupancy is the bytes of class c in the buffer.
func (p *Port) ClassOccupancy(c int) int64 { return p.class(c).occ }

// PausedTime is how long class c of the port was paused by its peer up to
// now.
func (p *Port) PausedTime(c int, now sim.Time) sim.Time {
	if p.portX == nil {
		return 0
	}
	q := &p.cx[c]
	return q.pausedTime + max(0, min(q.pausedUntil, now)-q.pausedSince)
}

// Totals sums the class counters of the port.
func (p *Port) Totals() ClassCounters {
	var t ClassCounters
	if p.portX == nil {
		return t
	}
	for _, k := range p.cc {
		t.Enqueued += k.Enqueued
		t.Dropped += k.Dropped
		t.Marked += k.Marked
		t.TxPackets += k.TxPackets
		t.Trimmed += k.Trimmed
		t.TrimBytes += k.TrimBytes
		t.PausesSent += k.PausesSent
		t.PausesRecv += k.PausesRecv
		t.HeadroomDrops += k.HeadroomDrops
		t.CutThrough += k.CutThrough
		t.SharedPeak = max(t.SharedPeak, k.SharedPeak)
		t.PeakBytes = max(t.PeakBytes, k.PeakBytes)
		t.FirstPauseSent = firstOf(t.FirstPauseSent, k.FirstPauseSent)
		t.FirstPaused = firstOf(t.FirstPaused, k.FirstPaused)
		t.Storms += k.Storms
		t.Restores += k.Restores
		t.StormDrops += k.StormDrops
	}
	return t
}

// Switch is one switch element.
//
// Its first two cache lines hold what every packet reads (the routes, the
// ports, the modules' kinds, the mechanisms' switches); the rest is
// configuration and state of the optional mechanisms
// (TestLayout_SwitchHotLines).
type Switch struct {
	ID sim.ElemID
	// storming counts the class queues whose storm watchdog drops
	// (StormDrop) at the moment: while it is 0, admission skips the check.
	storming int32
	Node     int // topology node index
	Ports    []Port
	routes   *topologies.Routes
	salt     uint64
	lossless [sim.MaxClasses]bool

	nc int // classes per port (1 without Config.Classes)
	// SampleEvery, when positive, records every port's occupancy on a
	// grid of this period while the switch holds packets (queue_depth.csv).
	SampleEvery sim.Time
	// Shared pool (a SharedPool buffer policy; poolSize 0: none): bytes
	// beyond the reserves of all queues.
	sharedUsed, poolSize, poolReserved int64
	kinds                                   // the pipeline's modules' kinds (builtins.go)
	sampling                           bool // a sample timer is pending
	// hasX: the ports have their portX (classes, PFC, trimming,
	// cut-through or a module that keeps per-class state); pfc: PFC
	// ingress accounting (ing); cut, intOn: cfg.CutThrough.Enabled and
	// cfg.INT.Enabled.
	hasX, pfc, cut, intOn bool
	Mode                  Forwarding

	NoRoute uint64 // packets with no route (dropped)
	// CtlCreated counts the PAUSE frames the switch made; CtlConsumed those
	// it received (the conservation check).
	CtlCreated, CtlConsumed uint64
	// trimQueue is the Trimmer's header allowance per port.
	trimQueue int64

	cfg Config
	// PFC ingress accounting by [ingress port * nc + class].
	ing       []int64
	xoff      []bool
	refreshAt []sim.Time
	headroom  []int64 // by ingress port
	// The pipeline's modules (module.go, builtins.go).
	mod pipeline
	// enqAt holds, beside each class queue (port * nc + class), its
	// packets' arrival times (only for a SojournUser AQM).
	enqAt []sim.Ring[sim.Time]

	Samples []QueueSample
	// ClassSamples, with several classes, records each class queue's
	// occupancy at the same times (queue_depth_class.csv).
	ClassSamples []ClassSample
	lastDepth    []int64 // last recorded occupancy per port
	lastClass    []int64 // and per port and class
}

// Timer kinds (Event.Arg >> timerShift); 0 is the queue sample.
const (
	timerShift       = 40
	timerWake  int64 = 1 // a port's pause may have expired: Arg low bits = port
	timerPFC   int64 = 2 // refresh an XOFF: low bits = ingress port * nc + class
	// The storm watchdog's detection and restoration checks: low bits =
	// egress port * nc + class (pfcstorm.go).
	timerStorm   int64 = 3
	timerRestore int64 = 4
)

// QueueSample is one port's occupancy at one time.
type QueueSample struct {
	Time  sim.Time
	Port  int32
	Bytes int64
}

// ClassSample is one class queue's occupancy at one time.
type ClassSample struct {
	Time  sim.Time
	Port  int32
	Class int8
	Bytes int64
}

// PortSlab returns n zero ports, for the Ports of switches (a fabric takes
// every switch's from one slab), placed so that each starts a cache line:
// it allocates at least 32 KB, which the Go runtime gives a span of its
// own that starts a page (a smaller object with pointers begins 8 bytes
// into its slot, after the allocation header).
func PortSlab(n int) []Port {
	return make([]Port, max(n, (32<<10)/portBytes+1))[:n:n]
}

// portBytes is the size of a Port (TestLayout_PortHotLines checks it).
const portBytes = 192

// New returns a switch for topology node `node` with the given ports, and
// the plain configuration (see Configure).
func New(id sim.ElemID, node int, ports []Port, routes *topologies.Routes, mode Forwarding) *Switch {
	s := &Switch{ID: id, Node: node, Ports: ports, routes: routes, Mode: mode,
		salt: sim.Mix64(uint64(id) + 0x51ed27)}
	if err := s.Configure(nil, &Config{}); err != nil {
		panic(err)
	}
	return s
}

// Configure sets the switch's mechanisms before it runs. e gives the
// ports' links (for the derived PFC headroom); it may be nil without PFC.
func (s *Switch) Configure(e *sim.Engine, c *Config) error {
	if err := c.Check(); err != nil {
		return err
	}
	s.cfg = *c
	s.nc = max(1, len(c.Classes))
	for i := 0; i < s.nc; i++ {
		s.lossless[i] = i < len(c.Classes) && c.Classes[i].Lossless
	}
	if s.cfg.Trim.Enabled && s.cfg.Trim.Header == 0 {
		s.cfg.Trim.Header = 64
	}
	if s.cfg.CutThrough.Enabled && s.cfg.CutThrough.Header == 0 {
		s.cfg.CutThrough.Header = 64
	}
	if s.cfg.Trim.Enabled && s.cfg.Trim.Queue == 0 {
		s.cfg.Trim.Queue = 1024 * int64(s.cfg.Trim.Header)
	}
	if c.lossless() {
		s.cfg.PFC = s.cfg.PFC.WithDefaults()
		if w := s.cfg.PFC.Storm; w != nil && w.Action == 0 {
			d := *w
			d.Action = StormDrop
			s.cfg.PFC.Storm = &d
		}
		if len(s.Ports) > 1<<15 {
			return fmt.Errorf("pfc: at most %d ports, got %d", 1<<15, len(s.Ports))
		}
		n := len(s.Ports) * s.nc
		s.ing, s.xoff, s.refreshAt = make([]int64, n), make([]bool, n), make([]sim.Time, n)
		s.headroom = make([]int64, len(s.Ports))
		for i := range s.Ports {
			h := s.cfg.PFC.Headroom
			if h == 0 {
				if e == nil {
					return fmt.Errorf("pfc: a derived headroom needs the links")
				}
				h = DerivedHeadroom(e.Links[s.Ports[i].Link], s.cfg.PFC.MTU)
			}
			s.headroom[i] = h
		}
	}
	if err := s.buildModules(); err != nil {
		return err
	}
	s.enqAt = nil
	if s.sojourn {
		s.enqAt = make([]sim.Ring[sim.Time], len(s.Ports)*s.nc)
	}
	var more []classQ // the class queues after class 0
	if s.nc > 1 {
		more = make([]classQ, len(s.Ports)*(s.nc-1))
	}
	var cc []ClassCounters
	var cx []classX
	if s.nc > 1 || c.lossless() || c.HonourPause || c.CutThrough.Enabled || s.portState {
		cc = make([]ClassCounters, len(s.Ports)*s.nc)
		cx = make([]classX, len(s.Ports)*s.nc)
	}
	for i := range s.Ports {
		pt := &s.Ports[i]
		pt.cls0 = classQ{}
		pt.portX = nil
		if cc != nil {
			m := s.nc - 1
			pt.portX = &portX{more: more[i*m : (i+1)*m : (i+1)*m], cc: cc[i*s.nc : (i+1)*s.nc : (i+1)*s.nc], cx: cx[i*s.nc : (i+1)*s.nc : (i+1)*s.nc]}
			if c.lossless() {
				pt.in = make([]sim.Ring[int16], s.nc)
			}
		}
		pt.svcClass = -1
		pt.buffer = pt.Queue.Buffer
		pt.ecnMode, pt.ecnDeq, pt.ecnK = pt.Queue.ECN.Mode, pt.Queue.ECN.Dequeue, pt.Queue.ECN.K
	}
	s.hasX = cc != nil
	s.pfc = s.ing != nil
	s.cut, s.intOn = s.cfg.CutThrough.Enabled, s.cfg.INT.Enabled
	return nil
}

// Headroom is the PFC headroom of ingress port i (0 without PFC).
func (s *Switch) Headroom(i int) int64 {
	if s.headroom == nil {
		return 0
	}
	return s.headroom[i]
}

// OnArrive forwards packet p that arrived at the switch by port in (the
// port whose link leads back to the sender; -1 when unknown, which PFC
// cannot account).
func (s *Switch) OnArrive(e *sim.Engine, p sim.PktRef, in int) {
	pkt := e.Pool.Get(p)
	if pkt.Flags&sim.FlagPause != 0 {
		s.onPause(e, in, pkt)
		s.CtlConsumed++
		e.Pool.Free(p)
		return
	}
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
		// The forwarding module: a built-in's own code, a registered
		// one's through its interface. The built-ins' hash is FlowHash or
		// EntropyHash, written out here: FlowHash is not inlined (cost
		// 101 > 80), and the call costs ~10 instructions per packet.
		var h uint64
		switch s.kfwd {
		case kindSpray:
			h = s.EntropyHash(pkt)
		case kindECMP, kindAdaptive, kindFlowlet:
			h = sim.Mix64(uint64(pkt.SrcHost)<<32 | uint64(uint32(pkt.DstHost)) ^ s.salt)
			h = sim.Mix64(h ^ uint64(pkt.SrcPort)<<24 ^ uint64(pkt.DstPort)<<8 ^ uint64(pkt.Proto))
		default: // the module hashes what it needs
		}
		switch s.kfwd {
		case kindECMP, kindSpray:
			port = next[h%uint64(len(next))]
		case kindAdaptive:
			port = s.leastLoaded(e, next, h)
		case kindFlowlet:
			port = s.mod.flowlet.port(s, e, next, h)
		case kindDrill:
			port = s.mod.drill.Forward(s, e, pkt, next)
		default:
			port = s.mod.fwd.Forward(s, e, pkt, next)
			if port < 0 || int(port) >= len(s.Ports) {
				panic(fmt.Sprintf("switchsim: switch %d: forwarding module picked port %d of %d", s.ID, port, len(s.Ports)))
			}
		}
	}
	s.enqueue(e, &s.Ports[port], int(port), p, pkt, in)
}

// Prefetch asks for the cache line of the port a packet arriving now would
// leave by (likelyPort), for a packet a few events ahead (fabric's loop,
// Engine.Ahead).
func (s *Switch) Prefetch(e *sim.Engine, p sim.PktRef) {
	if port := s.likelyPort(e.Pool.Get(p)); port >= 0 {
		a := uintptr(unsafe.Pointer(&s.Ports[port]))
		prefetch.Two(a, a)
	}
}

// likelyPort is the port OnArrive would forward pkt by, from its route
// lookup and the built-in ECMP or spray pick, without their side effects;
// -1 for a PAUSE frame, no route, or another forwarding module (which may
// depend on the ports' state). TestSwitch_LikelyPortIsOnArrivesPort keeps
// the two the same.
func (s *Switch) likelyPort(pkt *sim.Packet) int32 {
	if pkt.Flags&sim.FlagPause != 0 {
		return -1
	}
	next := s.routes.Next(s.Node, int(pkt.DstHost))
	switch {
	case len(next) == 0:
		return -1
	case len(next) == 1:
		return next[0]
	case s.kfwd == kindECMP:
		return next[s.FlowHash(pkt)%uint64(len(next))]
	case s.kfwd == kindSpray:
		return next[s.EntropyHash(pkt)%uint64(len(next))]
	}
	return -1
}

// enqueue admits pkt to port pt (drop-tail or the shared buffer's dynamic
// threshold, PFC ingress accounting for lossless classes, trimming, ECN on
// admission) and starts the transmitter if it is idle.
func (s *Switch) enqueue(e *sim.Engine, pt *Port, j int, p sim.PktRef, pkt *sim.Packet, in int) {
	if pt.lazy {
		s.settle(e, pt)
	}
	c := 0
	if s.nc > 1 {
		if s.kcls == kindClass {
			c = classOfField(pkt, s.cfg.ControlClass, s.nc)
		} else {
			c = max(0, min(s.mod.cls.Classify(s, pkt), s.nc-1))
		}
	}
	if s.storming > 0 && s.stormDrop(e, pt, p, c, in) {
		return
	}
	cq := pt.class(c)
	size := int64(pkt.Size)
	occ := pt.Occupancy()
	pfcIdx := -1
	if s.lossless[c] && in >= 0 && s.pfc {
		// Lossless: admitted while the ingress counter is within XOFF plus
		// headroom, whatever the egress occupancy.
		pfcIdx = in*s.nc + c
		if s.ing[pfcIdx]+size > s.cfg.PFC.XOFF+s.headroom[in] {
			pt.Dropped++
			pt.cc[c].Dropped++
			pt.cc[c].HeadroomDrops++
			e.Pool.Free(p)
			return
		}
	} else if pkt.Flags&sim.FlagTrimmed != 0 && s.mod.trim != nil {
		// A header trimmed upstream: the header allowance admits it.
		if cq.occ+size > s.trimQueue {
			pt.Dropped++
			pt.cc[c].Dropped++
			e.Pool.Free(p)
			return
		}
	} else if !s.admit(pt, j, cq, c, size, occ) {
		var header int32
		cut := false
		switch s.ktrim {
		case kindNoTrim:
		case kindNDP:
			header, cut = s.mod.ndp.Trim(s, pkt, j, c)
		default:
			header, cut = s.mod.trim.Trim(s, pkt, j, c)
			if cut && (header <= 0 || header > pkt.Size) {
				panic(fmt.Sprintf("switchsim: switch %d: trimming module cut a %d-byte packet to %d bytes", s.ID, pkt.Size, header))
			}
		}
		if !cut {
			pt.Dropped++
			if s.hasX {
				pt.cc[c].Dropped++
			}
			e.Pool.Free(p)
			return
		}
		// Trim to the header and queue it in the control class. The
		// header keeps where it was cut (its Hops in Ack) so that a UET
		// receiver can tell a last-hop trim (htsim trim_hop).
		pkt.Flags |= sim.FlagTrimmed
		pkt.Size = header
		pkt.Ack = uint64(pkt.Hops)
		size = int64(pkt.Size)
		c = s.cfg.ControlClass
		cq = pt.class(c)
		// The headers have their own allowance beside the data (NDP's
		// separate header queue).
		if cq.occ+size > s.trimQueue {
			pt.Dropped++
			if s.hasX {
				pt.cc[c].Dropped++
			}
			e.Pool.Free(p)
			return
		}
		pt.cc[c].Trimmed++
		pt.cc[c].TrimBytes += uint64(size)
	}
	qocc := occ
	if s.nc > 1 {
		qocc = cq.occ
	}
	// The AQM on admission.
	switch s.kaqm {
	case kindECN:
		// ecnOnArrival, written out (its cost, 83, is over the inlining
		// budget).
		if pt.ecnMode != topologies.ECNOff && !pt.ecnDeq && pkt.Flags&sim.FlagECT != 0 && s.markPort(e, pt, qocc) {
			s.markCE(pt, pkt, c)
		}
	case kindCoDel:
		s.mod.codel.OnEnqueue(s, e, pkt, j, c, qocc)
	default:
		if s.aqmVerdict(e, pt, pkt, c, s.mod.aqm.OnEnqueue(s, e, pkt, j, c, qocc)) {
			pt.Dropped++
			if s.hasX {
				pt.cc[c].Dropped++
			}
			e.Pool.Free(p)
			return
		}
	}
	pt.Enqueued++
	pt.Bytes += uint64(size)
	if s.SampleEvery > 0 && !s.sampling {
		s.armSample(e)
	}
	if occ+size > pt.PeakBytes {
		pt.PeakBytes = occ + size
	}
	s.addOcc(cq, c, size)
	if s.hasX {
		k := &pt.cc[c]
		k.Enqueued++
		k.PeakBytes = max(k.PeakBytes, cq.occ)
		if s.poolSize > 0 {
			k.SharedPeak = max(k.SharedPeak, cq.occ-s.poolReserved)
		}
	}
	if pfcIdx >= 0 {
		s.ing[pfcIdx] += size
		if !s.xoff[pfcIdx] && s.ing[pfcIdx] > s.cfg.PFC.XOFF {
			s.xoff[pfcIdx] = true
			s.sendPause(e, in, c, s.cfg.PFC.Quanta)
		}
	}
	from := in
	if pfcIdx < 0 {
		in = -1 // nothing to account when it leaves
	}
	if !pt.busy && cq.q.Len() == 0 && (!s.hasX || pt.ctl.Len() == 0) && !s.paused(e, pt, c) {
		if s.aqmDeq && !s.dequeueAQM(e, j, pt, p, c, size, int16(in), 0) {
			return
		}
		at := e.Now()
		if s.cut && from >= 0 {
			if at = s.cutThrough(e, pt, &s.Ports[from], size); at < e.Now() {
				pt.cc[c].CutThrough++
			}
		}
		s.start(e, pt, p, c, size, int16(in), at)
		return
	}
	cq.add(p, int32(size))
	if s.sojourn {
		s.enqAt[j*s.nc+c].Push(e.Now())
	}
	if pt.lazy {
		// The packet waits for the one in service: the completion that
		// starts it needs its event.
		pt.lazy = false
		e.Materialize(pt.Link)
	}
	if s.pfc {
		pt.in[c].Push(int16(in))
	}
	pt.queued += size
	s.kick(e, pt, j)
}

// admit is the lossy admission by the buffer module (port pt is port j,
// occ its occupancy).
func (s *Switch) admit(pt *Port, j int, cq *classQ, c int, size, occ int64) bool {
	switch s.kbuf {
	case kindStatic:
		return s.staticAdmit(pt, size, occ)
	case kindDynamic:
		return s.mod.dyn.admit(s, cq, c, size)
	default:
		return s.mod.buf.Admit(s, j, c, size)
	}
}

// markCE marks packet pkt of class c at port pt, if it is ECN-capable.
func (s *Switch) markCE(pt *Port, pkt *sim.Packet, c int) {
	if pkt.Flags&sim.FlagECT == 0 {
		return
	}
	pkt.Flags |= sim.FlagCE
	pt.Marked++
	if s.hasX {
		pt.cc[c].Marked++
	}
}

// aqmVerdict applies an AQM's verdict v on packet pkt of class c at port
// pt, and reports whether the packet is to be dropped (the caller frees
// it and counts the drop). A lossless packet is marked, never dropped.
func (s *Switch) aqmVerdict(e *sim.Engine, pt *Port, pkt *sim.Packet, c int, v Verdict) bool {
	switch v {
	case Pass:
	case Mark:
		s.markCE(pt, pkt, c)
	case Drop:
		if !s.lossless[c] {
			return true
		}
		s.markCE(pt, pkt, c)
	default:
		panic(fmt.Sprintf("switchsim: switch %d: AQM verdict %d", s.ID, v))
	}
	return false
}

// dequeueAQM asks the AQM about packet p (size bytes, class c, accounted
// to ingress in) as it is about to leave port j (pt) after waiting
// sojourn, and reports whether it leaves; a dropped packet's bytes are
// returned and the packet freed.
func (s *Switch) dequeueAQM(e *sim.Engine, j int, pt *Port, p sim.PktRef, c int, size int64, in int16, sojourn sim.Time) bool {
	behind := pt.queued
	if s.nc > 1 {
		behind = pt.class(c).occ - size
	}
	pkt := e.Pool.Get(p)
	var v Verdict
	if s.kaqm == kindCoDel {
		v = s.mod.codel.OnDequeue(s, e, pkt, j, c, sojourn, behind)
	} else {
		v = s.mod.aqm.OnDequeue(s, e, pkt, j, c, sojourn, behind)
	}
	if !s.aqmVerdict(e, pt, pkt, c, v) {
		return true
	}
	s.addOcc(pt.class(c), c, -size)
	s.release(e, int(in), c, size)
	pt.Dropped++
	if s.hasX {
		pt.cc[c].Dropped++
	}
	e.Pool.Free(p)
	return false
}

// addOcc adds n bytes (negative: removes) to class queue cq and keeps the
// shared pool's use.
func (s *Switch) addOcc(cq *classQ, c int, n int64) {
	if s.poolSize > 0 {
		r := s.poolReserved
		s.sharedUsed += max(0, cq.occ+n-r) - max(0, cq.occ-r)
	}
	cq.occ += n
}

// SharedUsed is the bytes of the shared pool in use.
func (s *Switch) SharedUsed() int64 { return s.sharedUsed }

// paused reports whether class c of port pt is paused by its peer.
func (s *Switch) paused(e *sim.Engine, pt *Port, c int) bool {
	return s.hasX && pt.cx[c].pausedUntil > e.Now()
}

// cutThrough is when the transmission of a packet of size bytes that
// arrived (last byte) now by port from may be taken to have begun on the
// idle port pt: when its header arrived, if the egress link was free by
// then and is not faster than the ingress; else now (store-and-forward).
//
// The header arrived TxTime(size) - TxTime(header) before the last byte
// (both at the ingress rate, as the upstream transmitter serialised it).
// With the egress no faster than the ingress, the transmission that began
// then ends no earlier than TxTime(header) after now, so nothing is
// scheduled in the past and a packet sent onto a cut link still arrives
// more than the link's delay after now: the lookahead of a partitioned run
// holds (sim.Engine.TransmitFrom). NB(switch): a packet that reached the
// port's queue between the header and the last byte of this one was sent
// first; real cut-through silicon would have been sending this one.
func (s *Switch) cutThrough(e *sim.Engine, pt, from *Port, size int64) sim.Time {
	now := e.Now()
	h := int64(s.cfg.CutThrough.Header)
	if size <= h {
		return now
	}
	in, out := e.Links[from.In], e.Links[pt.Link]
	if in == nil || in.Spec.Impair != nil || out.Spec.Impair != nil || out.Spec.Rate > in.Spec.Rate {
		return now
	}
	head := now - in.Spec.Rate.TxTime(int(size)) + in.Spec.Rate.TxTime(int(h))
	if out.BusyUntil() > head {
		return now
	}
	return head
}

// start transmits packet p of class c, its serialisation beginning at at
// (now, or earlier for cut-through).
func (s *Switch) start(e *sim.Engine, pt *Port, p sim.PktRef, c int, size int64, in int16, at sim.Time) {
	pt.busy = true
	pt.inService = int32(size)
	pt.svcClass = int8(c)
	pt.svcIn = in
	if pt.ecnDeq && s.kaqm == kindECN {
		// ECN on dequeue (as htsim's UEC queues): the backlog left behind.
		behind := pt.queued
		if s.nc > 1 {
			behind = pt.class(c).occ - size
		}
		if pkt := e.Pool.Get(p); s.ecnOnDequeue(e, pt, pkt, behind) == Mark {
			s.markCE(pt, pkt, c)
		}
	}
	pt.TxPackets++
	if s.hasX {
		pt.cc[c].TxPackets++
	}
	wire := int32(size)
	if s.intOn {
		if pkt := e.Pool.Get(p); pkt.Flags&(sim.FlagData|sim.FlagTrimmed) == sim.FlagData {
			s.pushINT(e, pt, p, pkt, at)
			wire = pkt.Size // with the record
		}
	}
	// One class, no PFC, shared buffer, trimming or cut-through, and
	// nothing queued: the completion has nothing to start and only frees
	// the packet's bytes, which settle does when it is past.
	pt.lazy = !s.hasX && pt.class(0).q.Len() == 0
	e.TransmitSize(pt.Link, p, at, wire, pt.lazy)
}

// settle applies the elided completion of port pt's packet in service
// (start) if it is past; the port's occupancy and idleness are then those
// its event would have left.
func (s *Switch) settle(e *sim.Engine, pt *Port) {
	if e.TxPassed(pt.Link) {
		pt.lazy = false
		s.complete(e, pt)
	}
}

// Settle applies every port's elided completion that is past, so that
// the ports' occupancy and counters read as their events would have left
// them. For readers between events that are not part of the simulation
// (the live view); the simulation's own readers settle the ports they
// read. It changes no output: each completion it applies would have been
// applied, with the same effect, when the port was next used.
func (s *Switch) Settle(e *sim.Engine) {
	for i := range s.Ports {
		if pt := &s.Ports[i]; pt.lazy {
			s.settle(e, pt)
		}
	}
}

// LazyDone applies the elided completion of port's packet in service,
// which the engine passed at the end of a window (sim.Engine.OnLazyDone).
func (s *Switch) LazyDone(e *sim.Engine, port int) {
	pt := &s.Ports[port]
	pt.lazy = false
	s.complete(e, pt)
}

// pushINT appends the egress port's INT record to data packet p as it is
// dequeued (HPCC §3.2; ns-3 SwitchNode::SwitchNotifyDequeue): the time
// its serialisation starts (earlier than now under cut-through), the
// port's transmitted bytes before this packet (ns-3 pushes the record,
// then adds the packet to m_txBytes), the bytes still queued and the link
// rate. The record's own bytes count on the wire from this hop on. A
// packet that holds MaxINTHops records gets no more.
func (s *Switch) pushINT(e *sim.Engine, pt *Port, p sim.PktRef, pkt *sim.Packet, at sim.Time) {
	t := e.Pool.Telemetry(p)
	if int(t.NHops) >= sim.MaxINTHops {
		return
	}
	pkt.Size += s.cfg.INT.HopBytes
	l := e.Links[pt.Link]
	t.PushHop(sim.INTHop{TS: at, TxBytes: l.TxBytes, QLen: pt.queued, Rate: l.Rate()})
}

// OnTxDone frees the buffer of the packet that finished and starts the
// next one.
func (s *Switch) OnTxDone(e *sim.Engine, port int) {
	pt := &s.Ports[port]
	s.complete(e, pt)
	s.kick(e, pt, port)
}

// complete frees the buffer of the packet that finished; the port is idle.
func (s *Switch) complete(e *sim.Engine, pt *Port) {
	if c := int(pt.svcClass); c >= 0 {
		n := int64(pt.inService)
		s.addOcc(pt.class(c), c, -n)
		if s.pfc {
			s.release(e, int(pt.svcIn), c, n)
		}
	}
	pt.busy = false
	pt.inService = 0
	pt.svcClass = -1
}

// release returns n bytes of class c that entered by port in (-1: not
// accounted) to PFC's ingress accounting, and sends the XON when the
// counter comes down to XON.
func (s *Switch) release(e *sim.Engine, in, c int, n int64) {
	if in < 0 || !s.lossless[c] || !s.pfc {
		return
	}
	idx := in*s.nc + c
	s.ing[idx] -= n
	if s.xoff[idx] && s.ing[idx] <= s.cfg.PFC.XON {
		s.xoff[idx] = false
		s.sendPause(e, in, c, 0)
	}
}

// kick starts the next packet of idle port j: PAUSE frames first, then
// the class the scheduler picks; paused classes wait. An AQM that decides
// on dequeue may drop packets first: the class's next one is then
// considered at once, and the scheduler asked again once it is empty.
func (s *Switch) kick(e *sim.Engine, pt *Port, j int) {
	if pt.busy {
		return
	}
	if s.hasX && pt.ctl.Len() > 0 {
		p := pt.ctl.Pop()
		pt.busy = true
		pt.svcClass = -1
		e.Transmit(pt.Link, p)
		return
	}
	for {
		var c int
		switch {
		case s.nc == 1:
			c = -1
			if pt.class(0).q.Len() > 0 && !s.paused(e, pt, 0) {
				c = 0
			}
		case s.ksch == kindDWRR:
			c = s.mod.dwrr.pick(s, e, pt)
		default:
			c = s.pick(e, pt, j)
		}
		if c < 0 {
			return
		}
		cq := pt.class(c)
		for cq.q.Len() > 0 {
			p, sz := cq.take()
			in := int16(-1)
			if s.pfc {
				in = pt.in[c].Pop()
			}
			size := int64(sz)
			pt.queued -= size
			if s.aqmDeq {
				var sojourn sim.Time
				if s.sojourn {
					sojourn = e.Now() - s.enqAt[j*s.nc+c].Pop()
				}
				if !s.dequeueAQM(e, j, pt, p, c, size, in, sojourn) {
					continue
				}
			}
			s.start(e, pt, p, c, size, in, e.Now())
			return
		}
		// Every packet of the class was dropped on dequeue.
		if s.kaqm == kindCoDel {
			s.mod.codel.OnDequeue(s, e, nil, j, c, 0, 0)
		} else {
			s.mod.aqm.OnDequeue(s, e, nil, j, c, 0, 0)
		}
	}
}

// pick chooses the class of port pt (port j) to serve, or -1, with a
// scheduler other than DWRR (kick calls that one itself). Precondition:
// several classes.
func (s *Switch) pick(e *sim.Engine, pt *Port, j int) int {
	if s.ksch == kindStrict {
		return strictPriority{}.Pick(s, e, j)
	}
	c := s.mod.sch.Pick(s, e, j)
	if c >= s.nc || c >= 0 && (pt.class(c).q.Len() == 0 || s.paused(e, pt, c)) {
		panic(fmt.Sprintf("switchsim: switch %d port %d: the scheduler picked class %d, which cannot send", s.ID, j, c))
	}
	return c
}

// Queued is the number of packets waiting in all ports' queues.
func (s *Switch) Queued() int {
	n := 0
	for i := range s.Ports {
		n += s.Ports[i].Queued()
	}
	return n
}

// armSample schedules the next sample at the next grid point after now.
func (s *Switch) armSample(e *sim.Engine) {
	s.sampling = true
	at := (e.Now()/s.SampleEvery + 1) * s.SampleEvery
	e.Schedule(s.ID, at, 0, sim.NoPacket)
}

// OnTimer handles the switch's timers: PFC refreshes, pause expiries and
// queue samples.
func (s *Switch) OnTimer(e *sim.Engine, arg int64) {
	switch arg >> timerShift {
	case timerWake:
		j := int(arg & (1<<timerShift - 1))
		s.kick(e, &s.Ports[j], j)
	case timerPFC:
		s.refresh(e, int(arg&(1<<timerShift-1)))
	case timerStorm:
		s.stormCheck(e, int(arg&(1<<timerShift-1)))
	case timerRestore:
		s.stormRestore(e, int(arg&(1<<timerShift-1)))
	default:
		s.sample(e)
	}
}

// sample takes a queue sample. Sampling continues while any port holds
// packets, so an idle switch schedules nothing and runs can drain.
func (s *Switch) sample(e *sim.Engine) {
	if s.lastDepth == nil {
		s.lastDepth = make([]int64, len(s.Ports))
		if s.nc > 1 {
			s.lastClass = make([]int64, len(s.Ports)*s.nc)
		}
	}
	busy := false
	for i := range s.Ports {
		if pt := &s.Ports[i]; pt.lazy {
			s.settle(e, pt)
		}
		d := s.Ports[i].Occupancy()
		if d != s.lastDepth[i] || d > 0 {
			s.Samples = append(s.Samples, QueueSample{Time: e.Now(), Port: int32(i), Bytes: d})
			s.lastDepth[i] = d
		}
		busy = busy || d > 0
		for c := 0; c < s.nc && s.lastClass != nil; c++ {
			k := s.Ports[i].class(c).occ
			if last := &s.lastClass[i*s.nc+c]; k != *last || k > 0 {
				s.ClassSamples = append(s.ClassSamples, ClassSample{Time: e.Now(), Port: int32(i), Class: int8(c), Bytes: k})
				*last = k
			}
		}
	}
	s.sampling = false
	if busy {
		s.armSample(e)
	}
}
