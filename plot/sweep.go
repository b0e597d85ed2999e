package plot

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	gplot "gonum.org/v1/plot"
)

// SweepSummaryFile is the file SweepFigure reads (lockstep sweep).
const SweepSummaryFile = "sweep-summary.csv"

// IsSweep says whether dir holds a sweep's summary.
func IsSweep(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, SweepSummaryFile))
	return err == nil
}

// SweepFigure draws metric (a sweep.csv metric: its _mean and _ci95
// columns of sweep-summary.csv) against the parameter x, one line per
// combination of the other parameters, with the 95% confidence interval
// as error bars. x values that are all numbers are placed by value,
// others (sizes with units, names) evenly in the order of the file.
func SweepFigure(dir, metric, x string) (*Figure, error) {
	path := filepath.Join(dir, SweepSummaryFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plot: %s: %v", path, unwrapPath(err))
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		return nil, fmt.Errorf("plot: %s: not a sweep summary (%v)", path, err)
	}
	hdr := rows[0]
	col := func(name string) int { return slices.Index(hdr, name) }
	runs := col("runs")
	xi, mi, ci := col(x), col(metric+"_mean"), col(metric+"_ci95")
	if runs < 0 {
		return nil, fmt.Errorf("plot: %s: no runs column", path)
	}
	params := hdr[1:runs]
	if xi < 1 || xi >= runs {
		return nil, fmt.Errorf("plot: --x %q: not a parameter of the sweep (it has %s)", x, strings.Join(params, ", "))
	}
	if mi < 0 || ci < 0 {
		var ms []string
		for _, h := range hdr[runs+1:] {
			if m, ok := strings.CutSuffix(h, "_mean"); ok {
				ms = append(ms, m)
			}
		}
		return nil, fmt.Errorf("plot: --metric %q: not a sweep metric (one of %s)", metric, strings.Join(ms, ", "))
	}
	// x positions: numeric, else by first appearance.
	var xs []string
	numeric := true
	for _, r := range rows[1:] {
		if !slices.Contains(xs, r[xi]) {
			xs = append(xs, r[xi])
		}
		if _, err := strconv.ParseFloat(r[xi], 64); err != nil {
			numeric = false
		}
	}
	pos := func(v string) float64 {
		if numeric {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
		return float64(slices.Index(xs, v))
	}
	type line struct {
		name string
		pts  errXYs
	}
	var lines []*line
	for _, r := range rows[1:] {
		var parts []string
		for k := 1; k < runs; k++ {
			if k != xi {
				parts = append(parts, shortName(hdr[k])+"="+r[k])
			}
		}
		name := strings.Join(parts, ", ")
		i := slices.IndexFunc(lines, func(l *line) bool { return l.name == name })
		if i < 0 {
			lines = append(lines, &line{name: name})
			i = len(lines) - 1
		}
		m, err := strconv.ParseFloat(r[mi], 64)
		if err != nil {
			continue // no value (no complete run)
		}
		e, _ := strconv.ParseFloat(r[ci], 64)
		lines[i].pts.XYs = append(lines[i].pts.XYs, plotter.XY{X: pos(r[xi]), Y: m})
		lines[i].pts.errs = append(lines[i].pts.errs, e)
	}
	xlabel, _, more := strings.Cut(x, "+")
	if more {
		xlabel += " (and " + strconv.Itoa(strings.Count(x, "+")) + " more)"
	}
	p := newPlot(fmt.Sprintf("%s: %s vs %s", filepath.Base(filepath.Clean(dir)), metric, shortName(x)), xlabel,
		metric+" (mean, 95% CI)")
	fig := &Figure{Name: "sweep_" + metric + "_vs_" + shortName(x), plot: p}
	if len(lines) > 1 || lines[0].name != "" {
		fig.legend = newLegend()
	}
	for i, l := range lines {
		if len(l.pts.XYs) == 0 {
			continue
		}
		ln, pts, err := seriesLine(i, l.pts.XYs)
		if err != nil {
			return nil, err
		}
		eb, err := plotter.NewYErrorBars(l.pts)
		if err != nil {
			return nil, err
		}
		eb.LineStyle = draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(1)}
		p.Add(ln, pts, eb)
		if fig.legend != nil {
			fig.legend.Add(l.name, ln, pts)
		}
	}
	if !numeric {
		var ticks []gplot.Tick
		for i, v := range xs {
			ticks = append(ticks, gplot.Tick{Value: float64(i), Label: v})
		}
		p.X.Tick.Marker = gplot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = -0.3, float64(len(xs)-1)+0.3
	} else {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range xs {
			lo, hi = math.Min(lo, pos(v)), math.Max(hi, pos(v))
		}
		setLinear(&p.X, lo, hi, nearZero, false)
	}
	// The y axis holds every mean and its error bar.
	top := 0.0
	for _, l := range lines {
		for j, pt := range l.pts.XYs {
			_, e := l.pts.YError(j)
			top = math.Max(top, pt.Y+e)
		}
	}
	setLinear(&p.Y, 0, top, fromZero, false)
	return fig, nil
}

func shortName(path string) string {
	path, _, _ = strings.Cut(path, "+")
	return path[strings.LastIndex(path, ".")+1:]
}

// errXYs are points with a symmetric error (NaN: none).
type errXYs struct {
	plotter.XYs
	errs []float64
}

// YError implements plotter.YErrorer.
func (e errXYs) YError(i int) (float64, float64) {
	if v := e.errs[i]; v == v {
		return v, v
	}
	return 0, 0
}
