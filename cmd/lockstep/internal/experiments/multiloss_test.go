package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMultiLoss_QuickWritesTablesAndFigures runs the experiment as the CLI
// does (Find, Run) and checks File.md and File/, as its help says.
func TestMultiLoss_QuickWritesTablesAndFigures(t *testing.T) {
	out := t.TempDir()
	env := &Env{Examples: examplesDir, Out: out, Quick: true}
	x, err := Find("multi-loss")
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Run(env); err != nil {
		t.Fatal(err)
	}
	if x.File != "multi_loss" {
		t.Fatalf("multi-loss: File %q, want multi_loss", x.File)
	}
	md, err := os.ReadFile(filepath.Join(out, x.File+".md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range mlRows {
		if strings.Count(string(md), "| "+row.label+" |") != 2 {
			t.Errorf("%s: want a row in the results table and in the spread table", row.label)
		}
	}
	for _, label := range []string{"SimpleTcp (STrack-Sim profile)", "STrack (STrack-Sim profile)"} {
		if !strings.Contains(string(md), "| "+label+" |") {
			t.Errorf("%s: want its row in the STrack-Sim profile table", label)
		}
	}
	for _, f := range []string{"fct_bars.png", "fct_per_flow.png", "packets.png", "retx_ratio.png", "fct.csv", "stracksim.csv", "stracksim_p99.png"} {
		if st, err := os.Stat(filepath.Join(out, "multi_loss", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// Every experiment's File is unique (what each writes is checked by its
// quick test; multi-loss's by TestMultiLoss_QuickWritesTablesAndFigures).
func TestExperiments_FileIsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, x := range All() {
		if x.File == "" || seen[x.File] {
			t.Errorf("%s: file %q empty or repeated", x.Name, x.File)
		}
		seen[x.File] = true
	}
}

// TestMultiLoss_CompatDrawIsWhatRunWrites: the page's STrack-Sim profile
// numbers come from the summary `lockstep run` writes (summary.json's
// stracksim, fct.csv's sender_fct_ns): seed 344 with cc: strack is the
// report's data run, as cmd/lockstep
// TestRun_STrackSimProfileReportsWhatSTrackSimReports reads it from the
// files.
func TestMultiLoss_CompatDrawIsWhatRunWrites(t *testing.T) {
	d, err := mlCompatRun(&Env{Examples: examplesDir}, "strack", 344)
	if err != nil {
		t.Fatal(err)
	}
	if d.p50 != 142.084 || d.p99 != 243.068 || mlList(d.fcts) != "243.068, 42.440, 142.084, 56.820" ||
		d.sent != 663 || d.retx != 215 || d.drops != 152 || d.marks != 203 {
		t.Errorf("seed 344: %+v; want P50 142.084, P99 243.068 us, FCTs 243.068, 42.440, 142.084, 56.820 us, 663 sent, 215 retransmitted, 152 drops, 203 marks", d)
	}
}
