package cc

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstep-sim/lockstep/sim"
)

// timeUnits are the units a duration may carry.
var timeUnits = []struct {
	suffix string
	unit   sim.Time
}{{"ps", sim.Picosecond}, {"ns", sim.Nanosecond}, {"us", sim.Microsecond},
	{"ms", sim.Millisecond}, {"s", sim.Second}}

// ParseDuration reads "0" or a decimal number with a unit ps, ns, us, ms
// or s ("100us", "1.5ms"), as module options and `lockstep cc trace`
// scripts write durations. The value must be a whole number of
// picoseconds.
func ParseDuration(s string) (sim.Time, error) {
	if s == "0" {
		return 0, nil
	}
	for _, u := range timeUnits {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		whole, frac, _ := strings.Cut(num, ".")
		w, err := strconv.ParseInt(whole, 10, 64)
		if err != nil || w < 0 {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		t := sim.Time(w) * u.unit
		scale := u.unit
		for _, c := range frac {
			if c < '0' || c > '9' || scale%10 != 0 {
				return 0, fmt.Errorf("bad duration %q (at most picosecond precision)", s)
			}
			scale /= 10
			t += sim.Time(c-'0') * scale
		}
		return t, nil
	}
	return 0, fmt.Errorf("duration %q has no unit (ps, ns, us, ms, s)", s)
}

// parseRate reads a rate with a unit bps, Kbps, Mbps or Gbps ("100Gbps",
// "2.5Gbps").
func parseRate(s string) (sim.Bandwidth, error) {
	for _, u := range []struct {
		suffix string
		unit   sim.Bandwidth
	}{{"Gbps", sim.GbitPerSecond}, {"Mbps", sim.MbitPerSecond}, {"Kbps", sim.KbitPerSecond}, {"bps", sim.BitPerSecond}} {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || f <= 0 {
			return 0, fmt.Errorf("bad rate %q", s)
		}
		return sim.Bandwidth(f * float64(u.unit)), nil
	}
	return 0, fmt.Errorf("rate %q has no unit (bps, Kbps, Mbps, Gbps)", s)
}

func (o *options) duration(key string, def sim.Time) (sim.Time, error) {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok {
		return def, nil
	}
	d, err := ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s option %s: %v", o.module, key, err)
	}
	return d, nil
}

func (o *options) rate(key string, def sim.Bandwidth) (sim.Bandwidth, error) {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok {
		return def, nil
	}
	r, err := parseRate(v)
	if err != nil {
		return 0, fmt.Errorf("%s option %s: %v", o.module, key, err)
	}
	return r, nil
}

func (o *options) integer(key string, def int64) (int64, error) {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s option %s: expected an integer, got %q", o.module, key, v)
	}
	return n, nil
}

// nsccOptions applies NSCC's key=value options (the NSCCConfig fields,
// named as docs/scenario.md's transport.nscc) over c.
func nsccOptions(o *options, c *NSCCConfig) error {
	var err error
	durs := []struct {
		key string
		p   *sim.Time
	}{{"network_rtt", &c.NetworkRTT}, {"base_rtt", &c.BaseRTT}, {"target_qdelay", &c.TargetQDelay},
		{"fast_increase_delay", &c.FastIncreaseDelay}, {"adjust_period", &c.AdjustPeriod}}
	for _, d := range durs {
		if *d.p, err = o.duration(d.key, *d.p); err != nil {
			return err
		}
	}
	floats := []struct {
		key string
		p   *float64
	}{{"qa_threshold", &c.QAThreshold}, {"gamma", &c.Gamma}, {"max_md", &c.MaxMD}, {"fi", &c.FI},
		{"fi_scale", &c.FIScale}, {"eta", &c.Eta}, {"alpha", &c.Alpha}, {"delay_alpha", &c.DelayAlpha},
		{"max_cwnd_bdp", &c.MaxWndBDP}}
	for _, f := range floats {
		if *f.p, err = o.float(f.key, *f.p); err != nil {
			return err
		}
	}
	ints := []struct {
		key string
		p   *int64
	}{{"header", &c.Header}, {"adjust_bytes", &c.AdjustBytes}, {"init_cwnd", &c.InitCwnd}}
	for _, n := range ints {
		if *n.p, err = o.integer(n.key, *n.p); err != nil {
			return err
		}
	}
	bools := []struct {
		key string
		p   *bool
	}{{"trimming", &c.Trimming}, {"quick_adapt", &c.QuickAdapt}, {"base_rtt_on_nack", &c.BaseRTTOnNack}}
	for _, b := range bools {
		if *b.p, err = o.boolean(b.key, *b.p); err != nil {
			return err
		}
	}
	if c.LinkRate, err = o.rate("link_rate", c.LinkRate); err != nil {
		return err
	}
	g, err := o.integer("qa_gate", int64(c.QAGate))
	if err != nil {
		return err
	}
	if g < 0 || g > 30 {
		return fmt.Errorf("%s option qa_gate: must be in [0, 30], got %d", o.module, g)
	}
	c.QAGate = uint(g)
	return nil
}
