//go:build slow

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The k=8 fat-tree permutation in 4 partitions in one process and in 4
// node processes: about 6 s, and over a minute under the race detector,
// so it runs with -tags slow.
func TestRunDistributed_Design2_FatTreeK8SameFiles(t *testing.T) {
	requireWired(t)
	if testing.Short() {
		t.Skip("k=8 fat-tree in 4 node processes: seconds")
	}
	t.Setenv(asMainEnv, "1")
	dir := t.TempDir()
	s := "../../examples/fattree-k8-permutation.yaml"
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"4 partitions in one process", []string{"--partitions", "4"}},
		{"4 node processes", []string{"--partitions", "4", "--procs"}},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		runCLI(t, append([]string{"run", s, "--out", out, "--quiet"}, c.args...)...)
		sameFiles(t, c.name, single, out)
	}
}

// BenchmarkFatTreeK8 is the comparison: wall time and events per
// second of the k=8 permutation in one process, in P partitions in one
// process (memory transport and NATS), and in P node processes.
//
//	go test -tags slow ./cmd/lockstep -run '^$' -bench FatTreeK8 -benchtime 1x
func BenchmarkFatTreeK8(b *testing.B) {
	requireWired(b)
	b.Setenv(asMainEnv, "1")
	s := "../../examples/fattree-k8-permutation.yaml"
	for _, c := range []struct {
		name string
		args []string
	}{
		{"single", nil},
		{"memory/P=2", []string{"--partitions", "2", "--transport", "memory"}},
		{"memory/P=4", []string{"--partitions", "4", "--transport", "memory"}},
		{"nats-goroutines/P=2", []string{"--partitions", "2"}},
		{"nats-goroutines/P=4", []string{"--partitions", "4"}},
		{"node-processes/P=2", []string{"--partitions", "2", "--procs"}},
		{"node-processes/P=4", []string{"--partitions", "4", "--procs"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			out := b.TempDir()
			for b.Loop() {
				var o, e bytes.Buffer
				if code := run(append([]string{"run", s, "--out", out, "--quiet"}, c.args...), &o, &e); code != 0 {
					b.Fatalf("exit %d: %s", code, e.String())
				}
			}
			var sum struct {
				Events uint64 `json:"events"`
				Perf   struct {
					Wall float64 `json:"wall_seconds"`
				} `json:"perf"`
				Extra struct {
					Distributed struct {
						Windows       uint64  `json:"windows"`
						PerSimMs      float64 `json:"windows_per_simulated_ms"`
						WaitUs        float64 `json:"mean_barrier_wait_us"`
						WindowsPerSec float64 `json:"windows_per_second"`
					} `json:"distributed"`
				} `json:"extra"`
			}
			data, err := os.ReadFile(filepath.Join(out, "summary.json"))
			if err != nil {
				b.Fatal(err)
			}
			if err := json.Unmarshal(data, &sum); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(sum.Events)/sum.Perf.Wall, "events/s")
			if d := sum.Extra.Distributed; d.Windows > 0 {
				b.ReportMetric(float64(d.Windows), "windows")
				b.ReportMetric(d.PerSimMs, "windows/sim-ms")
				b.ReportMetric(d.WindowsPerSec, "windows/s")
			}
		})
	}
}

// TestCheckpoint_NodeKilledAtFivePoints is issue 22's test: a random node
// process of a 4-partition run with 3 coordinators (the k=8 fat-tree
// permutation with 8 MB flows) is killed (SIGKILL) at five points, from
// just after the first committed checkpoint to late in the run, while the
// nodes write a checkpoint or between two; each run completes (exit 0)
// with the single-process run's files.
func TestCheckpoint_NodeKilledAtFivePoints(t *testing.T) {
	requireWired(t)
	killedNodes(t, k8WithFlows(t, t.TempDir(), "8MB"), []killPoint{{dirs: 1}, {dirs: 3, committed: true}, {dirs: 6},
		{dirs: 10, committed: true}, {dirs: 14}}, "100us", 5)
}
