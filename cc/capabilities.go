package cc

import "github.com/lockstep-sim/lockstep/sim"

// Capabilities: a module says what it needs from the host and the
// scenario by implementing small optional interfaces, found once when the
// flow is built (gVisor picks its recovery by capability, sackPermitted;
// toxiproxy's CleanupToxic and BufferedToxic are the same pattern). A new
// module plugs in by implementing the ones it needs: no host or scenario
// code compares module names.

// PerPacketAcker is a module that needs one ACK per data packet, each
// naming the packet it answers (Ack.Echo) and, after an out-of-order
// arrival, the receiver's bitmap (STrack). Receivers then neither delay
// nor coalesce ACKs and echo CE per packet.
type PerPacketAcker interface {
	PerPacketAcks()
}

// SackUser is a module that needs receivers to send SACK blocks (RFC
// 2018): SACK-based recovery (RFC 6675) and RACK (RFC 8985).
type SackUser interface {
	NeedsSack()
}

// HopAware is a controller whose target depends on the flow's path length
// (STrack's target delay). The endpoint calls SetHops once at
// construction.
type HopAware interface {
	SetHops(hops int)
}

// PathSteerer is a controller that spreads its packets over paths with
// the host's path manager (cc.PathManager) and reacts to congestion
// through it. DefaultPaths names the path-selection mode (ParsePathMode)
// a scenario gets when it names none.
type PathSteerer interface {
	DefaultPaths() string
}

// RecoveryRequirer is a controller that works with one recovery only; a
// scenario that names no recovery gets it.
type RecoveryRequirer interface {
	RequiredRecovery() string
}

// ECNDriven is a controller whose only congestion signal besides loss is
// the ECN echo (DCTCP): without ECN-capable packets (transport.ecn) it
// never sees a mark, so a scenario must enable ECN to use it.
type ECNDriven interface {
	NeedsECN()
}

// PDSAcker is a module that needs Ultra Ethernet PDS receivers (UET's
// recovery, cc/uet_recovery.go): ACKs coalesced by bytes and sent at once
// for a CE mark, an ack request or a duplicate, each naming the packet
// that triggered it and carrying a 64-bit SACK bitmap; a NACK naming each
// trimmed packet. Receivers then neither delay ACKs nor answer every
// packet.
type PDSAcker interface {
	PDSAcks()
}

// NackRecovery is a recovery that takes NACKs naming one packet (UET's
// trim NACKs): OnNack marks the packet at seq lost and queues it for
// retransmission. ok is false when the packet is not outstanding (already
// acknowledged or already queued), and nothing changed.
type NackRecovery interface {
	OnNack(now sim.Time, seq uint64) (bytes int64, st SeqState, ok bool)
}

// NackReactor is a controller that reacts to a NACK of a trimmed packet
// (NSCC, UEC 1.0 §3.6.13.5).
type NackReactor interface {
	OnNack(ev *NackEvent)
}

// NackEvent tells a NackReactor what one trim NACK did.
type NackEvent struct {
	Now sim.Time
	// Bytes is the payload of the NACKed packet.
	Bytes int64
	// RTT is the time since the NACKed packet left (its echoed
	// timestamp), 0 if unknown.
	RTT sim.Time
	// LastHop: the packet was trimmed at the last switch (the
	// receiver's downlink), not in the fabric.
	LastHop bool
	// PriorInFlight is the bytes in flight before the packet was taken
	// out of the flight.
	PriorInFlight int64
	MSS           int64
}

// TimeoutReactor is a controller that hears of the bytes a recovery's
// per-packet timers declared lost (NSCC: mark_packet_for_retransmission),
// instead of OnCongestion(CongRTO).
type TimeoutReactor interface {
	OnPacketTimeout(now sim.Time, bytes int64)
}

// OwnTimeouts is a recovery that times out packets itself, one by one
// (UET: each packet RTO after it left): the endpoint arms no RFC 6298
// timer, and the recovery's TimedRecovery deadline does the work.
type OwnTimeouts interface {
	TimedRecovery
	OwnsTimeouts()
}

// TimedOutPaths is a recovery that reports the entropies of the packets
// its timers declared lost by the last OnDeadline (the path manager
// penalises them).
type TimedOutPaths interface {
	TimedOutEntropies() []uint16
}

// SendStamper is a recovery whose per-packet timers run from when a
// packet starts serialising on the NIC, not from when the endpoint hands
// it over (UET: uet-htsim's UecSrc creates a packet's send record and
// starts its timer in sendNewPacket/sendRtxPacket, which its UecNIC calls
// when a port is free). The host reports that moment.
type SendStamper interface {
	OnSerialise(now sim.Time, seq uint64) SeqState
}

// ECNReactor is a controller that reads the ECN echo of every ACK in
// OnAck itself (NSCC's quadrants): the endpoint applies no RFC 3168
// once-per-window reduction for it.
type ECNReactor interface {
	ReactsToECN()
}

// NICScheduled is a rate-paced controller (RatePaced) whose flow is an
// RDMA queue pair: the host hands its packets to the NIC only when the
// NIC is free, as an RDMA NIC's scheduler pulls from its queue pairs
// (hostsim/paced.go), so a PFC pause stops the flow rather than filling a
// queue. DCQCN declares it; another rate-paced controller opts in by
// declaring it too.
type NICScheduled interface {
	NICScheduled()
}

// TimedController is a controller with timers of its own (DCQCN's rate
// increase timer, its rate-reduction monitor): Deadline is when OnTimer
// is due (sim.Never: none).
type TimedController interface {
	Deadline() sim.Time
	OnTimer(now sim.Time)
}

// SendObserver is a controller told of every packet sent, with its size
// on the wire (DCQCN's byte counter); OnSend reports whether the
// controller's state changed.
type SendObserver interface {
	OnSend(now sim.Time, bytes int64) bool
}

// CNPReactor is a controller that reacts to congestion notification
// packets (DCQCN's reaction point) rather than to ECE: receivers (the
// notification point) send a CNP when CE-marked data arrives, at most one
// per CNPInterval per flow, in the control class.
type CNPReactor interface {
	OnCNP(now sim.Time)
	CNPInterval() sim.Time
}

// NakMode is how a RoCE receiver treats out-of-order data.
type NakMode uint8

// The zero NakMode is "not a RoCE recovery".
const (
	// NakGoBackN: the receiver discards out-of-order packets and sends one
	// NAK (sequence error) per gap; the sender resends from the NAK's
	// expected sequence number.
	NakGoBackN NakMode = 1 + iota
	// NakSelective: the receiver keeps out-of-order packets and answers
	// each with a NAK naming it (IRN); the sender resends only the holes.
	NakSelective
)

// NakRecovery is a RoCE loss recovery: receivers NAK sequence errors as
// NakMode says instead of sending duplicate ACKs.
type NakRecovery interface {
	NakMode() NakMode
}

// DefaultRecoverer is a controller that names the recovery a scenario
// gets when it names none (DCQCN: RoCE go-back-N).
type DefaultRecoverer interface {
	DefaultRecovery() string
}

// INTUser is a controller driven by in-band network telemetry (HPCC):
// switches must append INT records to data packets and receivers echo
// them in ACKs (AckEvent.Tel).
type INTUser interface {
	NeedsINT()
}

// EndpointDelayUser is a controller that splits each RTT sample into
// fabric and endpoint delay (Swift): hosts must record the NIC queueing
// and the receiver's ACK delay (sim.Telemetry.NICWait, EndpointDelay).
type EndpointDelayUser interface {
	NeedsEndpointDelay()
}

// Capabilities is what a pair of modules declares.
type Capabilities struct {
	// PDSAcks: PDSAcker.
	PDSAcks bool
	// PerPacketAcks: PerPacketAcker.
	PerPacketAcks bool
	// NeedsSack: SackUser.
	NeedsSack bool
	// HopAware: HopAware.
	HopAware bool
	// SteersPaths: PathSteerer; DefaultPaths its default mode.
	SteersPaths  bool
	DefaultPaths string
	// Recovery is the recovery the controller requires, "" for any.
	Recovery string
	// NeedsECN: ECNDriven.
	NeedsECN bool
	// NeedsINT: INTUser; NeedsEndpointDelay: EndpointDelayUser.
	NeedsINT, NeedsEndpointDelay bool
	// NICScheduled: NICScheduled (a rate-paced RDMA queue pair).
	NICScheduled bool
	// CNP: CNPReactor (receivers send CNPs, not ECE).
	CNP bool
	// Nak: the recovery's NakMode (0: not a RoCE recovery).
	Nak NakMode
	// DefaultRecovery: DefaultRecoverer's choice, "" for none.
	DefaultRecovery string
}

// CapabilitiesOf reads what ctl and rec declare.
func CapabilitiesOf(ctl Controller, rec Recovery) Capabilities {
	var c Capabilities
	for _, m := range []any{ctl, rec} {
		if m == nil {
			continue
		}
		if _, ok := m.(PerPacketAcker); ok {
			c.PerPacketAcks = true
		}
		if _, ok := m.(SackUser); ok {
			c.NeedsSack = true
		}
		if _, ok := m.(PDSAcker); ok {
			c.PDSAcks = true
		}
	}
	if _, ok := ctl.(HopAware); ok {
		c.HopAware = true
	}
	if p, ok := ctl.(PathSteerer); ok {
		c.SteersPaths, c.DefaultPaths = true, p.DefaultPaths()
	}
	if _, ok := ctl.(ECNDriven); ok {
		c.NeedsECN = true
	}
	if _, ok := ctl.(INTUser); ok {
		c.NeedsINT = true
	}
	if _, ok := ctl.(EndpointDelayUser); ok {
		c.NeedsEndpointDelay = true
	}
	if r, ok := ctl.(RecoveryRequirer); ok {
		c.Recovery = r.RequiredRecovery()
	}
	if _, ok := ctl.(NICScheduled); ok {
		c.NICScheduled = true
	}
	if _, ok := ctl.(CNPReactor); ok {
		c.CNP = true
	}
	if d, ok := ctl.(DefaultRecoverer); ok {
		c.DefaultRecovery = d.DefaultRecovery()
	}
	if n, ok := rec.(NakRecovery); ok {
		c.Nak = n.NakMode()
	}
	return c
}

// Describe returns the capabilities of the modules cfg names, built with
// their defaults; the controller also with cfg's options (an option may
// declare a capability: HPCC's nic_scheduled), unless they are invalid,
// so that they do not hide the capabilities. cfg's numbers are not used.
// A name the registry does not know declares nothing; Config.Validate
// reports it.
func Describe(cfg Config) Capabilities {
	d := Config{CC: cfg.CC, Recovery: cfg.Recovery, MSS: 1000, InitCwnd: 10, DupThresh: 3,
		PacketRTO: max(cfg.PacketRTO, sim.Microsecond)}
	withOpts := d
	withOpts.Options = cfg.Options
	ctl, err := NewController(withOpts)
	if err != nil {
		ctl, _ = NewController(d)
	}
	rec, _ := NewRecovery(d, 1)
	if ctl == nil && rec == nil {
		return Capabilities{}
	}
	return CapabilitiesOf(ctl, rec)
}

// Prober is read-only introspection of a controller's own variables by
// name, for `lockstep cc trace` expectations (`expect ctl.u=0.95`): HPCC's
// utilisation and reference window, Swift's two windows and its target.
// ok is false for a name the controller does not know.
type Prober interface {
	Probe(name string) (v float64, ok bool)
}
