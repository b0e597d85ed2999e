package fabric_test

import (
	"testing"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// TestFabric_SteadyStateDoesNotAllocate_INTAndRatePaced: the per-packet
// paths that HPCC (INT records pushed at every switch, echoed in ACKs, the
// pool's telemetry side table), Swift (NIC waits and endpoint delays) and
// DCQCN (the NIC-pulled paced queue pairs, CNPs, rate timers, go-back-N
// NAKs) add allocate nothing once warm, as TestFabric_SteadyStateDoesNotAllocate
// checks for Reno: one endless flow per host on a k=4 fat-tree, across
// the core. DCQCN's flows go two to each receiver, so that the receivers'
// links stay congested: switches keep marking and DCQCN keeps cutting and
// raising (a short rate-increase timer and byte counter) inside the
// measured window. (The rings that hold packets, events and scoreboards
// grow to the run's high-water mark; the warm-up must pass it. Swift's
// queues still reach new marks after 300,000 dispatched events now that
// elided transmit-dones make each of them cover more virtual time.)
func TestFabric_SteadyStateDoesNotAllocate_INTAndRatePaced(t *testing.T) {
	for _, c := range []struct{ cc, rec string }{{"hpcc", "sack"}, {"swift", "sack"}, {"dcqcn", "gbn"}} {
		t.Run(c.cc, func(t *testing.T) {
			q := topologies.QueueConfig{Buffer: 256 << 10, ECN: topologies.ECNConfig{Mode: topologies.ECNStep, K: 20 << 10}}
			tier := topologies.TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: sim.Microsecond, Queue: q}
			topo, err := topologies.FatTree(topologies.FatTreeConfig{K: 4, Host: tier, Agg: tier, Core: tier})
			if err != nil {
				t.Fatal(err)
			}
			n := len(topo.Hosts)
			flows := make([]hostsim.FlowSpec, n)
			for i := range flows {
				dst := (i + n/2 + 1) % n
				if c.cc == "dcqcn" {
					// Two senders per receiver: its link stays the bottleneck.
					dst = (i/2*2 + n/2 + 1) % n
				}
				flows[i] = hostsim.FlowSpec{ID: int32(i), Src: i, Dst: dst, Size: 1 << 40}
			}
			cfg := hostsim.DefaultConfig()
			cfg.MTU = 4096
			cfg.ECN = true
			cfg.RTO.Min = sim.Millisecond
			cfg.CC.CC, cfg.CC.Recovery = c.cc, c.rec
			cfg.SACK = c.rec == "sack"
			switch c.cc {
			case "dcqcn":
				cfg.CC.Options = map[string]string{"timer": "5us", "byte_counter": "64KB"}
			}
			if c.cc == "hpcc" {
				cfg.INT = hostsim.INTConfig{Enabled: true, Header: 2, HopBytes: 8}
			}
			f, err := fabric.New(fabric.Config{Topo: topo, Flows: flows, Transport: cfg, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !f.RunUntilBatch(sim.Never, 1_000_000) {
				t.Fatalf("%s: the run ended during the warm-up", c.cc)
			}
			tr := f.Transport()
			cnps := tr.Rate.CNPs
			allocs := testing.AllocsPerRun(5, func() { f.RunUntilBatch(sim.Never, 20_000) })
			if allocs != 0 {
				t.Fatalf("%s: %.1f allocations per 20000 events in steady state, want 0", c.cc, allocs)
			}
			// The mechanisms ran: INT records reached HPCC (U > 0), Swift's
			// fabric window moved off its start, DCQCN got CNPs and paced.
			switch ctl := tr.Sender(0).Endpoint().Controller().(type) {
			case *cc.HPCC:
				if ctl.U() <= 0 {
					t.Fatalf("hpcc: U = %v after 1M dispatched events: no INT feedback", ctl.U())
				}
			case *cc.Swift:
				if ctl.FabricCwnd() == float64(cfg.CC.InitCwnd) {
					t.Fatalf("swift: fabric window still at its initial %v", ctl.FabricCwnd())
				}
			case *cc.DCQCN:
				if tr.Rate.CNPs == cnps || tr.Rate.PaceTimers == 0 || ctl.CNPs == 0 {
					t.Fatalf("dcqcn: %d CNPs sent while measured, %d pace timers, %d CNPs at flow 0: rate control did not run", tr.Rate.CNPs-cnps, tr.Rate.PaceTimers, ctl.CNPs)
				}
			default:
				t.Fatalf("controller %T", ctl)
			}
		})
	}
}
