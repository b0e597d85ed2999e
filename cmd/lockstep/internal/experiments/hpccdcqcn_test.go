package experiments

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func TestHPCCDCQCN_QuickWritesTablesAndFigures(t *testing.T) {
	out := t.TempDir()
	env := &Env{Examples: examplesDir, Out: out, Quick: true}
	if err := hpccDCQCN(env); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "hpcc_dcqcn.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"| 30% | HPCC |", "| 30% | DCQCN |", "| 50% | DCQCN+w |", "## 50% load"} {
		if !strings.Contains(string(md), row) {
			t.Errorf("hpcc_dcqcn.md lacks %q", row)
		}
	}
	for _, f := range []string{"websearch30_p50.png", "websearch30_p99.png", "websearch50_p95.png", "groups.csv"} {
		if st, err := os.Stat(filepath.Join(out, "hpcc_dcqcn", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: want a non-empty file, got %v", f, err)
		}
	}
}

// TestHPCCDCQCN_MaxRTTIsTheCrossLeafPath: the T every flow uses is the
// fabric's base RTT of a flow between leaves: 4 links of 1 us each way,
// and on each a 1050-byte packet and a 60-byte ACK at the host rate of
// 100 Gb/s (the fabric's estimate, fabric.baseRTT): 4·(2000 + 84 + 4.8) ns.
func TestHPCCDCQCN_MaxRTTIsTheCrossLeafPath(t *testing.T) {
	got, err := hdMaxRTT(&Env{Examples: examplesDir})
	if err != nil {
		t.Fatal(err)
	}
	if want := 8355200 * sim.Picosecond; got != want {
		t.Fatalf("largest base RTT %v, want %v", got, want)
	}
}

// TestHPCCDCQCN_GroupsAsTheAuthorsScript: 20 groups of n/20 flows in size
// order, the percentile at index ⌊n·p⌋, unfinished flows left out.
func TestHPCCDCQCN_GroupsAsTheAuthorsScript(t *testing.T) {
	r := &hdRun{}
	for i := range 200 {
		r.sizes = append(r.sizes, int64(1000*(200-i))) // largest first
		r.sd = append(r.sd, float64(1+i%10))
	}
	r.sd[0] = math.NaN() // the largest flow did not finish
	gs := hdGroupsOf(r)
	if len(gs) != hdGroups {
		t.Fatalf("%d groups, want %d", len(gs), hdGroups)
	}
	// Group 1: sizes 1000..10000, flows 199..190, slowdowns 10,9,...,1.
	if g := gs[0]; g.size != 10000 || g.p50 != 6 || g.p99 != 10 {
		t.Errorf("group 1: %+v, want size 10000, p50 6 (index 5 of 1..10), p99 10", g)
	}
	// The last group has 9 finished flows (the NaN left out).
	if g := gs[hdGroups-1]; g.size != 200000 || g.p99 != 10 || g.p50 != 6 {
		t.Errorf("group 20: %+v, want size 200000, p50 6 (index 4 of 2..10), p99 10", g)
	}
}
