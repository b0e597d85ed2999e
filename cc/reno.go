package cc

import (
	"math"

	"github.com/lockstep-sim/lockstep/sim"
)

// Reno is the congestion control of RFC 5681 §3.1-3.2, with byte counting
// per RFC 3465.
//
//   - Slow start (cwnd < ssthresh): cwnd grows by min(N, L) per ACK, N the
//     bytes newly acknowledged and L = 2*SMSS (RFC 3465 §2.2). Growth past
//     ssthresh spills into congestion avoidance, as Linux's tcp_slow_start
//     does.
//   - Congestion avoidance: acknowledged bytes are counted; each time they
//     reach cwnd, cwnd grows by one SMSS (RFC 3465 §2.1, RFC 5681 eq. 3's
//     intent without its per-ACK rounding).
//   - Loss (fast retransmit) and ECN echo (RFC 3168 §6.1.2):
//     ssthresh = max(FlightSize/2, 2*SMSS) (RFC 5681 eq. 4), cwnd = ssthresh.
//     Deviation: RFC 5681 §3.2 step 3 inflates cwnd to ssthresh+3*SMSS
//     and by one SMSS per further duplicate ACK. We keep cwnd = ssthresh and
//     let the Recovery take each duplicate ACK off its pipe estimate
//     instead; the send decisions (pipe < cwnd) are identical, and cwnd
//     traces show the window the sender will return to (docs/decisions.md).
//   - RTO: ssthresh = max(FlightSize/2, 2*SMSS), cwnd = 1 SMSS (the loss
//     window, RFC 5681 §3.1); a repeated timeout before any new data is
//     acknowledged keeps ssthresh (§3.1, "held constant").
//   - FlightSize at fast retransmit excludes data sent by limited
//     transmit (§3.2 step 2; the Recovery reports it in the verdict).
//   - End of fast recovery: cwnd = ssthresh (RFC 5681 §3.2 step 6).
//
// The window does not grow while the sender is in recovery.
type Reno struct {
	mss      int64
	cwnd     int64
	ssthresh int64
	acked    int64 // bytes counted towards the next CA increase
	afterRTO bool  // no new data acknowledged since the last RTO
}

var _ Controller = (*Reno)(nil)

// renoABCLimit is RFC 3465 §2.2's L, in segments.
const renoABCLimit = 2

// NewReno returns a Reno controller with an initial window of initCwnd
// segments and an "arbitrarily high" initial ssthresh (RFC 5681 §3.1).
func NewReno(mss, initCwnd int64) *Reno {
	return &Reno{mss: mss, cwnd: initCwnd * mss, ssthresh: math.MaxInt64 / 2}
}

// OnAck implements Controller.OnAck.
func (r *Reno) OnAck(ev *AckEvent) {
	if ev.Acked > 0 {
		r.afterRTO = false
	}
	if ev.InRecovery || ev.Acked <= 0 {
		return
	}
	n := ev.Acked
	if r.cwnd < r.ssthresh {
		inc := min(n, renoABCLimit*r.mss)
		room := r.ssthresh - r.cwnd
		if inc <= room {
			r.cwnd += inc
			return
		}
		r.cwnd = r.ssthresh
		n = inc - room
	}
	r.acked += n
	for r.acked >= r.cwnd {
		r.acked -= r.cwnd
		r.cwnd += r.mss
	}
}

// OnCongestion implements Controller.OnCongestion.
func (r *Reno) OnCongestion(ev *CongestionEvent) {
	r.acked = 0
	if ev.Kind == CongRTO {
		// RFC 5681 §3.1: when the timer expires again for a segment it
		// already retransmitted, ssthresh is held constant.
		if !r.afterRTO {
			r.ssthresh = max(ev.FlightSize/2, 2*r.mss)
		}
		r.afterRTO = true
		r.cwnd = r.mss
		return
	}
	r.ssthresh = max(ev.FlightSize/2, 2*r.mss)
	r.cwnd = r.ssthresh
}

// OnRecoveryExit implements Controller.OnRecoveryExit.
func (r *Reno) OnRecoveryExit(now sim.Time) { r.cwnd = r.ssthresh }

// Cwnd implements Controller.Cwnd.
func (r *Reno) Cwnd() int64 { return r.cwnd }

// Ssthresh implements Controller.Ssthresh.
func (r *Reno) Ssthresh() int64 { return r.ssthresh }
