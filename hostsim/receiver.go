package hostsim

import "github.com/lockstep-sim/lockstep/sim"

// interval is a received byte range [start, end) beyond rcvNxt; stamp says
// how recently it grew (for the order of SACK blocks).
type interval struct {
	start, end uint64
	stamp      uint64
}

// Receiver is the receiving endpoint of a flow: it reassembles data,
// acknowledges it (at once or delayed), echoes ECN and reports SACK blocks.
type Receiver struct {
	flow      int32
	pdsBytes  int32 // UET: bytes since the last ACK (UecSink::_accepted_bytes; uet.go)
	size      uint64
	rcvNxt    uint64
	ooo       []interval // sorted, disjoint, all above rcvNxt
	stamp     uint64
	ceLatched bool // RFC 3168 echo state
	ceState   bool // RFC 8257 §3.2 DCTCP.CE
	done      bool
	pdsGot    bool // UET: a data packet arrived (UecSink::_received_bytes > 0)
	pdsAckReq bool // UET: an ack request waits for the reorder queue (_ack_request)

	unacked       int      // data packets since the last ACK
	tsRecent      sim.Time // TSval to echo: earliest unacknowledged (RFC 7323 §4.3)
	tsSet         bool
	quick         int      // quick ACKs left
	delackAt      sim.Time // delayed-ACK deadline; Never when none
	delackTimerAt sim.Time // time of the pending timer event; Never if none
	nack          bool     // STrack: the next ACK carries the received bitmap
	trimNack      bool     // the next ACK is a trim NACK for the packet it names

	nak bool    // RoCE: the next ACK is a NAK (roce.go)
	rx  *roceRx // RoCE's receive state; nil for other transports
	// The data packet whose TSval is echoed: when it arrived and how long
	// it waited in the sender's NIC (Swift's endpoint delay).
	tsArrive, tsWait sim.Time
}

// bitmap is STrack's received bitmap: bit i is set when segment
// rcvNxt/mss + i has fully arrived (bit 0 never is).
func (r *Receiver) bitmap(mss int64) uint64 {
	m := uint64(mss)
	base := r.rcvNxt / m
	var b uint64
	for _, iv := range r.ooo {
		for idx := (iv.start + m - 1) / m; idx-base < 64; idx++ {
			if min((idx+1)*m, r.size) > iv.end {
				break
			}
			if idx > base {
				b |= 1 << (idx - base)
			}
		}
	}
	return b
}

func (r *Receiver) onData(h *Host, e *sim.Engine, p sim.PktRef, pkt *sim.Packet) {
	if h.T.Caps.PDSAcks {
		r.onPDSData(h, e, pkt) // UET's receiver (uet.go)
		return
	}
	cfg := &h.T.Cfg
	if pkt.Flags&sim.FlagTrimmed != 0 {
		r.onTrimmed(h, e, p, pkt)
		return
	}
	ce := pkt.Flags&sim.FlagCE != 0
	if h.T.Caps.CNP {
		// DCQCN's notification point: CNPs, not ECE (roce.go).
		if ce {
			r.notify(h, e)
		}
		ce = false
	}
	if r.outOfOrder(h, e, p, pkt) {
		return
	}
	if cfg.Echo == EchoPerPacket && cfg.DelAck.Enabled && ce != r.ceState && r.unacked > 0 {
		// RFC 8257 §3.2: when the CE state changes, acknowledge what
		// arrived before at once, with the old state.
		r.sendAck(h, e, p, pkt, r.ceState)
	}
	r.ceState = ce
	// RFC 3168 §6.1.3: CWR ends the echo; a CE mark (re)starts it.
	if pkt.Flags&sim.FlagCWR != 0 {
		r.ceLatched = false
	}
	if ce {
		r.ceLatched = true
	}
	end := pkt.Seq + uint64(pkt.Payload)
	prev := r.rcvNxt
	hadHoles := len(r.ooo) > 0
	dup := end <= r.rcvNxt
	outOfOrder := pkt.Seq > r.rcvNxt
	r.accept(pkt.Seq, end)
	if !r.tsSet {
		r.tsRecent, r.tsSet = pkt.TSval, true
		if cfg.EndpointDelay {
			r.tsArrive, r.tsWait = e.Now(), e.Pool.Telemetry(p).NICWait
		}
	}
	r.unacked++
	r.delivered(h, e)
	echo := r.ceLatched
	if cfg.Echo == EchoPerPacket || h.T.Caps.PerPacketAcks {
		echo = ce
	}
	if h.T.Caps.PerPacketAcks {
		// STrack: ACK every packet, echo its entropy and CE; an
		// out-of-order arrival also carries the received bitmap (NACK).
		r.nack = outOfOrder
		r.sendAck(h, e, p, pkt, echo)
		return
	}
	d := &cfg.DelAck
	// RFC 5681 §4.2: ACK out-of-order segments and those that fill a gap
	// at once, and at least every second full-sized segment.
	if !d.Enabled || dup || outOfOrder || (hadHoles && r.rcvNxt > prev) || r.unacked >= d.Count || r.quick > 0 || r.done {
		if r.quick > 0 {
			r.quick--
		}
		r.sendAck(h, e, p, pkt, echo)
		return
	}
	if r.delackAt == sim.Never {
		r.delackAt = e.Now() + d.Timeout
		r.armDelAck(h, e)
	}
}

func (r *Receiver) armDelAck(h *Host, e *sim.Engine) {
	if r.delackTimerAt <= r.delackAt {
		return
	}
	r.delackTimerAt = r.delackAt
	e.Schedule(h.ID, r.delackAt, timerArg(r.flow, timerDelAck), sim.NoPacket)
}

func (r *Receiver) onDelAckTimer(h *Host, e *sim.Engine) {
	now := e.Now()
	if now != r.delackTimerAt {
		return
	}
	r.delackTimerAt = sim.Never
	switch {
	case r.delackAt == sim.Never:
	case now < r.delackAt:
		r.armDelAck(h, e)
	case r.unacked > 0:
		echo := r.ceLatched
		if h.T.Cfg.Echo == EchoPerPacket {
			echo = r.ceState
		}
		r.sendAck(h, e, sim.NoPacket, nil, echo)
	}
}

// delivered records the bytes delivered in order and completes the flow
// when the last one is in (activating the flows that wait on it).
func (r *Receiver) delivered(h *Host, e *sim.Engine) {
	rec := &h.T.Records[r.flow]
	rec.BytesReceived = r.rcvNxt
	if r.done || r.rcvNxt < r.size {
		return
	}
	r.done = true
	rec.Finished = true
	rec.Finish = e.Now()
	h.T.flowDone(r.flow)
	if next := h.T.Flows[r.flow].OnRecvDone(); len(next) > 0 {
		h.T.activate(h, e, next)
	}
}

// onTrimmed handles a data packet a switch trimmed to its header (NDP): its
// payload is lost, and the receiver knows it at once.
//
// A transport with per-packet ACKs (STrack, and those that name packets
// as it does) gets a trim NACK at once: an ACK flagged FlagTrimmed whose
// Seq names the trimmed packet's first byte and whose TSecr echoes its
// TSval (which transmission was cut), as NDP's receiver NACKs a header
// (htsim ndp.cpp, NdpSink::receivePacket sends a NACK for a header-only
// packet; NdpSrc::processNack queues exactly that packet for resending)
// and as Ultra Ethernet's PDS answers a trimmed packet with a NACK. The
// sender resends it without waiting for a bitmap or the RTO.
//
// TCP-like transports keep their own semantics: one immediate duplicate
// ACK (no FlagTrimmed), which counts towards fast retransmit and lets
// SACK and RACK see the hole without waiting for later data.
func (r *Receiver) onTrimmed(h *Host, e *sim.Engine, p sim.PktRef, pkt *sim.Packet) {
	h.Trimmed++
	if h.T.Caps.PerPacketAcks {
		r.trimNack = true
		r.sendAck(h, e, p, pkt, pkt.Flags&sim.FlagCE != 0)
		return
	}
	r.sendAck(h, e, sim.NoPacket, nil, r.ceLatched)
}

// sendAck acknowledges everything received so far. pkt (ref p) is the data
// packet that triggered it (nil for the delayed-ACK timer).
func (r *Receiver) sendAck(h *Host, e *sim.Engine, p sim.PktRef, pkt *sim.Packet, echo bool) {
	cfg := &h.T.Cfg
	f := &h.T.Flows[r.flow]
	a, ack := r.control(h, e, 6)
	if pkt != nil {
		ack.Entropy = pkt.Entropy
		ack.Seq = pkt.Seq
	} else {
		ack.Entropy = uint16(sim.Mix64(uint64(f.ID)))
	}
	ack.Flags = sim.FlagAck
	if echo {
		ack.Flags |= sim.FlagECE
	}
	ack.Ack = r.rcvNxt
	ack.TSecr = r.tsRecent
	if cfg.INT.Enabled || cfg.EndpointDelay {
		r.fillTelemetry(cfg, e, a, ack, p, pkt)
	}
	if cfg.SACK {
		r.fillSack(ack)
	}
	if r.nack {
		ack.Flags |= sim.FlagNack
		ack.Bitmap = r.bitmap(cfg.CC.MSS)
		r.nack = false
	}
	if r.nak {
		// A RoCE NAK: Ack is the expected sequence; with selective
		// repeat the packet that triggered it is its one block (roce.go).
		ack.Flags |= sim.FlagNack
		if pkt != nil {
			ack.Sack[0] = sim.SackBlock{Start: pkt.Seq, End: pkt.Seq + uint64(pkt.Payload)}
			ack.NSack = 1
		}
		r.nak = false
	}
	if r.trimNack {
		// The trimmed transmission's own timestamp dates the NACK; the
		// earliest unacknowledged one (tsRecent) is for RTT samples.
		ack.Flags |= sim.FlagTrimmed
		ack.TSecr = pkt.TSval
		r.trimNack = false
		h.TrimNacks++
		h.send(e, a)
		return
	}
	r.unacked = 0
	r.tsSet = false
	r.delackAt = sim.Never
	h.send(e, a)
}

// control allocates a control packet (an ACK, a NAK, a CNP) from the
// flow's receiver to its sender: ids, hosts, ports, protocol, the ACK
// size and the time stamp.
func (r *Receiver) control(h *Host, e *sim.Engine, proto uint8) (sim.PktRef, *sim.Packet) {
	f := &h.T.Flows[r.flow]
	p := e.Pool.Alloc()
	c := e.Pool.Get(p)
	c.ID = e.NewPacketID(h.ID)
	c.Flow = r.flow
	c.SrcHost, c.DstHost = int32(f.Dst), int32(f.Src)
	c.DstPort = uint16(f.ID)
	c.SrcPort = uint16(f.ID>>16) ^ 5201
	c.Proto = proto
	c.Size = int32(h.T.Cfg.AckSize)
	c.TSval = e.Now()
	return p, c
}

// fillTelemetry writes the ACK's telemetry: the INT records of the data
// packet that triggered it (HPCC §3.2: the receiver echoes them), which
// count on the wire, and the endpoint delay so far: the echoed packet's
// wait in the sender's NIC plus the time since it arrived here (Swift's
// endpoint delay, docs/decisions.md; the ACK's own NIC wait is added when
// it leaves).
func (r *Receiver) fillTelemetry(cfg *Config, e *sim.Engine, a sim.PktRef, ack *sim.Packet, p sim.PktRef, pkt *sim.Packet) {
	t := e.Pool.Telemetry(a)
	if cfg.INT.Enabled && pkt != nil {
		d := e.Pool.Telemetry(p)
		t.NHops = d.NHops
		copy(t.Hops[:d.NHops], d.Hops[:d.NHops])
		ack.Size += int32(cfg.INT.Header + int64(d.NHops)*cfg.INT.HopBytes)
	}
	if cfg.EndpointDelay && r.tsSet {
		t.EndpointDelay = r.tsWait + e.Now() - r.tsArrive
	}
}

// fillSack writes up to MaxSackBlocks blocks, most recently changed first
// (RFC 2018 §4: the first block holds the segment that triggered the ACK).
func (r *Receiver) fillSack(ack *sim.Packet) {
	last := ^uint64(0)
	n := 0
	for n < sim.MaxSackBlocks {
		best := -1
		for i := range r.ooo {
			st := r.ooo[i].stamp
			if st < last && (best < 0 || st > r.ooo[best].stamp) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		ack.Sack[n] = sim.SackBlock{Start: r.ooo[best].start, End: r.ooo[best].end}
		last = r.ooo[best].stamp
		n++
	}
	ack.NSack = uint8(n)
}

// accept records bytes [s, t) as received.
func (r *Receiver) accept(s, t uint64) {
	if t <= r.rcvNxt {
		return
	}
	r.stamp++
	if s <= r.rcvNxt {
		r.rcvNxt = t
		// Absorb out-of-order ranges now contiguous.
		i := 0
		for ; i < len(r.ooo) && r.ooo[i].start <= r.rcvNxt; i++ {
			if r.ooo[i].end > r.rcvNxt {
				r.rcvNxt = r.ooo[i].end
			}
		}
		r.ooo = r.ooo[:copy(r.ooo, r.ooo[i:])]
		return
	}
	// Insert [s, t) into the sorted list, merging overlaps.
	i := 0
	for i < len(r.ooo) && r.ooo[i].end < s {
		i++
	}
	j := i
	for j < len(r.ooo) && r.ooo[j].start <= t {
		s = min(s, r.ooo[j].start)
		t = max(t, r.ooo[j].end)
		j++
	}
	if i == j {
		r.ooo = append(r.ooo, interval{})
		copy(r.ooo[i+1:], r.ooo[i:])
		r.ooo[i] = interval{s, t, r.stamp}
		return
	}
	r.ooo[i] = interval{s, t, r.stamp}
	r.ooo = append(r.ooo[:i+1], r.ooo[j:]...)
}
