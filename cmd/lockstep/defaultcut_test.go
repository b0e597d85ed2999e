package main

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-sim/lockstep/partition"
)

// TestRun_DefaultCut_SameFilesAsOnePartition: with a model that always
// cuts, `lockstep run` without flags cuts the fabric into one in-memory
// partition per core (bounded by --cores), writes the same files as
// --partitions 1, and says so in summary.json's perf.
func TestRun_DefaultCut_SameFilesAsOnePartition(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 4 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	}
	old := cutModel
	defer func() { cutModel = old }()
	cutModel = partition.CutModel{Event: 1, Cross: 0, RoundBase: 0, RoundPerPart: 0, MaxRatio: 1, MinSaving: 0}
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	s := filepath.Join(dir, "r.yaml")
	one := filepath.Join(dir, "one")
	runCLI(t, "run", s, "--out", one, "--quiet", "--partitions", "1", "--cwnd", "--queues", "10us")
	if c := perfCut(t, one); c.Partitions != 1 || c.Reason != "--partitions 1" {
		t.Errorf("--partitions 1: perf.cut %+v", c)
	}
	for _, cores := range []string{"2", "4"} {
		out := filepath.Join(dir, "cut"+cores)
		runCLI(t, "run", s, "--out", out, "--quiet", "--cores", cores, "--cwnd", "--queues", "10us")
		sameFiles(t, "default cut, --cores "+cores, one, out)
		c := perfCut(t, out)
		if c.Cores != int(cores[0]-'0') || c.Partitions < 2 || c.Partitions > c.Cores || !strings.Contains(c.Reason, "predicted") {
			t.Errorf("--cores %s: perf.cut %+v, want a cut into 2..%s partitions", cores, c, cores)
		}
	}
	// The real model keeps this small scenario whole.
	cutModel = old
	out := filepath.Join(dir, "real")
	runCLI(t, "run", s, "--out", out, "--quiet")
	if c := perfCut(t, out); c.Partitions != 1 || !strings.Contains(c.Reason, "too little work") {
		t.Errorf("default model: perf.cut %+v, want one partition", c)
	}
}

func perfCut(t *testing.T, dir string) partition.DefaultCut {
	t.Helper()
	var s struct {
		Perf struct {
			Partitions  int                  `json:"partitions"`
			Cut         partition.DefaultCut `json:"cut"`
			Distributed json.RawMessage      `json:"distributed"`
		} `json:"perf"`
		Extra json.RawMessage `json:"extra"`
	}
	if err := json.Unmarshal(readOut(t, dir, "summary.json"), &s); err != nil {
		t.Fatal(err)
	}
	if s.Perf.Partitions != s.Perf.Cut.Partitions {
		t.Errorf("%s: perf.partitions %d, perf.cut.partitions %d", dir, s.Perf.Partitions, s.Perf.Cut.Partitions)
	}
	if s.Extra != nil {
		t.Errorf("%s: a default run wrote extra %s", dir, s.Extra)
	}
	if (s.Perf.Cut.Partitions > 1) != (s.Perf.Distributed != nil) {
		t.Errorf("%s: perf.distributed %s with %d partitions", dir, s.Perf.Distributed, s.Perf.Cut.Partitions)
	}
	return s.Perf.Cut
}

// TestRun_SetupSecondsCountTheBuild: a one-partition run builds its fabric
// before the output directory exists (so that a fabric it cannot build
// leaves nothing behind); perf.setup_seconds and wall_seconds still count
// that build. perf's clock is a fake that the hook between the build and
// the run moves on by 100 ms: both must include it (they counted from the
// run's start, reporting ~0 s of setup for a k=48 fat-tree).
func TestRun_SetupSecondsCountTheBuild(t *testing.T) {
	const step = 100 * time.Millisecond
	fake := time.Unix(1e9, 0)
	perfClock = func() time.Time { return fake }
	testHook = func(c string) {
		if c == "run" {
			fake = fake.Add(step)
		}
	}
	defer func() { testHook, perfClock = nil, time.Now }()
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	out := filepath.Join(dir, "one")
	runCLI(t, "run", filepath.Join(dir, "r.yaml"), "--out", out, "--quiet", "--partitions", "1")
	var s struct {
		Perf struct {
			Setup float64 `json:"setup_seconds"`
			Wall  float64 `json:"wall_seconds"`
		} `json:"perf"`
	}
	if err := json.Unmarshal(readOut(t, out, "summary.json"), &s); err != nil {
		t.Fatal(err)
	}
	if s.Perf.Setup != step.Seconds() || s.Perf.Wall != step.Seconds() {
		t.Errorf("perf setup %.3f s, wall %.3f s: want both %.1f s (the clock moved only between the build and the run)", s.Perf.Setup, s.Perf.Wall, step.Seconds())
	}
}
