package workloads

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func hostsN(n int) []int {
	h := make([]int, n)
	for i := range h {
		h[i] = 10 + i
	}
	return h
}

// TestCollective_RingDependencies: a ring all-reduce of n ranks has
// 2(n-1) steps of n transfers of size/n, each cut into chunks; piece k of
// step s at rank r waits on piece k of step s-1 arriving at r (from r-1),
// and on the sender finishing piece k-pipeline of the same step.
func TestCollective_RingDependencies(t *testing.T) {
	n, c := 4, 2
	cf, err := Collective(CollectiveConfig{Op: OpAllReduce, Hosts: hostsN(n), Size: 4000, Chunks: c, Pipeline: 1, Start: sim.Microsecond,
		Delay: 3 * sim.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * (n - 1) * n * c; len(cf.Flows) != want {
		t.Fatalf("%d flows, want %d", len(cf.Flows), want)
	}
	id := func(s, r, k int) int32 { return int32((s*n+r)*c + k) }
	for s := 0; s < 2*(n-1); s++ {
		for r := 0; r < n; r++ {
			for k := 0; k < c; k++ {
				f := cf.Flows[id(s, r, k)]
				if f.Src != 10+r || f.Dst != 10+(r+1)%n || f.Size != 500 {
					t.Fatalf("step %d rank %d piece %d: %+v", s, r, k, f)
				}
				need := int32(0)
				if s > 0 {
					need++
					if !contains(cf.Flows[id(s-1, (r-1+n)%n, k)].OnRecvDone, id(s, r, k)) {
						t.Errorf("step %d rank %d piece %d does not wait on the piece it forwards", s, r, k)
					}
				}
				if k >= 1 {
					need++
					if !contains(cf.Flows[id(s, r, k-1)].OnSendDone, id(s, r, k)) {
						t.Errorf("step %d rank %d piece %d does not wait on the pipeline window", s, r, k)
					}
				}
				if f.Need != need {
					t.Errorf("step %d rank %d piece %d: need %d, want %d", s, r, k, f.Need, need)
				}
				// The delay is the reduction of what arrived: none in
				// step 0, where a piece waits only on the window.
				if want := map[bool]sim.Time{true: 3 * sim.Microsecond, false: 0}[s > 0]; f.Delay != want {
					t.Errorf("step %d rank %d piece %d: delay %v, want %v", s, r, k, f.Delay, want)
				}
			}
		}
	}
	if len(cf.Starts) != n {
		t.Errorf("%d start flows, want %d", len(cf.Starts), n)
	}
	// A rank ends on everything it receives: every step's pieces from
	// rank r-1.
	for r, e := range cf.Ends {
		if len(e) != 2*(n-1)*c {
			t.Errorf("rank %d ends on %d flows, want %d", r, len(e), 2*(n-1)*c)
		}
		for _, x := range e {
			if cf.Flows[x].Dst != 10+r || cf.Flows[x].Src != 10+(r-1+n)%n {
				t.Errorf("rank %d ends on flow %d, %d -> %d", r, x, cf.Flows[x].Src, cf.Flows[x].Dst)
			}
		}
	}
}

func contains(xs []int32, v int32) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

func TestCollective_Shapes(t *testing.T) {
	for _, c := range []struct {
		name         string
		cfg          CollectiveConfig
		flows, start int
		sizes        []int64 // of the first flows, when given
	}{
		{"halving-doubling", CollectiveConfig{Op: OpAllReduce, Algorithm: AlgHalvingDoubling, Hosts: hostsN(8), Size: 8000}, 6 * 8, 8,
			[]int64{4000}},
		{"double binary tree", CollectiveConfig{Op: OpAllReduce, Algorithm: AlgDoubleBinaryTree, Hosts: hostsN(5), Size: 1000}, 2 * 2 * 4, 0, nil},
		{"reduce-scatter", CollectiveConfig{Op: OpReduceScatter, Hosts: hostsN(4), Size: 4000}, 3 * 4, 4, []int64{1000}},
		{"allgather", CollectiveConfig{Op: OpAllGather, Hosts: hostsN(4), Size: 4000, Chunks: 2}, 3 * 4 * 2, 8, []int64{500}},
		{"alltoall", CollectiveConfig{Op: OpAllToAll, Hosts: hostsN(4), Size: 4000}, 12, 12, []int64{1000}},
	} {
		cf, err := Collective(c.cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(cf.Flows) != c.flows {
			t.Errorf("%s: %d flows, want %d", c.name, len(cf.Flows), c.flows)
		}
		if c.start > 0 && len(cf.Starts) != c.start {
			t.Errorf("%s: %d start flows, want %d", c.name, len(cf.Starts), c.start)
		}
		for i, s := range c.sizes {
			if cf.Flows[i].Size != s {
				t.Errorf("%s: flow %d has %d bytes, want %d", c.name, i, cf.Flows[i].Size, s)
			}
		}
	}
	// Halving-doubling: step 0 pairs ranks n/2 apart; the last step too.
	cf, _ := Collective(CollectiveConfig{Op: OpAllReduce, Algorithm: AlgHalvingDoubling, Hosts: hostsN(8), Size: 8000})
	if f := cf.Flows[1]; f.Src != 11 || f.Dst != 15 {
		t.Errorf("halving-doubling step 0 rank 1 sends %d -> %d, want 11 -> 15", f.Src, f.Dst)
	}
	if f := cf.Flows[5*8+1]; f.Src != 11 || f.Dst != 15 || f.Size != 4000 {
		t.Errorf("halving-doubling last step rank 1: %+v", f)
	}
	for _, bad := range []CollectiveConfig{
		{Op: OpAllReduce, Hosts: []int{1, 1}, Size: 600},
		{Op: OpAllReduce, Hosts: hostsN(4), Size: 6, Chunks: 4},
		{Op: "broadcast", Hosts: hostsN(4), Size: 600},
	} {
		if _, err := Collective(bad); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

// TestJob_IterationsChain: a ring all-reduce of 4 ranks, 2 pieces per
// step both in flight, every transfer 1us, compute 7us. Iteration 0 runs
// its 6 steps from 7us to 13us. The last step's pieces into rank 2 take
// 5us instead (12-17us), so rank 2 is ready for iteration 1 at 24us and
// the others at 20us. By hand, iteration 1: step 0 leaves ranks 0, 1, 3
// at 20us and rank 2 at 24us; step 1 leaves rank 0 and 1 at 21us (their
// step-0 data arrived), rank 2 at 24us (rank 1's data arrived at 21us,
// but rank 2's own gradients exist only at 24us) and rank 3 at 25us
// (rank 2's step-0 data).
func TestJob_IterationsChain(t *testing.T) {
	us := sim.Microsecond
	cc := CollectiveConfig{Op: OpAllReduce, Hosts: hostsN(4), Size: 4000, Chunks: 2}
	one, _ := Collective(cc)
	jf, err := Job(JobConfig{Collective: cc, Iterations: 2, Compute: 7 * us}, nil)
	if err != nil {
		t.Fatal(err)
	}
	per := int32(len(one.Flows))
	if len(jf.Flows) != 2*int(per) || len(jf.Iters) != 2 || jf.Iters[1].First != per {
		t.Fatalf("%d flows, iterations %+v", len(jf.Flows), jf.Iters)
	}
	// id is the flow of piece k of step s at rank r in iteration it.
	id := func(it, s, r, k int) int32 { return int32(it)*per + int32((s*4+r)*2+k) }
	start, end, _ := evalTimesBy(t, jf, func(x int32) sim.Time {
		if x == id(0, 5, 1, 0) || x == id(0, 5, 1, 1) {
			return 5 * us
		}
		return us
	})
	if got := end[id(0, 5, 0, 0)]; got != 13*us {
		t.Errorf("iteration 0 ends at %v at rank 1, want 13us", got)
	}
	for r, want := range []sim.Time{20, 20, 24, 20} {
		for k := range 2 {
			if got := start[id(1, 0, r, k)]; got != want*us {
				t.Errorf("iteration 1 step 0 rank %d piece %d starts at %v, want %v", r, k, got, want*us)
			}
		}
	}
	for r, want := range []sim.Time{21, 21, 24, 25} {
		if got := start[id(1, 1, r, 0)]; got != want*us {
			t.Errorf("iteration 1 step 1 rank %d starts at %v, want %v", r, got, want*us)
		}
	}
	// Rank r's task of iteration 1 waits on every flow it received.
	if it := jf.IterTasks[1]; it.Count != 4 {
		t.Fatalf("iteration 1 has %d tasks, want one per rank", it.Count)
	}
	for r := range 4 {
		tk := jf.Tasks[jf.IterTasks[1].First+int32(r)]
		if tk.Host != 10+r || tk.Need != 6*2 || tk.Delay != 7*us {
			t.Errorf("rank %d's task of iteration 1: %+v, want host %d, need 12, delay 7us", r, tk, 10+r)
		}
	}
}

func TestBusFactor_NCCL(t *testing.T) {
	if f := BusFactor(OpAllReduce, 8); f != 1.75 {
		t.Errorf("allreduce 8 ranks: %v, want 2*7/8", f)
	}
	if f := BusFactor(OpAllGather, 4); f != 0.75 {
		t.Errorf("allgather 4 ranks: %v, want 3/4", f)
	}
}

// TestJob_StragglersDrawnPerRankAndIteration: with compute_max every
// rank's compute of every iteration is its own draw in [compute,
// compute_max]; iteration 0's are the times its tasks fire, later ones
// their delays, and no flow of a rank starts before its task.
func TestJob_StragglersDrawnPerRankAndIteration(t *testing.T) {
	us := sim.Microsecond
	cc := CollectiveConfig{Op: OpAllReduce, Hosts: hostsN(4), Size: 4000}
	jf, err := Job(JobConfig{Collective: cc, Iterations: 2, Compute: us, ComputeMax: 50 * us}, sim.NewRand(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	if len(jf.Tasks) != 8 || jf.IterTasks[1].First != 4 {
		t.Fatalf("%d tasks, iterations %+v: want one per rank and iteration", len(jf.Tasks), jf.IterTasks)
	}
	seen := map[sim.Time]bool{}
	for k, tk := range jf.Tasks {
		d := tk.Start
		if k >= 4 {
			d = tk.Delay
		}
		if d < us || d > 50*us {
			t.Errorf("task %d: compute %v outside [1us, 50us]", k, d)
		}
		seen[d] = true
	}
	if len(seen) < 6 {
		t.Errorf("%d distinct compute times of 8: not drawn per rank and iteration", len(seen))
	}
	start, _, fired := evalTimes(t, jf, us)
	for k, tk := range jf.Tasks {
		for _, x := range tk.Next {
			if jf.Flows[x].Src != tk.Host || start[x] < fired[k] {
				t.Errorf("flow %d (from %d) starts at %v, before its rank's compute ends at %v", x, jf.Flows[x].Src, start[x], fired[k])
			}
		}
	}
	if _, err := Job(JobConfig{Collective: cc, Iterations: 1, Compute: 5, ComputeMax: 4}, nil); err == nil {
		t.Error("compute_max below compute: want an error")
	}
}

// TestJob_BucketsOverlapCompute: bucket b of size/B starts when (b+1)/B of
// the rank's compute is done; the next iteration waits on every bucket.
func TestJob_BucketsOverlapCompute(t *testing.T) {
	cc := CollectiveConfig{Op: OpAllReduce, Hosts: hostsN(4), Size: 8000}
	jf, err := Job(JobConfig{Collective: cc, Iterations: 2, Compute: 10 * sim.Microsecond, Buckets: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	half := cc
	half.Size = 4000
	one, _ := Collective(half)
	per := int32(len(one.Flows))
	if len(jf.Flows) != 4*int(per) || jf.Iters[1].First != 2*per || jf.Iters[1].Count != 2*per {
		t.Fatalf("%d flows, iterations %+v; want 4 buckets' worth, 2 per iteration", len(jf.Flows), jf.Iters)
	}
	for _, s := range one.Starts {
		if a, b := jf.Flows[s].Start, jf.Flows[per+s].Start; a != 5*sim.Microsecond || b != 10*sim.Microsecond {
			t.Errorf("iteration 0 buckets start at %v and %v, want 5us and 10us", a, b)
		}
	}
	// Iteration 1: a task per bucket and rank, bucket b's (b+1)/2 of the
	// compute after the last of every bucket's receipts.
	us := sim.Microsecond
	for b := range 2 {
		for r := range 4 {
			tk := jf.Tasks[jf.IterTasks[1].First+int32(4*b+r)]
			if tk.Host != 10+r || tk.Need != int32(2*len(one.Ends[r])) || tk.Delay != sim.Time(5*(b+1))*us {
				t.Errorf("iteration 1 bucket %d rank %d: task %+v", b, r, tk)
			}
		}
	}
	// Every transfer 1us: each bucket's 6 ring steps end 6us after it
	// starts, so iteration 0 ends at 16us and iteration 1's buckets start
	// at 21us and 26us.
	start, _, _ := evalTimes(t, jf, us)
	for _, s := range one.Starts {
		if a, b := start[2*per+s], start[3*per+s]; a != 21*us || b != 26*us {
			t.Errorf("iteration 1 buckets start at %v and %v, want 21us and 26us", a, b)
		}
	}
}

// dataReach checks, for every rank, that every flow it receives last
// (no other flow it receives waits, through the data it carries, on this
// one) carries, with the rank's own data, the data of every rank (with
// union: that they do together): a flow carries its sender's data and
// the data of every flow whose arrival it waits on (OnRecvDone: data;
// OnSendDone is the pipeline window, not data). It returns how many such
// last receipts each rank has.
func dataReach(t *testing.T, cf *CollectiveFlows, hosts []int, union bool, what string) []int {
	t.Helper()
	rankOf := map[int]int{}
	for r, h := range hosts {
		rankOf[h] = r
	}
	in := make([][]int32, len(cf.Flows)) // flows whose arrival each waits on
	for i, f := range cf.Flows {
		for _, g := range f.OnRecvDone {
			in[g] = append(in[g], int32(i))
			if cf.Flows[g].Src != f.Dst {
				t.Fatalf("flow %d arrives at host %d but activates flow %d from host %d", i, f.Dst, g, cf.Flows[g].Src)
			}
		}
	}
	carry := make([]uint64, len(cf.Flows))
	done := make([]bool, len(cf.Flows))
	var visit func(i int32) uint64
	visit = func(i int32) uint64 {
		if !done[i] {
			done[i] = true
			carry[i] = 1 << rankOf[cf.Flows[i].Src]
			for _, d := range in[i] {
				carry[i] |= visit(d)
			}
		}
		return carry[i]
	}
	// before[x]: a flow that waits on x (transitively) arrives at x's
	// receiver too.
	before := make([]bool, len(cf.Flows))
	var mark func(x int32, r int)
	seen := make([]int, len(cf.Flows))
	mark = func(x int32, r int) {
		for _, d := range in[x] {
			if seen[d] == r+1 {
				continue
			}
			seen[d] = r + 1
			if rankOf[cf.Flows[d].Dst] == r {
				before[d] = true
			}
			mark(d, r)
		}
	}
	all := uint64(1)<<len(hosts) - 1
	last := make([]int, len(hosts))
	for r, ends := range cf.Ends {
		for _, e := range ends {
			mark(e, r)
		}
		u := uint64(1) << r
		for _, e := range ends {
			if before[e] {
				continue
			}
			last[r]++
			u |= visit(e)
			if got := visit(e) | 1<<r; !union && got != all {
				t.Errorf("%s: rank %d's last receipt %d (%d->%d) carries data of %b, want every rank's", what, r, e,
					cf.Flows[e].Src, cf.Flows[e].Dst, got)
			}
		}
		if u != all {
			t.Errorf("%s: rank %d's last receipts carry data of %b, want every rank's", what, r, u)
		}
	}
	return last
}

// TestCollective_EveryRankGetsEveryRanksData: for every allreduce
// algorithm, rank count (powers of two and not) and chunking, each of a
// ring's or tree's last receipts at a rank carries every rank's data (a
// ring's gather steps, a tree's broadcast); halving-doubling's do
// together (its last reduce step's receipt holds half the ranks, which
// the rank adds to what it holds); a rank's end flows are all it
// receives.
func TestCollective_EveryRankGetsEveryRanksData(t *testing.T) {
	for _, alg := range []string{AlgRing, AlgHalvingDoubling, AlgDoubleBinaryTree} {
		for n := 2; n <= 19; n++ {
			for _, chunks := range []int{1, 3} {
				cf, err := Collective(CollectiveConfig{Op: OpAllReduce, Algorithm: alg, Hosts: hostsN(n), Size: 64000, Chunks: chunks, Pipeline: 1})
				if err != nil {
					t.Fatalf("%s n=%d: %v", alg, n, err)
				}
				what := fmt.Sprintf("%s n=%d chunks=%d", alg, n, chunks)
				for r, k := range dataReach(t, cf, hostsN(n), alg == AlgHalvingDoubling, what) {
					if k == 0 {
						t.Errorf("%s: rank %d has no last receipt", what, r)
					}
				}
				got := 0
				for r, e := range cf.Ends {
					for _, x := range e {
						if cf.Flows[x].Dst != 10+r {
							t.Errorf("%s: rank %d ends on flow %d to host %d", what, r, x, cf.Flows[x].Dst)
						}
					}
					got += len(e)
				}
				if got != len(cf.Flows) {
					t.Errorf("%s: ranks end on %d flows in all, want every one of the %d", what, got, len(cf.Flows))
				}
			}
		}
	}
}

// TestBtree_NCCLFigures checks the trees against the figures of NCCL's
// src/graph/trees.cc: the btree of 14 ranks, the mirrored second tree of
// 12 ranks and the shifted second tree of 13.
func TestBtree_NCCLFigures(t *testing.T) {
	for _, c := range []struct {
		n, tree int
		root    int
		kids    map[int][]int
	}{
		{14, 0, 0, map[int][]int{0: {8}, 8: {4, 12}, 4: {2, 6}, 12: {10, 13}, 2: {1, 3}, 6: {5, 7}, 10: {9, 11}}},
		{13, 0, 0, map[int][]int{0: {8}, 8: {4, 12}, 4: {2, 6}, 12: {10}, 2: {1, 3}, 6: {5, 7}, 10: {9, 11}}},
		{12, 1, 11, map[int][]int{11: {3}, 3: {1, 7}, 1: {0, 2}, 7: {5, 9}, 5: {4, 6}, 9: {8, 10}}},
		{13, 1, 1, map[int][]int{1: {9}, 9: {0, 5}, 5: {3, 7}, 0: {11}, 3: {2, 4}, 7: {6, 8}, 11: {10, 12}}},
	} {
		parent, kids := dtree(c.n, c.tree)
		for r := 0; r < c.n; r++ {
			want := c.kids[r]
			got := slices.Sorted(slices.Values(kids[r]))
			if len(got) != len(want) {
				t.Errorf("n=%d tree %d: rank %d has children %v, want %v", c.n, c.tree, r, got, want)
				continue
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("n=%d tree %d: rank %d has children %v, want %v", c.n, c.tree, r, got, want)
				}
			}
			if (parent[r] < 0) != (r == c.root) {
				t.Errorf("n=%d tree %d: rank %d has parent %d; the root is %d", c.n, c.tree, r, parent[r], c.root)
			}
		}
	}
}

// TestDtree_SpanningAndComplementary: for every n, each tree reaches
// every rank once from its root (ncclGetDtreeRoots: 0, and n-1 or 1 for
// odd n), every child's parent lists it, no rank has more than two
// children, and for even n no rank is inner in both trees.
func TestDtree_SpanningAndComplementary(t *testing.T) {
	for n := 2; n <= 130; n++ {
		var inner [2][]bool
		for tr := 0; tr < 2; tr++ {
			parent, kids := dtree(n, tr)
			root := 0
			if tr == 1 {
				root = n - 1
				if n%2 == 1 {
					root = 1
				}
			}
			seen := make([]bool, n)
			inner[tr] = make([]bool, n)
			queue := []int{root}
			seen[root] = true
			for len(queue) > 0 {
				r := queue[0]
				queue = queue[1:]
				if len(kids[r]) > 2 {
					t.Fatalf("n=%d tree %d: rank %d has %d children", n, tr, r, len(kids[r]))
				}
				inner[tr][r] = len(kids[r]) > 0
				for _, c := range kids[r] {
					if seen[c] || parent[c] != r {
						t.Fatalf("n=%d tree %d: child %d of %d (parent %d, seen %v)", n, tr, c, r, parent[c], seen[c])
					}
					seen[c] = true
					queue = append(queue, c)
				}
			}
			for r, ok := range seen {
				if !ok {
					t.Fatalf("n=%d tree %d: rank %d not reached from root %d", n, tr, r, root)
				}
			}
		}
		if n%2 == 0 {
			for r := 0; r < n; r++ {
				if inner[0][r] && inner[1][r] {
					t.Errorf("n=%d: rank %d is inner in both trees", n, r)
				}
			}
		}
	}
}

// TestHalvingDoubling_NonPowerOfTwo_MPICHFold: 6 ranks fold to 4 as
// MPICH does: ranks 0 and 2 send their whole buffer to 1 and 3 first,
// ranks 1, 3, 4, 5 run halving-doubling, then 1 and 3 send the result
// back to 0 and 2.
func TestHalvingDoubling_NonPowerOfTwo_MPICHFold(t *testing.T) {
	hosts := hostsN(6)
	cf, err := Collective(CollectiveConfig{Op: OpAllReduce, Algorithm: AlgHalvingDoubling, Hosts: hosts, Size: 8000})
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Flows) != 2+4*4+2 {
		t.Fatalf("%d flows, want 2 + 4 steps x 4 + 2", len(cf.Flows))
	}
	type tr struct {
		a, b int
		size int64
	}
	got := func(i int) tr { f := cf.Flows[i]; return tr{f.Src - 10, f.Dst - 10, f.Size} }
	for i, w := range []tr{{0, 1, 8000}, {2, 3, 8000}} {
		if got(i) != w {
			t.Errorf("pre-step %d: %+v, want %+v", i, got(i), w)
		}
	}
	// Core step 0 over new ranks 0..3 = real ranks 1, 3, 4, 5: partners
	// 2 apart (1<->4, 3<->5), half the buffer.
	for i, w := range []tr{{1, 4, 4000}, {3, 5, 4000}, {4, 1, 4000}, {5, 3, 4000}} {
		if got(2+i) != w {
			t.Errorf("core step 0 flow %d: %+v, want %+v", i, got(2+i), w)
		}
	}
	for i, w := range []tr{{1, 0, 8000}, {3, 2, 8000}} {
		if g := got(len(cf.Flows) - 2 + i); g != w {
			t.Errorf("post-step %d: %+v, want %+v", i, g, w)
		}
	}
	// Rank 1's first core send waits on rank 0's buffer; rank 4's does not.
	if cf.Flows[2].Need != 1 || !contains(cf.Flows[0].OnRecvDone, 2) || cf.Flows[4].Need != 0 {
		t.Errorf("rank 1 step 0 need %d (activated by the pre-step: %v), rank 4 need %d",
			cf.Flows[2].Need, contains(cf.Flows[0].OnRecvDone, 2), cf.Flows[4].Need)
	}
	if e := cf.Ends[0]; len(e) != 1 || int(e[0]) != len(cf.Flows)-2 {
		t.Errorf("rank 0 ends on %v, want the post-step from rank 1", e)
	}
}
