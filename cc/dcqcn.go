package cc

import (
	"fmt"
	"math"

	"github.com/lockstep-sim/lockstep/sim"
)

// DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA
// Deployments", SIGCOMM 2015) is the congestion control of RoCEv2 NICs:
// switches mark ECN with a RED ramp (the congestion point, CP), the
// receiving NIC answers marked packets with congestion notification
// packets (the notification point, NP: hostsim/cnp.go), and the sending
// NIC, the reaction point (RP) implemented here, paces the flow at a
// current rate Rc that CNPs cut and a timer and a byte counter raise back
// towards a target rate Rt.
//
// Sources, in order of authority: the paper (§3.1, the RP algorithm and
// its equations (1)-(5); §5, the parameters the fluid model chose), the
// authors' ns-3 simulator (bobzhuyb/ns3-rdma qbb-net-device.cc, and its
// mix/config.txt for R_AI, R_HAI and the clamping), the NVIDIA ConnectX
// firmware parameters (rpg_*, dce_tcp_*, rate_reduce_monitor_period:
// mlxconfig defaults and the "DCQCN parameters" documentation), and HPCC's
// ns-3 rdma-hw.cc (the Mellanox model: periodic alpha, the rate-decrease
// monitor). docs/decisions.md ("DCQCN") lists every choice.
//
// The reaction point:
//
//   - Before the first CNP the flow sends at line rate and nothing runs.
//   - On a CNP (eq. 1): Rt = Rc; Rc = Rc × (1 − α/2), at least MinRate;
//     α = (1 − g)α + g. The rate-increase counters and the byte count
//     reset, the rate-increase timer restarts. The first CNP starts α at
//     InitAlpha.
//   - Without CNPs α decays (eq. 2): α = (1 − g)α once every AlphaPeriod
//     (K = 55 µs) after the last CNP.
//   - Rate increase events come from a timer (every Timer, T) and a byte
//     counter (every ByteCounter bytes sent, B). With t and bc the events
//     of each kind since the last cut (counted before the step), a step
//     is fast recovery (eq. 3, Rc = (Rt + Rc)/2) while max(t, bc) <= F,
//     hyper increase (eq. 5, Rt += i × R_HAI with i = min(t, bc) − F) once
//     both exceed F, additive increase (eq. 4, Rt += R_AI) in between;
//     after either increase Rc = (Rt + Rc)/2. Rt never exceeds the line
//     rate.
//
// Rates are integer bits per second, as ns-3's DataRate: a cut rounds down
// and (Rt + Rc)/2 rounds up, so that Rc reaches Rt (and the timer stops
// at line rate) instead of stalling one bit per second below it.
//
// The ConnectX model (DCQCNConnectX) differs where the firmware does: α is
// updated on a fixed period whether or not a CNP came (dce_tcp_rtt), cuts
// wait for the next rate-reduction monitor tick (every
// rate_reduce_monitor_period), and Rt is clamped to Rc on a cut only if
// the timer raised the rate since the last one
// (clamp_tgt_rate_after_time_inc). The HPCC paper's model (DCQCNHPCC)
// is the ConnectX one as HPCC's ns-3 writes it, without a byte counter and
// with its timer-only stages (StagesTimer). An optional window on the
// bytes in flight (Window) gives the HPCC paper's DCQCN+w.
type DCQCN struct {
	cfg  DCQCNConfig
	line int64 // line rate, bits per second

	rc, rt int64 // current and target rate, bits per second
	// winRTT is T of the window (WindowFixed, WindowRate): the config's
	// WindowRTT, else the flow's base RTT from SetLink.
	winRTT sim.Time
	alpha  float64
	// alphaAt is the origin of α's clock: the last CNP (AlphaOnCNP, decay
	// steps at alphaAt + k×AlphaPeriod) or the last update tick applied
	// (AlphaPeriodic).
	alphaAt sim.Time
	cnpSeen bool // AlphaPeriodic: a CNP arrived since the last tick
	active  bool // a CNP has been received: DCQCN is engaged

	t, bc   int      // rate-increase events since the last cut
	bytes   int64    // bytes sent since the last byte-counter event
	timerAt sim.Time // next rate-increase timer expiry (Never: off)

	cutPending bool     // a CNP waits for the next monitor tick
	cutAt      sim.Time // that tick (Never: none)
	monitorAt  sim.Time // origin of the monitor's ticks (the first CNP)

	state CongState

	// Counters, for tests and reports: CNPs received, rate cuts, and rate
	// increase events of each kind.
	CNPs, Cuts, TimerEvents, ByteEvents uint64
}

// AlphaMode says when DCQCN updates α.
type AlphaMode uint8

// The zero AlphaMode is invalid.
const (
	// AlphaOnCNP is the paper's (§3.1 eqs. 1-2): α rises at each CNP and
	// decays once per AlphaPeriod without one.
	AlphaOnCNP AlphaMode = 1 + iota
	// AlphaPeriodic is the ConnectX firmware's (dce_tcp_g, dce_tcp_rtt):
	// every AlphaPeriod α rises if a CNP arrived in the period, else it
	// decays.
	AlphaPeriodic
)

// Stages says how a rate-increase step picks its stage.
type Stages uint8

// The zero Stages is invalid.
const (
	// StagesPaper is §3.1's rule (eqs. 3-5): the timer's count t and the
	// byte counter's bc together: fast recovery while max(t, bc) <= F,
	// hyper increase of i × R_HAI (i = min(t, bc) − F) once both exceed
	// F, additive increase in between.
	StagesPaper Stages = 1 + iota
	// StagesTimer is HPCC's ns-3 model of the Mellanox NIC (rdma-hw.cc
	// RateIncEventMlx), which has no byte counter: with t the timer's
	// count, fast recovery while t <= F, one additive step at t = F + 1,
	// hyper increase of R_HAI per step (no i) after.
	StagesTimer
)

// Window is DCQCN's optional window on the bytes in flight: the "+w" of
// the HPCC paper's DCQCN+w (§5.1), HPCC's ns-3 HAS_WIN and VAR_WIN
// (rdma-queue-pair.cc GetWin).
type Window uint8

// The zero Window is invalid.
const (
	// WindowOff is plain DCQCN: the rate alone limits the flow.
	WindowOff Window = 1 + iota
	// WindowFixed caps the bytes in flight at B·T (HAS_WIN 1, VAR_WIN 0).
	WindowFixed
	// WindowRate caps them at Rc·T, the BDP scaled by Rc over the line
	// rate B (HAS_WIN 1, VAR_WIN 1: m_win × m_rate / m_max_rate).
	WindowRate
)

// DCQCNConfig holds the reaction point's parameters and the notification
// point's CNP interval. docs/scenario.md gives each with its source.
type DCQCNConfig struct {
	// G is the gain g of eqs. 1-2 (paper: 1/256).
	G float64
	// InitAlpha is α at the first CNP (paper: 1).
	InitAlpha float64
	// AlphaMode and AlphaPeriod: K = 55 µs in the paper.
	AlphaMode   AlphaMode
	AlphaPeriod sim.Time
	// Timer is the rate-increase timer T (paper §5: 55 µs).
	Timer sim.Time
	// ByteCounter is B in bytes on the wire (paper §5: 10 MB); 0 turns the
	// byte counter off (its count stays 0, so the timer alone raises the
	// rate, through fast recovery and additive increase, never hyper).
	ByteCounter int64
	// F is the number of fast-recovery steps (paper: 5).
	F int
	// RAI and RHAI are the additive and hyper increase steps, bits per
	// second (ns3-rdma config: 40 Mb/s and 200 Mb/s).
	RAI, RHAI int64
	// MinRate is the floor of Rc, bits per second (ns3-rdma: 100 Mb/s).
	MinRate int64
	// ClampTarget sets Rt = Rc at every cut (eq. 1; clamp_tgt_rate). When
	// false, ClampAfterTimeInc sets it only if the timer raised the rate
	// since the last cut (clamp_tgt_rate_after_time_inc); with both false
	// it is set only if the byte counter did (ns3-rdma's default branch).
	ClampTarget, ClampAfterTimeInc bool
	// DecreasePeriod is rate_reduce_monitor_period: a CNP's cut waits for
	// the next tick of a monitor that ticks every DecreasePeriod from the
	// first CNP (0: the cut is immediate, as in the paper).
	DecreasePeriod sim.Time
	// CNPInterval is the notification point's N: at most one CNP per flow
	// per interval (paper: 50 µs).
	CNPInterval sim.Time
	// Stages is the rule that picks a rate-increase step's stage
	// (paper: StagesPaper).
	Stages Stages
	// Window limits the bytes in flight (paper: WindowOff); WindowRTT is
	// its T (0: the flow's base RTT).
	Window    Window
	WindowRTT sim.Time
}

// Mbps is one megabit per second in bits per second.
const Mbps = int64(1_000_000)

// DCQCNPaper is the parameter set of the paper and its authors'
// simulator: g = 1/256, K = 55 µs and N = 50 µs (§3.1), T = 55 µs and
// B = 10 MB (§5, chosen with the fluid model; the same values are in the
// authors' fluid-model code), F = 5 (§3.1), R_AI = 40 Mb/s, R_HAI =
// 200 Mb/s and Rt clamped at every cut (ns3-rdma mix/config.txt), a
// minimum rate of 100 Mb/s (ns3-rdma's MinRate) and α = 1 at the first
// CNP.
func DCQCNPaper() DCQCNConfig {
	return DCQCNConfig{G: 1.0 / 256, InitAlpha: 1, AlphaMode: AlphaOnCNP, AlphaPeriod: 55 * sim.Microsecond,
		Timer: 55 * sim.Microsecond, ByteCounter: 10_000_000, F: 5, RAI: 40 * Mbps, RHAI: 200 * Mbps,
		MinRate: 100 * Mbps, ClampTarget: true, CNPInterval: 50 * sim.Microsecond,
		Stages: StagesPaper, Window: WindowOff}
}

// DCQCNConnectX is the NVIDIA ConnectX-4 (and later) firmware's default
// set, as mlxconfig reports it: dce_tcp_g 1019 (α = 1019/1024 α + 5/1024,
// so g = 5/1024), dce_tcp_rtt 1 µs, initial_alpha_value 1023 (of 1024),
// rpg_time_reset 300 µs, rpg_byte_reset 32767 B, rpg_threshold 1,
// rpg_ai_rate 5 Mb/s, rpg_hai_rate 50 Mb/s, rpg_min_rate 1 Mb/s,
// clamp_tgt_rate 0, clamp_tgt_rate_after_time_inc 1,
// rate_reduce_monitor_period 4 µs, min_time_between_cnps 2 µs. (rpg_gd 11
// is the paper's α/2; rpg_min_dec_fac 50 never binds with α <= 1.)
func DCQCNConnectX() DCQCNConfig {
	return DCQCNConfig{G: 5.0 / 1024, InitAlpha: 1023.0 / 1024, AlphaMode: AlphaPeriodic, AlphaPeriod: sim.Microsecond,
		Timer: 300 * sim.Microsecond, ByteCounter: 32767, F: 1, RAI: 5 * Mbps, RHAI: 50 * Mbps,
		MinRate: 1 * Mbps, ClampAfterTimeInc: true, DecreasePeriod: 4 * sim.Microsecond,
		CNPInterval: 2 * sim.Microsecond, Stages: StagesPaper, Window: WindowOff}
}

// DCQCNHPCC is DCQCN as the HPCC paper's simulations ran it (Li et al.,
// SIGCOMM 2019, §5.1; the authors' ns-3, alibaba-edu/High-Precision-
// Congestion-Control: run.py's `dcqcn` at 100 Gb/s and rdma-hw.cc's
// Mellanox model): α every 1 µs (ALPHA_RESUME_INTERVAL), g = 1/256
// (EWMA_GAIN), α = 1 at the first CNP, cuts on a 4 µs monitor
// (RATE_DECREASE_INTERVAL), a 300 µs timer (RP_TIMER) and no byte
// counter with the timer-only stages (StagesTimer), F = 1
// (FAST_RECOVERY_TIMES), R_AI = 20 Mb/s and R_HAI = 200 Mb/s (run.py's
// 5·bw/25 and 50·bw/25 Mb/s at bw = 100 Gb/s; they scale with the line
// rate there), a 1 Gb/s minimum (MIN_RATE), Rt = Rc at a cut only after a
// timer step (CLAMP_TARGET_RATE 0), and a CNP for every marked packet
// (the receiver flags every ACK of a marked packet: N = 0). Window:
// WindowRate gives the paper's DCQCN+w (run.py `dcqcn_vwin`).
func DCQCNHPCC() DCQCNConfig {
	return DCQCNConfig{G: 1.0 / 256, InitAlpha: 1, AlphaMode: AlphaPeriodic, AlphaPeriod: sim.Microsecond,
		Timer: 300 * sim.Microsecond, ByteCounter: 0, F: 1, RAI: 20 * Mbps, RHAI: 200 * Mbps,
		MinRate: 1000 * Mbps, ClampAfterTimeInc: true, DecreasePeriod: 4 * sim.Microsecond,
		CNPInterval: 0, Stages: StagesTimer, Window: WindowOff}
}

// DCQCNProfile returns the named parameter set: "paper", "connectx" or
// "hpcc".
func DCQCNProfile(name string) (DCQCNConfig, error) {
	switch name {
	case "paper":
		return DCQCNPaper(), nil
	case "connectx":
		return DCQCNConnectX(), nil
	case "hpcc":
		return DCQCNHPCC(), nil
	}
	return DCQCNConfig{}, dcqcnErr("profile", "unknown profile %q (known: paper, connectx, hpcc)", name)
}

// Validate checks the parameters.
func (c DCQCNConfig) Validate() error {
	switch {
	case !(c.G > 0 && c.G <= 1):
		return dcqcnErr("g", "must be in (0, 1], got %v", c.G)
	case !(c.InitAlpha >= 0 && c.InitAlpha <= 1):
		return dcqcnErr("init_alpha", "must be in [0, 1], got %v", c.InitAlpha)
	case c.AlphaMode != AlphaOnCNP && c.AlphaMode != AlphaPeriodic:
		return dcqcnErr("alpha_update", "invalid mode %d", c.AlphaMode)
	case c.AlphaPeriod <= 0:
		return dcqcnErr("alpha_period", "must be positive, got %v", c.AlphaPeriod)
	case c.Timer <= 0:
		return dcqcnErr("timer", "must be positive, got %v", c.Timer)
	case c.ByteCounter < 0:
		return dcqcnErr("byte_counter", "must not be negative, got %d", c.ByteCounter)
	case c.F < 1 || c.F > 1<<16:
		return dcqcnErr("f", "must be between 1 and 65536, got %d", c.F)
	case c.RAI <= 0 || c.RHAI <= 0:
		return dcqcnErr("rai", "rai and rhai must be positive, got %d and %d bit/s", c.RAI, c.RHAI)
	case c.MinRate <= 0:
		return dcqcnErr("min_rate", "must be positive, got %d bit/s", c.MinRate)
	case c.DecreasePeriod < 0:
		return dcqcnErr("rate_reduce_monitor_period", "must not be negative, got %v", c.DecreasePeriod)
	case c.CNPInterval < 0:
		return dcqcnErr("cnp_interval", "must not be negative, got %v", c.CNPInterval)
	case c.Stages != StagesPaper && c.Stages != StagesTimer:
		return dcqcnErr("stages", "invalid rule %d", c.Stages)
	case c.Stages == StagesTimer && c.ByteCounter != 0:
		return dcqcnErr("stages", "the timer rule has no byte counter: set byte_counter to 0, got %d", c.ByteCounter)
	case c.Window != WindowOff && c.Window != WindowFixed && c.Window != WindowRate:
		return dcqcnErr("window", "invalid mode %d", c.Window)
	case c.WindowRTT < 0:
		return dcqcnErr("window_rtt", "must not be negative, got %v", c.WindowRTT)
	}
	return nil
}

var (
	_ Controller      = (*DCQCN)(nil)
	_ RatePaced       = (*DCQCN)(nil)
	_ LinkAware       = (*DCQCN)(nil)
	_ NICScheduled    = (*DCQCN)(nil)
	_ TimedController = (*DCQCN)(nil)
	_ SendObserver    = (*DCQCN)(nil)
	_ CNPReactor      = (*DCQCN)(nil)
	_ ECNDriven       = (*DCQCN)(nil)
)

// NewDCQCN returns a reaction point. Precondition: cfg.Validate() == nil.
// The line rate comes with SetLink; until then the flow is not paced.
func NewDCQCN(cfg DCQCNConfig) *DCQCN {
	return &DCQCN{cfg: cfg, timerAt: sim.Never, cutAt: sim.Never, state: StateLineRate}
}

// Config is the controller's parameter set.
func (d *DCQCN) Config() DCQCNConfig { return d.cfg }

// SetLink implements LinkAware.SetLink: the flow starts at line rate
// (§3.1: the RP starts at full line rate). The base RTT is the window's T
// unless the config gives one; a rate of 0 (none known) leaves the flow
// unpaced.
func (d *DCQCN) SetLink(rate sim.Bandwidth, baseRTT sim.Time) {
	d.winRTT = d.cfg.WindowRTT
	if d.winRTT == 0 {
		d.winRTT = baseRTT
	}
	bps := int64(rate)
	if bps <= 0 {
		return
	}
	d.line = bps
	if !d.active {
		d.rc, d.rt = bps, bps
	}
	d.rc, d.rt = min(d.rc, bps), min(d.rt, bps)
}

// PacingRate implements RatePaced.PacingRate: Rc.
func (d *DCQCN) PacingRate() sim.Bandwidth { return sim.Bandwidth(d.rc) }

// NICScheduled implements NICScheduled: a RoCE queue pair, which the NIC
// pulls (hostsim/paced.go).
func (d *DCQCN) NICScheduled() {}

// Rate is the current rate Rc in bits per second.
func (d *DCQCN) Rate() int64 { return d.rc }

// TargetRate is the target rate Rt in bits per second.
func (d *DCQCN) TargetRate() int64 { return d.rt }

// Counters are the rate-increase events since the last cut: of the timer
// (t) and of the byte counter (bc).
func (d *DCQCN) Counters() (t, bc int) { return d.t, d.bc }

// ByteCount is the bytes sent since the last byte-counter event (or cut).
func (d *DCQCN) ByteCount() int64 { return d.bytes }

// Alpha is α as of the controller's last event.
func (d *DCQCN) Alpha() float64 { return d.alpha }

// AlphaAt is α at now, the updates due since the last event applied.
func (d *DCQCN) AlphaAt(now sim.Time) float64 {
	a, _, _ := d.alphaUpTo(now)
	return a
}

// CNPInterval implements CNPReactor.CNPInterval.
func (d *DCQCN) CNPInterval() sim.Time { return d.cfg.CNPInterval }

// NeedsECN implements ECNDriven: without ECN-capable packets no switch
// marks, no CNP is sent and DCQCN never leaves line rate.
func (d *DCQCN) NeedsECN() {}

// DefaultRecovery implements DefaultRecoverer: RoCE's go-back-N.
func (d *DCQCN) DefaultRecovery() string { return "gbn" }

// State implements Observer.State.
func (d *DCQCN) State() CongState { return d.state }

// decay is a × (1 − g) as an explicit rounding step, so that no machine
// fuses it with a following add (Go may fuse a*b+c).
func decay(a, g float64) float64 { return float64(a * (1 - g)) }

// alphaUpTo computes α at now without changing the state: the decay steps
// of eq. 2 (AlphaOnCNP), or the periodic updates (AlphaPeriodic), due in
// (alphaAt, now]. It returns α, the new origin and whether a pending CNP
// was consumed by a periodic update.
func (d *DCQCN) alphaUpTo(now sim.Time) (float64, sim.Time, bool) {
	if !d.active || now <= d.alphaAt {
		return d.alpha, d.alphaAt, false
	}
	p := d.cfg.AlphaPeriod
	n := int64((now - d.alphaAt) / p)
	if n <= 0 {
		return d.alpha, d.alphaAt, false
	}
	a := d.alpha
	g := d.cfg.G
	consumed := false
	if d.cfg.AlphaMode == AlphaPeriodic && d.cnpSeen {
		// The first tick after a CNP raises α (dce_tcp_g's increment).
		a = decay(a, g) + g
		n--
		consumed = true
	}
	if n > 0 {
		a = float64(a * math.Pow(1-g, float64(n)))
	}
	// The origin moves to the last step applied, so that later steps stay
	// on the grid of the last CNP (eq. 2) or of the first one (periodic).
	return a, d.alphaAt + (now-d.alphaAt)/p*p, consumed
}

// syncAlpha applies the α updates due by now.
func (d *DCQCN) syncAlpha(now sim.Time) {
	a, at, consumed := d.alphaUpTo(now)
	d.alpha, d.alphaAt = a, at
	if consumed {
		d.cnpSeen = false
	}
}

// OnCNP implements CNPReactor.OnCNP (§3.1, eq. 1).
func (d *DCQCN) OnCNP(now sim.Time) {
	d.CNPs++
	first := !d.active
	if first {
		d.active = true
		d.alpha = d.cfg.InitAlpha
		d.alphaAt = now
		d.monitorAt = now
		if d.rc == 0 {
			// No line rate yet (a trace without one): nothing to cut.
			d.rc, d.rt = d.cfg.MinRate, d.cfg.MinRate
		}
	} else {
		d.syncAlpha(now)
	}
	if d.cfg.AlphaMode == AlphaPeriodic && !first {
		// The next tick raises α. The first CNP only sets α to its
		// initial value (HPCC rdma-hw.cc cnp_received_mlx clears the
		// arrival bit then).
		d.cnpSeen = true
	}
	if d.cfg.DecreasePeriod <= 0 {
		d.cut(now)
	} else if !d.cutPending {
		// rate_reduce_monitor_period: the cut waits for the monitor's
		// next tick (HPCC rdma-hw.cc CheckRateDecreaseMlx runs on a grid
		// from the first CNP).
		d.cutPending = true
		p := d.cfg.DecreasePeriod
		k := (now-d.monitorAt)/p + 1
		d.cutAt = d.monitorAt + k*p
	}
	if d.cfg.AlphaMode == AlphaOnCNP {
		// Eq. 1 after the cut: α = (1 − g)α + g; eq. 2's clock restarts.
		d.alpha = decay(d.alpha, d.cfg.G) + d.cfg.G
		d.alphaAt = now
	}
}

// cut is eq. 1's rate reduction.
func (d *DCQCN) cut(now sim.Time) {
	d.Cuts++
	if d.cfg.ClampTarget || (d.cfg.ClampAfterTimeInc && d.t > 0) || (!d.cfg.ClampAfterTimeInc && d.bc > 0) {
		d.rt = d.rc
	}
	f := float64(1 - d.alpha/2)
	d.rc = max(int64(float64(d.rc)*f), d.cfg.MinRate)
	d.t, d.bc, d.bytes = 0, 0, 0
	d.timerAt = now + d.cfg.Timer
	d.state = StateRateCut
}

// increase is one rate-increase step (eqs. 3-5).
func (d *DCQCN) increase() {
	t, bc := d.t, d.bc // without a byte counter bc stays 0: no hyper increase
	f := d.cfg.F
	switch {
	case d.cfg.Stages == StagesTimer:
		// HPCC's rdma-hw.cc RateIncEventMlx counts the stage from 0 before
		// its increment: < F fast recovery, == F additive, > F hyper by
		// R_HAI. Our t is counted after it: t <= F, t == F+1, t > F+1.
		switch {
		case t <= f:
			d.state = StateFastRecovery
		case t == f+1:
			d.rt = satAdd(d.rt, d.cfg.RAI)
			d.state = StateAdditiveIncrease
		default:
			d.rt = satAdd(d.rt, d.cfg.RHAI)
			d.state = StateHyperIncrease
		}
	case max(t, bc) <= f:
		d.state = StateFastRecovery // eq. 3
	case min(t, bc) > f:
		i := int64(min(t, bc) - f) // eq. 5
		d.rt = satAdd(d.rt, satMul(i, d.cfg.RHAI))
		d.state = StateHyperIncrease
	default:
		d.rt = satAdd(d.rt, d.cfg.RAI) // eq. 4
		d.state = StateAdditiveIncrease
	}
	if d.line > 0 {
		d.rt = min(d.rt, d.line)
	}
	d.rc = d.rc + (d.rt-d.rc+1)/2
	if d.line > 0 && d.rc >= d.line && d.rt >= d.line {
		d.rc = d.line
		d.state = StateLineRate
		// Nothing can change until the next CNP: the timer stops (the
		// counters would only step in place).
		d.timerAt = sim.Never
	}
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// Deadline implements TimedController.Deadline: the rate-increase timer
// or the rate-reduction monitor's tick, whichever is first.
func (d *DCQCN) Deadline() sim.Time { return min(d.timerAt, d.cutAt) }

// OnTimer implements TimedController.OnTimer: a pending cut at its
// monitor tick first, then the rate-increase timer (a cut restarts it).
func (d *DCQCN) OnTimer(now sim.Time) {
	if d.cutPending && now >= d.cutAt {
		d.cutPending = false
		d.cutAt = sim.Never
		d.syncAlpha(now)
		d.cut(now)
	}
	for d.timerAt <= now {
		d.TimerEvents++
		d.t++
		d.timerAt += d.cfg.Timer
		d.increase()
	}
}

// OnSend implements SendObserver.OnSend: the byte counter (§3.1).
func (d *DCQCN) OnSend(_ sim.Time, bytes int64) bool {
	if !d.active || d.cfg.ByteCounter == 0 || d.timerAt == sim.Never {
		return false
	}
	d.bytes += bytes
	changed := false
	for d.bytes >= d.cfg.ByteCounter && d.timerAt != sim.Never {
		d.bytes -= d.cfg.ByteCounter
		d.ByteEvents++
		d.bc++
		d.increase()
		changed = true
	}
	return changed
}

// OnAck implements Controller.OnAck: DCQCN does not react to ACKs.
func (d *DCQCN) OnAck(*AckEvent) {}

// OnCongestion implements Controller.OnCongestion: DCQCN reacts to CNPs
// only; a loss (a NAK's go-back-N or a timeout) leaves the rate alone, as
// the RP of §3.1 and ns3-rdma do.
func (d *DCQCN) OnCongestion(*CongestionEvent) {}

// OnRecoveryExit implements Controller.OnRecoveryExit (nothing to do).
func (d *DCQCN) OnRecoveryExit(sim.Time) {}

// unlimitedWindow is the window of a purely rate-based controller.
const unlimitedWindow = math.MaxInt64 / 4

// Cwnd implements Controller.Cwnd: unlimited unless a Window is set, then
// B·T or Rc·T bytes (at least 1: HPCC's GetWin "must > 0"; the endpoint
// lets a paced flow keep one segment in flight whatever its window).
func (d *DCQCN) Cwnd() int64 {
	var r int64
	switch d.cfg.Window {
	case WindowFixed:
		r = d.line
	case WindowRate:
		r = d.rc
	default:
		return unlimitedWindow
	}
	if r <= 0 || d.winRTT <= 0 {
		return unlimitedWindow // no line rate or RTT known: no window
	}
	return max(sim.Bandwidth(r).BytesIn(d.winRTT), 1)
}

// Ssthresh implements Controller.Ssthresh: none.
func (d *DCQCN) Ssthresh() int64 { return unlimitedWindow }

// dcqcnOptions reads DCQCN's options: a profile (paper, the default, or
// connectx) whose values the other keys override one by one.
func dcqcnOptions(o *options) (DCQCNConfig, error) {
	c, err := DCQCNProfile(o.str("profile", "paper"))
	if err != nil {
		return c, err
	}
	if c.G, err = o.float("g", c.G); err != nil {
		return c, err
	}
	if c.InitAlpha, err = o.float("init_alpha", c.InitAlpha); err != nil {
		return c, err
	}
	mode := "on-cnp"
	if c.AlphaMode == AlphaPeriodic {
		mode = "periodic"
	}
	switch m := o.str("alpha_update", mode); m {
	case "on-cnp":
		c.AlphaMode = AlphaOnCNP
	case "periodic":
		c.AlphaMode = AlphaPeriodic
	default:
		return c, o.valueErr("alpha_update", "expected on-cnp or periodic, got %q", m)
	}
	if c.AlphaPeriod, err = o.duration("alpha_period", c.AlphaPeriod); err != nil {
		return c, err
	}
	if c.Timer, err = o.duration("timer", c.Timer); err != nil {
		return c, err
	}
	if c.ByteCounter, err = o.size("byte_counter", c.ByteCounter); err != nil {
		return c, err
	}
	if c.F, err = o.integer("f", c.F); err != nil {
		return c, err
	}
	if c.RAI, err = o.rate("rai", c.RAI); err != nil {
		return c, err
	}
	if c.RHAI, err = o.rate("rhai", c.RHAI); err != nil {
		return c, err
	}
	if c.MinRate, err = o.rate("min_rate", c.MinRate); err != nil {
		return c, err
	}
	if c.ClampTarget, err = o.boolean("clamp_tgt_rate", c.ClampTarget); err != nil {
		return c, err
	}
	if c.ClampAfterTimeInc, err = o.boolean("clamp_tgt_rate_after_time_inc", c.ClampAfterTimeInc); err != nil {
		return c, err
	}
	if c.DecreasePeriod, err = o.duration("rate_reduce_monitor_period", c.DecreasePeriod); err != nil {
		return c, err
	}
	if c.CNPInterval, err = o.duration("cnp_interval", c.CNPInterval); err != nil {
		return c, err
	}
	stages := map[Stages]string{StagesPaper: "paper", StagesTimer: "timer"}[c.Stages]
	switch s := o.str("stages", stages); s {
	case "paper":
		c.Stages = StagesPaper
	case "timer":
		c.Stages = StagesTimer
	default:
		return c, o.valueErr("stages", "expected paper or timer, got %q", s)
	}
	window := map[Window]string{WindowOff: "off", WindowFixed: "fixed", WindowRate: "rate"}[c.Window]
	switch w := o.str("window", window); w {
	case "off":
		c.Window = WindowOff
	case "fixed":
		c.Window = WindowFixed
	case "rate":
		c.Window = WindowRate
	default:
		return c, o.valueErr("window", "expected off, fixed or rate, got %q", w)
	}
	if c.WindowRTT, err = o.duration("window_rtt", c.WindowRTT); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

func dcqcnErr(key, format string, args ...any) error {
	return &OptionValueError{Module: "dcqcn", Key: key, Err: fmt.Errorf(format, args...)}
}
