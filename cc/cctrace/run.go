package cctrace

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// Builder makes the modules a script names. opts are the script's
// `option` lines; a builder must reject the ones it does not know.
type Builder func(cfg cc.Config, opts []Option, size uint64) (cc.Controller, cc.Recovery, error)

// OptionError is an option a builder refused.
type OptionError struct {
	Option Option
	Err    error
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("option %s=%s: %v", e.Option.Key, e.Option.Value, e.Err)
}

func (e *OptionError) Unwrap() error { return e.Err }

// RegistryBuilder builds modules by name through cc.NewController and
// cc.NewRecovery, so every name the registry knows can be traced.
func RegistryBuilder(cfg cc.Config, opts []Option, size uint64) (cc.Controller, cc.Recovery, error) {
	if len(opts) > 0 {
		cfg.Options = make(map[string]string, len(opts))
		for _, o := range opts {
			cfg.Options[o.Key] = o.Value
		}
	}
	ctl, err := cc.NewController(cfg)
	if err != nil {
		key := ""
		var ue *cc.UnknownOptionError
		var ve *cc.OptionValueError
		switch {
		case errors.As(err, &ue):
			key = ue.Key
		case errors.As(err, &ve):
			key = ve.Key
		}
		for _, o := range opts {
			if key != "" && o.Key == key {
				return nil, nil, &OptionError{Option: o, Err: err}
			}
		}
		return nil, nil, err
	}
	rec, err := cc.NewRecovery(cfg, size)
	if err != nil {
		return nil, nil, err
	}
	return ctl, rec, nil
}

// Failure is one expect that did not hold.
type Failure struct {
	Line int
	Text string // the expect line
	Msg  string // want vs got
}

// ExpectError lists the expects of a run that did not hold.
type ExpectError struct {
	Name     string
	Failures []Failure
}

func (e *ExpectError) Error() string {
	var b strings.Builder
	for i, f := range e.Failures {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s:%d: %s: %s", e.Name, f.Line, f.Text, f.Msg)
	}
	return b.String()
}

// StepError is a step that cannot be carried out (an ACK for bytes never
// sent, a timer that is not armed ...). The run stops there.
type StepError struct {
	Name string
	Line int
	Msg  string
}

func (e *StepError) Error() string { return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg) }

// alphaer is a controller that reports an estimate of the marked fraction
// (DCTCP's alpha).
type alphaer interface{ Alpha() float64 }

// alphaAter is a controller whose alpha moves with time between events
// (DCQCN's decay, eq. 2): the table shows it at the step's time.
type alphaAter interface{ AlphaAt(now sim.Time) float64 }

// rater is a rate-based controller's view for the table: its current and
// target rates (bits per second) and its rate-increase counters.
type rater interface {
	Rate() int64
	TargetRate() int64
	Counters() (t, bc int)
	ByteCount() int64
}

// Snapshot is the state the table prints after a step.
type Snapshot struct {
	Now        sim.Time
	Cwnd       int64
	Ssthresh   int64
	State      string // Observer.State(), "-" when the controller has none
	Alpha      float64
	HasAlpha   bool
	Pipe       int64
	Flight     int64
	Una, Nxt   uint64
	InRecovery bool
	RTO        sim.Time // current timeout
	Timer      sim.Time // RTO deadline, sim.Never when off
	Done       bool
	Sent       int // segments sent by the step
	Retx       int // of which retransmissions
	// A rate-based controller's state (HasRate): rates in bits per
	// second, its rate-increase counters and byte count, and the
	// controller's own deadline.
	HasRate      bool
	Rate, Target int64
	TC, BC       int
	Bytes        int64
	CCTimer      sim.Time
	// Extra is what the introspection keys read (introspect.go).
	Extra extraSnapshot
	// Evs and AR are the entropy and the ack request of each segment the
	// step sent.
	Evs []uint16
	AR  []bool
}

// Snapshot reads the driver's current state (Sent and Retx are left 0).
func (d *Driver) Snapshot() Snapshot {
	ctl, st := d.Controller(), d.ep.SeqState()
	s := Snapshot{Now: d.now, Cwnd: ctl.Cwnd(), Ssthresh: ctl.Ssthresh(), State: "-",
		Pipe: st.Pipe, Flight: st.Flight, Una: st.Una, Nxt: st.Nxt,
		InRecovery: st.InRecovery, RTO: d.RTO().Timeout(), Timer: d.RTODeadline(), Done: d.Done()}
	if o, ok := ctl.(cc.Observer); ok {
		s.State = o.State().String()
	}
	if a, ok := ctl.(alphaer); ok {
		s.Alpha, s.HasAlpha = a.Alpha(), true
	}
	if a, ok := ctl.(alphaAter); ok {
		s.Alpha, s.HasAlpha = a.AlphaAt(d.now), true
	}
	if r, ok := ctl.(rater); ok {
		s.HasRate = true
		s.Rate, s.Target = r.Rate(), r.TargetRate()
		s.TC, s.BC = r.Counters()
		s.Bytes = r.ByteCount()
		s.CCTimer = d.ep.CCDeadline()
	}
	s.Extra = d.extra()
	if s.Extra.infinite() {
		s.Ssthresh = infSsthresh
	}
	return s
}

// infSsthresh: an ssthresh this large prints as "inf" (the "arbitrarily
// high" initial value of RFC 5681 §3.1).
const infSsthresh = math.MaxInt64 / 4

// runner is one run of a script.
type runner struct {
	s     *Script
	d     *Driver
	mss   int64
	rtt   sim.Time        // pending `rtt` sample for the next ACK
	lost  []sim.SackBlock // `lose` ranges not resent since, sorted, disjoint
	rows  [][]string      // the table
	last  Snapshot        // after the last step
	fails []Failure
	sack  []sim.SackBlock // scratch
}

// Run executes the script against the modules b builds, writes the table
// to w, and returns a *StepError if a step cannot be carried out, an
// *ExpectError if expects failed (after the whole table), or the
// builder's error.
func (s *Script) Run(w io.Writer, b Builder) error {
	h := &s.Header
	cfg := h.CC
	if h.RTO.Mode == cc.RTOFixed {
		cfg.PacketRTO = h.RTO.Fixed // recoveries that time packets out one by one (uet)
	}
	ctl, rec, err := b(cfg, h.Options, h.Size)
	if err != nil {
		line := 1
		var oe *OptionError
		if errors.As(err, &oe) {
			line = oe.Option.Line
		}
		return &StepError{Name: s.Name, Line: line, Msg: err.Error()}
	}
	hops := h.Hops
	if h.CC.Strack != nil && hops == 0 {
		hops = h.CC.Strack.Hops
	}
	d, err := NewDriver(DriverConfig{CC: ctl, Rec: rec, RTO: h.RTO, MSS: h.CC.MSS, Size: h.Size,
		ECN: h.ECN, AutoSend: h.AutoSend, Hops: hops, LineRate: h.LineRate, BaseRTT: h.BaseRTT, Pacing: h.Pacing, Header: h.Header,
		Paths: h.Paths})
	if err != nil {
		return &StepError{Name: s.Name, Line: 1, Msg: err.Error()}
	}
	r := &runner{s: s, d: d, mss: h.CC.MSS}
	_, hasAlpha := ctl.(alphaer)
	_, hasRate := ctl.(rater)
	r.rows = append(r.rows, header(hasAlpha, hasRate))
	r.last = d.Snapshot()
	r.row(0, "(start)", r.last, nil, Events{}, "")
	var stepErr error
	for i := range s.Steps {
		if err := r.step(&s.Steps[i]); err != nil {
			stepErr = &StepError{Name: s.Name, Line: s.Steps[i].Line, Msg: err.Error()}
			break
		}
	}
	writeTable(w, r.rows)
	if stepErr != nil {
		return stepErr
	}
	if len(r.fails) > 0 {
		return &ExpectError{Name: s.Name, Failures: r.fails}
	}
	return nil
}

// step carries out one step and adds its row.
func (r *runner) step(st *Step) error {
	d := r.d
	note := ""
	switch st.kind {
	case stepExpect:
		r.check(st)
		return nil
	case stepRTT:
		r.rtt = st.rtt
		return nil
	case stepSend:
		d.Send(st.n)
	case stepAck, stepDupAck:
		n := st.n
		for i := range n {
			a := Ack{Ack: st.ack, ECE: st.ece, Echo: st.echo, EchoValid: st.echoSet,
				Nack: st.nack || st.sackmap, Bitmap: st.bitmap, Tel: st.tel, Entropy: st.ev}
			if st.kind == stepDupAck {
				a.Ack = d.ep.SeqState().Una
			}
			if err := r.checkAck(a.Ack, st.sack); err != nil {
				return err
			}
			if err := r.checkEcho(&a, st.sackmap); err != nil {
				return err
			}
			r.sack = append(r.sack[:0], st.sack...)
			a.Sack = r.sack
			if i == 0 {
				a.RTT = st.rtt
				if a.RTT == 0 {
					a.RTT = r.rtt
				}
				r.rtt = 0
			}
			d.OnAck(a)
			r.repair(d.sent)
		}
	case stepNack:
		if err := r.checkNack(st.ack); err != nil {
			return err
		}
		rtt := st.rtt
		if rtt == 0 {
			rtt = r.rtt
		}
		r.rtt = 0
		before := d.events.Nacks
		d.OnNack(cc.Nack{Seq: st.ack, Entropy: st.ev, LastHop: st.lastHop, ECE: st.ece}, rtt)
		if d.events.Nacks > before {
			// The payload was cut: as after `lose`, no ACK may cover it
			// until it is sent again.
			r.addLost(sim.SackBlock{Start: st.ack, End: min(st.ack+uint64(r.mss), r.s.Header.Size)})
			r.repair(d.sent)
		}
	case stepAdvance:
		if err := d.AdvanceTo(d.Now() + st.dur); err != nil {
			return err
		}
	case stepRTO:
		if err := d.FireRTO(); err != nil {
			return err
		}
	case stepCNP:
		d.OnCNP()
	case stepNak:
		if err := r.checkAck(st.ack, st.sack); err != nil {
			return err
		}
		r.sack = append(r.sack[:0], st.sack...)
		a := Ack{Ack: st.ack, Sack: r.sack, Nak: true, RTT: st.rtt}
		if a.RTT == 0 {
			a.RTT = r.rtt
		}
		r.rtt = 0
		d.OnAck(a)
	case stepLose:
		if st.lose.End > d.HighSent() {
			return fmt.Errorf("lose %d-%d: only bytes below %d have been sent", st.lose.Start, st.lose.End, d.HighSent())
		}
		if st.lose.Start < d.ep.SeqState().Una {
			return fmt.Errorf("lose %d-%d: bytes below SndUna %d are already acknowledged", st.lose.Start, st.lose.End, d.ep.SeqState().Una)
		}
		r.addLost(st.lose)
		note = fmt.Sprintf("lost %d-%d", st.lose.Start, st.lose.End)
	}
	sent := d.TakeSent()
	ar := d.TakeAckReqs()
	r.repair(sent)
	snap := d.Snapshot()
	for i, seg := range sent {
		snap.Sent++
		if seg.Retx {
			snap.Retx++
		}
		snap.Evs = append(snap.Evs, seg.Entropy)
		snap.AR = append(snap.AR, ar[i])
	}
	snap.Extra.noteSent(sent)
	r.last = snap
	r.row(st.Line, st.Text, snap, sent, d.TakeEvents(), note)
	return nil
}

// checkAck refuses ACKs for bytes never sent or declared lost and not
// resent since.
func (r *runner) checkAck(ack uint64, sack []sim.SackBlock) error {
	hs := r.d.HighSent()
	if ack > hs {
		return fmt.Errorf("ack %d: only bytes below %d have been sent", ack, hs)
	}
	for _, l := range r.lost {
		if l.Start < ack {
			return fmt.Errorf("ack %d covers lost bytes %d-%d that were not sent again", ack, l.Start, l.End)
		}
	}
	for _, b := range sack {
		if b.End > hs {
			return fmt.Errorf("sack %d-%d: only bytes below %d have been sent", b.Start, b.End, hs)
		}
		for _, l := range r.lost {
			if b.Start < l.End && l.Start < b.End {
				return fmt.Errorf("sack %d-%d covers lost bytes %d-%d that were not sent again", b.Start, b.End, l.Start, l.End)
			}
		}
	}
	return nil
}

// checkEcho refuses a per-packet ACK whose echoed packet, or a segment
// its NACK bitmap reports as arrived, was never sent or is lost and not
// resent since.
func (r *runner) checkEcho(a *Ack, sackmap bool) error {
	if !a.EchoValid {
		return nil
	}
	mss := uint64(r.mss)
	seg := func(what string, start uint64) error {
		end := start + mss
		if hs := r.d.HighSent(); start >= hs {
			return fmt.Errorf("%s %d: only bytes below %d have been sent", what, start, hs)
		}
		for _, l := range r.lost {
			if start < l.End && l.Start < end {
				return fmt.Errorf("%s %d covers lost bytes %d-%d that were not sent again", what, start, l.Start, l.End)
			}
		}
		return nil
	}
	if err := seg("echo", a.Echo); err != nil {
		return err
	}
	if a.Nack && a.Ack%mss != 0 {
		return fmt.Errorf("nack: the cumulative ACK %d is not on a segment boundary (mss %d)", a.Ack, mss)
	}
	if sackmap {
		// UET: bit i is segment base+i, base = max(echo − 63, ack + 1) in
		// segments.
		base := max(int64(a.Echo/mss)-63, int64(a.Ack/mss)+1)
		for i := uint64(0); i < 64; i++ {
			if a.Bitmap&(1<<i) != 0 {
				if err := seg(fmt.Sprintf("sackmap bit %d: segment", i), uint64(base)*mss+i*mss); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i := uint64(1); a.Nack && i < 64; i++ {
		if a.Bitmap&(1<<i) != 0 {
			if err := seg(fmt.Sprintf("nack bit %d: segment", i), a.Ack+i*mss); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkNack refuses a NACK for a packet never sent.
func (r *runner) checkNack(seq uint64) error {
	if hs := r.d.HighSent(); seq >= hs {
		return fmt.Errorf("nack %d: only bytes below %d have been sent", seq, hs)
	}
	if seq%uint64(r.mss) != 0 {
		return fmt.Errorf("nack %d: not the first byte of a segment (mss %d)", seq, r.mss)
	}
	return nil
}

// addLost records [b.Start, b.End) as lost, merging with what is there.
func (r *runner) addLost(b sim.SackBlock) {
	out := r.lost[:0:0]
	for _, l := range r.lost {
		if l.End < b.Start || b.End < l.Start {
			out = append(out, l)
			continue
		}
		b.Start, b.End = min(b.Start, l.Start), max(b.End, l.End)
	}
	out = append(out, b)
	for i := len(out) - 1; i > 0 && out[i].Start < out[i-1].Start; i-- {
		out[i], out[i-1] = out[i-1], out[i]
	}
	r.lost = out
}

// repair removes the bytes of sent segments from the lost ranges: sent
// again, they may be acknowledged.
func (r *runner) repair(sent []cc.Segment) {
	for _, seg := range sent {
		s, e := seg.Seq, seg.Seq+uint64(seg.Len)
		out := r.lost[:0:0]
		for _, l := range r.lost {
			if e <= l.Start || l.End <= s {
				out = append(out, l)
				continue
			}
			if l.Start < s {
				out = append(out, sim.SackBlock{Start: l.Start, End: s})
			}
			if e < l.End {
				out = append(out, sim.SackBlock{Start: e, End: l.End})
			}
		}
		r.lost = out
	}
}

// check evaluates an expect line against the state after the last step.
func (r *runner) check(st *Step) {
	s := &r.last
	var msgs []string
	for _, e := range st.want {
		if msg := r.checkOne(s, e); msg != "" {
			msgs = append(msgs, msg)
		}
	}
	if len(msgs) > 0 {
		r.fails = append(r.fails, Failure{Line: st.Line, Text: st.Text, Msg: strings.Join(msgs, ", ")})
	}
}

// checkOne returns "" if the expectation holds, else "key: want W, got G".
func (r *runner) checkOne(s *Snapshot, e expectation) string {
	var got string
	ok := false
	if name, isProbe := strings.CutPrefix(e.key, probePrefix); isProbe {
		p, okp := r.d.Controller().(cc.Prober)
		if !okp {
			return e.key + ": the controller has no Probe()"
		}
		v, known := p.Probe(name)
		if !known {
			return e.key + ": the controller has no value " + name
		}
		got = strconv.FormatFloat(v, 'g', 10, 64)
		want, err := strconv.ParseFloat(e.value, 64)
		// Hand-derived values carry 6 or more significant digits.
		if err == nil && math.Abs(want-v) <= 1e-6*max(1, math.Abs(want)) {
			return ""
		}
		return fmt.Sprintf("%s: want %s, got %s", e.key, e.value, got)
	}
	switch e.key {
	case "time":
		got = fmtTime(s.Now)
		want, err := parseDuration(e.value)
		ok = err == nil && want == s.Now
	case "cwnd":
		got = strconv.FormatInt(s.Cwnd, 10)
	case "segs":
		got = fmtSegs(s.Cwnd, r.mss)
		ok = decimalEqual(e.value, got)
	case "ssthresh":
		got = fmtSsthresh(s.Ssthresh)
	case "state":
		got = s.State
	case "alpha":
		if !s.HasAlpha {
			return "alpha: the controller has no Alpha()"
		}
		got = fmtAlpha(s.Alpha)
		want, err := strconv.ParseFloat(e.value, 64)
		ok = err == nil && math.Abs(want-s.Alpha) <= 1e-9
	case "pipe":
		got = strconv.FormatInt(s.Pipe, 10)
	case "flight":
		got = strconv.FormatInt(s.Flight, 10)
	case "una":
		got = strconv.FormatUint(s.Una, 10)
	case "nxt":
		got = strconv.FormatUint(s.Nxt, 10)
	case "recovery":
		got = yesNo(s.InRecovery)
	case "rto":
		got = fmtTime(s.RTO)
		want, err := parseDuration(e.value)
		ok = err == nil && want == s.RTO
	case "timer":
		got = fmtTimer(s.Timer)
		if e.value != "off" {
			want, err := parseDuration(e.value)
			ok = err == nil && want == s.Timer
		}
	case "sent":
		got = strconv.Itoa(s.Sent)
	case "retx":
		got = strconv.Itoa(s.Retx)
	case "done":
		got = yesNo(s.Done)
	case "evs":
		got = fmtList(s.Evs, func(v uint16) string { return strconv.Itoa(int(v)) })
	case "ar":
		got = fmtList(s.AR, func(b bool) string {
			if b {
				return "1"
			}
			return "0"
		})
	case "rate", "target_rate":
		if !s.HasRate {
			return e.key + ": the controller is not rate-based"
		}
		v := s.Rate
		if e.key == "target_rate" {
			v = s.Target
		}
		got = fmtRate(v)
		want, err := parseRate(e.value)
		// Rates hold to one part in a million: a cut multiplies by
		// (1 - alpha/2), which a hand derivation rounds.
		ok = err == nil && math.Abs(float64(int64(want)-v)) <= 1e-6*float64(max(int64(want), 1))
	case "tc", "bc", "bytes":
		if !s.HasRate {
			return e.key + ": the controller is not rate-based"
		}
		switch e.key {
		case "tc":
			got = strconv.Itoa(s.TC)
		case "bc":
			got = strconv.Itoa(s.BC)
		default:
			got = strconv.FormatInt(s.Bytes, 10)
		}
	case "cctimer":
		if !s.HasRate {
			return e.key + ": the controller is not rate-based"
		}
		v := s.CCTimer
		got = fmtTimer(v)
		if e.value != "off" {
			want, err := parseDuration(e.value)
			ok = err == nil && want == v
		}
	default:
		var msg string
		if got, ok, msg = r.checkIntrospect(s, e); msg != "" {
			return msg
		}
	}
	if !ok {
		ok = got == e.value
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("%s: want %s, got %s", e.key, e.value, got)
}

// decimalEqual compares two decimals written with up to two fraction
// digits ("14" equals "14.00").
func decimalEqual(a, b string) bool {
	norm := func(s string) string {
		w, f, _ := strings.Cut(s, ".")
		f = strings.TrimRight(f, "0")
		if f == "" {
			return w
		}
		return w + "." + f
	}
	return norm(a) == norm(b)
}

// fmtList prints a comma-separated list, "-" when empty.
func fmtList[T any](xs []T, f func(T) string) string {
	if len(xs) == 0 {
		return "-"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = f(x)
	}
	return strings.Join(parts, ",")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// fmtTime prints 0 as "0" and other times as sim.Time does.
func fmtTime(t sim.Time) string {
	if t == 0 {
		return "0"
	}
	return t.String()
}

func fmtTimer(t sim.Time) string {
	if t == sim.Never {
		return "off"
	}
	return fmtTime(t)
}

// fmtSegs prints cwnd in segments, truncated to hundredths, with integer
// arithmetic.
func fmtSegs(cwnd, mss int64) string {
	h := cwnd * 100 / mss
	return fmt.Sprintf("%d.%02d", h/100, h%100)
}

func fmtSsthresh(s int64) string {
	if s >= infSsthresh {
		return "inf"
	}
	return strconv.FormatInt(s, 10)
}

func fmtAlpha(a float64) string { return strconv.FormatFloat(a, 'f', 6, 64) }

// fmtRate prints bits per second as Gbps with the digits it needs (a
// whole number of bits per second has at most nine decimals).
func fmtRate(bps int64) string {
	w, f := bps/1e9, bps%1e9
	if f == 0 {
		return fmt.Sprintf("%dGbps", w)
	}
	return strings.TrimRight(fmt.Sprintf("%d.%09d", w, f), "0") + "Gbps"
}

// fmtSent prints the segments a step sent: runs of contiguous segments of
// the same kind become one range, "new 0-10000 (10)" or "retx 3000-4000".
func fmtSent(sent []cc.Segment) string {
	if len(sent) == 0 {
		return "-"
	}
	var parts []string
	for i := 0; i < len(sent); {
		j := i + 1
		end := sent[i].Seq + uint64(sent[i].Len)
		for j < len(sent) && sent[j].Retx == sent[i].Retx && sent[j].Seq == end {
			end += uint64(sent[j].Len)
			j++
		}
		kind := "new"
		if sent[i].Retx {
			kind = "retx"
		}
		p := fmt.Sprintf("%s %d-%d", kind, sent[i].Seq, end)
		if j-i > 1 {
			p += fmt.Sprintf(" (%d)", j-i)
		}
		parts = append(parts, p)
		i = j
	}
	return strings.Join(parts, ", ")
}

// fmtSentEvs is fmtSent, with the entropies when a path manager picks
// them.
func (r *runner) fmtSentEvs(sent []cc.Segment) string {
	out := fmtSent(sent)
	if r.s.Header.Paths == nil || len(sent) == 0 {
		return out
	}
	return out + " ev " + fmtList(sent, func(s cc.Segment) string { return strconv.Itoa(int(s.Entropy)) })
}

// fmtEvents prints the event counts and the step's note.
func fmtEvents(e Events, note string) string {
	var parts []string
	add := func(n int, name string) {
		switch {
		case n == 1:
			parts = append(parts, name)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%s x%d", name, n))
		}
	}
	add(e.Dups, "dupack")
	add(e.EnterRecovery, "enter-recovery")
	add(e.ExitRecovery, "exit-recovery")
	add(e.ECNCuts, "ecn-cut")
	add(e.RecTimers, "rec-timer")
	add(e.CNPs, "cnp")
	add(e.CCTimers, "cc-timer")
	add(e.Nacks, "nack")
	add(e.RTOs, "rto")
	if e.Done {
		parts = append(parts, "done")
	}
	if note != "" {
		parts = append(parts, note)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// Table columns. Numbers are right-aligned, text left-aligned; the last
// two columns are free text.
var (
	colsBase  = []string{"line", "time", "step", "cwnd", "segs", "ssthresh", "state", "pipe", "una", "nxt", "rec", "timer", "sent", "events"}
	colsAlpha = []string{"line", "time", "step", "cwnd", "segs", "ssthresh", "state", "alpha", "pipe", "una", "nxt", "rec", "timer", "sent", "events"}
	// A rate-based controller shows its rates instead of a window.
	colsRate = []string{"line", "time", "step", "rate", "target", "state", "alpha", "tc", "bc", "una", "nxt", "rec", "timer", "sent", "events"}
	leftCols = map[string]bool{"step": true, "state": true, "rec": true, "sent": true, "events": true}
)

func header(hasAlpha, hasRate bool) []string {
	switch {
	case hasRate:
		return colsRate
	case hasAlpha:
		return colsAlpha
	}
	return colsBase
}

// row adds one table row.
func (r *runner) row(line int, text string, s Snapshot, sent []cc.Segment, ev Events, note string) {
	ln := "-"
	if line > 0 {
		ln = strconv.Itoa(line)
	}
	row := []string{ln, fmtTime(s.Now), text}
	if s.HasRate {
		row = append(row, fmtRate(s.Rate), fmtRate(s.Target), s.State, fmtAlpha(s.Alpha),
			strconv.Itoa(s.TC), strconv.Itoa(s.BC))
	} else {
		row = append(row, strconv.FormatInt(s.Cwnd, 10), fmtSegs(s.Cwnd, r.mss), fmtSsthresh(s.Ssthresh), s.State)
		if s.HasAlpha {
			row = append(row, fmtAlpha(s.Alpha))
		}
		row = append(row, strconv.FormatInt(s.Pipe, 10))
	}
	row = append(row, strconv.FormatUint(s.Una, 10),
		strconv.FormatUint(s.Nxt, 10), yesNo(s.InRecovery), fmtTimer(s.Timer),
		r.fmtSentEvs(sent), fmtEvents(ev, note))
	r.rows = append(r.rows, row)
}

// writeTable pads every column to its widest cell, two spaces apart; the
// last column is not padded.
func writeTable(w io.Writer, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	names := rows[0]
	width := make([]int, len(names))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len(c))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		b.Reset()
		for i, c := range row {
			if i == len(row)-1 {
				b.WriteString(c)
				break
			}
			pad := strings.Repeat(" ", width[i]-len(c))
			if leftCols[names[i]] {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
			b.WriteString("  ")
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
