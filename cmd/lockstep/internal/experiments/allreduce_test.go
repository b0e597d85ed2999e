package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAllReduce_QuickWritesTableAndCheck(t *testing.T) {
	out := t.TempDir()
	env := &Env{Examples: examplesDir, Out: out, Quick: true}
	if err := allreduce(env); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "allreduce.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arAlgs {
		if n := strings.Count(string(md), " | "+a.name+" | "); n < 4 {
			t.Errorf("%s: %d rows, want at least 4 (2 fabrics x 2 forwardings)", a.name, n)
		}
	}
	if !strings.Contains(string(md), "## Analytical check") {
		t.Error("no analytical check")
	}
	for _, f := range []string{"busbw.png", "results.csv"} {
		if st, err := os.Stat(filepath.Join(out, "allreduce", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
