package experiments

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScalable_QuickWritesTablesAndFigures(t *testing.T) {
	out := t.TempDir()
	env := &Env{Examples: examplesDir, Out: out, Quick: true}
	if err := scalableExp(env); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "scalable.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Quick mode runs Reno and Scalable (Kelly): a row each in (a), (b), (c).
	for _, label := range []string{"Reno", "Scalable (Kelly)"} {
		if n := strings.Count(string(md), "| "+label+" |"); n != 3 {
			t.Errorf("%s: want 3 table rows, got %d", label, n)
		}
	}
	for _, f := range []string{"throughput_cdf_10.png", "jain.png", "flap.png", "chaos.png", "runs.csv"} {
		if st, err := os.Stat(filepath.Join(out, "scalable", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: want a non-empty file, got %v", f, err)
		}
	}
}

// TestScalable_Jain checks the index against its closed forms: n equal
// shares give 1, one flow with everything gives 1/n (Jain, Chiu, Hawe
// 1984, §3).
func TestScalable_Jain(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3, 3, 3, 3}, 1},
		{[]float64{5, 0, 0, 0, 0}, 0.2},
		{[]float64{1, 3}, 16.0 / 20},
	} {
		if got := jain(tc.xs); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("jain(%v): want %v, got %v", tc.xs, tc.want, got)
		}
	}
	if got := stddev([]float64{2, 4, 4, 4, 5, 5, 7, 9}); got != 2 {
		t.Errorf("stddev: want 2, got %v", got)
	}
}

// TestScalable_QuickInvariants runs one CC of each part at the quick scale
// and checks what must hold whatever the CC: a Jain index in (0, 1], the
// link no more than full, a P99 FCT no shorter than the P50, a flap that
// stops delivery for at least its length, goodput under capacity.
func TestScalable_QuickInvariants(t *testing.T) {
	env := &Env{Examples: examplesDir}
	c := scCCs[3] // Scalable (Linux)
	a, err := scLong(env, c, 10, 1, scQuick)
	if err != nil {
		t.Fatal(err)
	}
	if !(a.jain > 0 && a.jain <= 1) {
		t.Errorf("(a): want Jain in (0, 1], got %v", a.jain)
	}
	if !(a.util > 0.5 && a.util <= 1.01) {
		t.Errorf("(a): want the link 50-101%% used in the window, got %.3f", a.util)
	}
	if a.unfinished > 0 || a.p99 < a.p50 || a.p50 <= 0 {
		t.Errorf("(a): want every flow finished and 0 < P50 <= P99, got %d unfinished, P50 %.1f, P99 %.1f", a.unfinished, a.p50, a.p99)
	}
	b, err := scFlap(env, c, 1, scQuick)
	if err != nil {
		t.Fatal(err)
	}
	if !(b.pre > 0.8*scRate/1e9 && b.pre <= scRate/1e9*1.001) {
		t.Errorf("(b): want the pre-flap bottleneck throughput in (80%%, 100%%] of %.0f Gb/s, got %.3f", scRate/1e9, b.pre)
	}
	if !(b.goodPre > 0.8*scRate*scPayload/1e9 && b.goodPre < b.pre) {
		t.Errorf("(b): want the pre-flap goodput above 80%% of %.2f Gb/s and below the throughput %.3f, got %.3f",
			scRate*scPayload/1e9, b.pre, b.goodPre)
	}
	if math.IsNaN(b.recRTTs) || b.recRTTs < b.rampRTTs || b.firstAfter <= 0 {
		t.Errorf("(b): want a recovery after the first delivery, got %.1f RTTs from link-up, %.1f from the first delivery (%.1f ms after link-up)",
			b.recRTTs, b.rampRTTs, b.firstAfter)
	}
	g, _, err := scChaos(env, c, 1, scQuick.chaosStep)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range g {
		if !(x > 0 && x < scRate*scPayload/1e6) {
			t.Errorf("(c) step %d: want goodput in (0, %.0f) Mb/s, got %.1f", i, scRate*scPayload/1e6, x)
		}
	}
}
