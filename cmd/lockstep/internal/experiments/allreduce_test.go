package experiments

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestAllReduce_QuickWritesTableAndCheck: the quick run (8 ranks, 512 KB)
// writes every variant's row, the analytical check, the figure and the
// data; and every row obeys the two bounds no run can beat: its CCT is at
// least its ideal CCT, and its bus bandwidth at most what a NIC's payload
// rate allows (100 Gb/s x 1436/1564: every algorithm here sends at least
// 2(n-1)/n of the message from its busiest NIC, and the ACKs of as much).
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
	f, err := os.Open(filepath.Join(out, "allreduce", "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 1+len(arFabrics)*2*(len(arAlgs)+1) {
		t.Fatalf("results.csv: %d rows (%v), want a header and %d", len(rows), err, len(arFabrics)*2*(len(arAlgs)+1))
	}
	nicBus := 100e9 / 8 * 1436 / 1564 / 1e9
	for _, r := range rows[1:] {
		ratio, err1 := strconv.ParseFloat(r[8], 64)
		bus, err2 := strconv.ParseFloat(r[7], 64)
		if err1 != nil || err2 != nil || ratio < 1 || bus > nicBus {
			t.Errorf("%v: CCT/ideal %v and busbw %v GB/s, want at least 1 and at most %.4f", r, ratio, bus, nicBus)
		}
	}
}
