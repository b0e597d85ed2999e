package sweep

import "math"

// t975 holds the 0.975 quantile of Student's t distribution for 1..30
// degrees of freedom (any statistics table, e.g. NIST/SEMATECH
// e-Handbook §1.3.6.7.2).
var t975 = [...]float64{
	12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
}

// TQuantile975 is the 0.975 quantile of Student's t with df degrees of
// freedom: the table for df <= 30, beyond it the Cornish-Fisher expansion
// around the normal quantile (error below 1e-3).
func TQuantile975(df int) float64 {
	if df < 1 {
		return math.NaN()
	}
	if df <= len(t975) {
		return t975[df-1]
	}
	const z = 1.959963984540054
	n := float64(df)
	return z + (z*z*z+z)/(4*n) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*n*n)
}

// MeanCI95 is the mean of xs and the half-width of its 95% confidence
// interval, t(0.975, n-1) * s / sqrt(n) with s the sample standard
// deviation; the half-width is NaN for fewer than two values, and ok is
// false for none.
func MeanCI95(xs []float64) (mean, half float64, ok bool) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN(), false
	}
	// Summing differences from the first value keeps the mean of equal
	// values exact (and their interval 0).
	var d float64
	for _, x := range xs {
		d += x - xs[0]
	}
	mean = xs[0] + d/float64(n)
	if n < 2 {
		return mean, math.NaN(), true
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	s := math.Sqrt(ss / float64(n-1))
	return mean, TQuantile975(n-1) * s / math.Sqrt(float64(n)), true
}
