package barrier

import (
	"errors"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstep-sim/lockstep/sim"
)

func zeros(n int) []uint32 { return make([]uint32, n) }

// stepAll feeds reports and fails the test on any error.
func stepAll(t *testing.T, b *Barrier, rs ...Report) {
	t.Helper()
	for _, r := range rs {
		if err := b.Step(r); err != nil {
			t.Fatalf("Step(%s) = %v, want nil", fmtReport(r), err)
		}
	}
}

// TestState_MsgpackRoundTrip encodes the state in every phase with msgpack
// (as the raft FSM does), restores it into a new barrier and checks that
// both barriers then behave the same.
func TestState_MsgpackRoundTrip(t *testing.T) {
	cfg := Config{Nodes: 3, Lookahead: sim.Microsecond, StopAt: sim.Never, Term: 1}
	rep := func(node int, w uint64, term uint64, next sim.Time) Report {
		return Report{Node: node, Window: w, Term: term, NextEvent: next, MinSent: sim.Never, Sent: zeros(3)}
	}
	tests := []struct {
		name  string
		setup func(*testing.T, *Barrier)
		then  []Report
	}{
		{
			name:  "collecting",
			setup: func(t *testing.T, b *Barrier) { stepAll(t, b, rep(0, 0, 1, 0), rep(1, 0, 1, 5)) },
			then:  []Report{rep(2, 0, 1, 7)},
		},
		{
			name: "resyncing",
			setup: func(t *testing.T, b *Barrier) {
				b.SetTerm(2)
				stepAll(t, b, rep(0, 1, 2, 9), rep(0, 0, 2, 3), rep(1, 0, 2, 3))
			},
			then: []Report{rep(2, 0, 2, 4)},
		},
		{
			name: "collecting with an early report",
			setup: func(t *testing.T, b *Barrier) {
				b.SetTerm(2)
				us := sim.Microsecond
				stepAll(t, b, rep(0, 0, 2, 0), rep(1, 1, 2, 2*us), rep(1, 0, 2, 0), rep(2, 0, 2, 0))
				stepAll(t, b, rep(1, 2, 2, 3*us))
				if s := b.State(); !s.HaveEarly[1] {
					t.Fatalf("state has no early report for node 1: %s", fmtState(s))
				}
			},
			then: []Report{rep(0, 1, 2, 2*sim.Microsecond), rep(2, 1, 2, 2*sim.Microsecond)},
		},
		{
			name: "finished",
			setup: func(t *testing.T, b *Barrier) {
				stepAll(t, b, rep(0, 0, 1, sim.Never), rep(1, 0, 1, sim.Never), rep(2, 0, 1, sim.Never))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			tt.setup(t, a)
			buf, err := msgpack.Marshal(a.State())
			if err != nil {
				t.Fatalf("msgpack.Marshal(State) = %v", err)
			}
			var s State
			if err := msgpack.Unmarshal(buf, &s); err != nil {
				t.Fatalf("msgpack.Unmarshal = %v", err)
			}
			b, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Restore(s); err != nil {
				t.Fatalf("Restore(decoded state) = %v", err)
			}
			if got, want := fmtState(b.State()), fmtState(a.State()); got != want {
				t.Fatalf("restored state\n%s\nwant\n%s", got, want)
			}
			for _, r := range tt.then {
				errA, errB := a.Step(r), b.Step(r)
				if (errA == nil) != (errB == nil) {
					t.Fatalf("Step(%s): original %v, restored %v", fmtReport(r), errA, errB)
				}
			}
			if got, want := fmtState(b.State()), fmtState(a.State()); got != want {
				t.Fatalf("restored barrier went to\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestRestore_RejectsBadState checks that Restore refuses inconsistent
// states (from a corrupt snapshot) and leaves the barrier unchanged.
func TestRestore_RejectsBadState(t *testing.T) {
	cfg := Config{Nodes: 2, Lookahead: sim.Microsecond, StopAt: sim.Never, Term: 1}
	good := func() State {
		b, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		stepAll(t, b, Report{Node: 0, Term: 1, NextEvent: 0, MinSent: sim.Never, Sent: zeros(2)})
		return b.State()
	}
	tests := []struct {
		name    string
		corrupt func(*State)
	}{
		{"bad config", func(s *State) { s.Config.Lookahead = 0 }},
		{"zero phase", func(s *State) { s.Phase = 0 }},
		{"short reports", func(s *State) { s.Reports = s.Reports[:1] }},
		{"short prior flags", func(s *State) { s.HavePrior = nil }},
		{"report for another node", func(s *State) { s.Reports[0].Node = 1 }},
		{"report with short Sent", func(s *State) { s.Reports[0].Sent = nil }},
		{"report for another window", func(s *State) { s.Reports[0].Window = 3 }},
		{"prior while collecting", func(s *State) {
			s.Prior[1], s.HavePrior[1] = Report{Node: 1, Sent: zeros(2)}, true
		}},
		{"early without early window", func(s *State) {
			s.Early[1], s.HaveEarly[1] = Report{Node: 1, Window: 1, Sent: zeros(2)}, true
		}},
		{"reports while finished", func(s *State) { s.Phase = PhaseFinished }},
		{"pending grant with short Expect", func(s *State) {
			s.Pending, s.HasPending = Grant{Window: 1, Expect: zeros(1)}, true
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			before := fmtState(b.State())
			s := good()
			tt.corrupt(&s)
			if err := b.Restore(s); err == nil {
				t.Fatalf("Restore(corrupt state) = nil, want an error")
			}
			if got := fmtState(b.State()); got != before {
				t.Fatalf("failed Restore changed the barrier to\n%s\nwant\n%s", got, before)
			}
		})
	}
}

// TestState_IsACopy checks that State and Ready hand out copies: callers
// may keep or modify them.
func TestState_IsACopy(t *testing.T) {
	b, err := New(Config{Nodes: 2, Lookahead: sim.Microsecond, StopAt: sim.Never})
	if err != nil {
		t.Fatal(err)
	}
	sent := []uint32{0, 4}
	stepAll(t, b, Report{Node: 0, NextEvent: 0, MinSent: 2 * sim.Microsecond, Sent: sent})
	sent[1] = 9 // the caller reuses its buffer
	s := b.State()
	s.Reports[0].Sent[1] = 7
	stepAll(t, b, Report{Node: 1, NextEvent: 0, MinSent: sim.Never, Sent: zeros(2)})
	g, _ := b.Ready()
	if g.Expect[1] != 4 {
		t.Fatalf("Expect[1] = %d, want 4 (the count reported)", g.Expect[1])
	}
	g.Expect[1] = 0
	if g2, _ := b.Ready(); g2.Expect[1] != 4 {
		t.Fatalf("after changing a returned grant Ready gives Expect[1] = %d, want 4", g2.Expect[1])
	}
}

// TestGrant_SaturatesAtNever checks a window that starts within L of the
// largest time: its end saturates instead of overflowing.
func TestGrant_SaturatesAtNever(t *testing.T) {
	b, err := New(Config{Nodes: 1, Lookahead: sim.Microsecond, StopAt: sim.Never})
	if err != nil {
		t.Fatal(err)
	}
	stepAll(t, b, Report{NextEvent: sim.Never - 1, MinSent: sim.Never, Sent: zeros(1)})
	g, ok := b.Ready()
	if !ok || g.Finished || g.Start != sim.Never-1 || g.End != sim.Never {
		t.Fatalf("Ready() = %+v, %t; want the window [Never-1, Never)", g, ok)
	}
}

// TestStep_ErrorsAreSentinels checks errors.Is against the sentinels.
func TestStep_ErrorsAreSentinels(t *testing.T) {
	b, err := New(Config{Nodes: 1, Lookahead: sim.Microsecond, StopAt: sim.Never, Term: 2})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		r    Report
		want error
	}{
		{Report{Node: 1, Term: 2, Sent: zeros(1)}, ErrUnknownNode},
		{Report{Term: 1, Sent: zeros(1)}, ErrStale},
		{Report{Term: 3, Sent: zeros(1)}, ErrNewerTerm},
		{Report{Term: 2, Window: 1, Sent: zeros(1)}, ErrWrongWindow},
		{Report{Term: 2, Sent: zeros(2)}, ErrBadReport},
	}
	for _, tt := range tests {
		if err := b.Step(tt.r); !errors.Is(err, tt.want) {
			t.Errorf("Step(%s) = %v, want %v", fmtReport(tt.r), err, tt.want)
		}
	}
	if got := b.Stats().Stale; got != 1 {
		t.Errorf("Stats().Stale = %d, want 1", got)
	}
}
