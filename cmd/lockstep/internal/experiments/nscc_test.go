package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNSCC_QuickPipeline runs the experiment on htsim's 16-host fat-tree
// and checks the report's rows, its data and the figures it links to.
func TestNSCC_QuickPipeline(t *testing.T) {
	env := &Env{Examples: examplesDir, Out: t.TempDir(), Quick: true}
	x, err := Find("nscc")
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Run(env); err != nil {
		t.Fatalf("nscc (quick): %v", err)
	}
	md, err := os.ReadFile(filepath.Join(env.Out, "nscc.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(md)
	for _, tr := range nsTransports {
		if n := strings.Count(text, "| "+tr.label+" |"); n < 2 {
			t.Errorf("%s: want a row in the permutation and incast tables, found %d", tr.label, n)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		i := strings.Index(line, "](nscc/")
		if i < 0 {
			continue
		}
		name := line[i+2 : strings.IndexByte(line[i:], ')')+i]
		if st, err := os.Stat(filepath.Join(env.Out, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s linked but not written: %v", name, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(env.Out, "nscc", "fct.csv"))
	if err != nil || !strings.HasPrefix(string(data), "workload,transport,seed,flow,fct_us,sender_done_us\n") ||
		!strings.Contains(string(data), "incast,NSCC mixed,1,") {
		t.Errorf("fct.csv: want a header and NSCC's incast rows, got %v", err)
	}
}
