package workloads

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleDir holds the copies of shared/workloads that examples use.
const exampleDir = "../examples/workloads"

// sharedDir is shared/workloads beside the repository (as in CI).
const sharedDir = "../../shared/workloads"

// wantMeans are computed by hand (HPCC custom_rand.py getAvg formula:
// sum of (x0+x1)/2 * (p1-p0) / 100 over segments).
var wantMeans = map[string]float64{
	"websearch.cdf":      1711250,
	"fb-hadoop.cdf":      120420.75,
	"alistorage2019.cdf": 40869.8,
}

var cdfFiles = []string{"websearch.cdf", "fb-hadoop.cdf", "alistorage2019.cdf"}

func loadCDF(t testing.TB, name string) *CDF {
	t.Helper()
	f, err := os.Open(filepath.Join(exampleDir, name))
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer f.Close()
	c, err := ParseCDF(name, f)
	if err != nil {
		t.Fatalf("ParseCDF(%s): %v", name, err)
	}
	return c
}

func TestParseCDF_ExampleFiles(t *testing.T) {
	for _, name := range cdfFiles {
		c := loadCDF(t, name)
		want := wantMeans[name]
		if math.Abs(c.Mean()-want) > 1e-6*want {
			t.Errorf("%s: Mean() = %v, want %v", name, c.Mean(), want)
		}
		if c.Name() != name {
			t.Errorf("%s: Name() = %q", name, c.Name())
		}
	}
}

// The copies in examples/workloads must stay identical to shared/workloads.
func TestExampleCDFsMatchShared(t *testing.T) {
	if _, err := os.Stat(sharedDir); err != nil {
		t.Skipf("%s not present: %v", sharedDir, err)
	}
	for _, name := range cdfFiles {
		a, err := os.ReadFile(filepath.Join(exampleDir, name))
		if err != nil {
			t.Fatalf("read copy: %v", err)
		}
		b, err := os.ReadFile(filepath.Join(sharedDir, name))
		if err != nil {
			t.Fatalf("read shared: %v", err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: %s differs from %s", name, exampleDir, sharedDir)
		}
	}
}

func mustCDF(t *testing.T, text string) *CDF {
	t.Helper()
	c, err := ParseCDF("tiny.cdf", strings.NewReader(text))
	if err != nil {
		t.Fatalf("ParseCDF(%q): %v", text, err)
	}
	return c
}

func TestCDF_MeanByHand(t *testing.T) {
	tests := []struct {
		name, text string
		want       float64
	}{
		// Half the flows uniform in [0,100], half in [100,300]:
		// 0.5*50 + 0.5*200 = 125.
		{"two segments", "0 0\n100 50\n300 100\n", 125},
		// First point at 20%: a point mass at 100 bytes, then uniform in
		// [100,200]: 0.2*100 + 0.8*150 = 140.
		{"first point above 0", "# comment\n\n100 20   # trailing comment\n200 100\n", 140},
		// Equal sizes make a point mass: 40% at 100, 60% uniform [100,200]:
		// 0.4*100 + 0.6*150 = 130; the flat 0..100 segment holds nothing.
		{"point mass", "0 0\n100 0\n100 40\n200 100\n", 130},
		{"single point", "1500 100\n", 1500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCDF(t, tc.text)
			if c.Mean() != tc.want {
				t.Fatalf("Mean() = %v, want %v", c.Mean(), tc.want)
			}
		})
	}
}

func TestCDF_InverseByHand(t *testing.T) {
	c := mustCDF(t, "0 0\n100 0\n100 40\n200 100\n")
	tests := []struct {
		u    float64
		want int64
	}{
		{0, 1}, // 0 bytes raised to 1
		{10, 100},
		{40, 100},
		{70, 150},
		{99.9, 200},
		{100, 200},
	}
	for _, tc := range tests {
		if got := c.at(tc.u); got != tc.want {
			t.Errorf("at(%v) = %d, want %d", tc.u, got, tc.want)
		}
	}
	if c.Max() != 200 {
		t.Errorf("Max() = %d, want 200", c.Max())
	}
}

func TestCDF_SampleMeanConverges(t *testing.T) {
	const n = 200_000
	for i, name := range cdfFiles {
		c := loadCDF(t, name)
		rng := testRand(uint64(100 + i))
		sum := 0.0
		for range n {
			s := c.Sample(rng)
			if s < 1 || s > c.Max() {
				t.Fatalf("%s: Sample() = %d, outside [1, %d]", name, s, c.Max())
			}
			sum += float64(s)
		}
		got := sum / n
		t.Logf("%s: sample mean %.0f, Mean() %.2f", name, got, c.Mean())
		// Standard errors are about 0.5% (websearch) to 1.3% (fb-hadoop).
		if rel := math.Abs(got-c.Mean()) / c.Mean(); rel > 0.03 {
			t.Errorf("%s: sample mean of %d draws = %.0f, Mean() = %.0f (off by %.2f%%, want <= 3%%)", name, n, got, c.Mean(), 100*rel)
		}
	}
}

func TestParseCDF_Errors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"bytes decrease", "0 0\n10000 15\n# c\n30000 30\n20000 20\n", "websearch.cdf:5: bytes must not decrease (was 30000, got 20000)"},
		{"percent decreases only", "0 0\n10000 15\n30000 30\n40000 20\n", "websearch.cdf:4: percent must not decrease (was 30, got 20)"},
		{"not 100 at end", "0 0\n10 50\n", "websearch.cdf:2: last percent must be 100, got 50"},
		{"three fields", "0 0 0\n", "websearch.cdf:1: want 2 fields \"<bytes> <cumulative percent>\", got 3"},
		{"bad number", "0 0\nabc 100\n", "websearch.cdf:2: bytes: \"abc\" is not a number"},
		{"nan", "0 NaN\n", "websearch.cdf:1: percent: \"NaN\" is not a number"},
		{"percent above 100", "0 0\n10 101\n", "websearch.cdf:2: percent must be in [0, 100], got 101"},
		{"negative bytes", "-1 0\n10 100\n", "websearch.cdf:1: bytes must be in [0, 9007199254740992], got -1"},
		{"empty", "", "websearch.cdf:1: no points (want lines of \"<bytes> <cumulative percent>\")"},
		{"only comments", "# a\n# b\n", "websearch.cdf:2: no points (want lines of \"<bytes> <cumulative percent>\")"},
		{"all zero", "0 0\n0 100\n", "websearch.cdf:2: every flow would be 0 bytes"},
		{"after 100", "0 0\n10 100\n20 100\n", "websearch.cdf:3: points must end at the first one at 100 percent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCDF("websearch.cdf", strings.NewReader(tc.text))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("ParseCDF error = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		})
	}
}
