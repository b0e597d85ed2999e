package scenario

import "testing"

// TestPlacement_TwoPhaseAloneAsksNoDistribution: a placement section that
// only sets two_phase tunes a run distributed by the command line; any
// other field (or an empty section) asks for a distributed run.
func TestPlacement_TwoPhaseAloneAsksNoDistribution(t *testing.T) {
	off, on := false, true
	for _, c := range []struct {
		name string
		p    *Placement
		asks bool
		two  bool
	}{
		{"no section", nil, false, true},
		{"empty section", &Placement{}, true, true},
		{"two_phase false alone", &Placement{TwoPhase: &off}, false, false},
		{"two_phase true alone", &Placement{TwoPhase: &on}, false, true},
		{"mode and two_phase", &Placement{Mode: PlacementPerElement, TwoPhase: &off}, true, false},
		{"partitions and two_phase", &Placement{Partitions: 3, TwoPhase: &off}, true, false},
	} {
		if got := c.p.Asks(); got != c.asks {
			t.Errorf("%s: Asks() = %v, want %v", c.name, got, c.asks)
		}
		if got := c.p.TwoPhaseOrDefault(); got != c.two {
			t.Errorf("%s: TwoPhaseOrDefault() = %v, want %v", c.name, got, c.two)
		}
	}
}
