package scenario

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/lockstep-sim/lockstep/topologies"
	"github.com/lockstep-sim/lockstep/workloads"
)

// Bytes a built scenario costs in one process, per item (measured on
// fat-tree permutations: fabric/mem_test.go bounds the same quantities).
const (
	// EstimatePerLink covers both directions' link state, switch ports and
	// index entries.
	EstimatePerLink = 900
	// EstimatePerNode covers a host or switch element.
	EstimatePerNode = 200
	// EstimatePerFlow covers a flow's spec, sender, receiver and record,
	// and the workload's list while it is built.
	EstimatePerFlow = 1600
	// EstimatePerTask covers a compute task's spec, its activation list
	// (one or more entries), its counter and firing time, and the
	// workload's copy while it is built.
	EstimatePerTask = 128
)

// Estimate is what a scenario would need in memory, by part, computed
// from the topology and the workload's sizes before any flow exists.
type Estimate struct {
	// Fabric is the elements, links and routes (4 B per switch and edge
	// switch).
	Fabric int64
	// Flows, Tasks and Bytes are per workload entry: its flow count (0
	// when not known beforehand: poisson without max_flows, cm), at most
	// its compute tasks (collectives) and its bytes.
	Flows []int64
	Tasks []int64
	Bytes []int64
}

// Total is the sum of the parts.
func (e *Estimate) Total() int64 {
	t := e.Fabric
	for _, b := range e.Bytes {
		t = workloads.SatAdd(t, b)
	}
	return t
}

// EstimateMemory estimates s on topo in O(links + workload entries).
func EstimateMemory(s *Scenario, topo *topologies.Topology) *Estimate {
	nh := int64(len(topo.Hosts))
	switches := int64(topo.NumSwitches())
	// Edge switches: switches with a host link.
	edge := make([]bool, len(topo.Nodes))
	var edges int64
	for _, l := range topo.Links {
		for _, end := range [2][2]int{{l.A, l.B}, {l.B, l.A}} {
			a, b := end[0], end[1]
			if a >= 0 && a < len(edge) && b >= 0 && b < len(edge) && topo.Nodes[a].Kind == topologies.Host &&
				topo.Nodes[b].Kind == topologies.Switch && !edge[b] {
				edge[b] = true
				edges++
			}
		}
	}
	e := &Estimate{Fabric: EstimatePerLink*int64(len(topo.Links)) + EstimatePerNode*int64(len(topo.Nodes)) +
		topologies.RouteBytes(len(topo.Nodes), len(topo.Hosts), int(switches), int(edges))}
	for i := range s.Workload {
		w := &s.Workload[i]
		var n, tasks int64
		switch w.Type {
		case "flows":
			n = int64(len(w.Flows))
		case "permutation":
			n = nh
		case "incast":
			n = int64(len(w.Senders))
			if n == 0 {
				n = int64(max(w.N, 0))
			}
		case "alltoall":
			m := int64(len(w.Hosts))
			if m == 0 {
				m = nh
			}
			n = m * max(m-1, 0)
		case "poisson":
			n = int64(max(w.MaxFlows, 0))
		case "collective":
			n, tasks = collectiveCounts(w, nh)
		}
		e.Flows = append(e.Flows, n)
		e.Tasks = append(e.Tasks, tasks)
		e.Bytes = append(e.Bytes, workloads.SatAdd(workloads.SatMul(EstimatePerFlow, n), workloads.SatMul(EstimatePerTask, tasks)))
	}
	return e
}

// Check refuses the estimate when its total exceeds limit bytes, with a
// one-line error that names the largest part (file: path: message).
func (e *Estimate) Check(file string, s *Scenario, limit int64) error {
	total := e.Total()
	if limit <= 0 || total <= limit {
		return nil
	}
	path, what, part := "topology", fmt.Sprintf("the fabric needs about %s", gb(e.Fabric)), e.Fabric
	for i, b := range e.Bytes {
		if b > part {
			part = b
			path = fmt.Sprintf("workload[%d]", i)
			what = fmt.Sprintf("%s makes %d flows, about %s", s.Workload[i].Type, e.Flows[i], gb(b))
			if e.Tasks[i] > 0 {
				what = fmt.Sprintf("%s makes %d flows and up to %d compute tasks, about %s", s.Workload[i].Type, e.Flows[i], e.Tasks[i], gb(b))
			}
			if e.Flows[i] == math.MaxInt64 || e.Tasks[i] == math.MaxInt64 || b == math.MaxInt64 {
				what = fmt.Sprintf("%s makes more flows or compute tasks than 64 bits count", s.Workload[i].Type)
			}
		}
	}
	return &Error{File: file, Path: path, Msg: fmt.Sprintf("%s; the scenario needs about %s in all, more than the %s this machine has",
		what, gb(total), gb(limit))}
}

func gb(b int64) string {
	switch {
	case b >= 1<<40:
		return fmt.Sprintf("%.1f TB", float64(b)/(1<<40))
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(b)/(1<<30))
	default:
		return fmt.Sprintf("%.0f MB", float64(b)/(1<<20))
	}
}

// WithMemoryLimit makes Build refuse a scenario whose estimate
// (EstimateMemory) exceeds limit bytes, before it builds any flow (0: no
// limit). The limit is not part of the scenario or its digest.
func WithMemoryLimit(limit int64) Edit { return func(s *Scenario) { s.memLimit = limit } }

// collectiveCounts is how many flows a collective workload makes and at
// most how many compute tasks (before it is built; 0 when its settings are
// invalid, which Build reports): a plain job's tasks are one per rank,
// bucket and iteration, a parallel job's workloads.ParallelTasks. Neither
// overflows.
func collectiveCounts(w *Workload, nh int64) (flows, tasks int64) {
	c := w.Collective
	if c == nil {
		return 0, 0
	}
	r := collectiveRanks(w, nh)
	if r < 2 {
		return 0, 0
	}
	iters := int64(max(c.Iterations, 1))
	p := c.Parallel
	if p == nil {
		return workloads.SatMul(collectiveSteps(c, r), int64(max(c.Chunks, 1)), iters, int64(max(c.Buckets, 1))),
			workloads.SatMul(r, iters, int64(max(c.Buckets, 1)))
	}
	cfg := parallelConfig(p)
	if cfg.TP > int(r) || cfg.PP > int(r) {
		return 0, 0
	}
	d := r / int64(cfg.TP*cfg.PP)
	var dp int64
	if d >= 2 {
		dp = workloads.SatMul(collectiveSteps(c, d), int64(max(c.Chunks, 1)))
	}
	return max(workloads.ParallelFlows(cfg, int(r), dp, c.Iterations), 0), max(workloads.ParallelTasks(cfg, int(r), c.Iterations), 0)
}

// parallelConfig is p as workloads takes it, durations aside (the
// estimate needs none; collective adds them).
func parallelConfig(p *Parallel) workloads.ParallelConfig {
	return workloads.ParallelConfig{TP: max(p.TP, 1), PP: max(p.PP, 1), Microbatches: p.Microbatches, Layers: p.Layers,
		Schedule: p.Schedule, TPSize: int64(p.TPSize), TPAlgorithm: p.TPAlgorithm, PPSize: int64(p.PPSize)}
}

// collectiveRanks is how many ranks a collective workload has.
func collectiveRanks(w *Workload, nh int64) int64 {
	r := int64(len(w.Hosts))
	if r == 0 {
		r = int64(w.Collective.Ranks)
		if r == 0 {
			r = nh - int64(w.Collective.FirstHost)
		}
	}
	return r
}

// collectiveSteps is how many transfers c's collective of r ranks makes
// per chunk.
func collectiveSteps(c *CollectiveSpec, r int64) int64 {
	var steps int64 // transfers per chunk
	switch c.Op {
	case "allreduce":
		switch c.Algorithm {
		case "halving_doubling":
			steps = 2 * int64(bits.Len64(uint64(r))-1) * r
		case "double_binary_tree":
			steps = 4 * (r - 1)
		default:
			steps = 2 * (r - 1) * r
		}
	case "alltoall":
		steps = r * (r - 1)
	default:
		steps = (r - 1) * r
	}
	return steps
}
