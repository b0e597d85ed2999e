package barrier

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/lockstep-sim/lockstep/sim"
)

// TestDataDriven runs the scripts in testdata/. Commands (one per stanza;
// values are key=value, lists are (a,b,c), times are like 5us or never):
//
//	new nodes=3 lookahead=1us stop=never [term=1]
//	report node=0 window=0 next=5us minsent=never sent=(0,2,0) [term=T] [done]
//	    (or one report per input line; term defaults to the barrier's)
//	ready | advance | state | stats
//	term 2                       SetTerm(2)
//	snapshot | restore           State() into a slot; New + Restore from it
//	follower node=1 [term=1]     a Follower for node 1
//	accept node=1 [window= term= start= end= expect=() finished]
//	    offers the last grant printed by ready, or with window= the grant
//	    given by the arguments
//	receive node=1 sent-in=0 [n=1] | received node=1 window=1
//	runnable node=1              ReadyToRun(the follower's accepted grant)
//	finish node=1 next= minsent= sent=() [done] [step]
//	resend node=1 term=2 [step]  (step feeds the result to the barrier)
//
// Run with -rewrite to regenerate, then review every output by hand.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{followers: map[int]*Follower{}}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := h.run(td)
			if err != nil {
				return fmt.Sprintf("error: %s\n", fmtErr(err))
			}
			return out
		})
	})
}

type harness struct {
	b         *Barrier
	snap      State
	hasSnap   bool
	last      Grant // last grant printed by ready
	followers map[int]*Follower
}

// args is a parsed key=value line.
type args map[string][]string

func parseLine(line string) args {
	a := args{}
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			a[k] = nil
			continue
		}
		v = strings.TrimSuffix(strings.TrimPrefix(v, "("), ")")
		if v == "" {
			a[k] = []string{}
			continue
		}
		a[k] = strings.Split(v, ",")
	}
	return a
}

func cmdArgs(td *datadriven.TestData) args {
	a := args{}
	for _, c := range td.CmdArgs {
		a[c.Key] = c.Vals
	}
	return a
}

func (a args) has(k string) bool { _, ok := a[k]; return ok }

func (a args) str(k string) (string, error) {
	v, ok := a[k]
	if !ok || len(v) != 1 {
		return "", fmt.Errorf("want one value for %q, got %v", k, v)
	}
	return v[0], nil
}

func (a args) uint(k string) (uint64, error) {
	s, err := a.str(k)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(s, 10, 64)
}

func (a args) int(k string) (int, error) {
	s, err := a.str(k)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(s)
}

func (a args) time(k string) (sim.Time, error) {
	s, err := a.str(k)
	if err != nil {
		return 0, err
	}
	return parseTime(s)
}

func (a args) counts(k string) ([]uint32, error) {
	v, ok := a[k]
	if !ok {
		return nil, fmt.Errorf("missing %q", k)
	}
	out := make([]uint32, len(v))
	for i, s := range v {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return nil, err
		}
		out[i] = uint32(n)
	}
	return out, nil
}

// parseTime reads "never", "0", or an integer with a unit ps|ns|us|ms|s.
func parseTime(s string) (sim.Time, error) {
	if s == "never" {
		return sim.Never, nil
	}
	units := []struct {
		suffix string
		unit   sim.Time
	}{{"ps", sim.Picosecond}, {"ns", sim.Nanosecond}, {"us", sim.Microsecond},
		{"ms", sim.Millisecond}, {"s", sim.Second}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("time %q: %w", s, err)
			}
			return sim.Time(v) * u.unit, nil
		}
	}
	if s == "0" {
		return 0, nil
	}
	return 0, fmt.Errorf("time %q has no unit", s)
}

func (h *harness) run(td *datadriven.TestData) (string, error) {
	a := cmdArgs(td)
	if td.Cmd != "new" && h.b == nil {
		return "", fmt.Errorf("no barrier: run new first")
	}
	switch td.Cmd {
	case "new":
		return h.cmdNew(a)
	case "report":
		return h.cmdReport(td, a)
	case "ready":
		g, ok := h.b.Ready()
		if !ok {
			return "none\n", nil
		}
		h.last = g
		return fmtGrant(g) + "\n", nil
	case "advance":
		h.b.Advance()
		return "ok\n", nil
	case "term":
		if len(td.CmdArgs) != 1 {
			return "", fmt.Errorf("usage: term N")
		}
		t, err := strconv.ParseUint(td.CmdArgs[0].Key, 10, 64)
		if err != nil {
			return "", err
		}
		h.b.SetTerm(t)
		return fmt.Sprintf("term=%d phase=%v\n", h.b.Term(), h.b.Phase()), nil
	case "state":
		return fmtState(h.b.State()), nil
	case "stats":
		return fmtStats(h.b.Stats()) + "\n", nil
	case "snapshot":
		h.snap, h.hasSnap = h.b.State(), true
		return fmtState(h.snap), nil
	case "restore":
		if !h.hasSnap {
			return "", fmt.Errorf("no snapshot")
		}
		b, err := New(h.snap.Config)
		if err != nil {
			return "", err
		}
		if err := b.Restore(h.snap); err != nil {
			return "", err
		}
		h.b = b
		return fmtState(b.State()), nil
	case "follower":
		n, err := a.int("node")
		if err != nil {
			return "", err
		}
		var term uint64
		if a.has("term") {
			if term, err = a.uint("term"); err != nil {
				return "", err
			}
		}
		h.followers[n] = NewFollower(n, term)
		return "ok\n", nil
	case "accept", "receive", "received", "runnable", "finish", "resend":
		return h.cmdFollower(td.Cmd, a)
	}
	return "", fmt.Errorf("unknown command %q", td.Cmd)
}

func (h *harness) cmdNew(a args) (string, error) {
	var c Config
	var err error
	if c.Nodes, err = a.int("nodes"); err != nil {
		return "", err
	}
	if c.Lookahead, err = a.time("lookahead"); err != nil {
		return "", err
	}
	if c.StopAt, err = a.time("stop"); err != nil {
		return "", err
	}
	if a.has("term") {
		if c.Term, err = a.uint("term"); err != nil {
			return "", err
		}
	}
	b, err := New(c)
	if err != nil {
		return "", err
	}
	h.b, h.last = b, Grant{}
	return "ok\n", nil
}

func (h *harness) parseReport(a args) (Report, error) {
	r := Report{Term: h.b.Term(), Done: a.has("done")}
	var err error
	if r.Node, err = a.int("node"); err != nil {
		return r, err
	}
	if r.Window, err = a.uint("window"); err != nil {
		return r, err
	}
	if a.has("term") {
		if r.Term, err = a.uint("term"); err != nil {
			return r, err
		}
	}
	return r, fillTimes(&r, a)
}

func fillTimes(r *Report, a args) error {
	var err error
	if r.NextEvent, err = a.time("next"); err != nil {
		return err
	}
	if r.MinSent, err = a.time("minsent"); err != nil {
		return err
	}
	r.Sent, err = a.counts("sent")
	return err
}

func (h *harness) cmdReport(td *datadriven.TestData, a args) (string, error) {
	lines := []args{a}
	if len(td.CmdArgs) == 0 {
		lines = lines[:0]
		for l := range strings.SplitSeq(strings.TrimSpace(td.Input), "\n") {
			lines = append(lines, parseLine(l))
		}
	}
	var out strings.Builder
	for _, l := range lines {
		r, err := h.parseReport(l)
		if err != nil {
			return "", err
		}
		h.step(&out, r)
	}
	return out.String(), nil
}

// step feeds r to the barrier and prints the outcome.
func (h *harness) step(out *strings.Builder, r Report) {
	fmt.Fprintf(out, "%s: ", fmtReport(r))
	if err := h.b.Step(r); err != nil {
		fmt.Fprintf(out, "error: %s\n", fmtErr(err))
		return
	}
	out.WriteString("ok")
	if g, ok := h.b.Ready(); ok {
		fmt.Fprintf(out, " (pending w=%d)", g.Window)
	}
	out.WriteString("\n")
}

func (h *harness) cmdFollower(cmd string, a args) (string, error) {
	n, err := a.int("node")
	if err != nil {
		return "", err
	}
	f, ok := h.followers[n]
	if !ok {
		return "", fmt.Errorf("no follower for node %d", n)
	}
	switch cmd {
	case "accept":
		g := h.last.clone()
		if a.has("window") {
			g = Grant{} // a grant written out in full
		}
		if g, err = overrideGrant(g, a); err != nil {
			return "", err
		}
		ok, reason := f.Accept(g)
		if !ok {
			return fmt.Sprintf("%s: rejected: %s\n", fmtGrant(g), reason), nil
		}
		return fmt.Sprintf("%s: accepted\n", fmtGrant(g)), nil
	case "receive":
		w, err := a.uint("sent-in")
		if err != nil {
			return "", err
		}
		k := 1
		if a.has("n") {
			if k, err = a.int("n"); err != nil {
				return "", err
			}
		}
		for range k {
			if err := f.Receive(w); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("received for window %d: %d\n", w+1, f.Received(w+1)), nil
	case "received":
		w, err := a.uint("window")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d\n", f.Received(w)), nil
	case "runnable":
		g, ok := f.Grant()
		if !ok {
			return "no grant\n", nil
		}
		return fmt.Sprintf("w=%d received=%d expect=%d runnable=%t\n",
			g.Window, f.Received(g.Window), g.Expect[n], f.ReadyToRun(g)), nil
	case "finish":
		r := Report{Done: a.has("done")}
		if err := fillTimes(&r, a); err != nil {
			return "", err
		}
		r, err := f.Finish(r)
		if err != nil {
			return "", err
		}
		var out strings.Builder
		if a.has("step") {
			h.step(&out, r)
		} else {
			fmt.Fprintf(&out, "%s\n", fmtReport(r))
		}
		return out.String(), nil
	case "resend":
		t, err := a.uint("term")
		if err != nil {
			return "", err
		}
		rs := f.Resend(t)
		var out strings.Builder
		if len(rs) == 0 {
			out.WriteString("nothing\n")
		}
		for _, r := range rs {
			if a.has("step") {
				h.step(&out, r)
			} else {
				fmt.Fprintf(&out, "%s\n", fmtReport(r))
			}
		}
		return out.String(), nil
	}
	return "", fmt.Errorf("unknown follower command %q", cmd)
}

func overrideGrant(g Grant, a args) (Grant, error) {
	var err error
	if a.has("window") {
		if g.Window, err = a.uint("window"); err != nil {
			return g, err
		}
	}
	if a.has("term") {
		if g.Term, err = a.uint("term"); err != nil {
			return g, err
		}
	}
	if a.has("start") {
		if g.Start, err = a.time("start"); err != nil {
			return g, err
		}
	}
	if a.has("end") {
		if g.End, err = a.time("end"); err != nil {
			return g, err
		}
	}
	if a.has("expect") {
		if g.Expect, err = a.counts("expect"); err != nil {
			return g, err
		}
	}
	if a.has("finished") {
		g.Finished, g.Reason = true, FinishIdle
	}
	return g, nil
}

// fmtErr prints the sentinel an error wraps, if any: the printed report
// already names the node and window, and the details print times with
// sim.Time.String, which this test should not depend on.
func fmtErr(err error) string {
	for _, s := range []error{ErrStale, ErrNewerTerm, ErrUnknownNode, ErrWrongWindow,
		ErrDuplicate, ErrBadReport, ErrFinished, ErrLateMessage, ErrNoWindow} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return err.Error()
}

// fmtTime prints t in the largest unit that keeps it exact, as parseTime
// reads it.
func fmtTime(t sim.Time) string {
	if t == sim.Never {
		return "never"
	}
	if t == 0 {
		return "0"
	}
	for _, u := range []struct {
		unit   sim.Time
		suffix string
	}{{sim.Second, "s"}, {sim.Millisecond, "ms"}, {sim.Microsecond, "us"}, {sim.Nanosecond, "ns"}} {
		if t%u.unit == 0 {
			return fmt.Sprintf("%d%s", t/u.unit, u.suffix)
		}
	}
	return fmt.Sprintf("%dps", int64(t))
}

func fmtCounts(c []uint32) string {
	s := make([]string, len(c))
	for i, n := range c {
		s[i] = strconv.FormatUint(uint64(n), 10)
	}
	return "(" + strings.Join(s, ",") + ")"
}

func fmtReport(r Report) string {
	s := fmt.Sprintf("report n%d w=%d term=%d next=%s minsent=%s sent=%s",
		r.Node, r.Window, r.Term, fmtTime(r.NextEvent), fmtTime(r.MinSent), fmtCounts(r.Sent))
	if r.Done {
		s += " done"
	}
	return s
}

func fmtGrant(g Grant) string {
	if g.Finished {
		return fmt.Sprintf("finished w=%d term=%d reason=%v at=%s expect=%s",
			g.Window, g.Term, g.Reason, fmtTime(g.Start), fmtCounts(g.Expect))
	}
	return fmt.Sprintf("grant w=%d term=%d [%s,%s) len=%s idle=%s expect=%s",
		g.Window, g.Term, fmtTime(g.Start), fmtTime(g.End), fmtTime(g.Len()),
		fmtTime(g.Idle), fmtCounts(g.Expect))
}

func fmtStats(s Stats) string {
	return fmt.Sprintf("stats: grants=%d covered=%s idle-skips=%d skipped=%s stale=%d resyncs=%d reissued=%d dropped=%d",
		s.Grants, fmtTime(s.Covered), s.IdleSkips, fmtTime(s.Skipped), s.Stale, s.Resyncs,
		s.Reissued, s.Dropped)
}

func fmtState(s State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "term=%d phase=%v window=%d end=%s granted=%d",
		s.Term, s.Phase, s.Window, fmtTime(s.End), s.Granted)
	if s.EarlyWindow != 0 {
		fmt.Fprintf(&b, " early-window=%d", s.EarlyWindow)
	}
	b.WriteString("\n")
	for i := range s.Reports {
		if s.Phase == PhaseResyncing && i < len(s.HavePrior) && s.HavePrior[i] {
			fmt.Fprintf(&b, "  prior  %s\n", fmtReport(s.Prior[i]))
		}
		if s.Have[i] {
			fmt.Fprintf(&b, "  %s\n", fmtReport(s.Reports[i]))
		}
		if i < len(s.HaveEarly) && s.HaveEarly[i] {
			fmt.Fprintf(&b, "  early  %s\n", fmtReport(s.Early[i]))
		}
	}
	if s.HasPending {
		fmt.Fprintf(&b, "pending: %s\n", fmtGrant(s.Pending))
	}
	fmt.Fprintf(&b, "%s\n", fmtStats(s.Stats))
	return b.String()
}
