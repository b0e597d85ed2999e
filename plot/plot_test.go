package plot

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

var allFigures = []string{FigFCTCDF, FigFCTPerFlow, FigFCTVsSize, FigSlowdown, FigCwnd, FigQueueDepth}

func loadFigures(t *testing.T, dir string, opt Options) ([]*Figure, []Skip) {
	t.Helper()
	r, err := Load(dir)
	if err != nil {
		t.Fatalf("Load(%s): want no error, got %v", dir, err)
	}
	figs, skips, err := Figures(r, opt)
	if err != nil {
		t.Fatalf("Figures: want no error, got %v", err)
	}
	return figs, skips
}

func names(figs []*Figure) []string {
	var n []string
	for _, f := range figs {
		n = append(n, f.Name)
	}
	return n
}

func svgOf(t *testing.T, f *Figure) string {
	t.Helper()
	var b bytes.Buffer
	if err := f.Encode(&b, "svg"); err != nil {
		t.Fatalf("Encode %s svg: want no error, got %v", f.Name, err)
	}
	return b.String()
}

func figure(t *testing.T, figs []*Figure, name string) *Figure {
	t.Helper()
	for _, f := range figs {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("figure %s: want it drawn, got only %v", name, names(figs))
	return nil
}

func TestSave_WritesValidPNGAndSVGForEveryFigure(t *testing.T) {
	figs, skips := loadFigures(t, "testdata/run", Options{})
	if len(skips) != 0 {
		t.Errorf("skips: want none, got %v", skips)
	}
	out := filepath.Join(t.TempDir(), "figs") // Save creates it
	outs, err := Save(figs, out, nil)
	if err != nil {
		t.Fatalf("Save: want no error, got %v", err)
	}
	var got []string
	for _, o := range outs {
		got = append(got, o.Figure)
		want := []string{filepath.Join(out, o.Figure+".png"), filepath.Join(out, o.Figure+".svg")}
		if !reflect.DeepEqual(o.Files, want) {
			t.Errorf("%s files: want %v, got %v", o.Figure, want, o.Files)
		}
	}
	if !reflect.DeepEqual(got, allFigures) {
		t.Fatalf("figures: want %v, got %v", allFigures, got)
	}
	for _, name := range allFigures {
		data, err := os.ReadFile(filepath.Join(out, name+".png"))
		if err != nil {
			t.Fatalf("%s.png: %v", name, err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s.png: want a valid PNG, got %v", name, err)
		}
		// 6x4 inches at PNGDPI.
		if b := img.Bounds(); b.Dx() != 6*PNGDPI || b.Dy() != 4*PNGDPI {
			t.Errorf("%s.png: want %dx%d pixels, got %dx%d", name, 6*PNGDPI, 4*PNGDPI, b.Dx(), b.Dy())
		}
		svg, err := os.ReadFile(filepath.Join(out, name+".svg"))
		if err != nil {
			t.Fatalf("%s.svg: %v", name, err)
		}
		if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte(`width="432pt" height="288pt"`)) {
			t.Errorf("%s.svg: want an <svg> element of 432x288 pt (6x4 in), got %.200q", name, svg)
		}
		// The title comes from summary.json's "name".
		if !bytes.Contains(svg, []byte(">testrun: ")) {
			t.Errorf("%s.svg: want a title starting with \"testrun: \"", name)
		}
		// No temporary files are left behind.
		if m, _ := filepath.Glob(filepath.Join(out, ".*tmp-*")); len(m) != 0 {
			t.Errorf("want no temporary files, got %v", m)
		}
	}
}

func TestSave_FormatsSubset(t *testing.T) {
	figs, _ := loadFigures(t, "testdata/fctonly", Options{})
	out := t.TempDir()
	if _, err := Save(figs, out, []string{"SVG"}); err != nil {
		t.Fatalf("Save: want no error, got %v", err)
	}
	pngs, _ := filepath.Glob(filepath.Join(out, "*.png"))
	svgs, _ := filepath.Glob(filepath.Join(out, "*.svg"))
	if len(pngs) != 0 || len(svgs) != 3 {
		t.Errorf("format svg: want 0 png and 3 svg files, got %v and %v", pngs, svgs)
	}
}

func TestFigures_DeterministicBytes(t *testing.T) {
	for _, opt := range []Options{{}, {LogX: true, MaxSeries: 2}} {
		a, _ := loadFigures(t, "testdata/run", opt)
		b, _ := loadFigures(t, "testdata/run", opt)
		formats := []string{"svg", "png"}
		if opt.LogX {
			formats = formats[:1] // PNG is slow under -race; once is enough
		}
		for i := range a {
			for _, format := range formats {
				var x, y bytes.Buffer
				if err := a[i].Encode(&x, format); err != nil {
					t.Fatalf("Encode: %v", err)
				}
				if err := b[i].Encode(&y, format); err != nil {
					t.Fatalf("Encode: %v", err)
				}
				// Encoding the same figure twice is also stable.
				var z bytes.Buffer
				if err := a[i].Encode(&z, format); err != nil {
					t.Fatalf("Encode: %v", err)
				}
				if !bytes.Equal(x.Bytes(), y.Bytes()) || !bytes.Equal(x.Bytes(), z.Bytes()) {
					t.Errorf("%s.%s (%+v): want identical bytes from identical inputs, got %d, %d and %d bytes that differ",
						a[i].Name, format, opt, x.Len(), y.Len(), z.Len())
				}
			}
		}
	}
}

func TestFigures_MissingOptionalInputsSkipped(t *testing.T) {
	figs, skips := loadFigures(t, "testdata/fctonly", Options{})
	if want := []string{FigFCTCDF, FigFCTPerFlow, FigFCTVsSize}; !reflect.DeepEqual(names(figs), want) {
		t.Errorf("drawn: want %v, got %v", want, names(figs))
	}
	// testdata/fctonly has the fct.csv columns of lockstep before
	// slowdown: its figure is skipped, the others drawn.
	want := []Skip{{FigSlowdown, "no finished flows with a slowdown (fct.csv from an older lockstep?)"},
		{FigCwnd, "no cwnd.csv"}, {FigQueueDepth, "no queue_depth.csv"}}
	if !reflect.DeepEqual(skips, want) {
		t.Errorf("skipped: want %v, got %v", want, skips)
	}
	// Without summary.json the title is the figure's own name.
	if s := svgOf(t, figs[0]); !strings.Contains(s, ">FCT CDF<") {
		t.Errorf("fct_cdf title: want \"FCT CDF\" alone without summary.json")
	}
}

func TestFigures_EmptyInputsSkippedWithReason(t *testing.T) {
	dir := writeDir(t, map[string]string{
		FCTFile:        fctHeader,
		CwndFile:       "time_ns,flow,cwnd_bytes\n",
		QueueDepthFile: "time_ns,switch,port,depth_bytes\n",
	})
	figs, skips := loadFigures(t, dir, Options{})
	if len(figs) != 0 {
		t.Errorf("drawn: want none, got %v", names(figs))
	}
	want := []Skip{
		{FigFCTCDF, "no flows in fct.csv"}, {FigFCTPerFlow, "no flows in fct.csv"}, {FigFCTVsSize, "no flows in fct.csv"},
		{FigSlowdown, "no flows in fct.csv"}, {FigCwnd, "cwnd.csv has no rows"}, {FigQueueDepth, "queue_depth.csv has no rows"},
	}
	if !reflect.DeepEqual(skips, want) {
		t.Errorf("skipped: want %v, got %v", want, skips)
	}

	// All flows unfinished: no FCT to plot, but the per-flow figure still
	// shows them.
	dir = writeDir(t, map[string]string{FCTFile: fctHeader + "0,0,1,1000,0.000,,,1,0,0,0,false\n"})
	figs, skips = loadFigures(t, dir, Options{})
	if want := []string{FigFCTPerFlow}; !reflect.DeepEqual(names(figs), want) {
		t.Errorf("all unfinished: want %v drawn, got %v", want, names(figs))
	}
	if skips[0] != (Skip{FigFCTCDF, "no finished flows"}) {
		t.Errorf("all unfinished: want fct_cdf skipped for no finished flows, got %v", skips[0])
	}
}

// FCTs of testdata/run's finished flows in ns: 12.5, 25, 150.25,
// 1400.125, 90, 10.001. Sorted and in µs, each step of 1/6.
func TestECDF_StepsOfOneOverN(t *testing.T) {
	got := ecdf([]float64{0.0125, 0.025, 0.15025, 1.400125, 0.09, 0.010001})
	want := plotter.XYs{{X: 0.010001, Y: 0}, {X: 0.010001, Y: 1.0 / 6}, {X: 0.0125, Y: 2.0 / 6}, {X: 0.025, Y: 3.0 / 6},
		{X: 0.09, Y: 4.0 / 6}, {X: 0.15025, Y: 5.0 / 6}, {X: 1.400125, Y: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ecdf: want %v, got %v", want, got)
	}
}

func TestPerFlowPoints_UnfinishedAtElapsedTime(t *testing.T) {
	r, err := Load("testdata/run")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	done, open, elapsed := perFlowPoints(r)
	if len(done) != 6 {
		t.Errorf("finished: want 6, got %d", len(done))
	}
	// End 8000 ns; flow 5 starts at 4000 ns and flow 7 at 6000 ns.
	want := plotter.XYs{{X: 5, Y: 4}, {X: 7, Y: 2}}
	if !elapsed || !reflect.DeepEqual(open, want) {
		t.Errorf("unfinished: want %v at elapsed time, got %v (elapsed %v)", want, open, elapsed)
	}

	// Without the run's end, at the largest finished FCT (1400.125 ns).
	r.EndNs = math.NaN()
	_, open, elapsed = perFlowPoints(r)
	want = plotter.XYs{{X: 5, Y: 1.400125}, {X: 7, Y: 1.400125}}
	if elapsed || !reflect.DeepEqual(open, want) {
		t.Errorf("unfinished without end: want %v, got %v (elapsed %v)", want, open, elapsed)
	}
}

func TestFigures_MaxSeriesKeepsFirstFlowsAndTopPorts(t *testing.T) {
	figs, _ := loadFigures(t, "testdata/run", Options{MaxSeries: 2})
	cw := svgOf(t, figure(t, figs, FigCwnd))
	for _, w := range []string{">flow 2<", ">flow 3<", "first 2 of 3 flows", ">cwnd (KB)<", ">virtual time (ns)<"} {
		if !strings.Contains(cw, w) {
			t.Errorf("cwnd.svg: want %q", w)
		}
	}
	if strings.Contains(cw, ">flow 10<") {
		t.Errorf("cwnd.svg: want flow 10 (third in id order) left out with --max-series 2")
	}
	q := svgOf(t, figure(t, figs, FigQueueDepth))
	for _, w := range []string{">spine0:0<", ">leaf0:1<", "top 2 of 3 ports by peak", ">queue depth (KB)<"} {
		if !strings.Contains(q, w) {
			t.Errorf("queue_depth.svg: want %q", w)
		}
	}
	if strings.Contains(q, ">leaf0:10<") {
		t.Errorf("queue_depth.svg: want leaf0:10 (smallest peak) left out with --max-series 2")
	}
}

func TestFigures_LogX(t *testing.T) {
	// FCTs span 0.010001 to 1.400125 µs: decades 0.01 to 10.
	figs, _ := loadFigures(t, "testdata/run", Options{LogX: true})
	s := svgOf(t, figure(t, figs, FigFCTCDF))
	for _, w := range []string{">0.01<", ">0.1<", ">1<", ">10<", ">flow completion time (µs)<"} {
		if !strings.Contains(s, w) {
			t.Errorf("fct_cdf.svg with LogX: want tick or label %q", w)
		}
	}
}

func TestParseFormats(t *testing.T) {
	cases := []struct {
		in   []string
		want []string
		err  bool
	}{
		{nil, []string{"png", "svg"}, false},
		{[]string{"svg"}, []string{"svg"}, false},
		{[]string{"svg", " PNG", "svg"}, []string{"png", "svg"}, false},
		{[]string{"pdf"}, nil, true},
	}
	for _, c := range cases {
		got, err := ParseFormats(c.in)
		if (err != nil) != c.err || !slices.Equal(got, c.want) {
			t.Errorf("ParseFormats(%q): want %v (error %v), got %v (%v)", c.in, c.want, c.err, got, err)
		}
	}
}

func TestUnits(t *testing.T) {
	for _, c := range []struct {
		v    float64
		div  float64
		unit string
	}{{999, 1, "ns"}, {1e3, 1e3, "µs"}, {2.5e6, 1e6, "ms"}, {3e9, 1e9, "s"}} {
		if div, unit := timeUnit(c.v); div != c.div || unit != c.unit {
			t.Errorf("timeUnit(%v): want %v %s, got %v %s", c.v, c.div, c.unit, div, unit)
		}
	}
	for _, c := range []struct {
		v    float64
		div  float64
		unit string
	}{{999, 1, "bytes"}, {1e3, 1e3, "KB"}, {2.5e6, 1e6, "MB"}, {3e9, 1e9, "GB"}} {
		if div, unit := byteUnit(c.v); div != c.div || unit != c.unit {
			t.Errorf("byteUnit(%v): want %v %s, got %v %s", c.v, c.div, c.unit, div, unit)
		}
	}
	for v, want := range map[float64]string{1e-3: "0.001", 1: "1", 1e5: "100000", 1e6: "1e6", 1e-4: "1e-4"} {
		if got := plainLabel(v); got != want {
			t.Errorf("plainLabel(%v): want %q, got %q", v, want, got)
		}
	}
	for v, want := range map[float64]string{100: "100", 1e3: "1k", 1e4: "10k", 1e6: "1M", 1e9: "1G"} {
		if got := siLabel(v); got != want {
			t.Errorf("siLabel(%v): want %q, got %q", v, want, got)
		}
	}
}

func TestLogTicks_DecadesLabelledMinorBetween(t *testing.T) {
	ts := logTicks{plainLabel}.Ticks(1, 100)
	var major []string
	minor := 0
	for _, tk := range ts {
		if tk.Label != "" {
			major = append(major, tk.Label)
		} else {
			minor++
		}
	}
	// 1, 10, 100 labelled; 2..9 and 20..90 unlabelled.
	if !slices.Equal(major, []string{"1", "10", "100"}) || minor != 16 {
		t.Errorf("ticks over [1,100]: want labels [1 10 100] and 16 minor, got %v and %d", major, minor)
	}
}

func TestDecimate_BoundedAndKeepsExtremes(t *testing.T) {
	// 10000 samples of a sawtooth with one spike and one dip.
	pts := make([]Point, 10000)
	for i := range pts {
		pts[i] = Point{X: float64(i), Y: float64(i % 100)}
	}
	pts[4321].Y = 1e6
	pts[8765].Y = -5
	got := decimate(pts, 400)
	if len(got) > 400 {
		t.Errorf("len: want at most 400, got %d", len(got))
	}
	if got[0] != pts[0] || got[len(got)-1] != pts[len(pts)-1] {
		t.Errorf("ends: want %v and %v kept, got %v and %v", pts[0], pts[len(pts)-1], got[0], got[len(got)-1])
	}
	if !slices.Contains(got, pts[4321]) || !slices.Contains(got, pts[8765]) {
		t.Errorf("want the spike %v and the dip %v kept", pts[4321], pts[8765])
	}
	if !slices.IsSortedFunc(got, func(a, b Point) int { return int(a.X - b.X) }) {
		t.Errorf("want points in time order")
	}
	short := pts[:10]
	if d := decimate(short, 400); len(d) != 10 {
		t.Errorf("short series: want unchanged (10 points), got %d", len(d))
	}
}
