package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// The last progress line shows the run's end (summary.json's virtual
// end), not the stale RTO timer (1 s) the engine drains after the last
// flow, nor a distributed run's last window.
func TestRun_LastProgressLineIsTheRunsEnd(t *testing.T) {
	s := filepath.Join("..", "..", "examples", "fattree-k8-permutation.yaml")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"one process", []string{"--partitions", "1"}},
		{"2 in-memory partitions", []string{"--partitions", "2", "--transport", "memory"}},
		{"2 partitions over NATS", []string{"--partitions", "2"}},
	} {
		out := filepath.Join(t.TempDir(), "out")
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"run", s, "--out", out, "--progress"}, c.args...), &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr.String())
		}
		var sum struct {
			EndPs int64 `json:"virtual_end_ps"`
		}
		if err := json.Unmarshal(readOut(t, out, "summary.json"), &sum); err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`virtual (\S+)`).FindAllStringSubmatch(stderr.String(), -1)
		if len(m) == 0 {
			t.Fatalf("%s: no progress line in %q", c.name, stderr.String())
		}
		if got, want := m[len(m)-1][1], sim.Time(sum.EndPs).String(); got != want || sum.EndPs == 0 {
			t.Errorf("%s: last progress line at virtual %s, want the run's end %s", c.name, got, want)
		}
	}
}
