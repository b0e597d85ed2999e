// Package hostsim models end hosts: a NIC that serialises at line rate from
// an unbounded transmit queue, and per-flow transport endpoints. A flow's
// sender glues a congestion-control module and a loss-recovery module from
// package cc (which decide) to the NIC and the timers (which act); its
// receiver reassembles data and acknowledges it.
//
// Modelled: delayed ACKs (RFC 5681 §4.2, Linux quick-ACKs), pacing (Linux
// tcp_update_pacing_rate), TSO-like bursts (tcp_tso_should_defer) and a
// receive window; the sending decisions are a cc.Endpoint's. A host may
// be a PFC storm source: a receive pipeline that stalls behind a buffer
// with XOFF/XON, whose NIC then sends PAUSE frames (Storm). Not modelled
// (yet): connection set-up and tear-down, and host processing delay.
package hostsim

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// ECNEcho selects how a receiver echoes CE marks.
type ECNEcho uint8

// The zero ECNEcho is invalid.
const (
	// EchoRFC3168 sets ECE on every ACK from the first CE mark until a data
	// packet with CWR arrives (RFC 3168 §6.1.3).
	EchoRFC3168 ECNEcho = 1 + iota
	// EchoPerPacket sets ECE exactly on the ACKs of CE-marked packets, as
	// DCTCP's receiver does with one ACK per packet (RFC 8257 §3.2).
	EchoPerPacket
)

// EntropyMode selects the entropy value a sender writes in data packets.
type EntropyMode uint8

// The zero EntropyMode is invalid.
const (
	// EntropyFlow: one value per flow (derived from the flow id).
	EntropyFlow EntropyMode = 1 + iota
	// EntropyRandom: a value drawn per packet from the host's stream.
	EntropyRandom
)

// Config is the transport configuration shared by all flows of a run.
type Config struct {
	CC  cc.Config
	RTO cc.RTOConfig
	// MTU is the size on the wire of a full data packet, headers included.
	MTU int64
	// Header is the bytes of headers in every packet; a data packet's
	// payload is MTU-Header (the MSS).
	Header int64
	// AckSize is the size on the wire of a pure ACK.
	AckSize int64
	// ECN makes data packets ECN-capable (ECT) and the sender respond to ECE.
	ECN     bool
	Echo    ECNEcho
	Entropy EntropyMode
	// SACK makes receivers send SACK blocks (RFC 2018).
	SACK bool
	// DelAck configures delayed ACKs at receivers.
	DelAck DelAckConfig
	// TSOSegments is the burst size in segments: the sender defers sending
	// until the window has room for a burst of this many segments, as
	// Linux's tcp_tso_should_defer does, and the burst leaves back to back
	// (0 or 1: no bursts).
	TSOSegments int
	// Pacing spaces the sender's bursts at Linux's pacing rate.
	Pacing cc.PacingConfig
	// RWnd is the receive window in bytes (0: unlimited).
	RWnd int64
	// Trace records a cwnd time series for the flows it selects.
	Trace TraceConfig
	// HoldBack, when positive, keeps a sender from sending while its
	// host's NIC queue holds more than this many packets (htsim PR #4's
	// STrack: queuesize(flow) > 2); 0: no limit.
	HoldBack int
	// INT: data packets carry an in-band telemetry header that switches
	// append records to, and receivers echo the records in their ACKs
	// (HPCC). The engine's pool must keep telemetry.
	INT INTConfig
	// EndpointDelay: hosts record how long packets wait in their NIC and
	// how long a receiver holds an ACK (sim.Telemetry), so that a sender
	// can split RTT into fabric and endpoint delay (Swift). Set by
	// Validate when the controller needs it (cc.EndpointDelayUser).
	EndpointDelay bool
	// STrack, when set, gives every sender a path manager: STrack's
	// (entropies steered by the echoes of per-packet ACKs) or a UET
	// load-balancing policy (cc/uetpaths.go). Per-packet ACKs, NACK
	// bitmaps and UET's PDS receivers follow from the module's
	// capabilities (cc.PerPacketAcker, cc.PDSAcker), not from this field.
	STrack *STrackConfig
	// PDS configures UET's receivers (used when the recovery is a
	// cc.PDSAcker).
	PDS PDSConfig
}

// PDSConfig is the receiver side of UET's packet delivery sublayer
// (hostsim/uet.go).
type PDSConfig struct {
	// AckBytes: a receiver acknowledges once this many bytes (headers
	// included) arrived since its last ACK (uet-htsim
	// UecSink::_bytes_unacked_threshold, 16384; 0: that default).
	AckBytes int64
	// FIFONIC keeps the hosts' single NIC FIFO, with send times taken
	// when a packet enters it, instead of UecNIC's rules (uet_nic.go).
	FIFONIC bool
}

// DefaultPDSAckBytes is htsim's UecSink::_bytes_unacked_threshold.
const DefaultPDSAckBytes = 16384

// INTConfig is the hosts' side of in-band telemetry: what the INT header
// costs on the wire (HPCC §4.1: a 2-byte hop count, and 8 bytes per hop
// record, which switches add and the ACK echoes).
type INTConfig struct {
	Enabled  bool
	Header   int64 // bytes a data packet carries before any record
	HopBytes int64 // bytes of one record in an ACK's echo
}

// DelAckConfig is the receivers' delayed-ACK policy (RFC 5681 §4.2, RFC
// 1122 §4.2.3.2, Linux's __tcp_ack_snd_check).
type DelAckConfig struct {
	Enabled bool
	// Count: ACK at least every Count full segments (RFC 5681: 2).
	Count int
	// Timeout: ACK at most this long after the first unacknowledged
	// segment (Linux TCP_DELACK_MIN is 40 ms; RFC 5681 allows up to 500 ms).
	Timeout sim.Time
	// QuickAcks: the first QuickAcks segments of a flow are acknowledged at
	// once (Linux's quick-ACK mode at connection start).
	QuickAcks int
}

// PacingConfig is the pacing of cc.PacingConfig (Linux tcp_update_pacing_rate).
type PacingConfig = cc.PacingConfig

// TraceConfig selects the flows whose cwnd is recorded (cwnd.csv).
type TraceConfig struct {
	// All records every flow; otherwise Flows lists the ids.
	All   bool
	Flows []int32
	// Interval keeps at most one sample per flow per interval, events
	// (slow-start exit, fast retransmit, RTO) excepted (0: every change).
	Interval sim.Time
}

// DefaultConfig: Reno, RFC 6298 RTO with a 200 ms minimum, 1500-byte MTU
// with 64 bytes of headers, 64-byte ACKs, ECN off.
func DefaultConfig() Config {
	c := Config{CC: cc.DefaultConfig(), RTO: cc.DefaultRTOConfig(), MTU: 1500, Header: 64,
		AckSize: 64, Echo: EchoRFC3168, Entropy: EntropyFlow,
		DelAck: DelAckConfig{Count: 2, Timeout: 40 * sim.Millisecond},
		Pacing: PacingConfig{SSRatio: 2.0, CARatio: 1.2}}
	c.CC.MSS = c.MTU - c.Header
	return c
}

// Validate checks the configuration and sets CC.MSS from MTU and Header.
func (c *Config) Validate() error {
	if c.Header < 0 {
		return fmt.Errorf("header: must not be negative, got %d", c.Header)
	}
	if c.MTU <= c.Header {
		return fmt.Errorf("mtu: must be larger than the header (%d bytes), got %d", c.Header, c.MTU)
	}
	if c.AckSize <= 0 {
		return fmt.Errorf("ack_size: must be positive, got %d", c.AckSize)
	}
	c.CC.MSS = c.MTU - c.Header
	c.CC.PacketRTO = 0
	if c.RTO.Mode == cc.RTOFixed {
		c.CC.PacketRTO = c.RTO.Fixed // a per-packet timeout (recovery uet)
	}
	c.CC.MaxAckDelay = 0
	if c.DelAck.Enabled {
		c.CC.MaxAckDelay = c.DelAck.Timeout
	}
	caps := cc.Describe(c.CC)
	if caps.NeedsSack && !c.SACK {
		return fmt.Errorf("sack: recovery %s needs receivers that send SACK blocks", c.CC.Recovery)
	}
	if err := c.CC.Validate(); err != nil {
		return err
	}
	if err := c.RTO.Validate(); err != nil {
		return err
	}
	if c.Echo != EchoRFC3168 && c.Echo != EchoPerPacket {
		return fmt.Errorf("ecn_echo: invalid mode %d", c.Echo)
	}
	if c.Entropy != EntropyFlow && c.Entropy != EntropyRandom {
		return fmt.Errorf("entropy: invalid mode %d", c.Entropy)
	}
	if d := &c.DelAck; d.Enabled {
		if d.Count < 1 {
			return fmt.Errorf("delayed_ack.count: must be at least 1, got %d", d.Count)
		}
		if d.Timeout <= 0 {
			return fmt.Errorf("delayed_ack.timeout: must be positive, got %v", d.Timeout)
		}
		if d.QuickAcks < 0 {
			return fmt.Errorf("delayed_ack.quickacks: must not be negative, got %d", d.QuickAcks)
		}
	}
	if c.TSOSegments < 0 {
		return fmt.Errorf("tso_segments: must not be negative, got %d", c.TSOSegments)
	}
	if p := &c.Pacing; p.Enabled && (p.SSRatio <= 0 || p.CARatio <= 0) {
		return fmt.Errorf("pacing: ratios must be positive, got ss %v and ca %v", p.SSRatio, p.CARatio)
	}
	if st := c.STrack; st != nil {
		if st.Entropies < 1 || st.Entropies > 1<<15 {
			return fmt.Errorf("strack.entropies: must be in [1, 32768], got %d", st.Entropies)
		}
		if st.Mode.UET() && st.Entropies&(st.Entropies-1) != 0 {
			return fmt.Errorf("entropies: UET's load balancing needs a power of two, got %d", st.Entropies)
		}
		if st.REPSBuffer < 0 || st.REPSBuffer > 1<<15 || st.REPSFreeze < 0 {
			return fmt.Errorf("reps_buffer and reps_freeze: must not be negative (reps_buffer at most 32768)")
		}
	}
	if caps.PerPacketAcks || caps.PDSAcks {
		c.DelAck.Enabled = false // ACKs per packet (STrack) or by PDS's rules (UET)
	}
	if c.PDS.AckBytes < 0 {
		return fmt.Errorf("pds.ack_bytes: must not be negative, got %d", c.PDS.AckBytes)
	}
	if c.HoldBack < 0 {
		return fmt.Errorf("hold_back: must not be negative, got %d", c.HoldBack)
	}
	if c.RWnd < 0 {
		return fmt.Errorf("rwnd: must not be negative, got %d", c.RWnd)
	}
	if caps.NeedsINT && !c.INT.Enabled {
		return fmt.Errorf("int: cc %s needs in-band telemetry (switch.int)", c.CC.CC)
	}
	if c.INT.Header < 0 || c.INT.HopBytes < 0 {
		return fmt.Errorf("int: header and hop bytes must not be negative")
	}
	if caps.NeedsEndpointDelay {
		c.EndpointDelay = true
	}
	return nil
}

// FlowSpec is one flow of the workload.
type FlowSpec struct {
	ID    int32
	Src   int // host index
	Dst   int // host index
	Size  int64
	Start sim.Time
	// Hops is the number of links on the flow's path (set by the fabric;
	// STrack's target delay scales with it).
	Hops int
	// LineRate is the source host's link rate and BaseRTT the flow's
	// unloaded round trip (set by the fabric; HPCC's B and T).
	LineRate sim.Bandwidth
	BaseRTT  sim.Time
	// Class is the traffic class (0-7) of the flow's data packets, which
	// switches with classes queue by.
	Class int
	// Dependencies (docs/design.md §11). A flow with Need > 0 does not
	// start at Start: it starts when it has been activated Need times,
	// each activation arriving Delay after its cause. Next (nil: none)
	// lists the flows this one activates. An activation of a flow that
	// already started changes nothing.
	Need  int32
	Delay sim.Time
	Next  *FlowNext
}

// TaskSpec is a compute task of a job (docs/design.md §11): a point of
// the dependency graph, on host Host, that carries no bytes (a GPU's
// forward or backward compute, an optimizer step). With Need > 0 it fires
// once it has been activated Need times, each activation arriving Delay
// after its cause: Delay is the compute that starts when the last of its
// inputs is there. With Need 0 it fires at Start. Firing activates Next:
// flows by id and tasks by TaskRef.
type TaskSpec struct {
	Host  int
	Need  int32
	Delay sim.Time
	Start sim.Time
	Next  []int32
}

// TaskRef is how an activation list (FlowNext, TaskSpec.Next) names task
// k: -1-k, since flow ids are not negative.
func TaskRef(k int32) int32 { return -1 - k }

// TaskIndex is the task an activation list entry g < 0 names.
func TaskIndex(g int32) int32 { return -1 - g }

// FlowNext lists the flows (and tasks, TaskRef) a flow activates: Recv
// when its receiver has every byte (receiver-side completion), Send when
// its sender has every ACK. A pointer, so that flows without dependencies
// pay 8 bytes.
type FlowNext struct{ Recv, Send []int32 }

// NewFlowNext is the FlowNext of recv and send, or nil when both are
// empty.
func NewFlowNext(recv, send []int32) *FlowNext {
	if len(recv) == 0 && len(send) == 0 {
		return nil
	}
	return &FlowNext{Recv: recv, Send: send}
}

// OnRecvDone lists the flows f activates when its receiver has every byte.
func (f *FlowSpec) OnRecvDone() []int32 {
	if f.Next == nil {
		return nil
	}
	return f.Next.Recv
}

// OnSendDone lists the flows f activates when its sender has every ACK.
func (f *FlowSpec) OnSendDone() []int32 {
	if f.Next == nil {
		return nil
	}
	return f.Next.Send
}

// FlowRecord is what a run reports per flow. The sender fills the send-side
// fields and the receiver Finish, so partitions can merge their records.
type FlowRecord struct {
	Started       bool
	StartAt       sim.Time // when the flow started (sender side)
	Finished      bool     // the receiver has every byte
	Finish        sim.Time // when the last byte arrived
	AckedAt       sim.Time // when the sender saw everything acknowledged (0 if not)
	PacketsSent   uint64   // data packets sent, retransmissions included
	Retransmits   uint64
	Timeouts      uint64
	ECNMarkedAcks uint64
	BytesReceived uint64 // distinct payload bytes delivered in order
}
