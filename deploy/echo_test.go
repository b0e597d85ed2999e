package deploy

import (
	"context"
	"testing"
	"time"

	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/scenario"
)

// Nodes in goroutines have a connection each, made with node.ConnOptions:
// the server does not send a node's report back to it (NoEcho), so every
// window costs one delivery fewer per node. Without the option each node
// hears its own report every window (Perf.Echoes ≈ Windows).
func TestRun_NodesDoNotHearTheirOwnReports(t *testing.T) {
	b, err := scenario.LoadFile("../examples/dumbbell.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{Built: b, Placement: pl})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 {
		t.Fatalf("%d results, want 2", len(res.Results))
	}
	for i, r := range res.Results {
		if r.Perf.Windows < 10 || r.Perf.Messages == 0 {
			t.Fatalf("partition %d: %d windows, %d messages: the run did not exchange reports", i, r.Perf.Windows, r.Perf.Messages)
		}
		if r.Perf.Echoes != 0 {
			t.Errorf("partition %d heard %d of its own reports over %d windows; want 0 (NoEcho)", i, r.Perf.Echoes, r.Perf.Windows)
		}
	}
}
