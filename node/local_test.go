package node

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/internal/simtest"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
)

// markingScenario is simtest.RandomScenario with RED thresholds low enough that
// RED draws from the switches' streams, small buffers and an incast on top
// of the permutation, so that queues drop too; and every optional output:
// cwnd.csv, queue_depth.csv, pcap files.
var markingScenario = strings.NewReplacer("min: 20KB, max: 80KB", "min: 4KB, max: 16KB",
	"buffer: 128KiB", "buffer: 20KiB").Replace(simtest.RandomScenario) + "  - {type: incast, n: 5, dst: 0, size: 200KB}\n" +
	"output: {cwnd: {all: true}, queues: {interval: 20us}, pcap: {hosts: [0, 5]}}\n"

func loadText(t testing.TB, name, text string) *scenario.Built {
	t.Helper()
	b, err := scenario.Load(name, []byte(text), os.DirFS("../examples"))
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	return b
}

// outputs is a run's output directory.
type outputs struct{ dir string }

func single(t testing.TB, b *scenario.Built) (outputs, results.Summary) {
	t.Helper()
	r, err := runner.Run(b, runner.Options{})
	if err != nil {
		t.Fatalf("runner: %v", err)
	}
	dir := t.TempDir()
	if err := r.WriteDir(dir, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	return outputs{dir}, r.Summary()
}

func local(t testing.TB, b *scenario.Built, pl *partition.Placement, parallel bool) (outputs, *LocalRun) {
	t.Helper()
	lr, err := RunLocal(b, pl, LocalOptions{Parallel: parallel})
	if err != nil {
		t.Fatalf("RunLocal P=%d: %v", pl.P, err)
	}
	dir := t.TempDir()
	if err := lr.Outputs.WriteDir(dir, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	return outputs{dir}, lr
}

// files reads every output file but summary.json, by relative path.
func files(t testing.TB, o outputs) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(o.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "summary.json" {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(o.dir, p)
		m[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// firstDiff names the first differing line, for failure messages.
func firstDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + itoa(i+1) + ":\n  want " + a + "\n  got  " + b
		}
	}
	return "no difference"
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// compare checks docs/design.md §2: "one scenario and one seed give
// byte-identical results whether it runs in one process, in N processes
// ...": every output file but summary.json is identical, and the
// machine-independent summary fields that do not describe the process
// layout agree too.
func compare(t *testing.T, name0 string, want outputs, wantSum results.Summary, got outputs, lr *LocalRun) {
	t.Helper()
	w, g := files(t, want), files(t, got)
	for name, wb := range w {
		gb, ok := g[name]
		switch {
		case !ok:
			t.Errorf("%s: %s missing", name0, name)
		case !bytes.Equal(wb, gb):
			t.Errorf("%s: %s differs from the single-process run at %s", name0, name, firstDiff(wb, gb))
		}
	}
	for name := range g {
		if _, ok := w[name]; !ok {
			t.Errorf("%s: %s written, but not by the single-process run", name0, name)
		}
	}
	s := lr.Outputs.Summary()
	s.PeakEventQueue, s.PacketPool = wantSum.PeakEventQueue, wantSum.PacketPool // per process
	if !reflect.DeepEqual(s, wantSum) {
		t.Errorf("%s: summary\n  got  %+v\n  want %+v", name0, s, wantSum)
	}
	if c := lr.Outputs.Conservation(); c.Balance() != 0 || c.PoolLive != c.InQueues+c.OnWire {
		t.Errorf("%s: packets not conserved across partitions: %+v", name0, c)
	}
}

func TestRunLocal_Design2_RandomScenarioByteIdentical(t *testing.T) {
	for _, seed := range []string{"7", "8"} {
		b := loadText(t, "random.yaml", "seed: "+seed+"\n"+markingScenario)
		want, wantSum := single(t, b)
		if wantSum.LinkLost == 0 || wantSum.Marks == 0 || wantSum.Retransmits == 0 || wantSum.QueueDrops == 0 {
			t.Fatalf("seed %s: the scenario should lose, mark and retransmit: %+v", seed, wantSum)
		}
		wf := files(t, want)
		for _, n := range []string{"fct.csv", "queues.csv", "cwnd.csv", "queue_depth.csv", "pcap/h0.pcap", "pcap/h5.pcap"} {
			if len(wf[n]) == 0 {
				t.Fatalf("seed %s: the single-process run wrote no %s; have %d files", seed, n, len(wf))
			}
		}
		for _, p := range []int{2, 3, 4} {
			pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, p)
			if err != nil {
				t.Fatal(err)
			}
			got, lr := local(t, b, pl, p == 4)
			compare(t, "seed "+seed+" P="+itoa(p), want, wantSum, got, lr)
		}
		pl, err := partition.PerElement(b.Topo, b.Fabric.Impairments)
		if err != nil {
			t.Fatal(err)
		}
		got, lr := local(t, b, pl, false)
		compare(t, "seed "+seed+" per-element", want, wantSum, got, lr)
	}
}

func TestRunLocal_Design2_StopTimeMidRun(t *testing.T) {
	// Stopped with packets in flight, also across cuts: the end time and
	// the unfinished flows must match.
	b := loadText(t, "random.yaml", "seed: 3\nstop_at: 150us\n"+markingScenario)
	want, wantSum := single(t, b)
	if wantSum.StoppedBy != "stop_at" {
		t.Fatalf("single run stopped by %s, want stop_at", wantSum.StoppedBy)
	}
	pl, err := partition.PerElement(b.Topo, b.Fabric.Impairments)
	if err != nil {
		t.Fatal(err)
	}
	got, lr := local(t, b, pl, false)
	compare(t, "stop_at per-element", want, wantSum, got, lr)
}

// nsccScenario is NSCC over the UET transport on a k=4 fat-tree with
// trimming, a permutation and an incast: trim NACKs (which carry the hop
// count where the switch cut the packet), coalesced SACK ACKs and the
// load balancers' draws all cross partitions.
const nsccScenario = `topology:
  type: fattree
  fattree:
    k: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 60000, ecn: {mode: red, min: 12000, max: 48000, pmax: 1, on: dequeue}}
    agg:  {rate: 100Gbps, delay: 1us, buffer: 60000, ecn: {mode: red, min: 12000, max: 48000, pmax: 1, on: dequeue}}
    core: {rate: 100Gbps, delay: 1us, buffer: 60000, ecn: {mode: red, min: 12000, max: 48000, pmax: 1, on: dequeue}}
switch: {forwarding: spray, classes: [{}, {}], trim: {header: 64}}
transport: {cc: nscc, ecn: true, mtu: 4150, nscc: {lb: mixed, entropies: 16}}
output: {cwnd: {all: true}}
workload:
  - {type: permutation, size: 300KB}
  - {type: incast, dst: 0, n: 8, size: 200KB}
`

// TestRunLocal_Design2_NSCCByteIdentical: NSCC runs give the same bytes
// in one process, in 2 and 4 partitions and per element.
func TestRunLocal_Design2_NSCCByteIdentical(t *testing.T) {
	b := loadText(t, "nscc.yaml", "seed: 3\n"+nsccScenario)
	want, wantSum := single(t, b)
	if wantSum.Retransmits == 0 || wantSum.Marks == 0 {
		t.Fatalf("the scenario should trim (and retransmit) and mark: %+v", wantSum)
	}
	for _, p := range []int{2, 4} {
		pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, p)
		if err != nil {
			t.Fatal(err)
		}
		got, lr := local(t, b, pl, p == 4)
		compare(t, "nscc P="+itoa(p), want, wantSum, got, lr)
	}
	pl, err := partition.PerElement(b.Topo, b.Fabric.Impairments)
	if err != nil {
		t.Fatal(err)
	}
	got, lr := local(t, b, pl, false)
	compare(t, "nscc per-element", want, wantSum, got, lr)
}

// TestRunLocal_RecordsPerPartitionPerf checks that an in-memory run records
// each partition's wall-clock statistics as a node process does (issue 25:
// they were 0), in RunStats's per-node lines too.
func TestRunLocal_RecordsPerPartitionPerf(t *testing.T) {
	b := loadText(t, "random.yaml", "seed: 7\n"+markingScenario)
	for _, parallel := range []bool{false, true} {
		pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, 3)
		if err != nil {
			t.Fatal(err)
		}
		_, lr := local(t, b, pl, parallel)
		st := RunStats(pl, lr.Results, b.Limit(), 0)
		for i, r := range lr.Results {
			p, ns := r.Perf, st.PerNode[i]
			if p.WallSeconds <= 0 || p.RunSeconds <= 0 || p.ComputeSeconds != p.RunSeconds || p.RunSeconds > p.WallSeconds ||
				p.WaitSeconds < 0 || p.ImbalanceSeconds < 0 || p.Windows != r.Core.Windows || p.Windows == 0 {
				t.Errorf("parallel=%t partition %d: perf %+v (windows %d)", parallel, i, p, r.Core.Windows)
			}
			if ns.WallSeconds != p.WallSeconds || ns.RunSeconds != p.RunSeconds || ns.WaitSeconds != p.WaitSeconds {
				t.Errorf("parallel=%t partition %d: per-node line %+v, perf %+v", parallel, i, ns, p)
			}
		}
		if st.Window.Compute <= 0 || st.MeanBarrierWaitUs < 0 {
			t.Errorf("parallel=%t: window split %+v, mean wait %v", parallel, st.Window, st.MeanBarrierWaitUs)
		}
	}
}
