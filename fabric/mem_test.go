package fabric_test

import (
	"runtime"
	"testing"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// permutationConfig is a k-ary fat-tree with a shifted permutation of
// 16 KB flows (every host sends one and receives one).
func permutationConfig(tb testing.TB, k int) fabric.Config {
	tb.Helper()
	q := topologies.QueueConfig{Buffer: 1 << 20}
	tier := topologies.TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: sim.Microsecond, Queue: q}
	topo, err := topologies.FatTree(topologies.FatTreeConfig{K: k, Host: tier, Agg: tier, Core: tier})
	if err != nil {
		tb.Fatalf("FatTree(k=%d): expected no error, got %v", k, err)
	}
	n := len(topo.Hosts)
	flows := make([]hostsim.FlowSpec, n)
	for i := range flows {
		flows[i] = hostsim.FlowSpec{ID: int32(i), Src: i, Dst: (i + n/2 + 1) % n, Size: 16 << 10}
	}
	cfg := hostsim.DefaultConfig()
	cfg.MTU = 4096
	return fabric.Config{Topo: topo, Flows: flows, Transport: cfg, Seed: 1}
}

// setupHeap is the live heap fabric.New adds for cfg. The topology and
// the flow list (the scenario's input, which every partition parses) are
// built before and not counted.
func setupHeap(tb testing.TB, cfg fabric.Config) uint64 {
	tb.Helper()
	before := heapInUse()
	f, err := fabric.New(cfg)
	if err != nil {
		tb.Fatalf("fabric.New: expected no error, got %v", err)
	}
	after := heapInUse()
	runtime.KeepAlive(f)
	return after - min(before, after)
}

// Bytes of live heap the bound allows, derived from the structures and
// checked against a heap profile of fabric.New for k=32 (MemProfileRate 1,
// 2026-12: 41.3 MB in all), with about 10% to spare:
//
//   - per link (both directions): two sim.Link (224 B each, the wire ring
//     empty) with the engine's per-link entries (478 B per link in the
//     profile), up to two switch ports (168 B each) and two index ports
//     (20 B each), and the ports' class configuration (about 100 B):
//     about 900 B measured, 1,000 B allowed; since issue 23's wire slots,
//     each direction's first eight wire entries (192 B, sim.Engine.slots)
//     are allocated with the links instead of on the first packet, and
//     the ports are 192 B: 1,400 B allowed;
//   - per element (host or switch): engine and fabric entries, the host
//     struct (with its PFC pause state), the switch struct (568 B, shared
//     over its ports), a route row pointer: 300 B;
//   - per flow: the sender (1,190 B in the profile, of which the endpoint
//     with its controller, recovery, RTO, pacer and NSCC/UET seams 946 B),
//     the receiver (137 B), the spec, the record and its start event:
//     about 1,500 B measured, 1,800 B allowed. The endpoint grew past the
//     earlier 750 B with the AI-fabric transports, which took the k=32
//     check (make test-slow) 1.5% over the old 1,600 B;
//   - the routes' cells: 4 B per (switch, edge switch).
const (
	boundPerLink    = 1400
	boundPerElement = 300
	boundPerFlow    = 1800
)

func setupBound(cfg fabric.Config) uint64 {
	t := cfg.Topo
	cells := uint64(t.NumSwitches()) * uint64(len(t.Hosts)/max(1, t.NumHosts()/countTors(t)))
	return boundPerLink*uint64(len(t.Links)) + boundPerElement*uint64(len(t.Nodes)) +
		boundPerFlow*uint64(len(cfg.Flows)) + 4*cells
}

// countTors is the number of tier-1 switches.
func countTors(t *topologies.Topology) int {
	n := 0
	for _, nd := range t.Nodes {
		if nd.Kind == topologies.Switch && nd.Tier == 1 {
			n++
		}
	}
	return max(n, 1)
}

// podCut places a k-ary fat-tree (FatTree's numbering: hosts, ToRs, aggs,
// cores) into p partitions of whole pods, the cores shared out in order:
// a balanced cut, so each partition holds 1/p of every kind of element.
func podCut(tb testing.TB, t *topologies.Topology, k, p int) *partition.Placement {
	tb.Helper()
	hosts, tors := len(t.Hosts), k*k/2
	cores := k * k / 4
	part := make([]int, len(t.Nodes))
	for n := range part {
		switch {
		case n < hosts:
			part[n] = n * p / hosts
		case n < hosts+tors:
			part[n] = (n - hosts) * p / tors
		case n < hosts+2*tors:
			part[n] = (n - hosts - tors) * p / tors
		default:
			part[n] = (n - hosts - 2*tors) * p / cores
		}
	}
	pl, err := partition.Make(t, nil, part)
	if err != nil {
		tb.Fatalf("partition.Make: expected no error, got %v", err)
	}
	return pl
}

// testSetupMemory builds the k-ary fat-tree permutation in one partition
// and checks its heap against the bound, then each partition of a 4-way
// pod cut and checks it holds at most 0.35 of the one-partition heap.
func testSetupMemory(t *testing.T, k int) {
	cfg := permutationConfig(t, k)
	one := setupHeap(t, cfg)
	bound := setupBound(cfg)
	t.Logf("k=%d: %d links, %d elements, %d flows: one partition %d bytes, bound %d (%.0f B per link+element)",
		k, len(cfg.Topo.Links), len(cfg.Topo.Nodes), len(cfg.Flows), one, bound,
		float64(one)/float64(len(cfg.Topo.Links)+len(cfg.Topo.Nodes)))
	if one > bound {
		t.Errorf("k=%d: expected the one-partition heap under %d bytes, got %d", k, bound, one)
	}
	pl := podCut(t, cfg.Topo, k, 4)
	for i := 0; i < 4; i++ {
		c := cfg
		c.Local = pl.Local(i)
		h := setupHeap(t, c)
		t.Logf("k=%d: partition %d of 4 (%d elements): %d bytes, %.3f of one", k, i, pl.Elements[i], h, float64(h)/float64(one))
		if float64(h) > 0.35*float64(one) {
			t.Errorf("k=%d: partition %d of 4: expected at most 0.35 of the one-partition heap (%d bytes), got %d (%.3f)",
				k, i, one, h, float64(h)/float64(one))
		}
	}
}

// TestSetupMemory_K24 is the default suite's size (3,456 hosts; k=32 is
// behind the slow tag, mem_slow_test.go).
func TestSetupMemory_K24(t *testing.T) { testSetupMemory(t, 24) }
