// Package cctrace drives one congestion controller and one loss recovery
// through a scripted sequence of sends, ACKs, timer expiries and
// assertions, and prints their state after every step as a table.
//
// It exists to look at a module in isolation and to test it against
// values derived by hand from its specification: no network, no switch, no
// host. The Driver drives a cc.Endpoint, the same sender a run's hosts
// drive, so a script executes exactly what a run executes; the script
// language is described in docs/cc-trace.md.
//
// Not modelled: a receiver (the script says what each ACK, NACK, NAK and
// CNP carries; delayed ACKs are the script's to write), packets (ids,
// ports) and the NIC (a rate-based flow's packets leave when its pacer
// allows, as if the link were idle). A path manager (DriverConfig.Paths)
// picks each packet's entropy from the entropies ACKs and NACKs echo, as
// the script writes them. The endpoint's Linux pacing, TSO deferral and
// receive window are there (DriverConfig) but scripts leave them off.
package cctrace

import (
	"fmt"
	"math/rand/v2"

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
	// Hops is the flow's path length (hop-aware controllers, STrack).
	Hops int
	// LineRate and BaseRTT are for link-aware controllers (HPCC).
	LineRate sim.Bandwidth
	BaseRTT  sim.Time
	// Header, TSOSegments, Pacing and RWnd are the endpoint's send gating
	// (cc.EndpointConfig); the zero values turn them off.
	Header      int64
	TSOSegments int
	Pacing      cc.PacingConfig
	RWnd        int64
	// Paths gives the endpoint a path manager (STrack's modes or UET's
	// load-balancing policies) with entropies from 0: a packet's entropy
	// is its index.
	Paths *cc.PathConfig
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
	// Nak: a RoCE NAK (sequence error): Ack is the receiver's expected
	// sequence, Sack (selective repeat) the packet that triggered it.
	Nak bool
	// Tel is the telemetry the ACK carries (INT records, endpoint delay),
	// nil for none.
	Tel *sim.Telemetry
	// Entropy is the entropy the ACK echoes (the path manager's input).
	Entropy uint16
}

// Events counts what happened since the last TakeEvents.
type Events struct {
	Dups          int // duplicate ACKs
	EnterRecovery int // fast recovery began (OnCongestion(CongLoss))
	ExitRecovery  int // fast recovery ended (OnRecoveryExit)
	ECNCuts       int // ECN reductions (OnCongestion(CongECN))
	RTOs          int // retransmission timer expiries (OnCongestion(CongRTO))
	RecTimers     int // TimedRecovery deadlines fired
	CCTimers      int // TimedController deadlines fired
	CNPs          int // CNPs processed
	Nacks         int // trim NACKs that took a packet out of the flight
	Done          bool
}

// Driver drives a cc.Endpoint through a script's steps. It is a pure
// state machine: time moves only when told to.
type Driver struct {
	ep       *cc.Endpoint
	autoSend bool
	rng      *rand.Rand // the endpoint's entropy draws (unused without RandomEntropy)

	now      sim.Time
	highSent uint64 // highest byte sent + 1

	sent   []cc.Segment // segments sent since the last TakeSent (with their entropy)
	ackReq []bool       // whether each asked for an ACK at once (cc.Sent.AckReq)
	events Events
	ack    cc.Ack  // scratch
	nack   cc.Nack // scratch
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
	ep, err := cc.NewEndpoint(cc.EndpointConfig{MSS: cfg.MSS, Size: cfg.Size, RTO: cfg.RTO,
		ECN: cfg.ECN, Header: cfg.Header, TSOSegments: cfg.TSOSegments, Pacing: cfg.Pacing,
		RWnd: cfg.RWnd, Hops: cfg.Hops, LineRate: cfg.LineRate, BaseRTT: cfg.BaseRTT, Paths: cfg.Paths}, cfg.CC, cfg.Rec)
	if err != nil {
		return nil, err
	}

	return &Driver{ep: ep, autoSend: cfg.AutoSend, rng: sim.NewRand(0, 0)}, nil
}

// Now is the driver's virtual time.
func (d *Driver) Now() sim.Time { return d.now }

// Endpoint is the driven endpoint.
func (d *Driver) Endpoint() *cc.Endpoint { return d.ep }

// Controller is the driven controller.
func (d *Driver) Controller() cc.Controller { return d.ep.Controller() }

// Recovery is the driven recovery.
func (d *Driver) Recovery() cc.Recovery { return d.ep.Recovery() }

// RTO is the retransmission-timeout estimator.
func (d *Driver) RTO() *cc.RTO { return d.ep.RTO() }

// RTODeadline is when the retransmission timer fires (sim.Never: off).
func (d *Driver) RTODeadline() sim.Time { return d.ep.RTODeadline() }

// HighSent is the highest byte sent so far, plus one.
func (d *Driver) HighSent() uint64 { return d.highSent }

// Done reports whether every byte of the flow has been acknowledged.
func (d *Driver) Done() bool { return d.ep.Done() }

// TakeSent returns the segments sent since the last call. The slice is
// reused by later sends.
func (d *Driver) TakeSent() []cc.Segment {
	s := d.sent
	d.sent = d.sent[:0]
	return s
}

// TakeAckReqs returns, for the segments TakeSent returned last, whether
// each asked for an ACK at once; the slice is reused.
func (d *Driver) TakeAckReqs() []bool {
	a := d.ackReq
	d.ackReq = d.ackReq[:0]
	return a
}

// TakeEvents returns and clears the event counts.
func (d *Driver) TakeEvents() Events {
	e := d.events
	d.events = Events{}
	return e
}

// Send sends what the endpoint allows, at most limit segments (0: no
// limit), as a host's send opportunity does: the Recovery proposes the
// next segment, retransmissions first; it goes out if it is forced (a fast
// retransmission) or fits in cwnd - pipe (and the pacing, TSO and
// receive-window gates, when configured); the RTO is armed when the first
// segment leaves (RFC 6298 §5.1). It returns the number of segments sent.
func (d *Driver) Send(limit int) int {
	n := 0
	d.ep.BeginSend()
	for limit <= 0 || n < limit {
		seg, ok := d.ep.Next(d.now)
		if !ok {
			break
		}
		sent := d.ep.OnSent(d.now, seg, d.rng)
		if e := seg.Seq + uint64(seg.Len); e > d.highSent {
			d.highSent = e
		}
		seg.Entropy = sent.Entropy
		d.sent = append(d.sent, seg)
		d.ackReq = append(d.ackReq, sent.AckReq)
		n++
	}
	return n
}

// count adds what the endpoint did to the event counts.
func (d *Driver) count(a cc.Actions) {
	if a.Dup {
		d.events.Dups++
	}
	if a.EnterRecovery {
		d.events.EnterRecovery++
	}
	if a.ExitRecovery {
		d.events.ExitRecovery++
	}
	if a.ECNCut {
		d.events.ECNCuts++
	}
	if a.RTO {
		d.events.RTOs++
	}
	if a.RecoveryTimer {
		d.events.RecTimers++
	}
	if a.CCTimer {
		d.events.CCTimers++
	}
	if a.CNP {
		d.events.CNPs++
	}
	if a.Nack {
		d.events.Nacks++
	}
	if a.Done {
		d.events.Done = true
	}
}

// OnAck processes one ACK at the current time with cc.Endpoint.OnAck (see
// there for the order of the calls), then, with AutoSend, sends. The ACK's
// RTT becomes its echoed timestamp (now - RTT; none when RTT is 0).
func (d *Driver) OnAck(a Ack) {
	if d.ep.Done() {
		return
	}
	d.ack = cc.Ack{Ack: a.Ack, Sack: a.Sack, ECE: a.ECE, Echo: a.Echo, EchoValid: a.EchoValid,
		Nack: a.Nack, Bitmap: a.Bitmap, Nak: a.Nak, Tel: a.Tel, Entropy: a.Entropy}
	if a.RTT > 0 {
		d.ack.TSecr, d.ack.HasTSecr = d.now-a.RTT, true
	}
	act := d.ep.OnAck(d.now, &d.ack)
	d.count(act)
	if act.Send && d.autoSend {
		d.Send(0)
	}
}

// OnNack processes a trim NACK at the current time with
// cc.Endpoint.OnNack, then, with AutoSend, sends. rtt > 0 makes its echoed
// timestamp now - rtt.
func (d *Driver) OnNack(n cc.Nack, rtt sim.Time) {
	if d.ep.Done() {
		return
	}
	d.nack = n
	if rtt > 0 {
		d.nack.TSecr, d.nack.HasTSecr = d.now-rtt, true
	}
	act := d.ep.OnNack(d.now, &d.nack)
	d.count(act)
	if act.Send && d.autoSend {
		d.Send(0)
	}
}

// OnCNP processes a congestion notification packet at the current time
// (cc.Endpoint.OnCNP), then, with AutoSend, sends.
func (d *Driver) OnCNP() {
	act := d.ep.OnCNP(d.now)
	d.count(act)
	if act.Send && d.autoSend {
		d.Send(0)
	}
}

// nextDeadline is the earliest armed timer and which it is: the
// controller's own fires first on a tie (a rate change comes before what
// it affects), then the recovery's (a tail-loss probe or a RACK
// reordering timer comes before the RTO), and pacing (only when a send
// waits for it, with AutoSend) last.
func (d *Driver) nextDeadline() (sim.Time, cc.Timer, bool) {
	at, t := d.ep.RTODeadline(), cc.TimerRTO
	if r := d.ep.RecoveryDeadline(); r <= at {
		at, t = r, cc.TimerRecovery
	}
	if c := d.ep.CCDeadline(); c <= at {
		at, t = c, cc.TimerCC
	}
	if d.autoSend && d.ep.PaceBlocked() && d.ep.PaceAt() < at {
		return d.ep.PaceAt(), 0, true
	}
	return at, t, false
}

// AdvanceTo moves time forward to t, firing every timer due on the way at
// its own deadline. Time never goes back.
func (d *Driver) AdvanceTo(t sim.Time) error {
	for {
		at, which, pace := d.nextDeadline()
		if at > t || at == sim.Never {
			break
		}
		if at < d.now {
			at = d.now
		}
		d.now = at
		if pace {
			d.Send(0)
			continue
		}
		act := d.ep.OnDeadline(at, which)
		d.count(act)
		if which == cc.TimerRecovery {
			if next := d.ep.RecoveryDeadline(); next <= at {
				return fmt.Errorf("cctrace: recovery deadline %v did not move past %v after OnDeadline", next, at)
			}
		}
		if which == cc.TimerCC {
			if next := d.ep.CCDeadline(); next <= at {
				return fmt.Errorf("cctrace: controller deadline %v did not move past %v after OnDeadline", next, at)
			}
		}
		if act.Send && d.autoSend {
			d.Send(0)
		}
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
	if d.ep.RTODeadline() == sim.Never {
		return fmt.Errorf("the retransmission timer is not armed")
	}
	before := d.events.RTOs
	for d.events.RTOs == before && d.ep.RTODeadline() != sim.Never {
		// An earlier recovery timer may move the deadline: follow it.
		if err := d.AdvanceTo(d.ep.RTODeadline()); err != nil {
			return err
		}
	}
	return nil
}
