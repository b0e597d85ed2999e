package node

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep-sim/lockstep/internal/wire"
)

// TestAwaitPeers: a node whose server is one of several waits until its
// server knows every peer's subscription to this node's batches, and the
// reports, before it publishes; it names the peer it still misses when the
// setup timeout passes (its subscription to those batches is each node's
// last).
func TestAwaitPeers(t *testing.T) {
	subj, err := wire.NewSubjects("r")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	known := map[string]bool{subj.Batch(0, 1): true}
	cfg := Config{Partition: 1, SetupTimeout: 10 * time.Second, Interest: func(s string) bool {
		// Node 2's subscription arrives after some polls.
		if calls.Add(1) > 20 && s == subj.Batch(2, 1) {
			return true
		}
		return known[s]
	}}
	if err := awaitPeers(context.Background(), cfg, subj, 3); err != nil {
		t.Fatal(err)
	}
	if calls.Load() <= 20 {
		t.Errorf("returned after %d polls, before node 2's subscription was known", calls.Load())
	}
	asked := map[string]bool{}
	cfg.SetupTimeout = 30 * time.Millisecond
	cfg.Interest = func(s string) bool { asked[s] = true; return known[s] }
	err = awaitPeers(context.Background(), cfg, subj, 3)
	if err == nil || !strings.Contains(err.Error(), "not heard of node 2's subscriptions") {
		t.Errorf("node 2 never subscribing: %v, want an error naming node 2", err)
	}
	if asked[subj.Batch(1, 1)] {
		t.Error("the node waited for its own subscription through its peers' eyes")
	}
}
