package cctrace

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

var update = flag.Bool("update", false, "rewrite the golden tables in testdata/")

// runScript parses and runs src with builder b.
func runScript(t *testing.T, name, src string, b Builder) (string, error) {
	t.Helper()
	s, err := Parse(name, []byte(src))
	if err != nil {
		t.Fatalf("%s: parse: %v", name, err)
	}
	var out bytes.Buffer
	err = s.Run(&out, b)
	return out.String(), err
}

// TestReno_Traces runs the Reno scripts in testdata/: each expect holds a
// value derived by hand from RFC 5681 (with RFC 3465 byte counting, RFC
// 3168 for ECN, RFC 6298 for the timer), the clause cited beside it.
func TestReno_Traces(t *testing.T) {
	files, err := filepath.Glob("testdata/*.trace")
	if err != nil || len(files) < 5 {
		t.Fatalf("want at least 5 scripts in testdata/, got %d (%v)", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out, err := runScript(t, f, string(src), RegistryBuilder)
			if err != nil {
				t.Fatalf("want every expect to hold, got:\n%v\n\ntable:\n%s", strings.ReplaceAll(err.Error(), "; ", "\n"), out)
			}
		})
	}
}

// TestGolden_RenoFastRetransmit pins the printed table of one script.
// Rewrite with: go test ./cc/cctrace/ -run Golden -update
func TestGolden_RenoFastRetransmit(t *testing.T) {
	src, err := os.ReadFile("testdata/reno_fast_retransmit.trace")
	if err != nil {
		t.Fatal(err)
	}
	out, err := runScript(t, "reno_fast_retransmit.trace", string(src), RegistryBuilder)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	golden := "testdata/reno_fast_retransmit.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if out != string(want) {
		t.Fatalf("table differs from %s (rerun with -update and review the diff)\nwant:\n%s\ngot:\n%s", golden, want, out)
	}
	// The same script gives the same bytes every time.
	again, _ := runScript(t, "reno_fast_retransmit.trace", string(src), RegistryBuilder)
	if again != out {
		t.Fatalf("two runs of one script differ:\n%s\n---\n%s", out, again)
	}
}

// docBlock matches a fenced block of trace code in a Markdown file.
var docBlock = regexp.MustCompile("(?s)```trace\n(.*?)```")

// TestDocs_ExamplesRun runs every ```trace block of docs/cc-trace.md.
func TestDocs_ExamplesRun(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cc-trace.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := docBlock.FindAllSubmatch(doc, -1)
	if len(blocks) < 2 {
		t.Fatalf("want at least 2 trace examples in docs/cc-trace.md, got %d", len(blocks))
	}
	for i, b := range blocks {
		name := fmt.Sprintf("docs/cc-trace.md example %d", i+1)
		out, err := runScript(t, name, string(b[1]), RegistryBuilder)
		if err != nil {
			t.Errorf("%s: want every expect to hold, got %v\n%s", name, err, out)
		}
	}
}

// Expect failures name the line and say want vs got; the table is still
// printed in full.
func TestRun_ExpectFailureNamesLine(t *testing.T) {
	src := "cc reno\nmss 1000\ninit_cwnd 10\n\nsend\nexpect cwnd=12000 sent=10\nack 1000\nexpect cwnd=11000\nexpect nxt=1\n"
	out, err := runScript(t, "x.trace", src, RegistryBuilder)
	var ee *ExpectError
	if !errors.As(err, &ee) {
		t.Fatalf("want an *ExpectError, got %T %v", err, err)
	}
	if len(ee.Failures) != 2 || ee.Failures[0].Line != 6 || ee.Failures[1].Line != 9 {
		t.Fatalf("want failures at lines 6 and 9, got %+v", ee.Failures)
	}
	if !strings.Contains(err.Error(), "x.trace:6: expect cwnd=12000 sent=10: cwnd: want 12000, got 10000") {
		t.Fatalf("want the line, the expect and want vs got in the message, got %q", err)
	}
	if !strings.Contains(err.Error(), "x.trace:9: expect nxt=1: nxt: want 1, got 12000") {
		t.Fatalf("want the second failure, got %q", err)
	}
	if n := strings.Count(out, "\n"); n != 4 {
		t.Fatalf("want header + 3 rows, got %d lines:\n%s", n, out)
	}
}

func TestParse_Errors(t *testing.T) {
	cases := []struct {
		src  string
		line int
		msg  string
	}{
		{"send\nmss 1000\n", 2, "before the first step"},
		{"mss x\n", 1, "positive integer"},
		{"cc\n", 1, "want one value"},
		{"# c\nsend n=0\n", 2, "positive integer"},
		{"ack\n", 1, "cumulative ACK"},
		{"ack 10 sack=5-3\n", 1, "START < END"},
		{"ack 10 sack=1-2,3-4,5-6,7-8,9-10\n", 1, "at most 4"},
		{"dupack x0\n", 1, "positive count"},
		{"ack 10 x2\n", 1, "unknown argument"},
		{"advance 10\n", 1, "no unit"},
		{"rtt 0\n", 1, "positive"},
		{"expect cwnd\n", 1, "key=value"},
		{"expect colour=red\n", 1, "unknown key"},
		{"frobnicate\n", 1, "unknown step"},
		{"rto sometimes\n", 1, "unknown mode"},
		{"rto fixed 0\n", 1, "positive"},
		{"rto rfc6298 min=2s max=1s\n", 1, "min <= max"},
		{"ecn maybe\n", 1, "on or off"},
		{"option novalue\n", 1, "key=value"},
		{"lose 5\n", 1, "START-END"},
		{"rto now\n", 1, "unknown mode"},
		{"paths\n", 1, "want a mode"},
		{"paths zigzag\n", 1, "unknown mode"},
		{"paths bitmap entropies=6\n", 1, "power of two"},
		{"paths reps colour=red\n", 1, "unknown key"},
		{"paths reps shuffle=perhaps\n", 1, "on or off"},
		{"nack\n", 1, "first byte of the trimmed packet"},
		{"nack 1000 later\n", 1, "unknown argument"},
		{"ack 1000 sackmap=3\n", 1, "need echo="},
		{"ack 1000 echo=0 nack=2 sackmap=3\n", 1, "exclude each other"},
		{"ack 1000 ev=70000\n", 1, "16-bit entropy"},
	}
	for _, c := range cases {
		_, err := Parse("p.trace", []byte(c.src))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: want a *ParseError, got %v", c.src, err)
			continue
		}
		if pe.Line != c.line || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%q: want line %d and %q, got line %d %q", c.src, c.line, c.msg, pe.Line, pe.Msg)
		}
	}
}

func TestParse_DurationsAndHeader(t *testing.T) {
	for s, want := range map[string]sim.Time{"0": 0, "1ps": 1, "100us": 100 * sim.Microsecond,
		"1.5ms": 1500 * sim.Microsecond, "200.1ms": 200100 * sim.Microsecond, "2s": 2 * sim.Second,
		"0.001ns": 1} {
		got, err := parseDuration(s)
		if err != nil || got != want {
			t.Errorf("parseDuration(%q): want %d ps, got %d (%v)", s, want, got, err)
		}
	}
	for _, s := range []string{"1", "1.5", "ms", "-1ms", "0.0001ns", "1x"} {
		if _, err := parseDuration(s); err == nil {
			t.Errorf("parseDuration(%q): want an error", s)
		}
	}
	sc, err := Parse("h", []byte("cc reno\nrecovery reno\nmss 1200\ninit_cwnd 4\nsize 5000\ndupthresh 2\n"+
		"rto rfc6298 min=1ms max=2s initial=3ms granularity=1us backoff=off\necn off\nautosend off\n"+
		"option a=1 b=x=y\noption c=\nsend\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := sc.Header
	wantRTO := cc.RTOConfig{Mode: cc.RTOAdaptive, Initial: 3 * sim.Millisecond, Min: sim.Millisecond,
		Max: 2 * sim.Second, Granularity: sim.Microsecond}
	if h.CC.MSS != 1200 || h.CC.InitCwnd != 4 || h.Size != 5000 || h.CC.DupThresh != 2 || h.ECN || h.AutoSend || h.RTO != wantRTO {
		t.Fatalf("header: got %+v", h)
	}
	wantOpts := []Option{{"a", "1", 10}, {"b", "x=y", 10}, {"c", "", 11}}
	if fmt.Sprint(h.Options) != fmt.Sprint(wantOpts) {
		t.Fatalf("options: want %v, got %v", wantOpts, h.Options)
	}
	fixed, err := Parse("h", []byte("rto fixed 100us\n"))
	if err != nil || fixed.Header.RTO != (cc.RTOConfig{Mode: cc.RTOFixed, Fixed: 100 * sim.Microsecond}) {
		t.Fatalf("rto fixed: got %+v, %v", fixed.Header.RTO, err)
	}
	def, reg := DefaultHeader(), cc.DefaultConfig()
	if def.CC.CC != reg.CC || def.CC.Recovery != reg.Recovery || def.CC.MSS != reg.MSS || def.CC.InitCwnd != reg.InitCwnd ||
		def.RTO != cc.DefaultRTOConfig() || !def.ECN || !def.AutoSend {
		t.Fatalf("defaults: want the registry's, got %+v", def)
	}
}

// Steps that cannot happen stop the run with the line.
func TestRun_StepErrors(t *testing.T) {
	head := "mss 1000\ninit_cwnd 4\nsize 100000\nrto fixed 1s\n"
	cases := []struct {
		body string
		line int
		msg  string
	}{
		{"ack 1000\n", 5, "only bytes below 0"},
		{"send\nack 5000\n", 6, "only bytes below 4000"},
		{"send\nlose 1000-2000\nack 3000\n", 7, "covers lost bytes 1000-2000"},
		{"send\nlose 1000-2000\nack 1000 sack=1500-3000\n", 7, "sack 1500-3000 covers lost bytes 1000-2000"},
		{"send\nack 1000 sack=2000-5000\n", 6, "sack 2000-5000"},
		{"send\nlose 3000-5000\n", 6, "only bytes below 4000"},
		{"send\nack 2000\nlose 1000-2000\n", 7, "already acknowledged"},
		{"rto\n", 5, "not armed"},
		{"send\nnack 4000\n", 6, "only bytes below 4000"},
		{"send\nnack 1500\n", 6, "not the first byte of a segment"},
		{"send\nack 1000 echo=3000 sackmap=0b100\n", 6, "sackmap bit 2: segment 4000"},
	}
	for _, c := range cases {
		_, err := runScript(t, "s.trace", head+c.body, RegistryBuilder)
		var se *StepError
		if !errors.As(err, &se) || se.Line != c.line || !strings.Contains(se.Msg, c.msg) {
			t.Errorf("%q: want a *StepError at line %d with %q, got %v", c.body, c.line, c.msg, err)
		}
	}
	// A NACK marks the packet's bytes lost, as `lose` does, for cc nscc.
	nh := "cc nscc\nrecovery uet\nmss 1000\nsize 100000\nrto fixed 1ms\noption init_cwnd=4\n"
	_, err := runScript(t, "n.trace", nh+"send\nnack 1000\nack 2000\n", RegistryBuilder)
	var se *StepError
	if !errors.As(err, &se) || se.Line != 9 || !strings.Contains(se.Msg, "covers lost bytes 1000-2000") {
		t.Errorf("an ACK over a NACKed packet: want a *StepError at line 9, got %v", err)
	}
	// Resending lost bytes makes them acknowledgeable again.
	src := head + "send\nlose 1000-2000\nrto\nack 1000\nack 2000\nexpect una=2000\n"
	if out, err := runScript(t, "s.trace", src, RegistryBuilder); err != nil {
		t.Fatalf("ack after the RTO resent the lost bytes: want no error, got %v\n%s", err, out)
	}
}

// The registry takes no module options yet: an option line is refused at
// its own line.
func TestRegistryBuilder_RefusesOptions(t *testing.T) {
	_, err := runScript(t, "o.trace", "cc reno\n\noption variant=kelly\nsend\n", RegistryBuilder)
	var se *StepError
	if !errors.As(err, &se) || se.Line != 3 || !strings.Contains(se.Msg, "option variant=kelly") {
		t.Fatalf("want a *StepError at line 3 naming the option, got %v", err)
	}
	_, err = runScript(t, "o.trace", "cc vegas\nsend\n", RegistryBuilder)
	if err == nil || !strings.Contains(err.Error(), "vegas") {
		t.Fatalf("unknown cc: want the registry's error, got %v", err)
	}
}

// optionBuilder knows two modules the registry may not know yet, to show
// how options reach a builder.
func optionBuilder(cfg cc.Config, opts []Option, size uint64) (cc.Controller, cc.Recovery, error) {
	var ctl cc.Controller
	switch cfg.CC {
	case "scalable":
		variant := "linux"
		for _, o := range opts {
			if o.Key != "variant" {
				return nil, nil, &OptionError{Option: o, Err: errors.New("unknown option")}
			}
			variant = o.Value
		}
		s, err := cc.NewScalable(variant, cfg.MSS, cfg.InitCwnd)
		if err != nil {
			return nil, nil, err
		}
		ctl = s
	case "dctcp":
		dc := cc.DefaultDCTCPConfig()
		for _, o := range opts {
			v, err := strconv.ParseFloat(o.Value, 64)
			switch {
			case err != nil:
				return nil, nil, &OptionError{Option: o, Err: err}
			case o.Key == "g":
				dc.G = v
			case o.Key == "init_alpha":
				dc.InitAlpha = v
			default:
				return nil, nil, &OptionError{Option: o, Err: errors.New("unknown option")}
			}
		}
		if err := dc.Validate(); err != nil {
			return nil, nil, err
		}
		ctl = cc.NewDCTCP(dc, cfg.MSS, cfg.InitCwnd)
	default:
		return RegistryBuilder(cfg, opts, size)
	}
	rec, err := cc.NewRecovery(cfg, size)
	if err != nil {
		return nil, nil, err
	}
	return ctl, rec, nil
}

// Kelly 2003 §2 through the driver: an ECN echo at 17 segments leaves
// 17 - ceil(17/8) = 14, then each ACK adds 0.01 segment.
func TestTrace_ScalableKellyWithOption(t *testing.T) {
	src := `cc scalable
option variant=kelly
mss 1000
init_cwnd 16
send
# slow start (+1 segment), then the cut: 17 - ceil(2.125) = 14
ack 1000 ece
expect cwnd=14000 ssthresh=14000 state=congestion-avoidance
ack 2000
ack 3000
ack 4000
ack 5000
ack 6000
ack 7000
ack 8000
ack 9000
ack 10000
ack 11000
expect segs=14.10 cwnd=14100
`
	out, err := runScript(t, "k.trace", src, optionBuilder)
	if err != nil {
		t.Fatalf("want every expect to hold, got %v\n%s", err, out)
	}
	if !strings.Contains(out, "congestion-avoidance") || !strings.Contains(out, "14.10") {
		t.Fatalf("want the state and fractional segments in the table, got\n%s", out)
	}
	_, err = runScript(t, "k.trace", "cc scalable\noption colour=red\nsend\n", optionBuilder)
	var se *StepError
	if !errors.As(err, &se) || se.Line != 2 {
		t.Fatalf("unknown option: want a *StepError at line 2, got %v", err)
	}
}

// RFC 8257 §3.3 through the driver: the alpha column appears, the first
// ACK closes the first window (alpha = 15/16), the ECN cut uses that alpha,
// and the next window, all marked, gives 15/16*15/16 + 1/16 = 241/256.
func TestTrace_DCTCPAlpha(t *testing.T) {
	src := `cc dctcp
option g=0.0625 init_alpha=1
mss 1000
init_cwnd 10
send
ack 1000
expect alpha=0.9375 cwnd=11000 nxt=12000
# slow start to 12000, then cwnd - floor(12000 * 0.9375 / 2) = 6375
ack 2000 ece
expect cwnd=6375 ssthresh=6375 alpha=0.9375
ack 3000 ece
ack 4000 ece
ack 5000 ece
ack 6000 ece
ack 7000 ece
ack 8000 ece
ack 9000 ece
ack 10000 ece
expect alpha=0.9375
# SndUna 11000 > WindowEnd 10000: 10 of 10 ACKs marked.
ack 11000 ece
expect alpha=0.94140625 ssthresh=6375
`
	out, err := runScript(t, "d.trace", src, optionBuilder)
	if err != nil {
		t.Fatalf("want every expect to hold, got %v\n%s", err, out)
	}
	if !strings.Contains(strings.SplitN(out, "\n", 2)[0], "alpha") {
		t.Fatalf("want an alpha column, got\n%s", out)
	}
	_, err = runScript(t, "r.trace", "cc reno\nsend\nexpect alpha=1\n", RegistryBuilder)
	if err == nil || !strings.Contains(err.Error(), "no Alpha()") {
		t.Fatalf("alpha on Reno: want a failed expect, got %v", err)
	}
}

// With ecn off the sender ignores ECE, as hostsim does without Config.ECN.
func TestTrace_ECNOff(t *testing.T) {
	src := "mss 1000\ninit_cwnd 10\necn off\nsend\nack 1000 ece\nexpect cwnd=11000 ssthresh=inf\n"
	if out, err := runScript(t, "e.trace", src, RegistryBuilder); err != nil {
		t.Fatalf("want no reduction, got %v\n%s", err, out)
	}
}

// recordingCC records the calls a driver makes, with a fixed window.
type recordingCC struct {
	cwnd  int64
	calls []string
}

func (r *recordingCC) OnAck(ev *cc.AckEvent) {
	r.calls = append(r.calls, fmt.Sprintf("ack acked=%d una=%d nxt=%d rtt=%v minrtt=%v ece=%v inrec=%v limited=%v delivered=%d prior=%d",
		ev.Acked, ev.SndUna, ev.SndNxt, ev.RTT, ev.MinRTT, ev.ECE, ev.InRecovery, ev.CwndLimited, ev.Delivered, ev.PriorInFlight))
}

func (r *recordingCC) OnCongestion(ev *cc.CongestionEvent) {
	r.calls = append(r.calls, fmt.Sprintf("congestion %v flight=%d at %v", ev.Kind, ev.FlightSize, ev.Now))
}

func (r *recordingCC) OnRecoveryExit(now sim.Time) { r.calls = append(r.calls, "exit") }
func (r *recordingCC) Cwnd() int64                 { return r.cwnd }
func (r *recordingCC) Ssthresh() int64             { return r.cwnd }

func (r *recordingCC) take() []string {
	c := r.calls
	r.calls = nil
	return c
}

func wantCalls(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\nwant calls\n  %s\ngot\n  %s", what, strings.Join(want, "\n  "), strings.Join(got, "\n  "))
	}
}

// The driver calls the controller as hostsim.Sender.onAck does: OnAck for
// ordinary ACKs, OnCongestion(CongLoss) instead at the third duplicate,
// OnRecoveryExit instead at the end of recovery, and the ECN response after
// OnAck, once per window and never in recovery.
func TestDriver_MirrorsHostCallOrder(t *testing.T) {
	ctl := &recordingCC{cwnd: 5000}
	rec := cc.NewRenoRecovery(1000, 10000, 3)
	d, err := NewDriver(DriverConfig{CC: ctl, Rec: rec, RTO: cc.RTOConfig{Mode: cc.RTOFixed, Fixed: sim.Millisecond},
		MSS: 1000, Size: 10000, ECN: true, AutoSend: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := d.Send(0); n != 5 {
		t.Fatalf("Send: want 5 segments in a 5000-byte window, got %d", n)
	}
	d.OnAck(Ack{Ack: 1000, ECE: true, RTT: 10 * sim.Microsecond})
	wantCalls(t, "ACK with ECE", ctl.take(), []string{
		"ack acked=1000 una=1000 nxt=5000 rtt=10us minrtt=10us ece=true inrec=false limited=true delivered=1000 prior=5000",
		"congestion ecn flight=4000 at 0ps",
	})
	if got := d.Endpoint().SeqState().Nxt; got != 6000 {
		t.Fatalf("after the ACK the window refills: want SndNxt 6000, got %d", got)
	}
	// Two duplicates (each lets one segment out: pipe drops by one SMSS,
	// and the next one no longer fits: cwnd-limited), the third enters
	// recovery with the FlightSize before it (8000-1000).
	d.OnAck(Ack{Ack: 1000, RTT: 10 * sim.Microsecond})
	d.OnAck(Ack{Ack: 1000})
	d.OnAck(Ack{Ack: 1000, ECE: true})
	wantCalls(t, "three duplicates", ctl.take(), []string{
		"ack acked=0 una=1000 nxt=6000 rtt=0ps minrtt=10us ece=false inrec=false limited=true delivered=1000 prior=5000",
		"ack acked=0 una=1000 nxt=7000 rtt=0ps minrtt=10us ece=false inrec=false limited=true delivered=1000 prior=5000",
		"congestion loss flight=5000 at 0ps", // limited-transmit data is not in eq. 4 (RFC 5681 §3.2 step 2)
	})
	if ev := d.TakeEvents(); ev.Dups != 3 || ev.EnterRecovery != 1 || ev.ECNCuts != 1 {
		t.Fatalf("events: want 3 dups, 1 recovery, 1 ECN cut, got %+v", ev)
	}
	d.OnAck(Ack{Ack: 8000})
	wantCalls(t, "recovery exit", ctl.take(), []string{"exit"})
	if d.RTODeadline() != sim.Millisecond {
		t.Fatalf("RTO: want restarted at 0 + 1ms, got %v", d.RTODeadline())
	}
	// The flow (10 segments) ends: ACKs after it are ignored and the
	// timer is off.
	if got := d.HighSent(); got != 10000 {
		t.Fatalf("want the whole flow sent, got bytes below %d", got)
	}
	d.OnAck(Ack{Ack: 10000})
	if !d.Done() || d.RTODeadline() != sim.Never {
		t.Fatalf("done: want Done and the timer off, got %v %v", d.Done(), d.RTODeadline())
	}
	ctl.take()
	d.OnAck(Ack{Ack: 10000})
	wantCalls(t, "ACK after the end", ctl.take(), nil)
}

// Advancing time fires the RTO at each deadline on the way, not at the end.
func TestDriver_AdvanceFiresTimersAtTheirDeadlines(t *testing.T) {
	ctl := &recordingCC{cwnd: 2000}
	rec := cc.NewRenoRecovery(1000, 100000, 3)
	d, err := NewDriver(DriverConfig{CC: ctl, Rec: rec, RTO: cc.RTOConfig{Mode: cc.RTOFixed, Fixed: 100 * sim.Microsecond},
		MSS: 1000, Size: 100000, AutoSend: true})
	if err != nil {
		t.Fatal(err)
	}
	d.Send(0)
	if err := d.AdvanceTo(350 * sim.Microsecond); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, "fixed 100us timer over 350us", ctl.take(), []string{
		"congestion rto flight=2000 at 100us",
		"congestion rto flight=2000 at 200us",
		"congestion rto flight=2000 at 300us",
	})
	if d.Now() != 350*sim.Microsecond || d.RTODeadline() != 400*sim.Microsecond {
		t.Fatalf("want now 350us and the next deadline 400us, got %v %v", d.Now(), d.RTODeadline())
	}
	if err := d.FireRTO(); err != nil || d.Now() != 400*sim.Microsecond {
		t.Fatalf("FireRTO: want time 400us, got %v (%v)", d.Now(), err)
	}
}

// Two RFC 5681 rules the Reno modules once missed, checked with the RFC's
// values: limited-transmit data is not in eq. 4's FlightSize, and a
// repeated RTO holds ssthresh.
func TestReno_RFC5681_FlightSizeAndRepeatedRTO(t *testing.T) {
	cases := []struct {
		name, clause, src string
	}{
		{"LimitedTransmitNotInFlightSize",
			"RFC 5681 §3.2 step 2: data sent by limited transmit (RFC 3042) MUST NOT be included in the FlightSize of eq. 4",
			// Two limited-transmit segments leave on the first two
			// duplicates; FlightSize for eq. 4 stays 10000.
			"mss 1000\ninit_cwnd 10\nrto fixed 1s\nsend\nlose 0-1000\ndupack x2\nexpect nxt=12000\ndupack\nexpect ssthresh=5000\n"},
		{"RepeatedRTOHoldsSsthresh",
			"RFC 5681 §3.1: when the segment was already retransmitted by the timer, ssthresh is held constant",
			"mss 1000\ninit_cwnd 10\nrto fixed 1s\nsend\nlose 0-1000\nrto\nexpect ssthresh=5000\nrto\nexpect ssthresh=5000\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := runScript(t, c.name, c.src, RegistryBuilder)
			if err != nil {
				t.Fatalf("%s: %v\n%s", c.clause, err, out)
			}
		})
	}
}

// go test ./cc/cctrace/ -run - -bench . -benchmem
func BenchmarkDriverAck(b *testing.B) {
	rec := cc.NewRenoRecovery(1000, 1<<50, 3)
	d, err := NewDriver(DriverConfig{CC: cc.NewReno(1000, 10), Rec: rec,
		RTO: cc.RTOConfig{Mode: cc.RTOFixed, Fixed: sim.Second}, MSS: 1000, Size: 1 << 50, AutoSend: true})
	if err != nil {
		b.Fatal(err)
	}
	d.Send(0)
	b.ReportAllocs()
	for b.Loop() {
		d.OnAck(Ack{Ack: rec.SndUna() + 1000})
		d.TakeSent()
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.trace")
	for _, p := range files {
		if src, err := os.ReadFile(p); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte("rto fixed 1.5ms\nack 5 sack=1-2,3-4 ece rtt=1us\ndupack x3\nexpect cwnd=1\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := Parse("fuzz", src)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("want a *ParseError with a line, got %v", err)
			}
			return
		}
		for _, st := range s.Steps {
			if st.kind == 0 || st.Line < 1 {
				t.Fatalf("step %+v: want a kind and a line", st)
			}
		}
	})
}
