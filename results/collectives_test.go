package results_test

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/workloads"
)

const ringYAML = `topology:
  type: leafspine
  leafspine: {leaves: 2, spines: 2, hosts_per_leaf: 2, host: {rate: 100Gbps, delay: 1us}, fabric: {rate: 100Gbps, delay: 1us}}
impairments:
  - {link: [h3, leaf1], rate_note: slow, schedule: [{at: 0s, rate: 10Gbps}]}
workload:
  - type: collective
    size: 400KB
    collective: {job: dp, op: allreduce, ranks: 4, chunks: 2, delay: 3us, iterations: 2, compute: 5us}
`

// TestCollectives_ReceiverSideCompletion: every waiting flow starts
// exactly delay after the last of the flows it waits on arrived (or the
// sender finished, for the pipeline window), and collectives.csv and
// jobs.csv agree with the flow records and with NCCL's definitions.
func TestCollectives_ReceiverSideCompletion(t *testing.T) {
	b, err := scenario.Load("ring.yaml", []byte(strings.Replace(ringYAML, "rate_note: slow, ", "", 1)), scenario.Dir("."))
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.Run(b, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	flows, tasks := b.Fabric.Flows, b.Fabric.Tasks
	last := make([]sim.Time, len(flows))     // latest activation arrival
	lastTask := make([]sim.Time, len(tasks)) // the same for tasks
	arrive := func(g int32, at sim.Time) {
		if g < 0 {
			k := -1 - g
			lastTask[k] = max(lastTask[k], at+tasks[k].Delay)
			return
		}
		last[g] = max(last[g], at+flows[g].Delay)
	}
	for i := range flows {
		rec := &r.Records[i]
		if !rec.Finished {
			t.Fatalf("flow %d did not finish", i)
		}
		for _, g := range flows[i].OnRecvDone() {
			arrive(g, rec.Finish)
		}
		for _, g := range flows[i].OnSendDone() {
			arrive(g, rec.AckedAt)
		}
	}
	// Iteration 1 waits on one compute task per rank, which fires 5us
	// after the last flow its rank received.
	if len(tasks) != 4 {
		t.Fatalf("%d tasks, want one per rank for iteration 1", len(tasks))
	}
	for k := range tasks {
		if got := r.TaskFired[k]; got != lastTask[k] || tasks[k].Delay != 5*sim.Microsecond {
			t.Errorf("task %d fired at %v, want %v (its last activation + 5us)", k, got, lastTask[k])
		}
		for _, g := range tasks[k].Next {
			arrive(g, r.TaskFired[k])
		}
	}
	waiting := 0
	for i := range flows {
		if flows[i].Need == 0 {
			continue
		}
		waiting++
		if got := r.Records[i].StartAt; got != last[i] {
			t.Errorf("flow %d started at %v, want %v (its last activation)", i, got, last[i])
		}
	}
	if waiting == 0 {
		t.Fatal("no flow waits")
	}
	rows := r.Collectives()
	if len(rows) != 2 {
		t.Fatalf("%d collective rows, want 2 iterations", len(rows))
	}
	for _, c := range rows {
		if !c.Done || c.CCT() != c.End-c.Start || c.Ideal <= 0 || c.CCT() < c.Ideal {
			t.Errorf("iteration %d: %+v (CCT %v, ideal %v)", c.Inst.Iteration, c, c.CCT(), c.Ideal)
		}
		alg := 400e3 / c.CCT().Seconds() / 1e9
		if math.Abs(c.AlgBW()-alg) > 1e-9 || math.Abs(c.BusBW()-alg*workloads.BusFactor("allreduce", 4)) > 1e-9 {
			t.Errorf("algbw %v busbw %v, want %v and x1.5", c.AlgBW(), c.BusBW(), alg)
		}
	}
	// No global barrier: the ranks away from the slow link start
	// iteration 1 before iteration 0 has ended everywhere.
	if rows[1].Start >= rows[0].End {
		t.Errorf("iteration 1 starts at %v, after iteration 0's end %v: a global barrier?", rows[1].Start, rows[0].End)
	}
	var cs, js bytes.Buffer
	if err := r.WriteCollectivesCSV(&cs); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJobsCSV(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cs.String(), "job,iteration,type,algorithm,bytes,ranks,start_ns,end_ns,cct_ns,ideal_cct_ns,algbw_GBps,busbw_GBps\ndp,0,allreduce,ring,400000,4,5000.000,") {
		t.Errorf("collectives.csv:\n%s", cs.String())
	}
	if l := strings.Split(js.String(), "\n"); len(l) != 4 || !strings.HasPrefix(l[1], "dp,0,0.000,") {
		t.Errorf("jobs.csv:\n%s", js.String())
	}
}

// TestCollectives_ParallelJobPhases: a pipeline of two stages (TP 1, no
// DP) over the engine. Every pass waits on its input and on the rank's
// previous compute, exactly: stage 1's first forward pass ends (and its
// first backward pass starts) forward after micro-batch 0's activations
// arrived, so its gradients leave forward+backward after that; the
// iteration ends when stage 0's last backward pass does, backward after
// the last gradients arrived (a compute task, not a flow); collectives.csv
// lists the pipeline sends as "<job>.pp" sendrecv rows with busbw = algbw.
func TestCollectives_ParallelJobPhases(t *testing.T) {
	b, err := scenario.Load("pp.yaml", []byte(`topology:
  type: leafspine
  leafspine: {leaves: 1, spines: 1, hosts_per_leaf: 2, host: {rate: 100Gbps, delay: 1us}, fabric: {rate: 100Gbps, delay: 1us}}
workload:
  - type: collective
    size: 1MB
    start: 2us
    collective:
      job: gpt
      op: allreduce
      iterations: 2
      compute: 4us
      parallel: {pp: 2, microbatches: 3, forward: 10us, backward: 20us, pp_size: 100KB}
`), scenario.Dir("."))
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.Run(b, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	us := sim.Microsecond
	rec := r.Records
	// Per iteration: activations of micro-batches 0..2, then gradients.
	if len(rec) != 12 || len(b.Fabric.Tasks) == 0 {
		t.Fatalf("%d flows and %d tasks, want 12 flows and some tasks", len(rec), len(b.Fabric.Tasks))
	}
	if got := rec[0].StartAt; got != 12*us {
		t.Errorf("activation 0 starts at %v, want 12us (start 2us + forward 10us)", got)
	}
	if got, want := rec[3].StartAt, rec[0].Finish+30*us; got != want {
		t.Errorf("gradient 0 starts at %v, want %v (activation 0's arrival + forward + backward)", got, want)
	}
	rows := r.Collectives()
	var lastGrad sim.Time
	for _, c := range rows {
		if c.Inst.Iteration == 0 {
			lastGrad = max(lastGrad, c.End)
		}
		if c.Inst.Phase != workloads.PhasePP || c.JobName() != "gpt.pp" || c.Inst.Op != "sendrecv" || c.BusBW() != c.AlgBW() {
			t.Errorf("row %+v: want gpt.pp sendrecv with busbw = algbw", c)
		}
	}
	// Stage 0's last backward (B2) runs after B1 and after the last
	// gradients arrived; in 1F1B B1 ends before they arrive.
	if !rows[0].TasksDone || rows[0].TasksEnd != lastGrad+20*us {
		t.Errorf("iteration 0's compute ends at %v (all fired: %v), want %v: the last gradients' arrival + backward",
			rows[0].TasksEnd, rows[0].TasksDone, lastGrad+20*us)
	}
	var js bytes.Buffer
	if err := r.WriteJobsCSV(&js); err != nil {
		t.Fatal(err)
	}
	want := "job,iteration,begin_ns,end_ns,iteration_ns\ngpt,0,2000.000," + rows[0].TasksEnd.NsString() + ","
	if l := strings.Split(js.String(), "\n"); len(l) != 4 || !strings.HasPrefix(js.String(), want) {
		t.Errorf("jobs.csv:\n%s\nwant two iterations, the first %s...", js.String(), want)
	}
	// Iteration 1 starts after the optimizer step: its first activation
	// leaves compute + forward after iteration 0's end.
	if got, want := rec[6].StartAt, rows[0].TasksEnd+14*us; got != want {
		t.Errorf("iteration 1's first activation starts at %v, want %v", got, want)
	}
}

// hdYAML is a halving-doubling all-reduce of 4 ranks on one leaf, every
// flow within its initial window (so ACKs pace nothing); %s is where
// the impairment goes.
const hdYAML = `topology:
  type: leafspine
  leafspine: {leaves: 1, spines: 1, hosts_per_leaf: 4, host: {rate: 100Gbps, delay: 1us}, fabric: {rate: 100Gbps, delay: 1us}}
transport: {init_cwnd: 1000}
%sworkload:
  - type: collective
    size: 400KB
    collective: {op: allreduce, algorithm: halving_doubling}
`

// TestCollectives_SlowLinkDelaysExactlyTheStepsThatUseIt: h3's uplink
// slowed to 10 Gb/s, which makes each of h3's sends about 150us longer.
// Halving-doubling of 4 ranks pairs 0-2 and 1-3, then 0-1 and 2-3 twice,
// then 0-2 and 1-3, and a rank's send waits on everything it has
// received. A flow waits on the slow link when it waits, through
// activations, on a flow h3 sent. By hand, those that do not are the
// first step's four, the second step's 0->1 (it waits on 2->0), 2->3 (on
// 0->2) and 3->2 (on 1->3), and the third step's 3->2 (on 1->3 and
// 2->3): they start when they do on the idle fabric, give or take the
// few ACKs and packets that now share their links at other times (under
// 1us), and h3's three of them end later. Every other flow starts at
// least 100us later, through receiver-side completion.
func TestCollectives_SlowLinkDelaysExactlyTheStepsThatUseIt(t *testing.T) {
	run := func(imp string) (*scenario.Built, *runner.Result) {
		t.Helper()
		b, err := scenario.Load("hd.yaml", []byte(fmt.Sprintf(hdYAML, imp)), scenario.Dir("."))
		if err != nil {
			t.Fatal(err)
		}
		r, err := runner.Run(b, runner.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return b, r
	}
	b, base := run("")
	_, slow := run("impairments:\n  - {link: [h3, leaf0], direction: forward, schedule: [{at: 0s, rate: 10Gbps}]}\n")
	flows := b.Fabric.Flows
	// waits[i]: flow i waits on a flow from h3 (dependencies point to
	// later flows).
	waits := make([]bool, len(flows))
	for i := range flows {
		for _, g := range append(slices.Clone(flows[i].OnRecvDone()), flows[i].OnSendDone()...) {
			waits[g] = waits[g] || waits[i] || flows[i].Src == 3
		}
	}
	type pair struct{ src, dst int }
	var free []pair
	for i := range flows {
		f, a, s := &flows[i], &base.Records[i], &slow.Records[i]
		if !a.Finished || !s.Finished {
			t.Fatalf("flow %d did not finish", i)
		}
		if waits[i] {
			if s.StartAt < a.StartAt+100*sim.Microsecond {
				t.Errorf("flow %d (%d->%d) waits on the slow link but starts at %v, idle %v", i, f.Src, f.Dst, s.StartAt, a.StartAt)
			}
			continue
		}
		free = append(free, pair{f.Src, f.Dst})
		if s.StartAt < a.StartAt || s.StartAt > a.StartAt+sim.Microsecond {
			t.Errorf("flow %d (%d->%d) does not wait on the slow link but starts at %v, idle %v", i, f.Src, f.Dst, s.StartAt, a.StartAt)
		}
		if f.Src == 3 && s.Finish <= a.Finish {
			t.Errorf("h3's flow %d ends at %v, idle %v: want later", i, s.Finish, a.Finish)
		}
	}
	if want := []pair{{0, 2}, {1, 3}, {2, 0}, {3, 1}, {0, 1}, {2, 3}, {3, 2}, {3, 2}}; !slices.Equal(free, want) {
		t.Errorf("flows independent of h3: %v, want %v", free, want)
	}
}
