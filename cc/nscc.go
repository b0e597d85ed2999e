package cc

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// NSCC is Ultra Ethernet's Network-Signal-based Congestion Control, the
// sender-side window of the UET transport (UEC 1.0 §3.6.13; parameters in
// its Table 3-82, source state in Table 3-83). The specification's text is
// not public in our sources: the reference is the UEC congestion-control
// group's simulator, uet-htsim (atseis/uet-htsim, htsim/sim/src/protocols/
// uec.cpp, class UecSrc), whose functions each branch below names, and
// whose constants initNsccParams and initNscc set. The UEC section numbers
// are as third-party ports of the specification quote them
// (docs/decisions.md, NSCC).
//
// The window answers two signals per ACK, the queueing delay of the
// acknowledged packet (its RTT minus the base RTT) against a target and the
// ECN mark it carried, in four quadrants (updateCwndOnAck_NSCC):
//
//	no mark, delay >= target: fair increase (every flow the same bytes)
//	no mark, delay <  target: proportional increase (or fast increase on a
//	                          clear path)
//	mark,    delay >= target: multiplicative decrease, at most once per
//	                          base RTT, by at most half
//	mark,    delay <  target: nothing (the path manager moves the flow)
//
// Increases accumulate in inc_bytes and are applied every adjust period or
// adjust bytes (fulfill_adjustment). Quick adapt sets the window to the
// bytes delivered in the last base RTT + target when that is small and a
// loss, a trim or a long delay says the window is far too large. A trim
// NACK (updateCwndOnNack_NSCC) takes the packet out of the window unless
// quick adapt fires; a per-packet timeout does the same
// (mark_packet_for_retransmission).
//
// Units: like htsim, the window counts bytes on the wire (headers
// included: htsim's in_flight adds whole packets), so its arithmetic and
// its integer truncations are htsim's. Cwnd reports the payload the wire
// window holds (× MSS/MTU) to the endpoint, whose pipe counts payload.
// Times are picoseconds where htsim's are too.
type NSCC struct {
	cfg NSCCConfig
	mss int64 // payload of a full packet
	mtu int64 // mss + header: a full packet on the wire

	// Constants of initNsccParams, scaled to this network.
	target      sim.Time // target queueing delay (_target_Qdelay)
	alpha       float64  // proportional increase, bytes per ps of headroom
	fi          float64  // fair increase per acked byte
	eta         float64  // additive increase per adjust period
	fiScale     float64  // fast increase per acked byte
	qaThreshold float64  // quick adapt on delays above this (4 × target)
	adjustBytes int64
	adjustEvery sim.Time
	minCwnd     int64

	// Source state (Table 3-83; htsim's names).
	cwnd          int64 // _cwnd, wire bytes
	maxWnd        int64 // _maxwnd
	bdp           int64 // _bdp
	baseRTT       sim.Time
	avgDelay      sim.Time // _avg_delay
	achieved      int64    // _achieved_bytes
	received      int64    // _received_bytes
	ignored       int64    // _bytes_ignored
	toIgnore      int64    // _bytes_to_ignore
	inc           int64    // _inc_bytes
	fiCount       int64    // _fi_count
	increase      bool     // _increase: fast increase mode
	triggerQA     bool     // _trigger_qa
	qaEnd         sim.Time // _qa_endtime
	lastAdjust    sim.Time // _last_adjust_time
	lastDec       sim.Time // _last_dec_time
	state         CongState
	QuickAdapts   uint64 // quick adapts that set the window
	Decreases     uint64 // multiplicative decreases applied
	NackDecreases uint64 // trim NACKs that cut the window
}

// NSCCConfig parameterises NSCC. The zero value of a field means the
// default DefaultNSCCConfig gives (and, for the derived ones, the
// derivation named).
type NSCCConfig struct {
	// LinkRate is the sender NIC's rate (htsim _nic.linkspeed()); the
	// reference network is 100 Gb/s.
	LinkRate sim.Bandwidth
	// NetworkRTT is the fabric's largest unloaded RTT (htsim main_uec.cpp
	// calculate_rtt: 2 × diameter latency + a data packet and an ACK
	// serialised on every hop of the diameter). The reference is 12 us.
	NetworkRTT sim.Time
	// BaseRTT is the flow's initial base RTT, lowered by every smaller
	// sample (update_base_rtt); 0: NetworkRTT (htsim initNscc without
	// -enable_accurate_base_rtt).
	BaseRTT sim.Time
	// Header is the bytes of headers per packet; MSS + Header is the MTU
	// the window counts.
	Header int64
	// Trimming: switches trim, so the target defaults to 0.75 ×
	// NetworkRTT, else NetworkRTT (initNsccParams).
	Trimming bool
	// TargetQDelay is the target queueing delay (0: derived as above).
	TargetQDelay sim.Time
	// QuickAdapt enables quick adapt (htsim _disable_quick_adapt false).
	QuickAdapt bool
	// QAGate: quick adapt fires only while the bytes delivered in its
	// period are below MaxWnd >> QAGate (3).
	QAGate uint
	// QAThreshold: a delay above QAThreshold × target triggers quick
	// adapt (4).
	QAThreshold float64
	// Gamma scales the multiplicative decrease (0.8); MaxMD is the least
	// factor one decrease may apply (0.5, htsim's literal).
	Gamma, MaxMD float64
	// FI (5), FIScale (0.25), Eta (0.15) and Alpha (4.0) are the fair
	// increase, fast increase, periodic additive increase and
	// proportional increase, in htsim's units: × MSS × scaling_a (FI,
	// Eta), × scaling_a (FIScale), × MSS × scaling_a × scaling_b / target
	// (Alpha).
	FI, FIScale, Eta, Alpha float64
	// DelayAlpha is the weight of a sample in the average delay (0.0125).
	DelayAlpha float64
	// FastIncreaseDelay: fast increase counts ACKs with a delay below it
	// (1 us).
	FastIncreaseDelay sim.Time
	// MaxWndBDP is the window's ceiling in BDPs of the base RTT (1.5).
	MaxWndBDP float64
	// AdjustBytes (8, in MTUs) and AdjustPeriod (0: NetworkRTT): the
	// increases are applied once this many bytes were acknowledged or this
	// long after the last periodic increase.
	AdjustBytes  int64
	AdjustPeriod sim.Time
	// InitCwnd is the initial window in packets (0: the ceiling MaxWnd, as
	// htsim initNscc with cwnd 0).
	InitCwnd int64
	// BaseRTTOnNack: a NACK's RTT may lower the base RTT (htsim
	// update_base_rtt_on_nack, true).
	BaseRTTOnNack bool
}

// The reference network every NSCC constant is defined on (UEC 1.0
// §3.6.13.3, Table 3-82 base_BDP; htsim initNsccParams): 100 Gb/s with a
// 12 us RTT, a BDP of 150,000 bytes.
const (
	nsccRefRate = 100 * sim.GbitPerSecond
	nsccRefRTT  = 12 * sim.Microsecond
)

// DefaultNSCCConfig has uet-htsim's values (initNsccParams, initNscc and
// the statics of uec.cpp) on its reference network with trimming.
func DefaultNSCCConfig() NSCCConfig {
	return NSCCConfig{LinkRate: nsccRefRate, NetworkRTT: nsccRefRTT, Trimming: true, QuickAdapt: true,
		QAGate: 3, QAThreshold: 4, Gamma: 0.8, MaxMD: 0.5, FI: 5, FIScale: 0.25, Eta: 0.15, Alpha: 4.0,
		DelayAlpha: 0.0125, FastIncreaseDelay: sim.Microsecond, MaxWndBDP: 1.5, AdjustBytes: 8,
		BaseRTTOnNack: true}
}

// Validate checks the numbers.
func (c *NSCCConfig) Validate() error {
	switch {
	case c.LinkRate <= 0:
		return fmt.Errorf("nscc: link_rate must be positive")
	case c.NetworkRTT <= 0:
		return fmt.Errorf("nscc: network_rtt must be positive")
	case c.BaseRTT < 0 || c.TargetQDelay < 0 || c.AdjustPeriod < 0 || c.FastIncreaseDelay < 0:
		return fmt.Errorf("nscc: base_rtt, target_qdelay, adjust_period and fast_increase_delay must not be negative")
	case c.Header < 0:
		return fmt.Errorf("nscc: header must not be negative")
	case c.QAGate > 30:
		return fmt.Errorf("nscc: qa_gate must be at most 30, got %d", c.QAGate)
	case c.Gamma <= 0 || c.Gamma > 1:
		return fmt.Errorf("nscc: gamma must be in (0, 1], got %g", c.Gamma)
	case c.MaxMD <= 0 || c.MaxMD >= 1:
		return fmt.Errorf("nscc: max_md must be in (0, 1), got %g", c.MaxMD)
	case c.FI < 0 || c.FIScale < 0 || c.Eta < 0 || c.Alpha < 0 || c.QAThreshold < 0:
		return fmt.Errorf("nscc: fi, fi_scale, eta, alpha and qa_threshold must not be negative")
	case c.DelayAlpha <= 0 || c.DelayAlpha > 1:
		return fmt.Errorf("nscc: delay_alpha must be in (0, 1], got %g", c.DelayAlpha)
	case c.MaxWndBDP <= 0:
		return fmt.Errorf("nscc: max_cwnd_bdp must be positive, got %g", c.MaxWndBDP)
	case c.AdjustBytes <= 0:
		return fmt.Errorf("nscc: adjust_bytes must be positive, got %d", c.AdjustBytes)
	case c.InitCwnd < 0:
		return fmt.Errorf("nscc: init_cwnd must not be negative, got %d", c.InitCwnd)
	}
	return nil
}

var (
	_ Controller     = (*NSCC)(nil)
	_ NackReactor    = (*NSCC)(nil)
	_ Observer       = (*NSCC)(nil)
	_ ECNReactor     = (*NSCC)(nil)
	_ TimeoutReactor = (*NSCC)(nil)
	_ Prober         = (*NSCC)(nil)
)

// bdpOf is htsim's timeAsSec(rtt) * (linkspeed / 8), truncated to bytes.
func bdpOf(rtt sim.Time, rate sim.Bandwidth) int64 {
	return int64(float64(rtt) / float64(sim.Second) * (float64(rate) / 8))
}

// NewNSCC returns NSCC for packets of mss payload bytes (initNsccParams
// and initNscc).
func NewNSCC(cfg NSCCConfig, mss int64) *NSCC {
	n := &NSCC{cfg: cfg, mss: mss, mtu: mss + cfg.Header, state: StateWindow}
	netBDP := bdpOf(cfg.NetworkRTT, cfg.LinkRate)
	refBDP := bdpOf(nsccRefRTT, nsccRefRate)
	n.target = cfg.TargetQDelay
	if n.target == 0 {
		n.target = cfg.NetworkRTT
		if cfg.Trimming {
			n.target = sim.Time(float64(cfg.NetworkRTT) * 0.75)
		}
	}
	// §3.6.13.3: scaling_a = BDP / base_BDP, scaling_b = target / 12 us.
	a := float64(netBDP) / float64(refBDP)
	b := float64(n.target) / float64(nsccRefRTT)
	m := float64(mss) // htsim scales by _mss, the payload of a packet
	n.alpha = cfg.Alpha * m * a * b / float64(n.target)
	n.fi = cfg.FI * m * a
	n.eta = cfg.Eta * m * a
	n.fiScale = cfg.FIScale * a
	n.qaThreshold = cfg.QAThreshold * float64(n.target)
	n.adjustBytes = cfg.AdjustBytes * n.mtu
	n.adjustEvery = cfg.AdjustPeriod
	if n.adjustEvery == 0 {
		n.adjustEvery = cfg.NetworkRTT
	}
	n.minCwnd = n.mtu
	// initNscc: the base RTT, its BDP and the ceiling of 1.5 BDP; the
	// window starts at the ceiling unless told otherwise.
	n.baseRTT = cfg.BaseRTT
	if n.baseRTT == 0 {
		n.baseRTT = cfg.NetworkRTT
	}
	n.bdp = bdpOf(n.baseRTT, cfg.LinkRate)
	n.maxWnd = int64(cfg.MaxWndBDP * float64(n.bdp))
	n.cwnd = n.maxWnd
	if cfg.InitCwnd > 0 {
		n.cwnd = cfg.InitCwnd * n.mtu
	}
	return n
}

// wire is the bytes on the wire of payload bytes that are whole packets
// (at most one of them short, the flow's last): one header per packet.
func (n *NSCC) wire(payload int64) int64 {
	if payload <= 0 || n.cfg.Header == 0 {
		return payload
	}
	return payload + (payload+n.mss-1)/n.mss*n.cfg.Header
}

// setBounds is set_cwnd_bounds: the window stays in [MTU, MaxWnd].
func (n *NSCC) setBounds() {
	n.cwnd = max(n.cwnd, n.minCwnd)
	n.cwnd = min(n.cwnd, n.maxWnd)
}

// updateBaseRTT is update_base_rtt: a smaller RTT lowers the base RTT,
// its BDP and the ceiling.
func (n *NSCC) updateBaseRTT(raw sim.Time) {
	if n.baseRTT <= raw {
		return
	}
	n.baseRTT = raw
	// htsim: timeAsUs(raw_rtt) * linkspeed / 8000000.
	n.bdp = int64(float64(raw) / float64(sim.Microsecond) * float64(n.cfg.LinkRate) / 8e6)
	n.maxWnd = int64(n.cfg.MaxWndBDP * float64(n.bdp))
}

// updateDelay is update_delay: the average queueing delay, an EWMA of the
// samples (§3.6.13.6 get_avg_delay). An unmarked sample above the target
// counts as a quarter base RTT: without a mark, a long delay is not taken
// for congestion. Samples above 5 base RTTs have weight 0.0125 whatever
// DelayAlpha is.
func (n *NSCC) updateDelay(raw sim.Time, marked bool) {
	delay := raw - n.baseRTT
	w := n.cfg.DelayAlpha
	var sample float64
	switch {
	case !marked && delay > n.target:
		sample = float64(n.baseRTT) * 0.25
	case delay > 5*n.baseRTT:
		w, sample = 0.0125, float64(delay)
	default:
		sample = float64(delay)
	}
	n.avgDelay = sim.Time(w*sample + (1-w)*float64(n.avgDelay))
}

// quickAdapt is quick_adapt (§3.6.13.4): once per base RTT + target, if a
// loss, a trim or a delay above the threshold says so and fewer than
// MaxWnd >> QAGate bytes were delivered in the period, the window becomes
// those bytes, and the marks of what is in flight then are ignored. It
// reports whether the ACK is done with (the window set, or a mark
// ignored).
func (n *NSCC) quickAdapt(now sim.Time, loss, marked bool, delay sim.Time, inflight int64) bool {
	if !n.cfg.QuickAdapt {
		return false
	}
	done := false
	if n.ignored < n.toIgnore && marked {
		done = true
		n.state = StateHold
	} else if now > n.qaEnd {
		if n.qaEnd != 0 && (n.triggerQA || loss || float64(delay) > n.qaThreshold) &&
			n.achieved < n.maxWnd>>n.cfg.QAGate {
			n.cwnd = max(n.achieved, n.minCwnd)
			n.toIgnore = inflight
			n.ignored = 0
			n.triggerQA = false
			done = true
			n.state = StateQuickAdapt
			n.QuickAdapts++
		}
		n.achieved = 0
		n.qaEnd = now + n.baseRTT + n.target
	}
	if done {
		n.inc = 0
		n.received = 0
	}
	return done
}

// fastIncrease is fast_increase (§3.6.13.6): after a window's worth of
// bytes acknowledged with a delay near zero (< FastIncreaseDelay), every
// such ACK grows the window by FIScale of its bytes at once, until a
// delay shows up.
func (n *NSCC) fastIncrease(acked int64, delay sim.Time) {
	if delay < n.cfg.FastIncreaseDelay {
		n.fiCount += acked
		if n.fiCount > n.cwnd || n.increase {
			n.cwnd = int64(float64(n.cwnd) + float64(acked)*n.fiScale)
			n.increase = true
			n.state = StateFastIncrease
			return
		}
	} else {
		n.fiCount = 0
	}
	n.increase = false
}

// multiplicativeDecrease is multiplicative_decrease: when the average
// delay exceeds the target, the window shrinks by gamma × (avg − target) /
// avg, at most by half (MaxMD) and at most once per base RTT.
func (n *NSCC) multiplicativeDecrease(now sim.Time) {
	n.increase = false
	n.fiCount = 0
	n.state = StateHold
	avg := n.avgDelay
	if avg <= n.target || now-n.lastDec <= n.baseRTT {
		return
	}
	f := max(1-n.cfg.Gamma*float64(avg-n.target)/float64(avg), n.cfg.MaxMD)
	n.cwnd = int64(float64(n.cwnd) * f)
	n.cwnd = max(n.cwnd, n.minCwnd)
	n.lastDec = now
	n.state = StateMultDecrease
	n.Decreases++
}

// fulfill is fulfill_adjustment: the accumulated increase, divided by the
// window, joins it; once per adjust period, eta more.
func (n *NSCC) fulfill(now sim.Time) {
	n.cwnd += n.inc / n.cwnd
	if now-n.lastAdjust >= n.adjustEvery {
		n.cwnd = int64(float64(n.cwnd) + n.eta)
		n.lastAdjust = now
	}
	n.inc = 0
	n.received = 0
}

// OnAck implements Controller.OnAck: processAck's bookkeeping and delay
// sample, then updateCwndOnAck_NSCC.
func (n *NSCC) OnAck(ev *AckEvent) {
	now := ev.Now
	acked := n.wire(ev.Acked)
	if acked > 0 {
		n.achieved += acked
		n.received += acked
		n.ignored += acked
	}
	delay := n.avgDelay // no sample: the average stands in
	if raw := ev.RTT; raw > 0 {
		n.updateBaseRTT(raw)
		if raw >= n.baseRTT {
			n.updateDelay(raw, ev.ECE)
			delay = raw - n.baseRTT
		}
	}
	if n.quickAdapt(now, false, ev.ECE, delay, n.wire(ev.InFlight)) {
		return
	}
	switch {
	case !ev.ECE && delay >= n.target:
		// fair_increase: every flow gets the same bytes per byte acked.
		n.inc = int64(float64(n.inc) + n.fi*float64(acked))
		n.state = StateFairIncrease
	case !ev.ECE:
		// proportional_increase, unless fast increase took the ACK.
		n.fastIncrease(acked, delay)
		if !n.increase {
			n.inc = int64(float64(n.inc) + n.alpha*float64(acked)*float64(n.target-delay))
			n.state = StatePropIncrease
		}
	case delay >= n.target:
		n.multiplicativeDecrease(now)
	default:
		// A mark below the target delay: only the path changes.
		n.state = StateHold
	}
	n.setBounds()
	if n.received > n.adjustBytes || now-n.lastAdjust > n.adjustEvery {
		n.fulfill(now)
	}
	n.setBounds()
}

// OnNack implements NackReactor (updateCwndOnNack_NSCC, §3.6.13.5): a
// trimmed packet met a full queue, so the average delay takes a network
// RTT as its sample, quick adapt is due, and unless it fires the packet's
// bytes leave the window. With sender-side CC only (no RCCC), a last-hop
// trim cuts the window like any other.
func (n *NSCC) OnNack(ev *NackEvent) {
	if n.cfg.BaseRTTOnNack && ev.RTT > 0 {
		n.updateBaseRTT(ev.RTT)
	}
	bytes := n.wire(ev.Bytes)
	n.ignored += bytes
	n.updateDelay(n.baseRTT+n.cfg.NetworkRTT, true)
	n.triggerQA = true
	if n.quickAdapt(ev.Now, true, true, 0, n.wire(ev.PriorInFlight)) {
		return
	}
	n.cwnd -= bytes
	n.setBounds()
	n.state = StateNackDecrease
	n.NackDecreases++
}

// OnPacketTimeout implements TimeoutReactor: a per-packet timeout takes
// the packets out of the window (mark_packet_for_retransmission, floored
// at one MTU and not capped).
func (n *NSCC) OnPacketTimeout(now sim.Time, bytes int64) {
	n.cwnd = max(n.cwnd-n.wire(bytes), n.mtu)
	n.state = StateTimeoutDecrease
}

// OnCongestion implements Controller.OnCongestion. Losses and ECN reach
// NSCC through NACKs and ACKs only; an RTO of the endpoint's (which UET's
// recovery never arms) counts as one packet timed out.
func (n *NSCC) OnCongestion(ev *CongestionEvent) {
	if ev.Kind == CongRTO {
		n.OnPacketTimeout(ev.Now, ev.MSS)
	}
}

// OnRecoveryExit implements Controller.OnRecoveryExit (UET's recovery has
// no recovery episodes).
func (n *NSCC) OnRecoveryExit(now sim.Time) {}

// Cwnd implements Controller.Cwnd: the payload the wire window holds.
func (n *NSCC) Cwnd() int64 { return n.cwnd * n.mss / n.mtu }

// Ssthresh implements Controller.Ssthresh: NSCC has no slow start.
func (n *NSCC) Ssthresh() int64 { return 0 }

// State implements Observer: the last window action.
func (n *NSCC) State() CongState { return n.state }

// WireCwnd is the window in bytes on the wire, as htsim's _cwnd.
func (n *NSCC) WireCwnd() int64 { return n.cwnd }

// MaxCwnd is the ceiling in bytes on the wire (_maxwnd).
func (n *NSCC) MaxCwnd() int64 { return n.maxWnd }

// BaseRTT is the smallest RTT seen (or the configured one).
func (n *NSCC) BaseRTT() sim.Time { return n.baseRTT }

// AvgDelay is the average queueing delay (get_avg_delay).
func (n *NSCC) AvgDelay() sim.Time { return n.avgDelay }

// Target is the target queueing delay.
func (n *NSCC) Target() sim.Time { return n.target }

// IncBytes is the increase accumulated since the last adjustment.
func (n *NSCC) IncBytes() int64 { return n.inc }

// Probe implements Prober (`expect ctl.NAME=V` in a cc trace): avg_delay_ns,
// base_rtt_ns, target_ns (nanoseconds), wire_cwnd, max_cwnd (bytes on the
// wire), inc_bytes, achieved (bytes delivered in the quick-adapt period),
// quick_adapts.
func (n *NSCC) Probe(name string) (float64, bool) {
	switch name {
	case "avg_delay_ns":
		return n.avgDelay.Nanoseconds(), true
	case "base_rtt_ns":
		return n.baseRTT.Nanoseconds(), true
	case "target_ns":
		return n.target.Nanoseconds(), true
	case "wire_cwnd":
		return float64(n.cwnd), true
	case "max_cwnd":
		return float64(n.maxWnd), true
	case "inc_bytes":
		return float64(n.inc), true
	case "achieved":
		return float64(n.achieved), true
	case "quick_adapts":
		return float64(n.QuickAdapts), true
	}
	return 0, false
}

// ReactsToECN implements ECNReactor: the quadrants read every ACK's mark.
func (n *NSCC) ReactsToECN() {}

// RequiredRecovery implements RecoveryRequirer: UET's packet-level
// recovery (cc/uet_recovery.go).
func (n *NSCC) RequiredRecovery() string { return "uet" }

// NSCCDefaultLB is the load-balancing policy a scenario gets when it names
// none: htsim main_uec.cpp's default, mixed (REPS recycling, else the
// bitmap).
const NSCCDefaultLB = "mixed"
