package workloads

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// Pipeline schedules (ParallelConfig.Schedule).
const (
	// Sched1F1B is PipeDream-Flush as Megatron-LM runs it without
	// interleaving (Narayanan et al., SC'21, §2.2.1; Megatron-LM's
	// forward_backward_pipelining_without_interleaving): stage s runs
	// min(p-s-1, M) forward passes, then alternates one forward and one
	// backward, then runs the remaining backward passes.
	Sched1F1B = "1f1b"
	// SchedGPipe runs every forward pass, then every backward pass (GPipe,
	// Huang et al. 2019; Megatron-LM's schedule with every micro-batch in
	// the warm-up), backward in micro-batch order as Megatron-LM does.
	SchedGPipe = "gpipe"
)

// Phases of a job's instances (Instance.Phase).
const (
	PhaseDP = "dp" // data-parallel all-reduce of the gradients
	PhaseTP = "tp" // tensor-parallel all-reduce of a layer's activations or gradients
	PhasePP = "pp" // pipeline-parallel send of a micro-batch's activations or gradients

	// OpSendRecv is a pipeline-parallel transfer between two stages (NCCL
	// send/recv); AlgP2P its algorithm.
	OpSendRecv = "sendrecv"
	AlgP2P     = "p2p"
)

// ParallelConfig is the tensor- and pipeline-parallel structure of a
// training job, as Megatron-LM lays it out (Shoeybi et al. 2019;
// Narayanan et al., SC'21): the job's ranks are TP x PP x DP, rank g being
// TP rank g mod TP of DP replica (g / TP) mod DP of stage g / (TP x DP)
// (Megatron-LM's default order, tp-dp-pp, so that a TP group is
// consecutive ranks: a server with in-order placement).
//
// Every iteration, each stage runs the forward and backward passes of
// Microbatches micro-batches in the order Schedule gives. A pass over a
// stage's Layers layers is, per layer, two halves of compute (attention
// and MLP: Forward/2 or Backward/2 each), each followed by an all-reduce
// of TPSize bytes among the stage's TP ranks (Megatron-LM's g operator in
// the forward pass and f in the backward: four all-reduces per layer and
// micro-batch, Shoeybi et al. §3). At the end of a forward pass every TP
// rank sends PPSize bytes of activations to the same TP rank of the next
// stage, and at the end of a backward pass PPSize bytes of gradients to
// the previous stage; a pass of another stage starts when its input has
// arrived and the rank has finished what it was doing. After its last
// backward pass a rank all-reduces its gradients (the job's collective)
// with the ranks of the same stage and TP rank in the other DP replicas.
type ParallelConfig struct {
	TP, PP       int
	Microbatches int
	Schedule     string // default 1f1b
	Layers       int    // per stage, default 1
	// Microbatches default 1.
	// Forward and Backward are one layer's compute for one micro-batch
	// (Backward default 2 x Forward).
	Forward, Backward sim.Time
	// TPSize is each tensor-parallel all-reduce's message (b x s x h x
	// bytes per element); TPAlgorithm its algorithm (default ring).
	TPSize      int64
	TPAlgorithm string
	// PPSize is what each TP rank sends the next (or previous) stage per
	// micro-batch.
	PPSize int64
}

// Task is a compute task of a job (hostsim.TaskSpec): a point of the
// dependency graph on Host that carries no bytes. With Need > 0 it fires
// Delay after the last of its Need activations; with Need 0 at Start.
// Next lists what it activates (flow ids, and tasks as TaskRef).
type Task struct {
	Host  int
	Need  int32
	Delay sim.Time
	Start sim.Time
	Next  []int32
}

// TaskRef is how an activation list (Flow.OnRecvDone, Task.Next) names
// task k: -1-k (hostsim.TaskRef).
func TaskRef(k int32) int32 { return -1 - k }

// Instance is one collective or point-to-point instance of a parallel
// job: its flows are [First, First+Count) of the job's. Bytes is each
// rank's message as nccl-tests counts it: a pipeline send's is what each
// of its TP ranks sends (PPSize), as sendrecv_perf counts per rank.
type Instance struct {
	Iteration     int
	Phase         string
	Op, Algorithm string
	Bytes         int64
	Hosts         []int
	First, Count  int32
}

// withDefaults fills in what is left zero: one micro-batch, one layer,
// 1F1B, backward twice forward.
func (p ParallelConfig) withDefaults() ParallelConfig {
	if p.Microbatches == 0 {
		p.Microbatches = 1
	}
	if p.Layers == 0 {
		p.Layers = 1
	}
	if p.Schedule == "" {
		p.Schedule = Sched1F1B
	}
	if p.Backward == 0 {
		p.Backward = 2 * p.Forward
	}
	return p
}

// check validates p (with its defaults) for a job of n ranks.
func (p *ParallelConfig) check(n int) error {
	switch {
	case p.TP < 1 || p.PP < 1:
		return fmt.Errorf("tp and pp must be at least 1, got %d and %d", p.TP, p.PP)
	case p.TP > n || p.PP > n || p.TP*p.PP > n || n%(p.TP*p.PP) != 0:
		return fmt.Errorf("%d ranks are not a multiple of tp x pp = %d x %d", n, p.TP, p.PP)
	case p.Microbatches < 1:
		return fmt.Errorf("microbatches must be at least 1, got %d", p.Microbatches)
	case p.Layers < 1:
		return fmt.Errorf("layers must be at least 1, got %d", p.Layers)
	case p.Forward < 0 || p.Backward < 0:
		return fmt.Errorf("forward and backward must not be negative")
	case SatMul(int64(max(p.Forward, p.Backward)), int64(p.Layers), int64(p.Microbatches), 4) >= int64(sim.Never):
		return fmt.Errorf("layers x microbatches x forward or backward is longer than lockstep's clock (about 106 days)")
	case p.TP > 1 && p.TPSize <= 0:
		return fmt.Errorf("tp_size must be positive with tp > 1, got %d", p.TPSize)
	case p.PP > 1 && p.PPSize <= 0:
		return fmt.Errorf("pp_size must be positive with pp > 1, got %d", p.PPSize)
	case p.TP == 1 && p.TPSize != 0:
		return fmt.Errorf("tp_size needs tp > 1")
	case p.PP == 1 && p.PPSize != 0:
		return fmt.Errorf("pp_size needs pp > 1")
	case p.TP == 1 && p.TPAlgorithm != "":
		return fmt.Errorf("tp_algorithm needs tp > 1")
	}
	switch p.Schedule {
	case "", Sched1F1B, SchedGPipe:
	default:
		return fmt.Errorf("unknown schedule %q (known: 1f1b, gpipe)", p.Schedule)
	}
	return nil
}

// ParallelFlows is how many flows Job makes for a parallel job of n
// ranks whose data-parallel collective makes dpFlows flows per instance,
// over iterations (an upper bound for tree and halving-doubling TP
// all-reduces), or -1 when p is invalid for n. It saturates at
// math.MaxInt64 instead of overflowing.
func ParallelFlows(p ParallelConfig, n int, dpFlows int64, iterations int) int64 {
	p = p.withDefaults()
	if p.check(n) != nil {
		return -1
	}
	t, pp, m, l := int64(p.TP), int64(p.PP), int64(p.Microbatches), int64(p.Layers)
	d := int64(n) / (t * pp)
	per := SatMul(2, pp-1, m, t, d) // pipeline sends, both ways
	if t > 1 {
		// 4 ring all-reduces per layer and micro-batch
		per = SatAdd(per, SatMul(d, pp, m, 2, l, 2, 2*(t-1)*t))
	}
	if d > 1 {
		per = SatAdd(per, SatMul(pp, t, max(dpFlows, 0)))
	}
	return SatMul(per, int64(max(iterations, 1)))
}

// ParallelTasks is at most how many compute tasks Job makes for a
// parallel job of n ranks over iterations (-1 when p is invalid for n),
// saturating at math.MaxInt64: per rank and iteration, a pass has at most
// one before each TP all-reduce (two per layer) and one for its input,
// and an iteration at most four more (before the DP all-reduce, at its
// end, the optimizer step).
func ParallelTasks(p ParallelConfig, n int, iterations int) int64 {
	p = p.withDefaults()
	if p.check(n) != nil {
		return -1
	}
	perPass := int64(2)
	if p.TP > 1 {
		perPass = SatAdd(SatMul(2, int64(p.Layers)), 1)
	}
	return SatMul(int64(n), int64(max(iterations, 1)), SatAdd(SatMul(2, int64(p.Microbatches), perPass), 4))
}

// jobGen expands a parallel job. Each rank has a frontier: the flows
// (received at the rank) or tasks whose completion means the rank is free
// again; pend[r] is compute the rank owes after its frontier and its
// inputs in[r], not yet a task (consecutive compute with no input in
// between is one task).
type jobGen struct {
	j        JobConfig
	out      *JobFlows
	hosts    []int
	frontier [][]int32
	in       [][]int32
	pend     []sim.Time
	pending  []bool
}

// need returns the Need field of flow or task x.
func (g *jobGen) need(x int32) *int32 {
	if x >= 0 {
		return &g.out.Flows[x].Need
	}
	return &g.out.Tasks[-1-x].Need
}

// link makes x wait on src: src's arrival at its receiver (a flow) or
// its firing (a task) activates x.
func (g *jobGen) link(src, x int32) {
	if src >= 0 {
		f := &g.out.Flows[src]
		f.OnRecvDone = append(f.OnRecvDone, x)
	} else {
		t := &g.out.Tasks[-1-src]
		t.Next = append(t.Next, x)
	}
	*g.need(x)++
}

// compute adds d of compute to rank r's owed compute.
func (g *jobGen) compute(r int, d sim.Time) {
	g.pend[r] += d
	g.pending[r] = true
}

// input makes rank r's next compute wait on the arrival of flow x too
// (after the compute it owes already, which does not wait on x).
func (g *jobGen) input(r int, x int32) {
	g.flush(r)
	g.in[r] = append(g.in[r], x)
}

// flush turns rank r's owed compute into a task that waits on its
// frontier and inputs, which becomes the frontier.
func (g *jobGen) flush(r int) {
	if !g.pending[r] && len(g.in[r]) == 0 {
		return
	}
	k := int32(len(g.out.Tasks))
	g.out.Tasks = append(g.out.Tasks, Task{Host: g.hosts[r], Delay: g.pend[r]})
	ref := TaskRef(k)
	for _, s := range g.frontier[r] {
		g.link(s, ref)
	}
	for _, s := range g.in[r] {
		g.link(s, ref)
	}
	g.in[r] = g.in[r][:0]
	if g.out.Tasks[k].Need == 0 {
		t := &g.out.Tasks[k]
		t.Start, t.Delay = g.j.Collective.Start+t.Delay, 0
	}
	g.frontier[r] = []int32{ref}
	g.pend[r], g.pending[r] = 0, false
}

// waitFrontier makes flow x wait on rank r's frontier (after its owed
// compute).
func (g *jobGen) waitFrontier(r int, x int32) {
	g.flush(r)
	for _, s := range g.frontier[r] {
		g.link(s, x)
	}
	if *g.need(x) == 0 {
		g.out.Flows[x].Start = g.j.Collective.Start
	}
}

// collective adds one instance of cfg over ranks (its flows after the
// job's): its first transfers start when their sender's frontier is
// done, and each rank's frontier becomes what it receives last.
func (g *jobGen) collective(it int, phase string, cfg CollectiveConfig, ranks []int) error {
	cfg.Hosts = make([]int, len(ranks))
	for i, r := range ranks {
		cfg.Hosts[i] = g.hosts[r]
	}
	one, err := Collective(cfg)
	if err != nil {
		return err
	}
	base := int32(len(g.out.Flows))
	for _, f := range one.Flows {
		f.ID += base
		f.OnRecvDone = shift(f.OnRecvDone, base)
		f.OnSendDone = shift(f.OnSendDone, base)
		g.out.Flows = append(g.out.Flows, f)
	}
	rankOf := make(map[int]int, len(ranks))
	for i, r := range ranks {
		rankOf[g.hosts[r]] = i
		if len(g.frontier[r]) > 1 && !g.pending[r] {
			// A frontier of several flows (the receipts of a TP
			// all-reduce just before) becomes one task, so that each
			// send below waits on one activation, not on all of them.
			g.compute(r, 0)
		}
		g.flush(r)
	}
	for _, s := range one.Starts {
		g.out.Flows[base+s].Delay = 0 // it waits on nothing inside the collective
	}
	// Every send of a rank carries its own data (reduced with what it
	// received, for all but its first sends), so each waits on the rank's
	// frontier, not only the first ones: a rank whose compute ends late
	// must not forward its neighbours' data before it (a ring's rank
	// r sends step s once it has received step s-1 from r-1 and its own
	// gradients exist).
	for x := base; x < base+int32(len(one.Flows)); x++ {
		g.waitFrontier(ranks[rankOf[g.out.Flows[x].Src]], x)
	}
	for i, r := range ranks {
		g.frontier[r] = shift(one.Ends[i], base)
	}
	alg := cfg.Algorithm
	if alg == "" {
		alg = AlgRing
	}
	g.out.Instances = append(g.out.Instances, Instance{Iteration: it, Phase: phase, Op: cfg.Op, Algorithm: alg,
		Bytes: cfg.Size, Hosts: cfg.Hosts, First: base, Count: int32(len(one.Flows))})
	return nil
}

// schedule lists stage s's passes in order: (forward, micro-batch).
func (p *ParallelConfig) schedule(s int) []pass {
	m := p.Microbatches
	warm := m
	if p.Schedule != SchedGPipe {
		warm = min(p.PP-s-1, m)
	}
	var out []pass
	for i := 0; i < warm; i++ {
		out = append(out, pass{true, i})
	}
	for i := 0; i < m-warm; i++ {
		out = append(out, pass{true, warm + i}, pass{false, i})
	}
	for i := m - warm; i < m; i++ {
		out = append(out, pass{false, i})
	}
	return out
}

type pass struct {
	forward bool
	mb      int
}

// parallelJob expands a job with tensor/pipeline parallelism (Job).
func parallelJob(j JobConfig) (*JobFlows, error) {
	p := j.Parallel.withDefaults()
	c := j.Collective
	n := len(c.Hosts)
	if err := p.check(n); err != nil {
		return nil, err
	}
	seen := make(map[int]int, n)
	for r, h := range c.Hosts {
		if q, dup := seen[h]; dup {
			return nil, fmt.Errorf("ranks %d and %d are both on host %d", q, r, h)
		}
		seen[h] = r
	}
	if j.ComputeMax != 0 || j.Buckets > 1 {
		return nil, fmt.Errorf("compute_max and buckets do not apply to a job with tp or pp (forward and backward set its compute)")
	}
	t, pp, m := p.TP, p.PP, p.Microbatches
	d := n / (t * pp)
	var dpFlows int64
	if d > 1 {
		dp := c
		dp.Hosts = c.Hosts[:d]
		one, err := Collective(dp)
		if err != nil {
			return nil, err
		}
		dpFlows = int64(len(one.Flows))
	}
	if est := ParallelFlows(p, n, dpFlows, j.Iterations); est > maxFlows {
		return nil, fmt.Errorf("about %d flows, more than the %d a list can hold", est, maxFlows)
	}
	if est := ParallelTasks(p, n, j.Iterations); est > maxFlows {
		return nil, fmt.Errorf("about %d compute tasks, more than the %d a list can hold", est, maxFlows)
	}
	rank := func(s, i, jj int) int { return i + t*(jj+d*s) }
	g := &jobGen{j: j, out: &JobFlows{}, hosts: c.Hosts,
		frontier: make([][]int32, n), in: make([][]int32, n), pend: make([]sim.Time, n), pending: make([]bool, n)}
	tpCfg := CollectiveConfig{Op: OpAllReduce, Algorithm: p.TPAlgorithm, Size: p.TPSize, Start: c.Start, Delay: c.Delay}
	for it := 0; it < j.Iterations; it++ {
		first, firstTask := int32(len(g.out.Flows)), int32(len(g.out.Tasks))
		// The pipeline sends first, so that both their senders and their
		// receivers can link to them: act[jj][s][m] is the first of the
		// TP ranks' sends from stage s to s+1, grad[jj][s][m] from s to
		// s-1.
		act, grad := make([][][]int32, d), make([][][]int32, d)
		for jj := 0; jj < d; jj++ {
			act[jj], grad[jj] = make([][]int32, pp), make([][]int32, pp)
			for s := 0; s < pp; s++ {
				act[jj][s], grad[jj][s] = make([]int32, m), make([]int32, m)
				for dir := 0; dir < 2; dir++ {
					to := s + 1
					if dir == 1 {
						to = s - 1
					}
					if to < 0 || to >= pp {
						continue
					}
					for mb := 0; mb < m; mb++ {
						base := int32(len(g.out.Flows))
						var hs []int
						for i := 0; i < t; i++ {
							a, b := g.hosts[rank(s, i, jj)], g.hosts[rank(to, i, jj)]
							g.out.Flows = append(g.out.Flows, Flow{ID: base + int32(i), Src: a, Dst: b, Size: p.PPSize, Start: c.Start})
							hs = append(hs, a)
						}
						for i := 0; i < t; i++ {
							hs = append(hs, g.hosts[rank(to, i, jj)])
						}
						if dir == 0 {
							act[jj][s][mb] = base
						} else {
							grad[jj][s][mb] = base
						}
						g.out.Instances = append(g.out.Instances, Instance{Iteration: it, Phase: PhasePP, Op: OpSendRecv,
							Algorithm: AlgP2P, Bytes: p.PPSize, Hosts: hs, First: base, Count: int32(t)})
					}
				}
			}
		}
		// Every stage of every DP replica runs its passes.
		for jj := 0; jj < d; jj++ {
			for s := 0; s < pp; s++ {
				ranks := make([]int, t)
				for i := range ranks {
					ranks[i] = rank(s, i, jj)
				}
				for _, ps := range p.schedule(s) {
					// The pass's input: activations from the previous
					// stage, or gradients from the next.
					for i, r := range ranks {
						switch {
						case ps.forward && s > 0:
							g.input(r, act[jj][s-1][ps.mb]+int32(i))
						case !ps.forward && s < pp-1:
							g.input(r, grad[jj][s+1][ps.mb]+int32(i))
						}
					}
					pass := p.Forward // one layer's compute in this pass
					if !ps.forward {
						pass = p.Backward
					}
					if t == 1 {
						// No all-reduce between a pass's layers: one
						// stretch of compute.
						for _, r := range ranks {
							g.compute(r, pass*sim.Time(p.Layers))
						}
					}
					for l := 0; l < p.Layers && t > 1; l++ {
						for h := 0; h < 2; h++ {
							dur := pass / 2
							if h == 1 {
								dur = pass - pass/2
							}
							for _, r := range ranks {
								g.compute(r, dur)
							}
							if err := g.collective(it, PhaseTP, tpCfg, ranks); err != nil {
								return nil, fmt.Errorf("tp all-reduce: %w", err)
							}
						}
					}
					for i, r := range ranks {
						switch {
						case ps.forward && s < pp-1:
							g.waitFrontier(r, act[jj][s][ps.mb]+int32(i))
						case !ps.forward && s > 0:
							g.waitFrontier(r, grad[jj][s][ps.mb]+int32(i))
						}
					}
				}
			}
		}
		// The gradients' all-reduce across the DP replicas.
		if d > 1 {
			for s := 0; s < pp; s++ {
				for i := 0; i < t; i++ {
					ranks := make([]int, d)
					for jj := range ranks {
						ranks[jj] = rank(s, i, jj)
					}
					if err := g.collective(it, PhaseDP, c, ranks); err != nil {
						return nil, err
					}
				}
			}
		}
		// The iteration ends, at each rank, when its last compute is done
		// (a task, so that its time is known) or its gradients arrived.
		// Then the optimizer step, before the next iteration's first pass.
		for r := 0; r < n; r++ {
			g.flush(r)
			g.compute(r, j.Compute)
		}
		g.out.Iters = append(g.out.Iters, FlowRange{First: first, Count: int32(len(g.out.Flows)) - first})
		g.out.IterTasks = append(g.out.IterTasks, FlowRange{First: firstTask, Count: int32(len(g.out.Tasks)) - firstTask})
	}
	return g.out, nil
}
