package ui

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
)

// The k=8 permutation's last flow ends at 1.88 ms, after which the engine
// drains an RTO timer armed for 1 s: the live view must end at the run's
// end (the summary's), not at the timer.
func TestLive_FinishEndsAtTheRunsEnd(t *testing.T) {
	b, err := scenario.LoadFile("../../../../examples/fattree-k8-permutation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(b)
	var last runner.Progress
	res, err := runner.Run(b, runner.Options{Observe: live.Observe, ProgressEvery: 1 << 14,
		Progress: func(p runner.Progress) { last = p }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Fabric.Engine().Now() <= res.End {
		t.Skipf("the engine stopped at the run's end (%v): no stale timer to test with", res.End)
	}
	if !last.Final || last.Now != res.End {
		t.Errorf("last progress: final %v at %v, want final at the run's end %v (the engine's clock is %v)",
			last.Final, last.Now, res.End, res.Fabric.Engine().Now())
	}
	live.Finish(res.End)
	s := live.State()
	end := nsOf(res.End)
	if s.Progress.NowNs != end || len(s.Frames) == 0 || s.Frames[len(s.Frames)-1].TNs != end {
		t.Fatalf("after Finish: now %v, %d frames, want now and the last frame at the end %v", s.Progress.NowNs, len(s.Frames), end)
	}
	for i, fr := range s.Frames {
		for _, u := range fr.Util {
			if u < 0 || u > 1 {
				t.Fatalf("frame %d: utilisation %v out of [0, 1]", i, u)
			}
		}
	}
}

// A page may load before any frame, flow or cwnd point exists: /api/state
// must give empty lists, not null (the page maps over them).
func TestModel_StateBeforeAnythingHasEmptyLists(t *testing.T) {
	b, err := scenario.LoadFile("../../../../examples/dumbbell.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(NewLive(b).State())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"frames":[]`, `"flows":[]`, `"cwnd":[]`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("/api/state before the run: %s; want %s", data, key)
		}
	}
}
