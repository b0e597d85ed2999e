package sim

// PktRef is the index of a packet in a Pool. Events and queues hold refs, not
// pointers, so the garbage collector never scans them.
type PktRef int32

// NoPacket is the nil PktRef.
const NoPacket PktRef = -1

// Flags are the header bits lockstep's transports use.
type Flags uint16

const (
	// FlagData: the packet carries payload bytes [Seq, Seq+Payload).
	FlagData Flags = 1 << iota
	// FlagAck: the packet acknowledges; Ack is the cumulative ACK.
	FlagAck
	// FlagECT: ECN-capable transport (RFC 3168 ECT(0)).
	FlagECT
	// FlagCE: congestion experienced, set by a switch on an ECT packet.
	FlagCE
	// FlagECE: ECN echo from the receiver.
	FlagECE
	// FlagCWR: congestion window reduced, from the sender.
	FlagCWR
	// FlagNack: a negative acknowledgement (STrack), with Bitmap.
	FlagNack
	// FlagRetx: the data packet is a retransmission (for statistics only;
	// forwarding never looks at it).
	FlagRetx
	// FlagTrimmed: a switch cut the data packet to its header (NDP packet
	// trimming, Handley et al., SIGCOMM 2017): Seq and Payload still name
	// the bytes it carried, Size is the header's.
	FlagTrimmed
	// FlagPause: an IEEE 802.1Qbb priority-based flow control PAUSE frame
	// (MAC control, Ethertype 0x8808, opcode 0x0101) from a switch to its
	// link peer: Bitmap is the class-enable vector, Seq holds the pause
	// quanta of classes 0-3 and Ack those of classes 4-7, 16 bits each.
	// It is never forwarded.
	FlagPause
	// FlagCNP: a RoCEv2 congestion notification packet (DCQCN's
	// notification point to its reaction point, IBTA RoCEv2 Annex A17.9.3,
	// BTH opcode 0x81): it carries no payload and names its flow.
	FlagCNP
	// FlagAckReq: a UET data packet asks its receiver for an ACK at once
	// (the PDS ack-request flag; uet-htsim's set_ar).
	FlagAckReq
)

// The traffic class (0-7, 802.1p-like priority) rides in the top three
// bits of Flags, so that it crosses partitions with the header.
const (
	ClassShift           = 13
	FlagClassMask  Flags = 7 << ClassShift
	MaxClasses           = 8
	PauseFrameSize       = 64 // a minimum Ethernet frame
)

// Class is the packet's traffic class.
func (p *Packet) Class() int { return int(p.Flags&FlagClassMask) >> ClassShift }

// SetClass sets the packet's traffic class (0-7).
func (p *Packet) SetClass(c int) {
	p.Flags = p.Flags&^FlagClassMask | Flags(c&7)<<ClassShift
}

// PauseQuanta is the quanta a PAUSE frame gives class c.
func (p *Packet) PauseQuanta(c int) uint16 {
	v := p.Seq
	if c >= 4 {
		v = p.Ack
	}
	return uint16(v >> (16 * uint(c&3)))
}

// SetPauseQuanta sets the quanta of class c and enables it in the vector.
func (p *Packet) SetPauseQuanta(c int, q uint16) {
	sh := 16 * uint(c&3)
	v := &p.Seq
	if c >= 4 {
		v = &p.Ack
	}
	*v = *v&^(0xffff<<sh) | uint64(q)<<sh
	p.Bitmap |= 1 << uint(c)
}

// SackBlock is one SACK block [Start, End) in bytes (RFC 2018).
type SackBlock struct{ Start, End uint64 }

// MaxSackBlocks is how many SACK blocks an ACK carries (TCP fits 3 with
// timestamps, 4 without; we model 4).
const MaxSackBlocks = 4

// Packet is a packet's header as lockstep models it. Payload bytes are not
// stored: only their count and sequence range. The fields every hop reads
// (the hop count, forwarding, admission) come first, in 24 bytes: a Packet
// is 144 bytes, so in the pool's chunks (page-aligned arrays) they straddle
// a cache line in one packet of four (the ID first, they did in two).
type Packet struct {
	Flags   Flags
	Entropy uint16 // per-packet path choice for spraying switches
	Hops    uint8  // links crossed, counted when the packet arrives
	Proto   uint8
	NSack   uint8
	SrcHost int32  // host index of the sender (not the element id)
	DstHost int32  // host index of the destination; forwarding looks it up
	SrcPort uint16 // transport ports: with hosts and Proto, the 5-tuple
	DstPort uint16
	Size    int32 // bytes on the wire, headers included
	Payload int32 // payload bytes
	Flow    int32 // global flow id

	ID     uint64 // unique in the run: source element and its own counter
	Seq    uint64 // first payload byte (data); echoed sequence (acks)
	Ack    uint64 // cumulative acknowledgement (acks); the Hops at which a switch trimmed a data packet
	Bitmap uint64 // received-bitmap after Ack (NACKs)
	TSval  Time   // sender's timestamp (RFC 7323 style, exact)
	TSecr  Time   // echoed timestamp
	Sack   [MaxSackBlocks]SackBlock
}

const (
	chunkBits = 12
	chunkSize = 1 << chunkBits
	chunkMask = chunkSize - 1
)

// Pool hands out packets from chunked slabs with a free list. A *Packet from
// Get stays valid until the packet is freed, even when the pool grows.
// Steady-state Alloc and Free do not allocate.
type Pool struct {
	chunks [][]Packet
	tel    [][]Telemetry // the telemetry side table; nil when off
	free   []PktRef
	next   int32 // first never-used slot
	live   int
}

// Alloc returns a zeroed packet.
func (p *Pool) Alloc() PktRef {
	p.live++
	if n := len(p.free); n > 0 {
		r := p.free[n-1]
		p.free = p.free[:n-1]
		*p.Get(r) = Packet{}
		if p.tel != nil {
			p.clearTelemetry(r)
		}
		return r
	}
	r := PktRef(p.next)
	if int(p.next)>>chunkBits == len(p.chunks) {
		p.chunks = append(p.chunks, make([]Packet, chunkSize))
		if p.tel != nil {
			p.tel = append(p.tel, make([]Telemetry, chunkSize))
		}
	}
	p.next++
	return r
}

// clearTelemetry zeroes what a reused slot's telemetry holds (records
// beyond NHops are never read).
func (p *Pool) clearTelemetry(r PktRef) {
	t := p.Telemetry(r)
	t.NHops, t.NICWait, t.EndpointDelay = 0, 0, 0
}

// Free returns r to the pool. Precondition: r is live.
func (p *Pool) Free(r PktRef) {
	p.live--
	p.free = append(p.free, r)
}

// Get returns the packet r refers to.
func (p *Pool) Get(r PktRef) *Packet { return &p.chunks[r>>chunkBits][r&chunkMask] }

// Live is the number of packets allocated and not yet freed.
func (p *Pool) Live() int { return p.live }

// Capacity is the number of packet slots the pool holds.
func (p *Pool) Capacity() int { return len(p.chunks) * chunkSize }

// SnapshotLive declares the slots in use to a checkpoint
// (internal/snapshot.Sparse): those below next and not on the free list,
// in each chunk and its telemetry. A free slot is zeroed when it is
// allocated again (and a never-used one is zero), so a restore may leave
// the others zero. It allocates (a mark per slot): checkpoints only.
func (p *Pool) SnapshotLive(live func(slice any, from, to int)) {
	free := make([]bool, p.next)
	for _, r := range p.free {
		free[r] = true
	}
	runs := func(s any, base int) {
		end := min(int(p.next)-base, chunkSize)
		some := false
		for i := 0; i < end; {
			if free[base+i] {
				i++
				continue
			}
			j := i + 1
			for j < end && !free[base+j] {
				j++
			}
			live(s, i, j)
			some = true
			i = j
		}
		if !some {
			live(s, 0, 0)
		}
	}
	for c := range p.chunks {
		runs(&p.chunks[c], c<<chunkBits)
		if p.tel != nil {
			runs(&p.tel[c], c<<chunkBits)
		}
	}
}
