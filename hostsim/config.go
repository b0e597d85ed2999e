// Package hostsim models end hosts: a NIC that serialises at line rate from
// an unbounded transmit queue, and per-flow transport endpoints. A flow's
// sender glues a congestion-control module and a loss-recovery module from
// package cc (which decide) to the NIC and the timers (which act); its
// receiver reassembles data and acknowledges it.
//
// Not modelled (yet): delayed ACKs, pacing, TSO bursts, receive windows,
// connection set-up and tear-down, and host processing delay.
package hostsim

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// ECNEcho selects how a receiver echoes CE marks.
type ECNEcho uint8

const (
	echoInvalid ECNEcho = iota
	// EchoRFC3168 sets ECE on every ACK from the first CE mark until a data
	// packet with CWR arrives (RFC 3168 §6.1.3).
	EchoRFC3168
	// EchoPerPacket sets ECE exactly on the ACKs of CE-marked packets, as
	// DCTCP's receiver does with one ACK per packet (RFC 8257 §3.2).
	EchoPerPacket
)

// EntropyMode selects the entropy value a sender writes in data packets.
type EntropyMode uint8

const (
	entropyInvalid EntropyMode = iota
	// EntropyFlow: one value per flow (derived from the flow id).
	EntropyFlow
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
}

// DefaultConfig: Reno, RFC 6298 RTO with a 200 ms minimum, 1500-byte MTU
// with 64 bytes of headers, 64-byte ACKs, ECN off.
func DefaultConfig() Config {
	c := Config{CC: cc.DefaultConfig(), RTO: cc.DefaultRTOConfig(), MTU: 1500, Header: 64,
		AckSize: 64, Echo: EchoRFC3168, Entropy: EntropyFlow}
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
	return nil
}

// FlowSpec is one flow of the workload.
type FlowSpec struct {
	ID    int32
	Src   int // host index
	Dst   int // host index
	Size  int64
	Start sim.Time
}

// FlowRecord is what a run reports per flow. The sender fills the send-side
// fields and the receiver Finish, so partitions can merge their records.
type FlowRecord struct {
	Started       bool
	Finished      bool     // the receiver has every byte
	Finish        sim.Time // when the last byte arrived
	AckedAt       sim.Time // when the sender saw everything acknowledged (0 if not)
	PacketsSent   uint64   // data packets sent, retransmissions included
	Retransmits   uint64
	Timeouts      uint64
	ECNMarkedAcks uint64
	BytesReceived uint64 // distinct payload bytes delivered in order
}
