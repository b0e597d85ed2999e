package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSwitchIncast_QuickPipeline runs the experiment in quick mode and
// checks its page and data, and the mechanisms' signatures in the
// numbers: drop-tail drops, PFC drops nothing and pauses, trimming trims
// and drops nothing.
func TestSwitchIncast_QuickPipeline(t *testing.T) {
	env := &Env{Examples: examplesDir, Out: t.TempDir(), Quick: true}
	x, err := Find("switch-incast")
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Run(env); err != nil {
		t.Fatalf("switch-incast (quick): %v", err)
	}
	md, err := os.ReadFile(filepath.Join(env.Out, "switch_incast.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"drop-tail", "ECN", "PFC", "trimming", "shared buffer", "cut-through", "victim slowdown", "events/s"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("switch_incast.md lacks %q", want)
		}
	}
	data, err := os.ReadFile(filepath.Join(env.Out, "switch_incast", "incast.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		f := strings.Split(line, ",")
		rows[strings.Fields(f[0])[0]] = f
	}
	t.Logf("%s", data)
	if r := rows["drop-tail"]; r[1] == "0" {
		t.Errorf("drop-tail: want drops, got %v", r)
	}
	if r := rows["PFC"]; r[1] != "0" || r[2] == "0" {
		t.Errorf("PFC: want no drops and PAUSE frames, got %v", r)
	}
	if r := rows["trimming"]; r[1] != "0" || r[3] == "0" {
		t.Errorf("trimming: want trims and no drops, got %v", r)
	}
	if st, err := os.Stat(filepath.Join(env.Out, "switch_incast", "cost.csv")); err != nil || st.Size() == 0 {
		t.Errorf("cost.csv: %v", err)
	}
}
