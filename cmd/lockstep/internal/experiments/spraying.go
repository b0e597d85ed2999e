package experiments

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/internal/yamlx"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// The spraying experiment (issue "At fabric scale"): STrack's two path
// selection modes spraying over a leaf-spine and the k=8 fat-tree, against
// DCTCP and Reno pinned to one path each by ECMP, under a permutation, a
// 16->1 incast, and a top-tier link degraded to 25% of its rate mid-run.

// spTransport is one row of the tables: a transport and the forwarding it
// is meant for.
type spTransport struct {
	label, short string
	mutate       func(*scenario.Scenario)
}

var spTransports = []spTransport{
	{"STrack, paths skip (spray)", "STrack skip", spStrack("skip", false)},
	{"STrack, paths reuse (spray)", "STrack reuse", spStrack("reuse", false)},
	{"DCTCP over ECMP", "DCTCP", spTCP("dctcp")},
	{"Reno over ECMP", "Reno", spTCP("reno")},
	{"STrack skip, htsim's default target", "skip 20us", spStrack("skip", true)},
	{"STrack reuse, htsim's default target", "reuse 20us", spStrack("reuse", true)},
	{"STrack as htsim PR #4 runs it (spray)", "PR #4", spStrackPR4(false)},
	{"STrack as htsim PR #4 runs it, CC on (spray)", "PR #4 CC", spStrackPR4(true)},
}

// spStrackPR4 is STrack as its authors' htsim code runs it
// (transport.strack.variant: htsim-pr4, docs/decisions.md): skipping
// marked entropies for max(1, initial window / N) turns, timeouts only
// (its 1 ms RTO that doubles), window control off (the code's default) or
// on.
func spStrackPR4(ccOn bool) func(*scenario.Scenario) {
	return func(s *scenario.Scenario) {
		s.Switch.Forwarding = "spray"
		s.Transport.CC, s.Transport.Recovery = "strack", "strack"
		s.Transport.ECN, s.Transport.ECNEcho = true, ""
		on := ccOn
		s.Transport.STrack = &scenario.STrack{Paths: "skip", Entropies: spEntropies, Variant: "htsim-pr4", CCEnabled: &on}
		s.Transport.RTO = scenario.RTO{}
	}
}

// spStrack selects STrack with the given path selection over a spraying
// fabric (docs/scenario.md, transport.strack). The example's target RTT
// (matched to the fabric: hops x per-hop base RTT + the queueing delay at
// the ECN threshold) is kept unless htsimTarget asks for htsim's default
// (20 us + 3.05 us per hop). The RTO follows htsim's STrackSrc: an initial
// 1 ms and a 100 us floor.
func spStrack(paths string, htsimTarget bool) func(*scenario.Scenario) {
	return func(s *scenario.Scenario) {
		s.Switch.Forwarding = "spray"
		s.Transport.CC, s.Transport.Recovery = "strack", "strack"
		s.Transport.ECN, s.Transport.ECNEcho = true, ""
		st := &scenario.STrack{Paths: paths, Entropies: spEntropies}
		if old := s.Transport.STrack; old != nil && !htsimTarget {
			st.BaseTarget, st.PerHop = old.BaseTarget, old.PerHop
		}
		s.Transport.STrack = st
		s.Transport.RTO = scenario.RTO{Min: yamlx.Duration(100 * sim.Microsecond), Initial: yamlx.Duration(sim.Millisecond)}
	}
}

// spTCP selects a TCP over ECMP: DCTCP is ECN-capable with the per-packet
// echo of RFC 8257 §3.2; Reno is not ECN-capable. Both use cumulative-ACK
// recovery (RFC 5681 §3.2) and an RFC 6298 RTO floored at 1 ms, which is
// also the initial RTO (RFC 6298 §2.1 says 1 s; with it, a sender whose
// whole first window drops in the incast waits a second).
func spTCP(ccName string) func(*scenario.Scenario) {
	return func(s *scenario.Scenario) {
		s.Switch.Forwarding = "ecmp"
		s.Transport.CC, s.Transport.Recovery = ccName, "reno"
		s.Transport.STrack = nil
		s.Transport.ECN, s.Transport.ECNEcho = false, ""
		if ccName == "dctcp" {
			s.Transport.ECN, s.Transport.ECNEcho = true, "per-packet"
		}
		s.Transport.RTO = scenario.RTO{Min: yamlx.Duration(sim.Millisecond), Initial: yamlx.Duration(sim.Millisecond)}
	}
}

// spEntropies is STrack's N, the entropies each sender cycles through.
const spEntropies = 256

// spTopo is one fabric of the experiment.
type spTopo struct {
	key, label, file string
	// lower and upper name the ends of the top-tier link that the failure
	// case degrades (the leaf or aggregation switch, and the spine or
	// core). The experiment replaces upper by spDegradedUpper's choice;
	// the tests use it as given.
	lower, upper string
	// shrink makes a small version for Env.Quick.
	shrink func(*scenario.Scenario)
}

var spTopos = []spTopo{
	{key: "leafspine", label: "leaf-spine 8x16, 4 spines", file: "spraying-leafspine.yaml",
		lower: "leaf0", upper: "spine0",
		shrink: func(s *scenario.Scenario) {
			ls := s.Topology.LeafSpine
			ls.Leaves, ls.HostsPerLeaf = 4, 8
			ls.Fabric.Rate = ls.Host.Rate * yamlx.Rate(ls.HostsPerLeaf) / yamlx.Rate(ls.Spines) // still 1:1
		}},
	{key: "fattree", label: "fat-tree k=8", file: "spraying-fattree.yaml",
		lower: "agg0", upper: "core0",
		shrink: func(s *scenario.Scenario) { s.Topology.FatTree.K = 4 }},
}

// spSizes are the flow sizes of the two workloads.
type spSizes struct {
	perm, incast yamlx.Size
	senders      int // incast fan-in
	// degradeAt is when the failure case degrades its link.
	degradeAt sim.Time
}

func spSizesFor(env *Env) spSizes {
	if env.Quick {
		return spSizes{perm: 1_000_000, incast: 64_000, senders: 8, degradeAt: 20 * sim.Microsecond}
	}
	return spSizes{perm: 2_000_000, incast: 512_000, senders: 16, degradeAt: 100 * sim.Microsecond}
}

// spWorkload replaces the example's workload: "permutation" keeps a random
// permutation of perm bytes per host; "incast" makes the senders hosts
// after the first rack (or pod) send to host 0, so every byte crosses the
// top tier.
func spWorkload(kind string, z spSizes) func(*scenario.Scenario) {
	return func(s *scenario.Scenario) {
		rack := spRackSize(s)
		switch kind {
		case "permutation":
			s.Workload = []scenario.Workload{{Type: "permutation", Size: z.perm}}
		case "incast":
			senders := make([]int, z.senders)
			for i := range senders {
				senders[i] = rack + i
			}
			s.Workload = []scenario.Workload{{Type: "incast", Dst: 0, Senders: senders, Size: z.incast}}
		}
	}
}

// spRackSize is the number of hosts under one leaf (leaf-spine) or in one
// pod (fat-tree).
func spRackSize(s *scenario.Scenario) int {
	if ls := s.Topology.LeafSpine; ls != nil {
		return ls.HostsPerLeaf
	}
	k := s.Topology.FatTree.K
	return k * k / 4
}

// spScenario loads an example and applies the changes in order.
func spScenario(env *Env, tp spTopo, seed uint64, mutate ...func(*scenario.Scenario)) (*scenario.Built, error) {
	var edits []scenario.Edit
	if env.Quick {
		edits = append(edits, tp.shrink)
	}
	edits = append(edits, scenario.WithSeed(seed))
	for _, m := range mutate {
		edits = append(edits, m)
	}
	return scenario.LoadFile(filepath.Join(env.Examples, tp.file), edits...)
}

// spRun is what one run contributes to the tables.
type spRun struct {
	fct        []float64 // us, finished flows
	unfinished int
	t          totals
	util       []float64   // top-tier upward links, in topology link order
	ends       [][2]string // the lower and upper node of each of them
	recv       float64     // the link into host 0 (the incast receiver)
}

// spTopUp returns the topology links of the highest tier; their A end is the
// lower switch (topologies/tiered.go adds them as (leaf, spine) and
// (agg, core)), so fabric.DirID(i, true) is the upward direction.
func spTopUp(t *topologies.Topology) []int {
	top := 0
	for _, l := range t.Links {
		top = max(top, l.Tier)
	}
	var ids []int
	for i, l := range t.Links {
		if l.Tier == top {
			ids = append(ids, i)
		}
	}
	return ids
}

// spMeasure summarises a finished run. The utilisation of a link is the
// bytes it transmitted (data, ACKs and retransmissions, headers included)
// over what its rate could carry during the busy period, from time 0 (when
// every flow starts) to the last completion.
func spMeasure(r *runner.Result) spRun {
	f, unfinished := fcts(r)
	out := spRun{fct: f, unfinished: unfinished, t: sum(r)}
	t := r.Fabric.Topology()
	for _, i := range spTopUp(t) {
		l := r.Fabric.Engine().Links[fabric.DirID(i, true)]
		out.util = append(out.util, float64(l.TxBytes*8)/(float64(t.Links[i].Rate)*r.End.Seconds()))
		out.ends = append(out.ends, [2]string{t.Nodes[t.Links[i].A].Name, t.Nodes[t.Links[i].B].Name})
	}
	// Host links are (host, ToR) pairs (topologies/tiered.go): B to A is
	// the direction into the host.
	for i, l := range t.Links {
		if l.A == t.Hosts[0] {
			tx := r.Fabric.Engine().Links[fabric.DirID(i, false)].TxBytes
			out.recv = float64(tx*8) / (float64(l.Rate) * r.End.Seconds())
		}
	}
	return out
}

// row is the run's line in a permutation table (incast: the receiver's
// link instead of the core, which an incast barely uses).
func (x spRun) row(label string, incast bool) string {
	head := fmt.Sprintf("| %s | %.1f | %.1f | %.1f | %d | %d | %d | %d |", label,
		percentile(x.fct, 50), percentile(x.fct, 99), percentile(x.fct, 100), x.t.retx, x.t.timeouts,
		x.t.drops, x.t.marks)
	if incast {
		return head + fmt.Sprintf(" %.1f |\n", 100*x.recv)
	}
	return head + fmt.Sprintf(" %.1f | %.1f | %.1f |\n", 100*mean(x.util), 100*slices.Min(x.util), 100*slices.Max(x.util))
}

const spTableHead = "| transport | P50 FCT (us) | P99 FCT (us) | max FCT (us) | retransmissions | timeouts | drops | ECN marks |"

func spTableHeadFor(incast bool) string {
	if incast {
		return spTableHead + " receiver link util. (%) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
	}
	return spTableHead + " core util. mean (%) | min link (%) | max link (%) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
}

// spOut gathers the report and its CSV data.
type spOut struct {
	md, fct, util strings.Builder
	dir           string
}

func spraying(env *Env) error {
	seeds := env.Seeds
	if seeds == 0 {
		seeds = 5
	}
	if env.Quick {
		seeds = 2
	}
	z := spSizesFor(env)
	o := &spOut{dir: filepath.Join(env.Out, sprayingFile)}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	o.fct.WriteString("topology,workload,transport,seed,flow,fct_us\n")
	o.util.WriteString("topology,workload,transport,seed,link,lower,upper,utilisation\n")
	var summary strings.Builder
	for _, tp := range spTopos {
		fmt.Fprintf(&o.md, "\n## %s\n", tp.label)
		perm, err := spWorkloadSection(env, o, tp, "permutation", z)
		if err != nil {
			return err
		}
		if _, err := spWorkloadSection(env, o, tp, "incast", z); err != nil {
			return err
		}
		if err := spSpread(env, o, tp, z, seeds, perm); err != nil {
			return err
		}
		tp.upper = spDegradedUpper(tp.lower, perm[spDCTCP])
		fails, err := spFailureSection(env, o, tp, z, perm)
		if err != nil {
			return err
		}
		spSummary(&summary, tp, perm, fails)
	}
	var doc strings.Builder
	doc.WriteString(spIntro)
	if env.Quick {
		doc.WriteString("\n**Quick mode** (tests): small fabrics and flows; not the published results.\n")
	}
	fmt.Fprintf(&doc, spSetup, seeds)
	doc.WriteString("\n## Summary (seed 1)\n" + summary.String())
	doc.WriteString(spWhy)
	doc.WriteString(o.md.String())
	doc.WriteString(spNotes)
	if err := writeFile(o.dir, "fct.csv", o.fct.String()); err != nil {
		return err
	}
	if err := writeFile(o.dir, "utilisation.csv", o.util.String()); err != nil {
		return err
	}
	return writeFile(env.Out, sprayingFile+".md", doc.String())
}

// spECMPFlowUtil is the utilisation above which an upward link under ECMP
// carries data: a link no flow hashes to carries only ACKs, under 2% here.
const spECMPFlowUtil = 0.05

// spDegradedUpper picks the link the failure case degrades: the first, in
// topology order, of lower's links to the top tier that carries a flow
// upward under ECMP in the healthy permutation (the ECMP run ecmp), so
// that the degradation touches ECMP's traffic too. Spraying uses every
// link, so the choice does not favour STrack. With none, the first link.
func spDegradedUpper(lower string, ecmp spRun) string {
	first := ""
	for i, e := range ecmp.ends {
		if e[0] != lower {
			continue
		}
		if first == "" {
			first = e[1]
		}
		if ecmp.util[i] >= spECMPFlowUtil {
			return e[1]
		}
	}
	return first
}

// Indices into spTransports, for the summary.
const (
	spSkip = iota
	spReuse
	spDCTCP
	spReno
	spSkipDiag
	spReuseDiag
	spPR4
	spPR4CC
)

// spSummary writes what one topology's runs show, with their numbers.
func spSummary(w *strings.Builder, tp spTopo, perm []spRun, fails []*spFail) {
	fmt.Fprintf(w, "\n**%s.**\n\n", tp.label)
	util := func(i int) string {
		x := perm[i]
		return fmt.Sprintf("%.0f-%.0f%% (mean %.0f%%)", 100*slices.Min(x.util), 100*slices.Max(x.util), 100*mean(x.util))
	}
	fmt.Fprintf(w, "- Balance (permutation): the top-tier uplinks carried %s under STrack skip, %s under STrack reuse, %s under DCTCP over ECMP.\n",
		util(spSkip), util(spReuse), util(spDCTCP))
	fct := func(i int) string {
		return fmt.Sprintf("%.0f/%.0f us", percentile(perm[i].fct, 50), percentile(perm[i].fct, 99))
	}
	retx := func(i int) string {
		t := perm[i].t
		if t.drops == 0 {
			return fmt.Sprintf("%d retransmissions, no drop", t.retx)
		}
		return fmt.Sprintf("%d retransmissions, %d drops", t.retx, t.drops)
	}
	fmt.Fprintf(w, "- FCT P50/P99 (permutation): STrack skip %s, reuse %s, DCTCP %s, Reno %s; with htsim's default target, skip %s and reuse %s. "+
		"STrack skip had %s; reuse %s.\n",
		fct(spSkip), fct(spReuse), fct(spDCTCP), fct(spReno), fct(spSkipDiag), fct(spReuseDiag), retx(spSkip), retx(spReuse))
	fmt.Fprintf(w, "- STrack as htsim PR #4 runs it (permutation): FCT P50/P99 %s with its window fixed (the code's default), %s with window control on; %s and %s.\n",
		fct(spPR4), fct(spPR4CC), retx(spPR4), retx(spPR4CC))
	share := func(i int) string {
		x := fails[i]
		b0, b1 := x.before()
		a0, a1 := x.after()
		return fmt.Sprintf("%.0f%% -> %.0f%%", 100*x.share(x.up, b0, b1), 100*x.share(x.up, a0, a1))
	}
	fmt.Fprintf(w, "- Failure: %s->%s's share of %s's uplink bytes went %s under STrack skip, %s under reuse, %s under DCTCP and %s under Reno "+
		"(ECMP cannot move a flow); with htsim's default target, %s (skip) and %s (reuse).\n",
		tp.lower, tp.upper, tp.lower, share(spSkip), share(spReuse), share(spDCTCP), share(spReno), share(spSkipDiag), share(spReuseDiag))
	p99 := func(i int) string {
		return fmt.Sprintf("%.0f -> %.0f us", percentile(perm[i].fct, 99), percentile(fails[i].run.fct, 99))
	}
	fmt.Fprintf(w, "- Failure, P99 FCT without -> with the degraded link: STrack skip %s, reuse %s, DCTCP %s, Reno %s; with htsim's default target, skip %s, reuse %s.\n",
		p99(spSkip), p99(spReuse), p99(spDCTCP), p99(spReno), p99(spSkipDiag), p99(spReuseDiag))
}

// spWorkloadSection runs every transport on one workload of tp with seed 1
// and writes the table and figures; it returns the runs in spTransports
// order.
func spWorkloadSection(env *Env, o *spOut, tp spTopo, wl string, z spSizes) ([]spRun, error) {
	incast := wl == "incast"
	fmt.Fprintf(&o.md, "\n### %s: %s (seed 1)\n\n", tp.label, spWorkloadLabel(wl, z))
	o.md.WriteString(spTableHeadFor(incast))
	var runs []spRun
	var names []string
	var samples, utils [][]float64
	var p50s, p99s []float64
	for _, tr := range spTransports {
		env.logf("spraying: %s %s %s", tp.key, wl, tr.short)
		b, err := spScenario(env, tp, 1, tr.mutate, spWorkload(wl, z))
		if err != nil {
			return nil, err
		}
		r, err := runner.Run(b, runner.Options{})
		if err != nil {
			return nil, fmt.Errorf("%s %s %s: %w", tp.key, wl, tr.short, err)
		}
		x := spMeasure(r)
		if x.unfinished > 0 {
			return nil, fmt.Errorf("%s %s %s: %d flows did not finish by %v", tp.key, wl, tr.short, x.unfinished, r.End)
		}
		runs = append(runs, x)
		o.md.WriteString(x.row(tr.label, incast))
		names = append(names, tr.short)
		samples, utils = append(samples, x.fct), append(utils, x.util)
		p50s, p99s = append(p50s, percentile(x.fct, 50)), append(p99s, percentile(x.fct, 99))
		for i, v := range x.fct {
			fmt.Fprintf(&o.fct, "%s,%s,%s,1,%d,%.3f\n", tp.key, wl, tr.short, i, v)
		}
		t := r.Fabric.Topology()
		for j, li := range spTopUp(t) {
			fmt.Fprintf(&o.util, "%s,%s,%s,1,%d,%s,%s,%.4f\n", tp.key, wl, tr.short, li,
				t.Nodes[t.Links[li].A].Name, t.Nodes[t.Links[li].B].Name, x.util[j])
		}
	}
	base := tp.key + "_" + wl
	title := tp.label + ", " + wl
	if err := spCDF(title+": FCT CDF", "FCT (us)", names, samples, o.dir, base+"_fct_cdf"); err != nil {
		return nil, err
	}
	if err := bars(title+": FCT", "FCT (us)", names, []string{"P50", "P99"}, [][]float64{p50s, p99s}, o.dir, base+"_fct_bars"); err != nil {
		return nil, err
	}
	fmt.Fprintf(&o.md, "\n![FCT CDF](spraying/%[1]s_fct_cdf.png)\n![FCT P50 and P99](spraying/%[1]s_fct_bars.png)\n", base)
	if !incast {
		if err := spSortedLines(title+": top-tier uplink utilisation, sorted", "link rank", "utilisation (%)", names, utils, 100, o.dir, base+"_util"); err != nil {
			return nil, err
		}
		fmt.Fprintf(&o.md, "![uplink utilisation](spraying/%s_util.png)\n", base)
	}
	return runs, nil
}

func spWorkloadLabel(wl string, z spSizes) string {
	if wl == "incast" {
		return fmt.Sprintf("%d->1 incast of %s each", z.senders, spSizeString(z.incast))
	}
	return fmt.Sprintf("permutation of %s flows", spSizeString(z.perm))
}

func spSizeString(s yamlx.Size) string {
	switch {
	case s%1_000_000 == 0:
		return fmt.Sprintf("%d MB", s/1_000_000)
	case s%1000 == 0:
		return fmt.Sprintf("%d KB", s/1000)
	}
	return fmt.Sprintf("%d B", s)
}

// spSpread runs the permutation over seeds 1..n (a fresh permutation
// each; seed1 holds the seed-1 runs) and reports the spread of P99 FCT and
// of the mean and minimum core utilisation.
func spSpread(env *Env, o *spOut, tp spTopo, z spSizes, n int, seed1 []spRun) error {
	fmt.Fprintf(&o.md, "\n### %s: permutation over seeds 1-%d\n\n", tp.label, n)
	o.md.WriteString("| transport | P99 FCT min (us) | median | max | core util. mean (%), median over seeds | min link (%), median over seeds |\n|---|---:|---:|---:|---:|---:|\n")
	for ti, tr := range spTransports {
		x := seed1[ti]
		p99, um, umin := []float64{percentile(x.fct, 99)}, []float64{100 * mean(x.util)}, []float64{100 * slices.Min(x.util)}
		for s := 2; s <= n; s++ {
			env.logf("spraying: %s permutation %s seed %d", tp.key, tr.short, s)
			b, err := spScenario(env, tp, uint64(s), tr.mutate, spWorkload("permutation", z))
			if err != nil {
				return err
			}
			r, err := runner.Run(b, runner.Options{})
			if err != nil {
				return err
			}
			x := spMeasure(r)
			if x.unfinished > 0 {
				return fmt.Errorf("%s permutation %s seed %d: %d flows did not finish", tp.key, tr.short, s, x.unfinished)
			}
			p99 = append(p99, percentile(x.fct, 99))
			um, umin = append(um, 100*mean(x.util)), append(umin, 100*slices.Min(x.util))
			for i, v := range x.fct {
				fmt.Fprintf(&o.fct, "%s,permutation,%s,%d,%d,%.3f\n", tp.key, tr.short, s, i, v)
			}
		}
		fmt.Fprintf(&o.md, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", tr.label, percentile(p99, 1), percentile(p99, 50),
			percentile(p99, 100), percentile(um, 50), percentile(umin, 50))
	}
	return nil
}

// spFail is the outcome of one failure run.
type spFail struct {
	run spRun
	// names are the top-tier switches at the other end of the lower
	// switch's top-tier links (the group); deg indexes the degraded one.
	names []string
	deg   int
	// times are the ends of the sampling bins (us); up[k][i] and down[k][i]
	// are the bytes group link i sent in bin k upward (from the lower
	// switch) and downward (to it).
	times    []float64
	up, down [][]uint64
	// cut is the index of the first bin after the degradation.
	cut int
	// port holds the counters of the degraded link's two output ports (up,
	// down) at the degradation ([0]) and at the end ([1]).
	port [2][2]switchsim.PortCounters
}

// spFailStep is the sampling bin of the failure case.
const spFailStep = 10 * sim.Microsecond

// spFailure runs the permutation of tp with its top-tier link lower-upper
// degraded to 25% of its rate in both directions at z.degradeAt (a
// scheduled rate change, docs/scenario.md "impairments"), driving the
// fabric in steps of spFailStep to sample the bytes that the lower
// switch's top-tier links send.
func spFailure(env *Env, tp spTopo, tr spTransport, z spSizes, seed uint64) (*spFail, error) {
	degrade := func(s *scenario.Scenario) {
		var rate yamlx.Rate
		if ls := s.Topology.LeafSpine; ls != nil {
			rate = ls.Fabric.Rate
		} else {
			rate = s.Topology.FatTree.Core.Rate
		}
		s.Impairments = append(s.Impairments, scenario.Impairment{Link: []string{tp.lower, tp.upper},
			Schedule: []scenario.Change{{At: yamlx.Duration(z.degradeAt), Rate: rate / 4}}})
	}
	b, err := spScenario(env, tp, seed, tr.mutate, spWorkload("permutation", z), degrade)
	if err != nil {
		return nil, err
	}
	f, err := fabric.New(b.Fabric)
	if err != nil {
		return nil, err
	}
	t := f.Topology()
	lower, upper := spNode(t, tp.lower), spNode(t, tp.upper)
	out := &spFail{deg: -1}
	var group []int
	for _, i := range spTopUp(t) {
		if t.Links[i].A == lower {
			if t.Links[i].B == upper {
				out.deg = len(group)
			}
			group = append(group, i)
			out.names = append(out.names, t.Nodes[t.Links[i].B].Name)
		}
	}
	if out.deg < 0 {
		return nil, fmt.Errorf("%s: no top-tier link %s-%s", tp.file, tp.lower, tp.upper)
	}
	n := len(group)
	// The degraded link's output ports: at the lower switch (up) and at the
	// upper one (down).
	var ports [2]*switchsim.Port
	for d, node := range []int{lower, upper} {
		for pi := range f.Switch(node).Ports {
			if pt := &f.Switch(node).Ports[pi]; pt.Link == fabric.DirID(group[out.deg], d == 0) {
				ports[d] = pt
			}
		}
	}
	snap := func(k int) {
		for d := range ports {
			out.port[d][k] = ports[d].PortCounters
		}
	}
	prevUp, prevDown := make([]uint64, n), make([]uint64, n)
	out.cut = -1
	for now := sim.Time(0); !f.Done() && now < b.MaxTime && f.Engine().NextEventTime() != sim.Never; {
		if now >= z.degradeAt && out.cut < 0 {
			out.cut = len(out.times)
			snap(0)
		}
		now += spFailStep
		f.RunUntil(now)
		up, down := make([]uint64, n), make([]uint64, n)
		for i, li := range group {
			u := f.Engine().Links[fabric.DirID(li, true)].TxBytes
			d := f.Engine().Links[fabric.DirID(li, false)].TxBytes
			up[i], down[i] = u-prevUp[i], d-prevDown[i]
			prevUp[i], prevDown[i] = u, d
		}
		out.times = append(out.times, us(now))
		out.up, out.down = append(out.up, up), append(out.down, down)
	}
	if out.cut < 0 {
		return nil, fmt.Errorf("%s %s: the run ended before %v, when the link degrades", tp.key, tr.short, z.degradeAt)
	}
	snap(1)
	r, err := runner.FromFabric(b, f)
	if err != nil {
		return nil, err
	}
	r.End = f.LastCompletion()
	out.run = spMeasure(r)
	return out, nil
}

// spBinBytes sums the bytes of link i (all links when i < 0) over bins [from, to).
func spBinBytes(bins [][]uint64, i, from, to int) uint64 {
	var total uint64
	for _, row := range bins[from:to] {
		for j, v := range row {
			if i < 0 || j == i {
				total += v
			}
		}
	}
	return total
}

// share is the degraded link's share of the group's bytes over bins
// [from, to) (0 when the group sent nothing).
func (x *spFail) share(bins [][]uint64, from, to int) float64 {
	all := spBinBytes(bins, -1, from, to)
	if all == 0 {
		return 0
	}
	return float64(spBinBytes(bins, x.deg, from, to)) / float64(all)
}

// before and after are the bins before and after the degradation.
func (x *spFail) before() (int, int) { return 0, x.cut }
func (x *spFail) after() (int, int)  { return x.cut, len(x.times) }

func spNode(t *topologies.Topology, name string) int {
	for i, n := range t.Nodes {
		if n.Name == name {
			return i
		}
	}
	return -1
}

// spFailureSection runs the failure case for every transport and writes
// its tables and figures. healthy holds each transport's run of the same
// permutation without the failure.
func spFailureSection(env *Env, o *spOut, tp spTopo, z spSizes, healthy []spRun) ([]*spFail, error) {
	md, dir := &o.md, o.dir
	var fails []*spFail
	fmt.Fprintf(md, "\n### %s: permutation with %s-%s degraded to 25%% of its rate at %.0f us (seed 1)\n\n",
		tp.label, tp.lower, tp.upper, us(z.degradeAt))
	var rows strings.Builder
	rows.WriteString("| transport | P50 FCT (us) | P99 FCT (us) | P99 without failure (us) | max FCT (us) | retransmissions | timeouts | drops | " +
		"degraded link after: marks up/down | drops up/down | peak queue up/down, whole run (KB) | " +
		"share up before (%) | share up after (%) | share down before (%) | share down after (%) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var names []string
	var xs, upShare, downShare [][]float64
	var mbAfter [][]float64 // per link, per transport
	var perLink strings.Builder
	var linkNames []string
	for ti, tr := range spTransports {
		env.logf("spraying: %s failure %s", tp.key, tr.short)
		x, err := spFailure(env, tp, tr, z, 1)
		if err != nil {
			return nil, err
		}
		if x.run.unfinished > 0 {
			return nil, fmt.Errorf("%s failure %s: %d flows did not finish", tp.key, tr.short, x.run.unfinished)
		}
		fails = append(fails, x)
		b0, b1 := x.before()
		a0, a1 := x.after()
		pu, pd := x.port[0], x.port[1]
		fmt.Fprintf(&rows, "| %s | %.1f | %.1f | %.1f | %.1f | %d | %d | %d | %d / %d | %d / %d | %.0f / %.0f | %.1f | %.1f | %.1f | %.1f |\n", tr.label,
			percentile(x.run.fct, 50), percentile(x.run.fct, 99), percentile(healthy[ti].fct, 99), percentile(x.run.fct, 100),
			x.run.t.retx, x.run.t.timeouts, x.run.t.drops,
			pu[1].Marked-pu[0].Marked, pd[1].Marked-pd[0].Marked, pu[1].Dropped-pu[0].Dropped, pd[1].Dropped-pd[0].Dropped,
			float64(pu[1].PeakBytes)/1e3, float64(pd[1].PeakBytes)/1e3, 100*x.share(x.up, b0, b1), 100*x.share(x.up, a0, a1),
			100*x.share(x.down, b0, b1), 100*x.share(x.down, a0, a1))
		names = append(names, tr.short)
		// Cumulative shares: from the start until the degradation, then
		// from the degradation on, so each curve ends at the table's value.
		var ups, downs []float64
		for k := range x.times {
			from := 0
			if k >= x.cut {
				from = x.cut
			}
			ups, downs = append(ups, 100*x.share(x.up, from, k+1)), append(downs, 100*x.share(x.down, from, k+1))
		}
		xs, upShare, downShare = append(xs, x.times), append(upShare, ups), append(downShare, downs)
		if linkNames == nil {
			linkNames = x.names
			mbAfter = make([][]float64, len(linkNames))
		}
		fmt.Fprintf(&perLink, "| %s |", tr.label)
		for i := range linkNames {
			bb, ab := float64(spBinBytes(x.up, i, b0, b1))/1e6, float64(spBinBytes(x.up, i, a0, a1))/1e6
			mbAfter[i] = append(mbAfter[i], ab)
			fmt.Fprintf(&perLink, " %.2f / %.2f |", bb, ab)
		}
		perLink.WriteString("\n")
	}
	fmt.Fprintf(md, "Shares are of the bytes that %s's %d links to the %s tier sent in each direction, before and after the degradation "+
		"(until the last flow finished); a balanced share is 1/%d.\n\n", tp.lower, len(linkNames), spTierName(tp.upper), len(linkNames))
	md.WriteString(rows.String())
	fmt.Fprintf(md, "\nMB sent up each of %s's links, before / after the degradation (%s->%s is the degraded one):\n\n| transport |", tp.lower, tp.lower, tp.upper)
	var series []string
	for _, n := range linkNames {
		fmt.Fprintf(md, " %s->%s |", tp.lower, n)
		series = append(series, tp.lower+"->"+n)
	}
	md.WriteString("\n|---|" + strings.Repeat("---:|", len(linkNames)) + "\n" + perLink.String())
	base := tp.key + "_failure"
	for _, d := range []struct {
		dir, from, to string
		ys            [][]float64
	}{{"up", tp.lower, tp.upper, upShare}, {"down", tp.upper, tp.lower, downShare}} {
		title := fmt.Sprintf("%s: %s->%s share of the group's bytes, cumulative from 0 and from %.0f us",
			tp.label, d.from, d.to, us(z.degradeAt))
		if err := lines(title, "time (us)", "share (%)", names, xs, d.ys, dir, base+"_share_"+d.dir); err != nil {
			return nil, err
		}
	}
	if err := bars(fmt.Sprintf("%s: MB sent up %s's links after %s-%s degraded", tp.label, tp.lower, tp.lower, tp.upper),
		"MB", names, series, mbAfter, dir, base+"_links"); err != nil {
		return nil, err
	}
	fmt.Fprintf(md, "\n![share up](spraying/%[1]s_share_up.png)\n![share down](spraying/%[1]s_share_down.png)\n![bytes per link after](spraying/%[1]s_links.png)\n", base)
	return fails, nil
}

// spTierName names the top tier of a node name ("spine0" -> "spine").
func spTierName(node string) string { return strings.TrimRight(node, "0123456789") }

// spCDF draws the empirical CDF of each sample set (x: value, y: percent of
// samples at or below it), with the legend at the bottom right, where a
// CDF leaves room.
func spCDF(title, xlabel string, names []string, samples [][]float64, dir, name string) error {
	p := newPlot(title, xlabel, "flows (%)")
	p.Legend.Top = false
	for i, s := range samples {
		v := slices.Clone(s)
		slices.Sort(v)
		pts := make(plotter.XYs, len(v))
		for j, x := range v {
			pts[j] = plotter.XY{X: x, Y: 100 * float64(j+1) / float64(len(v))}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(names[i], l)
	}
	p.Y.Min, p.Y.Max = 0, 100
	return save(p, dir, name)
}

// spSortedLines draws each series sorted in decreasing order against its
// rank, scaled by scale: a flat line is a balanced load.
func spSortedLines(title, xlabel, ylabel string, names []string, series [][]float64, scale float64, dir, name string) error {
	xs := make([][]float64, len(series))
	ys := make([][]float64, len(series))
	for i, s := range series {
		v := slices.Clone(s)
		slices.Sort(v)
		slices.Reverse(v)
		for j, x := range v {
			xs[i] = append(xs[i], float64(j))
			ys[i] = append(ys[i], scale*x)
		}
	}
	return lines(title, xlabel, ylabel, names, xs, ys, dir, name)
}

const spIntro = `# Packet spraying at fabric scale

Reproduce with:

    go run ./cmd/lockstep experiment spraying        # writes out/experiments/spraying.md and spraying/
    go run ./cmd/lockstep experiment spraying --docs # rewrites this page (docs/experiments/spraying.md) and spraying/

This page is generated by cmd/lockstep/internal/experiments/spraying.go from
examples/spraying-leafspine.yaml and examples/spraying-fattree.yaml; do not
edit it by hand. It compares STrack spraying its packets over the fabric
(both path-selection modes) with DCTCP and Reno, whose flows ECMP pins to
one path each, on a leaf-spine and on the k=8 fat-tree, under a
permutation, a 16->1 incast, and a top-tier link degraded to 25% of its
rate mid-run.
`

// spSetup is a format string: its one verb is the number of seeds.
const spSetup = `
## Setup

**Fabrics.** *Leaf-spine*: 8 leaves x 16 hosts and 4 spines; hosts at
100 Gb/s, leaf-spine links at 400 Gb/s, so each leaf has as much capacity up
(4 x 400) as down (16 x 100): 1:1, no oversubscription. *Fat-tree*: k = 8,
128 hosts, 32 ToR, 32 aggregation and 16 core switches, every link
100 Gb/s (1:1 by construction). Every link has 1 us of propagation delay;
switches add no latency. Every switch port has a 1 MiB drop-tail buffer and
marks ECN-capable packets when it holds more than 64 KiB (DCTCP's step
marking, on every tier). Data packets are 4096 B on the wire (64 B header,
4032 B payload), ACKs 64 B.

**Transports.**

| row | cc | loss recovery | forwarding | ECN | RTO |
|---|---|---|---|---|---|
| STrack, paths skip | strack (RTT-based window, defaults of docs/scenario.md) | strack (per-packet ACKs, NACK bitmaps) | spray over N = 256 entropies; a marked ACK passes its entropy over for ceil(cwnd/N) turns | yes, marks steer paths only | RFC 6298, min 100 us, initial 1 ms (htsim STrackSrc) |
| STrack, paths reuse | strack | strack | spray; send on the entropy of the last unmarked ACK, a random one after a mark | yes | as above |
| DCTCP over ECMP | dctcp (g = 1/16) | reno (cumulative ACK, 3 dup ACKs) | ECMP hash of the 5-tuple | yes, per-packet echo (RFC 8257 §3.2) | RFC 6298, min 1 ms, initial 1 ms |
| Reno over ECMP | reno | reno | ECMP | no | RFC 6298, min 1 ms, initial 1 ms |
| STrack skip / reuse, htsim's default target | strack with target 20 us + 3.05 us per hop | strack | spray | yes | as STrack |

STrack's target RTT is a per-fabric setting. The examples set it to the
path's base RTT plus the queueing delay at the 64 KiB ECN threshold on a
100 Gb/s port: base_target 5.2 us + 2.3 us per hop (a link adds 2 us of
propagation and up to 0.33 us of serialisation to the RTT). The last two
rows keep htsim's default, 20 us + 3.05 us per hop, which on these fabrics
allows 20 us or more of queueing before STrack backs off.

Every transport starts with about one bandwidth-delay product:
28 segments on the leaf-spine (minimum RTT 8.8 us, 110 KB at 100 Gb/s)
and 43 on the fat-tree (14.0 us, 175 KB). STrack has no slow
start and htsim's STrack experiments start at about a BDP
(main_strack.cpp sets cwnd to 15 x 9000 B); giving the TCPs the same start
keeps the comparison about load balancing and control, not start-up.

**Workloads.** *Permutation*: every host sends 2 MB to another (a random
derangement drawn from the seed); at 100 Gb/s a flow needs 163 us, 18
round trips of the leaf-spine and 12 of the fat-tree, long enough for windows to settle and for
ECMP collisions to matter, short enough to keep a run near a second.
*Incast*: the 16 hosts under leaf 1 (leaf-spine) or in pod 1 (fat-tree)
each send 512 KB to host 0, so every byte crosses the top tier; the
8.2 MB need 666 us through host 0's 100 Gb/s link, so the outcome is decided by
congestion control over many round trips, not by the first windows alone
(16 x 28 x 4 KB = 1.8 MB already overflow the 1 MiB buffer).

**Metrics.** FCT runs from a flow's start (all start at 0) until its
receiver has the last byte; P50, P99 and max are nearest-rank over the 128
flows (16 for the incast). *Core utilisation* is, for each top-tier upward
link (leaf->spine, agg->core: 32 and 128 links), the bytes it transmitted
(data, ACKs and retransmissions, headers included) divided by what its rate
carries in the busy period, from 0 to the last completion; the tables give
the mean over those links and the least and most loaded link, so a small
spread is a balanced load. For the incast the table gives the same ratio for
the link into host 0 instead. Retransmissions count every resent packet; in
a run with no drops every retransmission was spurious.

**Failure.** The permutation again, with one top-tier link degraded to
25%% of its rate in both directions at 100 us (an impairment schedule; htsim's FatTreeTopology runs its failed core->agg
links at a tenth of their rate from the start). The link is the first of
leaf0's (agg0's) links to the top tier that carries a flow upward under
ECMP in the healthy permutation (its utilisation under DCTCP is at least
5%%; a link no flow hashes to carries only ACKs), so that the failure
touches ECMP's traffic; spraying uses every link, so the choice does not
favour STrack. The fabric is driven in
10 us steps and the bytes each link sent are read from its counters. The
*group* is the lower switch's links to the top tier; a share is the
degraded link's part of the bytes the group sent in one direction (up: from
leaf0/agg0, down: towards it), before and after the degradation. A
transport that steers away from the link lowers its share after; ECMP
cannot move a flow.

**Seeds.** Seed 1 for every table and figure; seeds 1-%d for the spread.
The seed draws the permutation and STrack's random entropy choices (paths
reuse); switches' hash salts depend only on the switch.
`

const spWhy = `
## Why STrack behaves as it does here

Read with hostsim/pathmgr.go, cc/strack.go and the tables below.

- Spraying sends a flow's packets over paths whose queues differ, so they
  arrive out of order. STrack's receiver answers every out-of-order arrival
  with a NACK bitmap, and the sender resends a hole as soon as a packet
  sent after it has arrived (reo_wnd 0, the published behaviour): under
  spraying many of these resends are spurious (the retransmission counts
  with no drops). They cost bandwidth but not window: losses found by NACKs
  do not cut the window, which follows the RTT against its target.
- A degraded link makes every path through it slower (a 4 KB packet takes
  four times as long to serialise), so its queue and its RTTs grow, the
  flows that spray over it see their RTT above target and cut, and the
  link marks: the path manager has marks to steer by. Paths skip passes a
  marked entropy over ceil(cwnd/N) turns of N = 256 entropies, about one
  round trip; with 64 entropies per spine, one mark moves little traffic,
  many marks move more. Paths reuse sends on the entropy of the most
  recent unmarked ACK: the paths whose ACKs come back soonest win, so it
  drifts off a slow path even before the path marks.
- With htsim's default target, STrack lets queues grow to 20 us or more
  before it backs off, so its FCTs are longer and the degraded link's
  queue is deeper.
`

const spNotes = `
## Notes

- Raw data: spraying/fct.csv (every flow of every run, seeds included) and
  spraying/utilisation.csv (every top-tier uplink, seed 1).
- ECN marks are counted at switch ports; Reno's packets are not ECN-capable,
  so it has none.
- STrack as htsim PR #4 runs it (transport.strack.variant: htsim-pr4,
  docs/decisions.md): window control off, its window stays the initial
  window, which here fits the permutation's paths without a drop; under
  the incast it recovers by timeout only, each loss waiting for its 1 ms
  RTO (doubled at every further expiry) and go-back-N resending from the
  first hole. With window control on, the per-ACK rules (the 24 us target,
  the 0.98 decay) keep the window at or below the initial window, its
  maximum, and the permutations run slower.
- Under ECMP, which top-tier links carry a flow depends on the hash of its
  5-tuple; a link no flow hashes to carries ACKs only, which is why ECMP's
  least loaded link is near 0%.
`
