package main

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

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
