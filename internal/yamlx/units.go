package yamlx

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/lockstep-sim/lockstep/sim"
)

// Compile-time checks that the unit types decode themselves.
var (
	_ ScalarUnmarshaler = (*Size)(nil)
	_ ScalarUnmarshaler = (*Rate)(nil)
	_ ScalarUnmarshaler = (*Duration)(nil)
	_ ScalarUnmarshaler = (*Probability)(nil)
)

// quantityRE splits "2.5 Gbps" into a decimal number ("2.5") and a unit
// ("Gbps"). The exponent is limited to four digits so that a hostile
// "1e999999999" cannot make math/big build an enormous number.
var quantityRE = regexp.MustCompile(`^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?) *(.*)$`)

// parseQuantity parses "<decimal> [unit]" exactly.
func parseQuantity(s string) (num *big.Rat, unit string, ok bool) {
	m := quantityRE.FindStringSubmatch(s)
	if m == nil {
		return nil, "", false
	}
	num, ok = new(big.Rat).SetString(m[1])
	return num, m[2], ok
}

// scaleInt multiplies num by unit and returns the result if it is an
// integer that fits in an int64. whole is false for a fraction; fits is false
// for an integer outside the int64 range.
func scaleInt(num *big.Rat, unit int64) (v int64, whole, fits bool) {
	r := new(big.Rat).Mul(num, new(big.Rat).SetInt64(unit))
	if !r.IsInt() {
		return 0, false, false
	}
	if !r.Num().IsInt64() {
		return 0, true, false
	}
	return r.Num().Int64(), true, true
}

// Size is an amount of data in bytes. It decodes from a plain integer or a
// number with a unit: B, KB (or kB), MB, GB, TB in powers of 1000 and KiB,
// MiB, GiB, TiB in powers of 1024, with an optional space ("64 KiB"). A
// decimal is allowed when the result is a whole number of bytes (1.5KB is
// 1500 bytes; 1.5B is an error). Negative sizes are an error.
type Size int64

// Units of Size.
const (
	Byte     Size = 1
	Kilobyte Size = 1000 * Byte
	Megabyte Size = 1000 * Kilobyte
	Gigabyte Size = 1000 * Megabyte
	Terabyte Size = 1000 * Gigabyte
	Kibibyte Size = 1024 * Byte
	Mebibyte Size = 1024 * Kibibyte
	Gibibyte Size = 1024 * Mebibyte
	Tebibyte Size = 1024 * Gibibyte
)

var sizeUnits = map[string]Size{
	"": Byte, "B": Byte,
	"KB": Kilobyte, "kB": Kilobyte, "MB": Megabyte, "GB": Gigabyte, "TB": Terabyte,
	"KiB": Kibibyte, "MiB": Mebibyte, "GiB": Gibibyte, "TiB": Tebibyte,
}

// sizeFormats lists the units String tries, largest first.
var sizeFormats = []struct {
	unit Size
	name string
}{
	{Tebibyte, "TiB"}, {Terabyte, "TB"}, {Gibibyte, "GiB"}, {Gigabyte, "GB"},
	{Mebibyte, "MiB"}, {Megabyte, "MB"}, {Kibibyte, "KiB"}, {Kilobyte, "KB"},
}

// UnmarshalYAMLScalar implements ScalarUnmarshaler.UnmarshalYAMLScalar.
func (s *Size) UnmarshalYAMLScalar(value string) error {
	num, unit, ok := parseQuantity(value)
	mult, known := sizeUnits[unit]
	if !ok || !known {
		return fmt.Errorf("expected a size like 64KB or 1MiB, got %s", quote(value))
	}
	if num.Sign() < 0 {
		return fmt.Errorf("size must not be negative, got %s", quote(value))
	}
	v, whole, fits := scaleInt(num, int64(mult))
	switch {
	case !whole:
		return fmt.Errorf("size %s is not a whole number of bytes", quote(value))
	case !fits:
		return fmt.Errorf("size %s is too large (max %dB)", quote(value), int64(math.MaxInt64))
	}
	*s = Size(v)
	return nil
}

// Bytes returns s as a plain number of bytes.
func (s Size) Bytes() int64 { return int64(s) }

// String formats s with the largest unit that divides it exactly, so that
// the result decodes back to s: 1500 is "1500B", 64000 is "64KB", 65536 is
// "64KiB".
func (s Size) String() string {
	if s > 0 {
		for _, f := range sizeFormats {
			if s%f.unit == 0 {
				return strconv.FormatInt(int64(s/f.unit), 10) + f.name
			}
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}

// Rate is a link rate in bits per second (a sim.Bandwidth). It decodes from
// a number with a unit: bps, Kbps, Mbps, Gbps, Tbps; the same with b/s or
// bit/s ("40 Gb/s"); or a bare prefix ("100G"). The prefix may be upper or
// lower case (k is kilo, never milli); bytes per second (GBps) are not
// accepted, and neither is a plain number. The result must be a whole,
// positive number of bits per second.
type Rate sim.Bandwidth

var ratePrefixes = map[string]int64{
	"":  1,
	"k": 1e3, "K": 1e3,
	"m": 1e6, "M": 1e6,
	"g": 1e9, "G": 1e9,
	"t": 1e12, "T": 1e12,
}

// UnmarshalYAMLScalar implements ScalarUnmarshaler.UnmarshalYAMLScalar.
func (r *Rate) UnmarshalYAMLScalar(value string) error {
	bad := fmt.Errorf("expected a rate like 100Gbps or 2.5Gbps, got %s", quote(value))
	num, unit, ok := parseQuantity(value)
	if !ok || unit == "" {
		return bad
	}
	prefix, suffix := unit[:1], unit[1:]
	if _, isPrefix := ratePrefixes[prefix]; !isPrefix || prefix == "" {
		prefix, suffix = "", unit
	}
	switch suffix {
	case "bps", "b/s", "bit/s":
	case "":
		if prefix == "" {
			return bad
		}
	default:
		return bad
	}
	if num.Sign() <= 0 {
		return fmt.Errorf("rate must be positive, got %s", quote(value))
	}
	v, whole, fits := scaleInt(num, ratePrefixes[prefix])
	switch {
	case !whole:
		return fmt.Errorf("rate %s is not a whole number of bits per second", quote(value))
	case !fits:
		return fmt.Errorf("rate %s is too large (max %dbps)", quote(value), int64(math.MaxInt64))
	}
	*r = Rate(v)
	return nil
}

// Bandwidth returns r as a sim.Bandwidth.
func (r Rate) Bandwidth() sim.Bandwidth { return sim.Bandwidth(r) }

// String formats r exactly with the largest unit not above it ("100Gbps",
// "2.5Gbps", "800bps"), so that the result decodes back to r.
func (r Rate) String() string {
	return formatDecimal(int64(r), []decimalUnit{
		{int64(sim.GbitPerSecond), "Gbps"},
		{int64(sim.MbitPerSecond), "Mbps"},
		{int64(sim.KbitPerSecond), "Kbps"},
		{int64(sim.BitPerSecond), "bps"},
	})
}

// Duration is a non-negative span of virtual time in picoseconds (a
// sim.Time). It decodes from a number with a unit: ps, ns, us (or µs), ms
// or s, with an optional space; a plain number is accepted only for zero.
// The result must be a whole number of picoseconds: 2.5us is fine, 1.5ps is
// an error.
type Duration sim.Time

var durationUnits = map[string]sim.Time{
	"ps": sim.Picosecond,
	"ns": sim.Nanosecond,
	"us": sim.Microsecond, "µs": sim.Microsecond, "μs": sim.Microsecond, // micro sign, Greek mu
	"ms": sim.Millisecond,
	"s":  sim.Second,
}

// UnmarshalYAMLScalar implements ScalarUnmarshaler.UnmarshalYAMLScalar.
func (d *Duration) UnmarshalYAMLScalar(value string) error {
	num, unit, ok := parseQuantity(value)
	mult, known := durationUnits[unit]
	switch {
	case ok && unit == "" && num.Sign() == 0:
		*d = 0
		return nil
	case ok && unit == "":
		return fmt.Errorf("duration %s needs a unit (ps, ns, us, ms or s)", quote(value))
	case !ok || !known:
		return fmt.Errorf("expected a duration like 10us or 2.5ms, got %s", quote(value))
	case num.Sign() < 0:
		return fmt.Errorf("duration must not be negative, got %s", quote(value))
	}
	v, whole, fits := scaleInt(num, int64(mult))
	switch {
	case !whole:
		return fmt.Errorf("duration %s is not a whole number of picoseconds", quote(value))
	case !fits:
		return fmt.Errorf("duration %s is too large (max %dps)", quote(value), int64(math.MaxInt64))
	}
	*d = Duration(v)
	return nil
}

// Time returns d as a sim.Time.
func (d Duration) Time() sim.Time { return sim.Time(d) }

// String formats d exactly with the largest unit not above it ("10us",
// "2.5us", "15ps"), so that the result decodes back to d. Unlike
// sim.Time.String it never rounds.
func (d Duration) String() string {
	return formatDecimal(int64(d), []decimalUnit{
		{int64(sim.Second), "s"},
		{int64(sim.Millisecond), "ms"},
		{int64(sim.Microsecond), "us"},
		{int64(sim.Nanosecond), "ns"},
		{int64(sim.Picosecond), "ps"},
	})
}

// decimalUnit is a unit that is a power of ten times the base unit.
type decimalUnit struct {
	size int64
	name string
}

// formatDecimal writes v exactly in the largest of units (ordered largest
// first, the last one being 1) that is not above |v|, with as many decimals
// as needed.
func formatDecimal(v int64, units []decimalUnit) string {
	sign := ""
	mag := uint64(v)
	if v < 0 {
		sign, mag = "-", -mag
	}
	u := units[len(units)-1]
	for _, c := range units {
		if mag >= uint64(c.size) {
			u = c
			break
		}
	}
	q, r := mag/uint64(u.size), mag%uint64(u.size)
	s := sign + strconv.FormatUint(q, 10)
	if r != 0 {
		digits := len(strconv.FormatInt(u.size, 10)) - 1
		frac := strconv.FormatUint(r, 10)
		frac = strings.Repeat("0", digits-len(frac)) + frac
		s += "." + strings.TrimRight(frac, "0")
	}
	return s + u.name
}

// Probability is a number in [0, 1]. It decodes from a decimal ("0.05",
// "1e-3") or a percentage ("5%", "0.1 %").
type Probability float64

// UnmarshalYAMLScalar implements ScalarUnmarshaler.UnmarshalYAMLScalar.
func (p *Probability) UnmarshalYAMLScalar(value string) error {
	num, unit, ok := parseQuantity(value)
	if !ok || (unit != "" && unit != "%") {
		return fmt.Errorf("expected a probability like 0.05 or 5%%, got %s", quote(value))
	}
	if unit == "%" {
		num.Quo(num, big.NewRat(100, 1))
	}
	if num.Sign() < 0 || num.Cmp(big.NewRat(1, 1)) > 0 {
		return fmt.Errorf("probability %s is not between 0 and 1 (0%% and 100%%)", quote(value))
	}
	f, _ := num.Float64() // the nearest float64, so "5%" == 0.05
	*p = Probability(f)
	return nil
}

// String formats p as the shortest decimal that decodes back to p.
func (p Probability) String() string {
	return strconv.FormatFloat(float64(p), 'g', -1, 64)
}
