package experiments

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDCQCN_QuickWritesTablesAndFigures(t *testing.T) {
	out := t.TempDir()
	env := &Env{Examples: examplesDir, Out: out, Quick: true}
	if err := dcqcnExp(env); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "dcqcn.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"| paper (Zhu et al. 2015) |", "| ConnectX firmware defaults |", "| 2 |", "| 8 |"} {
		if !strings.Contains(string(md), row) {
			t.Errorf("dcqcn.md lacks the row %q", row)
		}
	}
	for _, f := range []string{"convergence_paper.png", "convergence_connectx.png", "queue_2.png", "queue_8.png", "convergence.csv", "queue.csv"} {
		if st, err := os.Stat(filepath.Join(out, "dcqcn", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: want a non-empty file, got %v", f, err)
		}
	}
}

// TestDCQCN_FluidFixedPoint checks the fixed point against its defining
// equations: at p*, dα = dRt = dRc = 0 with every flow at C/N.
func TestDCQCN_FluidFixedPoint(t *testing.T) {
	for _, n := range []int{2, 8} {
		m := dqModelFor(n)
		p, alpha := m.fixedPoint()
		r := m.c / float64(n)
		a, b, c, d, e := m.terms(p, r)
		if got := 1 - math.Pow(1-p, m.taup*r); math.Abs(got-alpha) > 1e-9 {
			t.Fatalf("n=%d: alpha %v, want 1-(1-p)^(τ'R) = %v", n, alpha, got)
		}
		gap := m.tau * m.rai * r * (c + e) / a // Rt - Rc from dRt = 0
		drc := -r*alpha*a/(2*m.tau) + gap*r*b/2 + gap*r*d/2
		if math.Abs(drc) > 1e-6*r*alpha*a/(2*m.tau) {
			t.Fatalf("n=%d: dRc/dt = %v at p* = %v, want 0", n, drc, p)
		}
		if !(p > 0 && p < 1) {
			t.Fatalf("n=%d: p* = %v", n, p)
		}
	}
}
