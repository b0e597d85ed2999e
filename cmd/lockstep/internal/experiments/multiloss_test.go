package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMultiLoss_QuickWritesTablesAndFigures(t *testing.T) {
	out := t.TempDir()
	env := &Env{Examples: examplesDir, Out: out, Quick: true}
	if err := multiLoss(env); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "multi_loss.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range mlRows {
		if strings.Count(string(md), "| "+row.label+" |") != 2 {
			t.Errorf("%s: want a row in the results table and in the spread table", row.label)
		}
	}
	for _, f := range []string{"fct_bars.png", "fct_per_flow.png", "packets.png", "retx_ratio.png", "fct.csv"} {
		if st, err := os.Stat(filepath.Join(out, "multi_loss", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
