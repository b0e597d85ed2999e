package plot

import (
	"math"
	"path/filepath"

	"gonum.org/v1/plot/plotter"
)

// Files and figures of collective workloads (docs/scenario.md, Outputs).
const (
	CollectivesFile = "collectives.csv"
	JobsFile        = "jobs.csv"
	FigCCT          = "cct"
	FigIteration    = "iteration_time"
)

// parseByJob reads a CSV with job and iteration columns and returns one
// series per job (in file order of first appearance) of (iteration, col in
// µs); rows with an empty col (unfinished) are left out.
func parseByJob(path string, data []byte, col string) ([]Series, error) {
	t, err := newTable(path, data, "job", "iteration", col)
	if err != nil {
		return nil, err
	}
	var out []Series
	index := map[string]int{}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		it, err := t.int("iteration", true)
		if err != nil {
			return nil, err
		}
		if t.str(col) == "" {
			continue
		}
		v, err := t.float(col, true)
		if err != nil {
			return nil, err
		}
		job := t.str("job")
		k, seen := index[job]
		if !seen {
			k = len(out)
			index[job] = k
			out = append(out, Series{Name: job})
		}
		s := &out[k]
		s.Points = append(s.Points, Point{X: float64(it), Y: v / 1e3})
		s.Peak = math.Max(s.Peak, v/1e3)
	}
}

// loadCollectives reads collectives.csv and jobs.csv when the run has them.
func loadCollectives(r *Run) error {
	for _, f := range []struct {
		name, col string
		dst       *[]Series
	}{{CollectivesFile, "cct_ns", &r.CCT}, {JobsFile, "iteration_ns", &r.Iterations}} {
		p := filepath.Join(r.Dir, f.name)
		data, ok, err := readOptional(p)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if *f.dst, err = parseByJob(p, data, f.col); err != nil {
			return err
		}
	}
	return nil
}

// byIteration draws one line with points per job: what (µs) by iteration.
func byIteration(r *Run, ttl, what string, ss []Series) (*Figure, error) {
	p := newPlot(title(r, ttl), "iteration", what+" (µs)")
	fig := &Figure{plot: p, legend: newLegend()}
	for i, s := range ss {
		xys := make(plotter.XYs, len(s.Points))
		for j, pt := range s.Points {
			xys[j] = plotter.XY{X: pt.X, Y: pt.Y}
		}
		l, pts, err := seriesLine(i, xys)
		if err != nil {
			return nil, err
		}
		p.Add(l, pts)
		fig.legend.Add(s.Name, l, pts)
	}
	p.Y.Min = 0
	return fig, nil
}
