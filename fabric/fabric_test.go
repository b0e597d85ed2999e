package fabric_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// longPermutation builds a k-ary fat-tree with one endless flow per host,
// shifted by half the hosts so that most flows cross the core.
func longPermutation(tb testing.TB, k int) *fabric.Fabric {
	tb.Helper()
	q := topologies.QueueConfig{Buffer: 1 << 20, ECN: topologies.ECNConfig{Mode: topologies.ECNStep, K: 100 << 10}}
	tier := topologies.TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: sim.Microsecond, Queue: q}
	topo, err := topologies.FatTree(topologies.FatTreeConfig{K: k, Host: tier, Agg: tier, Core: tier})
	if err != nil {
		tb.Fatal(err)
	}
	n := len(topo.Hosts)
	flows := make([]hostsim.FlowSpec, n)
	for i := range flows {
		flows[i] = hostsim.FlowSpec{ID: int32(i), Src: i, Dst: (i + n/2 + 1) % n, Size: 1 << 40}
	}
	cfg := hostsim.DefaultConfig()
	cfg.MTU = 4096
	cfg.ECN = true
	cfg.RTO.Min = sim.Millisecond
	f, err := fabric.New(fabric.Config{Topo: topo, Flows: flows, Transport: cfg, Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// BenchmarkFabricEvent measures the whole per-packet path (NIC, links,
// switch forwarding with ECMP and ECN, receiver, ACK, Reno) per event, in
// steady state. It must report 0 allocs/op.
//
//	go test ./fabric -run - -bench FabricEvent -benchmem
func BenchmarkFabricEvent(b *testing.B) {
	for _, k := range []int{4, 8, 16} {
		b.Run(fmt.Sprintf("fattree-k=%d", k), func(b *testing.B) {
			f := longPermutation(b, k)
			f.RunUntilBatch(sim.Never, 2_000_000) // warm pools, rings, heap
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if !f.RunUntilBatch(sim.Never, 1) {
					b.Fatal("ran out of events")
				}
			}
		})
	}
}

func TestFabric_SteadyStateDoesNotAllocate(t *testing.T) {
	f := longPermutation(t, 4)
	f.RunUntilBatch(sim.Never, 1_000_000)
	allocs := testing.AllocsPerRun(5, func() { f.RunUntilBatch(sim.Never, 20_000) })
	if allocs != 0 {
		t.Fatalf("%.1f allocations per 20000 events in steady state, want 0", allocs)
	}
}

// BenchmarkFabricWindow is RunUntil (a window of a partitioned run) per
// event on the k=8 permutation, without yields (in memory) and yielding
// every 256 events (a node process, fabric.YieldEvery), on one thread.
//
//	go test ./fabric -run - -bench FabricWindow -benchmem
func BenchmarkFabricWindow(b *testing.B) {
	for _, every := range []uint32{0, 256} {
		b.Run(fmt.Sprintf("yield=%d", every), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			f := longPermutation(b, 8)
			f.RunUntilBatch(sim.Never, 2_000_000) // warm pools, rings, heap
			f.YieldEvery(every)
			b.ReportAllocs()
			b.ResetTimer()
			var events uint64
			for events < uint64(b.N) {
				events += f.RunUntil(f.Engine().Now() + sim.Microsecond)
			}
		})
	}
}
