package workloads

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func testRand(seed uint64) *rand.Rand { return sim.NewRand(seed, sim.StreamWorkload) }

// checkIDs fails unless flows are numbered 0..n-1 in order.
func checkIDs(t *testing.T, flows []Flow) {
	t.Helper()
	for i, f := range flows {
		if f.ID != int32(i) {
			t.Fatalf("flows[%d].ID = %d, want %d", i, f.ID, i)
		}
	}
}

func TestPermutation_IsDerangement(t *testing.T) {
	for n := 2; n <= 40; n++ {
		for seed := uint64(0); seed < 200; seed++ {
			flows, err := Permutation(n, 1000, 7, testRand(seed))
			if err != nil {
				t.Fatalf("Permutation(%d): unexpected error %v", n, err)
			}
			if len(flows) != n {
				t.Fatalf("n=%d seed=%d: got %d flows, want %d", n, seed, len(flows), n)
			}
			checkIDs(t, flows)
			recv := make([]int, n)
			for i, f := range flows {
				if f.Src != i || f.Dst == f.Src || f.Dst < 0 || f.Dst >= n || f.Size != 1000 || f.Start != 7 {
					t.Fatalf("n=%d seed=%d: flows[%d] = %+v, want src %d, dst != src in [0,%d), size 1000, start 7", n, seed, i, f, i, n)
				}
				recv[f.Dst]++
			}
			for h, c := range recv {
				if c != 1 {
					t.Fatalf("n=%d seed=%d: host %d receives %d flows, want 1", n, seed, h, c)
				}
			}
		}
	}
	// Large fabrics too.
	flows, err := Permutation(4096, 1, 0, testRand(1))
	if err != nil {
		t.Fatalf("Permutation(4096): unexpected error %v", err)
	}
	seen := make([]bool, 4096)
	for _, f := range flows {
		if f.Dst == f.Src || seen[f.Dst] {
			t.Fatalf("Permutation(4096): flow %+v is a self-flow or repeats a destination", f)
		}
		seen[f.Dst] = true
	}
}

// There are 9 derangements of 4 items; each should come up about 1/9 of the
// time (a uniform draw, unlike htsim's setPermutation).
func TestPermutation_Uniform(t *testing.T) {
	const trials = 90000
	counts := map[[4]int]int{} // only looked up; checked via len and values
	rng := testRand(99)
	for range trials {
		flows, err := Permutation(4, 1, 0, rng)
		if err != nil {
			t.Fatalf("Permutation(4): unexpected error %v", err)
		}
		var k [4]int
		for i, f := range flows {
			k[i] = f.Dst
		}
		counts[k]++
	}
	if len(counts) != 9 {
		t.Fatalf("saw %d distinct derangements of 4 hosts, want 9", len(counts))
	}
	for k, c := range counts {
		// Expected 10000, sd ~94: 5% is over 5 sd.
		if c < 9500 || c > 10500 {
			t.Errorf("derangement %v drawn %d times in %d, want about %d", k, c, trials, trials/9)
		}
	}
}

func TestPermutation_Determinism(t *testing.T) {
	a, _ := Permutation(64, 1, 0, testRand(5))
	b, _ := Permutation(64, 1, 0, testRand(5))
	c, _ := Permutation(64, 1, 0, testRand(6))
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed gave different permutations:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Fatalf("seeds 5 and 6 gave the same permutation %v", a)
	}
}

func TestPermutation_Errors(t *testing.T) {
	tests := []struct {
		n     int
		size  int64
		start sim.Time
		want  string
	}{
		{1, 1, 0, "permutation: needs at least 2 hosts, got 1"},
		{4, 0, 0, "permutation: size must be positive, got 0 bytes"},
		{4, 1, -1, "permutation: start must not be negative, got -1ps"},
	}
	for _, tc := range tests {
		_, err := Permutation(tc.n, tc.size, tc.start, testRand(1))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Permutation(%d, %d, %d) error = %v, want %q", tc.n, tc.size, tc.start, err, tc.want)
		}
	}
}

func TestIncast(t *testing.T) {
	senders := []int{3, 1, 2, 7, 1}
	flows, err := Incast(senders, 0, 4096, sim.Microsecond)
	if err != nil {
		t.Fatalf("Incast: unexpected error %v", err)
	}
	if len(flows) != len(senders) {
		t.Fatalf("Incast: got %d flows, want %d", len(flows), len(senders))
	}
	checkIDs(t, flows)
	for i, f := range flows {
		want := Flow{ID: int32(i), Src: senders[i], Dst: 0, Size: 4096, Start: sim.Microsecond}
		if !reflect.DeepEqual(f, want) {
			t.Errorf("flows[%d] = %+v, want %+v", i, f, want)
		}
	}
	errs := []struct {
		senders []int
		dst     int
		want    string
	}{
		{nil, 0, "incast: no senders"},
		{[]int{1, 2, 0}, 0, "incast: senders[2]: host 0 is the incast destination"},
		{[]int{1, -2}, 0, "incast: senders[1]: host -2 does not exist (host indices start at 0)"},
		{[]int{1}, -1, "incast: dst: host -1 does not exist (host indices start at 0)"},
	}
	for _, tc := range errs {
		_, err := Incast(tc.senders, tc.dst, 1, 0)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Incast(%v, %d) error = %v, want %q", tc.senders, tc.dst, err, tc.want)
		}
	}
}

func TestAllToAll(t *testing.T) {
	hosts := []int{4, 0, 9, 2, 6}
	flows, err := AllToAll(hosts, 100, 3)
	if err != nil {
		t.Fatalf("AllToAll: unexpected error %v", err)
	}
	n := len(hosts)
	if len(flows) != n*(n-1) {
		t.Fatalf("AllToAll(%d hosts): got %d flows, want %d", n, len(flows), n*(n-1))
	}
	checkIDs(t, flows)
	type pair struct{ s, d int }
	seen := map[pair]bool{}
	for _, f := range flows {
		if f.Src == f.Dst || f.Size != 100 || f.Start != 3 {
			t.Fatalf("bad flow %+v", f)
		}
		if seen[pair{f.Src, f.Dst}] {
			t.Fatalf("pair %d->%d appears twice", f.Src, f.Dst)
		}
		seen[pair{f.Src, f.Dst}] = true
	}
	// Order: by sender position, then receiver position.
	if flows[0].Src != 4 || flows[0].Dst != 0 || flows[n-1].Src != 0 || flows[n-1].Dst != 4 {
		t.Fatalf("order: flows[0] = %+v, flows[%d] = %+v; want 4->0 then 0->4", flows[0], n-1, flows[n-1])
	}
	_, err = AllToAll([]int{1, 2, 1}, 1, 0)
	if want := "all-to-all: hosts[2]: host 1 is listed twice (also hosts[0])"; err == nil || err.Error() != want {
		t.Fatalf("AllToAll duplicate error = %v, want %q", err, want)
	}
	if _, err := AllToAll([]int{1}, 1, 0); err == nil {
		t.Fatalf("AllToAll with one host: want an error, got nil")
	}
}
