package cc

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// RTOMode selects how the retransmission timeout is computed.
type RTOMode uint8

// The zero RTOMode is invalid.
const (
	// RTOAdaptive is RFC 6298.
	RTOAdaptive RTOMode = 1 + iota
	// RTOFixed always uses RTOConfig.Fixed.
	RTOFixed
)

// RTOConfig parameterises an RTO estimator.
type RTOConfig struct {
	Mode    RTOMode
	Fixed   sim.Time // RTOFixed: the timeout
	Initial sim.Time // RTOAdaptive: before the first sample (RFC 6298 §2.1: 1 s)
	Min     sim.Time // RTOAdaptive: lower bound (RFC 6298 §2.4: 1 s; Linux: 200 ms)
	Max     sim.Time // upper bound, also for back-off (RFC 6298 §2.5: at least 60 s)
	// Granularity is the clock granularity G of RFC 6298 §2 (0: exact).
	Granularity sim.Time
	// Backoff doubles the timeout after each expiry (RFC 6298 §5.5).
	Backoff bool
	// KeepBackoff never clears the back-off (htsim PR #4's STrack: _rto
	// only doubles); otherwise a new RTT sample clears it (§5.7).
	KeepBackoff bool
}

// DefaultRTOConfig is RFC 6298 with Linux's 200 ms minimum (TCP_RTO_MIN)
// and 1 s initial value.
func DefaultRTOConfig() RTOConfig {
	return RTOConfig{Mode: RTOAdaptive, Initial: sim.Second, Min: 200 * sim.Millisecond,
		Max: 60 * sim.Second, Backoff: true}
}

// Validate checks the configuration.
func (c *RTOConfig) Validate() error {
	switch c.Mode {
	case RTOFixed:
		if c.Fixed <= 0 {
			return fmt.Errorf("rto.value: must be positive for a fixed RTO, got %v", c.Fixed)
		}
	case RTOAdaptive:
		if c.Initial <= 0 || c.Min < 0 || c.Max <= 0 || c.Min > c.Max {
			return fmt.Errorf("rto: need initial > 0 and 0 <= min <= max (initial %v, min %v, max %v)", c.Initial, c.Min, c.Max)
		}
	default:
		return fmt.Errorf("rto.mode: unknown mode %d", c.Mode)
	}
	return nil
}

// RTO is the retransmission-timeout estimator of RFC 6298 (or a fixed
// timeout). It also keeps the smallest RTT seen.
type RTO struct {
	cfg     RTOConfig
	srtt    sim.Time
	rttvar  sim.Time
	minRTT  sim.Time
	samples int
	backoff int
}

// NewRTO returns an estimator. Precondition: cfg.Validate() == nil.
func NewRTO(cfg RTOConfig) *RTO { return &RTO{cfg: cfg} }

// OnSample takes a round-trip measurement R (RFC 6298 §2.2, §2.3, with
// alpha = 1/8 and beta = 1/4) and clears the back-off (§5.7's "new RTT
// measurement").
func (t *RTO) OnSample(r sim.Time) {
	if r <= 0 {
		return
	}
	if t.minRTT == 0 || r < t.minRTT {
		t.minRTT = r
	}
	if t.samples == 0 {
		t.srtt = r
		t.rttvar = r / 2
	} else {
		d := t.srtt - r
		if d < 0 {
			d = -d
		}
		t.rttvar = (3*t.rttvar + d) / 4
		t.srtt = (7*t.srtt + r) / 8
	}
	t.samples++
	if !t.cfg.KeepBackoff {
		t.backoff = 0
	}
}

// OnExpire doubles the timeout (RFC 6298 §5.5) if back-off is on.
func (t *RTO) OnExpire() {
	if t.cfg.Backoff && t.backoff < 30 {
		t.backoff++
	}
}

// Timeout is the current RTO, back-off included.
func (t *RTO) Timeout() sim.Time {
	var base sim.Time
	switch t.cfg.Mode {
	case RTOFixed:
		base = t.cfg.Fixed
	default:
		if t.samples == 0 {
			base = t.cfg.Initial
		} else {
			base = t.srtt + max(t.cfg.Granularity, 4*t.rttvar)
		}
		base = max(base, t.cfg.Min)
	}
	for i := 0; i < t.backoff; i++ {
		base *= 2
		if t.cfg.Max > 0 && base >= t.cfg.Max {
			return t.cfg.Max
		}
	}
	if t.cfg.Max > 0 && base > t.cfg.Max {
		base = t.cfg.Max
	}
	return base
}

// SRTT is the smoothed RTT (0 before the first sample).
func (t *RTO) SRTT() sim.Time { return t.srtt }

// RTTVar is the RTT variation of RFC 6298 §2 (0 before the first sample).
func (t *RTO) RTTVar() sim.Time { return t.rttvar }

// MinRTT is the smallest sample seen (0 before the first).
func (t *RTO) MinRTT() sim.Time { return t.minRTT }
