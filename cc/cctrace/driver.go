// Package cctrace drives one congestion controller and one loss recovery
// through a scripted sequence of sends, ACKs, timer expiries and
// assertions, and prints their state after every step as a table.
//
// It exists to look at a module in isolation and to test it against
// values derived by hand from its specification: no network, no switch, no
// host, only the calls the host makes, in the order it makes them. The
// Driver type is that order (hostsim.Sender's trySend, onAck and
// onRTOTimer); the script language is described in docs/cc-trace.md.
//
// Not modelled: a receiver (the script says what each ACK acknowledges),
// and the host's pacing, TSO deferral and receive window, which can hold
// back a segment the window allows; delayed ACKs are the script's to
// write.
package cctrace

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// DriverConfig is what a Driver drives and how.
type DriverConfig struct {
	CC  cc.Controller
	Rec cc.Recovery
	RTO cc.RTOConfig
	MSS int64
	// Size is the flow's length in bytes: once SndUna reaches it the flow
	// is done and ACKs are ignored (hostsim's Sender.done).
	Size uint64
	// ECN: the sender responds to ECE (hostsim Config.ECN).
	ECN bool
	// AutoSend: every ACK and timer expiry ends by sending what the window
	// allows, as the host does. Without it only Send sends.
	AutoSend bool
}

// Ack is one ACK packet as the sender receives it.
type Ack struct {
	// Ack is the cumulative acknowledgement.
	Ack uint64
	// Sack holds SACK blocks, if any.
	Sack []sim.SackBlock
	// ECE: the ACK echoes a CE mark.
	ECE bool
	// RTT is the round-trip time the ACK's timestamp echo gives (0: none).
	// As in the host, it is used only if the ACK advances SndUna, or, for
	// a per-packet ACK (EchoValid), if it newly acknowledges any byte.
	RTT sim.Time
	// Echo is the first byte of the data packet a per-packet (STrack) ACK
	// answers; EchoValid marks such an ACK. Nack and Bitmap are STrack's
	// received bitmap (cc.AckInfo).
	Echo      uint64
	EchoValid bool
	Nack      bool
	Bitmap    uint64
}

// Events counts what happened since the last TakeEvents.
type Events struct {
	Dups          int // duplicate ACKs
	EnterRecovery int // fast recovery began (OnCongestion(CongLoss))
	ExitRecovery  int // fast recovery ended (OnRecoveryExit)
	ECNCuts       int // ECN reductions (OnCongestion(CongECN))
	RTOs          int // retransmission timer expiries (OnCongestion(CongRTO))
	RecTimers     int // TimedRecovery deadlines fired
	Done          bool
}

// Driver calls a Controller and a Recovery exactly as hostsim.Sender does.
// It is a pure state machine: time moves only when told to.
type Driver struct {
	ctl      cc.Controller
	rec      cc.Recovery
	timed    cc.TimedRecovery // rec, if it has timers of its own
	rto      *cc.RTO
	mss      int64
	size     uint64
	ecn      bool
	autoSend bool

	now        sim.Time
	rtoAt      sim.Time // retransmission deadline; sim.Never when disarmed
	ecnRecover uint64   // no new ECN reduction until SndUna passes this
	ecnReduced bool     // an ECN or loss reduction happened (ecnRecover valid)
	done       bool
	highSent   uint64 // highest byte sent + 1
	delivered  int64  // bytes acknowledged so far (AckEvent.Delivered)
	// cwndLimited: since the last ACK, sending stopped because of cwnd.
	cwndLimited bool

	sent   []cc.Segment // segments sent since the last TakeSent
	events Events

	// Scratch events: pointers to locals passed through the module
	// interfaces would escape, one allocation per call (as in hostsim).
	ai cc.AckInfo
	ae cc.AckEvent
	ce cc.CongestionEvent
}

// NewDriver returns a driver at time 0 with nothing sent.
func NewDriver(cfg DriverConfig) (*Driver, error) {
	if cfg.CC == nil || cfg.Rec == nil {
		return nil, fmt.Errorf("cctrace: a controller and a recovery are required")
	}
	if cfg.MSS <= 0 {
		return nil, fmt.Errorf("cctrace: mss must be positive, got %d", cfg.MSS)
	}
	if cfg.Size == 0 {
		return nil, fmt.Errorf("cctrace: size must be positive")
	}
	if err := cfg.RTO.Validate(); err != nil {
		return nil, err
	}
	d := &Driver{ctl: cfg.CC, rec: cfg.Rec, rto: cc.NewRTO(cfg.RTO), mss: cfg.MSS,
		size: cfg.Size, ecn: cfg.ECN, autoSend: cfg.AutoSend, rtoAt: sim.Never}
	d.timed, _ = cfg.Rec.(cc.TimedRecovery)
	return d, nil
}

// Now is the driver's virtual time.
func (d *Driver) Now() sim.Time { return d.now }

// Controller is the driven controller.
func (d *Driver) Controller() cc.Controller { return d.ctl }

// Recovery is the driven recovery.
func (d *Driver) Recovery() cc.Recovery { return d.rec }

// RTO is the retransmission-timeout estimator.
func (d *Driver) RTO() *cc.RTO { return d.rto }

// RTODeadline is when the retransmission timer fires (sim.Never: off).
func (d *Driver) RTODeadline() sim.Time { return d.rtoAt }

// HighSent is the highest byte sent so far, plus one.
func (d *Driver) HighSent() uint64 { return d.highSent }

// Done reports whether every byte of the flow has been acknowledged.
func (d *Driver) Done() bool { return d.done }

// TakeSent returns the segments sent since the last call. The slice is
// reused by later sends.
func (d *Driver) TakeSent() []cc.Segment {
	s := d.sent
	d.sent = d.sent[:0]
	return s
}

// TakeEvents returns and clears the event counts.
func (d *Driver) TakeEvents() Events {
	e := d.events
	d.events = Events{}
	return e
}

// Send sends what the window allows, at most limit segments (0: no
// limit). It is hostsim.Sender.trySend: the Recovery proposes the next
// segment, retransmissions first; it goes out if it is forced (a fast
// retransmission) or fits in cwnd - pipe; the RTO is armed when the first
// segment leaves (RFC 6298 §5.1). It returns the number of segments sent.
func (d *Driver) Send(limit int) int {
	if d.done {
		return 0
	}
	n := 0
	for limit <= 0 || n < limit {
		seg, ok := d.rec.Next()
		if !ok {
			break
		}
		if !seg.Force && d.ctl.Cwnd()-d.rec.Pipe() < seg.Len {
			d.cwndLimited = true
			break
		}
		d.rec.OnSent(d.now, seg)
		if e := seg.Seq + uint64(seg.Len); e > d.highSent {
			d.highSent = e
		}
		d.sent = append(d.sent, seg)
		n++
		if d.rtoAt == sim.Never {
			d.rtoAt = d.now + d.rto.Timeout() // RFC 6298 §5.1
		}
	}
	return n
}

// OnAck processes one ACK at the current time, in hostsim.Sender.onAck's
// order:
//
//  1. Recovery.OnAck, with pipe and FlightSize taken before it;
//  2. the RTT sample, if the ACK advanced SndUna (RFC 6298 §2), or for a
//     per-packet ACK (Ack.EchoValid) if it acknowledged any new byte;
//  3. Controller.OnRecoveryExit if recovery ended, else
//     OnCongestion(CongLoss) if it began, else Controller.OnAck;
//  4. the ECN response, at most once per window of data (RFC 3168
//     §6.1.2; a loss reduction counts as that window's);
//  5. the RTO: off when the flow is done, restarted when SndUna advanced
//     (RFC 6298 §5.3); AckEvent.CwndLimited starts over;
//  6. with AutoSend, Send.
func (d *Driver) OnAck(a Ack) {
	if d.done {
		return
	}
	now := d.now
	prior := d.rec.Pipe()
	flight := d.rec.FlightSize()
	var rtt sim.Time
	if !a.EchoValid && a.Ack > d.rec.SndUna() && a.RTT > 0 {
		rtt = a.RTT
		d.rto.OnSample(rtt)
	}
	d.ai = cc.AckInfo{Now: now, Ack: a.Ack, Sack: a.Sack, DupCandidate: true,
		SRTT: d.rto.SRTT(), MinRTT: d.rto.MinRTT()}
	if a.EchoValid {
		d.ai.Echo, d.ai.EchoValid = a.Echo, true
		d.ai.Nack, d.ai.Bitmap = a.Nack, a.Bitmap
	}
	if rs, ok := d.rec.(cc.RTTSink); ok {
		rs.SetRTT(d.rto.SRTT(), d.rto.MinRTT())
	}
	if es, ok := d.rec.(cc.AckEchoSink); ok && a.RTT > 0 {
		es.SetAckEcho(now - a.RTT)
	}
	una := d.rec.SndUna()
	v := d.rec.OnAck(&d.ai)
	d.delivered += v.Acked
	// As hostsim: growth counts cumulatively acknowledged bytes (RFC 5681
	// §3.1), or every newly acknowledged packet with per-packet ACKs.
	grow := int64(d.rec.SndUna() - una)
	if a.EchoValid {
		grow = v.Acked
	}
	// As hostsim.Sender.onAck: a per-packet ACK names its packet, so every
	// ACK that newly acknowledges bytes gives a sample.
	if a.EchoValid && v.Acked > 0 && a.RTT > 0 {
		rtt = a.RTT
		d.rto.OnSample(rtt)
	}
	if v.Dup {
		d.events.Dups++
	}
	switch {
	case v.ExitRecovery:
		d.ctl.OnRecoveryExit(now)
		d.events.ExitRecovery++
	case v.EnterRecovery:
		d.congestion(cc.CongLoss, cc.LossFlight(v, flight))
		d.ecnRecover, d.ecnReduced = d.rec.SndNxt(), true
		d.events.EnterRecovery++
	default:
		// Linux tcp_is_cwnd_limited: in slow start the sender counts as
		// cwnd-limited while cwnd < 2 * packets in flight, even when
		// pacing or the application stopped it this time.
		limited := d.cwndLimited || d.ctl.Cwnd() < d.ctl.Ssthresh() && d.ctl.Cwnd() < 2*flight
		d.ae = cc.AckEvent{Now: now, Acked: grow, PriorInFlight: prior, RTT: rtt,
			MinRTT: d.rto.MinRTT(), ECE: a.ECE, InRecovery: d.rec.InRecovery(), MSS: d.mss,
			SndUna: d.rec.SndUna(), SndNxt: d.rec.SndNxt(), Delivered: d.delivered,
			CwndLimited: limited}
		d.ctl.OnAck(&d.ae)
	}
	if d.ecn && a.ECE && !d.rec.InRecovery() && (!d.ecnReduced || d.rec.SndUna() > d.ecnRecover) {
		d.congestion(cc.CongECN, d.rec.FlightSize())
		d.ecnRecover, d.ecnReduced = d.rec.SndNxt(), true
		d.events.ECNCuts++
	}
	if d.rec.SndUna() >= d.size {
		d.done = true
		d.rtoAt = sim.Never
		d.events.Done = true
		return
	}
	d.cwndLimited = false
	if v.AdvancedUna {
		d.rtoAt = now + d.rto.Timeout() // RFC 6298 §5.3
	}
	if d.autoSend {
		d.Send(0)
	}
}

// nextDeadline is the earliest armed timer and whether it is the
// recovery's own (which fires first on a tie, as a tail-loss probe or a
// RACK reordering timer comes before the RTO).
func (d *Driver) nextDeadline() (sim.Time, bool) {
	at := d.rtoAt
	if d.timed != nil && !d.done {
		if t := d.timed.Deadline(); t <= at {
			return t, true
		}
	}
	return at, false
}

// AdvanceTo moves time forward to t, firing every timer due on the way at
// its own deadline. Time never goes back.
func (d *Driver) AdvanceTo(t sim.Time) error {
	for {
		at, recTimer := d.nextDeadline()
		if at > t || at == sim.Never {
			break
		}
		if at < d.now {
			at = d.now
		}
		d.now = at
		if recTimer {
			if v := d.timed.OnDeadline(at); v.EnterRecovery {
				d.congestion(cc.CongLoss, cc.LossFlight(v, d.rec.FlightSize()))
				d.ecnRecover, d.ecnReduced = d.rec.SndNxt(), true
				d.events.EnterRecovery++
			}
			d.events.RecTimers++
			if next := d.timed.Deadline(); next <= at {
				return fmt.Errorf("cctrace: recovery deadline %v did not move past %v after OnDeadline", next, at)
			}
			if d.autoSend {
				d.Send(0)
			}
			continue
		}
		d.fireRTO()
	}
	if t > d.now {
		d.now = t
	}
	return nil
}

// FireRTO advances time to the retransmission deadline and fires it,
// firing on the way any recovery timer due before it. It fails when the
// timer is off.
func (d *Driver) FireRTO() error {
	if d.rtoAt == sim.Never {
		return fmt.Errorf("the retransmission timer is not armed")
	}
	before := d.events.RTOs
	for d.events.RTOs == before && d.rtoAt != sim.Never {
		// An earlier recovery timer may move the deadline: follow it.
		if err := d.AdvanceTo(d.rtoAt); err != nil {
			return err
		}
	}
	return nil
}

// congestion tells the controller about congestion of the given kind.
func (d *Driver) congestion(kind cc.CongestionKind, flight int64) {
	d.ce = cc.CongestionEvent{Now: d.now, Kind: kind, FlightSize: flight, MSS: d.mss}
	d.ctl.OnCongestion(&d.ce)
}

// fireRTO is hostsim.Sender.onRTOTimer at the deadline: RFC 6298 §5.4-5.6
// (retransmit from SndUna, back off, restart the timer) with the
// controller told first (RFC 5681 §3.1 eq. 4 and the loss window).
func (d *Driver) fireRTO() {
	now := d.now
	d.congestion(cc.CongRTO, d.rec.FlightSize())
	d.rec.OnRTO(now)
	d.rto.OnExpire()
	d.rtoAt = now + d.rto.Timeout()
	d.events.RTOs++
	if d.autoSend {
		d.Send(0)
	}
}
