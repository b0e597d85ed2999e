package partition

import (
	"container/heap"
	"fmt"
	"math"
	"slices"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// MaxImbalance is the largest load imbalance (Placement.Imbalance) Auto
// accepts in exchange for a longer lookahead.
const MaxImbalance = 1.25

// refinePasses bounds the cut-reducing passes after growing.
const refinePasses = 8

// Auto cuts the fabric into p partitions. The heuristic, in order of
// priority:
//
//  1. Lookahead. A window is at most L long, so L sets how many barrier
//     rounds a run costs. For each distinct link delay D, longest first,
//     the links shorter than D are kept inside partitions: their ends are
//     merged into groups (union-find). The first D at which the groups can
//     be packed into p partitions with an imbalance of at most MaxImbalance
//     wins; the lookahead is then at least D. At the shortest delay every
//     group is a single node (or nodes joined by zero-delay links, which are
//     never cut), and whatever balance it gets is taken.
//  2. Balance. Groups weigh the sum of their nodes' Weights.
//  3. Few cut links (fewer messages). Partitions are filled one after the
//     other by greedy graph growing (Karypis & Kumar's GGGP, in "A fast and
//     high quality multilevel scheme for partitioning irregular graphs",
//     1998): start from the lowest-numbered free group and keep adding the
//     neighbouring group whose move cuts the fewest links (gain = links
//     into the partition minus links elsewhere; ties to the lowest number)
//     until the partition holds its share of the remaining load. Then a few
//     passes of single moves that strictly reduce the cut without worsening
//     the balance (a Fiduccia-Mattheyses pass without its hill climbing).
//
// Everything is deterministic: ties go to the lowest index.
func Auto(t *topologies.Topology, imps []fabric.LinkImpairment, p int) (*Placement, error) {
	n := len(t.Nodes)
	if p < 1 {
		return nil, fmt.Errorf("partition: want at least 1 partition, got %d", p)
	}
	if p > n {
		return nil, fmt.Errorf("partition: the fabric has %d nodes, so at most %d partitions, got %d", n, n, p)
	}
	if p == 1 {
		return Make(t, imps, make([]int, n))
	}
	delays, err := linkDelays(t, imps)
	if err != nil {
		return nil, err
	}
	var ds []sim.Time
	for _, d := range delays {
		if d > 0 {
			ds = append(ds, d)
		}
	}
	slices.Sort(ds)
	ds = slices.Compact(ds)
	if len(ds) == 0 {
		return nil, fmt.Errorf("partition: every link has a zero delay, so none can be cut")
	}
	w := Weights(t)
	var best []int
	for i := len(ds) - 1; i >= 0; i-- {
		comp, nc := groups(t, delays, ds[i])
		if nc < p {
			continue
		}
		part := pack(t, delays, ds[i], w, comp, nc, p)
		if imbalance(part, w, p) <= MaxImbalance || i == 0 {
			best = part
			break
		}
	}
	if best == nil {
		return nil, fmt.Errorf("partition: cannot cut into %d partitions: zero-delay links join the %d nodes into fewer groups", p, n)
	}
	return Make(t, imps, best)
}

func imbalance(part []int, w []int64, p int) float64 {
	load := make([]int64, p)
	var total int64
	for i, v := range part {
		load[v] += w[i]
		total += w[i]
	}
	return float64(slices.Max(load)) * float64(p) / float64(total)
}

// groups merges the ends of every link with delay < d and numbers the
// groups 0..nc-1 in order of their lowest node.
func groups(t *topologies.Topology, delays []sim.Time, d sim.Time) (comp []int, nc int) {
	n := len(t.Nodes)
	parent := make([]int, n)
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for i, l := range t.Links {
		if delays[i] >= d {
			continue
		}
		a, b := find(l.A), find(l.B)
		if a != b {
			// Keep the lower index as the root: roots are the groups'
			// lowest nodes.
			if a > b {
				a, b = b, a
			}
			parent[b] = a
		}
	}
	comp = make([]int, n)
	id := make([]int, n)
	for i := range id {
		id[i] = -1
	}
	for i := 0; i < n; i++ {
		r := find(i)
		if id[r] < 0 {
			id[r] = nc
			nc++
		}
		comp[i] = id[r]
	}
	return comp, nc
}

// edge is a weighted adjacency entry between groups.
type edge struct {
	to int
	n  int64 // number of links
}

// pack assigns the nc groups to p partitions (see Auto) and returns every
// node's partition. Precondition: nc >= p.
func pack(t *topologies.Topology, delays []sim.Time, d sim.Time, w []int64, comp []int, nc, p int) []int {
	cw := make([]int64, nc)
	var total int64
	for i, c := range comp {
		cw[c] += w[i]
		total += w[i]
	}
	// Group adjacency over the links that may be cut, in a fixed order.
	type pair struct{ a, b int }
	var pairs []pair
	for i, l := range t.Links {
		a, b := comp[l.A], comp[l.B]
		if a == b || delays[i] < d {
			continue
		}
		pairs = append(pairs, pair{a, b}, pair{b, a})
	}
	slices.SortFunc(pairs, func(x, y pair) int {
		if x.a != y.a {
			return x.a - y.a
		}
		return x.b - y.b
	})
	adj := make([][]edge, nc)
	deg := make([]int64, nc)
	for _, pr := range pairs {
		deg[pr.a]++
		es := adj[pr.a]
		if len(es) > 0 && es[len(es)-1].to == pr.b {
			es[len(es)-1].n++
			continue
		}
		adj[pr.a] = append(es, edge{to: pr.b, n: 1})
	}

	bin := make([]int, nc)
	for i := range bin {
		bin[i] = -1
	}
	free := nc
	next := 0 // lowest group that may be free
	remaining := total
	conn := make([]int64, nc) // links into the partition being grown
	for b := 0; b < p; b++ {
		if b == p-1 {
			for c := range bin {
				if bin[c] < 0 {
					bin[c] = b
				}
			}
			break
		}
		target := float64(remaining) / float64(p-b)
		clear(conn)
		h := &gainHeap{}
		var load int64
		add := func(c int) {
			bin[c] = b
			free--
			load += cw[c]
			for _, e := range adj[c] {
				if bin[e.to] >= 0 {
					continue
				}
				conn[e.to] += e.n
				heap.Push(h, gainEntry{gain: 2*conn[e.to] - deg[e.to], c: e.to})
			}
		}
		for bin[next] >= 0 {
			next++
		}
		add(next)
		// Leave at least one group for each partition still to fill.
		for free > p-1-b && float64(load) < target {
			c := -1
			for h.Len() > 0 {
				top := heap.Pop(h).(gainEntry)
				if bin[top.c] < 0 && top.gain == 2*conn[top.c]-deg[top.c] {
					c = top.c
					break
				}
			}
			if c < 0 {
				// Nothing adjacent is free: start again from the lowest
				// free group.
				for bin[next] >= 0 {
					next++
				}
				c = next
			}
			over := float64(load+cw[c]) - target
			if over > 0 && over > target-float64(load) {
				break // adding c would leave this partition further off
			}
			add(c)
		}
		remaining -= load
	}
	refine(adj, cw, bin, p, total)

	part := make([]int, len(comp))
	for i, c := range comp {
		part[i] = bin[c]
	}
	return part
}

// refine moves single groups to the neighbouring partition they have most
// links into, while that strictly reduces the cut and keeps every
// partition's load within the bounds the growing reached (or within 5% of
// the mean, whichever is looser).
func refine(adj [][]edge, cw []int64, bin []int, p int, total int64) {
	load := make([]int64, p)
	count := make([]int, p)
	for c, b := range bin {
		load[b] += cw[c]
		count[b]++
	}
	mean := float64(total) / float64(p)
	hi := max(slices.Max(load), int64(math.Ceil(mean*1.05)))
	lo := min(slices.Min(load), int64(math.Floor(mean*0.95)))
	links := make([]int64, p)
	for pass := 0; pass < refinePasses; pass++ {
		moved := false
		for c, b := range bin {
			if count[b] == 1 {
				continue
			}
			clear(links)
			for _, e := range adj[c] {
				links[bin[e.to]] += e.n
			}
			best, gain := -1, int64(0)
			for q := 0; q < p; q++ {
				if q == b {
					continue
				}
				if g := links[q] - links[b]; g > gain && load[q]+cw[c] <= hi && load[b]-cw[c] >= lo {
					best, gain = q, g
				}
			}
			if best < 0 {
				continue
			}
			bin[c] = best
			load[b] -= cw[c]
			load[best] += cw[c]
			count[b]--
			count[best]++
			moved = true
		}
		if !moved {
			return
		}
	}
}

// gainEntry is a candidate group and its gain when it was pushed; entries
// whose gain changed since are skipped when popped (lazy deletion).
type gainEntry struct {
	gain int64
	c    int
}

// gainHeap pops the largest gain first, ties to the lowest group.
type gainHeap []gainEntry

func (h gainHeap) Len() int { return len(h) }
func (h gainHeap) Less(i, j int) bool {
	if h[i].gain != h[j].gain {
		return h[i].gain > h[j].gain
	}
	return h[i].c < h[j].c
}
func (h gainHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *gainHeap) Push(x any)   { *h = append(*h, x.(gainEntry)) }
func (h *gainHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
