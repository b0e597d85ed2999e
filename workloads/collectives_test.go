package workloads

import (
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
	cf, err := Collective(CollectiveConfig{Op: OpAllReduce, Hosts: hostsN(n), Size: 4000, Chunks: c, Pipeline: 1, Start: sim.Microsecond})
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
			}
		}
	}
	if len(cf.Starts) != n {
		t.Errorf("%d start flows, want %d", len(cf.Starts), n)
	}
	for r, e := range cf.Ends {
		if len(e) != c {
			t.Errorf("rank %d ends on %d flows, want %d", r, len(e), c)
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
		{Op: OpAllReduce, Algorithm: AlgHalvingDoubling, Hosts: hostsN(6), Size: 600},
		{Op: OpAllReduce, Hosts: []int{1, 1}, Size: 600},
		{Op: OpAllReduce, Hosts: hostsN(4), Size: 6, Chunks: 4},
		{Op: "broadcast", Hosts: hostsN(4), Size: 600},
	} {
		if _, err := Collective(bad); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

// TestJob_IterationsChain: iteration i+1's first transfers from a rank
// wait, Compute long, on every end flow of iteration i received there.
func TestJob_IterationsChain(t *testing.T) {
	cc := CollectiveConfig{Op: OpAllReduce, Hosts: hostsN(4), Size: 4000, Chunks: 2}
	one, _ := Collective(cc)
	jf, err := Job(JobConfig{Collective: cc, Iterations: 3, Compute: 7 * sim.Microsecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	per := int32(len(one.Flows))
	if len(jf.Flows) != 3*int(per) || len(jf.Iters) != 3 || jf.Iters[2].First != 2*per {
		t.Fatalf("%d flows, iterations %+v", len(jf.Flows), jf.Iters)
	}
	if jf.Flows[0].Start != 7*sim.Microsecond || jf.Flows[0].Need != 0 {
		t.Errorf("iteration 0 starts at %v with need %d, want 7us and 0", jf.Flows[0].Start, jf.Flows[0].Need)
	}
	for _, s := range one.Starts {
		f := jf.Flows[per+s]
		r := f.Src - 10
		if f.Need != int32(len(one.Ends[r])) || f.Delay != 7*sim.Microsecond {
			t.Errorf("iteration 1 flow %d: need %d delay %v", per+s, f.Need, f.Delay)
		}
		for _, e := range one.Ends[r] {
			if !contains(jf.Flows[e].OnRecvDone, per+s) {
				t.Errorf("iteration 0 end flow %d does not start iteration 1's flow %d", e, per+s)
			}
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

func TestJob_StragglersDrawnPerRankAndIteration(t *testing.T) {
	cc := CollectiveConfig{Op: OpAllReduce, Hosts: hostsN(4), Size: 4000}
	jf, err := Job(JobConfig{Collective: cc, Iterations: 2, Compute: sim.Microsecond, ComputeMax: 50 * sim.Microsecond}, sim.NewRand(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[sim.Time]bool{}
	per := len(jf.Flows) / 2
	for _, f := range jf.Flows[:4] { // iteration 0's first step: one per rank
		if f.Start < sim.Microsecond || f.Start > 50*sim.Microsecond {
			t.Errorf("iteration 0 rank start %v outside [1us, 50us]", f.Start)
		}
		seen[f.Start] = true
	}
	for _, f := range jf.Flows[per : per+4] {
		if f.Delay < sim.Microsecond || f.Delay > 50*sim.Microsecond {
			t.Errorf("iteration 1 compute %v outside [1us, 50us]", f.Delay)
		}
		seen[f.Delay] = true
	}
	if len(seen) < 6 {
		t.Errorf("%d distinct compute times of 8: not drawn per rank and iteration", len(seen))
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
		f := jf.Flows[3*per+s]
		if r := f.Src - 10; f.Need != int32(2*len(one.Ends[r])) || f.Delay != 10*sim.Microsecond {
			t.Errorf("iteration 1 bucket 1: need %d delay %v", f.Need, f.Delay)
		}
	}
}
