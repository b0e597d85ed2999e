package workloads

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// go test ./workloads/ -run '^$' -fuzz FuzzParseCM -fuzztime 30s
func FuzzParseCM(f *testing.F) {
	if b, err := os.ReadFile("testdata/example.cm"); err == nil {
		f.Add(string(b))
	}
	for _, s := range []string{
		"Nodes 16\nConnections 1\n0->13 start 0 size 2000000\n\n",
		"Nodes 4\nConnections 1\nTriggers 1\n0->1 id 1 trigger 1 size 10\ntrigger id 1 oneshot\n",
		"Nodes 4\nConnections 1\n3->2 start 1.5e6 size 7 id 4\n",
		"Nodes 4\nConnections 1\n->\n",
		"Nodes 2\nConnections 1\n0->1 start 9223372036854775807 size 9223372036854775807\n",
		"# x\nNodes 1\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cm, err := ParseCM("fuzz.cm", strings.NewReader(text))
		if err != nil {
			if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "fuzz.cm:") {
				t.Fatalf("error is not one line starting with the file name: %q", err)
			}
			return
		}
		if len(cm.Flows) != cm.Connections || len(cm.FileIDs) != len(cm.Flows) {
			t.Fatalf("Connections %d, %d flows, %d ids", cm.Connections, len(cm.Flows), len(cm.FileIDs))
		}
		if _, err := Explicit(cm.Flows, cm.Nodes); err != nil {
			t.Fatalf("parsed flows fail validation: %v", err)
		}
		checkIDs(t, cm.Flows)
	})
}

// go test ./workloads/ -run '^$' -fuzz FuzzParseCDF -fuzztime 30s
func FuzzParseCDF(f *testing.F) {
	for _, name := range cdfFiles {
		if b, err := os.ReadFile(filepath.Join(exampleDir, name)); err == nil {
			f.Add(string(b))
		}
	}
	for _, s := range []string{"0 0\n100 50\n300 100\n", "100 20\n200 100\n", "0 0\n100 0\n100 40\n200 100\n", "1e300 100\n", "0 0\n0 100\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseCDF("fuzz.cdf", strings.NewReader(text))
		if err != nil {
			if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "fuzz.cdf:") {
				t.Fatalf("error is not one line starting with the file name: %q", err)
			}
			return
		}
		if !(c.Mean() > 0) || c.Mean() > float64(c.Max())+0.5 {
			t.Fatalf("Mean() = %v with Max() = %d", c.Mean(), c.Max())
		}
		for _, u := range []float64{0, 1e-9, 50, 99.999999, 100} {
			if s := c.at(u); s < 1 || s > c.Max() {
				t.Fatalf("at(%v) = %d, outside [1, %d]", u, s, c.Max())
			}
		}
		rng := testRand(1)
		for range 64 {
			if s := c.Sample(rng); s < 1 || s > c.Max() {
				t.Fatalf("Sample() = %d, outside [1, %d]", s, c.Max())
			}
		}
	})
}

// TestParse_AllocationBoundedByInput: counts in a header (Connections,
// Nodes) allocate nothing by themselves, and an endless line is cut at the
// scanner's 1 MiB: what a parser allocates is bounded by its input.
func TestParse_AllocationBoundedByInput(t *testing.T) {
	for _, c := range []struct {
		name, text string
		parse      func(string) error
	}{
		{"cm with 2^31-1 connections", "Nodes 2147483647\nConnections 2147483647\n0->1 id 1 start 0 size 1\n", func(s string) error {
			_, err := ParseCM("x.cm", strings.NewReader(s))
			return err
		}},
		{"cm of zeros", string(make([]byte, 4<<20)), func(s string) error {
			_, err := ParseCM("x.cm", strings.NewReader(s))
			return err
		}},
		{"cdf of zeros", string(make([]byte, 4<<20)), func(s string) error {
			_, err := ParseCDF("x.cdf", strings.NewReader(s))
			return err
		}},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := c.parse(c.text)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
		}
		// 1 MiB of scanner buffer (grown by doubling) plus a little per byte.
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(4<<20+2*len(c.text)); got > limit {
			t.Errorf("%s: allocated %d KiB, want at most %d KiB (%v)", c.name, got>>10, limit>>10, err)
		}
	}
}
