package workloads

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func poissonConfig(t *testing.T) PoissonConfig {
	return PoissonConfig{
		NumHosts: 128,
		Load:     0.5,
		HostRate: 100 * sim.GbitPerSecond,
		CDF:      loadCDF(t, "websearch.cdf"),
		Start:    10 * sim.Microsecond,
		End:      10*sim.Microsecond + 1*sim.Second,
	}
}

func TestPoisson_OfferedLoad(t *testing.T) {
	for i, name := range cdfFiles {
		for j, load := range []float64{0.3, 0.8} {
			cfg := poissonConfig(t)
			cfg.CDF = loadCDF(t, name)
			cfg.Load = load
			// Enough virtual time for about 400k flows: the relative
			// standard deviation of the offered bytes is then
			// sqrt((1+cv^2)/400k), under 0.9% for these CDFs (size cv <= 5.6).
			span := sim.Time(400_000 * float64(cfg.MeanInterArrival()))
			cfg.End = cfg.Start + span
			flows, err := Poisson(cfg, testRand(uint64(10*i+j)))
			if err != nil {
				t.Fatalf("Poisson: unexpected error %v", err)
			}
			var bytes float64
			for _, f := range flows {
				bytes += float64(f.Size)
			}
			capacity := float64(cfg.NumHosts) * float64(cfg.HostRate) / 8 * span.Seconds()
			got := bytes / capacity
			t.Logf("%s load %v: %d flows, offered load %.4f", name, load, len(flows), got)
			if math.Abs(got-load)/load > 0.05 {
				t.Errorf("%s load %v: offered load over %v = %.4f (%d flows), want within 5%%", name, load, span, got, len(flows))
			}
		}
	}
}

func TestPoisson_InterArrivalsExponential(t *testing.T) {
	cfg := poissonConfig(t)
	cfg.End = sim.Never
	cfg.MaxFlows = 200_000
	flows, err := Poisson(cfg, testRand(11))
	if err != nil {
		t.Fatalf("Poisson: unexpected error %v", err)
	}
	if len(flows) != cfg.MaxFlows {
		t.Fatalf("got %d flows, want MaxFlows = %d", len(flows), cfg.MaxFlows)
	}
	checkIDs(t, flows)
	gaps := make([]float64, len(flows))
	prev := cfg.Start
	for i, f := range flows {
		if f.Start < prev {
			t.Fatalf("flows[%d] starts at %v, before flows[%d] at %v", i, f.Start, i-1, prev)
		}
		gaps[i] = float64(f.Start - prev)
		prev = f.Start
	}
	var sum, sq float64
	for _, g := range gaps {
		sum += g
	}
	mean := sum / float64(len(gaps))
	above := 0
	for _, g := range gaps {
		sq += (g - mean) * (g - mean)
		if g > mean {
			above++
		}
	}
	cv := math.Sqrt(sq/float64(len(gaps)-1)) / mean
	want := float64(cfg.MeanInterArrival())
	t.Logf("%d gaps: mean %.0fps (want %.0fps), cv %.4f, P(gap > mean) %.4f", len(gaps), mean, want, cv, float64(above)/float64(len(gaps)))
	// Rate: 128 * 0.5 * 100e9 / (8 * 1711250) = 467500 flows/s, a gap of
	// 2.139063 us.
	if math.Abs(want-2139063) > 1 {
		t.Errorf("MeanInterArrival() = %.0fps, want 2139063ps", want)
	}
	if math.Abs(mean-want)/want > 0.01 {
		t.Errorf("mean gap = %.1fps, want %.1fps within 1%%", mean, want)
	}
	if math.Abs(cv-1) > 0.02 {
		t.Errorf("coefficient of variation of gaps = %.4f, want 1 within 0.02", cv)
	}
	// P(gap > mean) = 1/e for an exponential.
	if frac := float64(above) / float64(len(gaps)); math.Abs(frac-1/math.E) > 0.01 {
		t.Errorf("fraction of gaps above the mean = %.4f, want 1/e = %.4f", frac, 1/math.E)
	}
}

func TestPoisson_Endpoints(t *testing.T) {
	cfg := poissonConfig(t)
	cfg.NumHosts = 8
	cfg.End = sim.Never
	cfg.MaxFlows = 80_000
	flows, err := Poisson(cfg, testRand(3))
	if err != nil {
		t.Fatalf("Poisson: unexpected error %v", err)
	}
	var src, dst [8]int
	for _, f := range flows {
		if f.Src == f.Dst || f.Src < 0 || f.Src >= 8 || f.Dst < 0 || f.Dst >= 8 || f.Size < 1 {
			t.Fatalf("bad flow %+v", f)
		}
		src[f.Src]++
		dst[f.Dst]++
	}
	for h := range 8 {
		// Expected 10000 each, sd ~95.
		if src[h] < 9500 || src[h] > 10500 || dst[h] < 9500 || dst[h] > 10500 {
			t.Errorf("host %d sends %d and receives %d flows, want about 10000 each", h, src[h], dst[h])
		}
	}
	if _, err := Explicit(flows, 8); err != nil {
		t.Fatalf("Poisson output fails validation: %v", err)
	}
}

func TestPoisson_WindowAndDeterminism(t *testing.T) {
	cfg := poissonConfig(t)
	cfg.End = cfg.Start + 200*sim.Millisecond
	a, err := Poisson(cfg, testRand(1))
	if err != nil {
		t.Fatalf("Poisson: unexpected error %v", err)
	}
	b, _ := Poisson(cfg, testRand(1))
	c, _ := Poisson(cfg, testRand(2))
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed gave different flow lists (%d and %d flows)", len(a), len(b))
	}
	if reflect.DeepEqual(a, c) {
		t.Fatalf("seeds 1 and 2 gave the same flow list")
	}
	if len(a) < 80_000 || len(a) > 107_000 {
		t.Fatalf("got %d flows in 200ms, want about 93500", len(a))
	}
	for _, f := range a {
		if f.Start < cfg.Start || f.Start >= cfg.End {
			t.Fatalf("flow %+v starts outside [%v, %v)", f, cfg.Start, cfg.End)
		}
	}
}

func TestPoisson_ConfigErrors(t *testing.T) {
	good := poissonConfig(t)
	tests := []struct {
		name string
		edit func(*PoissonConfig)
		want string
	}{
		{"one host", func(c *PoissonConfig) { c.NumHosts = 1 }, "poisson: NumHosts must be at least 2, got 1"},
		{"zero load", func(c *PoissonConfig) { c.Load = 0 }, "poisson: Load must be in (0, 1], got 0"},
		{"overload", func(c *PoissonConfig) { c.Load = 1.5 }, "poisson: Load must be in (0, 1], got 1.5"},
		{"nan load", func(c *PoissonConfig) { c.Load = math.NaN() }, "poisson: Load must be in (0, 1], got NaN"},
		{"no rate", func(c *PoissonConfig) { c.HostRate = 0 }, "poisson: HostRate must be positive, got 0 bit/s"},
		{"no cdf", func(c *PoissonConfig) { c.CDF = nil }, "poisson: CDF is required"},
		{"end before start", func(c *PoissonConfig) { c.End = c.Start }, fmt.Sprintf("poisson: End (%v) must be after Start (%v)", good.Start, good.Start)},
		{"never without max", func(c *PoissonConfig) { c.End = sim.Never }, "poisson: End is sim.Never, so MaxFlows must be set"},
		{"too many", func(c *PoissonConfig) { c.End = 100 * sim.Second }, fmt.Sprintf("poisson: about 4.67e+07 flows expected in [%v, %v); set MaxFlows (at most 2147483647) to build that many", good.Start, 100*sim.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.edit(&cfg)
			_, err := Poisson(cfg, testRand(1))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Poisson error = %v, want %q", err, tc.want)
			}
		})
	}
}
