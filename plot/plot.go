// Package plot draws the standard figures of a finished run from the CSV
// files the run wrote (fct.csv, and when present cwnd.csv and
// queue_depth.csv), as PNG and SVG, with gonum.org/v1/plot.
//
// Figures, each 6x4 inches:
//
//	fct_cdf       empirical CDF of the flow completion time (µs) of the
//	              finished flows; optional log x axis
//	fct_per_flow  FCT against flow id; unfinished flows are marked
//	fct_vs_size   FCT against flow size, log-log
//	slowdown_vs_size  slowdown (FCT over the ideal FCT, fct.csv) against
//	              flow size: every flow, and the median and p99 per size bin
//	cwnd          congestion window over time, one line per flow
//	queue_depth   queue depth over time, one line per switch port, the
//	              ports with the largest peak first
//
// Output is deterministic: the same inputs give the same bytes (no map
// order, clock or randomness reaches a figure). The package does not
// model anything; it only reads files and draws them. Byte quantities are
// shown in decimal units (1 KB = 1000 bytes).
package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure size and raster resolution.
const (
	Width  = 6 * vg.Inch
	Height = 4 * vg.Inch
	PNGDPI = 150 // 900x600 pixels
)

// DefaultMaxSeries is how many lines the cwnd and queue_depth figures draw
// when Options.MaxSeries is not set.
const DefaultMaxSeries = 16

// maxPointsPerSeries bounds the points drawn per line, which keeps SVG
// files small for long runs. Longer series are thinned, keeping for each
// of maxPointsPerSeries/4 time buckets its first, lowest, highest and last
// sample, so peaks and troughs survive.
const maxPointsPerSeries = 4000

// Figure names; each is written as NAME.png and NAME.svg.
const (
	FigFCTCDF     = "fct_cdf"
	FigFCTPerFlow = "fct_per_flow"
	FigFCTVsSize  = "fct_vs_size"
	FigSlowdown   = "slowdown_vs_size"
	FigCwnd       = "cwnd"
	FigQueueDepth = "queue_depth"
)

// formatOrder lists the supported output formats in the order files are
// written.
var formatOrder = []string{"png", "svg"}

// Options choose what Figures draws and Save writes.
type Options struct {
	// Formats to write: "png", "svg" or both (the default when empty).
	Formats []string
	// LogX draws fct_cdf with a logarithmic FCT axis.
	LogX bool
	// MaxSeries caps the lines in the cwnd and queue_depth figures;
	// 0 means DefaultMaxSeries.
	MaxSeries int
}

// ParseFormats checks a list of format names (case-insensitive, possibly
// with repeats) and returns them de-duplicated in canonical order. An
// empty list means all formats.
func ParseFormats(list []string) ([]string, error) {
	want := map[string]bool{}
	for _, f := range list {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		if !slices.Contains(formatOrder, f) {
			return nil, fmt.Errorf("plot: unknown format %q (want png or svg)", f)
		}
		want[f] = true
	}
	if len(want) == 0 {
		return slices.Clone(formatOrder), nil
	}
	var out []string
	for _, f := range formatOrder {
		if want[f] {
			out = append(out, f)
		}
	}
	return out, nil
}

// Figure is one drawn figure, ready to be encoded in any format. It is
// not safe for concurrent use: encode one format at a time.
type Figure struct {
	Name   string
	plot   *gplot.Plot
	legend *gplot.Legend // drawn to the right of the plot; nil for none
}

// Skip says why a figure was not drawn.
type Skip struct {
	Name   string
	Reason string
}

// Figures builds every figure the run's files allow, in a fixed order,
// and says why each other one was skipped.
func Figures(r *Run, opt Options) ([]*Figure, []Skip, error) {
	if opt.MaxSeries <= 0 {
		opt.MaxSeries = DefaultMaxSeries
	}
	var figs []*Figure
	var skips []Skip
	builders := []struct {
		name  string
		build func(*Run, Options) (*Figure, string, error)
	}{
		{FigFCTCDF, fctCDF},
		{FigFCTPerFlow, fctPerFlow},
		{FigFCTVsSize, fctVsSize},
		{FigSlowdown, slowdownVsSize},
		{FigCwnd, cwndFigure},
		{FigQueueDepth, queueFigure},
	}
	for _, b := range builders {
		f, reason, err := b.build(r, opt)
		if err != nil {
			return nil, nil, fmt.Errorf("plot: %s: %w", b.name, err)
		}
		if f == nil {
			skips = append(skips, Skip{b.name, reason})
			continue
		}
		f.Name = b.name
		figs = append(figs, f)
	}
	// Collective workloads only: no skip is reported without them.
	for _, c := range []struct {
		name, ttl, what string
		ss              []Series
	}{{FigCCT, "collective completion time", "CCT", r.CCT}, {FigIteration, "iteration time", "iteration time", r.Iterations}} {
		if len(c.ss) == 0 {
			continue
		}
		f, err := byIteration(r, c.ttl, c.what, c.ss)
		if err != nil {
			return nil, nil, fmt.Errorf("plot: %s: %w", c.name, err)
		}
		f.Name = c.name
		figs = append(figs, f)
	}
	return figs, skips, nil
}

// Encode draws the figure in format ("png" or "svg") to w.
func (f *Figure) Encode(w io.Writer, format string) error {
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(Width, Height), vgimg.UseDPI(PNGDPI))}
	case "svg":
		c = vgsvg.New(Width, Height)
	default:
		return fmt.Errorf("plot: unknown format %q (want png or svg)", format)
	}
	f.draw(draw.New(c))
	_, err := c.WriteTo(w)
	return err
}

// Output names the files written for one figure.
type Output struct {
	Figure string
	Files  []string
}

// Save writes every figure in every format into dir (created if needed),
// each file atomically (a temporary file, then a rename).
func Save(figs []*Figure, dir string, formats []string) ([]Output, error) {
	formats, err := ParseFormats(formats)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plot: %s: %v", dir, unwrapPath(err))
	}
	var out []Output
	for _, f := range figs {
		o := Output{Figure: f.Name}
		for _, format := range formats {
			path := filepath.Join(dir, f.Name+"."+format)
			if err := writeAtomic(path, func(w io.Writer) error { return f.Encode(w, format) }); err != nil {
				return out, err
			}
			o.Files = append(o.Files, path)
		}
		out = append(out, o)
	}
	return out, nil
}

func writeAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("plot: %s: %v", path, unwrapPath(err))
	}
	name := tmp.Name()
	defer os.Remove(name) // no-op after a successful rename
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("plot: %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("plot: %s: %w", path, err)
	}
	if err := os.Chmod(name, 0o644); err != nil { // CreateTemp makes it 0600
		return fmt.Errorf("plot: %s: %v", path, unwrapPath(err))
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("plot: %s: %v", path, err)
	}
	return nil
}

// ---- the figures ----

func fctCDF(r *Run, opt Options) (*Figure, string, error) {
	if len(r.Flows) == 0 {
		return nil, "no flows in " + FCTFile, nil
	}
	var us []float64
	for _, f := range r.Flows {
		if f.Finished && (!opt.LogX || f.FCTNs > 0) {
			us = append(us, f.FCTNs/1e3)
		}
	}
	if len(us) == 0 {
		return nil, "no finished flows", nil
	}
	xys := ecdf(us)
	p := newPlot(title(r, "FCT CDF"), "flow completion time (µs)",
		fmt.Sprintf("fraction of flows (%d of %d finished)", len(us), len(r.Flows)))
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, "", err
	}
	l.StepStyle = plotter.PostStep
	l.LineStyle = draw.LineStyle{Color: palette[0], Width: vg.Points(1.5)}
	p.Add(l)
	setLinear(&p.Y, 0, 1, fromZero, false)
	if opt.LogX {
		setLog(&p.X, xys[0].X, xys[len(xys)-1].X, plainLabel)
	} else {
		setLinear(&p.X, xys[0].X, xys[len(xys)-1].X, cdfNearest, false)
	}
	return &Figure{plot: p}, "", nil
}

// ecdf returns the empirical CDF F(x) = #{v <= x}/n of vs as the corners
// of a right-continuous step line (drawn with a post-step): (v_1, 0), then
// (v_(i), i/n) for the sorted values v_(1) <= ... <= v_(n). vs is sorted in
// place.
func ecdf(vs []float64) plotter.XYs {
	slices.Sort(vs)
	n := float64(len(vs))
	xys := plotter.XYs{{X: vs[0], Y: 0}}
	for i, v := range vs {
		xys = append(xys, plotter.XY{X: v, Y: float64(i+1) / n})
	}
	return xys
}

func fctPerFlow(r *Run, _ Options) (*Figure, string, error) {
	if len(r.Flows) == 0 {
		return nil, "no flows in " + FCTFile, nil
	}
	done, open, elapsed := perFlowPoints(r)
	p := newPlot(title(r, "FCT per flow"), "flow id", "flow completion time (µs)")
	fig := &Figure{plot: p}
	if len(done) > 0 {
		s, err := plotter.NewScatter(done)
		if err != nil {
			return nil, "", err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: withAlpha(palette[0], 0xc0), Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
		p.Add(s)
		if len(open) > 0 {
			fig.legend = newLegend()
			fig.legend.Add(fmt.Sprintf("finished (%d)", len(done)), s)
		}
	}
	if len(open) > 0 {
		s, err := plotter.NewScatter(open)
		if err != nil {
			return nil, "", err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: palette[2], Radius: vg.Points(3), Shape: draw.CrossGlyph{}}
		p.Add(s)
		if fig.legend == nil {
			fig.legend = newLegend()
		}
		fig.legend.Add(fmt.Sprintf("unfinished (%d)", len(open)), s)
		if elapsed {
			fig.legend.Add("(elapsed at end)")
		} else {
			fig.legend.Add("(at largest FCT)")
		}
	}
	lo, hi, top := math.Inf(1), math.Inf(-1), 0.0
	for _, pts := range []plotter.XYs{done, open} {
		for _, pt := range pts {
			lo, hi, top = math.Min(lo, pt.X), math.Max(hi, pt.X), math.Max(top, pt.Y)
		}
	}
	setLinear(&p.X, lo, hi, -1, true) // padded at both ends: a point is not on the frame
	setLinear(&p.Y, 0, top, fromZero, false)
	return fig, "", nil
}

// perFlowPoints returns (flow id, FCT in µs) for the finished flows and a
// stand-in for the unfinished ones, which have no FCT. When the run's end
// and every unfinished flow's start are known, an unfinished flow is
// placed at its elapsed time at the end (a lower bound on its FCT) and
// elapsed is true; otherwise at the largest finished FCT.
func perFlowPoints(r *Run) (done, open plotter.XYs, elapsed bool) {
	top := 0.0
	for _, f := range r.Flows {
		if f.Finished {
			done = append(done, plotter.XY{X: float64(f.ID), Y: f.FCTNs / 1e3})
			top = math.Max(top, f.FCTNs/1e3)
		}
	}
	elapsed = !math.IsNaN(r.EndNs)
	for _, f := range r.Flows {
		if !f.Finished && math.IsNaN(f.StartNs) {
			elapsed = false
		}
	}
	for _, f := range r.Flows {
		if f.Finished {
			continue
		}
		y := top
		if elapsed {
			y = math.Max(0, r.EndNs-f.StartNs) / 1e3
		}
		open = append(open, plotter.XY{X: float64(f.ID), Y: y})
	}
	return done, open, elapsed
}

func fctVsSize(r *Run, _ Options) (*Figure, string, error) {
	if len(r.Flows) == 0 {
		return nil, "no flows in " + FCTFile, nil
	}
	var xys plotter.XYs
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, f := range r.Flows {
		if !f.Finished || f.Size <= 0 || f.FCTNs <= 0 {
			continue
		}
		x, y := float64(f.Size), f.FCTNs/1e3
		xys = append(xys, plotter.XY{X: x, Y: y})
		xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
		ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
	}
	if len(xys) == 0 {
		return nil, "no finished flows with a positive size and FCT", nil
	}
	p := newPlot(title(r, "FCT vs flow size"), "flow size (bytes)", "flow completion time (µs)")
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, "", err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: withAlpha(palette[0], 0xc0), Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
	p.Add(s)
	setLog(&p.X, xmin, xmax, siLabel)
	setLog(&p.Y, ymin, ymax, plainLabel)
	return &Figure{plot: p}, "", nil
}

// slowdownVsSize draws every finished flow's slowdown against its size
// (log x), with the median and p99 of each size bin (a quarter decade
// wide, nearest rank) as lines: the figure pFabric and Homa draw.
func slowdownVsSize(r *Run, _ Options) (*Figure, string, error) {
	if len(r.Flows) == 0 {
		return nil, "no flows in " + FCTFile, nil
	}
	var xys plotter.XYs
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 1.0
	bins := map[int][]float64{}
	for _, f := range r.Flows {
		if !f.Finished || f.Size <= 0 || math.IsNaN(f.Slowdown) {
			continue
		}
		x := float64(f.Size)
		xys = append(xys, plotter.XY{X: x, Y: f.Slowdown})
		xmin, xmax, ymax = math.Min(xmin, x), math.Max(xmax, x), math.Max(ymax, f.Slowdown)
		b := int(math.Floor(4 * math.Log10(x)))
		bins[b] = append(bins[b], f.Slowdown)
	}
	if len(xys) == 0 {
		return nil, "no finished flows with a slowdown (fct.csv from an older lockstep?)", nil
	}
	p := newPlot(title(r, "Slowdown vs flow size"), "flow size (bytes)", "slowdown (FCT / ideal FCT)")
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, "", err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: withAlpha(palette[0], 0x80), Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
	p.Add(s)
	keys := make([]int, 0, len(bins))
	for k := range bins {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var med, p99 plotter.XYs
	for _, k := range keys {
		vs := bins[k]
		slices.Sort(vs)
		x := math.Pow(10, (float64(k)+0.5)/4)
		x = math.Min(math.Max(x, xmin), xmax)
		med = append(med, plotter.XY{X: x, Y: vs[rank(len(vs), 0.5)]})
		p99 = append(p99, plotter.XY{X: x, Y: vs[rank(len(vs), 0.99)]})
	}
	fig := &Figure{plot: p, legend: newLegend()}
	fig.legend.Add(fmt.Sprintf("flows (%d)", len(xys)), s)
	for i, l := range []struct {
		name string
		xys  plotter.XYs
	}{{"median per bin", med}, {"p99 per bin", p99}} {
		line, pts, err := plotter.NewLinePoints(l.xys)
		if err != nil {
			return nil, "", err
		}
		line.LineStyle = draw.LineStyle{Color: palette[1+i], Width: vg.Points(1.5)}
		pts.GlyphStyle = draw.GlyphStyle{Color: palette[1+i], Radius: vg.Points(3), Shape: draw.BoxGlyph{}}
		p.Add(line, pts)
		fig.legend.Add(l.name, line, pts)
	}
	if xmin == xmax {
		xmin, xmax = xmin/2, xmax*2
	}
	setLog(&p.X, xmin, xmax, siLabel)
	setLinear(&p.Y, 0, ymax, fromZero, false)
	return fig, "", nil
}

// rank is the index of the nearest-rank q-quantile of n sorted values.
func rank(n int, q float64) int {
	return min(max(int(math.Ceil(q*float64(n)-1e-9))-1, 0), n-1)
}

func cwndFigure(r *Run, opt Options) (*Figure, string, error) {
	if !r.HasCwnd {
		return nil, "no " + CwndFile, nil
	}
	if len(r.Cwnd) == 0 {
		return nil, CwndFile + " has no rows", nil
	}
	name := "cwnd per flow"
	if len(r.Cwnd) > opt.MaxSeries {
		name = fmt.Sprintf("cwnd, first %d of %d flows", opt.MaxSeries, len(r.Cwnd))
	}
	return seriesFigure(r, title(r, name), "cwnd", "flow ", r.Cwnd[:min(len(r.Cwnd), opt.MaxSeries)])
}

func queueFigure(r *Run, opt Options) (*Figure, string, error) {
	if !r.HasQueues {
		return nil, "no " + QueueDepthFile, nil
	}
	if len(r.Queues) == 0 {
		return nil, QueueDepthFile + " has no rows", nil
	}
	name := "queue depth per port"
	if len(r.Queues) > opt.MaxSeries {
		name = fmt.Sprintf("queue depth, top %d of %d ports by peak", opt.MaxSeries, len(r.Queues))
	}
	return seriesFigure(r, title(r, name), "queue depth", "", r.Queues[:min(len(r.Queues), opt.MaxSeries)])
}

// seriesFigure draws step lines over virtual time with a legend, choosing
// readable time and byte units from the data.
func seriesFigure(r *Run, ttl, what, prefix string, ss []Series) (*Figure, string, error) {
	tmax, ymax := 0.0, 0.0
	for _, s := range ss {
		tmax = math.Max(tmax, s.Points[len(s.Points)-1].X)
		ymax = math.Max(ymax, s.Peak)
		for _, pt := range s.Points {
			ymax = math.Max(ymax, pt.Y)
		}
	}
	tdiv, tunit := timeUnit(tmax)
	ydiv, yunit := byteUnit(ymax)
	p := newPlot(ttl, "virtual time ("+tunit+")", what+" ("+yunit+")")
	fig := &Figure{plot: p, legend: newLegend()}
	for i, s := range ss {
		pts := decimate(s.Points, maxPointsPerSeries)
		xys := make(plotter.XYs, len(pts))
		for j, pt := range pts {
			xys[j] = plotter.XY{X: pt.X / tdiv, Y: pt.Y / ydiv}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, "", err
		}
		l.StepStyle = plotter.PostStep
		l.LineStyle = seriesStyle(i)
		p.Add(l)
		fig.legend.Add(prefix+s.Name, l)
	}
	setLinear(&p.X, 0, tmax/tdiv, fromZero, false)
	setLinear(&p.Y, 0, ymax/ydiv, fromZero, false)
	return fig, "", nil
}

// ---- drawing helpers ----

// sans is the typeface of every text; Liberation ships inside gonum/plot,
// so no system font is needed and output does not depend on the machine.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Font sizes in points.
const (
	titleSize  = 13
	labelSize  = 11
	tickSize   = 10
	legendSize = 9
	minLegend  = 5 // a long legend shrinks down to this size to fit
	legendGap  = 6 // between the plot and the legend
	minTitle   = 9 // a long title shrinks down to this size to fit, then is shortened
)

// palette is Tableau 10: distinct hues that stay apart for most forms of
// colour blindness. Lines beyond ten cycle with dashes.
var palette = []color.Color{
	rgb(0x4e79a7), rgb(0xf28e2b), rgb(0xe15759), rgb(0x76b7b2), rgb(0x59a14f),
	rgb(0xedc948), rgb(0xb07aa1), rgb(0xff9da7), rgb(0x9c755f), rgb(0xbab0ac),
}

var dashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(2)}, {vg.Points(1.5), vg.Points(1.5)}, {vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}}

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA() // 16-bit, alpha 0xffff for the palette
	// color.RGBA is alpha-premultiplied.
	scale := func(v uint32) uint8 { return uint8((v >> 8) * uint32(a) / 0xff) }
	return color.RGBA{R: scale(r), G: scale(g), B: scale(b), A: a}
}

func seriesStyle(i int) draw.LineStyle {
	return draw.LineStyle{
		Color:  palette[i%len(palette)],
		Width:  vg.Points(1.2),
		Dashes: dashes[(i/len(palette))%len(dashes)],
	}
}

// seriesLine is series i drawn through xys: a line in seriesStyle(i) with
// a round marker of its colour at each point.
func seriesLine(i int, xys plotter.XYs) (*plotter.Line, *plotter.Scatter, error) {
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, nil, err
	}
	l.LineStyle = seriesStyle(i)
	pts.GlyphStyle = draw.GlyphStyle{Color: palette[i%len(palette)], Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	return l, pts, nil
}

func title(r *Run, what string) string {
	if r.Title == "" {
		return what
	}
	return r.Title + ": " + what
}

func newPlot(ttl, xlabel, ylabel string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = ttl
	p.Title.TextStyle.Font = font.From(sans, titleSize)
	p.Title.Padding = vg.Points(6)
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, labelSize)
		a.Tick.Label.Font = font.From(sans, tickSize)
		a.Label.Padding = vg.Points(3)
	}
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	g := plotter.NewGrid()
	g.Vertical = draw.LineStyle{Color: rgb(0xdddddd), Width: vg.Points(0.5)}
	g.Horizontal = g.Vertical
	p.Add(g)
	return p
}

func newLegend() *gplot.Legend {
	l := gplot.NewLegend()
	l.TextStyle.Font = font.From(sans, legendSize)
	l.Top, l.Left = true, true // text right of the icons
	l.ThumbnailWidth = vg.Points(18)
	return &l
}

// figLayout is where a figure's parts go on a canvas: the title across
// the whole width at the top (shrunk or shortened to fit), the plot below
// it, and a legend, if any, in a column at the right, level with the top
// of the plot, so it never hides data.
type figLayout struct {
	title      string
	titleStyle draw.TextStyle
	titleAt    vg.Point
	plot       draw.Canvas
	legend     draw.Canvas // zero without a legend
}

// titleMargin is the room left free at each side of the title.
const titleMargin = 4

func (f *Figure) layout(c draw.Canvas) figLayout {
	lo := figLayout{plot: c}
	if f.plot.Title.Text != "" {
		ts := f.plot.Title.TextStyle
		ts.Font = font.From(sans, titleSize)
		lo.title = fitText(&ts, f.plot.Title.Text, c.Size().X-2*vg.Points(titleMargin))
		lo.titleStyle = ts
		lo.titleAt = vg.Point{X: c.Center().X, Y: c.Max.Y}
		lo.plot = draw.Crop(c, 0, 0, 0, -(ts.Height(lo.title) + f.plot.Title.Padding))
	}
	if f.legend == nil {
		return lo
	}
	avail := lo.plot.Size().Y - vg.Points(4)
	for size := vg.Length(legendSize); ; size -= 0.5 {
		f.legend.TextStyle.Font = font.From(sans, size)
		if f.legend.Rectangle(lo.plot).Size().Y <= avail || size <= minLegend {
			break
		}
	}
	lw := f.legend.Rectangle(lo.plot).Size().X + vg.Points(4)
	lo.legend = draw.Crop(lo.plot, lo.plot.Size().X-lw, 0, 0, 0)
	lo.plot = draw.Crop(lo.plot, 0, -(lw + legendGap), 0, 0)
	return lo
}

// draw renders the figure as layout places it.
func (f *Figure) draw(c draw.Canvas) {
	lo := f.layout(c)
	q := *f.plot // shallow: the title is drawn here, across the whole width
	q.Title.Text = ""
	if lo.title != "" {
		c.FillText(lo.titleStyle, lo.titleAt, lo.title)
	}
	drawPlot(&q, lo.plot)
	if f.legend != nil {
		f.legend.Draw(lo.legend)
	}
}

// drawPlot draws p into c. gonum draws a centred axis label at the
// centre of the axis but reserves room for it (plot.go padX/padY, via
// axis.go GlyphBoxes) around a.Norm((Min+Max)/2), the arithmetic
// mid-range, which on a log axis sits near the far end: the plot then
// shrinks to make room at the wrong place. So the labels of log axes are
// drawn here, the same way gonum draws them.
func drawPlot(p *gplot.Plot, c draw.Canvas) {
	_, logX := p.X.Scale.(gplot.LogScale)
	_, logY := p.Y.Scale.(gplot.LogScale)
	q := *p // shallow: the label changes below must not reach p
	inner := c
	xs, ys := q.X.Label.TextStyle, q.Y.Label.TextStyle
	if logX {
		q.X.Label.Text = ""
		inner = draw.Crop(inner, 0, 0, xs.Height(p.X.Label.Text)+q.X.Label.Padding, 0)
	}
	if logY {
		q.Y.Label.Text = ""
		inner = draw.Crop(inner, ys.Height(p.Y.Label.Text)+ys.FontExtents().Descent+q.Y.Label.Padding, 0, 0, 0)
	}
	q.Draw(inner)
	da := q.DataCanvas(inner)
	if logX {
		c.FillText(xs, vg.Point{X: da.Center().X, Y: c.Min.Y + xs.FontExtents().Descent}, p.X.Label.Text)
	}
	if logY {
		ys.Rotation += math.Pi / 2
		x := c.Min.X + p.Y.Label.TextStyle.Height(p.Y.Label.Text) - p.Y.Label.TextStyle.FontExtents().Descent
		c.FillText(ys, vg.Point{X: x, Y: da.Center().Y}, p.Y.Label.Text)
	}
}

// logTicks labels each power of ten and puts unlabelled ticks at 2..9
// times it.
type logTicks struct{ label func(float64) string }

// Ticks implements plot.Ticker.Ticks.
func (t logTicks) Ticks(lo, hi float64) []gplot.Tick {
	var ts []gplot.Tick
	e0, e1 := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	for e := e0; e <= e1; e++ {
		v := math.Pow10(e)
		ts = append(ts, gplot.Tick{Value: v, Label: t.label(v)})
		if e == e1 {
			break
		}
		for k := 2; k <= 9; k++ {
			ts = append(ts, gplot.Tick{Value: float64(k) * v})
		}
	}
	return ts
}

// setLog makes a a log axis spanning whole decades around [lo, hi] (both
// positive).
func setLog(a *gplot.Axis, lo, hi float64, label func(float64) string) {
	a.Scale = gplot.LogScale{}
	a.Tick.Marker = logTicks{label}
	a.Min = math.Pow10(int(math.Floor(math.Log10(lo))))
	a.Max = math.Pow10(int(math.Ceil(math.Log10(hi))))
	if a.Max <= a.Min {
		a.Max = a.Min * 10
	}
}

// plainLabel writes 0.001 … 100000 in full and other powers of ten as
// 1e6.
func plainLabel(v float64) string {
	if v >= 1e-3 && v <= 1e5 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprintf("1e%d", int(math.Round(math.Log10(v))))
}

// siLabel writes powers of ten with a decimal SI prefix: 1k, 10M.
func siLabel(v float64) string {
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= u.div {
			return strconv.FormatFloat(v/u.div, 'f', -1, 64) + u.suffix
		}
	}
	return plainLabel(v)
}

// timeUnit picks the largest unit in which tmax (ns) is at least 1.
func timeUnit(tmaxNs float64) (float64, string) {
	switch {
	case tmaxNs >= 1e9:
		return 1e9, "s"
	case tmaxNs >= 1e6:
		return 1e6, "ms"
	case tmaxNs >= 1e3:
		return 1e3, "µs"
	}
	return 1, "ns"
}

// byteUnit picks the largest decimal unit in which ymax is at least 1.
func byteUnit(ymax float64) (float64, string) {
	switch {
	case ymax >= 1e9:
		return 1e9, "GB"
	case ymax >= 1e6:
		return 1e6, "MB"
	case ymax >= 1e3:
		return 1e3, "KB"
	}
	return 1, "bytes"
}

// decimate thins a time-ordered series to at most limit points: the span
// is cut into limit/4 equal time buckets and each keeps its first, lowest,
// highest and last sample, in time order.
func decimate(pts []Point, limit int) []Point {
	if len(pts) <= limit {
		return pts
	}
	buckets := limit / 4
	x0, x1 := pts[0].X, pts[len(pts)-1].X
	out := make([]Point, 0, limit)
	i := 0
	for b := 1; b <= buckets && i < len(pts); b++ {
		hi := x0 + (x1-x0)*float64(b)/float64(buckets)
		j := i + 1
		for j < len(pts) && (pts[j].X <= hi || b == buckets) {
			j++
		}
		lo, top := i, i
		for k := i; k < j; k++ {
			if pts[k].Y < pts[lo].Y {
				lo = k
			}
			if pts[k].Y > pts[top].Y {
				top = k
			}
		}
		keep := []int{i, lo, top, j - 1}
		slices.Sort(keep)
		keep = slices.Compact(keep)
		for _, k := range keep {
			out = append(out, pts[k])
		}
		i = j
	}
	return out
}
