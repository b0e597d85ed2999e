package hostsim

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// Timer kinds, in the low byte of an EvTimer's Arg; the flow id is above.
const (
	timerInvalid = iota
	timerStart
	timerRTO
)

func timerArg(flow int32, kind int) int64 { return int64(flow)<<8 | int64(kind) }

// Transport is the transport state of one partition: the flows' specs, the
// endpoints that live here, and the records. Hosts share it.
type Transport struct {
	Cfg       Config
	Flows     []FlowSpec
	Records   []FlowRecord
	senders   []*Sender   // by flow id; nil unless the source is local
	receivers []*Receiver // by flow id; nil unless the destination is local

	// Done counts flows whose local parts are all finished: the receiver
	// has every byte (if local) and the sender has every ACK (if local).
	Done int
	// Local is the number of flows with at least one local endpoint.
	Local int
}

// NewTransport prepares the flows. isLocal reports whether a host index
// belongs to this partition. Flow ids must be 0..len(flows)-1.
func NewTransport(cfg Config, flows []FlowSpec, isLocal func(host int) bool) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Transport{Cfg: cfg, Flows: flows, Records: make([]FlowRecord, len(flows)),
		senders: make([]*Sender, len(flows)), receivers: make([]*Receiver, len(flows))}
	for i := range flows {
		f := &flows[i]
		if int(f.ID) != i {
			return nil, fmt.Errorf("flow %d has id %d: ids must be 0..n-1 in order", i, f.ID)
		}
		if f.Size <= 0 {
			return nil, fmt.Errorf("flow %d: size must be positive, got %d", i, f.Size)
		}
		local := false
		if isLocal(f.Src) {
			local = true
			s, err := newSender(&cfg, f)
			if err != nil {
				return nil, fmt.Errorf("flow %d: %w", i, err)
			}
			t.senders[i] = s
		}
		if isLocal(f.Dst) {
			local = true
			t.receivers[i] = &Receiver{size: uint64(f.Size)}
		}
		if local {
			t.Local++
		}
	}
	return t, nil
}

// Sender returns the sender of flow id, or nil when it is not local.
func (t *Transport) Sender(id int32) *Sender { return t.senders[id] }

// flowDone re-counts flow id once its local parts are finished.
func (t *Transport) flowDone(id int32) {
	s, r := t.senders[id], t.receivers[id]
	if (s == nil || s.done) && (r == nil || r.done) {
		t.Done++
	}
}

// Host is one host element: a NIC with a transmit queue onto its link.
type Host struct {
	ID    sim.ElemID
	Index int32 // host index in the topology
	Link  sim.LinkID
	T     *Transport

	nic  sim.PktQueue
	busy bool
	// Misrouted counts packets that arrived for another host (dropped).
	Misrouted uint64
	// Created counts packets this host put on its NIC; Consumed those it
	// received and used.
	Created, Consumed uint64
}

// NewHost returns host `index` whose NIC transmits on link.
func NewHost(id sim.ElemID, index int32, link sim.LinkID, t *Transport) *Host {
	return &Host{ID: id, Index: index, Link: link, T: t}
}

// ScheduleStarts arms a start timer for every flow this host sends.
func (h *Host) ScheduleStarts(e *sim.Engine) {
	for i := range h.T.Flows {
		f := &h.T.Flows[i]
		if f.Src == int(h.Index) {
			e.Schedule(h.ID, f.Start, timerArg(f.ID, timerStart), sim.NoPacket)
		}
	}
}

// Queued is the number of packets waiting in the NIC queue.
func (h *Host) Queued() int { return h.nic.Len() }

// OnTimer handles an EvTimer event.
func (h *Host) OnTimer(e *sim.Engine, ev *sim.Event) {
	flow := int32(ev.Arg >> 8)
	s := h.T.senders[flow]
	switch ev.Arg & 0xff {
	case timerStart:
		h.T.Records[flow].Started = true
		s.trySend(h, e)
	case timerRTO:
		s.onRTOTimer(h, e)
	default:
		panic(fmt.Sprintf("hostsim: host %d got timer %#x", h.Index, ev.Arg))
	}
}

// OnTxDone starts the next queued packet.
func (h *Host) OnTxDone(e *sim.Engine) {
	h.busy = false
	if h.nic.Len() == 0 {
		return
	}
	p := h.nic.Pop()
	h.nic.Bytes -= int64(e.Pool.Get(p).Size)
	h.busy = true
	e.Transmit(h.Link, p)
}

// send hands packet p to the NIC.
func (h *Host) send(e *sim.Engine, p sim.PktRef) {
	h.Created++
	if !h.busy {
		h.busy = true
		e.Transmit(h.Link, p)
		return
	}
	h.nic.Push(p)
	h.nic.Bytes += int64(e.Pool.Get(p).Size)
}

// OnArrive consumes a packet that arrived at the host.
func (h *Host) OnArrive(e *sim.Engine, p sim.PktRef) {
	pkt := e.Pool.Get(p)
	if pkt.DstHost != h.Index {
		h.Misrouted++
		e.Pool.Free(p)
		return
	}
	h.Consumed++
	switch {
	case pkt.Flags&sim.FlagData != 0:
		r := h.T.receivers[pkt.Flow]
		r.onData(h, e, pkt)
	case pkt.Flags&sim.FlagAck != 0:
		s := h.T.senders[pkt.Flow]
		s.onAck(h, e, pkt)
	}
	e.Pool.Free(p)
}

// Sender is the sending endpoint of a flow.
type Sender struct {
	spec *FlowSpec
	cc   cc.Controller
	rec  cc.Recovery
	rto  *cc.RTO
	mss  int64

	rtoAt       sim.Time // retransmission deadline; Never when disarmed
	timerAt     sim.Time // time of the pending RTO timer event; Never if none
	ecnRecover  uint64   // no new ECN reduction until SndUna passes this
	ecnReduced  bool     // an ECN reduction happened (ecnRecover is valid)
	cwrPending  bool     // set CWR on the next data packet
	done        bool
	cwndLimited bool  // trySend stopped on cwnd since the last ACK
	delivered   int64 // bytes acknowledged so far

	// Scratch events: passing pointers to locals through the module
	// interfaces would make them escape, one allocation per ACK.
	ai cc.AckInfo
	ae cc.AckEvent
	ce cc.CongestionEvent
}

// congestion tells the controller about congestion of the given kind.
func (s *Sender) congestion(now sim.Time, kind cc.CongestionKind, flight int64) {
	s.ce = cc.CongestionEvent{Now: now, Kind: kind, FlightSize: flight, MSS: s.mss}
	s.cc.OnCongestion(&s.ce)
}

func newSender(cfg *Config, f *FlowSpec) (*Sender, error) {
	ctl, err := cc.NewController(cfg.CC)
	if err != nil {
		return nil, err
	}
	rec, err := cc.NewRecovery(cfg.CC, uint64(f.Size))
	if err != nil {
		return nil, err
	}
	return &Sender{spec: f, cc: ctl, rec: rec, rto: cc.NewRTO(cfg.RTO), mss: cfg.CC.MSS,
		rtoAt: sim.Never, timerAt: sim.Never}, nil
}

// Cwnd is the sender's congestion window in bytes.
func (s *Sender) Cwnd() int64 { return s.cc.Cwnd() }

// trySend sends what the window allows.
func (s *Sender) trySend(h *Host, e *sim.Engine) {
	cfg := &h.T.Cfg
	rec := &h.T.Records[s.spec.ID]
	now := e.Now()
	for {
		seg, ok := s.rec.Next()
		if !ok {
			break
		}
		if !seg.Force && s.cc.Cwnd()-s.rec.Pipe() < seg.Len {
			s.cwndLimited = true
			break
		}
		p := e.Pool.Alloc()
		pkt := e.Pool.Get(p)
		pkt.ID = e.NewPacketID(h.ID)
		pkt.Flow = s.spec.ID
		pkt.SrcHost = h.Index
		pkt.DstHost = int32(s.spec.Dst)
		pkt.SrcPort = uint16(s.spec.ID)
		pkt.DstPort = uint16(s.spec.ID>>16) ^ 5201
		pkt.Proto = 6
		pkt.Flags = sim.FlagData
		if cfg.ECN {
			pkt.Flags |= sim.FlagECT
			if s.cwrPending {
				pkt.Flags |= sim.FlagCWR
				s.cwrPending = false
			}
		}
		if seg.Retx {
			pkt.Flags |= sim.FlagRetx
			rec.Retransmits++
		}
		switch cfg.Entropy {
		case EntropyRandom:
			pkt.Entropy = uint16(e.Rand(h.ID).Uint32())
		default:
			pkt.Entropy = uint16(sim.Mix64(uint64(s.spec.ID)))
		}
		pkt.Seq = seg.Seq
		pkt.Payload = int32(seg.Len)
		pkt.Size = int32(seg.Len + cfg.Header)
		pkt.TSval = now
		rec.PacketsSent++
		s.rec.OnSent(now, seg)
		if s.rtoAt == sim.Never {
			s.armRTO(h, e, now+s.rto.Timeout()) // RFC 6298 §5.1
		}
		h.send(e, p)
	}
}

// armRTO sets the retransmission deadline, keeping at most one timer event
// pending: a later deadline is picked up when the pending event fires.
func (s *Sender) armRTO(h *Host, e *sim.Engine, at sim.Time) {
	s.rtoAt = at
	if s.timerAt <= at {
		return
	}
	s.timerAt = at
	e.Schedule(h.ID, at, timerArg(s.spec.ID, timerRTO), sim.NoPacket)
}

func (s *Sender) onRTOTimer(h *Host, e *sim.Engine) {
	now := e.Now()
	if now != s.timerAt {
		return // superseded by an earlier event
	}
	s.timerAt = sim.Never
	switch {
	case s.rtoAt == sim.Never:
		return
	case now < s.rtoAt:
		s.armRTO(h, e, s.rtoAt)
		return
	}
	// RFC 6298 §5.4-5.6: retransmit from SndUna, back off, restart the timer.
	h.T.Records[s.spec.ID].Timeouts++
	s.congestion(now, cc.CongRTO, s.rec.FlightSize())
	s.rec.OnRTO(now)
	s.rto.OnExpire()
	s.rtoAt = sim.Never
	s.armRTO(h, e, now+s.rto.Timeout())
	s.trySend(h, e)
}

func (s *Sender) onAck(h *Host, e *sim.Engine, pkt *sim.Packet) {
	if s.done {
		return
	}
	now := e.Now()
	cfg := &h.T.Cfg
	rec := &h.T.Records[s.spec.ID]
	prior := s.rec.Pipe()
	flight := s.rec.FlightSize()
	s.ai = cc.AckInfo{Now: now, Ack: pkt.Ack, Sack: pkt.Sack[:pkt.NSack], DupCandidate: true}
	v := s.rec.OnAck(&s.ai)
	s.delivered += v.Acked
	var rtt sim.Time
	if v.AdvancedUna && pkt.TSecr > 0 {
		rtt = now - pkt.TSecr // RFC 7323 §4: the echoed timestamp is exact
		s.rto.OnSample(rtt)
	}
	ece := pkt.Flags&sim.FlagECE != 0
	if ece {
		rec.ECNMarkedAcks++
	}
	switch {
	case v.ExitRecovery:
		s.cc.OnRecoveryExit(now)
	case v.EnterRecovery:
		s.congestion(now, cc.CongLoss, flight)
		// A loss reduction counts as this window's reaction (RFC 3168 §6.1.2).
		s.ecnRecover, s.ecnReduced = s.rec.SndNxt(), true
	default:
		s.ae = cc.AckEvent{Now: now, Acked: v.Acked, PriorInFlight: prior, RTT: rtt,
			MinRTT: s.rto.MinRTT(), ECE: ece, InRecovery: s.rec.InRecovery(), MSS: s.mss,
			SndUna: s.rec.SndUna(), SndNxt: s.rec.SndNxt(), Delivered: s.delivered,
			CwndLimited: s.cwndLimited}
		s.cc.OnAck(&s.ae)
	}
	// RFC 3168 §6.1.2: react to ECE at most once per window of data.
	if cfg.ECN && ece && !s.rec.InRecovery() && (!s.ecnReduced || s.rec.SndUna() > s.ecnRecover) {
		s.congestion(now, cc.CongECN, s.rec.FlightSize())
		s.ecnRecover, s.ecnReduced = s.rec.SndNxt(), true
		s.cwrPending = true
	}
	if s.rec.SndUna() >= uint64(s.spec.Size) {
		s.done = true
		s.rtoAt = sim.Never
		rec.AckedAt = now
		h.T.flowDone(s.spec.ID)
		return
	}
	s.cwndLimited = false
	if v.AdvancedUna {
		s.rtoAt = sim.Never
		s.armRTO(h, e, now+s.rto.Timeout()) // RFC 6298 §5.3
	}
	s.trySend(h, e)
}

// interval is a received byte range [start, end) beyond rcvNxt.
type interval struct{ start, end uint64 }

// Receiver is the receiving endpoint of a flow.
type Receiver struct {
	size      uint64
	rcvNxt    uint64
	ooo       []interval // sorted, disjoint, all above rcvNxt
	ceLatched bool
	done      bool
}

func (r *Receiver) onData(h *Host, e *sim.Engine, pkt *sim.Packet) {
	cfg := &h.T.Cfg
	// RFC 3168 §6.1.3: CWR ends the echo; a CE mark (re)starts it.
	if pkt.Flags&sim.FlagCWR != 0 {
		r.ceLatched = false
	}
	ce := pkt.Flags&sim.FlagCE != 0
	if ce {
		r.ceLatched = true
	}
	r.accept(pkt.Seq, pkt.Seq+uint64(pkt.Payload))
	rec := &h.T.Records[pkt.Flow]
	rec.BytesReceived = r.rcvNxt
	if !r.done && r.rcvNxt >= r.size {
		r.done = true
		rec.Finished = true
		rec.Finish = e.Now()
		h.T.flowDone(pkt.Flow)
	}
	a := e.Pool.Alloc()
	ack := e.Pool.Get(a)
	ack.ID = e.NewPacketID(h.ID)
	ack.Flow = pkt.Flow
	ack.SrcHost, ack.DstHost = pkt.DstHost, pkt.SrcHost
	ack.SrcPort, ack.DstPort = pkt.DstPort, pkt.SrcPort
	ack.Proto = pkt.Proto
	ack.Entropy = pkt.Entropy
	ack.Flags = sim.FlagAck
	echo := ce
	if cfg.Echo == EchoRFC3168 {
		echo = r.ceLatched
	}
	if echo {
		ack.Flags |= sim.FlagECE
	}
	ack.Seq = pkt.Seq
	ack.Ack = r.rcvNxt
	ack.Size = int32(cfg.AckSize)
	ack.TSval = e.Now()
	ack.TSecr = pkt.TSval
	h.send(e, a)
}

// accept records bytes [s, t) as received.
func (r *Receiver) accept(s, t uint64) {
	if t <= r.rcvNxt {
		return
	}
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
		r.ooo[i] = interval{s, t}
		return
	}
	r.ooo[i] = interval{s, t}
	r.ooo = append(r.ooo[:i+1], r.ooo[j:]...)
}
