package scenario

import "testing"

// TestPlacement_TwoPhaseAloneAsksNoDistribution: a placement section that
// only sets two_phase tunes a run distributed by the command line; any
// other field (or an empty section) asks for a distributed run. Unset,
// two-phase windows are on over NATS and off in memory.
func TestPlacement_TwoPhaseAloneAsksNoDistribution(t *testing.T) {
	off, on := false, true
	for _, c := range []struct {
		name     string
		p        *Placement
		asks     bool
		two, mem bool
	}{
		{"no section", nil, false, true, false},
		{"empty section", &Placement{}, true, true, false},
		{"two_phase false alone", &Placement{TwoPhase: &off}, false, false, false},
		{"two_phase true alone", &Placement{TwoPhase: &on}, false, true, true},
		{"mode and two_phase", &Placement{Mode: PlacementPerElement, TwoPhase: &off}, true, false, false},
		{"partitions and two_phase", &Placement{Partitions: 3, TwoPhase: &on}, true, true, true},
	} {
		if got := c.p.Asks(); got != c.asks {
			t.Errorf("%s: Asks() = %v, want %v", c.name, got, c.asks)
		}
		if got := c.p.TwoPhaseOrDefault(); got != c.two {
			t.Errorf("%s: TwoPhaseOrDefault() = %v, want %v", c.name, got, c.two)
		}
		if got := c.p.TwoPhaseInMemory(); got != c.mem {
			t.Errorf("%s: TwoPhaseInMemory() = %v, want %v", c.name, got, c.mem)
		}
	}
}
