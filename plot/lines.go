package plot

import (
	"errors"
	"math"

	"gonum.org/v1/plot/plotter"
)

// LineOptions tunes Lines.
type LineOptions struct {
	// LogX and LogY make the axis logarithmic (whole decades, each power
	// of ten labelled); every value on it must then be positive.
	LogX, LogY bool
	// SIX labels a log x axis with SI prefixes (1k, 10M), for sizes.
	SIX bool
}

// Lines is a figure of named series, each a line through its points with a
// marker at each, in the figures' house style (title, legend at the right,
// log axes whose labels gonum would misplace drawn as the other figures'
// are). The experiments use it for plots that are not of one run.
func Lines(name, title, xlabel, ylabel string, ss []Series, o LineOptions) (*Figure, error) {
	p := newPlot(title, xlabel, ylabel)
	fig := &Figure{Name: name, plot: p, legend: newLegend()}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for i, s := range ss {
		xys := make(plotter.XYs, 0, len(s.Points))
		for _, pt := range s.Points {
			if (o.LogX && !(pt.X > 0)) || (o.LogY && !(pt.Y > 0)) {
				return nil, errors.New("plot: a point of series " + s.Name + " is not positive on a log axis")
			}
			xys = append(xys, plotter.XY{X: pt.X, Y: pt.Y})
			xmin, xmax = math.Min(xmin, pt.X), math.Max(xmax, pt.X)
			ymin, ymax = math.Min(ymin, pt.Y), math.Max(ymax, pt.Y)
		}
		if len(xys) == 0 {
			continue
		}
		l, pts, err := seriesLine(i, xys)
		if err != nil {
			return nil, err
		}
		p.Add(l, pts)
		fig.legend.Add(s.Name, l, pts)
	}
	if math.IsInf(xmin, 0) {
		return nil, errors.New("plot: no points to draw in " + name)
	}
	label := plainLabel
	if o.SIX {
		label = siLabel
	}
	if o.LogX {
		setLog(&p.X, xmin, xmax, label)
	} else {
		setLinear(&p.X, xmin, xmax, nearZero, false)
	}
	if o.LogY {
		setLog(&p.Y, ymin, ymax, plainLabel)
	} else {
		setLinear(&p.Y, 0, ymax, fromZero, false)
	}
	return fig, nil
}
