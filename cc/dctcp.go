package cc

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// DCTCPConfig parameterises DCTCP. Every field is taken as given: start
// from DefaultDCTCPConfig and change what differs. (A zero G once meant
// "the default" and a zero InitAlpha "1"; 0 is a valid initial alpha, so
// neither zero stands for a default any more.)
type DCTCPConfig struct {
	// G is the EWMA gain g of RFC 8257 §3.3, in (0, 1]. The RFC recommends
	// 1/16 (Linux dctcp_shift_g = 4: g = 1/2^4).
	G float64
	// InitAlpha is DCTCP.Alpha before the first observation window, in
	// [0, 1]. RFC 8257 §4 leaves it to the implementation; Linux's
	// default is 1 (dctcp_alpha_on_init = DCTCP_MAX_ALPHA = 1024/1024),
	// the cautious choice: the first reduction halves the window as
	// standard ECN does. 0 is valid and means "no congestion seen yet":
	// Linux takes any dctcp_alpha_on_init up to DCTCP_MAX_ALPHA
	// (dctcp_init: min(dctcp_alpha_on_init, DCTCP_MAX_ALPHA)), and ns-3's
	// TcpDctcp attribute DctcpAlphaOnInit any value in [0, 1].
	InitAlpha float64
}

// dctcpDefaultG is RFC 8257 §3.3's recommended g = 1/16.
const dctcpDefaultG = 1.0 / 16

// DefaultDCTCPConfig is g = 1/16 and an initial alpha of 1.
func DefaultDCTCPConfig() DCTCPConfig { return DCTCPConfig{G: dctcpDefaultG, InitAlpha: 1} }

// Validate checks 0 < G <= 1 and 0 <= InitAlpha <= 1. g = 0 would freeze
// alpha at its initial value (ns-3's DctcpShiftG checker admits it; RFC
// 8257 §3.3's estimator needs g > 0).
func (c DCTCPConfig) Validate() error {
	if !(c.G > 0 && c.G <= 1) {
		return &OptionValueError{Module: "dctcp", Key: "g",
			Err: fmt.Errorf("must be in (0, 1] (RFC 8257 §3.3 recommends 1/16), got %v", c.G)}
	}
	if !(c.InitAlpha >= 0 && c.InitAlpha <= 1) {
		return &OptionValueError{Module: "dctcp", Key: "init_alpha",
			Err: fmt.Errorf("must be in [0, 1] (0: no congestion seen yet; Linux's default 1), got %v", c.InitAlpha)}
	}
	return nil
}

// DCTCP is Data Center TCP as RFC 8257 describes it, on top of Reno (as
// Linux's tcp_dctcp.c is "DCTCP over Reno").
//
//   - §3.3 steps 1-7: on every ACK, the bytes newly acknowledged
//     (SND.UNA's advance: SACK is ignored, as step 1 says) are added to
//     BytesAcked, and to BytesMarked if the ACK has ECE. When SND.UNA
//     passes WindowEnd (step 3: SEG.ACK > WindowEnd), the window of
//     observation ends: M = BytesMarked/BytesAcked,
//     alpha = alpha*(1-g) + g*M, WindowEnd = SND.NXT, counters reset.
//     WindowEnd starts at 0 (SND.NXT when the connection starts, as Linux's
//     dctcp_reset at init), so the first ACK closes the first window.
//   - §3.3 step 8: on ECE the sender reduces, once per window of data
//     (the host's RFC 3168 gate calls OnCongestion(CongECN) at most once
//     per window): cwnd = cwnd * (1 - alpha/2). ssthresh takes the same
//     value, as RFC 3168 §6.1.2 and Linux's dctcp_ssthresh do. The
//     reduction is rounded down to whole bytes (Linux: cwnd*alpha >> 11 in
//     packets) and the result is at least 2*SMSS (Linux's "2U").
//   - §3.4: slow start and congestion avoidance are Reno's (RFC 5681).
//   - §3.5: loss and RTO are handled as conventional TCP: Reno's.
//
// alpha is a float64 and every product is rounded explicitly before a sum
// (Go may otherwise fuse a*b+c), so results are the same on every machine.
//
// Deviation from Linux: tcp_dctcp.c counts delivered packets
// (tp->delivered, tp->delivered_ce), SACKed ones included, where RFC 8257
// counts cumulatively acknowledged bytes; we follow the RFC. Because the
// count is SND.UNA's advance since the last OnAck, bytes acknowledged by an
// ACK the host does not pass to OnAck (one that starts or ends recovery)
// are counted with the next ACK, under that ACK's ECE flag. Linux also
// ends the window when SND.UNA reaches next_seq (!before), the RFC when it
// passes WindowEnd (>); we follow the RFC.
type DCTCP struct {
	reno        Reno
	g           float64
	alpha       float64 // DCTCP.Alpha, in [0, 1]
	windowEnd   uint64  // WindowEnd
	bytesAcked  int64   // BytesAcked
	bytesMarked int64   // BytesMarked
	prevUna     uint64  // SND.UNA before this ACK
	recovering  bool    // between OnCongestion(CongLoss) and the end of recovery
}

var (
	_ Controller = (*DCTCP)(nil)
	_ Observer   = (*DCTCP)(nil)
)

// NewDCTCP returns DCTCP with an initial window of initCwnd segments of
// mss bytes.
// Preconditions: cfg.Validate() == nil.
func NewDCTCP(cfg DCTCPConfig, mss, initCwnd int64) *DCTCP {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("cc: NewDCTCP(%+v): %v", cfg, err))
	}
	return &DCTCP{reno: *NewReno(mss, initCwnd), g: cfg.G, alpha: cfg.InitAlpha}
}

// Alpha is DCTCP.Alpha, the estimated fraction of marked bytes.
func (d *DCTCP) Alpha() float64 { return d.alpha }

// NeedsECN declares ECNDriven: DCTCP reacts to the fraction of marked
// packets, so it needs ECN-capable packets.
func (d *DCTCP) NeedsECN() {}

// OnAck implements Controller.OnAck.
func (d *DCTCP) OnAck(ev *AckEvent) {
	if !ev.InRecovery {
		d.recovering = false
	}
	// RFC 8257 §3.3 steps 1-2.
	if ev.SndUna > d.prevUna {
		n := int64(ev.SndUna - d.prevUna)
		d.prevUna = ev.SndUna
		d.bytesAcked += n
		if ev.ECE {
			d.bytesMarked += n
		}
	}
	// Steps 3-7: the observation window ends when SEG.ACK > WindowEnd.
	if ev.SndUna > d.windowEnd {
		var m float64
		if d.bytesAcked > 0 {
			m = float64(d.bytesMarked) / float64(d.bytesAcked)
		}
		d.alpha = float64(d.alpha*(1-d.g)) + float64(d.g*m)
		d.windowEnd = ev.SndNxt
		d.bytesAcked, d.bytesMarked = 0, 0
	}
	// §3.4: window growth as conventional TCP.
	d.reno.OnAck(ev)
}

// OnCongestion implements Controller.OnCongestion.
func (d *DCTCP) OnCongestion(ev *CongestionEvent) {
	if ev.Kind != CongECN {
		// §3.5: loss as conventional TCP.
		d.reno.OnCongestion(ev)
		d.recovering = ev.Kind == CongLoss
		return
	}
	// §3.3 step 8: cwnd = cwnd * (1 - alpha/2).
	r := &d.reno
	cut := int64(float64(r.cwnd) * d.alpha / 2)
	r.cwnd = max(r.cwnd-cut, 2*r.mss)
	r.ssthresh = r.cwnd
	r.acked = 0
}

// OnRecoveryExit implements Controller.OnRecoveryExit.
func (d *DCTCP) OnRecoveryExit(now sim.Time) {
	d.recovering = false
	d.reno.OnRecoveryExit(now)
}

// Cwnd implements Controller.Cwnd.
func (d *DCTCP) Cwnd() int64 { return d.reno.Cwnd() }

// Ssthresh implements Controller.Ssthresh.
func (d *DCTCP) Ssthresh() int64 { return d.reno.Ssthresh() }

// State implements Observer.State.
func (d *DCTCP) State() CongState {
	switch {
	case d.recovering:
		return StateRecovery
	case d.reno.cwnd < d.reno.ssthresh:
		return StateSlowStart
	}
	return StateCongestionAvoidance
}
