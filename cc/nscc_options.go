package cc

import (
	"github.com/lockstep-sim/lockstep/sim"
)

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
		v, err := o.integer(n.key, int(*n.p))
		if err != nil {
			return err
		}
		*n.p = int64(v)
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
	r, err := o.rate("link_rate", int64(c.LinkRate))
	if err != nil {
		return err
	}
	c.LinkRate = sim.Bandwidth(r)
	g, err := o.integer("qa_gate", int(c.QAGate))
	if err != nil {
		return err
	}
	if g < 0 || g > 30 {
		return o.valueErr("qa_gate", "must be in [0, 30], got %d", g)
	}
	c.QAGate = uint(g)
	return nil
}
