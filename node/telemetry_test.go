package node

import (
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/internal/simtest"
	"github.com/lockstep-sim/lockstep/partition"
)

// TestRunLocal_Design2_TelemetryByteIdentical: the per-packet telemetry
// (INT records for HPCC, NIC waits and endpoint delays for Swift) lives
// in the packet pool's side table and must cross partitions with its
// packet (sim.RemotePacket.Tel), so that results do not depend on the
// cut. The random scenario (loss, jitter, reordering, spraying) with each
// controller, one process against 2 and 4 partitions and one per element
// (3 partitions added 1 s under -race and no cut the others lack).
func TestRunLocal_Design2_TelemetryByteIdentical(t *testing.T) {
	for _, c := range []string{"hpcc", "swift"} {
		tr := "transport: {cc: " + c + ", recovery: sack,"
		if c == "swift" {
			// Targets the scenario's delays straddle: with the defaults (20
			// us and more) every sample is below target, the windows only
			// grow, and a lost endpoint delay would change nothing.
			tr += " options: {base_target_us: 3, per_hop_us: 0.3, endpoint_target_us: 0.5},"
		}
		text := strings.Replace(simtest.RandomScenario, "transport: {ecn: true,", tr, 1) +
			"output: {cwnd: {all: true}, queues: {interval: 20us}}\n"
		// Smaller flows than the shared scenario's 1MB keep the test short
		// under -race; they still lose and retransmit (checked below).
		text = strings.Replace(text, "size: 1MB", "size: 400KB", 1)
		if !strings.Contains(text, "cc: "+c) || !strings.Contains(text, "size: 400KB") {
			t.Fatalf("the random scenario's transport line changed: %q", simtest.RandomScenario)
		}
		b := loadText(t, c+".yaml", "seed: 7\n"+text)
		if c == "hpcc" && !b.Fabric.Transport.INT.Enabled {
			t.Fatalf("cc hpcc: INT should be on by default")
		}
		want, wantSum := single(t, b)
		if wantSum.Retransmits == 0 {
			t.Fatalf("%s: the scenario should lose and retransmit: %+v", c, wantSum)
		}
		for _, p := range []int{2, 4} {
			pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, p)
			if err != nil {
				t.Fatal(err)
			}
			got, lr := local(t, b, pl, p == 4)
			compare(t, c+" P="+itoa(p), want, wantSum, got, lr)
		}
		pl, err := partition.PerElement(b.Topo, b.Fabric.Impairments)
		if err != nil {
			t.Fatal(err)
		}
		got, lr := local(t, b, pl, false)
		compare(t, c+" per-element", want, wantSum, got, lr)
	}
}
