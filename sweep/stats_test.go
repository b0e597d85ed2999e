package sweep

import (
	"math"
	"testing"

	"github.com/lockstep-sim/lockstep/scenario"
)

func TestMeanCI95(t *testing.T) {
	// 1..5: mean 3, s = sqrt(2.5), t(0.975, 4) = 2.776.
	m, h, ok := MeanCI95([]float64{1, 2, 3, 4, 5})
	if want := 2.776 * math.Sqrt(2.5) / math.Sqrt(5); !ok || m != 3 || math.Abs(h-want) > 1e-12 {
		t.Errorf("MeanCI95(1..5) = %v ± %v, want 3 ± %v", m, h, want)
	}
	if m, h, _ := MeanCI95([]float64{0.1, 0.1, 0.1}); m != 0.1 || h != 0 {
		t.Errorf("equal values: %v ± %v, want exactly 0.1 ± 0", m, h)
	}
	if _, h, ok := MeanCI95([]float64{7}); !ok || !math.IsNaN(h) {
		t.Errorf("one value: half-width %v, want NaN", h)
	}
	// Beyond the table the expansion meets the normal quantile smoothly.
	if q := TQuantile975(31); math.Abs(q-2.0395) > 1e-3 {
		t.Errorf("t(0.975, 31) = %v, want 2.0395", q)
	}
	if q := TQuantile975(1000); math.Abs(q-1.9623) > 1e-3 {
		t.Errorf("t(0.975, 1000) = %v, want 1.9623", q)
	}
}

func TestPoints_FirstParameterSlowest(t *testing.T) {
	l := &Loaded{Params: []Param{{Path: "transport.cc", Values: []string{"reno", "cubic"}, edits: make([]scenario.Edit, 2)},
		{Path: "topology.fattree.host.buffer", Values: []string{"64KiB", "1 MB"}, edits: make([]scenario.Edit, 2)}}}
	var got []string
	for _, p := range l.Points() {
		got = append(got, p.Dir)
	}
	want := []string{"cc=reno,buffer=64KiB", "cc=reno,buffer=1_MB", "cc=cubic,buffer=64KiB", "cc=cubic,buffer=1_MB"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("points %v, want %v", got, want)
		}
	}
}
