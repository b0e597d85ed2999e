package cc

import (
	"fmt"
	"math"

	"github.com/lockstep-sim/lockstep/sim"
)

// Swift (Kumar et al., "Swift: Delay is Simple and Effective for
// Congestion Control in the Datacenter", SIGCOMM 2020): AIMD on delay
// against a target. Each RTT sample is split into the endpoint delay (the
// hosts' share: NIC queueing and the receiver's ACK delay, §3.2) and the
// fabric delay (the rest). Two windows run Algorithm 1 side by side, the
// fabric window against a target scaled by the path's hop count and by
// the flow's own window (flow scaling, §3.5), the endpoint window against a
// fixed endpoint target (§3.3); the effective window is the smaller
// (§3.3: "cwnd = min(fcwnd, ecwnd)"). Below one packet of window the flow
// is paced at one packet per rtt/cwnd (Algorithm 1, lines 29-32; §3.4).
//
// Algorithm 1, by line, for each window:
//
//	5      on an ACK, retransmit_cnt = 0
//	7-11   delay < target: cwnd += ai/cwnd · num_acked (cwnd >= 1 packet),
//	       else cwnd += ai · num_acked
//	12-14  else, if can_decrease: cwnd *= max(1 - β·(delay-target)/delay,
//	       1 - max_mdf)
//	15-21  on a timeout: retransmit_cnt++; at RETX_RESET_THRESHOLD cwnd =
//	       min_cwnd, else if can_decrease cwnd *= 1 - max_mdf
//	22-25  on fast recovery: retransmit_cnt = 0; if can_decrease cwnd *=
//	       1 - max_mdf
//	26-28  clamp to [min_cwnd, max_cwnd]; a decrease dates t_last_decrease
//	3      can_decrease = now - t_last_decrease >= rtt
//
// Windows are kept in packets (floats), as the paper writes them. What the
// paper leaves open follows htsim's swift.cpp (Broadcom/csg-htsim):
// rtt is the smoothed RTT (1/8 gain), a decrease is cwnd < cwnd_prev, and
// the parameter values it uses. Deviations are in docs/decisions.md.

// SwiftConfig parameterises Swift; defaults in DefaultSwiftConfig.
type SwiftConfig struct {
	// AI is the additive increment in packets per RTT; Beta the
	// multiplicative decrease constant; MaxMDF the largest decrease at once.
	AI, Beta, MaxMDF float64
	// BaseTarget and PerHop make the fabric target: BaseTarget + hops ×
	// PerHop + the flow-scaling term (§3.5).
	BaseTarget, PerHop sim.Time
	// FSRange is the flow-scaling term's range; FSMin and FSMax the windows
	// (packets) at which it is FSRange and 0 (§3.5).
	FSRange        sim.Time
	FSMin, FSMax   float64
	EndpointTarget sim.Time
	// MinCwnd and MaxCwnd bound each window, in packets.
	MinCwnd, MaxCwnd float64
	// RetxReset is RETX_RESET_THRESHOLD: that many consecutive timeouts
	// reset the window to MinCwnd.
	RetxReset int
	// Hops is the flow's path length in links (set by the host), as
	// htsim's Route::hop_count counts pipes; the paper's TTL-based count
	// is the switches, one fewer (docs/decisions.md).
	Hops int
}

// DefaultSwiftConfig has htsim's swift.cpp values (SwiftSrc::SwiftSrc):
// ai 1 packet, β 0.8, max_mdf 0.5, base target 20 µs with h = base/6.55
// per hop, fs_range 5 × base, fs_min 0.1 and fs_max 100 packets, max cwnd
// 1000 packets, reset after 5 timeouts; min cwnd 0.01 packet (htsim's 10
// bytes of a 1 KB packet). The endpoint target is the base target.
func DefaultSwiftConfig() SwiftConfig {
	base := 20 * sim.Microsecond
	return SwiftConfig{AI: 1, Beta: 0.8, MaxMDF: 0.5, BaseTarget: base,
		PerHop: 3053435 * sim.Picosecond /* 20 us / 6.55 */, FSRange: 5 * base, FSMin: 0.1, FSMax: 100,
		EndpointTarget: base, MinCwnd: 0.01, MaxCwnd: 1000, RetxReset: 5}
}

// Validate checks the parameters; an error names the option
// (OptionValueError) that transport.options sets. Every window parameter
// must be finite: NaN or infinity would make the windows NaN or infinite.
func (c *SwiftConfig) Validate() error {
	bad := func(key, format string, args ...any) error {
		return &OptionValueError{Module: "swift", Key: key, Err: fmt.Errorf(format, args...)}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !(c.AI > 0 && finite(c.AI)):
		return bad("ai", "must be a finite number > 0, got %g", c.AI)
	case !(c.Beta > 0 && finite(c.Beta)):
		return bad("beta", "must be a finite number > 0, got %g", c.Beta)
	case !(c.MaxMDF > 0 && c.MaxMDF < 1):
		return bad("max_mdf", "must be in (0, 1), got %g", c.MaxMDF)
	case c.BaseTarget <= 0:
		return bad("base_target_us", "must be positive, got %v", c.BaseTarget)
	case c.PerHop < 0:
		return bad("per_hop_us", "must not be negative, got %v", c.PerHop)
	case c.FSRange < 0:
		return bad("fs_range_us", "must not be negative, got %v", c.FSRange)
	case c.EndpointTarget <= 0:
		return bad("endpoint_target_us", "must be positive, got %v", c.EndpointTarget)
	case !(c.FSMin > 0 && finite(c.FSMin)):
		return bad("fs_min", "must be a finite number > 0, got %g", c.FSMin)
	case !(c.FSMax > c.FSMin && finite(c.FSMax)):
		return bad("fs_max", "must be finite and above fs_min (%g), got %g", c.FSMin, c.FSMax)
	case !(c.MinCwnd > 0 && finite(c.MinCwnd)):
		return bad("min_cwnd", "must be a finite number > 0, got %g", c.MinCwnd)
	case !(c.MaxCwnd >= c.MinCwnd && c.MaxCwnd <= 1e9):
		return bad("max_cwnd", "must be between min_cwnd (%g) and 1e9 packets, got %g", c.MinCwnd, c.MaxCwnd)
	case c.RetxReset < 1:
		return bad("retx_reset", "must be at least 1, got %d", c.RetxReset)
	}
	return nil
}

// swiftWindow is one of Swift's two windows running Algorithm 1.
type swiftWindow struct {
	cwnd    float64 // packets
	lastDec sim.Time
	decayed bool // a decrease happened (lastDec valid)
}

// Swift is the controller.
type Swift struct {
	cfg        SwiftConfig
	mss        int64
	fsAlpha    float64 // flow scaling α, β (§3.5), in picoseconds
	fsBeta     float64
	f, e       swiftWindow // fabric and endpoint windows
	srtt       sim.Time
	retx       int // retransmit_cnt
	lastDelay  sim.Time
	lastTarget sim.Time
	lastEP     sim.Time
	state      CongState
}

var (
	_ Controller        = (*Swift)(nil)
	_ RatePaced         = (*Swift)(nil)
	_ HopAware          = (*Swift)(nil)
	_ EndpointDelayUser = (*Swift)(nil)
	_ Prober            = (*Swift)(nil)
)

// NewSwift returns Swift with both windows at initCwnd segments.
func NewSwift(cfg SwiftConfig, mss, initCwnd int64) *Swift {
	s := &Swift{cfg: cfg, mss: mss, state: StateWindow}
	s.f.cwnd, s.e.cwnd = float64(initCwnd), float64(initCwnd)
	// §3.5: fs_delay = α/√cwnd + β, with α = fs_range/(1/√fs_min -
	// 1/√fs_max) and β = -α/√fs_max, so that it is fs_range at fs_min and
	// 0 at fs_max.
	s.fsAlpha = float64(cfg.FSRange) / (1/math.Sqrt(cfg.FSMin) - 1/math.Sqrt(cfg.FSMax))
	s.fsBeta = -s.fsAlpha / math.Sqrt(cfg.FSMax)
	return s
}

// SetHops implements HopAware.
func (s *Swift) SetHops(h int) { s.cfg.Hops = h }

// NeedsEndpointDelay implements EndpointDelayUser.
func (s *Swift) NeedsEndpointDelay() {}

// FabricTarget is the fabric target delay for a fabric window of cwnd
// packets (§3.5): base + hops·h + clamp(α/√cwnd + β, 0, fs_range).
func (s *Swift) FabricTarget(cwnd float64) sim.Time {
	fs := s.fsAlpha/math.Sqrt(cwnd) + s.fsBeta
	fs = min(max(fs, 0), float64(s.cfg.FSRange))
	return s.cfg.BaseTarget + sim.Time(s.cfg.Hops)*s.cfg.PerHop + sim.Time(fs)
}

// canDecrease is Algorithm 1 line 3.
func (s *Swift) canDecrease(w *swiftWindow, now sim.Time) bool {
	return !w.decayed || now-w.lastDec >= s.srtt
}

// clamp is lines 26-28: bounds, and a decrease dates t_last_decrease.
func (s *Swift) clamp(w *swiftWindow, prev float64, now sim.Time) {
	w.cwnd = min(max(w.cwnd, s.cfg.MinCwnd), s.cfg.MaxCwnd)
	if w.cwnd < prev {
		w.lastDec, w.decayed = now, true
	}
}

// react runs lines 7-14 on window w for one delay sample.
func (s *Swift) react(w *swiftWindow, now, delay, target sim.Time, acked float64) bool {
	prev := w.cwnd
	inc := delay < target
	if inc {
		if w.cwnd >= 1 {
			w.cwnd += s.cfg.AI / w.cwnd * acked
		} else {
			w.cwnd += s.cfg.AI * acked
		}
	} else if s.canDecrease(w, now) {
		f := 1 - s.cfg.Beta*float64(delay-target)/float64(delay)
		w.cwnd *= max(f, 1-s.cfg.MaxMDF)
	}
	s.clamp(w, prev, now)
	return inc
}

// OnAck implements Controller.OnAck: an ACK with an RTT sample splits it
// into endpoint and fabric delay and updates both windows.
func (s *Swift) OnAck(ev *AckEvent) {
	s.retx = 0 // line 5
	if ev.RTT <= 0 {
		return
	}
	var ep sim.Time
	if t := ev.Tel; t != nil {
		ep = t.EndpointDelay + t.NICWait
	}
	ep = min(max(ep, 0), ev.RTT)
	fabric := ev.RTT - ep
	acked := float64(ev.Acked) / float64(s.mss)
	target := s.FabricTarget(s.f.cwnd)
	s.lastDelay, s.lastTarget, s.lastEP = fabric, target, ep
	fi := s.react(&s.f, ev.Now, fabric, target, acked)
	ei := s.react(&s.e, ev.Now, ep, s.cfg.EndpointTarget, acked)
	if fi && ei {
		s.state = StateIncrease
	} else {
		s.state = StateDecrease
	}
	// can_decrease (line 3) was judged with the rtt before this sample,
	// as htsim's adjust_cwnd does.
	if s.srtt == 0 {
		s.srtt = ev.RTT
	} else {
		s.srtt = (7*s.srtt + ev.RTT) / 8
	}
}

// OnCongestion implements Controller.OnCongestion: a timeout (lines 15-21)
// or fast recovery (lines 22-25) cuts both windows by max_mdf, once per
// RTT; RETX_RESET_THRESHOLD timeouts in a row reset them. ECN is not a
// Swift signal.
func (s *Swift) OnCongestion(ev *CongestionEvent) {
	switch ev.Kind {
	case CongRTO, CongLoss:
		reset := false
		if ev.Kind == CongRTO {
			s.retx++
			reset = s.retx >= s.cfg.RetxReset
		} else {
			s.retx = 0
		}
		for _, w := range []*swiftWindow{&s.f, &s.e} {
			prev := w.cwnd
			if reset {
				w.cwnd = s.cfg.MinCwnd
			} else if s.canDecrease(w, ev.Now) {
				w.cwnd *= 1 - s.cfg.MaxMDF
			}
			s.clamp(w, prev, ev.Now)
		}
		s.state = StateDecrease
	case CongECN:
	}
}

// OnRecoveryExit implements Controller.OnRecoveryExit (no deflation: the
// window is delay-driven, as htsim keeps it).
func (s *Swift) OnRecoveryExit(now sim.Time) {}

// cwndPkts is the effective window in packets: min(fcwnd, ecwnd).
func (s *Swift) cwndPkts() float64 { return min(s.f.cwnd, s.e.cwnd) }

// Cwnd implements Controller.Cwnd: the effective window in bytes (below
// one segment when Swift paces).
func (s *Swift) Cwnd() int64 { return int64(s.cwndPkts() * float64(s.mss)) }

// Ssthresh implements Controller.Ssthresh: Swift has no slow start.
func (s *Swift) Ssthresh() int64 { return 0 }

// State implements Observer.
func (s *Swift) State() CongState { return s.state }

// PacingRate implements RatePaced: below one packet of window, one packet
// per rtt/cwnd (lines 29-32); otherwise no pacing.
func (s *Swift) PacingRate() sim.Bandwidth {
	c := s.cwndPkts()
	if c >= 1 || s.srtt <= 0 {
		return 0
	}
	return sim.Bandwidth(c * float64(s.mss) * 8 * float64(sim.Second) / float64(s.srtt))
}

// FabricCwnd and EndpointCwnd are the two windows in packets.
func (s *Swift) FabricCwnd() float64 { return s.f.cwnd }

// EndpointCwnd is the endpoint window in packets.
func (s *Swift) EndpointCwnd() float64 { return s.e.cwnd }

// LastDelays are the last sample's fabric delay, its target and the
// endpoint delay.
func (s *Swift) LastDelays() (fabric, target, endpoint sim.Time) {
	return s.lastDelay, s.lastTarget, s.lastEP
}

// Probe implements Prober: fcwnd and ecwnd (packets), target_us (the
// fabric target for the current fabric window), fabric_us and ep_us (the
// last sample's fabric and endpoint delay), rate_gbps (the pacing rate, 0
// when not pacing), retx (retransmit_cnt).
func (s *Swift) Probe(name string) (float64, bool) {
	us := func(t sim.Time) float64 { return float64(t) / float64(sim.Microsecond) }
	switch name {
	case "fcwnd":
		return s.f.cwnd, true
	case "ecwnd":
		return s.e.cwnd, true
	case "target_us":
		return us(s.FabricTarget(s.f.cwnd)), true
	case "fabric_us":
		return us(s.lastDelay), true
	case "ep_us":
		return us(s.lastEP), true
	case "rate_gbps":
		return float64(s.PacingRate()) / float64(sim.GbitPerSecond), true
	case "retx":
		return float64(s.retx), true
	}
	return 0, false
}
