package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Time is a point in virtual time, an integer count of picoseconds since the
// start of the run. Durations use the same type.
type Time int64

// Units of virtual time.
const (
	Picosecond  Time = 1
	Nanosecond  Time = 1000 * Picosecond
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond

	// Never is later than any event.
	Never Time = math.MaxInt64
)

// Nanoseconds returns t in nanoseconds as a float (for reports only).
func (t Time) Nanoseconds() float64 { return float64(t) / float64(Nanosecond) }

// Seconds returns t in seconds as a float (for reports only).
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// NsString formats t as nanoseconds with three decimals (exact: 1 ps = 0.001 ns).
// The output is deterministic and readable by any CSV reader.
func (t Time) NsString() string {
	neg := ""
	v := int64(t)
	if v < 0 {
		neg = "-"
		v = -v
	}
	return fmt.Sprintf("%s%d.%03d", neg, v/1000, v%1000)
}

// String formats t with the largest unit that keeps it readable: whole
// units exactly ("10us"), otherwise up to six decimals ("3.357803ms").
func (t Time) String() string {
	if t == Never {
		return "never"
	}
	if t < 0 {
		return "-" + (-t).String()
	}
	units := []struct {
		d    Time
		name string
	}{{Second, "s"}, {Millisecond, "ms"}, {Microsecond, "us"}, {Nanosecond, "ns"}}
	for _, u := range units {
		if t >= u.d {
			if t%u.d == 0 {
				return fmt.Sprintf("%d%s", t/u.d, u.name)
			}
			s := strconv.FormatFloat(float64(t)/float64(u.d), 'f', 6, 64)
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
			return s + u.name
		}
	}
	return fmt.Sprintf("%dps", int64(t))
}

// Bandwidth is a link rate in bits per second.
type Bandwidth int64

// Units of bandwidth.
const (
	BitPerSecond  Bandwidth = 1
	KbitPerSecond Bandwidth = 1000 * BitPerSecond
	MbitPerSecond Bandwidth = 1000 * KbitPerSecond
	GbitPerSecond Bandwidth = 1000 * MbitPerSecond
)

// TxTime is how long it takes to serialise n bytes at rate b, rounded up to
// the next picosecond so that no packet takes zero time.
func (b Bandwidth) TxTime(n int) Time {
	bits := int64(n) * 8 * int64(Second)
	return Time((bits + int64(b) - 1) / int64(b))
}

// BytesIn is how many whole bytes rate b carries in d.
func (b Bandwidth) BytesIn(d Time) int64 {
	// b*d/8/1e12 without overflow for realistic values: split d.
	sec := int64(d / Second)
	rem := int64(d % Second)
	return sec*int64(b)/8 + int64(float64(b)*float64(rem)/8/float64(Second))
}

// String formats b with a unit, as the scenario parser accepts it.
func (b Bandwidth) String() string {
	switch {
	case b%GbitPerSecond == 0:
		return fmt.Sprintf("%dGbps", b/GbitPerSecond)
	case b%MbitPerSecond == 0:
		return fmt.Sprintf("%dMbps", b/MbitPerSecond)
	case b%KbitPerSecond == 0:
		return fmt.Sprintf("%dKbps", b/KbitPerSecond)
	default:
		return fmt.Sprintf("%dbps", int64(b))
	}
}
