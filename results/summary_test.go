package results_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/results"
)

// summary.json's counts, times and percentiles are JSON numbers (not
// strings), the end is exact in picoseconds, and the fields that depend on
// how the run was cut are under perf.
func TestSummary_NumbersAreNumbers(t *testing.T) {
	b, p := onePart(t)
	o, err := results.Merge(b, []*results.Part{p})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := o.WriteDir(dir, results.Perf{WallSeconds: 1, Partitions: 1}, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	strs := map[string]bool{"scenario": true, "name": true, "scenario_digest": true, "stopped_by": true,
		"incomplete_reason": true}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(strings.TrimPrefix(path+"."+k, "."), x)
			}
		case string:
			if !strs[path] && !strings.HasPrefix(path, "build.") && !strings.HasPrefix(path, "perf.cut") {
				t.Errorf("%s is the string %q, want a number", path, v)
			}
		}
	}
	walk("", m)
	ps, ok := m["virtual_end_ps"].(float64)
	if !ok || int64(ps) != int64(o.End) {
		t.Errorf("virtual_end_ps: want %d, got %v", int64(o.End), m["virtual_end_ps"])
	}
	if ns, ok := m["virtual_end_ns"].(float64); !ok || ns != float64(o.End)/1e3 {
		t.Errorf("virtual_end_ns: want the number %v, got %v", float64(o.End)/1e3, m["virtual_end_ns"])
	}
	for _, k := range []string{"peak_event_queue", "packet_pool_slots"} {
		if _, top := m[k]; top {
			t.Errorf("%s is a top-level field; it depends on the cut, so it belongs under perf", k)
		}
		if v, _ := m["perf"].(map[string]any)[k].(float64); v <= 0 {
			t.Errorf("perf.%s: want a positive number, got %v", k, m["perf"].(map[string]any)[k])
		}
	}
}
