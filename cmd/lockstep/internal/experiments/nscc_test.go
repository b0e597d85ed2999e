package experiments

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
	nsCheckPhysics(t, text)
	data, err := os.ReadFile(filepath.Join(env.Out, "nscc", "fct.csv"))
	if err != nil || !strings.HasPrefix(string(data), "workload,transport,seed,flow,fct_us,sender_done_us\n") ||
		!strings.Contains(string(data), "incast,NSCC mixed,1,") {
		t.Errorf("fct.csv: want a header and NSCC's incast rows, got %v", err)
	}
}

// nsCheckPhysics checks the quick run's tables against what must hold
// whatever the tuning: no flow of the incast finishes before the
// receiver's link could carry the incast's bytes, no sender sees its last
// ACK before its last byte arrived, and NSCC's incast trims at the last hop
// and resends what was trimmed.
func nsCheckPhysics(t *testing.T, text string) {
	t.Helper()
	m := regexp.MustCompile(`The receiver's link needs ([0-9.]+) us`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("the incast's ideal time is missing")
	}
	ideal, _ := strconv.ParseFloat(m[1], 64)
	incast := text[strings.Index(text, "## Incast"):]
	for _, tr := range nsTransports {
		for _, part := range []string{text, incast} {
			row := nsRow(t, part, tr.label)
			if row[3] > row[4] {
				t.Errorf("%s: largest FCT %.1f us at the receiver after %.1f us at the sender", tr.label, row[3], row[4])
			}
		}
		inc := nsRow(t, incast, tr.label)
		if inc[3] < ideal {
			t.Errorf("%s: incast finished at %.1f us, before the %.1f us its bytes need", tr.label, inc[3], ideal)
		}
		if strings.HasPrefix(tr.label, "NSCC") && (inc[7] == 0 || inc[5] < inc[7]) {
			t.Errorf("%s: incast with %v trims and %v retransmissions: want trims, each resent", tr.label, inc[7], inc[5])
		}
	}
}

// nsRow returns the numbers of the first table row labelled label in text
// (P50, P99, max, max sender side, retransmissions, timeouts, trims, ...,
// indexed as the columns from 1).
func nsRow(t *testing.T, text, label string) []float64 {
	t.Helper()
	i := strings.Index(text, "| "+label+" |")
	if i < 0 {
		t.Fatalf("no row %q", label)
	}
	line := text[i:]
	line = line[:strings.IndexByte(line, '\n')]
	cells := strings.Split(strings.Trim(line, "| "), " | ")
	out := make([]float64, len(cells))
	for k, c := range cells[1:] {
		v, err := strconv.ParseFloat(c, 64)
		if err != nil {
			t.Fatalf("row %q cell %d: %q", label, k+1, c)
		}
		out[k+1] = v
	}
	return out
}
