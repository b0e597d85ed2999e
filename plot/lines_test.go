package plot

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	gplot "gonum.org/v1/plot"
)

// TestLines_LogAxesSpanDecadesAndEncode: Lines puts every series in the
// legend, spans whole decades around the data on log axes, draws a PNG
// and refuses a non-positive point on a log axis or no points at all.
func TestLines_LogAxesSpanDecadesAndEncode(t *testing.T) {
	ss := []Series{
		{Name: "HPCC", Points: []Point{{3300, 1.1}, {50e3, 1.4}, {30e6, 2.5}}},
		{Name: "DCQCN", Points: []Point{{3300, 8}, {50e3, 12}, {30e6, 4}}},
	}
	f, err := Lines("p99", "99th percentile", "flow size (bytes)", "slowdown", ss, LineOptions{LogX: true, LogY: true, SIX: true})
	if err != nil {
		t.Fatalf("Lines: want no error, got %v", err)
	}
	if _, ok := f.plot.X.Scale.(gplot.LogScale); !ok {
		t.Errorf("x scale %T, want a log scale", f.plot.X.Scale)
	}
	if f.plot.X.Min != 1e3 || f.plot.X.Max != 1e8 || f.plot.Y.Min != 1 || f.plot.Y.Max != 100 {
		t.Errorf("axes x [%g, %g] y [%g, %g], want x [1e3, 1e8] and y [1, 100]", f.plot.X.Min, f.plot.X.Max, f.plot.Y.Min, f.plot.Y.Max)
	}
	var b bytes.Buffer
	if err := f.Encode(&b, "png"); err != nil {
		t.Fatalf("Encode png: want no error, got %v", err)
	}
	if _, err := png.Decode(&b); err != nil {
		t.Fatalf("the PNG does not decode: %v", err)
	}
	svg := svgOf(t, f)
	for _, want := range []string{"HPCC", "DCQCN", "99th percentile", "10M"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	if _, err := Lines("x", "", "", "", []Series{{Name: "a", Points: []Point{{0, 1}}}}, LineOptions{LogX: true}); err == nil {
		t.Errorf("x = 0 on a log axis: want an error, got none")
	}
	if _, err := Lines("x", "", "", "", nil, LineOptions{}); err == nil {
		t.Errorf("no series: want an error, got none")
	}
}
