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
	// The HZ section: quick runs HZ 100 and 250 with delayed ACKs.
	for _, row := range []string{"| ACK every 2nd segment | 100 |", "| ACK every 2nd segment | 250 |"} {
		if n := strings.Count(string(md), row); n != 1 {
			t.Errorf("%s: want 1 table row, got %d", row, n)
		}
	}
	for _, f := range []string{"cwnd.png", "cwnd_start.png", "rate.png", "exit_hz_1.png", "runs.csv", "series.csv"} {
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

// TestHyStart_2011KernelsExitBelow20OnlyOnACoarseClock is the report's
// mechanism end to end: a 2.6.29-2.6.38 sender (jiffies RTT samples,
// per-ACK slow start, IW 3, 2.6.3x receivers) built with HZ = 100 ends
// slow start at hystart_low_window = 16 by the ACK train (delay_min is 1
// jiffy, the threshold 0); built with HZ = 1000, the same path takes it
// past 500 packets (threshold 5 jiffies), before the first drop.
func TestHyStart_2011KernelsExitBelow20OnlyOnACoarseClock(t *testing.T) {
	env := &Env{Examples: examplesDir}
	for _, c := range []struct {
		hz     int
		lo, hi float64
	}{{100, 16, 16}, {1000, 500, 942}} {
		r, err := hsRun(env, hsRow{label: "x", hystart: "linux-2008", hz: c.hz}, hsOpts{start: hsHZJitter(2, c.hz), horizon: 500 * sim.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if r.exitReason != "ack-train" || r.exitCwnd < c.lo || r.exitCwnd > c.hi {
			t.Errorf("HZ=%d: want an ack-train exit at cwnd in [%.0f, %.0f], got %q at %.0f", c.hz, c.lo, c.hi, r.exitReason, r.exitCwnd)
		}
		if r.dropAt != sim.Never && r.dropAt < r.exitAt {
			t.Errorf("HZ=%d: want the exit (%v) before any drop, got a drop at %v", c.hz, r.exitAt, r.dropAt)
		}
	}
}
