package workloads

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lockstep-sim/lockstep/sim"
)

// PoissonConfig describes an open-loop load of flows arriving as a Poisson
// process with sizes from a CDF.
type PoissonConfig struct {
	NumHosts int           // hosts of the fabric, >= 2
	Load     float64       // offered load per host, a fraction of HostRate in (0, 1]
	HostRate sim.Bandwidth // each host's link rate, > 0
	CDF      *CDF          // flow-size distribution, required
	// Flows start in [Start, End). End > Start; End == sim.Never means no end
	// time, and then MaxFlows must bound the list.
	Start, End sim.Time
	// MaxFlows stops the list after this many flows; 0 means no limit.
	MaxFlows int
}

// maxExpectedFlows is the largest expected list Poisson builds without an
// explicit MaxFlows: it catches a mistyped End before it exhausts memory.
const maxExpectedFlows = 10_000_000

// Validate checks the config.
func (c *PoissonConfig) Validate() error {
	switch {
	case c.NumHosts < 2:
		return fmt.Errorf("poisson: NumHosts must be at least 2, got %d", c.NumHosts)
	case !(c.Load > 0 && c.Load <= 1):
		return fmt.Errorf("poisson: Load must be in (0, 1], got %v", c.Load)
	case c.HostRate <= 0:
		return fmt.Errorf("poisson: HostRate must be positive, got %d bit/s", int64(c.HostRate))
	case c.CDF == nil:
		return fmt.Errorf("poisson: CDF is required")
	case c.Start < 0:
		return fmt.Errorf("poisson: Start must not be negative, got %v", c.Start)
	case c.End <= c.Start:
		return fmt.Errorf("poisson: End (%v) must be after Start (%v)", c.End, c.Start)
	case c.MaxFlows < 0 || c.MaxFlows > maxFlows:
		return fmt.Errorf("poisson: MaxFlows must be in [0, %d], got %d", maxFlows, c.MaxFlows)
	case c.End == sim.Never && c.MaxFlows == 0:
		return fmt.Errorf("poisson: End is sim.Never, so MaxFlows must be set")
	}
	if c.MaxFlows == 0 {
		if n := c.rate() * (c.End - c.Start).Seconds(); n > maxExpectedFlows {
			return fmt.Errorf("poisson: about %.3g flows expected in [%v, %v); set MaxFlows (at most %d) to build that many", n, c.Start, c.End, maxFlows)
		}
	}
	return nil
}

// rate is the fabric-wide arrival rate in flows per second:
// NumHosts*Load*HostRate / (8*mean size), as in HPCC's traffic_gen.py
// (avg_inter_arrival = 1/(bandwidth*load/8./avg) per host, nhost hosts).
func (c *PoissonConfig) rate() float64 {
	return float64(c.NumHosts) * c.Load * float64(c.HostRate) / (8 * c.CDF.Mean())
}

// MeanInterArrival is the mean time between two flow arrivals in the whole
// fabric.
func (c *PoissonConfig) MeanInterArrival() sim.Time {
	return sim.Time(math.Round(float64(sim.Second) / c.rate()))
}

// Poisson returns flows that arrive as one Poisson process for the whole
// fabric with rate NumHosts*Load*HostRate/(8*CDF.Mean()) flows per second,
// so that each host offers Load of its link rate on average, as HPCC's
// traffic_gen.py does. That script runs one process per source host with
// rate Load*HostRate/(8*mean); the superposition of those is this process
// with a uniformly random source, so the two have the same distribution.
//
// Each flow draws, in this order: its exponential inter-arrival gap
// (rng.ExpFloat64), its source (uniform over all hosts), its destination
// (uniform over the other hosts) and its size (CDF.Sample, at least 1 byte).
// Arrival times are accumulated in float64 picoseconds and rounded, so the
// rounding does not bias the rate. The first flow arrives one gap after
// Start (HPCC also draws a gap before the first flow); flows continue while
// their start is before End and until MaxFlows. Flows are in start order,
// numbered 0..n-1 in that order.
//
// Differences from traffic_gen.py: time is in picoseconds, not whole
// nanoseconds (HPCC truncates every gap to ns); there is no fixed 2 s
// offset (use Start); sizes are rounded to the nearest byte, not truncated.
func Poisson(cfg PoissonConfig, rng *rand.Rand) ([]Flow, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	meanGap := float64(sim.Second) / cfg.rate() // ps
	limit := cfg.MaxFlows
	if limit == 0 {
		limit = maxFlows
	}
	expect := cfg.rate() * (cfg.End - cfg.Start).Seconds()
	flows := make([]Flow, 0, int(min(float64(limit), expect*1.05+16)))
	// Accumulate the offset from Start as a float so that a horizon far
	// beyond 2^53 ps (End == sim.Never) does not lose precision in Start.
	span := float64(cfg.End - cfg.Start)
	t := 0.0
	for len(flows) < limit {
		t += rng.ExpFloat64() * meanGap
		if t >= span || t >= math.MaxInt64 {
			break
		}
		off := sim.Time(math.Round(t))
		if off >= cfg.End-cfg.Start {
			break
		}
		src := rng.IntN(cfg.NumHosts)
		dst := rng.IntN(cfg.NumHosts - 1)
		if dst >= src {
			dst++
		}
		flows = append(flows, Flow{
			ID:    int32(len(flows)),
			Src:   src,
			Dst:   dst,
			Size:  cfg.CDF.Sample(rng),
			Start: cfg.Start + off,
		})
	}
	return flows, nil
}
