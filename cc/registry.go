package cc

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/lockstep-sim/lockstep/sim"
)

// Config selects and parameterises the modules of one flow.
type Config struct {
	// CC names the Controller: "reno".
	CC string
	// Recovery names the Recovery: "reno" (cumulative ACK, 3 dup ACKs).
	Recovery string
	// MSS is the payload of a full segment in bytes.
	MSS int64
	// InitCwnd is the initial window in segments (RFC 6928 allows 10).
	InitCwnd int64
	// DupThresh is the duplicate-ACK threshold (RFC 5681: 3).
	DupThresh int
	// MaxAckDelay is the receiver's delayed-ACK timeout, 0 when it ACKs at
	// once (RACK's TLP adds it to the probe timeout, RFC 8985 §7.2).
	MaxAckDelay sim.Time
	// Strack parameterises the "strack" controller (nil: defaults).
	Strack *StrackConfig
	// NSCC parameterises the "nscc" controller (nil: DefaultNSCCConfig);
	// its Options override it key by key (nsccOptions).
	NSCC *NSCCConfig
	// PacketRTO is the per-packet timeout of a recovery that times packets
	// out one by one ("uet"): a fixed RTO, set from the transport's.
	PacketRTO sim.Time
	// Options are module-specific settings as key=value text, checked by
	// the module's constructor (an unknown key is an error): cubic
	// hystart=, hystart_hz=, slow_start=, fast_convergence=,
	// tcp_friendliness=; scalable
	// variant=kelly|linux; dctcp g=, init_alpha=; dcqcn profile= and its
	// parameters (dcqcnOptions); nscc the NSCCConfig fields (nsccOptions).
	Options map[string]string
}

// options parses a module's options: each key must be one of known.
type options struct {
	module string
	m      map[string]string
	used   map[string]bool
}

func newOptions(module string, m map[string]string) *options {
	return &options{module: module, m: m, used: map[string]bool{}}
}

func (o *options) str(key, def string) string {
	o.used[key] = true
	if v, ok := o.m[key]; ok {
		return v
	}
	return def
}

func (o *options) float(key string, def float64) (float64, error) {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, &OptionValueError{Module: o.module, Key: key, Err: fmt.Errorf("expected a number, got %q", v)}
	}
	return f, nil
}

func (o *options) integer(key string, def int) (int, error) {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, &OptionValueError{Module: o.module, Key: key, Err: fmt.Errorf("expected an integer, got %q", v)}
	}
	return n, nil
}

func (o *options) boolean(key string, def bool) (bool, error) {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, &OptionValueError{Module: o.module, Key: key, Err: fmt.Errorf("expected true or false, got %q", v)}
	}
	return b, nil
}

// micros reads a duration given in microseconds (a number).
func (o *options) micros(key string, def sim.Time) (sim.Time, error) {
	f, err := o.float(key, float64(def)/float64(sim.Microsecond))
	if err != nil {
		return 0, err
	}
	if !(f >= 0 && f <= 1e9) { // NaN too
		return 0, &OptionValueError{Module: o.module, Key: key, Err: fmt.Errorf("must be between 0 and 1e9 microseconds, got %g", f)}
	}
	return sim.Time(math.Round(f * float64(sim.Microsecond))), nil
}

// floats reads several float options into their destinations, in order.
func (o *options) floats(keys []string, dst ...*float64) error {
	for i, k := range keys {
		v, err := o.float(k, *dst[i])
		if err != nil {
			return err
		}
		*dst[i] = v
	}
	return nil
}

// done reports the first option no parser asked for, in sorted order.
func (o *options) done() error {
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !o.used[k] {
			return &UnknownOptionError{Module: o.module, Key: k}
		}
	}
	return nil
}

// OptionValueError is an option whose value the module refuses (a number
// that does not parse, or one out of range). Key is the option's name, as
// in Config.Options.
type OptionValueError struct {
	Module, Key string
	Err         error
}

func (e *OptionValueError) Error() string { return fmt.Sprintf("%s.%s: %v", e.Module, e.Key, e.Err) }

func (e *OptionValueError) Unwrap() error { return e.Err }

// UnknownOptionError is an option the module does not take.
type UnknownOptionError struct{ Module, Key string }

func (e *UnknownOptionError) Error() string {
	return fmt.Sprintf("%s: unknown option %q", e.Module, e.Key)
}

// DefaultConfig is Reno with cumulative-ACK recovery, RFC 6928's initial
// window of 10 segments and 1460-byte segments.
func DefaultConfig() Config {
	return Config{CC: "reno", Recovery: "reno", MSS: 1460, InitCwnd: 10, DupThresh: 3}
}

// Validate checks the names and the numbers.
func (c *Config) Validate() error {
	if _, err := NewController(*c); err != nil {
		return err
	}
	if _, err := NewRecovery(*c, 1); err != nil {
		return err
	}
	return nil
}

// ControllerNames lists the congestion controls NewController knows.
var ControllerNames = []string{"reno", "cubic", "scalable", "dctcp", "strack", "hpcc", "swift", "dcqcn", "nscc"}

// RecoveryNames lists the recoveries NewRecovery knows.
var RecoveryNames = []string{"reno", "newreno", "sack", "rack", "strack", "gbn", "sr", "uet"}

// NewController builds the Controller c names.
func NewController(c Config) (Controller, error) {
	if c.MSS <= 0 {
		return nil, fmt.Errorf("mss: must be positive, got %d", c.MSS)
	}
	if c.InitCwnd <= 0 {
		return nil, fmt.Errorf("init_cwnd: must be positive, got %d", c.InitCwnd)
	}
	o := newOptions(c.CC, c.Options)
	ctl, err := newController(c, o)
	if err != nil {
		return nil, err
	}
	if err := o.done(); err != nil {
		return nil, err
	}
	return ctl, nil
}

func newController(c Config, o *options) (Controller, error) {
	switch c.CC {
	case "reno":
		return NewReno(c.MSS, c.InitCwnd), nil
	case "cubic":
		cu := DefaultCubicConfig()
		cu.HyStart = o.str("hystart", cu.HyStart)
		cu.SlowStart = o.str("slow_start", cu.SlowStart)
		var err error
		if cu.HyStartHZ, err = o.integer("hystart_hz", cu.HyStartHZ); err != nil {
			return nil, err
		}
		if cu.FastConvergence, err = o.boolean("fast_convergence", cu.FastConvergence); err != nil {
			return nil, err
		}
		if cu.TCPFriendliness, err = o.boolean("tcp_friendliness", cu.TCPFriendliness); err != nil {
			return nil, err
		}
		if err := cu.Validate(); err != nil {
			return nil, err
		}
		return NewCubic(cu, c.MSS, c.InitCwnd), nil
	case "scalable":
		return NewScalable(o.str("variant", "kelly"), c.MSS, c.InitCwnd)
	case "dctcp":
		d := DefaultDCTCPConfig()
		var err error
		if d.G, err = o.float("g", d.G); err != nil {
			return nil, err
		}
		if d.InitAlpha, err = o.float("init_alpha", d.InitAlpha); err != nil {
			return nil, err
		}
		if err := d.Validate(); err != nil {
			return nil, err
		}
		return NewDCTCP(d, c.MSS, c.InitCwnd), nil
	case "strack":
		sc := DefaultStrackConfig(c.MSS)
		if c.Strack != nil {
			sc = *c.Strack
		}
		// `lockstep cc trace` selects the variant by options, a scenario by
		// transport.strack (which fills c.Strack).
		sc.Variant = o.str("variant", sc.Variant)
		var err error
		if sc.PR4.CCEnabled, err = o.boolean("cc_enabled", sc.PR4.CCEnabled); err != nil {
			return nil, err
		}
		if err := strackCheck(sc); err != nil {
			return nil, err
		}
		if sc.Variant == "htsim-pr4" {
			return NewStrackPR4(sc.PR4, c.MSS, c.InitCwnd), nil
		}
		return NewStrack(sc, c.MSS, c.InitCwnd), nil
	case "dcqcn":
		d, err := dcqcnOptions(o)
		if err != nil {
			return nil, err
		}
		return NewDCQCN(d), nil
	case "hpcc":
		return newHPCCFromOptions(c, o)
	case "swift":
		return newSwiftFromOptions(c, o)
	case "nscc":
		nc := DefaultNSCCConfig()
		if c.NSCC != nil {
			nc = *c.NSCC
		}
		if err := nsccOptions(o, &nc); err != nil {
			return nil, err
		}
		if err := nc.Validate(); err != nil {
			return nil, err
		}
		return NewNSCC(nc, c.MSS), nil
	}
	return nil, fmt.Errorf("cc: unknown congestion control %q (known: %v)", c.CC, ControllerNames)
}

// NewRecovery builds the Recovery c names for a flow of size bytes.
func NewRecovery(c Config, size uint64) (Recovery, error) {
	if c.MSS <= 0 {
		return nil, fmt.Errorf("mss: must be positive, got %d", c.MSS)
	}
	dt := c.DupThresh
	if dt == 0 {
		dt = 3
	}
	if dt < 1 {
		return nil, fmt.Errorf("dup_thresh: must be at least 1, got %d", c.DupThresh)
	}
	switch c.Recovery {
	case "reno":
		return NewRenoRecovery(c.MSS, size, dt), nil
	case "newreno":
		return NewNewRenoRecovery(c.MSS, size, dt), nil
	case "sack":
		return NewSackRecovery(c.MSS, size, dt), nil
	case "rack":
		rc := DefaultRackConfig()
		rc.DupThresh = dt
		rc.MaxAckDelay = c.MaxAckDelay
		if err := rc.Validate(); err != nil {
			return nil, err
		}
		return NewRackRecovery(c.MSS, size, rc), nil
	case "strack":
		if c.Strack != nil && c.Strack.Variant == "htsim-pr4" || c.Options["variant"] == "htsim-pr4" {
			return NewGoBackNRecovery(c.MSS, size), nil
		}
		r := NewStrackRecovery(c.MSS, size)
		if c.Strack != nil {
			r.ReoWnd = c.Strack.ReoWnd
		}
		return r, nil
	case "gbn":
		return NewRoCERecovery(NakGoBackN, c.MSS, size), nil
	case "sr":
		return NewRoCERecovery(NakSelective, c.MSS, size), nil
	case "uet":
		return NewUETRecovery(c.MSS, size, c.PacketRTO)
	}
	return nil, fmt.Errorf("recovery: unknown loss recovery %q (known: %v)", c.Recovery, RecoveryNames)
}

// newHPCCFromOptions builds HPCC from its options: eta, max_stage, w_ai
// (bytes), base_rtt_us, min_rate_gbps, nic_scheduled.
func newHPCCFromOptions(c Config, o *options) (Controller, error) {
	h := DefaultHPCCConfig()
	stage, rate := float64(h.MaxStage), float64(h.MinRate)/float64(sim.GbitPerSecond)
	if err := o.floats([]string{"eta", "max_stage", "w_ai", "min_rate_gbps"}, &h.Eta, &stage, &h.WAI, &rate); err != nil {
		return nil, err
	}
	if !(stage == math.Trunc(stage) && stage >= 0 && stage <= 1e6) {
		return nil, o.valueErr("max_stage", "want a whole number in [0, 1e6], got %g", stage)
	}
	if !(rate >= 0 && rate <= 1e6) {
		return nil, o.valueErr("min_rate_gbps", "want a number in [0, 1e6], got %g", rate)
	}
	h.MaxStage, h.MinRate = int(stage), sim.Bandwidth(rate*float64(sim.GbitPerSecond))
	var err error
	if h.BaseRTT, err = o.micros("base_rtt_us", 0); err != nil {
		return nil, err
	}
	if err := h.Validate(); err != nil {
		return nil, err
	}
	nic, err := o.boolean("nic_scheduled", false)
	if err != nil {
		return nil, err
	}
	if nic {
		return HPCCQueuePair{NewHPCC(h, c.MSS, c.InitCwnd)}, nil
	}
	return NewHPCC(h, c.MSS, c.InitCwnd), nil
}

// newSwiftFromOptions builds Swift from its options: ai, beta, max_mdf,
// fs_min, fs_max, min_cwnd, max_cwnd (packets), retx_reset, and the
// durations base_target_us, per_hop_us, fs_range_us, endpoint_target_us.
func newSwiftFromOptions(c Config, o *options) (Controller, error) {
	s := DefaultSwiftConfig()
	reset := float64(s.RetxReset)
	if err := o.floats([]string{"ai", "beta", "max_mdf", "fs_min", "fs_max", "min_cwnd", "max_cwnd", "retx_reset"},
		&s.AI, &s.Beta, &s.MaxMDF, &s.FSMin, &s.FSMax, &s.MinCwnd, &s.MaxCwnd, &reset); err != nil {
		return nil, err
	}
	if !(reset == math.Trunc(reset) && reset >= 1 && reset <= 1e6) {
		return nil, o.valueErr("retx_reset", "want a whole number in [1, 1e6], got %g", reset)
	}
	s.RetxReset = int(reset)
	// The other durations default from the base target, as htsim derives
	// them (fs_range = 5·base, h = base/6.55, endpoint target = base).
	var err error
	if s.BaseTarget, err = o.micros("base_target_us", s.BaseTarget); err != nil {
		return nil, err
	}
	b := s.BaseTarget
	for _, d := range []struct {
		key string
		v   *sim.Time
		def sim.Time
	}{{"per_hop_us", &s.PerHop, sim.Time(float64(b) / 6.55)}, {"fs_range_us", &s.FSRange, 5 * b},
		{"endpoint_target_us", &s.EndpointTarget, b}} {
		if *d.v, err = o.micros(d.key, d.def); err != nil {
			return nil, err
		}
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return NewSwift(s, c.MSS, c.InitCwnd), nil
}
