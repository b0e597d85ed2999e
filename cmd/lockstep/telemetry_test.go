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
		y := strings.Replace(randomYAML, "transport: {ecn: true,", "transport: {cc: "+c+", recovery: sack,", 1)
		dir := write(t, map[string]string{"r.yaml": y})
		s := filepath.Join(dir, "r.yaml")
		single := filepath.Join(dir, "single")
		runCLI(t, "run", s, "--out", single, "--quiet")
		out := filepath.Join(dir, "nats")
		runCLI(t, "run", s, "--partitions", "4", "--out", out, "--quiet")
		sameFiles(t, c+": 4 partitions over NATS", single, out)
	}
}
