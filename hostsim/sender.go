package hostsim

import (
	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// Sender is the sending endpoint of a flow: it asks its Recovery what to
// send and its Controller how much, and acts on timers. The order of calls
// on an ACK is the contract that `lockstep cc trace` mirrors.
type Sender struct {
	spec  *FlowSpec
	cc    cc.Controller
	rec   cc.Recovery
	timed cc.TimedRecovery // rec, when it has timers of its own
	// Optional inputs the recovery wants (RACK), found once.
	rttSink  cc.RTTSink
	echoSink cc.AckEchoSink
	rtoSink  cc.RTODeadlineSink
	rto      *cc.RTO
	mss      int64

	rtoAt       sim.Time // retransmission deadline; Never when disarmed
	timerAt     sim.Time // time of the pending RTO timer event; Never if none
	recTimerAt  sim.Time // time of the pending recovery timer event
	paceAt      sim.Time // earliest time the next burst may leave
	paceTimerAt sim.Time // time of the pending pacing timer event
	ecnRecover  uint64   // no new ECN reduction until SndUna passes this
	ecnReduced  bool     // an ECN reduction happened (ecnRecover is valid)
	cwrPending  bool     // set CWR on the next data packet
	done        bool
	cwndLimited bool  // trySend stopped on cwnd since the last ACK
	delivered   int64 // bytes acknowledged so far

	pm        *PathManager // STrack's entropy choice; nil otherwise
	lastHalve sim.Time     // PathSimRR: last all-paths-skipped halving
	halved    bool

	trace       bool
	lastTraceAt sim.Time
	lastCwnd    int64
	lastSsth    int64
	lastState   string
	lastReason  string // the controller's last slow-start exit reason

	// Scratch events: passing pointers to locals through the module
	// interfaces would make them escape, one allocation per ACK.
	ai cc.AckInfo
	ae cc.AckEvent
	ce cc.CongestionEvent
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
	s := &Sender{spec: f, cc: ctl, rec: rec, rto: cc.NewRTO(cfg.RTO), mss: cfg.CC.MSS,
		rtoAt: sim.Never, timerAt: sim.Never, recTimerAt: sim.Never, paceTimerAt: sim.Never,
		lastTraceAt: -1}
	s.timed, _ = rec.(cc.TimedRecovery)
	s.rttSink, _ = rec.(cc.RTTSink)
	s.echoSink, _ = rec.(cc.AckEchoSink)
	s.rtoSink, _ = rec.(cc.RTODeadlineSink)
	if st, ok := ctl.(*cc.Strack); ok {
		st.SetHops(f.Hops)
	}
	if cfg.STrack != nil {
		s.pm = NewPathManager(*cfg.STrack, uint16(sim.Mix64(uint64(f.ID))))
	}
	return s, nil
}

// Cwnd is the sender's congestion window in bytes.
func (s *Sender) Cwnd() int64 { return s.cc.Cwnd() }

// congestion tells the controller about congestion of the given kind.
func (s *Sender) congestion(now sim.Time, kind cc.CongestionKind, flight int64) {
	s.ce = cc.CongestionEvent{Now: now, Kind: kind, FlightSize: flight, MSS: s.mss}
	s.cc.OnCongestion(&s.ce)
}

// pacingGap is how long n bytes take at Linux's pacing rate
// (tcp_update_pacing_rate): ratio * cwnd / srtt, with the slow-start ratio
// while cwnd < ssthresh/2. Before the first RTT sample there is no pacing.
func (s *Sender) pacingGap(cfg *Config, n int64) sim.Time {
	srtt := s.rto.SRTT()
	cwnd := s.cc.Cwnd()
	if srtt <= 0 || cwnd <= 0 {
		return 0
	}
	ratio := cfg.Pacing.CARatio
	if cwnd < s.cc.Ssthresh()/2 {
		ratio = cfg.Pacing.SSRatio
	}
	return sim.Time(float64(n) * float64(srtt) / (ratio * float64(cwnd)))
}

// trySend sends what the window, the receive window, TSO deferral and
// pacing allow.
func (s *Sender) trySend(h *Host, e *sim.Engine) {
	cfg := &h.T.Cfg
	rec := &h.T.Records[s.spec.ID]
	now := e.Now()
	burst := max(cfg.TSOSegments, 1)
	inBurst := 0
	for {
		seg, ok := s.rec.Next()
		if !ok {
			break
		}
		if inBurst == 0 && cfg.Pacing.Enabled && now < s.paceAt {
			s.armPace(h, e)
			break
		}
		if !seg.Force {
			room := s.cc.Cwnd() - s.rec.Pipe()
			if room < seg.Len {
				s.cwndLimited = true
				break
			}
			if cfg.RWnd > 0 && seg.Seq+uint64(seg.Len) > s.rec.SndUna()+uint64(cfg.RWnd) {
				break
			}
			// Linux tcp_tso_should_defer: wait for room for a whole burst
			// while data is in flight and more is to come.
			if burst > 1 && inBurst == 0 && room < int64(burst)*s.mss && s.rec.Pipe() > 0 &&
				uint64(s.spec.Size)-seg.Seq >= uint64(burst)*uint64(s.mss) {
				s.cwndLimited = true
				break
			}
		}
		s.sendSegment(h, e, cfg, rec, seg)
		if cfg.Pacing.Enabled {
			s.paceAt = max(s.paceAt, now) + s.pacingGap(cfg, seg.Len+cfg.Header)
		}
		inBurst++
		if inBurst >= burst {
			inBurst = 0
		}
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
	switch {
	case s.pm != nil:
		pkt.Entropy = s.pm.Pick(now, e.Rand(h.ID), s.rec.SndNxt() < uint64(s.cc.Cwnd()))
	case cfg.Entropy == EntropyRandom:
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

func (s *Sender) armPace(h *Host, e *sim.Engine) {
	if s.paceTimerAt <= s.paceAt {
		return
	}
	s.paceTimerAt = s.paceAt
	e.Schedule(h.ID, s.paceAt, timerArg(s.spec.ID, timerPace), sim.NoPacket)
}

// armRTO sets the retransmission deadline, keeping at most one timer event
// pending: a later deadline is picked up when the pending event fires.
func (s *Sender) armRTO(h *Host, e *sim.Engine, at sim.Time) {
	s.rtoAt = at
	if s.rtoSink != nil {
		s.rtoSink.SetRTODeadline(at)
	}
	if s.timerAt <= at {
		return
	}
	s.timerAt = at
	e.Schedule(h.ID, at, timerArg(s.spec.ID, timerRTO), sim.NoPacket)
}

// armRecoveryTimer keeps a timer event at the Recovery's deadline.
func (s *Sender) armRecoveryTimer(h *Host, e *sim.Engine) {
	if s.timed == nil || s.done {
		return
	}
	d := s.timed.Deadline()
	if d == sim.Never || s.recTimerAt <= d {
		return
	}
	d = max(d, e.Now())
	s.recTimerAt = d
	e.Schedule(h.ID, d, timerArg(s.spec.ID, timerRecovery), sim.NoPacket)
}

func (s *Sender) onRecoveryTimer(h *Host, e *sim.Engine) {
	now := e.Now()
	if now != s.recTimerAt || s.done {
		return
	}
	s.recTimerAt = sim.Never
	if d := s.timed.Deadline(); d <= now {
		event := "recovery-timer"
		if v := s.timed.OnDeadline(now); v.EnterRecovery {
			// RACK's reordering timer found a loss: fast recovery begins.
			s.congestion(now, cc.CongLoss, cc.LossFlight(v, s.rec.FlightSize()))
			s.ecnRecover, s.ecnReduced = s.rec.SndNxt(), true
			event = "fast-retransmit"
		}
		s.traceSample(h, now, event)
		s.trySend(h, e)
		return
	}
	s.armRecoveryTimer(h, e)
}

func (s *Sender) onRTOTimer(h *Host, e *sim.Engine) {
	now := e.Now()
	if now != s.timerAt {
		return // superseded by an earlier event
	}
	s.timerAt = sim.Never
	switch {
	case s.rtoAt == sim.Never || s.done:
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
	s.traceSample(h, now, "rto")
	s.paceAt = now
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
	var rtt sim.Time
	// RFC 7323 §4: the echoed timestamp is exact. An ACK that moves SndUna
	// gives a sample, taken before the recovery sees the ACK (RACK uses it).
	if s.pm == nil && pkt.Ack > s.rec.SndUna() && pkt.TSecr > 0 {
		rtt = now - pkt.TSecr
		s.rto.OnSample(rtt)
	}
	s.ai = cc.AckInfo{Now: now, Ack: pkt.Ack, Sack: pkt.Sack[:pkt.NSack], DupCandidate: true,
		SRTT: s.rto.SRTT(), MinRTT: s.rto.MinRTT()}
	if s.pm != nil {
		s.ai.Echo, s.ai.EchoValid = pkt.Seq, true
		s.ai.Nack, s.ai.Bitmap = pkt.Flags&sim.FlagNack != 0, pkt.Bitmap
	}
	if s.rttSink != nil {
		s.rttSink.SetRTT(s.rto.SRTT(), s.rto.MinRTT())
	}
	if s.echoSink != nil {
		s.echoSink.SetAckEcho(pkt.TSecr)
	}
	una := s.rec.SndUna()
	v := s.rec.OnAck(&s.ai)
	s.delivered += v.Acked
	// RFC 5681 §3.1: the window grows on ACKs that cumulatively acknowledge
	// new data, by those bytes (Linux tcp_may_raise_cwnd agrees); SACKed
	// bytes alone do not count. STrack's ACKs name their packet, so there
	// every packet newly acknowledged counts.
	grow := int64(s.rec.SndUna() - una)
	if s.pm != nil {
		grow = v.Acked
	}
	// Per-packet ACKs (STrack) name the packet, so every packet newly
	// acknowledged gives a sample.
	if s.pm != nil && v.Acked > 0 && pkt.TSecr > 0 {
		rtt = now - pkt.TSecr
		s.rto.OnSample(rtt)
	}
	ece := pkt.Flags&sim.FlagECE != 0
	if ece {
		rec.ECNMarkedAcks++
	}
	event := ""
	switch {
	case v.ExitRecovery:
		s.cc.OnRecoveryExit(now)
	case v.EnterRecovery:
		s.congestion(now, cc.CongLoss, cc.LossFlight(v, flight))
		// A loss reduction counts as this window's reaction (RFC 3168 §6.1.2).
		s.ecnRecover, s.ecnReduced = s.rec.SndNxt(), true
		event = "fast-retransmit"
	default:
		// Linux tcp_is_cwnd_limited: in slow start the sender counts as
		// cwnd-limited while cwnd < 2 * packets in flight, even when
		// pacing or the application stopped it this time.
		limited := s.cwndLimited || s.cc.Cwnd() < s.cc.Ssthresh() && s.cc.Cwnd() < 2*flight
		s.ae = cc.AckEvent{Now: now, Acked: grow, PriorInFlight: prior, RTT: rtt,
			MinRTT: s.rto.MinRTT(), ECE: ece, InRecovery: s.rec.InRecovery(), MSS: s.mss,
			SndUna: s.rec.SndUna(), SndNxt: s.rec.SndNxt(), Delivered: s.delivered,
			CwndLimited: limited, Paced: cfg.Pacing.Enabled}
		s.cc.OnAck(&s.ae)
	}
	if s.pm != nil {
		// STrack: marks steer paths; STrack-Sim halves when every path is
		// skipped, at most once per skip period.
		all := s.pm.OnAck(now, pkt.Entropy, ece, s.cc.Cwnd()/s.mss)
		if all && (!s.halved || now-s.lastHalve >= cfg.STrack.SkipTime) {
			s.congestion(now, cc.CongECN, s.rec.FlightSize())
			s.lastHalve, s.halved = now, true
			event = "all-paths-skipped"
		}
	} else if cfg.ECN && ece && !s.rec.InRecovery() && (!s.ecnReduced || s.rec.SndUna() > s.ecnRecover) {
		// RFC 3168 §6.1.2: react to ECE at most once per window of data.
		s.congestion(now, cc.CongECN, s.rec.FlightSize())
		s.ecnRecover, s.ecnReduced = s.rec.SndNxt(), true
		s.cwrPending = true
		if event == "" {
			event = "ecn-reduction"
		}
	}
	s.traceSample(h, now, event)
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

// state names the sender's congestion state for traces.
func (s *Sender) state() string {
	if o, ok := s.cc.(cc.Observer); ok {
		if st := o.State(); st != "" {
			if s.rec.InRecovery() {
				return "recovery"
			}
			return st
		}
	}
	switch {
	case s.rec.InRecovery():
		return "recovery"
	case s.cc.Cwnd() < s.cc.Ssthresh():
		return "slow-start"
	}
	return "congestion-avoidance"
}

// traceSample records a cwnd.csv row when the sender is traced and
// something changed (or an event happened).
func (s *Sender) traceSample(h *Host, now sim.Time, event string) {
	if !s.trace {
		return
	}
	// Every change of the slow-start exit reason is an event: CSS entry
	// (HyStart++), the exit and the test that fired, and exits again after
	// an RTO sent the flow back to slow start (the reason is "" there).
	if x, ok := s.cc.(cc.SlowStartExit); ok {
		if r := x.SlowStartExitReason(); r != s.lastReason {
			s.lastReason = r
			ev := "ss-exit:" + r
			if r == "css-entry" {
				ev = "css-entry"
			}
			switch {
			case r == "":
			case event == "":
				event = ev
			default:
				event += ";" + ev
			}
		}
	}
	cwnd, ssth, st := s.cc.Cwnd(), s.cc.Ssthresh(), s.state()
	if event == "" {
		if cwnd == s.lastCwnd && ssth == s.lastSsth && st == s.lastState {
			return
		}
		if iv := h.T.Cfg.Trace.Interval; iv > 0 && s.lastTraceAt >= 0 && now-s.lastTraceAt < iv {
			return
		}
	}
	s.lastTraceAt, s.lastCwnd, s.lastSsth, s.lastState = now, cwnd, ssth, st
	h.T.CwndLog = append(h.T.CwndLog, CwndRow{Time: now, Flow: s.spec.ID, Cwnd: cwnd, Ssthresh: ssth,
		SRTT: s.rto.SRTT(), MinRTT: s.rto.MinRTT(), State: st, Event: event})
}
