package scenario

import (
	"slices"
	"sort"
	"strconv"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/stracksim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// CompatProfiles lists the values of the top-level `compat` field.
var CompatProfiles = []string{"stracksim"}

// compat checks a scenario under a compatibility profile and builds the
// profile's configuration. The profile replaces hosts, switches and
// transports as a whole, so every setting it does not honour is an error
// rather than silently ignored.
func (l *loader) compat(s *Scenario, topo *topologies.Topology) (hostsim.Config, *stracksim.Config, error) {
	tc := hostsim.DefaultConfig()
	if !slices.Contains(CompatProfiles, s.Compat) {
		return tc, nil, l.errf("compat", "unknown profile %q (known: %v)", s.Compat, CompatProfiles)
	}
	t := &s.Transport
	if t.CC == "" {
		return tc, nil, l.errf("transport.cc", "the stracksim profile needs cc simpletcp or strack")
	}
	p, err := stracksim.ParseProtocol(t.CC)
	if err != nil {
		return tc, nil, l.errf("transport.cc", "%v", err)
	}
	c := stracksim.DefaultConfig(p)
	for _, x := range []struct {
		path string
		set  bool
	}{
		{"transport.recovery", t.Recovery != ""}, {"transport.dup_thresh", t.DupThresh != 0},
		{"transport.ecn", t.ECN}, {"transport.ecn_echo", t.ECNEcho != ""}, {"transport.sack", t.SACK != nil},
		{"transport.delayed_ack", t.DelayedAck != nil}, {"transport.tso_segments", t.TSOSegments != 0},
		{"transport.pacing", t.Pacing != nil}, {"transport.rwnd", t.RWnd != 0}, {"transport.strack", t.STrack != nil},
		{"transport.rto.min", t.RTO.Min != 0}, {"transport.rto.max", t.RTO.Max != 0},
		{"transport.rto.initial", t.RTO.Initial != 0}, {"transport.rto.backoff", t.RTO.Backoff != nil},
		{"switch.flowlet_gap", s.Switch.FlowletGap != 0}, {"switch.classes", len(s.Switch.Classes) > 0},
		{"switch.control_class", s.Switch.ControlClass != nil}, {"switch.pfc", s.Switch.PFC != nil},
		{"switch.shared_buffer", s.Switch.SharedBuffer != nil}, {"switch.trim", s.Switch.Trim != nil},
		{"switch.cut_through", s.Switch.CutThrough != nil}, {"switch.int", s.Switch.INT != nil},
		{"switch.modules", s.Switch.Modules != nil},
		{"impairments", len(s.Impairments) > 0}, {"placement", s.Placement != nil},
		{"output.pcap", s.Output.Pcap != nil}, {"output.queues", s.Output.Queues != nil},
	} {
		if x.set {
			return tc, nil, l.errf(x.path, "not part of the stracksim profile (it has STrack-Sim's semantics as a whole; docs/scenario.md, compat)")
		}
	}
	switch s.Switch.Forwarding {
	case "", "ecmp", "spray":
	default:
		return tc, nil, l.errf("switch.forwarding", "the stracksim profile forwards on single paths (ecmp or spray), not %q", s.Switch.Forwarding)
	}
	if t.Header != nil && *t.Header != 0 {
		return tc, nil, l.errf("transport.header", "the stracksim profile's packets have no header bytes, got %d", int64(*t.Header))
	}
	if t.MTU != 0 {
		c.DataSize = int32(min(int64(t.MTU), MaxMTU+1))
	}
	if t.AckSize != 0 {
		c.AckSize = int32(min(int64(t.AckSize), MaxMTU+1))
	}
	if c.DataSize > MaxMTU || c.AckSize > MaxMTU {
		return tc, nil, l.errf("transport.mtu", "mtu and ack_size must be at most %d bytes", MaxMTU)
	}
	if t.InitCwnd < 0 || t.InitCwnd > MaxInitCwnd {
		return tc, nil, l.errf("transport.init_cwnd", "must be between 1 and %d, got %d", MaxInitCwnd, t.InitCwnd)
	}
	if t.InitCwnd > 0 {
		c.InitCwnd = int32(t.InitCwnd)
	}
	switch t.RTO.Mode {
	case "", "fixed":
	default:
		return tc, nil, l.errf("transport.rto.mode", "the stracksim profile's timeout is fixed, not %q", t.RTO.Mode)
	}
	if t.RTO.Value < 0 || sim.Time(t.RTO.Value)%sim.Nanosecond != 0 {
		return tc, nil, l.errf("transport.rto.value", "must be a positive whole number of nanoseconds (STrack-Sim's clock), got %v", sim.Time(t.RTO.Value))
	}
	if t.RTO.Value > 0 {
		c.RTO = sim.Time(t.RTO.Value)
	}
	keys := make([]string, 0, len(t.Options))
	for k := range t.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := strconv.Atoi(t.Options[k])
		if err != nil || v < 1 || v > MaxInitCwnd {
			return tc, nil, l.errf("transport.options."+k, "expected a window in packets between 1 and %d, got %q", MaxInitCwnd, t.Options[k])
		}
		switch k {
		case "max_cwnd":
			c.MaxCwnd = int32(v)
		case "min_cwnd":
			c.MinCwnd = int32(v)
		case "ssthresh":
			c.Ssthresh = int32(v)
		default:
			return tc, nil, l.errf("transport.options."+k, "the stracksim profile takes max_cwnd, min_cwnd and ssthresh")
		}
	}
	if c.InitCwnd < c.MinCwnd || c.InitCwnd > c.MaxCwnd {
		// Name the field the scenario gave (init_cwnd, or the option
		// that moved a bound past the default initial window).
		path := "transport.init_cwnd"
		switch {
		case t.InitCwnd > 0:
		case c.InitCwnd > c.MaxCwnd:
			path = "transport.options.max_cwnd"
		default:
			path = "transport.options.min_cwnd"
		}
		return tc, nil, l.errf(path, "the stracksim profile needs min_cwnd <= init_cwnd <= max_cwnd (packets), got %d <= %d <= %d",
			c.MinCwnd, c.InitCwnd, c.MaxCwnd)
	}
	if err := c.Validate(); err != nil {
		return tc, nil, l.errf("transport", "%v", err)
	}
	for i := range topo.Links {
		q := topo.Links[i].Queue
		if q.ECN.Mode == topologies.ECNRED || q.ECN.Dequeue {
			return tc, nil, l.errf("topology", "the stracksim profile marks by a step threshold on arrival (ecn mode step or off, on arrival)")
		}
		if topo.Links[i].Delay%sim.Nanosecond != 0 {
			return tc, nil, l.errf("topology", "link delays must be whole nanoseconds under the stracksim profile (STrack-Sim's clock), got %v", topo.Links[i].Delay)
		}
	}
	tc.CC.CC = p.String()
	tc.CC.Recovery = ""
	tc.MTU, tc.Header, tc.AckSize = int64(c.DataSize), 0, int64(c.AckSize)
	tc.CC.MSS, tc.CC.InitCwnd = tc.MTU, int64(c.InitCwnd)
	return tc, &c, nil
}

// strackVariant applies transport.strack.variant: htsim-pr4 runs STrack as
// its authors' htsim code does (cc.StrackPR4, cc.GoBackNRecovery): a
// marked entropy is skipped for max(1, initial window / N) turns, the
// sender holds back while its NIC queue has more than 2 packets, and the
// RTO (unless transport.rto is given) is 1 ms, fixed, doubling at every
// expiry and never reset. Today's STrack settings do not apply to it.
func (l *loader) strackVariant(t *Transport, st *STrack, c *hostsim.Config, hc *hostsim.STrackConfig, sc *cc.StrackConfig) error {
	if !slices.Contains(cc.StrackVariants, st.Variant) {
		return l.errf("transport.strack.variant", "unknown variant %q (known: htsim-pr4)", st.Variant)
	}
	sc.Variant = st.Variant
	if st.Variant == "" {
		if st.CCEnabled != nil {
			return l.errf("transport.strack.cc_enabled", "only for variant htsim-pr4")
		}
		return nil
	}
	for _, x := range []struct {
		path string
		set  bool
	}{{"alpha", st.Alpha != nil}, {"beta", st.Beta != nil}, {"max_mdf", st.MaxMDF != nil},
		{"base_target", st.BaseTarget != 0}, {"per_hop", st.PerHop != nil}, {"min_cwnd", st.MinCwnd != 0},
		{"max_cwnd", st.MaxCwnd != 0}, {"reo_wnd", st.ReoWnd != 0}} {
		if x.set {
			return l.errf("transport.strack."+x.path, "not used by variant htsim-pr4 (its constants are the code's; the initial window is also the maximum)")
		}
	}
	if hc.Mode != hostsim.PathSkip {
		return l.errf("transport.strack.paths", "variant htsim-pr4 skips marked paths (skip), not %q", st.Paths)
	}
	if st.CCEnabled != nil {
		sc.PR4.CCEnabled = *st.CCEnabled
	}
	hc.SkipRounds = max(1, int(c.CC.InitCwnd)/hc.Entropies)
	c.HoldBack = 2
	if t.RTO == (RTO{}) {
		c.RTO = cc.RTOConfig{Mode: cc.RTOFixed, Fixed: sim.Millisecond, Backoff: true, KeepBackoff: true}
	}
	return nil
}

// compatFlows checks the flows a workload made against the stracksim
// profile: starts on STrack-Sim's nanosecond clock and no dependencies
// between flows (the profile's World starts every flow at its time).
func (l *loader) compatFlows(flows []hostsim.FlowSpec) error {
	for i := range flows {
		f := &flows[i]
		if f.Start%sim.Nanosecond != 0 {
			return l.errf("workload", "flow %d starts at %v: the stracksim profile needs whole nanoseconds (STrack-Sim's clock)", f.ID, f.Start)
		}
		if f.Need > 0 || f.Next != nil {
			return l.errf("workload", "flow %d depends on other flows: dependencies are not part of the stracksim profile", f.ID)
		}
	}
	return nil
}
