package workloads

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// evalTimes runs a job's dependency graph with every flow taking dur
// from its start to its last byte (and its last ACK): it returns when
// each flow started and ended and when each task fired.
func evalTimes(t *testing.T, jf *JobFlows, dur sim.Time) (start, end, fired []sim.Time) {
	t.Helper()
	return evalTimesBy(t, jf, func(int32) sim.Time { return dur })
}

// evalTimesBy is evalTimes with flow i taking dur(i).
func evalTimesBy(t *testing.T, jf *JobFlows, dur func(i int32) sim.Time) (start, end, fired []sim.Time) {
	t.Helper()
	nf, nt := len(jf.Flows), len(jf.Tasks)
	start, end, fired = make([]sim.Time, nf), make([]sim.Time, nf), make([]sim.Time, nt)
	got := make([]int32, nf+nt)
	at := make([]sim.Time, nf+nt) // latest activation arrival
	idx := func(x int32) int {
		if x >= 0 {
			return int(x)
		}
		return nf + int(-1-x)
	}
	var work []int32
	for i, f := range jf.Flows {
		if f.Need == 0 {
			at[i] = f.Start
			work = append(work, int32(i))
		}
	}
	for k, tk := range jf.Tasks {
		if tk.Need == 0 {
			at[nf+k] = tk.Start
			work = append(work, TaskRef(int32(k)))
		}
	}
	done := 0
	activate := func(from sim.Time, xs []int32) {
		for _, x := range xs {
			var delay sim.Time
			var need int32
			if x >= 0 {
				delay, need = jf.Flows[x].Delay, jf.Flows[x].Need
			} else {
				delay, need = jf.Tasks[-1-x].Delay, jf.Tasks[-1-x].Need
			}
			i := idx(x)
			got[i]++
			at[i] = max(at[i], from+delay)
			if got[i] == need {
				work = append(work, x)
			}
		}
	}
	for len(work) > 0 {
		x := work[0]
		work = work[1:]
		done++
		if x >= 0 {
			start[x] = at[x]
			end[x] = start[x] + dur(x)
			activate(end[x], jf.Flows[x].OnRecvDone)
			activate(end[x], jf.Flows[x].OnSendDone)
		} else {
			k := -1 - x
			fired[k] = at[nf+int(k)]
			activate(fired[k], jf.Tasks[k].Next)
		}
	}
	if done != nf+nt {
		t.Fatalf("%d of %d flows and tasks ran: the graph waits on something that never happens", done, nf+nt)
	}
	return start, end, fired
}

// TestParallelJob_1F1B_Megatron: two stages, one TP rank, one DP
// replica, three micro-batches, forward 10us and backward 20us per layer,
// every transfer 1us: the timeline of Narayanan et al.'s PipeDream-Flush
// (Megatron-LM's 1F1B without interleaving), worked out by hand. Stage 0
// runs F0 F1 B0 F2 B1 B2 and stage 1 F0 B0 F1 B1 F2 B2:
//
//	stage 0: F0 0-10, F1 10-20, B0 42-62, F2 62-72, B1 72-92, B2 104-124
//	stage 1: F0 11-21, B0 21-41, F1 41-51, B1 51-71, F2 73-83, B2 83-103
func TestParallelJob_1F1B_Megatron(t *testing.T) {
	us := sim.Microsecond
	j := JobConfig{Collective: CollectiveConfig{Op: OpAllReduce, Hosts: hostsN(2), Size: 1000}, Iterations: 1,
		Parallel: &ParallelConfig{TP: 1, PP: 2, Microbatches: 3, Forward: 10 * us, Backward: 20 * us, PPSize: 5000}}
	jf, err := Job(j, nil)
	if err != nil {
		t.Fatal(err)
	}
	start, _, fired := evalTimes(t, jf, us)
	// Flows: activations 0 -> 1 for micro-batches 0..2, then gradients 1 -> 0.
	if len(jf.Flows) != 6 {
		t.Fatalf("%d flows, want 3 activations and 3 gradients", len(jf.Flows))
	}
	for i, want := range []sim.Time{10, 20, 72, 41, 71, 103} {
		f := jf.Flows[i]
		fwd := i < 3
		if fwd && (f.Src != 10 || f.Dst != 11) || !fwd && (f.Src != 11 || f.Dst != 10) || f.Size != 5000 {
			t.Errorf("flow %d: %d -> %d, %d bytes", i, f.Src, f.Dst, f.Size)
		}
		if start[i] != want*us {
			t.Errorf("flow %d (%s of micro-batch %d) starts at %v, want %v", i, map[bool]string{true: "activation", false: "gradient"}[fwd], i%3, start[i], want*us)
		}
	}
	// Stage 0's last backward pass ends at 124us: the iteration's end.
	var last sim.Time
	for k := range jf.IterTasks[0].Count {
		last = max(last, fired[jf.IterTasks[0].First+k])
	}
	if last != 124*us {
		t.Errorf("the iteration's last compute ends at %v, want 124us", last)
	}
	if n := len(jf.Instances); n != 6 || jf.Instances[0].Phase != PhasePP || jf.Instances[0].Op != OpSendRecv {
		t.Errorf("%d instances (%+v), want 6 pipeline sends", n, jf.Instances)
	}
}

// TestParallelJob_GPipe: with GPipe, stage 0 runs all three forward
// passes back to back (0-30) and stage 1's first backward pass starts
// only after its three forward passes (11-21, 21-31, 31-41): B0 41-61.
func TestParallelJob_GPipe(t *testing.T) {
	us := sim.Microsecond
	j := JobConfig{Collective: CollectiveConfig{Op: OpAllReduce, Hosts: hostsN(2), Size: 1000}, Iterations: 1,
		Parallel: &ParallelConfig{TP: 1, PP: 2, Microbatches: 3, Schedule: SchedGPipe, Forward: 10 * us, Backward: 20 * us, PPSize: 5000}}
	jf, err := Job(j, nil)
	if err != nil {
		t.Fatal(err)
	}
	start, _, _ := evalTimes(t, jf, us)
	for i, want := range []sim.Time{10, 20, 30, 61, 81, 101} {
		if start[i] != want*us {
			t.Errorf("flow %d starts at %v, want %v", i, start[i], want*us)
		}
	}
}

// TestParallelJob_TPAllReducesAndDP: TP=2 (ranks 0,1 and 2,3 of stage 0
// in replicas 0 and 1), PP=1, DP=2: every layer of every pass has two
// compute halves each followed by a ring all-reduce of the TP group; the
// DP all-reduce of (stage 0, TP rank i) over the replicas follows the
// last backward pass. Forward 10us (5us halves), backward 20us, 1
// micro-batch, 1 layer, transfers 1us: a TP ring all-reduce of 2 ranks
// is 2 steps (2us). Per rank: 5 +2 +5 +2 (forward) +10 +2 +10 +2
// (backward) = 38us, then the DP ring of 2 ranks (2us): 40us.
func TestParallelJob_TPAllReducesAndDP(t *testing.T) {
	us := sim.Microsecond
	j := JobConfig{Collective: CollectiveConfig{Op: OpAllReduce, Hosts: hostsN(4), Size: 8000}, Iterations: 2, Compute: 3 * us,
		Parallel: &ParallelConfig{TP: 2, PP: 1, Microbatches: 1, Forward: 10 * us, TPSize: 4000}}
	jf, err := Job(j, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, end, _ := evalTimes(t, jf, us)
	var phases []string
	for _, in := range jf.Instances {
		if in.Iteration == 0 {
			phases = append(phases, in.Phase)
		}
	}
	// Replica 0's 4 TP all-reduces, replica 1's, then DP for TP ranks 0, 1.
	want := []string{"tp", "tp", "tp", "tp", "tp", "tp", "tp", "tp", "dp", "dp"}
	if len(phases) != len(want) {
		t.Fatalf("iteration 0 instances %v, want %v", phases, want)
	}
	for i := range want {
		if phases[i] != want[i] {
			t.Fatalf("iteration 0 instances %v, want %v", phases, want)
		}
	}
	tp := jf.Instances[0]
	if tp.Hosts[0] != 10 || tp.Hosts[1] != 11 || tp.Bytes != 4000 || tp.Count != 4 {
		t.Errorf("first TP all-reduce: %+v, want hosts 10, 11 of 4000 bytes in 4 flows", tp)
	}
	dp := jf.Instances[8]
	if dp.Hosts[0] != 10 || dp.Hosts[1] != 12 {
		t.Errorf("DP all-reduce of TP rank 0 over hosts %v, want 10 and 12", dp.Hosts)
	}
	iterEnd := func(it int) sim.Time {
		var e sim.Time
		r := jf.Iters[it]
		for k := r.First; k < r.First+r.Count; k++ {
			e = max(e, end[k])
		}
		return e
	}
	if e := iterEnd(0); e != 40*us {
		t.Errorf("iteration 0 ends at %v, want 40us", e)
	}
	// Iteration 1 starts after the 3us optimizer step.
	if e := iterEnd(1); e != 83*us {
		t.Errorf("iteration 1 ends at %v, want 83us (40 + 3 + 40)", e)
	}
}

func TestParallelJob_Errors(t *testing.T) {
	cc := CollectiveConfig{Op: OpAllReduce, Hosts: hostsN(4), Size: 1000}
	for _, c := range []struct {
		p    ParallelConfig
		more func(*JobConfig)
	}{
		{ParallelConfig{TP: 3, PP: 1, Microbatches: 1, Layers: 1, TPSize: 10}, nil},
		{ParallelConfig{TP: 2, PP: 2, Microbatches: -1, Layers: 1, TPSize: 10, PPSize: 10}, nil},
		{ParallelConfig{TP: 2, PP: 1, Microbatches: 1, Layers: 1}, nil},
		{ParallelConfig{TP: 1, PP: 2, Microbatches: 1, Layers: 1, PPSize: 10, Schedule: "zb"}, nil},
		{ParallelConfig{TP: 1, PP: 2, Microbatches: 1, Layers: 1, PPSize: 10}, func(j *JobConfig) { j.Buckets = 2 }},
		{ParallelConfig{TP: 2, PP: 2, Microbatches: 1, Layers: 1, TPSize: 10, PPSize: 10}, func(j *JobConfig) {
			j.Collective.Hosts = []int{1, 2, 3, 1}
		}},
	} {
		p := c.p
		j := JobConfig{Collective: cc, Iterations: 1, Parallel: &p}
		if c.more != nil {
			c.more(&j)
		}
		if _, err := Job(j, nil); err == nil {
			t.Errorf("%+v: want an error", c.p)
		}
	}
}

// TestSchedule_1F1BBoundsInFlightMicrobatches: 1F1B keeps at most
// min(p-s, M) micro-batches between forward and backward at stage s (the
// activation memory PipeDream-Flush bounds, Narayanan et al. §2.2.1),
// GPipe all M; every micro-batch's backward comes after its forward.
func TestSchedule_1F1BBoundsInFlightMicrobatches(t *testing.T) {
	for _, sched := range []string{Sched1F1B, SchedGPipe} {
		for _, pp := range []int{1, 2, 4, 7} {
			for _, m := range []int{1, 3, 8} {
				p := ParallelConfig{PP: pp, Microbatches: m, Schedule: sched}
				for s := 0; s < pp; s++ {
					seen := make([]int, m)
					open, peak := 0, 0
					for _, ps := range p.schedule(s) {
						if ps.forward {
							open++
							seen[ps.mb]++
						} else {
							open--
							if seen[ps.mb] != 1 {
								t.Fatalf("%s p=%d m=%d stage %d: backward of %d before its forward", sched, pp, m, s, ps.mb)
							}
							seen[ps.mb]++
						}
						peak = max(peak, open)
					}
					want := min(pp-s, m)
					if sched == SchedGPipe {
						want = m
					}
					if peak != want || open != 0 {
						t.Errorf("%s p=%d m=%d stage %d: %d in flight at most (%d left), want %d", sched, pp, m, s, peak, open, want)
					}
				}
			}
		}
	}
}

// TestParallelJob_AllShapesRunToTheEnd: jobs of every shape run their
// dependency graph to the end (nothing waits forever), each PP send goes
// to the same TP rank of the next stage, each TP group is TP consecutive
// ranks (Megatron-LM's order), and iterations follow each other.
func TestParallelJob_AllShapesRunToTheEnd(t *testing.T) {
	us := sim.Microsecond
	for _, c := range []struct{ n, tp, pp, m int }{{8, 2, 2, 4}, {16, 2, 4, 8}, {12, 3, 2, 2}, {8, 1, 4, 5}, {8, 4, 1, 2}} {
		hosts := hostsN(c.n)
		for _, alg := range []string{AlgRing, AlgDoubleBinaryTree} {
			j := JobConfig{Collective: CollectiveConfig{Op: OpAllReduce, Algorithm: alg, Hosts: hosts, Size: 4000, Chunks: 2}, Iterations: 2,
				Parallel: &ParallelConfig{TP: c.tp, PP: c.pp, Microbatches: c.m, Layers: 2, Forward: 4 * us}}
			if c.pp > 1 {
				j.Parallel.PPSize = 3000
			}
			if c.tp > 1 {
				j.Parallel.TPSize, j.Parallel.TPAlgorithm = 2000, alg
			}
			jf, err := Job(j, nil)
			if err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
			start, end, _ := evalTimes(t, jf, us)
			if start[jf.Iters[1].First] < end[jf.Iters[0].First] {
				t.Errorf("%+v: iteration 1 starts before iteration 0's first flow ends", c)
			}
			d := c.n / (c.tp * c.pp)
			for _, in := range jf.Instances {
				switch in.Phase {
				case PhasePP:
					for i := 0; i < c.tp; i++ {
						a, b := in.Hosts[i]-10, in.Hosts[c.tp+i]-10
						if a%c.tp != i || b%c.tp != i || (a/(c.tp*d)-b/(c.tp*d))*(a/(c.tp*d)-b/(c.tp*d)) != 1 {
							t.Fatalf("%+v: pipeline send %d -> %d is not TP rank %d of consecutive stages", c, a, b, i)
						}
					}
				case PhaseTP:
					for i, h := range in.Hosts {
						if h-in.Hosts[0] != i || (h-10)%c.tp != i {
							t.Fatalf("%+v: TP group %v is not %d consecutive ranks", c, in.Hosts, c.tp)
						}
					}
				}
			}
			if got := ParallelFlows(*j.Parallel, c.n, int64(len(mustCollective(t, j.Collective, d).Flows)), 2); alg == AlgRing && got != int64(len(jf.Flows)) {
				t.Errorf("%+v: ParallelFlows says %d, the job has %d", c, got, len(jf.Flows))
			}
			if bound := ParallelTasks(*j.Parallel, c.n, 2); int64(len(jf.Tasks)) > bound || int64(len(jf.Tasks)) < bound/4 {
				t.Errorf("%+v: %d tasks, ParallelTasks bounds them by %d", c, len(jf.Tasks), bound)
			}
		}
	}
}

func mustCollective(t *testing.T, c CollectiveConfig, n int) *CollectiveFlows {
	t.Helper()
	if n < 2 {
		return &CollectiveFlows{}
	}
	c.Hosts = c.Hosts[:n]
	cf, err := Collective(c)
	if err != nil {
		t.Fatal(err)
	}
	return cf
}

// TestParallelJob_RankSendsOnlyWhatItHasComputed: a rank's part of a
// collective is its own data reduced with what it received, so none of
// its sends in a TP or DP all-reduce may start before its compute ahead
// of the collective is done, whatever the others have sent it. The
// activations of TP rank 0 of stage 1 take 50us to arrive (a slow
// link), the other transfers 1us: rank 0's forward compute starts late,
// and every flow it sends in its TP all-reduces must wait for it; in a
// ring, tree or halving-doubling its neighbours' data reach it first.
func TestParallelJob_RankSendsOnlyWhatItHasComputed(t *testing.T) {
	us := sim.Microsecond
	for _, alg := range []string{AlgRing, AlgDoubleBinaryTree, AlgHalvingDoubling} {
		j := JobConfig{Collective: CollectiveConfig{Op: OpAllReduce, Algorithm: alg, Hosts: hostsN(16), Size: 8000}, Iterations: 1,
			Parallel: &ParallelConfig{TP: 4, PP: 2, Microbatches: 2, Forward: 10 * us, TPSize: 4000, TPAlgorithm: alg, PPSize: 4000}}
		jf, err := Job(j, nil)
		if err != nil {
			t.Fatal(err)
		}
		slowTo := hostsN(16)[8] // TP rank 0 of stage 1, replica 0 (rank 8)
		dur := func(i int32) sim.Time {
			if f := jf.Flows[i]; f.Dst == slowTo && f.Src == hostsN(16)[0] {
				return 50 * us
			}
			return us
		}
		start, end, _ := evalTimesBy(t, jf, dur)
		checked := 0
		for _, in := range jf.Instances {
			if in.Phase == PhasePP {
				continue
			}
			// The rank's compute before the instance is done when its
			// first sends (those that wait on nothing inside the
			// instance) start; every later send of the rank waits on it.
			ready := map[int]sim.Time{}
			for x := in.First; x < in.First+in.Count; x++ {
				f := jf.Flows[x]
				inside := false
				for y := in.First; y < in.First+in.Count; y++ {
					if contains(jf.Flows[y].OnRecvDone, x) || contains(jf.Flows[y].OnSendDone, x) {
						inside = true
					}
				}
				if !inside {
					if r, ok := ready[f.Src]; !ok || start[x] < r {
						ready[f.Src] = start[x]
					}
				}
			}
			for x := in.First; x < in.First+in.Count; x++ {
				f := jf.Flows[x]
				r, ok := ready[f.Src]
				if !ok {
					continue // a tree rank inner in both trees: no first send
				}
				checked++
				if start[x] < r {
					t.Errorf("%s: %s instance of iteration %d: flow %d from host %d starts at %v, before the host's compute ended at %v",
						alg, in.Phase, in.Iteration, x, f.Src, start[x], r)
				}
			}
		}
		if checked == 0 {
			t.Fatalf("%s: nothing checked", alg)
		}
		_ = end
	}
}
