package experiments

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func TestHyStart_QuickWritesTablesAndFigures(t *testing.T) {
	out := t.TempDir()
	env := &Env{Examples: examplesDir, Out: out, Quick: true}
	if err := hyStart(env); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "hystart.md"))
	if err != nil {
		t.Fatal(err)
	}
	// A row in the results and the seeds tables; off and linux also have
	// one in the buffer table.
	for label, want := range map[string]int{"off": 3, "linux-2008": 2, "linux": 3} {
		if n := strings.Count(string(md), "| "+label+" |"); n != want {
			t.Errorf("%s: want %d table rows, got %d", label, want, n)
		}
	}
	for _, f := range []string{"cwnd.png", "cwnd_start.png", "rate.png", "runs.csv", "series.csv"} {
		if st, err := os.Stat(filepath.Join(out, "hystart", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: want a non-empty file, got %v", f, err)
		}
	}
}

// TestHyStart_OffRunsToLossAndClassicExitsEarlier checks the invariants the
// report rests on: without HyStart slow start ends only by a loss, and the
// first drop comes when cwnd fills the pipe and the buffer, BDP + B packets
// (942 + 1256); the 2008 detector ends slow start earlier, by one of its
// two tests, before any drop.
func TestHyStart_OffRunsToLossAndClassicExitsEarlier(t *testing.T) {
	env := &Env{Examples: examplesDir}
	o := hsOpts{horizon: 400 * sim.Millisecond}
	off, err := hsRun(env, hsRows[0], o)
	if err != nil {
		t.Fatal(err)
	}
	if off.exitReason != "loss" {
		t.Errorf("off: want slow start to end by loss, got %q", off.exitReason)
	}
	want := math.Round(hsBDP) + 1256
	if math.Abs(off.dropCwnd-want) > 0.1*want {
		t.Errorf("off: want the first drop at cwnd BDP + buffer = %.0f packets (±10%%), got %.0f", want, off.dropCwnd)
	}
	old, err := hsRun(env, hsRows[1], o)
	if err != nil {
		t.Fatal(err)
	}
	if old.exitReason != "ack-train" && old.exitReason != "delay" {
		t.Errorf("linux-2008: want an exit by ack-train or delay, got %q", old.exitReason)
	}
	if !(old.exitAt < off.exitAt && old.exitCwnd < off.exitCwnd) {
		t.Errorf("linux-2008 must exit before off: want earlier and smaller, got %v/%.0f against %v/%.0f",
			old.exitAt, old.exitCwnd, off.exitAt, off.exitCwnd)
	}
	if old.exitAt > old.dropAt {
		t.Errorf("linux-2008: want the exit (%v) before the first drop (%v)", old.exitAt, old.dropAt)
	}
	if off.t90 == sim.Never || off.t90 > off.exitAt || off.t90 > off.dropAt {
		t.Errorf("off: want 90%% of the link reached during slow start, before the exit (%v) and the first drop (%v), got %v",
			off.exitAt, off.dropAt, off.t90)
	}
}

func TestHyStart_SameRunSameResult(t *testing.T) {
	env := &Env{Examples: examplesDir}
	o := hsOpts{start: hsJitter(3), horizon: 150 * sim.Millisecond}
	a, err := hsRun(env, hsRows[5], o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hsRun(env, hsRows[5], o)
	if err != nil {
		t.Fatal(err)
	}
	if a.exitCwnd != b.exitCwnd || a.exitAt != b.exitAt || a.t90 != b.t90 || a.drops != b.drops {
		t.Errorf("want identical runs, got exit %.0f at %v, t90 %v, drops %d and exit %.0f at %v, t90 %v, drops %d",
			a.exitCwnd, a.exitAt, a.t90, a.drops, b.exitCwnd, b.exitAt, b.t90, b.drops)
	}
}
