package stracksim_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/stracksim"
)

var example = filepath.Join("..", "examples", "multi_loss_stracksim.yaml")

// run runs the example with protocol cc and seed.
func run(t *testing.T, cc string, seed uint64) []hostsim.FlowRecord {
	t.Helper()
	b, err := scenario.LoadFile(example, scenario.WithSeed(seed), func(s *scenario.Scenario) { s.Transport.CC = cc })
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.Run(b, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs := r.Fabric.Transport().Records
	for i, rec := range recs {
		if !rec.Finished || rec.AckedAt == 0 {
			t.Fatalf("%s seed %d: flow %d did not finish", cc, seed, i)
		}
	}
	return slices.Clone(recs)
}

func senderFCTs(recs []hostsim.FlowRecord) []sim.Time {
	var f []sim.Time
	for _, r := range recs {
		f = append(f, r.AckedAt-r.StartAt)
	}
	return f
}

// TestProfile_SeedIsOneDraw: one seed gives the same run twice; seeds
// differ in the hash-map orders, so 20 of them spread as STrack-Sim's
// runs do.
func TestProfile_SeedIsOneDraw(t *testing.T) {
	for _, cc := range []string{"simpletcp", "strack"} {
		a, b := run(t, cc, 7), run(t, cc, 7)
		if !slices.Equal(a, b) {
			t.Fatalf("%s: seed 7 twice gave different records", cc)
		}
		p99s := map[sim.Time]bool{}
		for s := uint64(1); s <= 20; s++ {
			_, p99 := stracksim.Percentiles(senderFCTs(run(t, cc, s)))
			p99s[p99] = true
		}
		if len(p99s) < 5 {
			t.Fatalf("%s: 20 seeds gave %d distinct P99s; the hash orders do not reach the run", cc, len(p99s))
		}
	}
}

// TestProfile_STrackSmallFlows: h1's two 64 KiB flows under STrack finish
// at the sender exactly when they did in STrack-Sim's own run
// (examples/tcp_limits/data/per_flow.csv of the report: 42,440 and
// 56,820 ns), in the order the h1 flow map's draw gives.
func TestProfile_STrackSmallFlows(t *testing.T) {
	for s := uint64(1); s <= 4; s++ {
		f := senderFCTs(run(t, "strack", s))
		got := []sim.Time{f[1], f[3]}
		slices.Sort(got)
		if got[0] != 42440*sim.Nanosecond || got[1] != 56820*sim.Nanosecond {
			t.Fatalf("seed %d: h1's flows finished after %v and %v, STrack-Sim's after 42.44us and 56.82us", s, f[1], f[3])
		}
	}
}

// TestProfile_ReproducesTheReportsSTrackRun: one draw of the hash-map
// orders (seed 344) gives STrack-Sim's own STrack run of the report's data
// (examples/tcp_limits/data/per_flow.csv and aggregate.csv) to the
// nanosecond: FCTs 243,068, 42,440, 142,084 and 56,820 ns, 663 packets
// sent, 215 retransmitted, 152 drops, 203 marks.
func TestProfile_ReproducesTheReportsSTrackRun(t *testing.T) {
	b, err := scenario.LoadFile(example, scenario.WithSeed(344), func(s *scenario.Scenario) { s.Transport.CC = "strack" })
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.Run(b, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs := r.Fabric.Transport().Records
	want := []sim.Time{243068, 42440, 142084, 56820}
	var sent, retx uint64
	for i, rec := range recs {
		if got := rec.AckedAt - rec.StartAt; got != want[i]*sim.Nanosecond {
			t.Errorf("flow %d: FCT %v, STrack-Sim's %d ns", i, got, want[i])
		}
		sent += rec.PacketsSent
		retx += rec.Retransmits
	}
	s := r.Summary()
	if sent != 663 || retx != 215 || s.Drops != 152 || s.Marks != 203 {
		t.Errorf("sent %d, retransmitted %d, drops %d, marks %d; STrack-Sim's 663, 215, 152, 203", sent, retx, s.Drops, s.Marks)
	}
}
