package workloads

import (
	"fmt"
	"math/bits"
	"math/rand/v2"

	"github.com/lockstep-sim/lockstep/sim"
)

// Collective operations and algorithms (CollectiveConfig).
const (
	OpAllReduce     = "allreduce"
	OpReduceScatter = "reduce_scatter"
	OpAllGather     = "allgather"
	OpAllToAll      = "alltoall"

	AlgRing             = "ring"
	AlgHalvingDoubling  = "halving_doubling"
	AlgDoubleBinaryTree = "double_binary_tree"
	AlgDirect           = "direct" // alltoall: every rank to every other at once
)

// CollectiveConfig is one collective of a group of ranks.
type CollectiveConfig struct {
	Op        string
	Algorithm string // default: ring (alltoall: direct)
	// Hosts[r] is the host of rank r (distinct).
	Hosts []int
	// Size is the message in bytes as NCCL's tests count it: the buffer of
	// every rank for allreduce, the whole (gathered) buffer for allgather,
	// reduce_scatter and alltoall.
	Size int64
	// Chunks cuts every step's transfer into this many pieces (default 1);
	// Pipeline is how many of a step's pieces a rank has in flight at once
	// (default: all of them): piece k+Pipeline starts when the sender has
	// every ACK of piece k.
	Chunks, Pipeline int
	// Start is when the collective starts (ignored for flows that wait on
	// StartAfter); Delay is the delay of every dependency inside it (a
	// reduction's cost, say).
	Start, Delay sim.Time
}

// CollectiveFlows are the flows of one collective, numbered from 0 (the
// dependencies refer to these numbers). Starts are the flows that begin
// the collective (Need counts only their dependencies inside it) and Ends
// of every rank the flows it receives: when they have all arrived the
// rank holds its result and has passed on what it had to forward.
type CollectiveFlows struct {
	Flows  []Flow
	Starts []int32
	Ends   [][]int32 // by rank
}

// BusFactor is NCCL's bus bandwidth factor (nccl-tests doc/PERFORMANCE.md):
// busbw = algbw * factor, 2(n-1)/n for allreduce, (n-1)/n for
// reduce_scatter, allgather and alltoall, and 1 for a point-to-point
// sendrecv (nccl-tests' sendrecv_perf).
func BusFactor(op string, n int) float64 {
	f := float64(n-1) / float64(n)
	switch op {
	case OpAllReduce:
		return 2 * f
	case OpSendRecv:
		return 1
	}
	return f
}

// Collective expands a collective into flows whose dependencies are the
// algorithm's: each step of a rank starts when the data it needs has
// arrived at the rank (receiver-side completion).
func Collective(c CollectiveConfig) (*CollectiveFlows, error) {
	n := len(c.Hosts)
	if n < 2 {
		return nil, fmt.Errorf("a collective needs at least 2 ranks, got %d", n)
	}
	seen := map[int]int{}
	for r, h := range c.Hosts {
		if h < 0 {
			return nil, fmt.Errorf("rank %d: host %d does not exist", r, h)
		}
		if q, dup := seen[h]; dup {
			return nil, fmt.Errorf("ranks %d and %d are both on host %d", q, r, h)
		}
		seen[h] = r
	}
	if c.Chunks == 0 {
		c.Chunks = 1
	}
	if c.Pipeline == 0 || c.Pipeline > c.Chunks {
		c.Pipeline = c.Chunks
	}
	if c.Chunks < 1 || c.Pipeline < 1 {
		return nil, fmt.Errorf("chunks and pipeline must be positive, got %d and %d", c.Chunks, c.Pipeline)
	}
	if c.Size <= 0 || c.Start < 0 || c.Delay < 0 {
		return nil, fmt.Errorf("size must be positive and start and delay not negative")
	}
	g := &collGen{c: c, n: n, out: &CollectiveFlows{Ends: make([][]int32, n)}}
	alg := c.Algorithm
	switch c.Op {
	case OpAllReduce:
		switch alg {
		case "", AlgRing:
			g.ring(2 * (n - 1))
		case AlgHalvingDoubling:
			g.halvingDoubling()
		case AlgDoubleBinaryTree:
			g.doubleTree()
		default:
			return nil, fmt.Errorf("unknown allreduce algorithm %q (known: ring, halving_doubling, double_binary_tree)", alg)
		}
	case OpReduceScatter, OpAllGather:
		if alg != "" && alg != AlgRing {
			return nil, fmt.Errorf("%s supports the ring algorithm only, got %q", c.Op, alg)
		}
		g.ring(n - 1)
	case OpAllToAll:
		if alg != "" && alg != AlgDirect {
			return nil, fmt.Errorf("alltoall supports the direct algorithm only, got %q", alg)
		}
		g.allToAll()
	default:
		return nil, fmt.Errorf("unknown collective %q (known: allreduce, reduce_scatter, allgather, alltoall)", c.Op)
	}
	if err := g.err; err != nil {
		return nil, err
	}
	g.finish()
	return g.out, nil
}

type collGen struct {
	c   CollectiveConfig
	n   int
	out *CollectiveFlows
	err error
}

// pieces returns the sizes of size bytes cut into Chunks pieces (the first
// ones one byte larger when it does not divide), or an error when a piece
// would be empty.
func (g *collGen) pieces(size int64) []int64 {
	k := int64(g.c.Chunks)
	if size < k {
		if g.err == nil {
			g.err = fmt.Errorf("a transfer of %d bytes cannot be cut into %d chunks: use a larger size or fewer ranks or chunks", size, k)
		}
		k = max(size, 1)
	}
	p := make([]int64, k)
	for i := range p {
		p[i] = size / k
		if int64(i) < size%k {
			p[i]++
		}
	}
	return p
}

// transfer adds the pieces of one transfer from rank a to rank b of size
// bytes and returns their flow indices. after[k] lists, per piece, the
// flows whose arrival at a piece k waits on (nil: none). The pipeline
// window makes piece k also wait on the sender's completion of piece
// k-Pipeline.
func (g *collGen) transfer(a, b int, size int64, after [][]int32) []int32 {
	ps := g.pieces(size)
	ids := make([]int32, len(ps))
	fs := &g.out.Flows
	for k, sz := range ps {
		id := int32(len(*fs))
		ids[k] = id
		var deps []int32
		if k < len(after) {
			deps = after[k]
		}
		// Delay is the reduction of received data: a piece that waits on
		// none (only on the pipeline window) reduces nothing.
		var delay sim.Time
		if len(deps) > 0 {
			delay = g.c.Delay
		}
		*fs = append(*fs, Flow{ID: id, Src: g.c.Hosts[a], Dst: g.c.Hosts[b], Size: sz, Start: g.c.Start, Delay: delay})
		for _, d := range deps {
			(*fs)[d].OnRecvDone = append((*fs)[d].OnRecvDone, id)
		}
		(*fs)[id].Need = int32(len(deps))
		if w := g.c.Pipeline; k >= w {
			prev := ids[k-w]
			(*fs)[prev].OnSendDone = append((*fs)[prev].OnSendDone, id)
			(*fs)[id].Need++
		}
		if (*fs)[id].Need == 0 {
			g.out.Starts = append(g.out.Starts, id)
		}
	}
	return ids
}

// perPiece turns a list of transfers (each a list of piece ids) into what
// transfer's after wants: piece k waits on piece k of each (or on all of
// the pieces of each when the counts differ).
func perPiece(chunks int, deps ...[]int32) [][]int32 {
	after := make([][]int32, chunks)
	for k := range after {
		for _, d := range deps {
			if len(d) == chunks {
				after[k] = append(after[k], d[k])
			} else {
				after[k] = append(after[k], d...)
			}
		}
	}
	return after
}

// ring is a ring of steps steps: in step s rank r sends segment (r-s) mod n
// to rank r+1, once it has received that segment from rank r-1 in step
// s-1 (for allreduce the first n-1 steps reduce, the rest gather).
func (g *collGen) ring(steps int) {
	n := g.n
	seg := (g.c.Size + int64(n) - 1) / int64(n) // the last segment may be padded
	prev := make([][]int32, n)                  // by sending rank: the pieces of the last step
	for s := 0; s < steps; s++ {
		cur := make([][]int32, n)
		for r := 0; r < n; r++ {
			var after [][]int32
			if s > 0 {
				after = perPiece(g.c.Chunks, prev[(r-1+n)%n])
			}
			cur[r] = g.transfer(r, (r+1)%n, seg, after)
		}
		prev = cur
	}
}

// halvingDoubling is Rabenseifner's allreduce: a reduce-scatter by
// recursive halving (partners n/2, n/4, .. 1 apart, sending half of what
// is left each time), then an allgather by recursive doubling in reverse.
//
// A rank count n that is not a power of two is folded as MPICH does
// (src/mpi/coll/allreduce/allreduce_intra_reduce_scatter_allgather.c,
// the algorithm of Thakur, Rabenseifner & Gropp 2005): with p' the
// largest power of two below n and rem = n-p', every even rank r < 2rem
// first sends its whole buffer to r+1, which reduces it and takes part
// as new rank r/2 (ranks r >= 2rem as r-rem); the p' new ranks run the
// power-of-two algorithm; then every odd rank r < 2rem sends the whole
// result back to r-1. The extra ranks thus cost two full-buffer
// transfers on the critical path, as MPICH's cost model (2 + 2(p-1)/p)
// n beta says.
func (g *collGen) halvingDoubling() {
	n := g.n
	pof2 := 1 << (bits.Len(uint(n)) - 1)
	rem := n - pof2
	// rank is the real rank of new rank nr (MPICH's "find real rank of
	// dest").
	rank := func(nr int) int {
		if nr < rem {
			return 2*nr + 1
		}
		return nr + rem
	}
	// in[r] is every transfer rank r has received so far: a rank's send
	// of step s carries its data reduced (or gathered) with everything
	// it received in steps 0..s-1, so it waits on all of them (receipts of
	// earlier steps need not have arrived when the last one has).
	in := make([][][]int32, n)
	for r := 0; r < 2*rem; r += 2 {
		in[r+1] = append(in[r+1], g.transfer(r, r+1, g.c.Size, nil))
	}
	logn := bits.TrailingZeros(uint(pof2))
	type step struct {
		dist int
		size int64
	}
	var steps []step
	for s := 1; s <= logn; s++ {
		steps = append(steps, step{pof2 >> s, max(g.c.Size>>s, 1)})
	}
	for s := logn - 1; s >= 0; s-- {
		steps = append(steps, steps[s])
	}
	for _, st := range steps {
		got := make([][]int32, n)
		for nr := 0; nr < pof2; nr++ {
			r, p := rank(nr), rank(nr^st.dist)
			var after [][]int32
			if len(in[r]) > 0 {
				after = perPiece(g.c.Chunks, in[r]...)
			}
			got[p] = g.transfer(r, p, st.size, after)
		}
		for r, ids := range got {
			if ids != nil {
				in[r] = append(in[r], ids)
			}
		}
	}
	// Folded ranks get the result from their partner.
	for r := 1; r < 2*rem; r += 2 {
		g.transfer(r, r-1, g.c.Size, perPiece(g.c.Chunks, in[r]...))
	}
}

// doubleTree is NCCL's double binary tree (src/graph/trees.cc,
// ncclGetDtree): each of two binary trees reduces half of the message to
// its root and broadcasts it back. The first tree is ncclGetBtree's; the
// second mirrors it (rank r takes the place of n-1-r) when n is even and
// shifts it by one rank (r takes the place of r-1) when n is odd, so that
// a rank that is inner in one tree is a leaf in the other. A rank sends
// up once it has received from its children, and down once it has
// received from its parent (the root: from its children); its half is
// complete when its parent's data (the root: its children's) arrives.
func (g *collGen) doubleTree() {
	n := g.n
	halves := [2]int64{(g.c.Size + 1) / 2, g.c.Size / 2}
	for t, size := range halves {
		if size == 0 {
			continue
		}
		parent, kids := dtree(n, t)
		// order: breadth first from the root, so parents come before
		// children (and children before parents backwards).
		var order []int
		for r := range parent {
			if parent[r] < 0 {
				order = append(order, r)
			}
		}
		for i := 0; i < len(order); i++ {
			order = append(order, kids[order[i]]...)
		}
		root := order[0]
		up := make([][]int32, n) // by rank: its transfer to its parent
		var rootIn [][]int32
		for i := len(order) - 1; i >= 1; i-- {
			r := order[i]
			var deps [][]int32
			for _, c := range kids[r] {
				deps = append(deps, up[c])
			}
			up[r] = g.transfer(r, parent[r], size, perPiece(g.c.Chunks, deps...))
		}
		for _, c := range kids[root] {
			rootIn = append(rootIn, up[c])
		}
		down := make([][]int32, n) // by rank: its parent's transfer to it
		for _, r := range order[1:] {
			deps := rootIn
			if p := parent[r]; p != root {
				deps = [][]int32{down[p]}
			}
			down[r] = g.transfer(parent[r], r, size, perPiece(g.c.Chunks, deps...))
		}
	}
}

// btree is NCCL's binary tree of n ranks (ncclGetBtree in
// src/graph/trees.cc): rank r's parent is found from its lowest set bit
// b, (r^b)|2b, or r^b when that is out of range; its children are r-b/2
// and the first of r+b/2, r+b/4, .. that is in range. Rank 0 is the root
// and has one child, the largest power of two below n. Leaves and inner
// nodes alternate (odd ranks are leaves). -1 means none.
func btree(n, r int) (up, down0, down1 int) {
	bit := 1
	for bit < n && bit&r == 0 {
		bit <<= 1
	}
	if r == 0 {
		if n > 1 {
			return -1, -1, bit >> 1
		}
		return -1, -1, -1
	}
	up = (r ^ bit) | bit<<1
	if up >= n {
		up = r ^ bit
	}
	down0, down1 = -1, -1
	if low := bit >> 1; low > 0 {
		down0 = r - low
		for l := low; l > 0; l >>= 1 {
			if r+l < n {
				down1 = r + l
				break
			}
		}
	}
	return up, down0, down1
}

// dtree returns tree t (0 or 1) of NCCL's double binary tree of n ranks
// (ncclGetDtree): every rank's parent (-1 for the root) and children.
func dtree(n, t int) (parent []int, kids [][]int) {
	parent, kids = make([]int, n), make([][]int, n)
	// place maps a rank to its node in the btree and back (an
	// involution for the mirror; the shift's inverse adds one).
	to, from := func(r int) int { return r }, func(v int) int { return v }
	if t == 1 {
		if n%2 == 1 {
			to = func(r int) int { return (r - 1 + n) % n }
			from = func(v int) int { return (v + 1) % n }
		} else {
			to = func(r int) int { return n - 1 - r }
			from = to
		}
	}
	for r := 0; r < n; r++ {
		u, d0, d1 := btree(n, to(r))
		parent[r] = -1
		if u >= 0 {
			parent[r] = from(u)
		}
		for _, d := range []int{d0, d1} {
			if d >= 0 {
				kids[r] = append(kids[r], from(d))
			}
		}
	}
	return parent, kids
}

// allToAll sends Size/n bytes from every rank to every other at once.
func (g *collGen) allToAll() {
	n := g.n
	per := (g.c.Size + int64(n) - 1) / int64(n)
	for r := 0; r < n; r++ {
		for d := 1; d < n; d++ {
			g.transfer(r, (r+d)%n, per, nil)
		}
	}
}

// finish lists every rank's end flows: every flow it receives. The last
// step's receipt alone would not do: in a ring or halving-doubling it
// depends on the sender's earlier receipts, not on the rank's own, and
// pieces of successive steps share a link and may finish out of order.
func (g *collGen) finish() {
	rankOf := make(map[int]int, g.n)
	for r, h := range g.c.Hosts {
		rankOf[h] = r
	}
	for i := range g.out.Flows {
		f := &g.out.Flows[i]
		r := rankOf[f.Dst]
		g.out.Ends[r] = append(g.out.Ends[r], f.ID)
	}
}

// JobConfig is a training job: Iterations times a compute phase of
// Compute followed by the collective.
type JobConfig struct {
	Collective CollectiveConfig
	Iterations int
	Compute    sim.Time
	// ComputeMax, when above Compute, makes every rank's compute phase of
	// every iteration uniform in [Compute, ComputeMax], drawn from rng in
	// (iteration, rank) order: stragglers.
	ComputeMax sim.Time
	// Parallel, when set, adds tensor and pipeline parallelism: the
	// collective is then the data-parallel all-reduce of each stage's
	// gradients, and Compute the optimizer step after it.
	Parallel *ParallelConfig
	// Buckets (default 1) cuts the collective into this many of
	// size/Buckets, overlapped with compute: bucket b of a rank starts
	// when (b+1)/Buckets of its compute is done, as data-parallel training
	// all-reduces gradient buckets during the backward pass.
	Buckets int
}

// computeTimes draws the compute phase of every (iteration, rank).
func (j *JobConfig) computeTimes(n int, rng *rand.Rand) [][]sim.Time {
	out := make([][]sim.Time, j.Iterations)
	for it := range out {
		out[it] = make([]sim.Time, n)
		for r := range out[it] {
			out[it][r] = j.Compute
			if j.ComputeMax > j.Compute && rng != nil {
				out[it][r] += sim.Time(rng.Int64N(int64(j.ComputeMax-j.Compute) + 1))
			}
		}
	}
	return out
}

// JobFlows are a job's flows, numbered from 0, and where each iteration's
// collective lies among them.
type JobFlows struct {
	Flows []Flow
	// Iters[i] is the flow range [First, First+Count) of iteration i.
	Iters []FlowRange
	// A parallel job's compute tasks (flows name them by TaskRef), the
	// range of them each iteration made, and its instances, iteration by
	// iteration (nil for a plain job, whose iterations are its
	// instances).
	Tasks     []Task
	IterTasks []FlowRange
	Instances []Instance
}

// FlowRange is a contiguous range of flows.
type FlowRange struct{ First, Count int32 }

// Job expands a job. Rank r's flows of bucket b of iteration i wait on a
// compute task on the rank's host (the rank's gradients of that bucket
// exist): in iteration 0 it fires at Start plus (b+1)/Buckets of the
// rank's compute; in iteration i+1, that long after every flow rank r
// received in iteration i (every bucket) has arrived. So ranks run ahead
// or behind as the fabric lets them, as they do in a data-parallel job
// without a global barrier, and no rank forwards data reduced with its
// own before its compute is done. Without stragglers iteration 0 needs no
// task: every rank's first sends start at the same time, and its later
// sends wait on others' first sends.
func Job(j JobConfig, rng *rand.Rand) (*JobFlows, error) {
	if j.Iterations < 1 {
		return nil, fmt.Errorf("iterations must be at least 1, got %d", j.Iterations)
	}
	if j.Compute < 0 {
		return nil, fmt.Errorf("compute must not be negative")
	}
	if j.ComputeMax != 0 && j.ComputeMax < j.Compute {
		return nil, fmt.Errorf("compute_max %v is less than compute %v", j.ComputeMax, j.Compute)
	}
	if j.Parallel != nil {
		return parallelJob(j)
	}
	nb := max(j.Buckets, 1)
	c := j.Collective
	if c.Size < int64(nb) {
		return nil, fmt.Errorf("%d bytes cannot be cut into %d buckets", c.Size, nb)
	}
	c.Size = (c.Size + int64(nb) - 1) / int64(nb)
	one, err := Collective(c)
	if err != nil {
		return nil, err
	}
	per := len(one.Flows)
	if int64(per)*int64(nb)*int64(j.Iterations) > maxFlows {
		return nil, fmt.Errorf("%d iterations of %d flows is more than the %d flows a list can hold", j.Iterations, per*nb, maxFlows)
	}
	n := len(c.Hosts)
	rankOf := make(map[int]int, n)
	for r, h := range c.Hosts {
		rankOf[h] = r
	}
	compute := j.computeTimes(n, rng)
	straggle := j.ComputeMax > j.Compute && rng != nil
	// bucketAt is when bucket b of a rank's compute is ready: buckets of
	// the gradients come out evenly through the backward pass.
	bucketAt := func(d sim.Time, b int) sim.Time { return d * sim.Time(b+1) / sim.Time(nb) }
	out := &JobFlows{Flows: make([]Flow, 0, per*nb*j.Iterations)}
	for it := 0; it < j.Iterations; it++ {
		first, firstTask := int32(it*nb*per), int32(len(out.Tasks))
		out.Iters = append(out.Iters, FlowRange{First: first, Count: int32(nb * per)})
		for b := 0; b < nb; b++ {
			base := first + int32(b*per)
			for _, f := range one.Flows {
				f.ID += base
				f.OnRecvDone = shift(f.OnRecvDone, base)
				f.OnSendDone = shift(f.OnSendDone, base)
				out.Flows = append(out.Flows, f)
			}
			if it == 0 && !straggle {
				for _, st := range one.Starts {
					f := &out.Flows[base+st]
					f.Start += bucketAt(compute[0][rankOf[f.Src]], b)
				}
				continue
			}
			// ready + r is rank r's task for this bucket.
			ready := int32(len(out.Tasks))
			for r, h := range c.Hosts {
				tk := Task{Host: h}
				if it == 0 {
					tk.Start = c.Start + bucketAt(compute[0][r], b)
				} else {
					// Every flow rank r received in the previous
					// iteration, every bucket of it.
					tk.Need, tk.Delay = int32(nb*len(one.Ends[r])), bucketAt(compute[it][r], b)
					for pb := 0; pb < nb; pb++ {
						prev := first - int32(nb*per) + int32(pb*per)
						for _, e := range one.Ends[r] {
							pe := &out.Flows[prev+e]
							pe.OnRecvDone = append(pe.OnRecvDone, TaskRef(ready+int32(r)))
						}
					}
				}
				out.Tasks = append(out.Tasks, tk)
			}
			for i := base; i < base+int32(per); i++ {
				f := &out.Flows[i]
				tk := &out.Tasks[ready+int32(rankOf[f.Src])]
				tk.Next = append(tk.Next, i)
				if f.Need == 0 {
					f.Delay = 0 // a first send reduces nothing
				}
				f.Need++
			}
		}
		out.IterTasks = append(out.IterTasks, FlowRange{First: firstTask, Count: int32(len(out.Tasks)) - firstTask})
	}
	return out, nil
}

func shift(ids []int32, by int32) []int32 {
	if len(ids) == 0 {
		return nil
	}
	out := make([]int32, len(ids))
	for i, v := range ids {
		out[i] = v + by
	}
	return out
}
