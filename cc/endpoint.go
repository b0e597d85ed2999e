package cc

import (
	"fmt"
	"math/rand/v2"

	"github.com/lockstep-sim/lockstep/sim"
)

// Endpoint is the sending side of one flow as a pure state machine: it owns
// the sent history and sequence space (through its Recovery), the RTT and
// RTO estimates, the calls into the Controller and the Recovery, the ECN
// reaction, STrack's path manager, the pacing, TSO and receive-window
// gating, and the decision of when a cwnd trace sample is due. Time comes
// in as an argument and deadlines go out as values; the owner arms timers
// at them and calls OnDeadline when they fire.
//
// It is the one implementation of a sender: hostsim drives it for every
// flow of a run (building packets, arming timer events, recording) and
// `lockstep cc trace` drives it from a script (cc/cctrace), in the spirit
// of quic-go's sent_packet_handler, which owns what its connection only
// transmits.
//
// A send opportunity is BeginSend, then Next and OnSent for each segment
// until Next returns false; after it the owner arms the timers the
// deadline getters report (RTODeadline, PaceAt when PaceBlocked,
// RecoveryDeadline).
//
// Nothing here allocates per ACK or per segment, and randomness comes from
// the owner's stream (OnSent's rng), drawn in the same order as the
// packets leave.
//
// NB(dcqcn): an Endpoint is allocated in a Go size class (objects over
// 512 bytes with pointers carry an 8-byte malloc header): crossing a
// class boundary costs up to 128 bytes per flow, which fabric's
// TestSetupMemory bounds. Put what only some controllers need behind a
// pointer, as ctlExt does.
type Endpoint struct {
	ctl   Controller
	rec   Recovery
	timed TimedRecovery // rec, when it has timers of its own
	obs   Observer      // ctl, when it names its states
	ssx   SlowStartExit // ctl, when it says why slow start ended
	// x holds what a controller with timers of its own, a byte counter,
	// a pacing rate or a CNP reaction needs (DCQCN); nil for the others,
	// so that window controllers pay one pointer.
	x     *ctlExt
	rto   RTO // by value: one allocation per flow, its fields beside the endpoint's
	cfg   EndpointConfig
	mss   int64
	burst int // TSO burst in segments, at least 1

	// st is the Recovery's state after its last event, and cwnd and ssth
	// the Controller's after its last: kept here so that no getter is
	// called per ACK or segment (docs/design.md §8).
	st         SeqState
	cwnd, ssth int64

	rtoAt       sim.Time // retransmission deadline; Never when disarmed
	paceAt      sim.Time // earliest time the next burst may leave
	inBurst     int      // segments of the current burst sent
	ecnRecover  uint64   // no new ECN reduction until SndUna passes this
	paceBlocked bool     // the last Next stopped on pacing
	ecnReduced  bool     // an ECN reduction happened (ecnRecover is valid)
	cwrPending  bool     // set CWR on the next data packet
	done        bool
	cwndLimited bool  // sending stopped on cwnd since the last ACK
	delivered   int64 // bytes acknowledged so far

	pm *PathManager // STrack's entropy choice; nil otherwise

	// uet holds the UET seams of the modules (uet_endpoint.go), nil when
	// they have none.
	uet *uetSeams

	lastTraceAt sim.Time
	lastCwnd    int64
	lastSsth    int64
	lastState   CongState
	lastReason  string // the controller's last slow-start exit reason
	sample      TraceSample

	// Scratch events: passing pointers to locals through the module
	// interfaces would make them escape, one allocation per ACK.
	ai AckInfo
	ae AckEvent
	ce CongestionEvent
}

// EndpointConfig is how an Endpoint sends. The zero value of each field
// turns its feature off.
type EndpointConfig struct {
	// MSS is the payload of a full segment in bytes.
	MSS int64
	// Size is the flow's length in bytes: once SndUna reaches it the flow
	// is done and later ACKs and deadlines are ignored.
	Size uint64
	RTO  RTOConfig
	// ECN: respond to ECE (RFC 3168 §6.1.2) and set CWR after a reduction.
	ECN bool
	// Header is the bytes of headers per packet (pacing counts them).
	Header int64
	// TSOSegments is the burst size in segments (Linux
	// tcp_tso_should_defer); 0 or 1: no bursts.
	TSOSegments int
	Pacing      PacingConfig
	// RWnd is the receive window in bytes (0: unlimited).
	RWnd int64
	// Paths, when set, gives the flow STrack's path manager: entropies
	// from PathBase on, steered by the marks per-packet ACKs echo.
	Paths    *PathConfig
	PathBase uint16
	// RandomEntropy draws each packet's entropy from the owner's stream;
	// otherwise (and without Paths) every packet carries FlowEntropy.
	RandomEntropy bool
	FlowEntropy   uint16
	// Hops is the flow's path length, for hop-aware controllers.
	Hops int
	// LineRate and BaseRTT are the host's line rate and the flow's unloaded
	// round-trip time, for LinkAware controllers (HPCC).
	LineRate sim.Bandwidth
	BaseRTT  sim.Time
	// Trace makes the endpoint take cwnd trace samples; TraceInterval keeps
	// at most one per interval, events excepted (0: every change).
	Trace         bool
	TraceInterval sim.Time
}

// PacingConfig follows Linux tcp_update_pacing_rate: rate = ratio * cwnd /
// srtt with ratio SSRatio while cwnd < ssthresh/2 and CARatio after.
type PacingConfig struct {
	Enabled bool
	SSRatio float64 // Linux tcp_pacing_ss_ratio: 2.0
	CARatio float64 // Linux tcp_pacing_ca_ratio: 1.2
}

// Ack is one ACK packet as the sender receives it.
type Ack struct {
	// Ack is the cumulative acknowledgement.
	Ack uint64
	// Sack holds SACK blocks, if any.
	Sack []sim.SackBlock
	// TSecr is the echoed timestamp (RFC 7323); HasTSecr says there is one.
	TSecr sim.Time
	// Echo is the first byte of the data packet a per-packet (STrack) ACK
	// answers; EchoValid marks such an ACK. Nack and Bitmap are STrack's
	// received bitmap (AckInfo).
	Echo   uint64
	Bitmap uint64
	// Tel is the ACK's telemetry (INT records, endpoint delay) when the
	// run keeps it, nil otherwise; valid during OnAck only.
	Tel *sim.Telemetry
	// The flags share one word (the struct is per-flow scratch).
	// ECE: the ACK echoes a CE mark. HasTSecr, EchoValid, Nack: above.
	ECE, HasTSecr, EchoValid, Nack bool
	// Nak: a RoCE NAK (sequence error), Ack its expected sequence
	// (cc.AckInfo.Nak).
	Nak bool
	// Trimmed: a trim NACK (per-packet ACKs only): a switch cut the data
	// packet at Echo to its header, sent at TSecr (AckInfo.Trimmed).
	Trimmed bool
	// Entropy is the entropy the ACK echoes (the path manager's input).
	Entropy uint16
}

// Actions is what one OnAck or OnDeadline did.
type Actions struct {
	// Dup: the ACK was counted as a duplicate.
	Dup bool
	// EnterRecovery: loss was detected and the controller reduced
	// (OnCongestion(CongLoss)); ExitRecovery: fast recovery ended.
	EnterRecovery, ExitRecovery bool
	// ECNCut: an ECN reduction (OnCongestion(CongECN)), RFC 3168.
	ECNCut bool
	// RTO: the retransmission timer expired (OnCongestion(CongRTO)).
	RTO bool
	// RecoveryTimer: the Recovery's own deadline fired.
	RecoveryTimer bool
	// CCTimer: the controller's own deadline fired (TimedController).
	CCTimer bool
	// CNP: a congestion notification packet was processed (CNPReactor).
	CNP bool
	// Nack: a trim NACK took a packet out of the flight (OnNack).
	Nack bool
	// Done: this ACK acknowledged the last byte of the flow.
	Done bool
	// Send: the owner should now send what the endpoint allows.
	Send bool
	// Sampled: a trace sample was taken (Endpoint.Sample).
	Sampled bool
}

// Sent is what a data packet carries besides its segment.
type Sent struct {
	Entropy uint16
	CWR     bool // RFC 3168 §6.1.2: the window was reduced
	// AckReq asks a UET receiver to acknowledge this packet at once
	// (uec.cpp sendNewPacket/sendRtxPacket set_ar: the flow's last packet,
	// the one that fills the window, every retransmission).
	AckReq bool
}

// Timer names one of the endpoint's deadlines.
type Timer uint8

const (
	// TimerRTO is the retransmission timer (RTODeadline).
	TimerRTO Timer = 1 + iota
	// TimerRecovery is the Recovery's own timer (RecoveryDeadline).
	TimerRecovery
	// TimerCC is the controller's own timer (CCDeadline).
	TimerCC
)

// TraceSample is one cwnd trace row (cwnd.csv, without the flow id).
type TraceSample struct {
	Time     sim.Time
	Cwnd     int64
	Ssthresh int64
	SRTT     sim.Time
	MinRTT   sim.Time
	State    CongState
	Event    string
}

// ctlExt is the endpoint's part for controllers with optional
// capabilities (cc/capabilities.go, cc/ratepacing.go): a rate-paced
// controller's rate paces its packets (pacer), its own timers are the
// endpoint's TimerCC, it may count the bytes sent and react to CNPs.
type ctlExt struct {
	rp       RatePaced
	timed    TimedController
	sendObs  SendObserver
	cnp      CNPReactor
	pacer    Pacer
	lastRate int64 // the pacing rate at the last trace sample
	observed bool  // the controller is a rateObserver: rate changes are trace rows
	// nic: the controller is NICScheduled, an RDMA queue pair: the pacer
	// is the NIC's rate limiter (exact, re-timed at a rate change). The
	// other rate-paced controllers space each segment by its transmission
	// time at the rate, rounded up, from the later of now and the last
	// release (as HPCC and Swift were written and traced).
	nic bool
}

// RateSample is a rate-based controller's state for a trace row (rate.csv).
type RateSample struct {
	Rate, TargetRate int64 // bits per second
	Alpha            float64
}

// NewEndpoint returns the endpoint that drives ctl and rec.
func NewEndpoint(cfg EndpointConfig, ctl Controller, rec Recovery) (*Endpoint, error) {
	ep := &Endpoint{}
	if err := InitEndpoint(ep, cfg, ctl, rec); err != nil {
		return nil, err
	}
	return ep, nil
}

// InitEndpoint makes *ep the endpoint that drives ctl and rec, as
// NewEndpoint does, in place: an owner that holds its endpoints by value
// (hostsim's senders, in one array) allocates none. ep must not be copied
// afterwards.
func InitEndpoint(ep *Endpoint, cfg EndpointConfig, ctl Controller, rec Recovery) error {
	if ctl == nil || rec == nil {
		return fmt.Errorf("endpoint: a controller and a recovery are required")
	}
	if cfg.MSS <= 0 {
		return fmt.Errorf("endpoint: mss must be positive, got %d", cfg.MSS)
	}
	if cfg.Size == 0 {
		return fmt.Errorf("endpoint: size must be positive")
	}
	if err := cfg.RTO.Validate(); err != nil {
		return err
	}
	*ep = Endpoint{ctl: ctl, rec: rec, rto: RTO{cfg: cfg.RTO}, cfg: cfg, mss: cfg.MSS,
		burst: max(cfg.TSOSegments, 1), rtoAt: sim.Never, lastTraceAt: -1}
	ep.timed, _ = rec.(TimedRecovery)
	ep.obs, _ = ctl.(Observer)
	ep.ssx, _ = ctl.(SlowStartExit)
	rp, _ := ctl.(RatePaced)
	timed, _ := ctl.(TimedController)
	sendObs, _ := ctl.(SendObserver)
	cnp, _ := ctl.(CNPReactor)
	if rp != nil || timed != nil || sendObs != nil || cnp != nil {
		// Allocated only here: window controllers pay one nil pointer.
		_, obs := ctl.(rateObserver)
		_, nic := ctl.(NICScheduled)
		ep.x = &ctlExt{rp: rp, timed: timed, sendObs: sendObs, cnp: cnp, observed: obs, nic: nic}
		if nic {
			ep.burst = 1 // the NIC's rate limiter spaces every packet
		}
	}
	if h, ok := ctl.(HopAware); ok {
		h.SetHops(cfg.Hops)
	}
	if l, ok := ctl.(LinkAware); ok {
		l.SetLink(cfg.LineRate, cfg.BaseRTT)
	}
	if cfg.Paths != nil {
		ep.pm = NewPathManager(*cfg.Paths, cfg.PathBase)
	}
	ep.initUET()
	ep.st = rec.State()
	ep.readCtl()
	return nil
}

// Controller is the driven controller.
func (ep *Endpoint) Controller() Controller { return ep.ctl }

// Recovery is the driven recovery.
func (ep *Endpoint) Recovery() Recovery { return ep.rec }

// RTO is the retransmission-timeout estimator.
func (ep *Endpoint) RTO() *RTO { return &ep.rto }

// Cwnd is the congestion window in bytes.
func (ep *Endpoint) Cwnd() int64 { return ep.cwnd }

// State is the Recovery's sequence state after its last event.
func (ep *Endpoint) SeqState() SeqState { return ep.st }

// readCtl refreshes the cached window, and a rate-paced controller's rate
// (RatePaced; for an RDMA queue pair the pacer re-times the gap after the
// last packet when it changes, cc/pacer.go), after a Controller event.
func (ep *Endpoint) readCtl() {
	ep.cwnd, ep.ssth = ep.ctl.Cwnd(), ep.ctl.Ssthresh()
	if x := ep.x; x != nil && x.rp != nil {
		if r := int64(x.rp.PacingRate()); r != x.pacer.Rate() {
			x.pacer.SetRate(r)
			if x.nic {
				ep.paceAt = x.pacer.Next()
			}
		}
	}
}

// RateBased reports whether the controller sets its own rate (RatePaced).
func (ep *Endpoint) RateBased() bool { return ep.x != nil && ep.x.rp != nil }

// paced reports whether the controller's rate paces the flow now (a rate
// of 0 leaves the window alone in charge).
func (ep *Endpoint) paced() bool { return ep.x != nil && ep.x.pacer.Rate() > 0 }

// RateSample is a rate controller's state at now for a trace row
// (rate.csv): zero unless the controller reports a target rate and an α
// (rateObserver: DCQCN), so that the other rate-paced controllers keep
// their window rows.
func (ep *Endpoint) RateSample(now sim.Time) RateSample {
	// x.observed was found at construction: no type assertion per row for
	// the flows (window controllers, most of them) that have none.
	if !ep.RateBased() || !ep.x.observed {
		return RateSample{}
	}
	o := ep.ctl.(rateObserver)
	return RateSample{Rate: ep.x.pacer.Rate(), TargetRate: o.TargetRate(), Alpha: o.AlphaAt(now)}
}

// CCDeadline is when the controller's own timer expires (sim.Never: none,
// or the flow is done).
func (ep *Endpoint) CCDeadline() sim.Time {
	if ep.x == nil || ep.x.timed == nil || ep.done {
		return sim.Never
	}
	return ep.x.timed.Deadline()
}

// OnCNP processes a congestion notification packet at now (a CNPReactor's
// rate cut). A controller that takes no CNPs ignores it.
func (ep *Endpoint) OnCNP(now sim.Time) Actions {
	if ep.done || ep.x == nil || ep.x.cnp == nil {
		return Actions{}
	}
	ep.x.cnp.OnCNP(now)
	ep.readCtl()
	act := Actions{CNP: true, Send: true}
	act.Sampled = ep.traceSample(now, "cnp")
	return act
}

// rttInfo is the timing handed to the Recovery with each event.
func (ep *Endpoint) rttInfo() RTTInfo {
	return RTTInfo{SRTT: ep.rto.SRTT(), MinRTT: ep.rto.MinRTT(), RTODeadline: ep.rtoAt}
}

// Done reports whether every byte of the flow has been acknowledged.
func (ep *Endpoint) Done() bool { return ep.done }

// PathManager is the flow's STrack path manager, nil if it has none.
func (ep *Endpoint) PathManager() *PathManager { return ep.pm }

// RTODeadline is when the retransmission timer expires (sim.Never: off).
func (ep *Endpoint) RTODeadline() sim.Time { return ep.rtoAt }

// RecoveryDeadline is when the Recovery's own timer expires (sim.Never:
// none, or the flow is done).
func (ep *Endpoint) RecoveryDeadline() sim.Time {
	if ep.timed == nil || ep.done {
		return sim.Never
	}
	return ep.st.Deadline
}

// PaceBlocked reports whether the last Next stopped because of pacing;
// sending may resume at PaceAt.
func (ep *Endpoint) PaceBlocked() bool { return ep.paceBlocked }

// PaceAt is the earliest time the next burst may leave.
func (ep *Endpoint) PaceAt() sim.Time { return ep.paceAt }

// Sample is the last trace sample taken (Actions.Sampled).
func (ep *Endpoint) Sample() *TraceSample { return &ep.sample }

// congestion tells the controller about congestion of the given kind.
func (ep *Endpoint) congestion(now sim.Time, kind CongestionKind, flight int64) {
	ep.ce = CongestionEvent{Now: now, Kind: kind, FlightSize: flight, MSS: ep.mss}
	ep.ctl.OnCongestion(&ep.ce)
	ep.readCtl()
}

// armRTO sets the retransmission deadline.
func (ep *Endpoint) armRTO(at sim.Time) { ep.rtoAt = at }

// pacingGap is how long n bytes take at Linux's pacing rate
// (tcp_update_pacing_rate): ratio * cwnd / srtt, with the slow-start ratio
// while cwnd < ssthresh/2. Before the first RTT sample there is no pacing.
func (ep *Endpoint) pacingGap(n int64) sim.Time {
	srtt := ep.rto.SRTT()
	cwnd := ep.cwnd
	if srtt <= 0 || cwnd <= 0 {
		return 0
	}
	ratio := ep.cfg.Pacing.CARatio
	if cwnd < ep.ssth/2 {
		ratio = ep.cfg.Pacing.SSRatio
	}
	return sim.Time(float64(n) * float64(srtt) / (ratio * float64(cwnd)))
}

// BeginSend starts a send opportunity: a new TSO burst.
func (ep *Endpoint) BeginSend() {
	ep.inBurst = 0
	ep.paceBlocked = false
}

// Next returns the segment to send now, if the window, the receive window,
// TSO deferral and pacing allow one. The Recovery proposes it,
// retransmissions first; a forced segment (a fast retransmission) goes out
// whatever the window.
func (ep *Endpoint) Next(now sim.Time) (Segment, bool) {
	if ep.done {
		return Segment{}, false
	}
	seg, ok := ep.rec.Next()
	if !ok {
		return Segment{}, false
	}
	if ep.inBurst == 0 && (ep.cfg.Pacing.Enabled || ep.paced()) && now < ep.paceAt {
		ep.paceBlocked = true
		return Segment{}, false
	}
	if !seg.Force {
		room := ep.cwnd - ep.st.Pipe
		// A rate-paced sender may have one segment in flight whatever its
		// window (ratepacing.go).
		if room < seg.Len && !(ep.paced() && ep.st.Pipe == 0) {
			ep.cwndLimited = true
			return Segment{}, false
		}
		if ep.cfg.RWnd > 0 && seg.Seq+uint64(seg.Len) > ep.st.Una+uint64(ep.cfg.RWnd) {
			return Segment{}, false
		}
		// Linux tcp_tso_should_defer: wait for room for a whole burst
		// while data is in flight and more is to come.
		if b := ep.burst; b > 1 && ep.inBurst == 0 && room < int64(b)*ep.mss && ep.st.Pipe > 0 &&
			ep.cfg.Size-seg.Seq >= uint64(b)*uint64(ep.mss) {
			ep.cwndLimited = true
			return Segment{}, false
		}
	}
	return seg, true
}

// OnSent records that seg, returned by Next, left at now, and says what
// its packet carries. rng is the owner's random stream (entropy draws).
func (ep *Endpoint) OnSent(now sim.Time, seg Segment, rng *rand.Rand) Sent {
	var s Sent
	if ep.cfg.ECN && ep.cwrPending {
		s.CWR = true
		ep.cwrPending = false
	}
	switch {
	case ep.pm != nil:
		s.Entropy = ep.pm.Pick(now, rng, ep.st.Nxt < uint64(ep.cwnd))
	case ep.cfg.RandomEntropy:
		s.Entropy = uint16(rng.Uint32())
	default:
		s.Entropy = ep.cfg.FlowEntropy
	}
	seg.Entropy = s.Entropy
	ep.st = ep.rec.OnSent(now, seg, ep.rttInfo())
	if ep.uet != nil && ep.uet.pds {
		s.AckReq = ep.ackRequest(seg)
	}
	if ep.rtoAt == sim.Never && (ep.uet == nil || !ep.uet.ownTimers) {
		ep.armRTO(now + ep.rto.Timeout()) // RFC 6298 §5.1
	}
	wire := seg.Len + ep.cfg.Header
	switch {
	case ep.cfg.Pacing.Enabled:
		ep.paceAt = max(ep.paceAt, now) + ep.pacingGap(wire)
	case ep.paced() && ep.x.nic:
		// The controller's rate: the NIC's rate limiter (cc/pacer.go).
		ep.x.pacer.OnSent(now, wire)
		ep.paceAt = ep.x.pacer.Next()
	case ep.paced():
		ep.paceAt = max(ep.paceAt, now) + sim.Bandwidth(ep.x.pacer.Rate()).TxTime(int(wire))
	}
	if x := ep.x; x != nil && x.sendObs != nil && x.sendObs.OnSend(now, wire) {
		ep.readCtl() // a byte-counter step, which re-times the gap
	}
	ep.inBurst++
	if ep.inBurst >= ep.burst {
		ep.inBurst = 0
	}
	return s
}

// OnAck processes one ACK at now, in this order:
//
//  1. the RTT sample of an ACK that advances SndUna (RFC 7323 §4: the
//     echoed timestamp is exact), before the Recovery sees the ACK (RACK
//     uses it);
//  2. Recovery.OnAck, with pipe and FlightSize taken before it;
//  3. for a per-packet ACK (EchoValid), a sample if it newly acknowledged
//     any byte;
//  4. Controller.OnRecoveryExit if recovery ended, else
//     OnCongestion(CongLoss) if it began, else Controller.OnAck;
//  5. STrack's path manager, or the RFC 3168 ECN response;
//  6. the trace sample; the RTO off when the flow is done, restarted when
//     SndUna advanced (RFC 6298 §5.3).
//
// Actions.Send asks the owner to send what is now allowed.
func (ep *Endpoint) OnAck(now sim.Time, a *Ack) Actions {
	if ep.done {
		return Actions{}
	}
	if a.Trimmed && ep.uet != nil && ep.uet.nackRec != nil {
		return ep.onTrimNack(now, a) // a recovery with its own NACKs (uet_endpoint.go)
	}
	var act Actions
	prior := ep.st.Pipe
	flight := ep.st.Flight
	perPacket := a.EchoValid
	var rtt sim.Time
	// RFC 7323 §4: the echoed timestamp is exact. An ACK that moves SndUna
	// gives a sample, taken before the recovery sees the ACK (RACK uses it).
	if !perPacket && a.Ack > ep.st.Una && a.HasTSecr {
		rtt = now - a.TSecr
		ep.rto.OnSample(rtt)
	}
	// Field by field: a composite literal would zero and copy the whole
	// struct (it holds a slice) on every ACK.
	ai := &ep.ai
	ai.Now, ai.Ack, ai.Sack, ai.DupCandidate = now, a.Ack, a.Sack, true
	ai.RTTInfo = ep.rttInfo()
	if a.Ack > ep.st.Una && (ep.uet == nil || !ep.uet.ownTimers) {
		// RFC 8985 §7.2 caps the PTO at TCP_RTO_expiration(). An ACK that
		// advances SndUna restarts the RTO (RFC 6298 §5.3, at the end of
		// this function, with this timeout: the sample above is taken),
		// so the cap is the expiry as restarted by this ACK, not the one
		// before it (a probe would fire at the old expiry).
		ai.RTODeadline = now + ep.rto.Timeout()
	}
	ai.TSecr = 0
	if a.HasTSecr {
		ai.TSecr = a.TSecr
	}
	ai.Echo, ai.EchoValid, ai.Nack, ai.Bitmap, ai.Trimmed = 0, false, false, 0, false
	ai.Nak = a.Nak
	if perPacket {
		ai.Echo, ai.EchoValid = a.Echo, true
		ai.Nack, ai.Bitmap, ai.Trimmed = a.Nack, a.Bitmap, a.Trimmed
	}
	una := ep.st.Una
	v := ep.rec.OnAck(&ep.ai)
	ep.st = v.SeqState
	ep.delivered += v.Acked
	act.Dup = v.Dup
	// RFC 5681 §3.1: the window grows on ACKs that cumulatively acknowledge
	// new data, by those bytes (Linux tcp_may_raise_cwnd agrees); SACKed
	// bytes alone do not count. STrack's ACKs name their packet, so there
	// every packet newly acknowledged counts.
	grow := int64(ep.st.Una - una)
	if perPacket {
		grow = v.Acked
	}
	// Per-packet ACKs (STrack) name the packet, so every packet newly
	// acknowledged gives a sample.
	if perPacket && v.Acked > 0 && a.HasTSecr {
		rtt = now - a.TSecr
		ep.rto.OnSample(rtt)
	}
	ece := a.ECE
	event := ""
	switch {
	case v.ExitRecovery:
		ep.ctl.OnRecoveryExit(now)
		ep.readCtl()
		act.ExitRecovery = true
	case v.EnterRecovery:
		ep.congestion(now, CongLoss, LossFlight(v, flight))
		// A loss reduction counts as this window's reaction (RFC 3168 §6.1.2).
		ep.ecnRecover, ep.ecnReduced = ep.st.Nxt, true
		act.EnterRecovery = true
		event = "fast-retransmit"
	default:
		// Linux tcp_is_cwnd_limited: in slow start the sender counts as
		// cwnd-limited while cwnd < 2 * packets in flight, even when
		// pacing or the application stopped it this time.
		limited := ep.cwndLimited || ep.cwnd < ep.ssth && ep.cwnd < 2*flight
		ae := &ep.ae
		ae.Now, ae.Acked, ae.PriorInFlight, ae.RTT = now, grow, prior, rtt
		ae.Delay = 0
		if a.HasTSecr {
			ae.Delay = now - a.TSecr
		}
		ae.MinRTT, ae.ECE, ae.InRecovery, ae.MSS = ep.rto.MinRTT(), ece, ep.st.InRecovery, ep.mss
		ae.SndUna, ae.SndNxt, ae.Delivered = ep.st.Una, ep.st.Nxt, ep.delivered
		ae.CwndLimited, ae.Paced = limited, ep.cfg.Pacing.Enabled
		ae.Tel = a.Tel
		ae.InFlight = ep.st.Pipe
		ep.ctl.OnAck(&ep.ae)
		ep.readCtl()
	}
	if ep.pm != nil {
		// STrack: marks steer paths.
		ep.pm.OnAck(now, a.Entropy, ece, ep.cwnd/ep.mss)
	} else if ep.cfg.ECN && ece && (ep.uet == nil || !ep.uet.ownECN) && !ep.st.InRecovery && (!ep.ecnReduced || ep.st.Una > ep.ecnRecover) {
		// RFC 3168 §6.1.2: react to ECE at most once per window of data.
		ep.congestion(now, CongECN, ep.st.Flight)
		ep.ecnRecover, ep.ecnReduced = ep.st.Nxt, true
		ep.cwrPending = true
		act.ECNCut = true
		if event == "" {
			event = "ecn-reduction"
		}
	}
	act.Sampled = ep.traceSample(now, event)
	if ep.st.Una >= ep.cfg.Size {
		ep.done = true
		ep.rtoAt = sim.Never
		act.Done = true
		return act
	}
	ep.cwndLimited = false
	if v.AdvancedUna && (ep.uet == nil || !ep.uet.ownTimers) {
		ep.armRTO(now + ep.rto.Timeout()) // RFC 6298 §5.3
	}
	act.Send = true
	return act
}

// OnDeadline runs timer t at now. A deadline that moved later since the
// owner armed it does nothing: the owner re-arms at the new deadline.
func (ep *Endpoint) OnDeadline(now sim.Time, t Timer) Actions {
	switch t {
	case TimerRTO:
		return ep.onRTO(now)
	case TimerRecovery:
		return ep.onRecoveryTimer(now)
	case TimerCC:
		return ep.onCCTimer(now)
	}
	panic(fmt.Sprintf("cc: endpoint deadline of unknown timer %d", t))
}

// onCCTimer runs the controller's own timers due at now.
func (ep *Endpoint) onCCTimer(now sim.Time) Actions {
	if ep.done || ep.x == nil || ep.x.timed == nil || ep.x.timed.Deadline() > now {
		return Actions{}
	}
	ep.x.timed.OnTimer(now)
	ep.readCtl()
	act := Actions{CCTimer: true, Send: true}
	act.Sampled = ep.traceSample(now, "")
	return act
}

func (ep *Endpoint) onRecoveryTimer(now sim.Time) Actions {
	if ep.done || ep.timed == nil || ep.st.Deadline > now {
		return Actions{}
	}
	act := Actions{RecoveryTimer: true, Send: true}
	event := "recovery-timer"
	v := ep.timed.OnDeadline(now, ep.rttInfo())
	ep.st = v.SeqState
	if v.TimedOut > 0 {
		ep.packetTimeouts(now, v.TimedOut)
		act.RTO = true
		event = "rto"
	}
	if v.EnterRecovery {
		// RACK's reordering timer found a loss: fast recovery begins.
		ep.congestion(now, CongLoss, LossFlight(v, ep.st.Flight))
		ep.ecnRecover, ep.ecnReduced = ep.st.Nxt, true
		act.EnterRecovery = true
		event = "fast-retransmit"
	}
	act.Sampled = ep.traceSample(now, event)
	return act
}

// onRTO is RFC 6298 §5.4-5.6 (retransmit from SndUna, back off, restart
// the timer) with the controller told first (RFC 5681 §3.1 eq. 4 and the
// loss window).
func (ep *Endpoint) onRTO(now sim.Time) Actions {
	if ep.rtoAt == sim.Never || ep.done || now < ep.rtoAt {
		return Actions{}
	}
	ep.congestion(now, CongRTO, ep.st.Flight)
	ep.st = ep.rec.OnRTO(now, ep.rttInfo())
	ep.rto.OnExpire()
	ep.armRTO(now + ep.rto.Timeout())
	act := Actions{RTO: true, Send: true}
	act.Sampled = ep.traceSample(now, "rto")
	if ep.x == nil || !ep.x.nic {
		ep.paceAt = now // an RDMA NIC's rate limiter keeps its schedule
	}
	return act
}

// State is the sender's congestion state for traces: the controller's
// (Observer), recovery while the Recovery is in it, else slow start or
// congestion avoidance by cwnd and ssthresh.
func (ep *Endpoint) State() CongState {
	if ep.obs != nil {
		if st := ep.obs.State(); st != 0 {
			if ep.st.InRecovery {
				return StateRecovery
			}
			return st
		}
	}
	switch {
	case ep.st.InRecovery:
		return StateRecovery
	case ep.cwnd < ep.ssth:
		return StateSlowStart
	}
	return StateCongestionAvoidance
}

// traceSample takes a trace sample when the endpoint is traced and
// something changed (or an event happened); it reports whether it did.
func (ep *Endpoint) traceSample(now sim.Time, event string) bool {
	if !ep.cfg.Trace {
		return false
	}
	// Every change of the slow-start exit reason is an event: CSS entry
	// (HyStart++), the exit and the test that fired, and exits again after
	// an RTO sent the flow back to slow start (the reason is "" there).
	if ep.ssx != nil {
		if r := ep.ssx.SlowStartExitReason(); r != ep.lastReason {
			ep.lastReason = r
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
	cwnd, ssth, st := ep.cwnd, ep.ssth, ep.State()
	var rate, lastRate int64
	if ep.x != nil && ep.x.observed {
		rate, lastRate = ep.x.pacer.Rate(), ep.x.lastRate
	}
	if event == "" {
		if cwnd == ep.lastCwnd && ssth == ep.lastSsth && st == ep.lastState && rate == lastRate {
			return false
		}
		if iv := ep.cfg.TraceInterval; iv > 0 && ep.lastTraceAt >= 0 && now-ep.lastTraceAt < iv {
			return false
		}
	}
	ep.lastTraceAt, ep.lastCwnd, ep.lastSsth, ep.lastState = now, cwnd, ssth, st
	if ep.x != nil {
		ep.x.lastRate = rate
	}
	ep.sample = TraceSample{Time: now, Cwnd: cwnd, Ssthresh: ssth, SRTT: ep.rto.SRTT(),
		MinRTT: ep.rto.MinRTT(), State: st, Event: event}
	return true
}

// rateObserver is what a rate-based controller may report for traces
// (DCQCN's Rt and α).
type rateObserver interface {
	TargetRate() int64
	AlphaAt(now sim.Time) float64
}
