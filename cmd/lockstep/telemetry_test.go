package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRunDistributed_TelemetrySameFiles: HPCC's INT records and Swift's
// endpoint delays ride with their packets through the wire codec
// (internal/wire) when partitions talk over NATS, so the files equal a
// single process's.
func TestRunDistributed_TelemetrySameFiles(t *testing.T) {
	requireWired(t)
	for _, c := range []string{"hpcc", "swift"} {
		tr := "transport: {cc: " + c + ", recovery: sack,"
		if c == "swift" {
			// Targets the scenario's delays straddle (its queues hold 20 KiB,
			// a few us): with the defaults (20 us and more) every sample is
			// below target, the window only grows, and the delays' values,
			// the endpoint delay among them, would not matter.
			tr += " options: {base_target_us: 3, per_hop_us: 0.3, endpoint_target_us: 0.5},"
		}
		y := strings.Replace(randomYAML, "transport: {ecn: true,", tr, 1)
		// Flows of 250 KB, not 1 MB: the same mechanisms cross the cuts in a
		// quarter of the time (17 s under -race before).
		y = strings.Replace(y, "size: 1MB", "size: 250KB", 1)
		if !strings.Contains(y, "cc: "+c) || !strings.Contains(y, "size: 250KB") {
			t.Fatalf("the random scenario changed: %q", randomYAML)
		}
		dir := write(t, map[string]string{"r.yaml": y})
		s := filepath.Join(dir, "r.yaml")
		single := filepath.Join(dir, "single")
		runCLI(t, "run", s, "--out", single, "--quiet")
		out := filepath.Join(dir, "nats")
		runCLI(t, "run", s, "--partitions", "4", "--out", out, "--quiet")
		sameFiles(t, c+": 4 partitions over NATS", single, out)
	}
}
