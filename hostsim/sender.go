package hostsim

import (
	"slices"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// Sender is the sending side of a flow on a host. The decisions are its
// cc.Endpoint's (what to send and when, the reaction to each ACK and
// timer, the deadlines); the Sender builds the packets, arms timer events
// at the endpoint's deadlines and records. `lockstep cc trace` drives the
// same Endpoint.
type Sender struct {
	spec *FlowSpec
	// ep is held by value: a flow's sender, endpoint and RTO estimator are
	// one piece of memory, and the transport holds its senders in one
	// array (NewTransport).
	ep cc.Endpoint
	// perPacket: the receiver answers every data packet and the ACK names
	// it (STrack): ACKs carry an echo.
	perPacket bool
	// pds: UET's receivers (cc.PDSAcker): ACKs echo their packet and carry
	// a SACK bitmap, trim NACKs name a packet (uet.go).
	pds bool
	// nicPaced: an RDMA queue pair, sent as the NIC pulls (paced.go);
	// waiting: it is in the host's ready ring.
	nicPaced, waiting bool

	// Pending timer events, at most one per kind (Never: none). A deadline
	// that moves later is picked up when the pending event fires.
	timerAt     sim.Time // RTO
	recTimerAt  sim.Time // the Recovery's own timer
	paceTimerAt sim.Time // pacing
	ccTimerAt   sim.Time // the controller's own timer

	ack cc.Ack // scratch: the ACK being processed
}

// initSender makes *s the sender of flow f.
func initSender(s *Sender, cfg *Config, caps cc.Capabilities, f *FlowSpec) error {
	ctl, err := cc.NewController(cfg.CC)
	if err != nil {
		return err
	}
	rec, err := cc.NewRecovery(cfg.CC, uint64(f.Size))
	if err != nil {
		return err
	}
	ec := cc.EndpointConfig{MSS: cfg.CC.MSS, Size: uint64(f.Size), RTO: cfg.RTO, ECN: cfg.ECN,
		Header: cfg.Header, TSOSegments: cfg.TSOSegments, Pacing: cfg.Pacing, RWnd: cfg.RWnd,
		Paths: cfg.STrack, PathBase: uint16(sim.Mix64(uint64(f.ID))),
		RandomEntropy: cfg.Entropy == EntropyRandom, FlowEntropy: uint16(sim.Mix64(uint64(f.ID))),
		Hops: f.Hops, LineRate: f.LineRate, BaseRTT: f.BaseRTT, Trace: cfg.Trace.All || slices.Contains(cfg.Trace.Flows, f.ID),
		TraceInterval: cfg.Trace.Interval}
	*s = Sender{spec: f, perPacket: caps.PerPacketAcks || caps.PDSAcks, pds: caps.PDSAcks, nicPaced: caps.NICScheduled,
		timerAt: sim.Never, recTimerAt: sim.Never, paceTimerAt: sim.Never, ccTimerAt: sim.Never}
	return cc.InitEndpoint(&s.ep, ec, ctl, rec)
}

// Cwnd is the sender's congestion window in bytes.
func (s *Sender) Cwnd() int64 { return s.ep.Cwnd() }

// Endpoint is the sender's transport endpoint.
func (s *Sender) Endpoint() *cc.Endpoint { return &s.ep }

// Spec is the flow the sender sends, as the fabric completed it (hops,
// line rate and base RTT).
func (s *Sender) Spec() FlowSpec { return *s.spec }

// done reports whether every byte has been acknowledged.
func (s *Sender) done() bool { return s.ep.Done() }

// trySend sends what the endpoint allows and arms the timers it asks for.
func (s *Sender) trySend(h *Host, e *sim.Engine) {
	if s.nicPaced {
		s.trySendPaced(h, e)
		return
	}
	cfg := &h.T.Cfg
	rec := &h.T.Records[s.spec.ID]
	now := e.Now()
	ep := &s.ep
	ep.BeginSend()
	for {
		if hb := cfg.HoldBack; hb > 0 && h.nic.Len() > hb {
			// htsim PR #4's send_next_packet: wait until the NIC queue
			// drains (its send_callback): look again when the packet
			// being serialised is out.
			s.armPace(h, e, e.Links[h.Link].BusyUntil())
			break
		}
		seg, ok := ep.Next(now)
		if !ok {
			if ep.PaceBlocked() {
				s.armPace(h, e, ep.PaceAt())
			}
			break
		}
		s.sendSegment(h, e, cfg, rec, seg)
	}
	s.armRecoveryTimer(h, e)
}

func (s *Sender) sendSegment(h *Host, e *sim.Engine, cfg *Config, rec *FlowRecord, seg cc.Segment) {
	now := e.Now()
	p := e.Pool.Alloc()
	pkt := e.Pool.Get(p)
	pkt.ID = e.NewPacketID(h.ID)
	pkt.Flow = s.spec.ID
	pkt.SrcHost = h.Index
	pkt.DstHost = int32(s.spec.Dst)
	pkt.SrcPort = uint16(s.spec.ID)
	pkt.DstPort = uint16(s.spec.ID>>16) ^ 5201
	pkt.Proto = 6
	pkt.Flags = sim.FlagData | sim.Flags(s.spec.Class&7)<<sim.ClassShift
	sent := s.ep.OnSent(now, seg, e.Rand(h.ID))
	if cfg.ECN {
		pkt.Flags |= sim.FlagECT
		if sent.CWR {
			pkt.Flags |= sim.FlagCWR
		}
	}
	if seg.Retx {
		pkt.Flags |= sim.FlagRetx
		rec.Retransmits++
	}
	if sent.AckReq {
		pkt.Flags |= sim.FlagAckReq
	}
	pkt.Entropy = sent.Entropy
	pkt.Seq = seg.Seq
	pkt.Payload = int32(seg.Len)
	pkt.Size = int32(seg.Len + cfg.Header)
	if cfg.INT.Enabled {
		pkt.Size += int32(cfg.INT.Header)
	}
	pkt.TSval = now
	rec.PacketsSent++
	s.armRTO(h, e)
	h.send(e, p)
}

func (s *Sender) armPace(h *Host, e *sim.Engine, at sim.Time) {
	if s.paceTimerAt <= at {
		return
	}
	s.paceTimerAt = at
	h.T.Rate.PaceTimers++
	e.Schedule(h.ID, at, timerArg(s.spec.ID, timerPace), sim.NoPacket)
}

// armRTO keeps a timer event at or before the endpoint's retransmission
// deadline: a later deadline is picked up when the pending event fires.
func (s *Sender) armRTO(h *Host, e *sim.Engine) {
	at := s.ep.RTODeadline()
	if at == sim.Never || s.timerAt <= at {
		return
	}
	s.timerAt = at
	e.Schedule(h.ID, at, timerArg(s.spec.ID, timerRTO), sim.NoPacket)
}

// armRecoveryTimer keeps a timer event at the Recovery's deadline.
func (s *Sender) armRecoveryTimer(h *Host, e *sim.Engine) {
	s.armAt(h, e, &s.recTimerAt, s.ep.RecoveryDeadline(), timerRecovery)
}

// armAt keeps a timer event of kind at or before deadline d (Never:
// none), *pending being the time of the pending one; it reports whether
// it scheduled one. A later deadline is picked up when the pending event
// fires.
func (s *Sender) armAt(h *Host, e *sim.Engine, pending *sim.Time, d sim.Time, kind int) bool {
	if d == sim.Never || *pending <= d {
		return false
	}
	d = max(d, e.Now())
	*pending = d
	e.Schedule(h.ID, d, timerArg(s.spec.ID, kind), sim.NoPacket)
	return true
}

// record appends the endpoint's trace sample when it took one.
func (s *Sender) record(h *Host, act cc.Actions) {
	if !act.Sampled {
		return
	}
	x := s.ep.Sample()
	h.T.CwndLog = append(h.T.CwndLog, CwndRow{Time: x.Time, Flow: s.spec.ID, Cwnd: x.Cwnd,
		Ssthresh: x.Ssthresh, SRTT: x.SRTT, MinRTT: x.MinRTT, State: x.State.String(), Event: x.Event})
	if r := s.ep.RateSample(x.Time); r.Rate > 0 {
		row := &h.T.CwndLog[len(h.T.CwndLog)-1]
		row.Rate, row.TargetRate, row.Alpha = r.Rate, r.TargetRate, r.Alpha
	}
}

func (s *Sender) onPaceTimer(h *Host, e *sim.Engine) {
	if e.Now() != s.paceTimerAt {
		return
	}
	s.paceTimerAt = sim.Never
	s.trySend(h, e)
}

func (s *Sender) onRecoveryTimer(h *Host, e *sim.Engine) {
	now := e.Now()
	if now != s.recTimerAt || s.done() {
		return
	}
	s.recTimerAt = sim.Never
	act := s.ep.OnDeadline(now, cc.TimerRecovery)
	if !act.RecoveryTimer {
		s.armRecoveryTimer(h, e)
		return
	}
	if act.RTO {
		h.T.Records[s.spec.ID].Timeouts++ // per-packet timers (UET)
	}
	s.record(h, act)
	s.trySend(h, e)
}

func (s *Sender) onRTOTimer(h *Host, e *sim.Engine) {
	now := e.Now()
	if now != s.timerAt {
		return // superseded by an earlier event
	}
	s.timerAt = sim.Never
	act := s.ep.OnDeadline(now, cc.TimerRTO)
	if act.RTO {
		h.T.Records[s.spec.ID].Timeouts++
	}
	s.armRTO(h, e)
	if !act.RTO {
		return
	}
	s.record(h, act)
	s.trySend(h, e)
}

func (s *Sender) onAck(h *Host, e *sim.Engine, pkt *sim.Packet, tel *sim.Telemetry) {
	if s.done() {
		return
	}
	now := e.Now()
	rec := &h.T.Records[s.spec.ID]
	// Field by field: a composite literal would zero and copy the whole
	// struct (it holds a slice) on every ACK.
	a := &s.ack
	a.Ack, a.Sack, a.ECE = pkt.Ack, pkt.Sack[:pkt.NSack], pkt.Flags&sim.FlagECE != 0
	a.TSecr, a.HasTSecr, a.Entropy = pkt.TSecr, pkt.TSecr > 0, pkt.Entropy
	a.Tel = tel
	if s.perPacket {
		a.Echo, a.EchoValid = pkt.Seq, true
		a.Nack, a.Bitmap = pkt.Flags&sim.FlagNack != 0, pkt.Bitmap
		a.Trimmed = pkt.Flags&sim.FlagTrimmed != 0
		// A PDS ACK always carries its SACK bitmap and echoes its
		// packet's send time, even 0.
		a.Nack = a.Nack || s.pds
		a.HasTSecr = a.HasTSecr || s.pds
	} else {
		a.Nak = pkt.Flags&sim.FlagNack != 0 // a RoCE NAK (roce.go)
	}
	if s.ack.ECE {
		rec.ECNMarkedAcks++
	}
	act := s.ep.OnAck(now, &s.ack)
	s.record(h, act)
	if act.Done {
		rec.AckedAt = now
		h.T.flowDone(s.spec.ID)
		if next := s.spec.OnSendDone(); len(next) > 0 {
			h.T.activate(h, e, next)
		}
		return
	}
	s.armRTO(h, e)
	s.trySend(h, e)
}
