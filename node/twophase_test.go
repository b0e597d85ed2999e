package node

import (
	"container/heap"
	"os"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// pfcScenario is dcqcnScenario with a lossless class and PFC (no
// watchdog: the deadlock search reads whole partitions at window ends,
// which turns two-phase windows off): PAUSE frames cross the cuts.
var pfcScenario = strings.Replace(strings.ReplaceAll(dcqcnScenario, "RECOVERY", "gbn"), "transport:",
	"switch:\n  classes: [{lossless: true}, {}]\n  pfc: {xoff: 20KiB, xon: 10KiB}\ntransport:", 1)

// trimScenario is examples/nscc-fattree.yaml on a k=4 fat-tree: NSCC over
// UET with trimming, spraying and an incast.
func trimScenario(t *testing.T) string {
	b, err := os.ReadFile("../examples/nscc-fattree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("k: 8", "k: 4", "size: 2MB", "size: 200KB", "n: 8", "n: 6").Replace(string(b))
}

func readExample(t *testing.T, name string, r *strings.Replacer) string {
	b, err := os.ReadFile("../examples/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return r.Replace(string(b))
}

// nearBorder is an independent reference for partition.Border's promise:
// the elements of core c's partition that a packet or signal from another
// partition, arriving at time E, can reach before E + L (the shortest
// delay from where it enters, over the engine's links and the flows' and
// tasks' signals, is below the lookahead). Phase 1 must run none of their
// events.
func nearBorder(b *scenario.Built, c *Core, look sim.Time) []bool {
	e := c.F.Engine()
	type edge struct {
		to    sim.ElemID
		delay sim.Time
	}
	n := e.NumElements()
	adj := make([][]edge, n)
	dist := make([]sim.Time, n)
	for i := range dist {
		dist[i] = sim.Never
	}
	link := func(from, to sim.ElemID, d sim.Time) {
		switch {
		case e.Local(from) && e.Local(to):
			adj[from] = append(adj[from], edge{to, d})
		case e.Local(to):
			dist[to] = 0
		}
	}
	for i := range e.NumLinks() {
		if l := e.Links[i]; l != nil {
			link(e.LinkFrom(sim.LinkID(i)), e.LinkTo(sim.LinkID(i)), l.Delay())
		}
	}
	hosts := b.Topo.Hosts
	flows, tasks := b.Fabric.Flows, b.Fabric.Tasks
	signal := func(from int, g int32) {
		if g >= 0 {
			link(sim.ElemID(hosts[from]), sim.ElemID(hosts[flows[g].Src]), flows[g].Delay)
			return
		}
		k := -1 - g
		link(sim.ElemID(hosts[from]), sim.ElemID(hosts[tasks[k].Host]), tasks[k].Delay)
	}
	for i := range flows {
		for _, g := range flows[i].OnRecvDone() {
			signal(flows[i].Dst, g)
		}
		for _, g := range flows[i].OnSendDone() {
			signal(flows[i].Src, g)
		}
	}
	for k := range tasks {
		for _, g := range tasks[k].Next {
			signal(tasks[k].Host, g)
		}
	}
	var q distHeap
	for i, d := range dist {
		if d == 0 {
			heap.Push(&q, distItem{sim.ElemID(i), 0})
		}
	}
	for q.Len() > 0 {
		it := heap.Pop(&q).(distItem)
		if it.d > dist[it.el] {
			continue
		}
		for _, ed := range adj[it.el] {
			if d := it.d + ed.delay; d < dist[ed.to] {
				dist[ed.to] = d
				heap.Push(&q, distItem{ed.to, d})
			}
		}
	}
	near := make([]bool, n)
	for i, d := range dist {
		near[i] = d < look
	}
	return near
}

type distItem struct {
	el sim.ElemID
	d  sim.Time
}

type distHeap []distItem

func (h distHeap) Len() int           { return len(h) }
func (h distHeap) Less(i, j int) bool { return h[i].d < h[j].d }
func (h distHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *distHeap) Push(x any)        { *h = append(*h, x.(distItem)) }
func (h *distHeap) Pop() any {
	o := *h
	x := o[len(o)-1]
	*h = o[:len(o)-1]
	return x
}

// checkAhead fails the test if a core's first phases ran an event of an
// element that a packet or signal from another partition can reach in
// less than the lookahead, and returns the events they ran.
func checkAhead(t *testing.T, name string, b *scenario.Built, pl *partition.Placement, lr *LocalRun) uint64 {
	t.Helper()
	var total uint64
	for _, c := range lr.Cores {
		if !c.TwoPhase() {
			continue
		}
		near := nearBorder(b, c, pl.Lookahead)
		for el, k := range c.AheadBy() {
			total += k
			if k > 0 && near[el] {
				t.Errorf("%s: partition %d ran %d events of element %s (within the lookahead of another partition) in a first phase",
					name, c.Partition(), k, b.Topo.Nodes[el].Name)
			}
		}
	}
	return total
}

func localTwoPhase(t *testing.T, b *scenario.Built, pl *partition.Placement, parallel bool) (outputs, *LocalRun) {
	t.Helper()
	lr, err := RunLocal(b, pl, LocalOptions{Parallel: parallel, TwoPhase: true})
	if err != nil {
		t.Fatalf("RunLocal P=%d two-phase: %v", pl.P, err)
	}
	dir := t.TempDir()
	if err := lr.Outputs.WriteDir(dir, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	return outputs{dir}, lr
}

// TestTwoPhase_Design2_ByteIdentical: running the interior elements'
// events of the next window while waiting for its grant changes no byte,
// on fabrics whose cuts carry packets, signals of dependencies
// (htsim .cm triggers, a collective), PAUSE frames and trimmed headers;
// the first phases do run (most of a partition is interior), and never
// an event of an element within the lookahead of another partition.
func TestTwoPhase_Design2_ByteIdentical(t *testing.T) {
	// ahead: some cut (P = 2 or 3) leaves interior elements (on a small
	// leaf-spine cut at its spines every element is within a lookahead of
	// the cut).
	fatTree := "  type: fattree\n  fattree:\n    k: 4\n    host: {rate: 100Gbps, delay: 1us, buffer: 1MiB}\n" +
		"    agg: {rate: 100Gbps, delay: 1us, buffer: 1MiB}\n    core: {rate: 100Gbps, delay: 1us, buffer: 1MiB}\n"
	leafSpine := "  type: leafspine\n  leafspine:\n    leaves: 2\n    spines: 2\n    hosts_per_leaf: 4\n" +
		"    host:   {rate: 100Gbps, delay: 500ns, buffer: 1MiB}\n    fabric: {rate: 100Gbps, delay: 1us, buffer: 1MiB}\n"
	for _, c := range []struct {
		name, text string
		ahead      bool
	}{
		{"random", "seed: 7\n" + markingScenario, true},
		{"pfc", pfcScenario, true},
		{"trimming", trimScenario(t), true},
		{"triggers 5us", readExample(t, "collectives/htsim-triggers.yaml", strings.NewReplacer("file: chain.cm", "file: collectives/chain.cm")), false},
		{"triggers 300ns", readExample(t, "collectives/htsim-triggers.yaml", strings.NewReplacer("file: chain.cm", "file: collectives/chain.cm",
			"trigger_delay: 5us", "trigger_delay: 300ns")), true},
		{"ring all-reduce, fat-tree", readExample(t, "collectives/ring-allreduce.yaml", strings.NewReplacer("size: 8MB", "size: 1MB",
			leafSpine, fatTree)), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := loadText(t, c.name+".yaml", c.text)
			want, wantSum := single(t, b)
			var ahead uint64
			for _, p := range []int{2, 3} {
				pl, err := partition.ForScenario(b, p)
				if err != nil {
					t.Fatal(err)
				}
				if pl.P != p {
					continue
				}
				for _, parallel := range []bool{false, true} {
					name := c.name + " P=" + itoa(p)
					if parallel {
						name += " parallel"
					}
					got, lr := localTwoPhase(t, b, pl, parallel)
					compare(t, name, want, wantSum, got, lr)
					n := checkAhead(t, name, b, pl, lr)
					t.Logf("%s: %d events ran in first phases", name, n)
					ahead += n
				}
			}
			if ahead == 0 && c.ahead {
				t.Errorf("%s: no first phase ran an event", c.name)
			}
		})
	}
}
