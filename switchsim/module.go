package switchsim

import "github.com/lockstep-sim/lockstep/sim"

// A switch is a pipeline of stages (docs/design.md §13): a packet that
// arrives is classified (Classifier), given an egress port among the
// equal-cost ones (Forwarder), admitted or refused by the buffer policy
// (BufferPolicy; a refused data packet may be cut to its header by the
// Trimmer), marked or dropped by the AQM on admission and again as it
// leaves (AQM), and served among the port's class queues by the Scheduler.
// PFC, cut-through, INT and the storm watchdog are mechanisms of the core
// (Config), not stages.
//
// Each stage is a small interface; a module implements one and is
// registered under a name (Registry, registry.go). The built-in modules
// are registered like any other. The core calls a built-in's own method
// directly (a switch on a small kind resolved when the switch is built,
// so the per-packet path makes no interface call for them) and a module
// registered from outside through its interface (docs/decisions.md
// "Switch modules"). Every method runs on the per-packet path: it must
// not allocate.
//
// A module declares what it needs from the core by implementing the
// small optional interfaces below (capabilities), found once when the
// switch is built; the core never compares module names.

// Stage is one stage of the switch pipeline.
type Stage uint8

const (
	// StageClassify picks a packet's class queue (Classifier).
	StageClassify Stage = 1 + iota
	// StageForward picks the egress port among equal-cost ones (Forwarder).
	StageForward
	// StageBuffer admits or refuses a lossy packet (BufferPolicy).
	StageBuffer
	// StageAQM marks or drops on admission and on dequeue (AQM).
	StageAQM
	// StageSchedule serves a port's class queues (Scheduler).
	StageSchedule
	// StageTrim cuts a refused data packet to its header (Trimmer).
	StageTrim
)

// Stages lists the stages in pipeline order.
var Stages = []Stage{StageClassify, StageForward, StageBuffer, StageAQM, StageSchedule, StageTrim}

func (st Stage) String() string {
	switch st {
	case StageClassify:
		return "classify"
	case StageForward:
		return "forward"
	case StageBuffer:
		return "buffer"
	case StageAQM:
		return "aqm"
	case StageSchedule:
		return "schedule"
	case StageTrim:
		return "trim"
	}
	return "invalid"
}

// Classifier picks the class queue of a packet. The core calls it only
// when the switch has several classes, and clamps the result to them.
type Classifier interface {
	Classify(s *Switch, pkt *sim.Packet) int
}

// Forwarder picks the egress port of pkt among next, the ports on the
// shortest paths to its destination (at least two; with one the core
// takes it without asking).
type Forwarder interface {
	Forward(s *Switch, e *sim.Engine, pkt *sim.Packet, next []int32) int32
}

// BufferPolicy admits a lossy packet of size bytes to class c of port
// (lossless classes are PFC's: the core admits them by their ingress
// counters).
type BufferPolicy interface {
	Admit(s *Switch, port, c int, size int64) bool
}

// Verdict is an AQM's decision on one packet.
type Verdict uint8

const (
	// Pass lets the packet through unchanged (the zero Verdict).
	Pass Verdict = iota
	// Mark sets CE on an ECN-capable packet (RFC 3168); the core leaves
	// a packet that is not ECN-capable unchanged.
	Mark
	// Drop discards the packet. The core never drops a packet of a
	// lossless class for an AQM: it marks it instead.
	Drop
)

// AQM is active queue management: OnEnqueue decides on a packet the
// buffer admitted to class c of port, backlog being the bytes it finds
// (its class's with several classes, else the port's, counting the packet
// in service); OnDequeue decides as it starts serialising, sojourn being
// how long it waited (0 unless the module is a SojournUser) and behind
// the bytes left behind it. After a Drop on dequeue the core takes the
// class's next packet and asks again, at the same time; when the class
// queue is empty it calls OnDequeue once with a nil packet.
type AQM interface {
	OnEnqueue(s *Switch, e *sim.Engine, pkt *sim.Packet, port, c int, backlog int64) Verdict
	OnDequeue(s *Switch, e *sim.Engine, pkt *sim.Packet, port, c int, sojourn sim.Time, behind int64) Verdict
}

// Scheduler picks the class queue port serves next, or -1 when none may
// send (every class empty or paused by PFC). The core calls it only when
// the switch has several classes; QueueLen, HeadSize and Paused tell it
// what it needs.
type Scheduler interface {
	Pick(s *Switch, e *sim.Engine, port int) int
}

// Trimmer decides, for a lossy data packet of class c that the buffer
// refused at port, whether it is cut and to how many bytes (NDP's
// trimming). A trimmed header goes to the control class, where a port may
// hold HeaderQueue bytes of headers beyond its buffer; a header trimmed
// upstream is admitted by the same allowance.
type Trimmer interface {
	Trim(s *Switch, pkt *sim.Packet, port, c int) (header int32, ok bool)
	HeaderQueue() int64
}

// Capabilities a module may declare.

// SojournUser is an AQM that needs each packet's waiting time at dequeue
// (CoDel): the core keeps every queued packet's arrival time.
type SojournUser interface {
	NeedsSojourn()
}

// DequeueAQM is an AQM that decides on dequeue (OnDequeue). Without it
// the core calls only OnEnqueue.
type DequeueAQM interface {
	DecidesOnDequeue()
}

// PortStateUser is a module that needs every port's per-class counters
// and pause state (queues_class.csv), and so a transmit-done event for
// every packet (no elided completion): trimming, a shared buffer.
type PortStateUser interface {
	NeedsPortState()
}

// SharedPool is a buffer policy over a switch-wide pool: the core
// accounts the bytes each (port, class) queue holds beyond reserved
// bytes of its own, in a pool of size bytes (Switch.SharedUsed).
type SharedPool interface {
	Pool() (size, reserved int64)
}

// EntropySteered is a forwarder that follows the packet's entropy value:
// senders then draw a fresh entropy per packet (spraying).
type EntropySteered interface {
	SteeredByEntropy()
}

// ModuleRef names a module of a stage and its options (key=value text,
// checked by the module: an unknown key is an error).
type ModuleRef struct {
	Name    string
	Options map[string]string
}

// Pipeline selects a switch's module per stage. An empty name takes the
// module Config's other fields imply: forward by the switch's Forwarding,
// buffer "dynamic" with Shared else "static", aqm "ecn" (each port's
// topologies.ECNConfig), schedule "dwrr", classify "class", trim "ndp"
// with Trim else "none".
type Pipeline struct {
	Classify, Forward, Buffer, AQM, Schedule, Trim ModuleRef
}

// Ref is the selection of stage st.
func (p *Pipeline) Ref(st Stage) *ModuleRef {
	switch st {
	case StageClassify:
		return &p.Classify
	case StageForward:
		return &p.Forward
	case StageBuffer:
		return &p.Buffer
	case StageAQM:
		return &p.AQM
	case StageSchedule:
		return &p.Schedule
	case StageTrim:
		return &p.Trim
	}
	return nil
}
