package results

import "testing"

func TestPercentile_NearestRank(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[len(xs)-1-i] = float64(i + 1) // 100..1, unsorted
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 50}, {0.99, 99}, {0.999, 100}, {1, 100}, {0.001, 1}} {
		if got, _ := Percentile(xs, c.q); got != c.want {
			t.Errorf("p%v of 1..100 = %v, want %v", c.q*100, got, c.want)
		}
	}
	if _, ok := Percentile([]float64(nil), 0.5); ok {
		t.Error("percentile of nothing reported ok")
	}
}
