package cc

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lockstep-sim/lockstep/sim"
)

func (o *options) valueErr(key, format string, args ...any) error {
	return &OptionValueError{Module: o.module, Key: key, Err: fmt.Errorf(format, args...)}
}

// duration reads "0" or a decimal with a unit: ps, ns, us (µs), ms, s.
func (o *options) duration(key string, def sim.Time) (sim.Time, error) {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok {
		return def, nil
	}
	d, err := parseUnit(v, []unit{{"ps", 1}, {"ns", 1e3}, {"us", 1e6}, {"µs", 1e6}, {"ms", 1e9}, {"s", 1e12}}, false)
	if err != nil {
		return 0, o.valueErr(key, "expected a duration such as 55us, got %q", v)
	}
	return sim.Time(d), nil
}

// rate reads a rate in bits per second: "40Mbps", "100Gbps", "40Mb/s",
// "1.5Gbps"; a bare number is bits per second.
func (o *options) rate(key string, def int64) (int64, error) {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok {
		return def, nil
	}
	r, err := parseUnit(v, []unit{{"Tbps", 1e12}, {"Gbps", 1e9}, {"Mbps", 1e6}, {"Kbps", 1e3}, {"kbps", 1e3}, {"bps", 1},
		{"Tb/s", 1e12}, {"Gb/s", 1e9}, {"Mb/s", 1e6}, {"Kb/s", 1e3}, {"kb/s", 1e3}, {"b/s", 1}}, true)
	if err != nil {
		return 0, o.valueErr(key, "expected a rate such as 40Mbps, got %q", v)
	}
	return r, nil
}

// size reads a size in bytes: "10MB" (10^6), "64KiB" (2^10), "32767".
func (o *options) size(key string, def int64) (int64, error) {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok {
		return def, nil
	}
	n, err := parseUnit(v, []unit{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6},
		{"GB", 1e9}, {"B", 1}}, true)
	if err != nil {
		return 0, o.valueErr(key, "expected a size such as 10MB, got %q", v)
	}
	return n, nil
}

type unit struct {
	suffix string
	scale  float64
}

// parseUnit reads a non-negative decimal followed by one of units (or no
// unit when bare is true, scale 1) and returns it as a whole number of the
// base unit; a value that is not whole in the base unit is an error.
func parseUnit(s string, units []unit, bare bool) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	num, scale := s, 0.0
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, scale = strings.TrimSpace(n), u.scale
			break
		}
	}
	if scale == 0 {
		if !bare {
			return 0, fmt.Errorf("no unit")
		}
		scale = 1
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("not a non-negative number")
	}
	x := f * scale
	if x > math.MaxInt64/2 || math.Abs(x-math.Round(x)) > 1e-6*math.Max(1, x) {
		return 0, fmt.Errorf("out of range")
	}
	return int64(math.Round(x)), nil
}
