package plot

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Input file names inside a run directory.
const (
	FCTFile        = "fct.csv"
	CwndFile       = "cwnd.csv"
	QueueDepthFile = "queue_depth.csv"
	SummaryFile    = "summary.json"
)

// Flow is one row of fct.csv. Times are in nanoseconds, as written (three
// decimals, i.e. picosecond resolution).
type Flow struct {
	ID       int64
	Size     int64   // bytes
	StartNs  float64 // NaN when the file has no start_ns column
	FCTNs    float64 // meaningful only when Finished
	Finished bool
	// Slowdown is fct.csv's slowdown (FCT over the ideal FCT); NaN when
	// the file has no such column or the cell is empty.
	Slowdown float64
}

// Point is one sample of a time series: X is virtual time in ns.
type Point struct{ X, Y float64 }

// Series is a named time series in time order (ties keep file order).
type Series struct {
	Name   string
	Points []Point
	Peak   float64 // largest Y
}

// Run is what Load read from a run directory.
type Run struct {
	Dir   string
	Title string  // summary.json "name", else "scenario", else ""
	EndNs float64 // summary.json "virtual_end_ns"; NaN when unknown
	Flows []Flow

	// Cwnd holds one series (cwnd_bytes) per flow, ordered by flow
	// (numerically when every flow label is an integer). Nil when
	// cwnd.csv is absent.
	Cwnd    []Series
	HasCwnd bool

	// Queues holds one series (depth_bytes) per switch:port, ordered by
	// peak depth, largest first, then by switch and port. Nil when
	// queue_depth.csv is absent.
	Queues    []Series
	HasQueues bool

	// CCT (collectives.csv) and Iterations (jobs.csv) hold one series per
	// job of (iteration, µs); nil when the run has no collectives.
	CCT, Iterations []Series
}

// Load reads a run directory: fct.csv (required), cwnd.csv,
// queue_depth.csv and summary.json (each optional). Every error names the
// file and, for malformed content, the line ("dir/fct.csv:7: ...").
func Load(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such run directory", dir)
		}
		return nil, fmt.Errorf("%s: %v", dir, unwrapPath(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	r := &Run{Dir: dir, EndNs: math.NaN()}

	p := filepath.Join(dir, FCTFile)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %v", p, unwrapPath(err))
	}
	if r.Flows, err = parseFCT(p, data); err != nil {
		return nil, err
	}

	p = filepath.Join(dir, CwndFile)
	if data, ok, err := readOptional(p); err != nil {
		return nil, err
	} else if ok {
		if r.Cwnd, err = parseCwnd(p, data); err != nil {
			return nil, err
		}
		r.HasCwnd = true
	}

	p = filepath.Join(dir, QueueDepthFile)
	if data, ok, err := readOptional(p); err != nil {
		return nil, err
	} else if ok {
		if r.Queues, err = parseQueueDepth(p, data); err != nil {
			return nil, err
		}
		r.HasQueues = true
	}

	if err := loadCollectives(r); err != nil {
		return nil, err
	}

	p = filepath.Join(dir, SummaryFile)
	if data, ok, err := readOptional(p); err != nil {
		return nil, err
	} else if ok {
		if err := parseSummary(p, data, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func readOptional(path string) ([]byte, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: cannot read: %v", path, unwrapPath(err))
	}
	return data, true, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// table reads a CSV file with a header line and gives access to the
// fields of the current record by column name, so extra columns and any
// column order are tolerated.
type table struct {
	path string
	r    *csv.Reader
	col  map[string]int
	rec  []string
	line int // line of the current record
}

func newTable(path string, data []byte, required ...string) (*table, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.ReuseRecord = true
	hdr, err := r.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s:1: empty file, want a header line", path)
	}
	if err != nil {
		return nil, csvErr(path, err)
	}
	t := &table{path: path, r: r, col: make(map[string]int, len(hdr))}
	for i, h := range hdr {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := t.col[h]; dup && h != "" {
			return nil, fmt.Errorf("%s:1: column %q appears twice", path, h)
		}
		t.col[h] = i
	}
	for _, name := range required {
		if _, ok := t.col[name]; !ok {
			return nil, fmt.Errorf("%s:1: missing column %q", path, name)
		}
	}
	return t, nil
}

// next reads the next record; it returns false at the end of the file.
func (t *table) next() (bool, error) {
	rec, err := t.r.Read()
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, csvErr(t.path, err)
	}
	t.rec = rec
	t.line, _ = t.r.FieldPos(0)
	return true, nil
}

func csvErr(path string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: %v", path, pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: %v", path, err)
}

func (t *table) has(name string) bool { _, ok := t.col[name]; return ok }

// str returns the trimmed field of column name ("" if there is no such
// column).
func (t *table) str(name string) string {
	i, ok := t.col[name]
	if !ok {
		return ""
	}
	return strings.TrimSpace(t.rec[i])
}

func (t *table) errorf(name, format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s: %s", t.path, t.line, name, fmt.Sprintf(format, a...))
}

// float parses a finite number; nonNeg also rejects negative values.
func (t *table) float(name string, nonNeg bool) (float64, error) {
	s := t.str(name)
	if s == "" {
		return 0, t.errorf(name, "empty, want a number")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, t.errorf(name, "%q is not a number", s)
	}
	if nonNeg && v < 0 {
		return 0, t.errorf(name, "%q is negative", s)
	}
	return v, nil
}

func (t *table) int(name string, nonNeg bool) (int64, error) {
	s := t.str(name)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, t.errorf(name, "%q is not an integer", s)
	}
	if nonNeg && v < 0 {
		return 0, t.errorf(name, "%q is negative", s)
	}
	return v, nil
}

// parseFCT reads fct.csv. Required columns: flow_id, size_bytes, fct_ns.
// finished and start_ns are used when present: without finished, a flow
// is finished when fct_ns is not empty.
func parseFCT(path string, data []byte) ([]Flow, error) {
	t, err := newTable(path, data, "flow_id", "size_bytes", "fct_ns")
	if err != nil {
		return nil, err
	}
	var flows []Flow
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return flows, nil
		}
		f := Flow{StartNs: math.NaN(), Slowdown: math.NaN()}
		if f.ID, err = t.int("flow_id", false); err != nil {
			return nil, err
		}
		if f.Size, err = t.int("size_bytes", true); err != nil {
			return nil, err
		}
		if t.has("start_ns") {
			if f.StartNs, err = t.float("start_ns", true); err != nil {
				return nil, err
			}
		}
		f.Finished = t.str("fct_ns") != ""
		if t.has("finished") {
			if f.Finished, err = strconv.ParseBool(t.str("finished")); err != nil {
				return nil, t.errorf("finished", "%q is not true or false", t.str("finished"))
			}
		}
		if f.Finished {
			if f.FCTNs, err = t.float("fct_ns", true); err != nil {
				return nil, err
			}
		}
		if t.has("slowdown") && t.str("slowdown") != "" {
			if f.Slowdown, err = t.float("slowdown", true); err != nil {
				return nil, err
			}
		}
		flows = append(flows, f)
	}
}

// parseCwnd reads cwnd.csv. Required columns: time_ns, flow, cwnd_bytes.
func parseCwnd(path string, data []byte) ([]Series, error) {
	t, err := newTable(path, data, "time_ns", "flow", "cwnd_bytes")
	if err != nil {
		return nil, err
	}
	byFlow := map[string]*Series{}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		x, err := t.float("time_ns", true)
		if err != nil {
			return nil, err
		}
		y, err := t.float("cwnd_bytes", true)
		if err != nil {
			return nil, err
		}
		flow := t.str("flow")
		if flow == "" {
			return nil, t.errorf("flow", "empty")
		}
		s := byFlow[flow]
		if s == nil {
			s = &Series{Name: flow}
			byFlow[flow] = s
		}
		s.Points = append(s.Points, Point{x, y})
	}
	out := collect(byFlow)
	numeric := true
	for i := range out {
		if _, err := strconv.ParseInt(out[i].Name, 10, 64); err != nil {
			numeric = false
		}
	}
	slices.SortFunc(out, func(a, b Series) int {
		if numeric {
			x, _ := strconv.ParseInt(a.Name, 10, 64)
			y, _ := strconv.ParseInt(b.Name, 10, 64)
			if c := cmpInt(x, y); c != 0 {
				return c
			}
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// parseQueueDepth reads queue_depth.csv. Required columns: time_ns,
// switch, port, depth_bytes. One series per switch:port.
func parseQueueDepth(path string, data []byte) ([]Series, error) {
	t, err := newTable(path, data, "time_ns", "switch", "port", "depth_bytes")
	if err != nil {
		return nil, err
	}
	type key struct {
		sw   string
		port int64
	}
	keys := map[string]key{}
	byPort := map[string]*Series{}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		x, err := t.float("time_ns", true)
		if err != nil {
			return nil, err
		}
		y, err := t.float("depth_bytes", true)
		if err != nil {
			return nil, err
		}
		sw := t.str("switch")
		if sw == "" {
			return nil, t.errorf("switch", "empty")
		}
		port, err := t.int("port", true)
		if err != nil {
			return nil, err
		}
		name := sw + ":" + strconv.FormatInt(port, 10)
		s := byPort[name]
		if s == nil {
			s = &Series{Name: name}
			byPort[name] = s
			keys[name] = key{sw, port}
		}
		s.Points = append(s.Points, Point{x, y})
	}
	out := collect(byPort)
	slices.SortFunc(out, func(a, b Series) int {
		if a.Peak != b.Peak {
			if a.Peak > b.Peak {
				return -1
			}
			return 1
		}
		ka, kb := keys[a.Name], keys[b.Name]
		if c := strings.Compare(ka.sw, kb.sw); c != 0 {
			return c
		}
		return cmpInt(ka.port, kb.port)
	})
	return out, nil
}

// collect turns the map into a slice (its order is fixed by the caller's
// sort), orders each series by time and records its peak.
func collect(m map[string]*Series) []Series {
	out := make([]Series, 0, len(m))
	for _, s := range m {
		slices.SortStableFunc(s.Points, func(a, b Point) int {
			switch {
			case a.X < b.X:
				return -1
			case a.X > b.X:
				return 1
			}
			return 0
		})
		for _, p := range s.Points {
			s.Peak = math.Max(s.Peak, p.Y)
		}
		out = append(out, *s)
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// parseSummary takes the title and the virtual end time from
// summary.json; every other field is ignored. The end is virtual_end_ps
// (integer picoseconds) when present, else virtual_end_ns, a number (or,
// in summaries written before the format change, a string).
func parseSummary(path string, data []byte, r *Run) error {
	var s struct {
		Name     string           `json:"name"`
		Scenario string           `json:"scenario"`
		EndPs    *int64           `json:"virtual_end_ps"`
		EndNs    *json.RawMessage `json:"virtual_end_ns"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			return fmt.Errorf("%s:%d: %v", path, line, err)
		}
		return fmt.Errorf("%s: %v", path, err)
	}
	r.Title = s.Name
	if r.Title == "" {
		r.Title = s.Scenario
	}
	switch {
	case s.EndPs != nil:
		if *s.EndPs >= 0 {
			r.EndNs = float64(*s.EndPs) / 1e3
		}
	case s.EndNs != nil:
		raw := bytes.Trim(*s.EndNs, `"`)
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil && f >= 0 && !math.IsInf(f, 0) {
			r.EndNs = f
		}
	}
	return nil
}
