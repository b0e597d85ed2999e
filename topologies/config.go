package topologies

import (
	"fmt"
	"math"

	"github.com/lockstep-sim/lockstep/sim"
)

// TierConfig sets the links of one tier of a fabric: their rate, their
// propagation delay and the output queue at their switch ends.
type TierConfig struct {
	Rate  sim.Bandwidth
	Delay sim.Time
	Queue QueueConfig
}

// Size limits that keep a typo (or a fuzzer) from asking for a fabric that
// does not fit in memory. A k=128 fat-tree (524288 hosts, 1.6M links)
// fits; its forwarding table would not (see Routes).
const (
	maxNodes = 1 << 20
	maxLinks = 1 << 22
)

// checkTier validates a tier's settings; field names the tier in errors
// ("fattree.agg"). A zero rate is an error unless rateOptional is set.
func checkTier(field string, tc TierConfig, rateOptional bool) error {
	if tc.Rate < 0 || (tc.Rate == 0 && !rateOptional) {
		return fmt.Errorf("%s.rate: must be positive, got %v", field, tc.Rate)
	}
	if tc.Delay < 0 {
		return fmt.Errorf("%s.delay: must not be negative, got %v", field, tc.Delay)
	}
	return checkQueue(field+".queue", &tc.Queue)
}

// checkQueue validates a port queue's settings.
func checkQueue(field string, q *QueueConfig) error {
	if q.Buffer < 0 {
		return fmt.Errorf("%s.buffer: must not be negative, got %d bytes", field, q.Buffer)
	}
	e := &q.ECN
	switch e.Mode {
	case ECNOff:
	case ECNStep:
		if e.K < 0 {
			return fmt.Errorf("%s.ecn.k: must not be negative, got %d bytes", field, e.K)
		}
	case ECNRED:
		if e.Min < 0 {
			return fmt.Errorf("%s.ecn.min: must not be negative, got %d bytes", field, e.Min)
		}
		if e.Max < e.Min {
			return fmt.Errorf("%s.ecn.max: must be at least ecn.min (%d bytes), got %d bytes", field, e.Min, e.Max)
		}
		if !(e.PMax >= 0 && e.PMax <= 1) {
			return fmt.Errorf("%s.ecn.pmax: must be in [0, 1], got %v", field, e.PMax)
		}
	default:
		return fmt.Errorf("%s.ecn.mode: unknown mode %d", field, e.Mode)
	}
	return nil
}

// mulLimit returns a*b, or ok=false when the product of these non-negative
// numbers exceeds limit (or overflows).
func mulLimit(a, b, limit int) (int, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	if a == 0 || b == 0 {
		return 0, true
	}
	if a > limit/b {
		return 0, false
	}
	return a * b, true
}

// checkSize reports a fabric that would exceed the package's size limits.
func checkSize(field string, nodes, links int) error {
	if nodes > maxNodes {
		return fmt.Errorf("%s: the fabric would have %d nodes, more than the limit of %d", field, nodes, maxNodes)
	}
	if links > maxLinks {
		return fmt.Errorf("%s: the fabric would have %d links, more than the limit of %d", field, links, maxLinks)
	}
	return nil
}

// finite reports whether f is a finite number.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
