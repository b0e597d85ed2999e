package cc

// CongState is a controller's congestion state as traces show it
// (cwnd.csv's state column, the cc trace table). The zero value is
// invalid: an Observer returns it for "no state to report".
type CongState uint8

const (
	// StateSlowStart: cwnd < ssthresh (RFC 5681 §3.1).
	StateSlowStart CongState = 1 + iota
	// StateCongestionAvoidance: cwnd >= ssthresh (RFC 5681 §3.1).
	StateCongestionAvoidance
	// StateRecovery: fast recovery or a loss episode (RFC 5681 §3.2).
	StateRecovery
	// StateCWR: the window was reduced for ECN (Linux TCP_CA_CWR).
	StateCWR
	// StateConservativeSlowStart: HyStart++'s CSS (RFC 9406 §4.2).
	StateConservativeSlowStart
	// StateWindow: a delay- or path-driven window (STrack) before its
	// first change.
	StateWindow
	// StateIncrease, StateDecrease and StateFastDecrease: STrack's last
	// window change (htsim strack.cpp adjust_cwnd).
	StateIncrease
	StateDecrease
	StateFastDecrease
	// StateLineRate, StateRateCut, StateFastRecovery,
	// StateAdditiveIncrease and StateHyperIncrease are DCQCN's rate
	// states (cc/dcqcn.go): at line rate (before the first CNP, or back
	// there), just cut by a CNP, and the last rate-increase step's stage.
	StateLineRate
	StateRateCut
	StateFastRecovery
	StateAdditiveIncrease
	StateHyperIncrease
	// NSCC's last window action (UEC 1.0 §3.6.13, uet-htsim uec.cpp
	// updateCwndOnAck_NSCC): fair increase (no mark, delay at or above
	// target), proportional increase (no mark, below target), fast
	// increase (a clear path for a window), multiplicative decrease
	// (marked and above target), hold (marked below target, or a decrease
	// not due yet: the path changes, the window does not), quick adapt (the
	// window set to what was delivered), and the cuts of a trim NACK and a
	// per-packet timeout.
	StateFairIncrease
	StatePropIncrease
	StateFastIncrease
	StateMultDecrease
	StateHold
	StateQuickAdapt
	StateNackDecrease
	StateTimeoutDecrease
)

// String is the state's name in traces.
func (s CongState) String() string {
	switch s {
	case StateSlowStart:
		return "slow-start"
	case StateCongestionAvoidance:
		return "congestion-avoidance"
	case StateRecovery:
		return "recovery"
	case StateCWR:
		return "cwr"
	case StateConservativeSlowStart:
		return "conservative-slow-start"
	case StateWindow:
		return "window"
	case StateIncrease:
		return "increase"
	case StateDecrease:
		return "decrease"
	case StateFastDecrease:
		return "fast-decrease"
	case StateLineRate:
		return "line-rate"
	case StateRateCut:
		return "rate-cut"
	case StateFastRecovery:
		return "fast-recovery"
	case StateAdditiveIncrease:
		return "additive-increase"
	case StateHyperIncrease:
		return "hyper-increase"
	case StateFairIncrease:
		return "fair-increase"
	case StatePropIncrease:
		return "proportional-increase"
	case StateFastIncrease:
		return "fast-increase"
	case StateMultDecrease:
		return "multiplicative-decrease"
	case StateHold:
		return "hold"
	case StateQuickAdapt:
		return "quick-adapt"
	case StateNackDecrease:
		return "nack-decrease"
	case StateTimeoutDecrease:
		return "timeout-decrease"
	}
	return ""
}
