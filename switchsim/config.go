package switchsim

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// Config holds a switch's optional mechanisms. The zero Config is the plain
// output-queued switch: one FIFO per port, drop-tail on the port's buffer,
// ECN on arrival.
type Config struct {
	// Classes, when non-empty, gives every port one queue per class (at
	// most sim.MaxClasses). A data packet goes to the queue of its class
	// (sim.Packet.Class, clamped to the last class); packets without
	// payload (ACKs, NACKs, CNPs) and trimmed headers go to ControlClass.
	Classes      []Class
	ControlClass int
	// PFC configures IEEE 802.1Qbb priority flow control for the classes
	// marked Lossless.
	PFC PFC
	// Shared, when Size > 0, replaces the per-port buffers by a switch-wide
	// pool with dynamic thresholds.
	Shared Shared
	// Trim, when Enabled, cuts a data packet that does not fit to its header.
	Trim Trim
	// FlowletGap is the idle time after which Flowlet forwarding may move a
	// flow to another port.
	FlowletGap sim.Time
	// CutThrough, when Enabled, forwards a packet once its header has
	// arrived if the egress is idle and not faster than the ingress.
	CutThrough CutThrough
	// HonourPause makes the switch keep per-class pause state on every
	// port even when it sends no PAUSE frames itself (no lossless class):
	// the fabric sets it when another switch may pause this one.
	HonourPause bool
	// INT, when Enabled, appends an in-band telemetry record to every data
	// packet at dequeue (HPCC). The engine's pool must keep telemetry
	// (sim.Pool.EnableTelemetry).
	INT INT
	// Modules selects the pipeline's modules by stage (module.go); a
	// stage without a name takes the built-in the fields above imply.
	Modules Pipeline
	// Registry resolves the module names (nil: the built-ins).
	Registry *Registry
}

// INT is in-band network telemetry as HPCC uses it (Li et al., SIGCOMM
// 2019, §3.2, §4.1): per hop, the egress port's queue length, cumulative
// transmitted bytes, the dequeue timestamp and the link rate.
type INT struct {
	Enabled bool
	// HopBytes is what one record adds to the packet on the wire (HPCC's
	// INT header: 8 bytes per hop).
	HopBytes int32
}

// CutThrough is cut-through forwarding: a switch starts sending a packet
// once its first Header bytes have arrived, instead of its last byte
// (store-and-forward), when the egress port is idle (nothing queued, the
// link free since the header arrived) and its rate is at most the
// ingress link's, so the egress never runs out of bytes to send (an
// underrun). Otherwise the packet is stored and forwarded. Packets on
// impaired links (jitter, loss, rate changes) are stored and forwarded.
type CutThrough struct {
	Enabled bool
	Header  int32 // bytes that must arrive before forwarding (default 64)
}

// Class is one traffic class of every port.
type Class struct {
	// Weight 0 makes the class strict priority: strict classes are served
	// before the weighted ones, the highest class first. Weight w > 0 makes
	// it a deficit weighted round robin class with a quantum of
	// w × DWRRQuantum bytes (Shreedhar and Varghese, SIGCOMM 1995).
	Weight int
	// Lossless classes are flow-controlled by PFC and never dropped for
	// want of egress buffer (only a headroom overflow drops them).
	Lossless bool
	// Alpha is the class's dynamic-threshold factor in the shared buffer
	// (Choudhury and Hahne, IEEE/ACM ToN 1998): a queue may grow to Alpha
	// times the free shared buffer beyond its reserved space.
	Alpha float64
}

// DWRRQuantum is the quantum, in bytes, of a DWRR class of weight 1.
const DWRRQuantum = 1500

// PFC is the priority flow control of the lossless classes. Thresholds
// count the bytes in the switch that entered by one ingress port in one
// class (802.1Qbb accounts at the ingress).
type PFC struct {
	// XOFF: above it the switch sends a PAUSE upstream; XON: at or below it
	// the switch sends a PAUSE with quanta 0 (resume).
	XOFF, XON int64
	// Headroom is the space above XOFF for what is in flight when the pause
	// takes effect. 0 derives it per port from the link as vendors do:
	// 2 × (rate × delay) + 2 × MTU + one PAUSE frame.
	Headroom int64
	// MTU for the derived headroom (default 9216, jumbo frames).
	MTU int64
	// Quanta of an XOFF frame, in 512-bit times of the link (default
	// 0xffff). The switch refreshes the pause at half that time.
	Quanta uint16
	// Watchdog: a cycle of ports each paused by the next for at least this
	// long while holding packets is a PFC deadlock, which stops the run
	// (sim.FindDeadlock; the runner and the barrier search). 0: none.
	Watchdog sim.Time
	// Storm is the PFC storm watchdog of every port (nil: none;
	// pfcstorm.go). A pointer keeps the switch small without it.
	Storm *StormWatchdog
}

// WithDefaults is p with the defaults of a zero MTU (9216) and Quanta
// (0xffff) filled in, as a switch runs it.
func (p PFC) WithDefaults() PFC {
	if p.Quanta == 0 {
		p.Quanta = 0xffff
	}
	if p.MTU == 0 {
		p.MTU = 9216
	}
	return p
}

// DerivedHeadroom is the PFC headroom of a port that receives by link l
// when PFC.Headroom is 0: 2 × (rate × delay) + 2 × mtu + one PAUSE frame.
func DerivedHeadroom(l *sim.Link, mtu int64) int64 {
	return 2*l.Spec.Rate.BytesIn(l.Spec.Delay) + 2*mtu + sim.PauseFrameSize
}

// StormWatchdog is the PFC watchdog switches ship against PAUSE storms
// (Guo et al., "RDMA over Commodity Ethernet at Scale", SIGCOMM 2016,
// §4.3; SONiC's pfcwd; Juniper's and Arista's "PFC watchdog"): an egress
// class queue that its peer has kept paused without a break for Detect
// while it holds packets is in a storm; the port then stops honouring
// PAUSE frames for that class (and, with StormDrop, discards the class's
// packets to and from the peer) until no PAUSE frame for the class has
// arrived for Restore.
type StormWatchdog struct {
	Detect, Restore sim.Time
	Action          StormAction
}

// StormAction is what a port does while its watchdog mitigates a storm.
type StormAction uint8

const (
	// StormDrop discards the class's packets queued for the peer, arriving
	// for it and arriving from it (SONiC's "drop", Guo et al.'s switch
	// watchdog). The zero StormAction means "not set" (Drop).
	StormDrop StormAction = 1 + iota
	// StormForward sends the class's packets to the peer, paused or not
	// (SONiC's "forward").
	StormForward
)

func (a StormAction) String() string {
	switch a {
	case StormDrop:
		return "drop"
	case StormForward:
		return "forward"
	}
	return "invalid"
}

// ParseStormAction maps a scenario name to a StormAction.
func ParseStormAction(s string) (StormAction, error) {
	switch s {
	case "drop", "":
		return StormDrop, nil
	case "forward":
		return StormForward, nil
	}
	return 0, fmt.Errorf("unknown storm action %q (known: drop, forward)", s)
}

// Shared is a switch-wide buffer pool.
type Shared struct {
	Size     int64 // bytes shared by every queue of the switch
	Reserved int64 // bytes of each (port, class) queue outside the pool
}

// Trim is packet trimming (NDP, Handley et al., SIGCOMM 2017; Ultra
// Ethernet).
type Trim struct {
	Enabled bool
	Header  int32 // bytes of a trimmed packet (default 64)
	// Queue is the bytes of trimmed headers a port may hold beyond its
	// data buffer, in the control class (default 1024 headers).
	Queue int64
}

// Check validates c for a switch.
func (c *Config) Check() error {
	if len(c.Classes) > sim.MaxClasses {
		return fmt.Errorf("at most %d classes, got %d", sim.MaxClasses, len(c.Classes))
	}
	nc := max(1, len(c.Classes))
	if c.ControlClass < 0 || c.ControlClass >= nc {
		return fmt.Errorf("control class %d: the switch has %d classes", c.ControlClass, nc)
	}
	lossless := false
	for i, k := range c.Classes {
		if k.Weight < 0 {
			return fmt.Errorf("class %d: weight must not be negative, got %d", i, k.Weight)
		}
		if k.Alpha < 0 {
			return fmt.Errorf("class %d: alpha must not be negative, got %g", i, k.Alpha)
		}
		lossless = lossless || k.Lossless
	}
	if lossless {
		p := &c.PFC
		if p.XOFF <= 0 || p.XON < 0 || p.XON > p.XOFF {
			return fmt.Errorf("pfc: want 0 <= xon <= xoff and xoff > 0, got xon %d, xoff %d", p.XON, p.XOFF)
		}
		if p.Headroom < 0 || p.MTU < 0 || p.Watchdog < 0 {
			return fmt.Errorf("pfc: headroom, mtu and watchdog must not be negative")
		}
		if w := p.Storm; w != nil && (w.Detect <= 0 || w.Restore <= 0 || w.Action > StormForward) {
			return fmt.Errorf("pfc: storm watchdog: want a positive detect and restore and an action, got %+v", *w)
		}
	}
	if c.Shared.Size < 0 || c.Shared.Reserved < 0 {
		return fmt.Errorf("shared buffer: size and reserved must not be negative")
	}
	if c.Trim.Header < 0 {
		return fmt.Errorf("trim: header must not be negative")
	}
	if c.INT.HopBytes < 0 {
		return fmt.Errorf("int: hop bytes must not be negative")
	}
	if c.CutThrough.Header < 0 {
		return fmt.Errorf("cut-through: header must not be negative")
	}
	return nil
}

// lossless reports whether any class is lossless.
func (c *Config) lossless() bool {
	for _, k := range c.Classes {
		if k.Lossless {
			return true
		}
	}
	return false
}
