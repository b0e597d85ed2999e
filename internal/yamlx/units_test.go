package yamlx

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// unitCase is one input to a unit type's UnmarshalYAMLScalar: either the
// value it must produce or the exact error it must return.
type unitCase[T comparable] struct {
	in      string
	want    T
	wantErr string
}

func runUnitCases[T comparable](t *testing.T, cases []unitCase[T], parse func(*T, string) error) {
	t.Helper()
	for _, c := range cases {
		var got T
		err := parse(&got, c.in)
		switch {
		case c.wantErr != "" && err == nil:
			t.Errorf("parse(%q) = %v, want error %q", c.in, got, c.wantErr)
		case c.wantErr != "" && err.Error() != c.wantErr:
			t.Errorf("parse(%q) error:\n got: %s\nwant: %s", c.in, err, c.wantErr)
		case c.wantErr == "" && err != nil:
			t.Errorf("parse(%q) = error %q, want %v", c.in, err, c.want)
		case c.wantErr == "" && got != c.want:
			t.Errorf("parse(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestSize(t *testing.T) {
	const badSize = "expected a size like 64KB or 1MiB, got "
	runUnitCases(t, []unitCase[Size]{
		{in: "0", want: 0},
		{in: "1500", want: 1500},
		{in: "1500B", want: 1500},
		{in: "64KB", want: 64000},
		{in: "64kB", want: 64000},
		{in: "64 KB", want: 64000},
		{in: "64KiB", want: 65536},
		{in: "1MiB", want: 1 << 20},
		{in: "1MB", want: 1e6},
		{in: "2GB", want: 2e9},
		{in: "2GiB", want: 2 << 30},
		{in: "1TB", want: 1e12},
		{in: "1TiB", want: 1 << 40},
		{in: "1.5KB", want: 1500},
		{in: "0.5KiB", want: 512},
		{in: ".5KB", want: 500},
		{in: "1e3", want: 1000},
		{in: "1e6GB", want: 1e15},
		{in: "+4KB", want: 4000},
		{in: "8388608TiB", wantErr: `size "8388608TiB" is too large (max 9223372036854775807B)`},
		{in: "9223372036854775807", want: math.MaxInt64},
		{in: "9223372036854775808", wantErr: `size "9223372036854775808" is too large (max 9223372036854775807B)`},
		{in: "1e30GB", wantErr: `size "1e30GB" is too large (max 9223372036854775807B)`},
		{in: "1.5B", wantErr: `size "1.5B" is not a whole number of bytes`},
		{in: "1.0001KB", wantErr: `size "1.0001KB" is not a whole number of bytes`},
		{in: "-1KB", wantErr: `size must not be negative, got "-1KB"`},
		{in: "-0", want: 0},
		{in: "lots", wantErr: badSize + `"lots"`},
		{in: "", wantErr: badSize + `""`},
		{in: "1KIB", wantErr: badSize + `"1KIB"`},
		{in: "1kib", wantErr: badSize + `"1kib"`},
		{in: "1Kb", wantErr: badSize + `"1Kb"`},
		{in: "1 K B", wantErr: badSize + `"1 K B"`},
		{in: "KB", wantErr: badSize + `"KB"`},
		{in: "1..5KB", wantErr: badSize + `"1..5KB"`},
		{in: "1/2KB", wantErr: badSize + `"1/2KB"`},
		{in: "1e99999GB", wantErr: badSize + `"1e99999GB"`},
		{in: " 1KB", wantErr: badSize + `" 1KB"`},
	}, (*Size).UnmarshalYAMLScalar)
}

func TestRate(t *testing.T) {
	const badRate = "expected a rate like 100Gbps or 2.5Gbps, got "
	g := Rate(sim.GbitPerSecond)
	runUnitCases(t, []unitCase[Rate]{
		{in: "100Gbps", want: 100 * g},
		{in: "40Gbps", want: 40 * g},
		{in: "2.5Gbps", want: Rate(2500 * sim.MbitPerSecond)},
		{in: "100Mbps", want: Rate(100 * sim.MbitPerSecond)},
		{in: "10Kbps", want: Rate(10 * sim.KbitPerSecond)},
		{in: "10kbps", want: Rate(10 * sim.KbitPerSecond)},
		{in: "800bps", want: 800},
		{in: "1Tbps", want: 1000 * g},
		{in: "100G", want: 100 * g},
		{in: "100 G", want: 100 * g},
		{in: "25M", want: Rate(25 * sim.MbitPerSecond)},
		{in: "40 Gb/s", want: 40 * g},
		{in: "40Gbit/s", want: 40 * g},
		{in: "100gbps", want: 100 * g},
		{in: "1.5bps", wantErr: `rate "1.5bps" is not a whole number of bits per second`},
		{in: "0.0000000001Gbps", wantErr: `rate "0.0000000001Gbps" is not a whole number of bits per second`},
		{in: "0Gbps", wantErr: `rate must be positive, got "0Gbps"`},
		{in: "-10Gbps", wantErr: `rate must be positive, got "-10Gbps"`},
		{in: "1e30Gbps", wantErr: `rate "1e30Gbps" is too large (max 9223372036854775807bps)`},
		{in: "100", wantErr: badRate + `"100"`},
		{in: "100GBps", wantErr: badRate + `"100GBps"`},
		{in: "100Gbs", wantErr: badRate + `"100Gbs"`},
		{in: "fast", wantErr: badRate + `"fast"`},
		{in: "100Xbps", wantErr: badRate + `"100Xbps"`},
		{in: "100µbps", wantErr: badRate + `"100µbps"`},
	}, (*Rate).UnmarshalYAMLScalar)
}

func TestDuration(t *testing.T) {
	const badDuration = "expected a duration like 10us or 2.5ms, got "
	runUnitCases(t, []unitCase[Duration]{
		{in: "0", want: 0},
		{in: "0.0", want: 0},
		{in: "0s", want: 0},
		{in: "15ps", want: 15},
		{in: "500ns", want: Duration(500 * sim.Nanosecond)},
		{in: "1us", want: Duration(sim.Microsecond)},
		{in: "1µs", want: Duration(sim.Microsecond)}, // U+00B5 micro sign
		{in: "1μs", want: Duration(sim.Microsecond)}, // U+03BC Greek mu
		{in: "2.5us", want: Duration(2500 * sim.Nanosecond)},
		{in: "10ms", want: Duration(10 * sim.Millisecond)},
		{in: "1s", want: Duration(sim.Second)},
		{in: "1 s", want: Duration(sim.Second)},
		{in: "0.001ps", wantErr: `duration "0.001ps" is not a whole number of picoseconds`},
		{in: "1.5ps", wantErr: `duration "1.5ps" is not a whole number of picoseconds`},
		{in: "-1us", wantErr: `duration must not be negative, got "-1us"`},
		{in: "1e10s", wantErr: `duration "1e10s" is too large (max 9223372036854775807ps)`},
		{in: "10", wantErr: `duration "10" needs a unit (ps, ns, us, ms or s)`},
		{in: "-1", wantErr: `duration "-1" needs a unit (ps, ns, us, ms or s)`},
		{in: "1m", wantErr: badDuration + `"1m"`},
		{in: "1h", wantErr: badDuration + `"1h"`},
		{in: "1US", wantErr: badDuration + `"1US"`},
		{in: "soon", wantErr: badDuration + `"soon"`},
		{in: "", wantErr: badDuration + `""`},
	}, (*Duration).UnmarshalYAMLScalar)
}

func TestProbability(t *testing.T) {
	const badProbability = "expected a probability like 0.05 or 5%, got "
	runUnitCases(t, []unitCase[Probability]{
		{in: "0", want: 0},
		{in: "1", want: 1},
		{in: "0.05", want: 0.05},
		{in: "5%", want: 0.05},
		{in: "5 %", want: 0.05},
		{in: "0.1%", want: 0.001},
		{in: "100%", want: 1},
		{in: "1e-3", want: 0.001},
		{in: "1.0000001", wantErr: `probability "1.0000001" is not between 0 and 1 (0% and 100%)`},
		{in: "150%", wantErr: `probability "150%" is not between 0 and 1 (0% and 100%)`},
		{in: "-0.1", wantErr: `probability "-0.1" is not between 0 and 1 (0% and 100%)`},
		{in: "half", wantErr: badProbability + `"half"`},
		{in: "5%%", wantErr: badProbability + `"5%%"`},
		{in: ".nan", wantErr: badProbability + `".nan"`},
	}, (*Probability).UnmarshalYAMLScalar)
}

func TestUnits_StringRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2)) // fixed seed: the test is deterministic
	sizes := []Size{0, 1, 1000, 1024, 1500, 64000, 65536, 1024000, Terabyte, Tebibyte, math.MaxInt64}
	rates := []Rate{1, 800, Rate(sim.KbitPerSecond), Rate(2500 * sim.MbitPerSecond), Rate(100 * sim.GbitPerSecond), math.MaxInt64}
	durations := []Duration{0, 1, 999, 1_000_000_000_001, Duration(sim.Microsecond), Duration(2500 * sim.Nanosecond), math.MaxInt64 - 1}
	probabilities := []Probability{0, 1, 0.05, 0.001, 1.0 / 3}
	for range 200 {
		sizes = append(sizes, Size(r.Int64N(1<<50)))
		rates = append(rates, Rate(1+r.Int64N(1<<50)))
		durations = append(durations, Duration(r.Int64N(1<<60)))
		probabilities = append(probabilities, Probability(r.Float64()))
	}
	checkRoundTrip(t, sizes, (*Size).UnmarshalYAMLScalar)
	checkRoundTrip(t, rates, (*Rate).UnmarshalYAMLScalar)
	checkRoundTrip(t, durations, (*Duration).UnmarshalYAMLScalar)
	checkRoundTrip(t, probabilities, (*Probability).UnmarshalYAMLScalar)

	for _, c := range []struct{ got, want string }{
		{Size(1500).String(), "1500B"},
		{Size(64000).String(), "64KB"},
		{Size(65536).String(), "64KiB"},
		{Rate(100 * sim.GbitPerSecond).String(), "100Gbps"},
		{Duration(2500 * sim.Nanosecond).String(), "2.5us"},
		{Duration(15).String(), "15ps"},
		{Duration(0).String(), "0ps"},
		{Duration(1_000_000_000_001).String(), "1.000000000001s"},
		{Rate(2500 * sim.MbitPerSecond).String(), "2.5Gbps"},
		{Rate(800).String(), "800bps"},
		{Probability(0.05).String(), "0.05"},
	} {
		if c.got != c.want {
			t.Errorf("String() = %q, want %q", c.got, c.want)
		}
	}
}

func checkRoundTrip[T interface {
	comparable
	String() string
}](t *testing.T, values []T, parse func(*T, string) error) {
	t.Helper()
	for _, v := range values {
		var got T
		if err := parse(&got, v.String()); err != nil || got != v {
			t.Errorf("parse(%q) = %v, %v; want %v", v.String(), got, err, v)
		}
	}
}
