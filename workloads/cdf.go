package workloads

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// maxCDFBytes bounds flow sizes in a CDF so that every size is an exact
// float64 and converts to int64 safely (2^53 bytes, about 9 PB).
const maxCDFBytes = 1 << 53

// CDF is an empirical flow-size distribution: a piecewise-linear cumulative
// distribution function through the points of a .cdf file.
//
// Interpolation: sizes are interpolated linearly between points, as the
// HPCC simulator's traffic generator does (traffic_gen/custom_rand.py,
// getValueFromPercentile): with points (x0, p0) and (x1, p1), a uniform
// percentile u in (p0, p1] maps to x0 + (x1-x0)*(u-p0)/(p1-p0). So the
// size is uniform within each segment, a segment with x0 == x1 is a point
// mass, and a segment with p0 == p1 holds no flows.
//
// If the first point has a percent p > 0 (HPCC rejects such files), p% of
// flows have exactly the first point's size, as ns-3's
// EmpiricalRandomVariable does: P(X <= x) = p says nothing about sizes below
// x, and the smallest reading is a point mass at x.
type CDF struct {
	name  string
	bytes []float64 // non-decreasing, in [0, maxCDFBytes]
	pct   []float64 // non-decreasing, in [0, 100], last == 100
	mean  float64
}

// ParseCDF reads a flow-size distribution in the format of
// shared/workloads/*.cdf and the HPCC traffic generator: one point a line,
// "<flow size in bytes> <cumulative percent>". Blank lines and comments
// (from '#' to the end of the line) are ignored. Sizes and percents may be
// decimals. Both columns must be non-decreasing, percents must lie in
// [0, 100] and the last must be 100, and not every flow may be 0 bytes.
// (HPCC also demands a strictly increasing, 0-based list; we accept the
// wider set and read it as documented on CDF.)
//
// name is used in errors, which are one line naming the file and line:
//
//	websearch.cdf:4: percent must not decrease (was 30, got 20)
func ParseCDF(name string, r io.Reader) (*CDF, error) {
	c := &CDF{name: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		errf := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
		}
		if len(fields) != 2 {
			return nil, errf("want 2 fields \"<bytes> <cumulative percent>\", got %d", len(fields))
		}
		x, err := parseNumber(fields[0])
		if err != nil {
			return nil, errf("bytes: %v", err)
		}
		if x < 0 || x > maxCDFBytes {
			return nil, errf("bytes must be in [0, %d], got %s", int64(maxCDFBytes), clipTok(fields[0]))
		}
		p, err := parseNumber(fields[1])
		if err != nil {
			return nil, errf("percent: %v", err)
		}
		if p < 0 || p > 100 {
			return nil, errf("percent must be in [0, 100], got %s", clipTok(fields[1]))
		}
		if n := len(c.bytes); n > 0 {
			if x < c.bytes[n-1] {
				return nil, errf("bytes must not decrease (was %s, got %s)", fmtNum(c.bytes[n-1]), fmtNum(x))
			}
			if p < c.pct[n-1] {
				return nil, errf("percent must not decrease (was %s, got %s)", fmtNum(c.pct[n-1]), fmtNum(p))
			}
			if c.pct[n-1] == 100 {
				return nil, errf("points must end at the first one at 100 percent")
			}
		}
		c.bytes = append(c.bytes, x)
		c.pct = append(c.pct, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, line+1, err)
	}
	if len(c.bytes) == 0 {
		return nil, fmt.Errorf("%s:%d: no points (want lines of \"<bytes> <cumulative percent>\")", name, max(line, 1))
	}
	if last := c.pct[len(c.pct)-1]; last != 100 {
		return nil, fmt.Errorf("%s:%d: last percent must be 100, got %s", name, line, fmtNum(last))
	}
	c.mean = c.computeMean()
	if c.mean <= 0 {
		return nil, fmt.Errorf("%s:%d: every flow would be 0 bytes", name, line)
	}
	return c, nil
}

// parseNumber parses a finite decimal number.
func parseNumber(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s is not a number", tokq(s))
	}
	return v, nil
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// computeMean is the exact mean of the piecewise-linear distribution: the
// point mass at the first point plus, per segment, its probability times its
// midpoint (the size is uniform within a segment).
func (c *CDF) computeMean() float64 {
	s := c.bytes[0] * c.pct[0]
	for i := 1; i < len(c.bytes); i++ {
		s += (c.bytes[i-1] + c.bytes[i]) / 2 * (c.pct[i] - c.pct[i-1])
	}
	return s / 100
}

// Name is the name the CDF was parsed under.
func (c *CDF) Name() string { return c.name }

// Mean is the exact mean flow size in bytes of the piecewise-linear
// distribution (before Sample rounds to whole bytes, which shifts it by
// well under a byte for any realistic file).
func (c *CDF) Mean() float64 { return c.mean }

// Max is the largest flow size the CDF can produce, in bytes.
func (c *CDF) Max() int64 { return max(int64(math.Round(c.bytes[len(c.bytes)-1])), 1) }

// Sample draws one flow size in bytes by inverse-transform sampling: a
// uniform percentile u in [0, 100) (one rng.Float64 call) is mapped through
// the inverse CDF with linear interpolation (see CDF), rounded to the
// nearest byte and raised to at least 1 byte.
func (c *CDF) Sample(rng *rand.Rand) int64 {
	return c.at(rng.Float64() * 100)
}

// at is the inverse CDF at percentile u in [0, 100], rounded, at least 1.
func (c *CDF) at(u float64) int64 {
	// The first point whose percent reaches u.
	i := sort.SearchFloat64s(c.pct, u)
	if i >= len(c.pct) {
		i = len(c.pct) - 1
	}
	x := c.bytes[i]
	if i > 0 && u < c.pct[i] {
		// c.pct[i-1] < u < c.pct[i], so the segment has positive height.
		x0, p0 := c.bytes[i-1], c.pct[i-1]
		x = x0 + (c.bytes[i]-x0)*(u-p0)/(c.pct[i]-p0)
	}
	return max(int64(math.Round(x)), 1)
}
