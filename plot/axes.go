package plot

import (
	"math"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// axisPad is the share of the data's span left free at each padded end of
// a linear axis, so that no line or point touches the frame.
const axisPad = 0.05

// Shares of the largest value within which a linear axis whose data
// start at or above 0 starts at 0 instead of at the data (setLinear).
const (
	fromZero   = 1    // always
	nearZero   = 0.25 // time axes, parameters
	cdfNearest = 0.05 // an FCT CDF starts at the data unless it starts very near 0
)

// niceTicks puts major ticks at steps of 1, 2 or 5 times a power of ten
// (about five of them) and unlabelled minor ticks between, and labels
// them with no superfluous digits: 0.5, 250, 1000, never 250.00.
// integer keeps the step at 1 or more (flow ids).
type niceTicks struct{ integer bool }

// niceStep is the smallest step of 1, 2 or 5 times a power of ten that
// cuts span into at most n intervals.
func niceStep(span float64, n int) float64 {
	raw := span / float64(n)
	mag := math.Pow10(int(math.Floor(math.Log10(raw))))
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw*(1-1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// Ticks implements plot.Ticker.Ticks.
func (t niceTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []gplot.Tick{{Value: lo, Label: tickLabel(lo, 1)}}
	}
	step := niceStep(hi-lo, 6)
	if t.integer {
		step = math.Max(step, 1)
	}
	// A step of 1 or 5 (times 10^e) has 5 minor intervals, 2 has 4.
	lead := step / math.Pow10(int(math.Floor(math.Log10(step)+1e-9)))
	minor := step / 5
	if math.Abs(lead-2) < 1e-9 {
		minor = step / 4
	}
	if t.integer && minor < 1 {
		minor = step
	}
	var ts []gplot.Tick
	eps := step * 1e-9
	for k := math.Ceil((lo - eps) / minor); k*minor <= hi+eps; k++ {
		v := k * minor
		if r := math.Round(v / step); math.Abs(v-r*step) < minor*1e-6 {
			v = r * step
			ts = append(ts, gplot.Tick{Value: v, Label: tickLabel(v, step)})
		} else {
			ts = append(ts, gplot.Tick{Value: v})
		}
	}
	return ts
}

// tickLabel writes v with the decimals step needs and no trailing zeros.
func tickLabel(v, step float64) string {
	dec := 0
	if step > 0 {
		dec = max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// setLinear gives a linear axis an explicit range from the data's [lo,
// hi]: from 0 when the data start at or above 0 and lo is within
// zeroWithin × hi of it, else from lo less the padding; up to hi plus the
// padding; with niceTicks.
func setLinear(a *gplot.Axis, lo, hi, zeroWithin float64, integer bool) {
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
		lo, hi = 0, 1
	}
	zero := lo >= 0 && lo <= zeroWithin*hi
	if zero {
		lo = 0
	}
	span := hi - lo
	if span <= 0 {
		span = math.Max(math.Abs(hi), 1)
	}
	a.Max = hi + axisPad*span
	a.Min = lo
	if !zero {
		a.Min = lo - axisPad*span
	}
	a.Tick.Marker = niceTicks{integer: integer}
}

// fitText shrinks ts's font until text fits in width (down to minTitle
// points), then shortens text with an ellipsis, and returns the text.
func fitText(ts *draw.TextStyle, text string, width vg.Length) string {
	for size := ts.Font.Size; ts.Width(text) > width && size > minTitle; {
		size -= 0.5
		ts.Font = font.From(sans, size)
	}
	for r := []rune(text); ts.Width(text) > width && len(r) > 2; {
		r = r[:len(r)-1]
		text = strings.TrimSpace(string(r)) + "…"
	}
	return text
}
