package sim

import "testing"

// TestFindDeadlock_FirstGridTimeWithACycle: a cycle 1->2->3->1 whose last
// port becomes long-paused at 700 (paused since 200, threshold 500) is
// found at the first grid time at or after that (900 on a grid of 300);
// a port that waits on an element outside the cycle and a pause
// that ends before the grid time are not part of it.
func TestFindDeadlock_FirstGridTimeWithACycle(t *testing.T) {
	ports := []PausedPort{
		{Elem: 3, Peer: 1, Port: 0, Since: 200, Until: 5000},
		{Elem: 1, Peer: 2, Port: 1, Since: 0, Until: 5000},
		{Elem: 2, Peer: 3, Port: 4, Since: 100, Until: 5000},
		{Elem: 2, Peer: 9, Port: 0, Since: 0, Until: 5000}, // waits on a non-waiting element
		{Elem: 4, Peer: 1, Port: 0, Since: 0, Until: 650},  // ends before 700
	}
	at, cyc, ok := FindDeadlock(ports, 0, 10000, 300, 500)
	if !ok || at != 900 {
		t.Fatalf("want the cycle at 900 (the grid time of 300 at or after 700), got %v %v", at, ok)
	}
	want := []ElemID{1, 2, 3}
	if len(cyc) != 3 {
		t.Fatalf("want a cycle of 3 ports, got %+v", cyc)
	}
	for i, p := range cyc {
		if p.Elem != want[i] || p.Peer != want[(i+1)%3] {
			t.Errorf("cycle[%d] = %+v, want %d waiting for %d", i, p, want[i], want[(i+1)%3])
		}
	}
	// Before hi: no search past it.
	if _, _, ok := FindDeadlock(ports, 0, 899, 300, 500); ok {
		t.Errorf("found a deadlock beyond hi")
	}
	// The pause of 3 ends at 800: never three long-paused ports at once.
	ports[0].Until = 800
	if at, _, ok := FindDeadlock(ports, 0, 10000, 100, 500); !ok || at != 700 {
		t.Errorf("grid of 100: want the cycle at 700 (before 3's pause ends at 800), got %v %v", at, ok)
	}
	if _, _, ok := FindDeadlock(ports, 0, 10000, 300, 500); ok {
		t.Errorf("grid of 300: the only candidate (900) is after 3's pause ends; want none")
	}
}
