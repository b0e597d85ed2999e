package checkpoint

import (
	"runtime/debug"
	"testing"
)

// TestGCSwitch_OverlappingEncodesRestoreTheCollector: two encodes that
// overlap (in-memory partitions) leave the collector as it was before
// the first, not off.
func TestGCSwitch_OverlappingEncodesRestoreTheCollector(t *testing.T) {
	before := debug.SetGCPercent(137)
	defer debug.SetGCPercent(before)
	var g gcSwitch
	g.acquire()
	g.acquire()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("collector at %d while two encodes run, want off (-1)", p)
	}
	g.release()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("collector at %d while one encode runs, want off (-1)", p)
	}
	g.release()
	if p := debug.SetGCPercent(137); p != 137 {
		t.Errorf("collector at %d after both encodes, want 137 as before", p)
	}
}
