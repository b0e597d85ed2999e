package cc

import (
	"fmt"
	"math"

	"github.com/lockstep-sim/lockstep/sim"
)

// HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM
// 2019): a window computed from in-band telemetry. Every data packet
// collects, per switch, the egress queue length, the port's transmitted
// bytes, a timestamp and the link rate (sim.Telemetry, switchsim INT); the
// receiver echoes them in the ACK. The sender estimates each link's
// normalised inflight bytes (its utilisation U, §3.2 eq. 2), keeps the
// largest, smooths it over one base RTT, and sets its window
// multiplicatively towards the target utilisation η (§3.3 eq. 4), with an
// additive step W_AI for fairness and up to maxStage additive rounds
// before a multiplicative increase. It reacts on every ACK against a
// reference window W^c that it only moves once per RTT (§3.3, "fast
// reaction without overreaction"). It sends at R = W/T (Algorithm 1,
// line 6): the endpoint paces at that rate (RatePaced).
//
// Algorithm 1 of the paper, by line:
//
//	NewAck:          ack.seq > lastUpdateSeq: W = ComputeWind(U, true),
//	                 lastUpdateSeq = snd_nxt; else ComputeWind(U, false);
//	                 R = W/T; L = ack.L
//	MeasureInflight: per link, txRate = Δtx/Δts, u' = min(qlen, qlen')/(B·T)
//	                 + txRate/B; the largest u' and its Δts = τ; τ = min(τ, T);
//	                 U = (1 - τ/T)·U + (τ/T)·u
//	ComputeWind:     U >= η or incStage >= maxStage: W = Wc/(U/η) + W_AI,
//	                 and if updating, incStage = 0, Wc = W; else W = Wc + W_AI
//	                 and if updating, incStage++, Wc = W
//
// What the paper leaves open follows ns-3's rdma-hw.cc (RdmaHw::
// UpdateRateHp, the single-rate mode the paper evaluates): the first ACK
// with telemetry only stores it (there is no previous record to measure
// against); the window is bounded by [W_min, W_init]; a hop whose record
// did not advance in time is skipped. Deviations are in docs/decisions.md.

// HPCCConfig parameterises HPCC; defaults in DefaultHPCCConfig.
type HPCCConfig struct {
	// Eta is the target utilisation η (§3.3: 95%).
	Eta float64
	// MaxStage is the number of additive-increase rounds before a
	// multiplicative increase. §3.3 and §5.1 print 5; the authors' page
	// (hpcc-group.github.io/results.md, "Settings") says that is a typo
	// for the simulations, which ran maxStage = 0, as ns-3 run.py's
	// MI_THRESH default does (docs/decisions.md "HPCC").
	MaxStage int
	// WAI is the additive increase W_AI in bytes; 0 derives it from the
	// line rate and T as ns-3's run.py does (RATE_AI = 10·bw/25 Mb/s at bw
	// Gb/s, i.e. 0.04% of the line rate, times T).
	WAI float64
	// BaseRTT is T, the base RTT; 0 takes the flow's unloaded RTT that
	// the host gives (SetLink).
	BaseRTT sim.Time
	// MinRate bounds the rate from below (ns-3 run.py MIN_RATE 1 Gb/s):
	// W >= MinRate·T.
	MinRate sim.Bandwidth
}

// DefaultHPCCConfig has the paper's η = 0.95 (§3.3, §5.1), the
// maxStage = 0 its simulations ran (see MaxStage) and ns-3's W_AI and
// minimum rate.
func DefaultHPCCConfig() HPCCConfig {
	return HPCCConfig{Eta: 0.95, MaxStage: 0, MinRate: sim.GbitPerSecond}
}

// Validate checks the parameters; an error names the option
// (OptionValueError) that transport.options sets.
func (c *HPCCConfig) Validate() error {
	bad := func(key, format string, args ...any) error {
		return &OptionValueError{Module: "hpcc", Key: key, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case !(c.Eta > 0 && c.Eta <= 1):
		return bad("eta", "must be in (0, 1], got %g", c.Eta)
	case c.MaxStage < 0:
		return bad("max_stage", "must not be negative, got %d", c.MaxStage)
	case !(c.WAI >= 0 && !math.IsInf(c.WAI, 0)):
		// NaN or infinity would make every window NaN or infinite.
		return bad("w_ai", "must be a finite number of bytes >= 0, got %g", c.WAI)
	case c.BaseRTT < 0:
		return bad("base_rtt_us", "must not be negative, got %v", c.BaseRTT)
	case c.MinRate < 0:
		return bad("min_rate_gbps", "must not be negative, got %v", c.MinRate)
	}
	return nil
}

// HPCC is the controller.
type HPCC struct {
	cfg              HPCCConfig
	mss              int64
	rate             sim.Bandwidth // B, the host's line rate
	t                sim.Time      // T
	wInit, wMin, wai float64

	w, wc    float64 // the window and the reference window W^c, bytes
	u        float64 // U, the smoothed utilisation
	incStage int
	// lastUpdateSeq is snd_nxt at the last per-RTT update; valid once
	// started (ns-3 uses 0 for "no feedback yet").
	lastUpdateSeq uint64
	started       bool
	nh            int                        // hops in L
	l             [sim.MaxINTHops]sim.INTHop // L: the last records per hop
	state         CongState
}

var (
	_ Controller = (*HPCC)(nil)
	_ RatePaced  = (*HPCC)(nil)
	_ LinkAware  = (*HPCC)(nil)
	_ INTUser    = (*HPCC)(nil)
	_ Prober     = (*HPCC)(nil)
)

// HPCCQueuePair is HPCC run as an RDMA queue pair (option nic_scheduled):
// the same controller, declared NICScheduled, so that the host's NIC pulls
// the flow's packets round robin with its other queue pairs and spaces
// them with the NIC's rate limiter, which re-times the next packet when
// the rate changes (hostsim/paced.go, cc/pacer.go). This is how the
// authors' ns-3 runs HPCC: on its RDMA NIC model (rdma-hw.cc, the
// RdmaEgressQueue round robin, ChangeRate), as it runs DCQCN.
type HPCCQueuePair struct{ *HPCC }

var _ NICScheduled = HPCCQueuePair{}

// NICScheduled implements NICScheduled.
func (HPCCQueuePair) NICScheduled() {}

// NewHPCC returns HPCC with the given initial window (segments), used
// until SetLink gives the line rate; then W_init = B·T.
func NewHPCC(cfg HPCCConfig, mss, initCwnd int64) *HPCC {
	h := &HPCC{cfg: cfg, mss: mss, state: StateWindow}
	h.w = float64(initCwnd * mss)
	h.wc, h.wInit, h.wMin = h.w, h.w, float64(mss)
	h.wai = cfg.WAI
	return h
}

// SetLink implements LinkAware: W_init = B·T (§3.3: the sender starts at
// line rate, W_init = B_NIC × T), and the derived W_AI and W_min.
func (h *HPCC) SetLink(rate sim.Bandwidth, baseRTT sim.Time) {
	t := h.cfg.BaseRTT
	if t == 0 {
		t = baseRTT
	}
	if rate <= 0 || t <= 0 {
		return // no line rate: keep the initial window, no pacing
	}
	h.rate, h.t = rate, t
	h.wInit = float64(rate.BytesIn(t))
	h.w, h.wc = h.wInit, h.wInit
	h.wMin = min(h.wInit, float64(h.cfg.MinRate.BytesIn(t)))
	if h.wai == 0 {
		h.wai = h.wInit * 4e-4
	}
}

// NeedsINT implements INTUser.
func (h *HPCC) NeedsINT() {}

// measureInflight is Algorithm 1's MeasureInflight: it updates U from the
// ACK's records against L and reports whether any hop gave a sample.
func (h *HPCC) measureInflight(t *sim.Telemetry) bool {
	T := float64(h.t)
	var umax float64
	var tau sim.Time
	got := false
	for i := 0; i < int(t.NHops); i++ {
		cur, prev := &t.Hops[i], &h.l[i]
		dt := cur.TS - prev.TS
		if dt <= 0 || cur.Rate <= 0 {
			continue // no new record for this hop
		}
		// txRate in bit/s; B·T in bits.
		txRate := float64(cur.TxBytes-prev.TxBytes) * 8 / (float64(dt) / float64(sim.Second))
		b := float64(cur.Rate)
		u := float64(min(cur.QLen, prev.QLen))*8/(b*T/float64(sim.Second)) + txRate/b
		if !got || u > umax {
			umax, tau = u, dt
		}
		got = true
	}
	if !got {
		return false
	}
	tau = min(tau, h.t)
	f := float64(tau) / T
	h.u = (1-f)*h.u + f*umax
	return true
}

// computeWind is Algorithm 1's ComputeWind.
func (h *HPCC) computeWind(updateWc bool) {
	var w float64
	if h.u >= h.cfg.Eta || h.incStage >= h.cfg.MaxStage {
		w = h.wc/(h.u/h.cfg.Eta) + h.wai
		if h.u >= h.cfg.Eta {
			h.state = StateDecrease
		} else {
			h.state = StateIncrease
		}
		if updateWc {
			h.incStage = 0
		}
	} else {
		w = h.wc + h.wai
		h.state = StateIncrease
		if updateWc {
			h.incStage++
		}
	}
	// ns-3 bounds the rate to [MIN_RATE, line rate]: W to [W_min, W_init].
	w = min(max(w, h.wMin), h.wInit)
	h.w = w
	if updateWc {
		h.wc = w
	}
}

// OnAck implements Controller.OnAck (Algorithm 1, NewAck). ACKs without
// telemetry (a delayed-ACK timer's) change nothing.
func (h *HPCC) OnAck(ev *AckEvent) {
	t := ev.Tel
	if t == nil || t.NHops == 0 || h.t == 0 {
		return
	}
	if !h.started || int(t.NHops) != h.nh {
		// The first feedback (or a path of another length): store L.
		h.started = true
		h.lastUpdateSeq = ev.SndNxt
		h.store(t)
		return
	}
	if h.measureInflight(t) {
		update := ev.SndUna > h.lastUpdateSeq
		h.computeWind(update)
		if update {
			h.lastUpdateSeq = ev.SndNxt
		}
	}
	h.store(t)
}

func (h *HPCC) store(t *sim.Telemetry) {
	h.nh = int(t.NHops)
	copy(h.l[:h.nh], t.Hops[:h.nh])
}

// OnCongestion implements Controller.OnCongestion. HPCC's window comes
// from INT alone; losses (rare on the lossless fabrics it targets) and
// timeouts only retransmit, as in ns-3, and ECN is not used.
func (h *HPCC) OnCongestion(ev *CongestionEvent) {}

// OnRecoveryExit implements Controller.OnRecoveryExit.
func (h *HPCC) OnRecoveryExit(now sim.Time) {}

// Cwnd implements Controller.Cwnd.
func (h *HPCC) Cwnd() int64 { return int64(h.w) }

// Ssthresh implements Controller.Ssthresh: HPCC has no slow start.
func (h *HPCC) Ssthresh() int64 { return 0 }

// State implements Observer.
func (h *HPCC) State() CongState { return h.state }

// PacingRate implements RatePaced: R = W/T (Algorithm 1, line 6).
func (h *HPCC) PacingRate() sim.Bandwidth {
	if h.t == 0 {
		return 0
	}
	return sim.Bandwidth(h.w * 8 * float64(sim.Second) / float64(h.t))
}

// U is the smoothed utilisation (for traces and tests).
func (h *HPCC) U() float64 { return h.u }

// Wc is the reference window W^c in bytes.
func (h *HPCC) Wc() float64 { return h.wc }

// IncStage is the number of additive rounds since the last
// multiplicative step.
func (h *HPCC) IncStage() int { return h.incStage }

// Probe implements Prober: u (U), wc (W^c, bytes), w (W, bytes), stage
// (incStage), rate_gbps (R = W/T), wai (W_AI, bytes), winit (W_init).
func (h *HPCC) Probe(name string) (float64, bool) {
	switch name {
	case "u":
		return h.u, true
	case "wc":
		return h.wc, true
	case "w":
		return h.w, true
	case "stage":
		return float64(h.incStage), true
	case "rate_gbps":
		return float64(h.PacingRate()) / float64(sim.GbitPerSecond), true
	case "wai":
		return h.wai, true
	case "winit":
		return h.wInit, true
	}
	return 0, false
}
