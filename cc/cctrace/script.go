package cctrace

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// Option is a module-specific setting, `option key=value` in a script. The
// builder decides what it means.
type Option struct {
	Key, Value string
	Line       int // where the script set it
}

// Header is a script's set-up: which modules, with what parameters.
type Header struct {
	// CC holds the names and numbers cc.NewController and cc.NewRecovery
	// take.
	CC cc.Config
	// Size is the flow's length in bytes.
	Size uint64
	RTO  cc.RTOConfig
	// ECN: the sender responds to ECE (default on).
	ECN bool
	// AutoSend: each ACK and timer expiry ends by sending (default on).
	AutoSend bool
	// Options are passed to the builder, in script order.
	Options []Option
	// Header is the bytes of headers per packet that pacing counts.
	Header int64
	// Hops is the flow's path length (`hops N`), for hop-aware
	// controllers; LineRate and BaseRTT (`link RATE RTT`) are the host's
	// line rate and the flow's base RTT, for link-aware ones (HPCC).
	Hops     int
	LineRate sim.Bandwidth
	BaseRTT  sim.Time
	// Pacing is the endpoint's pacing (header `pacing`, introspect.go).
	Pacing cc.PacingConfig
	// Paths, from a `paths` line, gives the endpoint a path manager.
	Paths *cc.PathConfig
}

// stepKind is what a step does.
type stepKind uint8

const (
	stepSend stepKind = 1 + iota
	stepAck
	stepDupAck
	stepRTT
	stepAdvance
	stepRTO
	stepLose
	stepExpect
	stepCNP
	stepNak
	stepNack
)

// Step is one line of a script's body.
type Step struct {
	Line int
	Text string // the line without its comment
	kind stepKind

	n    int             // send: segment limit; dupack: count
	ack  uint64          // ack
	sack []sim.SackBlock // ack, dupack
	ece  bool            // ack, dupack
	rtt  sim.Time        // ack (rtt=), rtt
	dur  sim.Time        // advance
	lose sim.SackBlock   // lose
	want []expectation   // expect

	// ack echo=SEQ [nack=BITS]: a per-packet (STrack) ACK naming the data
	// packet it answers, with the receiver's bitmap of segments that
	// arrived after the cumulative ACK (cc.AckInfo Echo, Nack, Bitmap).
	echo    uint64
	echoSet bool
	nack    bool
	bitmap  uint64
	// ack sackmap=BITS: UET's SACK bitmap, whose first segment is
	// max(echo/MSS - 63, ack/MSS + 1) (cc.UETRecovery).
	sackmap bool
	// ack ev=K, nack ev=K: the entropy echoed; nack SEQ [lasthop]: a trim
	// NACK of the packet at SEQ (ack holds SEQ).
	ev      uint16
	lastHop bool

	// ack int=Q:TX:TS:RATE/... ep=D: the INT records the ACK echoes (one
	// per hop: queue bytes, transmitted bytes, timestamp, link rate) and
	// the endpoint delay it reports (sim.Telemetry).
	tel *sim.Telemetry
}

// expectation is one key=value of an expect line.
type expectation struct{ key, value string }

// Script is a parsed trace script.
type Script struct {
	Name   string
	Header Header
	Steps  []Step
}

// expectKeys are the keys an expect line may test (introspect.go adds its
// own).
var expectKeys = append([]string{"time", "cwnd", "segs", "ssthresh", "state", "alpha", "pipe",
	"flight", "una", "nxt", "recovery", "rto", "timer", "sent", "retx", "done",
	"rate", "target_rate", "tc", "bc", "bytes", "cctimer", "evs", "ar"}, introspectKeys...)

// probePrefix starts an expect key that reads a controller value by name
// (cc.Prober): `expect ctl.u=0.95`.
const probePrefix = "ctl."

// ParseError is a script that cannot be read.
type ParseError struct {
	Name string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg) }

// DefaultHeader is what a script gets for the lines it leaves out: the
// registry's default modules and numbers (cc.DefaultConfig), a 1 MB flow,
// the default RFC 6298 RTO (cc.DefaultRTOConfig), ECN on, AutoSend on.
func DefaultHeader() Header {
	return Header{CC: cc.DefaultConfig(), Size: 1_000_000, RTO: cc.DefaultRTOConfig(),
		ECN: true, AutoSend: true}
}

// Parse reads a script. name is used in error messages.
func Parse(name string, src []byte) (*Script, error) {
	s := &Script{Name: name, Header: DefaultHeader()}
	inBody := false
	for i, raw := range strings.Split(string(src), "\n") {
		line := i + 1
		text := raw
		if k := strings.IndexByte(text, '#'); k >= 0 {
			text = text[:k]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		f := strings.Fields(text)
		perr := func(format string, a ...any) error {
			return &ParseError{Name: name, Line: line, Msg: fmt.Sprintf(format, a...)}
		}
		if isHeaderLine(f) {
			if inBody {
				return nil, perr("%q is a header line: it must come before the first step", f[0])
			}
			if err := s.Header.parse(f, line); err != nil {
				return nil, perr("%s", err)
			}
			continue
		}
		inBody = true
		st, err := parseStep(f)
		if err != nil {
			return nil, perr("%s", err)
		}
		st.Line, st.Text = line, strings.Join(f, " ")
		s.Steps = append(s.Steps, st)
	}
	return s, nil
}

// isHeaderLine tells header lines from steps. `rto` is both: with a mode
// it configures the timer, alone it fires it.
func isHeaderLine(f []string) bool {
	if isIntrospectHeader(f) {
		return true
	}
	switch f[0] {
	case "cc", "recovery", "mss", "init_cwnd", "size", "dupthresh", "ecn", "autosend", "option", "hops", "link",
		"header", "paths":
		return true
	case "rto":
		return len(f) > 1
	}
	return false
}

// parse reads one header line.
func (h *Header) parse(f []string, line int) error {
	arg1 := func() (string, error) {
		if len(f) != 2 {
			return "", fmt.Errorf("%s: want one value, got %d", f[0], len(f)-1)
		}
		return f[1], nil
	}
	switch f[0] {
	case "cc", "recovery":
		v, err := arg1()
		if err != nil {
			return err
		}
		if f[0] == "cc" {
			h.CC.CC = v
		} else {
			h.CC.Recovery = v
		}
	case "mss", "init_cwnd", "size", "dupthresh":
		v, err := arg1()
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("%s: want a positive integer, got %q", f[0], v)
		}
		switch f[0] {
		case "mss":
			h.CC.MSS = n
		case "init_cwnd":
			h.CC.InitCwnd = n
		case "size":
			h.Size = uint64(n)
		default:
			h.CC.DupThresh = int(n)
		}
	case "ecn", "autosend":
		v, err := arg1()
		if err != nil {
			return err
		}
		b, err := parseOnOff(f[0], v)
		if err != nil {
			return err
		}
		if f[0] == "ecn" {
			h.ECN = b
		} else {
			h.AutoSend = b
		}
	case "rto":
		return h.parseRTO(f[1:])
	case "hops":
		v, err := arg1()
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 255 {
			return fmt.Errorf("hops: want 0..255, got %q", v)
		}
		h.Hops = n
	case "link":
		if len(f) != 3 {
			return fmt.Errorf("link: want RATE RTT (100Gbps 10us)")
		}
		r, err := parseRate(f[1])
		if err != nil {
			return fmt.Errorf("link: %v", err)
		}
		d, err := parseDuration(f[2])
		if err != nil || d <= 0 {
			return fmt.Errorf("link: want a positive base RTT, got %q", f[2])
		}
		h.LineRate, h.BaseRTT = r, d
	case "header":
		v, err := arg1()
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("header: want a non-negative integer, got %q", v)
		}
		h.Header = n
	case "max_ack_delay", "pacing":
		return h.parseIntrospectHeader(f)
	case "paths":
		return h.parsePaths(f[1:])
	case "option":
		if len(f) < 2 {
			return fmt.Errorf("option: want key=value")
		}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return fmt.Errorf("option: want key=value, got %q", kv)
			}
			h.Options = append(h.Options, Option{Key: k, Value: v, Line: line})
		}
	}
	return nil
}

// parseRTO reads `rto fixed D [backoff=on]` or `rto rfc6298 [initial=D]
// [min=D] [max=D] [granularity=D] [backoff=on|off]`.
func (h *Header) parseRTO(f []string) error {
	if len(f) == 0 {
		return fmt.Errorf("rto: want `fixed DURATION` or `rfc6298 [key=value ...]`")
	}
	var c cc.RTOConfig
	rest := f[1:]
	switch f[0] {
	case "fixed":
		if len(rest) == 0 {
			return fmt.Errorf("rto fixed: want a duration")
		}
		d, err := parseDuration(rest[0])
		if err != nil {
			return fmt.Errorf("rto fixed: %v", err)
		}
		c = cc.RTOConfig{Mode: cc.RTOFixed, Fixed: d}
		rest = rest[1:]
	case "rfc6298":
		c = cc.DefaultRTOConfig()
	default:
		return fmt.Errorf("rto: unknown mode %q (known: fixed, rfc6298)", f[0])
	}
	for _, kv := range rest {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("rto: want key=value, got %q", kv)
		}
		if k == "backoff" {
			b, err := parseOnOff("rto backoff", v)
			if err != nil {
				return err
			}
			c.Backoff = b
			continue
		}
		if c.Mode == cc.RTOFixed && k != "max" {
			return fmt.Errorf("rto fixed: unknown key %q (known: backoff, max)", k)
		}
		d, err := parseDuration(v)
		if err != nil {
			return fmt.Errorf("rto %s: %v", k, err)
		}
		switch k {
		case "initial":
			c.Initial = d
		case "min":
			c.Min = d
		case "max":
			c.Max = d
		case "granularity":
			c.Granularity = d
		default:
			return fmt.Errorf("rto rfc6298: unknown key %q (known: initial, min, max, granularity, backoff)", k)
		}
	}
	if err := c.Validate(); err != nil {
		return err
	}
	h.RTO = c
	return nil
}

// parsePaths reads `paths MODE [entropies=N] [shuffle=on|off]
// [reps_buffer=B] [reps_freeze=D]`.
func (h *Header) parsePaths(f []string) error {
	if len(f) == 0 {
		return fmt.Errorf("paths: want a mode (skip, reuse, oblivious, bitmap, reps, mixed)")
	}
	m, err := cc.ParsePathMode(f[0])
	if err != nil || f[0] == "" {
		return fmt.Errorf("paths: unknown mode %q (known: skip, reuse, oblivious, bitmap, reps, mixed)", f[0])
	}
	pc := cc.PathConfig{Mode: m, Entropies: 8}
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("paths: want key=value, got %q", kv)
		}
		switch k {
		case "entropies", "reps_buffer":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1<<15 {
				return fmt.Errorf("paths %s: want an integer in [1, 32768], got %q", k, v)
			}
			if k == "entropies" {
				pc.Entropies = n
			} else {
				pc.REPSBuffer = n
			}
		case "shuffle":
			b, err := parseOnOff("paths shuffle", v)
			if err != nil {
				return err
			}
			pc.NoShuffle = !b
		case "reps_freeze":
			d, err := parseDuration(v)
			if err != nil {
				return fmt.Errorf("paths %s: %v", k, err)
			}
			pc.REPSFreeze = d
		default:
			return fmt.Errorf("paths: unknown key %q (known: entropies, shuffle, reps_buffer, reps_freeze)", k)
		}
	}
	if m.UET() && pc.Entropies&(pc.Entropies-1) != 0 {
		return fmt.Errorf("paths %s: entropies must be a power of two, got %d", f[0], pc.Entropies)
	}
	h.Paths = &pc
	return nil
}

func parseOnOff(what, v string) (bool, error) {
	switch v {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("%s: want on or off, got %q", what, v)
}

// parseStep reads one body line.
func parseStep(f []string) (Step, error) {
	var st Step
	args := f[1:]
	switch f[0] {
	case "send":
		st.kind = stepSend
		for _, a := range args {
			v, ok := strings.CutPrefix(a, "n=")
			if !ok {
				return st, fmt.Errorf("send: unknown argument %q (known: n=N)", a)
			}
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return st, fmt.Errorf("send: n wants a positive integer, got %q", v)
			}
			st.n = n
		}
	case "ack", "dupack":
		st.kind = stepAck
		st.n = 1
		if f[0] == "ack" {
			if len(args) == 0 {
				return st, fmt.Errorf("ack: want the cumulative ACK number")
			}
			n, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil {
				return st, fmt.Errorf("ack: want a byte number, got %q", args[0])
			}
			st.ack = n
			args = args[1:]
		} else {
			st.kind = stepDupAck
		}
		for _, a := range args {
			if err := st.parseAckArg(f[0], a); err != nil {
				return st, err
			}
		}
		if (st.nack || st.sackmap) && !st.echoSet {
			return st, fmt.Errorf("ack: nack= and sackmap= need echo= (the bitmap rides on an ACK naming its packet)")
		}
		if st.nack && st.sackmap {
			return st, fmt.Errorf("ack: nack= (STrack's bitmap) and sackmap= (UET's) exclude each other")
		}
	case "nack":
		st.kind = stepNack
		if len(args) == 0 {
			return st, fmt.Errorf("nack: want the first byte of the trimmed packet")
		}
		n, err := strconv.ParseUint(args[0], 10, 64)
		if err != nil {
			return st, fmt.Errorf("nack: want a byte number, got %q", args[0])
		}
		st.ack = n
		for _, a := range args[1:] {
			switch {
			case a == "lasthop":
				st.lastHop = true
			case a == "ece":
				st.ece = true
			case strings.HasPrefix(a, "ev="), strings.HasPrefix(a, "rtt="):
				if err := st.parseAckArg("nack", a); err != nil {
					return st, err
				}
			default:
				return st, fmt.Errorf("nack: unknown argument %q (known: ev=K, rtt=D, lasthop, ece)", a)
			}
		}
	case "rtt", "advance":
		if len(args) != 1 {
			return st, fmt.Errorf("%s: want one duration", f[0])
		}
		d, err := parseDuration(args[0])
		if err != nil {
			return st, fmt.Errorf("%s: %v", f[0], err)
		}
		if f[0] == "rtt" {
			if d <= 0 {
				return st, fmt.Errorf("rtt: want a positive duration, got %v", d)
			}
			st.kind, st.rtt = stepRTT, d
		} else {
			st.kind, st.dur = stepAdvance, d
		}
	case "rto":
		if len(args) != 0 {
			return st, fmt.Errorf("rto: takes no arguments (as a step it fires the timer)")
		}
		st.kind = stepRTO
	case "cnp":
		if len(args) != 0 {
			return st, fmt.Errorf("cnp: takes no arguments")
		}
		st.kind = stepCNP
	case "nak":
		if len(args) == 0 {
			return st, fmt.Errorf("nak: want the expected sequence number")
		}
		n, err := strconv.ParseUint(args[0], 10, 64)
		if err != nil {
			return st, fmt.Errorf("nak: want a byte number, got %q", args[0])
		}
		st.kind, st.ack, st.n = stepNak, n, 1
		for _, a := range args[1:] {
			if !strings.HasPrefix(a, "sack=") && !strings.HasPrefix(a, "rtt=") {
				return st, fmt.Errorf("nak: unknown argument %q (known: sack=A-B, rtt=D)", a)
			}
			if err := st.parseAckArg("nak", a); err != nil {
				return st, err
			}
		}
	case "lose":
		if len(args) != 1 {
			return st, fmt.Errorf("lose: want one byte range START-END")
		}
		b, err := parseRange(args[0])
		if err != nil {
			return st, fmt.Errorf("lose: %v", err)
		}
		st.kind, st.lose = stepLose, b
	case "expect":
		st.kind = stepExpect
		if len(args) == 0 {
			return st, fmt.Errorf("expect: want key=value ... (keys: %s)", strings.Join(expectKeys, ", "))
		}
		for _, a := range args {
			k, v, ok := strings.Cut(a, "=")
			if !ok || v == "" {
				return st, fmt.Errorf("expect: want key=value, got %q", a)
			}
			known := strings.HasPrefix(k, probePrefix) && len(k) > len(probePrefix)
			for _, x := range expectKeys {
				known = known || x == k
			}
			if !known {
				return st, fmt.Errorf("expect: unknown key %q (keys: %s)", k, strings.Join(expectKeys, ", "))
			}
			st.want = append(st.want, expectation{k, v})
		}
	default:
		return st, fmt.Errorf("unknown step %q (steps: send, ack, dupack, nack, nak, cnp, rtt, advance, rto, lose, expect)", f[0])
	}
	return st, nil
}

// parseAckArg reads one of sack=A-B,C-D, ece, rtt=D, echo=SEQ and
// nack=BITS (ack only), xN (dupack only).
func (st *Step) parseAckArg(step, a string) error {
	switch {
	case a == "ece":
		st.ece = true
	case strings.HasPrefix(a, "sack="):
		for _, r := range strings.Split(strings.TrimPrefix(a, "sack="), ",") {
			b, err := parseRange(r)
			if err != nil {
				return fmt.Errorf("%s: sack: %v", step, err)
			}
			st.sack = append(st.sack, b)
		}
		if len(st.sack) > sim.MaxSackBlocks {
			return fmt.Errorf("%s: at most %d SACK blocks, got %d", step, sim.MaxSackBlocks, len(st.sack))
		}
	case strings.HasPrefix(a, "rtt="):
		d, err := parseDuration(strings.TrimPrefix(a, "rtt="))
		if err != nil || d <= 0 {
			return fmt.Errorf("%s: rtt wants a positive duration, got %q", step, a)
		}
		st.rtt = d
	case step == "ack" && strings.HasPrefix(a, "echo="):
		n, err := strconv.ParseUint(strings.TrimPrefix(a, "echo="), 10, 64)
		if err != nil {
			return fmt.Errorf("ack: echo wants the first byte of the packet acknowledged, got %q", a)
		}
		st.echo, st.echoSet = n, true
	case step == "ack" && strings.HasPrefix(a, "nack="):
		// Base prefixes are allowed: nack=0b110, nack=0x6, nack=6.
		n, err := strconv.ParseUint(strings.TrimPrefix(a, "nack="), 0, 64)
		if err != nil || n&1 != 0 {
			return fmt.Errorf("ack: nack wants a 64-bit bitmap with bit 0 (the next expected segment) clear, got %q", a)
		}
		st.nack, st.bitmap = true, n
	case step == "ack" && strings.HasPrefix(a, "sackmap="):
		n, err := strconv.ParseUint(strings.TrimPrefix(a, "sackmap="), 0, 64)
		if err != nil {
			return fmt.Errorf("ack: sackmap wants a 64-bit bitmap, got %q", a)
		}
		st.sackmap, st.bitmap = true, n
	case strings.HasPrefix(a, "ev="):
		n, err := strconv.ParseUint(strings.TrimPrefix(a, "ev="), 0, 16)
		if err != nil {
			return fmt.Errorf("%s: ev wants a 16-bit entropy, got %q", step, a)
		}
		st.ev = uint16(n)
	case step == "ack" && strings.HasPrefix(a, "int="):
		if st.tel == nil {
			st.tel = &sim.Telemetry{}
		}
		for _, hop := range strings.Split(strings.TrimPrefix(a, "int="), "/") {
			h, err := parseHop(hop)
			if err != nil {
				return fmt.Errorf("ack: int: %v", err)
			}
			if !st.tel.PushHop(h) {
				return fmt.Errorf("ack: int: at most %d hops", sim.MaxINTHops)
			}
		}
	case step == "ack" && strings.HasPrefix(a, "ep="):
		d, err := parseDuration(strings.TrimPrefix(a, "ep="))
		if err != nil {
			return fmt.Errorf("ack: ep wants a duration, got %q", a)
		}
		if st.tel == nil {
			st.tel = &sim.Telemetry{}
		}
		st.tel.EndpointDelay = d
	case step == "dupack" && strings.HasPrefix(a, "x"):
		n, err := strconv.Atoi(a[1:])
		if err != nil || n <= 0 {
			return fmt.Errorf("dupack: want xN with N a positive count, got %q", a)
		}
		st.n = n
	default:
		return fmt.Errorf("%s: unknown argument %q", step, a)
	}
	return nil
}

// parseHop reads one INT record QLEN:TXBYTES:TS:RATE (bytes, bytes, a
// duration, a rate).
func parseHop(s string) (sim.INTHop, error) {
	f := strings.Split(s, ":")
	if len(f) != 4 {
		return sim.INTHop{}, fmt.Errorf("want QLEN:TXBYTES:TS:RATE, got %q", s)
	}
	q, err1 := strconv.ParseInt(f[0], 10, 64)
	tx, err2 := strconv.ParseUint(f[1], 10, 64)
	ts, err3 := parseDuration(f[2])
	r, err4 := parseRate(f[3])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || q < 0 {
		return sim.INTHop{}, fmt.Errorf("want QLEN:TXBYTES:TS:RATE, got %q", s)
	}
	return sim.INTHop{QLen: q, TxBytes: tx, TS: ts, Rate: r}, nil
}

// parseRange reads START-END, a byte range [START, END).
func parseRange(s string) (sim.SackBlock, error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return sim.SackBlock{}, fmt.Errorf("want START-END, got %q", s)
	}
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || x >= y {
		return sim.SackBlock{}, fmt.Errorf("want START-END with START < END, got %q", s)
	}
	return sim.SackBlock{Start: x, End: y}, nil
}

// timeUnits are the units a duration may carry.
var timeUnits = []struct {
	suffix string
	unit   sim.Time
}{{"ps", sim.Picosecond}, {"ns", sim.Nanosecond}, {"us", sim.Microsecond},
	{"ms", sim.Millisecond}, {"s", sim.Second}}

// parseDuration reads "0" or a decimal number with a unit ps, ns, us, ms or
// s ("100us", "1.5ms"). The value must be a whole number of picoseconds.
func parseDuration(s string) (sim.Time, error) {
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

// rateUnits are the units a rate may carry.
var rateUnits = []struct {
	suffix string
	scale  int64
}{{"Tbps", 1e12}, {"Gbps", 1e9}, {"Mbps", 1e6}, {"Kbps", 1e3}, {"bps", 1}}

// parseRate reads a positive rate: a decimal and a unit, Tbps, Gbps, Mbps,
// Kbps or bps ("100Gbps", "9.484434687Gbps"), a whole number of bits per
// second.
func parseRate(s string) (sim.Bandwidth, error) {
	bad := fmt.Errorf("bad rate %q (a positive decimal with Tbps, Gbps, Mbps, Kbps or bps, whole in bit/s)", s)
	for _, u := range rateUnits {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		whole, frac, _ := strings.Cut(num, ".")
		w, err := strconv.ParseInt(whole, 10, 64)
		if err != nil || w < 0 || w > (1<<62)/u.scale {
			return 0, bad
		}
		r := w * u.scale
		scale := u.scale
		for _, c := range frac {
			if c < '0' || c > '9' || scale%10 != 0 {
				return 0, bad
			}
			scale /= 10
			r += int64(c-'0') * scale
		}
		if r <= 0 {
			return 0, bad
		}
		return sim.Bandwidth(r), nil
	}
	return 0, bad
}
