// Package experiments reproduces lockstep's published experiments: each
// builds variants of an example scenario, runs them, and writes a Markdown
// report with result tables, CSV data and PNG figures. `lockstep experiment
// NAME` runs one; docs/experiments/ holds their last output.
package experiments

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// Env is where an experiment reads examples and writes its report.
type Env struct {
	Examples string    // the examples/ directory
	Out      string    // report directory (NAME.md and NAME/ go here)
	Seeds    int       // seeds for spreads (0: the experiment's default)
	Log      io.Writer // progress lines (may be nil)
	Quick    bool      // smaller runs, for tests
}

func (e *Env) logf(format string, args ...any) {
	if e.Log != nil {
		fmt.Fprintf(e.Log, format+"\n", args...)
	}
}

// Experiment is one reproducible experiment.
type Experiment struct {
	Name    string
	Summary string
	// File is the base name of what Run writes into Env.Out: File.md (the
	// page) and File/ (its CSV data and figures).
	File string
	Run  func(env *Env) error
}

// The experiments' file names (Experiment.File).
const (
	multiLossFile = "multi_loss"
	hyStartFile   = "hystart"
	scalableFile  = "scalable"
	sprayingFile  = "spraying"
	allreduceFile = "allreduce"
	nsccFile      = "nscc"
	dcqcnFile     = "dcqcn"
	hpccDCQCNFile = "hpcc_dcqcn"
)

// All lists the experiments by name.
func All() []Experiment {
	return []Experiment{
		{Name: "multi-loss", Summary: "STrack vs cumulative-ACK Reno, NewReno, SACK, RACK-TLP under correlated burst losses", File: multiLossFile, Run: multiLoss},
		{Name: "hystart", Summary: "CUBIC's seven HyStart variants on the 2011 netdev report's 1 Gb/s, 11.3 ms path", File: hyStartFile, Run: hyStart},
		{Name: "scalable", Summary: "Scalable TCP (Kelly, Linux) vs Reno, CUBIC, DCTCP: fairness with 10-1000 flows, a 100 ms flap, a chaotic link", File: scalableFile, Run: scalableExp},
		{Name: "allreduce", Summary: "ring vs halving-doubling vs double binary tree all-reduce on a rail-optimised fabric and a fat-tree, ECMP vs spraying, with a second job; the ring's busbw against the analytical bound", File: allreduceFile, Run: allreduce},
		{Name: "dcqcn", Summary: "DCQCN (RoCEv2) on the paper's 40 Gb/s dumbbell: two flows converging to fairness, the queue with 2-16 flows against the paper's fluid model and its fixed point", File: dcqcnFile, Run: dcqcnExp},
		{Name: "hpcc-dcqcn", Summary: "HPCC vs DCQCN and DCQCN+w on WebSearch at 30% and 50% load on a lossless 100/400 Gb/s leaf-spine: FCT slowdown percentiles by flow size, as the HPCC paper's Fig. 11", File: hpccDCQCNFile, Run: hpccDCQCN},
		{Name: "switch-incast", Summary: "a 64->1 incast with a victim flow under drop-tail, ECN, PFC, trimming, a shared buffer and cut-through; each mechanism's event-rate cost on the k=8 permutation", File: switchIncastFile, Run: switchIncast},
		{Name: "pfc-storm", Summary: "a NIC whose receive pipeline stalls storms the fabric with PAUSE frames (Guo et al. 2016): victim goodput, PAUSE frames per tier and the spread's timing, with the switches' PFC watchdog (drop, forward, ToRs only) and the NIC's", File: pfcStormFile, Run: pfcStorm},
		{Name: "spraying", Summary: "STrack spraying vs DCTCP and Reno over ECMP on a leaf-spine and a k=8 fat-tree, with a degraded link", File: sprayingFile, Run: spraying},
		{Name: "nscc", Summary: "Ultra Ethernet's NSCC (four load-balancing policies) vs STrack vs DCTCP on htsim's perm1024 inputs and an incast", File: nsccFile, Run: nsccExp},
	}
}

// Find returns the experiment called name.
func Find(name string) (Experiment, error) {
	var names []string
	for _, x := range All() {
		if x.Name == name {
			return x, nil
		}
		names = append(names, x.Name)
	}
	return Experiment{}, fmt.Errorf("unknown experiment %q (known: %s)", name, strings.Join(names, ", "))
}

// variant loads an example, lets mutate change it, and runs it.
func variant(env *Env, file string, mutate func(*scenario.Scenario)) (*runner.Result, error) {
	b, err := builtVariant(env, file, mutate)
	if err != nil {
		return nil, err
	}
	return runner.Run(b, runner.Options{})
}

// builtVariant loads an example, lets mutate change it and builds it,
// for experiments that drive the fabric themselves (time series).
func builtVariant(env *Env, file string, mutate func(*scenario.Scenario)) (*scenario.Built, error) {
	var edits []scenario.Edit
	if mutate != nil {
		edits = append(edits, mutate)
	}
	return scenario.LoadFile(filepath.Join(env.Examples, file), edits...)
}

// fabricVariant is builtVariant's fabric, for experiments that need
// nothing else of the built scenario.
func fabricVariant(env *Env, file string, mutate func(*scenario.Scenario)) (*fabric.Fabric, error) {
	b, err := builtVariant(env, file, mutate)
	if err != nil {
		return nil, err
	}
	return fabric.New(b.Fabric)
}

// fcts returns the FCTs of finished flows in microseconds and the number
// of unfinished flows.
func fcts(r *runner.Result) (us []float64, unfinished int) {
	for i, rec := range r.Fabric.Transport().Records {
		if !rec.Finished {
			unfinished++
			continue
		}
		us = append(us, (rec.Finish-r.Built.Fabric.Flows[i].Start).Nanoseconds()/1e3)
	}
	return us, unfinished
}

// percentile is the nearest-rank percentile (p in (0,100]).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(k, 0)]
}

func mean(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

// totals sums the per-flow and per-port counters of a run.
type totals struct {
	sent, retx, timeouts, marks, drops uint64
}

func sum(r *runner.Result) totals {
	var t totals
	for _, rec := range r.Fabric.Transport().Records {
		t.sent += rec.PacketsSent
		t.retx += rec.Retransmits
		t.timeouts += rec.Timeouts
	}
	s := r.Summary()
	t.marks, t.drops = s.Marks, s.Drops
	return t
}

// writeFile writes name under dir atomically.
func writeFile(dir, name string, text string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(dir, name), func(w io.Writer) error {
		_, err := io.WriteString(w, text)
		return err
	})
}

func us(t sim.Time) float64 { return t.Nanoseconds() / 1e3 }
