package results_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/sim"
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

// TestWriteFCT_SenderColumns: with the sender side, every row ends with
// acked_ns and sender_fct_ns (acked_ns − start_ns), empty for a flow its
// sender did not see acknowledged, and the columns before are the same
// as without it.
func TestWriteFCT_SenderColumns(t *testing.T) {
	flows := []hostsim.FlowSpec{{ID: 0, Src: 0, Dst: 1, Size: 1000, Start: 2 * sim.Microsecond}, {ID: 1, Src: 0, Dst: 1, Size: 1000}}
	recs := []hostsim.FlowRecord{
		{Started: true, Finished: true, Finish: 5 * sim.Microsecond, AckedAt: 5*sim.Microsecond + 1522*sim.Nanosecond, PacketsSent: 1},
		{Started: true, Finished: true, Finish: 3 * sim.Microsecond, PacketsSent: 1}, // stopped before its last ACK
	}
	var plain, sender strings.Builder
	if err := results.WriteFCT(&plain, flows, recs, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteFCT(&sender, flows, recs, nil, true); err != nil {
		t.Fatal(err)
	}
	p, s := strings.Split(plain.String(), "\n"), strings.Split(sender.String(), "\n")
	want := []string{results.FCTHeader + "," + results.SenderColumns, p[1] + ",6522.000,4522.000", p[2] + ",,", ""}
	if strings.Join(s, "\n") != strings.Join(want, "\n") || p[0] != results.FCTHeader {
		t.Errorf("with the sender side:\n%s\nwant\n%s", sender.String(), strings.Join(want, "\n"))
	}
}
