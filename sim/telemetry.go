package sim

// Per-packet telemetry: in-band network telemetry (INT) records that
// switches append, and the host timestamps that split a round trip into
// fabric and endpoint delay. It lives in a side table of the packet pool,
// indexed by PktRef and allocated only when a scenario turns it on, so
// that Packet, the hot struct, does not grow and a run without telemetry
// pays nothing (the table is nil).
//
// INT follows HPCC (Li et al., SIGCOMM 2019, §3.2 and §4.1; ns-3
// int-header.h of alibaba-edu/High-Precision-Congestion-Control): each
// switch on the path appends, for the egress port the packet leaves by,
// the timestamp of the dequeue, the port's cumulative transmitted bytes,
// its queue length and its link rate; the receiver copies the records into
// the ACK. ns-3 packs a hop into 8 bytes (24-bit time, 20-bit bytes in 128 B
// units, 17-bit queue in 80 B units, 3-bit rate code); we keep exact values
// and count the 8 bytes on the wire (switchsim.INT.HopBytes).

// MaxINTHops is the number of INT records a packet holds (ns-3 IntHeader
// maxHop = 5, enough for a 3-tier fat-tree: 5 switches host to host). A
// switch beyond the fifth appends nothing.
const MaxINTHops = 5

// INTHop is what one switch records about the egress port a packet left by.
type INTHop struct {
	// TS is when the packet was dequeued (started serialisation).
	TS Time
	// TxBytes is the port's cumulative transmitted bytes before this
	// packet (ns-3 SwitchNode::SwitchNotifyDequeue pushes the record, then
	// adds the packet to m_txBytes).
	TxBytes uint64
	// QLen is the bytes queued at the port after the packet left the queue.
	QLen int64
	// Rate is the egress link's rate.
	Rate Bandwidth
}

// Telemetry is a packet's side-table entry.
type Telemetry struct {
	// NHops INT records are valid in Hops.
	NHops uint8
	Hops  [MaxINTHops]INTHop
	// NICWait is how long the packet waited in its host's NIC queue: from
	// when the transport built it (TSval) to when the NIC started
	// serialising it. Set by the host when host timestamps are on.
	NICWait Time
	// EndpointDelay, on an ACK, is the endpoint part of the round trip it
	// closes, before the ACK's own NICWait: the echoed data packet's wait
	// in the sender's NIC plus the time from its arrival at the receiver to
	// the ACK's creation (docs/decisions.md, Swift's endpoint delay).
	EndpointDelay Time
}

// PushHop appends an INT record; it reports false (and records nothing)
// when the packet already holds MaxINTHops.
func (t *Telemetry) PushHop(h INTHop) bool {
	if int(t.NHops) >= MaxINTHops {
		return false
	}
	t.Hops[t.NHops] = h
	t.NHops++
	return true
}

// EnableTelemetry gives every packet of the pool a Telemetry entry, zeroed
// on Alloc. Call it before the run; it is idempotent.
func (p *Pool) EnableTelemetry() {
	if p.tel != nil {
		return
	}
	p.tel = make([][]Telemetry, len(p.chunks), max(len(p.chunks), 1))
	for i := range p.tel {
		p.tel[i] = make([]Telemetry, chunkSize)
	}
}

// HasTelemetry reports whether the pool keeps telemetry.
func (p *Pool) HasTelemetry() bool { return p.tel != nil }

// Telemetry returns packet r's entry. Precondition: HasTelemetry.
func (p *Pool) Telemetry(r PktRef) *Telemetry { return &p.tel[r>>chunkBits][r&chunkMask] }

// telArena hands out Telemetry values for packets that leave the partition
// (RemotePacket.Tel). It never reuses a value, since batches keep them
// after the outbox is reset; it allocates one block per telArenaBlock
// packets, which the collector frees when the last batch holding one of
// them is gone.
type telArena struct {
	block []Telemetry
}

const telArenaBlock = 256

func (a *telArena) clone(t *Telemetry) *Telemetry {
	if len(a.block) == 0 {
		a.block = make([]Telemetry, telArenaBlock)
	}
	c := &a.block[0]
	a.block = a.block[1:]
	*c = *t
	return c
}
