package experiments

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockstep-sim/lockstep/results"
)

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff},
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

// save writes p as PNG into dir/name.png.
func save(p *plot.Plot, dir, name string) error {
	w, err := p.WriterTo(7*vg.Inch, 4*vg.Inch, "png")
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(dir, name+".png"), func(out io.Writer) error {
		_, err := w.WriteTo(out)
		return err
	})
}

// bars draws groups of bars: one group per label, one bar per series.
func bars(title, ylabel string, labels []string, series []string, values [][]float64, dir, name string) error {
	p := newPlot(title, "", ylabel)
	width := vg.Points(14)
	for si, sname := range series {
		v := make(plotter.Values, len(labels))
		for li := range labels {
			v[li] = values[si][li]
		}
		b, err := plotter.NewBarChart(v, width)
		if err != nil {
			return err
		}
		b.Color = palette[si%len(palette)]
		b.LineStyle.Width = 0
		b.Offset = vg.Length(si-len(series)/2) * width
		if len(series)%2 == 0 {
			b.Offset += width / 2
		}
		p.Add(b)
		if len(series) > 1 {
			p.Legend.Add(sname, b)
		}
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.7, float64(len(labels))-0.3
	p.Y.Min = 0
	p.Legend.Left = true
	return save(p, dir, name)
}

// stacked draws one stacked bar per label from the series, bottom first.
func stacked(title, ylabel string, labels []string, series []string, values [][]float64, dir, name string) error {
	p := newPlot(title, "", ylabel)
	var below *plotter.BarChart
	for si, sname := range series {
		v := make(plotter.Values, len(labels))
		copy(v, values[si])
		b, err := plotter.NewBarChart(v, vg.Points(28))
		if err != nil {
			return err
		}
		b.Color = palette[si%len(palette)]
		b.LineStyle.Width = 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(sname, b)
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.7, float64(len(labels))-0.3
	p.Y.Min = 0
	p.Legend.Left = true
	return save(p, dir, name)
}

// scatterByLabel draws, for each label index i, the points ys[i] at x = i.
func scatterByLabel(title, ylabel string, labels []string, ys [][]float64, dir, name string) error {
	p := newPlot(title, "", ylabel)
	for i := range labels {
		pts := make(plotter.XYs, len(ys[i]))
		for j, y := range ys[i] {
			// Spread flows of one label a little so they do not overlap.
			pts[j] = plotter.XY{X: float64(i) + 0.08*float64(j) - 0.04*float64(len(ys[i])-1), Y: y}
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		s.GlyphStyle.Color = palette[i%len(palette)]
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		s.GlyphStyle.Radius = vg.Points(3)
		p.Add(s)
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.7, float64(len(labels))-0.3
	p.Y.Min = 0
	return save(p, dir, name)
}

// lines draws one line per series over shared x values.
func lines(title, xlabel, ylabel string, names []string, xs [][]float64, ys [][]float64, dir, name string) error {
	p := newPlot(title, xlabel, ylabel)
	for i, n := range names {
		pts := make(plotter.XYs, len(xs[i]))
		for j := range xs[i] {
			pts[j] = plotter.XY{X: xs[i][j], Y: ys[i][j]}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(n, l)
	}
	return save(p, dir, name)
}

func f1(x float64) string { return fmt.Sprintf("%.1f", x) }

// palette10 is palette with two more colours (matplotlib's tab10), for
// figures with up to ten series.
var palette10 = append(append([]color.Color(nil), palette...),
	color.RGBA{0xbc, 0xbd, 0x22, 0xff}, color.RGBA{0x17, 0xbe, 0xcf, 0xff})

// lineOpts tunes linesOpt.
type lineOpts struct {
	dashed []bool  // per series: draw it dashed (nil: all solid)
	xpad   float64 // widen the x axis by this fraction, room for the legend
	left   bool    // legend in the top left corner
	ymin   float64 // lower y limit (with ymax)
	ymax   float64 // upper y limit (0: automatic)
}

// linesOpt is lines with up to ten colours, optional dashes and legend
// placement.
func linesOpt(title, xlabel, ylabel string, names []string, xs, ys [][]float64, o lineOpts, dir, name string) error {
	p := newPlot(title, xlabel, ylabel)
	p.Legend.Left = o.left
	xmax := 0.0
	for i, n := range names {
		pts := make(plotter.XYs, len(xs[i]))
		for j := range xs[i] {
			pts[j] = plotter.XY{X: xs[i][j], Y: ys[i][j]}
			xmax = max(xmax, xs[i][j])
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette10[i%len(palette10)]
		l.Width = vg.Points(1.4)
		if i < len(o.dashed) && o.dashed[i] {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(n, l)
	}
	if o.xpad > 0 {
		p.X.Max = xmax * (1 + o.xpad)
	}
	if o.ymax > 0 {
		p.Y.Min, p.Y.Max = o.ymin, o.ymax
	}
	return save(p, dir, name)
}
