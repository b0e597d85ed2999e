package stracksim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// keys lists m's keys in iteration order.
func keys(m *rustMap) []int32 {
	var ks []int32
	for i := 0; i < m.buckets(); i++ {
		if k, ok := m.at(i); ok {
			ks = append(ks, k)
		}
	}
	return ks
}

// TestRustMap_HoldsItsKeys drives the table through growths, erasures
// (tombstones) and in-place rehashes against a plain set: the iteration
// must visit exactly the keys present, each once, and growth_left must
// never go negative.
func TestRustMap_HoldsItsKeys(t *testing.T) {
	const n = 600
	rng := rand.New(rand.NewPCG(1, 2))
	m := newRustMap(99, n)
	set := map[int32]bool{}
	check := func(step int) {
		if m.grow < 0 || m.items != len(set) {
			t.Fatalf("step %d: growth_left %d, items %d, set %d", step, m.grow, m.items, len(set))
		}
	}
	// Random inserts and removals, then a sliding window (send_times'
	// pattern: new sequence numbers in, acknowledged ones out), which
	// leaves tombstones that in-place rehashes reclaim.
	for step := 0; step < 5000; step++ {
		k := int32(rng.IntN(n))
		if rng.IntN(3) > 0 {
			m.insert(k)
			set[k] = true
		} else {
			m.remove(k)
			delete(set, k)
		}
		check(step)
	}
	if m.resizes == 0 {
		t.Fatal("the random phase did not grow the table")
	}
	verify(t, m, set)
	// A table filled to capacity and then mostly emptied is full of
	// tombstones; rehash_in_place must reclaim them and keep every key.
	m = newRustMap(5, n)
	set = map[int32]bool{}
	for k := int32(0); k < 112; k++ {
		m.insert(k)
		set[k] = true
	}
	for k := int32(0); k < 100; k++ {
		m.remove(k)
		delete(set, k)
	}
	if !slices.Contains(m.ctrl[:m.buckets()], ctrlDeleted) {
		t.Fatal("no tombstones: the test does not exercise rehash_in_place")
	}
	m.rehashInPlace()
	if slices.Contains(m.ctrl, ctrlDeleted) || m.grow != capacityOf(m.mask)-m.items {
		t.Fatalf("after rehash_in_place: tombstones left or growth_left %d != %d", m.grow, capacityOf(m.mask)-m.items)
	}
	verify(t, m, set)
}

func verify(t *testing.T, m *rustMap, set map[int32]bool) {
	t.Helper()
	got := keys(m)
	if len(got) != len(set) {
		t.Fatalf("iteration visits %d keys, the map holds %d", len(got), len(set))
	}
	for _, k := range got {
		if !set[k] || m.where[k] < 0 {
			t.Fatalf("key %d visited but not held", k)
		}
	}
}

// TestRustMap_SmallTable checks hashbrown's small-table rules by hand: a
// new map gets 4 buckets (capacity 3), the fourth insert grows it to 8
// (capacity 7), and erasing from a table smaller than a group always
// leaves an EMPTY byte (no tombstone).
func TestRustMap_SmallTable(t *testing.T) {
	m := newRustMap(7, 16)
	m.insert(3)
	if m.buckets() != 4 || m.grow != 2 {
		t.Fatalf("after one insert: %d buckets, growth_left %d; want 4, 2", m.buckets(), m.grow)
	}
	m.insert(5)
	m.insert(9)
	if m.buckets() != 4 || m.grow != 0 {
		t.Fatalf("after three inserts: %d buckets, growth_left %d; want 4, 0", m.buckets(), m.grow)
	}
	m.insert(9) // present: reserve(1) still grows the full table
	if m.buckets() != 8 || m.grow != 4 {
		t.Fatalf("an update of a full 4-bucket table: %d buckets, growth_left %d; want 8, 4 (reserve before lookup)", m.buckets(), m.grow)
	}
	m.remove(5)
	if m.grow != 5 || slices.Contains(m.ctrl[:8], ctrlDeleted) {
		t.Fatalf("erase in a small table: growth_left %d, ctrl %v; want 5 and no tombstone", m.grow, m.ctrl[:8])
	}
	if got := keys(m); len(got) != 2 {
		t.Fatalf("keys %v, want 3 and 9", got)
	}
	if bucketsFor(7) != 8 || bucketsFor(8) != 16 || bucketsFor(14) != 16 || bucketsFor(15) != 32 || bucketsFor(112) != 128 {
		t.Fatalf("capacity_to_buckets: %d %d %d %d %d", bucketsFor(7), bucketsFor(8), bucketsFor(14), bucketsFor(15), bucketsFor(112))
	}
}
