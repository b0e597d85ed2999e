// Package topologies builds fabrics as plain values: nodes (hosts and
// switches), full-duplex links with their rate, delay and queue settings,
// and the shortest-path forwarding sets that switches hash over. It does no
// I/O beyond parsing the bytes it is given, and knows nothing of the engine.
package topologies

import (
	"github.com/lockstep-sim/lockstep/sim"
)

// NodeKind says whether a node is a host or a switch.
type NodeKind uint8

const (
	// Host is an end host with a NIC. The zero NodeKind is not a kind, so
	// a node whose kind was forgotten fails Validate.
	Host NodeKind = 1 + iota
	// Switch is an output-queued switch.
	Switch
)

func (k NodeKind) String() string {
	switch k {
	case Host:
		return "host"
	case Switch:
		return "switch"
	}
	return "invalid"
}

// Node is a host or a switch.
type Node struct {
	Name string
	Kind NodeKind
	// Tier: 0 for hosts, 1 for ToR/leaf switches, 2 for aggregation/spine,
	// 3 for core. Explicit graphs may use any value.
	Tier int
	// Latency is a switch's fixed forwarding latency (htsim's
	// Switch_Latency_ns); it is added to the delay of the switch's
	// outgoing links.
	Latency sim.Time
	// Group, when positive, puts a switch in an intra-server fabric (a
	// server's NVLink: its NVSwitch and its GPUs' NIC ports). A link
	// between two switches of one group is intra-group, and routes use
	// such links only on a path's first stretch, in the group where the
	// packet starts (Routes: PXN). 0: no group.
	Group int
}

// ECNMode selects how a switch port marks ECN-capable packets.
type ECNMode uint8

const (
	// ECNOff never marks.
	ECNOff ECNMode = iota
	// ECNStep marks when the queue holds more than K bytes on arrival
	// (DCTCP-style step threshold).
	ECNStep
	// ECNRED marks with probability rising linearly from 0 at Min bytes to
	// PMax at Max bytes of instantaneous queue, and always above Max.
	ECNRED
)

// ECNConfig is a port's marking rule.
type ECNConfig struct {
	Mode ECNMode
	// Dequeue marks when a packet leaves the queue, by the backlog behind
	// it, instead of on arrival (htsim's UEC queues do this).
	Dequeue bool
	K       int64   // ECNStep threshold, bytes
	Min     int64   // ECNRED lower threshold, bytes
	Max     int64   // ECNRED upper threshold, bytes
	PMax    float64 // ECNRED marking probability at Max
}

// QueueConfig is the output queue of a switch port.
type QueueConfig struct {
	Buffer int64 // bytes; a packet that does not fit is dropped (drop-tail)
	ECN    ECNConfig
}

// Link is a full-duplex link between nodes A and B. The same rate, delay
// and queue settings apply in both directions; the queue settings apply at
// whichever ends are switches (hosts have their own NIC queue).
type Link struct {
	A, B  int
	Rate  sim.Bandwidth
	Delay sim.Time
	Queue QueueConfig
	// Tier is the tier of the upper end (1 for host-ToR links, 2 for
	// ToR-agg, 3 for agg-core), for per-tier settings and reports.
	Tier int
}

// Port is one end of a link as seen from a node: port i of a node is the
// i-th link (in Links order) that touches it.
type Port struct {
	Link int // index into Topology.Links
	Peer int // node at the other end
}

// Topology is a fabric: plain data, with no derived state. Host i is node
// Hosts[i]; hosts are numbered in the order the builder created them.
// Compile turns it into the Index that ports and routes are looked up in.
type Topology struct {
	Name  string
	Nodes []Node
	Links []Link
	Hosts []int
}
