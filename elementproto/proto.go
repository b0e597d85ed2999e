// Package elementproto is the element protocol: how an element written
// outside lockstep (a switch in another program, or another language)
// joins a run as one element, stepped by the run's windows
// (docs/external-elements.md).
//
// lockstep sends the element a Setup once, then one Window per lockstep
// window: the packets that arrived at the element in [Start, End), in
// the order lockstep's events processed them. The element answers each
// with a Reply: the packets it starts sending in the window (the egress
// port and the time serialisation starts), the packets it drops, and the
// time of its next event after the window (a queued packet's start).
// lockstep serialises each departing packet on the port's link (rate and
// propagation delay, as for its own elements), so the element never
// needs the delays. A packet that has not left stays in the element
// across windows; it is named by its Handle.
//
// Every message is msgpack (the struct tags below name the keys), at
// most MaxMessage bytes. The package imports nothing of lockstep, so an
// element needs only it (examples/extswitch); another language needs
// only this file's types.
//
// Times are integer picoseconds. A departure must start no earlier than
// its packet's arrival, no earlier than the end of the previous
// departure on the same port (start + TxTime(size, rate)), and before
// the window's End; Next must be at or after End (or -1: nothing
// pending). An element may take a packet only once (a departure or a
// drop) and only one lockstep gave it. lockstep checks every reply and
// fails the run, naming the element, when one breaks a rule or does not
// come within the peer timeout.
package elementproto

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Version is the protocol version a Setup carries.
const Version = 1

// MaxMessage is the largest message either side sends or accepts.
const MaxMessage = 8 << 20

// Setup describes the element to itself, once, before the first window.
type Setup struct {
	Version int    `msgpack:"v"`
	Element int32  `msgpack:"id"` // the element's id in the run
	Name    string `msgpack:"name"`
	// Seed is the run's seed (an element that draws random numbers seeds
	// its own stream from it and Element, so that runs repeat).
	Seed  uint64 `msgpack:"seed"`
	Ports []Port `msgpack:"ports"`
	// Routes[h] lists the ports on shortest paths to destination host h
	// (empty: no route), in lockstep's order.
	Routes [][]int32 `msgpack:"routes"`
}

// Port is one of the element's ports: a link to Peer.
type Port struct {
	Peer    int32 `msgpack:"peer"` // the element at the other end
	RateBps int64 `msgpack:"rate"` // bits per second
	Buffer  int64 `msgpack:"buf"`  // bytes of output buffer
	ECN     ECN   `msgpack:"ecn"`
}

// ECN is a port's marking rule, as the scenario gives it (topology
// tiers' ecn): Mode 0 off, 1 step (mark above K bytes), 2 RED (Min, Max,
// PMax); Dequeue marks by the backlog behind a leaving packet instead of
// the occupancy an arriving one finds.
type ECN struct {
	Mode    uint8   `msgpack:"mode"`
	K       int64   `msgpack:"k"`
	Min     int64   `msgpack:"min"`
	Max     int64   `msgpack:"max"`
	PMax    float64 `msgpack:"pmax"`
	Dequeue bool    `msgpack:"deq"`
}

// Window is one lockstep window's input: the packets that arrived at the
// element in [Start, End).
type Window struct {
	Seq      uint64    `msgpack:"seq"` // 0, 1, 2, ...
	Start    int64     `msgpack:"start"`
	End      int64     `msgpack:"end"`
	Arrivals []Arrival `msgpack:"in"`
}

// Arrival is one packet that arrived (its last bit) at At by Port.
// Arrivals at one time come in lockstep's event order: by the sending
// element's id. An element that mimics lockstep's switches orders its
// own completions at that time the same way: its completion (its own id)
// comes before an arrival from a peer with a larger id, after one from a
// smaller id.
type Arrival struct {
	Handle uint64 `msgpack:"h"`
	At     int64  `msgpack:"at"`
	Port   int32  `msgpack:"port"`
	Pkt    Header `msgpack:"pkt"`
}

// Header is what an element may read of a packet. It cannot change it
// but for Flags (Departure.Flags).
type Header struct {
	ID      uint64 `msgpack:"id"`
	Flow    int32  `msgpack:"flow"`
	SrcHost int32  `msgpack:"src"`
	DstHost int32  `msgpack:"dst"`
	SrcPort uint16 `msgpack:"sport"`
	DstPort uint16 `msgpack:"dport"`
	Proto   uint8  `msgpack:"proto"`
	Hops    uint8  `msgpack:"hops"`
	// Flags are lockstep's header bits: 1 data, 2 ACK, 4 ECT, 8 CE, ...,
	// the traffic class in bits 13-15 (sim.Flags).
	Flags   uint16 `msgpack:"flags"`
	Entropy uint16 `msgpack:"ent"`
	Size    int32  `msgpack:"size"`
	Payload int32  `msgpack:"pay"`
	Seq     uint64 `msgpack:"seqno"`
}

// Header flag bits an element uses.
const (
	FlagECT = 1 << 2
	FlagCE  = 1 << 3
)

// Reply is the element's answer to one Window.
type Reply struct {
	Seq        uint64      `msgpack:"seq"` // the Window's
	Departures []Departure `msgpack:"out"`
	Drops      []uint64    `msgpack:"drop"`
	// Next is the time of the element's next event at or after the
	// window's End (a queued packet's start), -1 when it holds nothing.
	Next int64 `msgpack:"next"`
	// Counters are the element's cumulative port counters, by port
	// (optional: lockstep reports them as its switches').
	Counters []Counters `msgpack:"ctr"`
}

// Departure is a packet the element starts sending in the window.
type Departure struct {
	Handle uint64 `msgpack:"h"`
	Port   int32  `msgpack:"port"`
	Start  int64  `msgpack:"start"`
	Flags  uint16 `msgpack:"flags"` // the header's flags as it leaves (CE set ...)
}

// Counters are one port's statistics (as lockstep's switches count them).
type Counters struct {
	Enqueued  uint64 `msgpack:"enq"`
	Dropped   uint64 `msgpack:"drop"`
	Marked    uint64 `msgpack:"mark"`
	Bytes     uint64 `msgpack:"bytes"`
	PeakBytes int64  `msgpack:"peak"`
	TxPackets uint64 `msgpack:"tx"`
}

// TxTime is the serialisation time of size bytes at rateBps, in
// picoseconds, rounded up: lockstep's links use exactly this.
func TxTime(size int32, rateBps int64) int64 {
	bits := int64(size) * 8 * 1_000_000_000_000
	return (bits + rateBps - 1) / rateBps
}

// Marshal encodes a message (Setup, Window or Reply).
func Marshal(v any) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxMessage {
		return nil, fmt.Errorf("elementproto: a message of %d bytes, more than %d", len(b), MaxMessage)
	}
	return b, nil
}

// Unmarshal decodes a message of at most MaxMessage bytes into v.
func Unmarshal(b []byte, v any) error {
	if len(b) > MaxMessage {
		return fmt.Errorf("elementproto: a message of %d bytes, more than %d", len(b), MaxMessage)
	}
	return msgpack.Unmarshal(b, v)
}
