package cctrace

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// The header lines of introspect.go: their values, and the errors a bad
// one gives at its line.
func TestParse_IntrospectHeaders(t *testing.T) {
	s, err := Parse("h.trace", []byte("max_ack_delay 40ms\npacing on ss_ratio=1.5 ca_ratio=1\nsend\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := s.Header
	if h.CC.MaxAckDelay != 40*sim.Millisecond || !h.Pacing.Enabled || h.Pacing.SSRatio != 1.5 || h.Pacing.CARatio != 1 {
		t.Fatalf("want max_ack_delay 40ms and pacing on 1.5/1, got %v and %+v", h.CC.MaxAckDelay, h.Pacing)
	}
	s, _ = Parse("h.trace", []byte("pacing on\nsend\n"))
	if p := s.Header.Pacing; p.SSRatio != 2.0 || p.CARatio != 1.2 {
		t.Fatalf("pacing on: want Linux's ratios 2.0 and 1.2, got %+v", p)
	}
	for _, c := range []struct {
		src  string
		line int
		msg  string
	}{
		{"max_ack_delay\n", 1, "one duration"},
		{"max_ack_delay 40\n", 1, "no unit"},
		{"pacing\n", 1, "on or off"},
		{"pacing sometimes\n", 1, "on or off"},
		{"pacing on ss_ratio=0\n", 1, "R > 0"},
		{"pacing on speed=2\n", 1, "unknown key"},
		{"pacing off ss_ratio=2\n", 1, "takes no ratios"},
		{"send\npacing on\n", 2, "header line"},
		{"expect kk=1\n", 1, "unknown key"},
	} {
		_, err := Parse("p.trace", []byte(c.src))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != c.line || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%q: want a *ParseError at line %d with %q, got %v", c.src, c.line, c.msg, err)
		}
	}
}

// CUBIC's keys on a controller that is not CUBIC, and pace_at without
// pacing, fail with a message saying why, not with a value.
func TestExpect_IntrospectKeysThatDoNotApply(t *testing.T) {
	_, err := runScript(t, "x.trace", "cc reno\nsend\nexpect k=0 delay_min=0 pace_at=0\n", RegistryBuilder)
	var ee *ExpectError
	if !errors.As(err, &ee) || len(ee.Failures) != 1 {
		t.Fatalf("want one failed expect, got %v", err)
	}
	for _, want := range []string{"k: the controller has no CUBIC state", "delay_min: the controller has no CUBIC state", "pace_at: pacing is off"} {
		if !strings.Contains(ee.Failures[0].Msg, want) {
			t.Errorf("want %q in %q", want, ee.Failures[0].Msg)
		}
	}
}

// A value a module refuses is reported at its option line (DCTCP's g must
// be in (0, 1]; a 0 no longer means "the default").
func TestRegistryBuilder_OptionValueAtItsLine(t *testing.T) {
	for _, c := range []struct{ src, msg string }{
		{"cc dctcp\nrecovery reno\noption g=0\nsend\n", "dctcp.g: must be in (0, 1]"},
		{"cc dctcp\nrecovery reno\noption init_alpha=-0.5\nsend\n", "dctcp.init_alpha: must be in [0, 1]"},
		{"cc cubic\nrecovery reno\noption hystart_hz=250\nsend\n", "cubic.hystart_hz: applies to hystart linux-2008 only"},
	} {
		_, err := runScript(t, "v.trace", c.src, RegistryBuilder)
		var se *StepError
		if !errors.As(err, &se) || se.Line != 3 || !strings.Contains(se.Msg, c.msg) {
			t.Errorf("%q: want a *StepError at line 3 with %q, got %v", c.src, c.msg, err)
		}
	}
}
