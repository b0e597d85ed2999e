package scenario

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// exampleFiles are the files the examples name, served by memFS under
// the names they use.
func exampleFiles(tb testing.TB) memFS {
	tb.Helper()
	m := memFS{}
	for _, name := range []string{"htsim/fattree16.topo", "htsim/incast.cm", "workloads/websearch.cdf"} {
		b, err := os.ReadFile(filepath.Join("../examples", name))
		if err != nil {
			tb.Fatal(err)
		}
		m[name] = b
	}
	m["zero.cm"] = make([]byte, 1<<16) // what /dev/zero gave: no newline
	return m
}

// FuzzLoad: no scenario makes Parse or Build panic; every error is one
// line that starts with the file's name; a scenario that builds has a
// stable digest. Seeds: the examples and issue 10's hostile inputs.
//
//	go test ./scenario/ -run '^$' -fuzz FuzzLoad -fuzztime 30s
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("../examples/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	topo := "topology: {type: dumbbell, dumbbell: {senders: 2, receivers: 2, host: {rate: 10Gbps}, bottleneck: {rate: 10Gbps}}}\n"
	for _, s := range []string{
		topo + "workload: [{type: cm, file: zero.cm}]\n",
		topo + "workload: [{type: cm, file: /dev/zero}]\n",
		topo + "workload: [{type: cm, file: ../../etc/passwd}]\n",
		topo + "transport: {mtu: 0, init_cwnd: 2e12}\nworkload: [{type: permutation, size: 1KB}]\n",
		topo + "workload: [{type: flows, flows: [{src: 0, dst: 2, size: 9223372036854775807}]}]\n",
		topo + "workload: [{type: incast, dst: 0, n: 1, size: 1KB, load: 0.5, cdf: missing.cdf}]\n",
		topo + "workload: [{type: alltoall, size: 1KB}]\noutput: {queues: {interval: 1ps}, cwnd: {flows: [99999]}}\n",
		topo + "transport: {cc: dctcp}\nworkload: [{type: poisson, load: 1, cdf: workloads/websearch.cdf, duration: 1000s}]\n",
		"topology: {type: leafspine, leafspine: {leaves: 100000, spines: 2, hosts_per_leaf: 1, host: {rate: 1Gbps}, fabric: {rate: 1Gbps}}}\nworkload: [{type: permutation, size: 1KB}]\n",
		"topology: {type: graph, graph: {defaults: {rate: 1Gbps}, nodes: [{name: a, kind: host}, {name: b, kind: host}], links: [{a: a, b: b}]}}\nworkload: [{type: flows, flows: [{src: 0, dst: 1, size: 1}]}]\nplacement: {partitions: 0}\n",
	} {
		f.Add([]byte(s))
	}
	fsys := exampleFiles(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Load("fuzz.yaml", data, fsys)
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, "fuzz.yaml") {
				t.Fatalf("error is not one line starting with the file name: %q", msg)
			}
			return
		}
		again, err := Load("fuzz.yaml", data, fsys)
		if err != nil || again.Digest() != b.Digest() {
			t.Fatalf("a second Load differs: %v, digest %s then %s", err, b.Digest(), again.Digest())
		}
	})
}

// allocated is the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLoad_AllocationBoundedForHostileCounts: counts that would make the
// builders allocate (hosts, flows, expected Poisson arrivals, a file's
// size) are checked first, so a short hostile scenario allocates little
// before its error.
func TestLoad_AllocationBoundedForHostileCounts(t *testing.T) {
	fsys := exampleFiles(t)
	fsys["big.cm"] = make([]byte, MaxFileSize+1)
	db := func(n string) string {
		return "topology: {type: dumbbell, dumbbell: {senders: " + n + ", receivers: " + n + ", host: {rate: 10Gbps}, bottleneck: {rate: 10Gbps}}}\n"
	}
	// The YAML parser's own cost is about 100 bytes per input byte.
	const bound = 16 << 20
	for _, c := range []struct {
		name, text string
		limit      uint64
	}{
		{"10^15 hosts", db("1e15") + "workload: [{type: permutation, size: 1KB}]\n", bound},
		{"all-to-all of 4096 hosts", db("2048") + "workload: [{type: alltoall, size: 1KB}]\n", bound},
		{"poisson for 100000s", db("2") + "workload: [{type: poisson, load: 1, cdf: workloads/websearch.cdf, duration: 100000s}]\n", bound},
		{"cwnd of 2^18 flows that do not exist", db("2") + "workload: [{type: permutation, size: 1KB}]\noutput: {cwnd: {flows: [" + strings.Repeat("7, ", 1<<18) + "7]}}\n", bound + 128*3<<18},
		{"a file over the size limit", db("2") + "workload: [{type: cm, file: big.cm}]\n", bound},
	} {
		var err error
		got := allocated(func() { _, err = Load("s.yaml", []byte(c.text), fsys) })
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if got > c.limit {
			t.Errorf("%s: allocated %d MiB before its error (%v), want at most %d MiB", c.name, got>>20, err, c.limit>>20)
		}
		t.Logf("%s: %d KiB: %v", c.name, got>>10, err)
	}
}
