package sweep

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
)

// Output file names in a sweep's directory.
const (
	RunsFile    = "sweep.csv"
	SummaryFile = "sweep-summary.csv"
)

// Point is one combination of parameter values.
type Point struct {
	Values []string // one per parameter, in Params order
	// Dir is the point's folder name: name=value pairs joined by commas
	// (a parameter's last path segment, or its whole path when two
	// parameters share a last segment), with characters other than
	// letters, digits and ._+- replaced by _. Each seed runs in
	// Dir/seed=N.
	Dir   string
	edits []scenario.Edit
}

// Points is the grid, the first parameter varying slowest.
func (l *Loaded) Points() []Point {
	pts := []Point{{}}
	for _, p := range l.Params {
		var next []Point
		for _, q := range pts {
			for i, v := range p.Values {
				next = append(next, Point{Values: append(append([]string(nil), q.Values...), v),
					edits: append(append([]scenario.Edit(nil), q.edits...), p.edits[i])})
			}
		}
		pts = next
	}
	names := l.paramNames()
	for i := range pts {
		var parts []string
		for k, v := range pts[i].Values {
			parts = append(parts, names[k]+"="+sanitize(v))
		}
		pts[i].Dir = strings.Join(parts, ",")
		if pts[i].Dir == "" {
			pts[i].Dir = "base"
		}
	}
	return pts
}

// paramNames are the parameters' short names for folder names.
func (l *Loaded) paramNames() []string {
	last := func(p string) string {
		p, _, _ = strings.Cut(p, "+")
		return strings.TrimSpace(p[strings.LastIndex(p, ".")+1:])
	}
	count := map[string]int{}
	for _, p := range l.Params {
		count[last(p.Path)]++
	}
	out := make([]string, len(l.Params))
	for i, p := range l.Params {
		out[i] = last(p.Path)
		if count[out[i]] > 1 {
			out[i] = p.Path
		}
	}
	return out
}

func sanitize(v string) string {
	b := []byte(v)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._+-", c) >= 0) {
			b[i] = '_'
		}
	}
	return string(b)
}

// RunFunc runs the built scenario b and writes its outputs into dir (which
// exists), exactly as `lockstep run` does.
type RunFunc func(b *scenario.Built, dir string) error

// Options tune Run.
type Options struct {
	Out      string // output directory (default: the spec's)
	Parallel int    // runs at once (default 1)
	// Progress, if set, gets a progress bar (points done, ETA), redrawn
	// in place.
	Progress io.Writer
	Run      RunFunc
	// Stop, when closed, starts no further run; Run then fails.
	Stop <-chan struct{}
}

// Report is what a sweep did.
type Report struct {
	Runs, Ran, Resumed int
	Failed             []string // dirs of the runs that failed
	Wall               time.Duration
	Out                string
}

// job is one run of the grid.
type job struct {
	point  int
	seed   uint64
	dir    string // relative to the sweep's directory
	digest string
	sum    *results.Summary
	err    error
}

// Run runs every point of the grid with every seed, skipping the runs
// whose folder holds a complete summary.json of the same effective
// scenario (digest), then writes sweep.csv and sweep-summary.csv.
// Every run is loaded (and so checked) before the first starts.
func Run(l *Loaded, opt Options) (*Report, error) {
	out := opt.Out
	if out == "" {
		out = l.Out
	}
	par := max(opt.Parallel, 1)
	pts := l.Points()
	var jobs []*job
	for pi := range pts {
		for _, seed := range l.Seeds {
			j := &job{point: pi, seed: seed, dir: filepath.Join(pts[pi].Dir, fmt.Sprintf("seed=%d", seed))}
			b, err := load(l, &pts[pi], seed)
			if err != nil {
				return nil, fmt.Errorf("%s: point %s: %v", l.File, j.dir, oneLine(err.Error()))
			}
			j.digest = b.Digest()
			jobs = append(jobs, j)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %v", out, err)
	}
	rep := &Report{Runs: len(jobs), Out: out}
	var todo []*job
	for _, j := range jobs {
		if s := finished(filepath.Join(out, j.dir), j.digest); s != nil {
			j.sum = s
			rep.Resumed++
			continue
		}
		todo = append(todo, j)
	}
	start := time.Now()
	bar := &progress{w: opt.Progress, total: len(jobs), resumed: rep.Resumed, start: start}
	bar.draw()
	work := make(chan *job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range par {
		wg.Go(func() {
			for j := range work {
				j.sum, j.err = runJob(l, &pts[j.point], j, out, opt.Run)
				mu.Lock()
				bar.ran++
				if j.err != nil {
					bar.failed++
				}
				bar.draw()
				mu.Unlock()
			}
		})
	}
	stopped := false
feed:
	for _, j := range todo {
		select {
		case <-opt.Stop:
			stopped = true
			break feed
		case work <- j:
		}
	}
	close(work)
	wg.Wait()
	bar.done()
	rep.Wall = time.Since(start)
	for _, j := range todo {
		if j.sum != nil || j.err != nil {
			rep.Ran++
		}
		if j.err != nil {
			rep.Failed = append(rep.Failed, j.dir+": "+oneLine(j.err.Error()))
		}
	}
	if err := writeCSVs(l, pts, jobs, out); err != nil {
		return rep, err
	}
	if stopped {
		return rep, errors.New("sweep stopped; run it again to resume")
	}
	if len(rep.Failed) > 0 {
		return rep, fmt.Errorf("%d of %d runs failed; first: %s", len(rep.Failed), rep.Runs, rep.Failed[0])
	}
	return rep, nil
}

func load(l *Loaded, p *Point, seed uint64) (*scenario.Built, error) {
	edits := append(append([]scenario.Edit(nil), p.edits...), scenario.WithSeed(seed))
	return scenario.LoadFile(l.Scenario, edits...)
}

func runJob(l *Loaded, p *Point, j *job, out string, run RunFunc) (*results.Summary, error) {
	b, err := load(l, p, j.seed)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(out, j.dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := run(b, dir); err != nil {
		return nil, err
	}
	s := readSummary(dir)
	if s == nil {
		return nil, fmt.Errorf("%s: no summary.json after the run", dir)
	}
	return s, nil
}

func readSummary(dir string) *results.Summary {
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil
	}
	var s results.Summary
	if json.Unmarshal(data, &s) != nil {
		return nil
	}
	return &s
}

// finished is the summary of a complete run of digest in dir, or nil.
func finished(dir, digest string) *results.Summary {
	s := readSummary(dir)
	if s == nil || !s.Complete || s.Digest != digest {
		return nil
	}
	return s
}

// progress draws "sweep [####------] 7/18 runs  3 resumed  12s  ETA 20s".
type progress struct {
	w                           io.Writer
	total, resumed, ran, failed int
	start                       time.Time
}

func (p *progress) draw() {
	if p.w == nil {
		return
	}
	done := p.resumed + p.ran
	const width = 30
	fill := width * done / max(p.total, 1)
	eta := "?"
	if p.ran > 0 {
		el := time.Since(p.start)
		eta = (el / time.Duration(p.ran) * time.Duration(p.total-done)).Round(time.Second).String()
	}
	extra := ""
	if p.resumed > 0 {
		extra += fmt.Sprintf("  %d resumed", p.resumed)
	}
	if p.failed > 0 {
		extra += fmt.Sprintf("  %d failed", p.failed)
	}
	fmt.Fprintf(p.w, "\r  sweep [%s%s] %d/%d runs%s  %s  ETA %s   ", strings.Repeat("#", fill),
		strings.Repeat("-", width-fill), done, p.total, extra, time.Since(p.start).Round(time.Second), eta)
}

func (p *progress) done() {
	if p.w != nil {
		fmt.Fprintln(p.w)
	}
}

// Metric is one sweep.csv column taken from a run's summary.
type Metric struct {
	Name string
	get  func(*results.Summary) (float64, bool)
}

func num(n json.Number) (float64, bool) {
	v, err := n.Float64()
	return v, err == nil
}

// Metrics are sweep.csv's metric columns, in order; sweep-summary.csv has
// NAME_mean and NAME_ci95 for each.
var Metrics = []Metric{
	{"fct_p50_ns", func(s *results.Summary) (float64, bool) {
		return fctP(s, func(f *results.FCTPercentiles) json.Number { return f.P50 })
	}},
	{"fct_p99_ns", func(s *results.Summary) (float64, bool) {
		return fctP(s, func(f *results.FCTPercentiles) json.Number { return f.P99 })
	}},
	{"fct_p999_ns", func(s *results.Summary) (float64, bool) {
		return fctP(s, func(f *results.FCTPercentiles) json.Number { return f.P999 })
	}},
	{"slowdown_p50", func(s *results.Summary) (float64, bool) {
		if s.Slowdown == nil {
			return 0, false
		}
		return num(s.Slowdown.P50)
	}},
	{"slowdown_p99", func(s *results.Summary) (float64, bool) {
		if s.Slowdown == nil {
			return 0, false
		}
		return num(s.Slowdown.P99)
	}},
	{"flows_finished", func(s *results.Summary) (float64, bool) { return float64(s.FlowsFinished), true }},
	{"drops", func(s *results.Summary) (float64, bool) { return float64(s.Drops), true }},
	{"ecn_marks", func(s *results.Summary) (float64, bool) { return float64(s.Marks), true }},
	{"retransmits", func(s *results.Summary) (float64, bool) { return float64(s.Retransmits), true }},
	{"timeouts", func(s *results.Summary) (float64, bool) { return float64(s.Timeouts), true }},
	{"events", func(s *results.Summary) (float64, bool) { return float64(s.Events), true }},
	{"virtual_end_ns", func(s *results.Summary) (float64, bool) {
		return num(s.EndNs)
	}},
	{"events_per_second", func(s *results.Summary) (float64, bool) { return s.Perf.EventsPerSec, true }},
	{"wall_seconds", func(s *results.Summary) (float64, bool) { return s.Perf.WallSeconds, true }},
}

func fctP(s *results.Summary, f func(*results.FCTPercentiles) json.Number) (float64, bool) {
	if s.FCT == nil {
		return 0, false
	}
	return num(f(s.FCT))
}

func format(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }

// writeCSVs writes sweep.csv and sweep-summary.csv, rows in grid order
// (whatever order the runs finished in).
func writeCSVs(l *Loaded, pts []Point, jobs []*job, out string) error {
	var paths []string
	for _, p := range l.Params {
		paths = append(paths, p.Path)
	}
	err := results.WriteFileAtomic(filepath.Join(out, RunsFile), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		hdr := append(append([]string{"point"}, paths...), "seed", "complete", "flows")
		for _, m := range Metrics {
			hdr = append(hdr, m.Name)
		}
		_ = cw.Write(append(hdr, "dir"))
		for _, j := range jobs {
			row := append(append([]string{pts[j.point].Dir}, pts[j.point].Values...), strconv.FormatUint(j.seed, 10))
			if j.sum == nil {
				row = append(row, "false", "")
				for range Metrics {
					row = append(row, "")
				}
			} else {
				row = append(row, strconv.FormatBool(j.sum.Complete), strconv.Itoa(j.sum.Flows))
				for _, m := range Metrics {
					v, ok := m.get(j.sum)
					row = append(row, cell(v, ok))
				}
			}
			_ = cw.Write(append(row, j.dir))
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(out, SummaryFile), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		hdr := append(append([]string{"point"}, paths...), "runs")
		for _, m := range Metrics {
			hdr = append(hdr, m.Name+"_mean", m.Name+"_ci95")
		}
		_ = cw.Write(hdr)
		for pi := range pts {
			var sums []*results.Summary
			for _, j := range jobs {
				if j.point == pi && j.sum != nil && j.sum.Complete {
					sums = append(sums, j.sum)
				}
			}
			row := append(append([]string{pts[pi].Dir}, pts[pi].Values...), strconv.Itoa(len(sums)))
			for _, m := range Metrics {
				var xs []float64
				for _, s := range sums {
					if v, ok := m.get(s); ok {
						xs = append(xs, v)
					}
				}
				mean, half, ok := MeanCI95(xs)
				row = append(row, cell(mean, ok && len(xs) > 0), cell(half, ok && len(xs) > 1))
			}
			_ = cw.Write(row)
		}
		cw.Flush()
		return cw.Error()
	})
}

func cell(v float64, ok bool) string {
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return format(v)
}
