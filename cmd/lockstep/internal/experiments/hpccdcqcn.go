package experiments

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/internal/yamlx"
	"github.com/lockstep-sim/lockstep/plot"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// The HPCC vs DCQCN experiment (docs/experiments/hpcc_dcqcn.md): the FCT
// slowdown by flow size of HPCC, DCQCN and DCQCN+w on web-search traffic
// at 30% and 50% load, in the style of the HPCC paper's Fig. 11 (Li et
// al., SIGCOMM 2019, §5.3): flows sorted by size and cut into 20 groups
// of 5% of the flows each, the median, 95th and 99th percentile slowdown
// of each group at the group's largest size (the authors'
// analysis/fct_analysis.py in alibaba-edu/High-Precision-Congestion-
// Control). The fabric is examples/hpcc-websearch.yaml; every parameter
// is the paper's or its simulator's (run.py), see hdVariants.

// hdScale is the experiment's size (Env.Quick shrinks it).
type hdScale struct {
	flows int // flows per run
}

var (
	hdFull  = hdScale{flows: 4000}
	hdQuick = hdScale{flows: 20}
	hdLoads = []float64{0.3, 0.5}
)

// hdGroups is the number of flow-size groups (fct_analysis.py's step of
// 5%).
const hdGroups = 20

// hdVariant is one congestion control of the comparison. t is the
// largest base RTT of the fabric, which the authors' ns-3 uses as every
// flow's T (GLOBAL_T 1) and for the window of DCQCN+w (maxBdp).
type hdVariant struct {
	label, name string
	mutate      func(s *scenario.Scenario, t sim.Time)
}

var hdVariants = []hdVariant{
	{"HPCC", "hpcc", func(s *scenario.Scenario, t sim.Time) {
		// η = 95% (§5.1), maxStage = 0 (the simulations'; the paper's 5
		// is a typo for them), W_AI = 0.04% of W_init (run.py's RATE_AI
		// of 10·bw/25 Mb/s), minimum rate 1 Gb/s (MIN_RATE): the defaults
		// but T; on the RDMA NIC model, as ns-3 runs it (nic_scheduled).
		s.Transport.Options = map[string]string{"eta": "0.95", "max_stage": "0", "nic_scheduled": "true",
			"base_rtt_us": strconv.FormatFloat(float64(t)/float64(sim.Microsecond), 'f', -1, 64)}
	}},
	{"DCQCN", "dcqcn", func(s *scenario.Scenario, _ sim.Time) {
		// run.py `dcqcn`: the Mellanox model (cc.DCQCNHPCC).
		s.Transport.CC, s.Transport.ECN = "dcqcn", true
		s.Transport.Options = map[string]string{"profile": "hpcc"}
	}},
	{"DCQCN+w", "dcqcn-w", func(s *scenario.Scenario, t sim.Time) {
		// run.py `dcqcn_vwin`: the same with a window of maxBdp scaled by
		// the rate (HAS_WIN 1, VAR_WIN 1).
		s.Transport.CC, s.Transport.ECN = "dcqcn", true
		s.Transport.Options = map[string]string{"profile": "hpcc", "window": "rate",
			"window_rtt": fmt.Sprintf("%dps", int64(t))}
	}},
}

// hdRun is one variant at one load.
type hdRun struct {
	v    hdVariant
	load float64
	// Per flow, in flow order: size, and the slowdown as the paper
	// computes it (NaN: unfinished) and as fct.csv does.
	sizes      []int64
	sd, sdOurs []float64
	unfinished int
	events     uint64
	pauses     uint64 // PAUSE frames the switches sent
	cnps       uint64
	marks      uint64
	peakQueue  int64 // bytes, the largest of any switch port
	end        sim.Time
}

// hdGroup is one flow-size group of one run: the group's largest size and
// the median, 95th and 99th percentile slowdowns.
type hdGroup struct {
	size          int64
	p50, p95, p99 float64
}

// hdMaxRTT is the largest base RTT of the fabric (the ns-3 simulator's
// maxRtt): that of a flow between two leaves, as the fabric computes it.
func hdMaxRTT(env *Env) (sim.Time, error) {
	f, err := fabricVariant(env, "hpcc-websearch.yaml", func(s *scenario.Scenario) {
		s.Workload = []scenario.Workload{{Type: "flows", Flows: []scenario.FlowEntry{
			{Src: 0, Dst: s.Topology.LeafSpine.Leaves*s.Topology.LeafSpine.HostsPerLeaf - 1, Size: 1000}}}}
	})
	if err != nil {
		return 0, err
	}
	return f.Transport().Sender(0).Spec().BaseRTT, nil
}

// hdRunOne runs one variant at one load.
func hdRunOne(env *Env, v hdVariant, load float64, sc hdScale, t sim.Time) (*hdRun, error) {
	b, err := builtVariant(env, "hpcc-websearch.yaml", func(s *scenario.Scenario) {
		v.mutate(s, t)
		w := &s.Workload[0]
		w.Load, w.MaxFlows = load, sc.flows
		w.Duration = yamlx.Duration(sim.Second) // max_flows ends the arrivals
	})
	if err != nil {
		return nil, err
	}
	r, err := runner.Run(b, runner.Options{})
	if err != nil {
		return nil, err
	}
	run := &hdRun{v: v, load: load, events: r.Summary().Events,
		marks: r.Summary().Marks, cnps: r.Fabric.Transport().Rate.CNPs, end: r.End}
	ackBack, err := hdAckIdeal(b)
	if err != nil {
		return nil, err
	}
	for i, rec := range r.Records {
		f := &b.Fabric.Flows[i]
		run.sizes = append(run.sizes, f.Size)
		if !rec.Finished || rec.AckedAt == 0 {
			run.unfinished++
			run.sd, run.sdOurs = append(run.sd, math.NaN()), append(run.sdOurs, math.NaN())
			continue
		}
		// The paper's slowdown: FCT until the sender has every ACK, over
		// the flow alone with basic headers, its last byte's ACK included.
		run.sd = append(run.sd, float64(rec.AckedAt-f.Start)/float64(r.Ideal[i]+ackBack[i]))
		run.sdOurs = append(run.sdOurs, results.Slowdown(rec.Finish-f.Start, r.Ideal[i]))
	}
	for n := 0; n < r.Fabric.NumNodes(); n++ {
		if s := r.Fabric.Switch(n); s != nil {
			run.pauses += s.CtlCreated
		}
	}
	for _, p := range r.Ports {
		run.peakQueue = max(run.peakQueue, p.PeakBytes)
	}
	return run, nil
}

// hdAckIdeal is, per flow, the time an ACK alone takes back from the
// receiver to the sender on the empty fabric (IdealFCT of one packet of
// ack_size bytes on the reverse path).
func hdAckIdeal(b *scenario.Built) ([]sim.Time, error) {
	cfg := b.Fabric.Transport
	if cfg.AckSize <= cfg.Header {
		return nil, fmt.Errorf("hpcc-dcqcn: ack_size %d must exceed header %d", cfg.AckSize, cfg.Header)
	}
	back := make([]hostsim.FlowSpec, len(b.Fabric.Flows))
	for i, f := range b.Fabric.Flows {
		back[i] = hostsim.FlowSpec{ID: f.ID, Src: f.Dst, Dst: f.Src, Size: cfg.AckSize - cfg.Header}
	}
	return results.IdealFCT(b.Topo, cfg, back), nil
}

// hdPctl is fct_analysis.py's percentile of sorted values: the one at
// index ⌊n·p⌋.
func hdPctl(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return sorted[min(int(float64(len(sorted))*p), len(sorted)-1)]
}

// hdOrder is the flows' order by size (ties by index): the same for every
// variant at one load, since the flows are.
func hdOrder(sizes []int64) []int {
	idx := make([]int, len(sizes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return int(sizes[a] - sizes[b]) })
	return idx
}

// hdGroupsOf cuts the flows, in size order, into hdGroups groups as
// fct_analysis.py does (group i is flows [i·n/20, (i+1)·n/20)), leaving
// out unfinished flows.
func hdGroupsOf(r *hdRun) []hdGroup {
	order := hdOrder(r.sizes)
	n := len(order)
	var gs []hdGroup
	for i := range hdGroups {
		lo, hi := i*n/hdGroups, (i+1)*n/hdGroups
		if hi <= lo {
			continue
		}
		var sd []float64
		for _, k := range order[lo:hi] {
			if !math.IsNaN(r.sd[k]) {
				sd = append(sd, r.sd[k])
			}
		}
		slices.Sort(sd)
		gs = append(gs, hdGroup{size: r.sizes[order[hi-1]], p50: hdPctl(sd, 0.5), p95: hdPctl(sd, 0.95), p99: hdPctl(sd, 0.99)})
	}
	return gs
}

// hdPooled is the percentiles of the slowdowns (the paper's, or ours) of
// the finished flows with size in [lo, hi).
func hdPooled(r *hdRun, ours bool, lo, hi int64) (p50, p95, p99 float64, n int) {
	var sd []float64
	for i, s := range r.sizes {
		x := r.sd[i]
		if ours {
			x = r.sdOurs[i]
		}
		if s >= lo && s < hi && !math.IsNaN(x) {
			sd = append(sd, x)
		}
	}
	slices.Sort(sd)
	return hdPctl(sd, 0.5), hdPctl(sd, 0.95), hdPctl(sd, 0.99), len(sd)
}

// hpccDCQCN runs the experiment and writes hpcc_dcqcn.md and hpcc_dcqcn/.
func hpccDCQCN(env *Env) error {
	sc := hdFull
	if env.Quick {
		sc = hdQuick
	}
	t, err := hdMaxRTT(env)
	if err != nil {
		return err
	}
	// Each variant's loads run side by side (one run per core of the
	// 2-core machines this is written for); a variant's events per user-CPU
	// second are over its runs together.
	runs := make([][]*hdRun, len(hdLoads)) // by load, then variant
	for li := range runs {
		runs[li] = make([]*hdRun, len(hdVariants))
	}
	cpu := make([]float64, len(hdVariants))
	for vi, v := range hdVariants {
		env.logf("hpcc-dcqcn: %s at %s%% load, %d flows each", v.label, hdLoadNames(), sc.flows)
		errs := make([]error, len(hdLoads))
		t0 := userCPU()
		var wg sync.WaitGroup
		for li, load := range hdLoads {
			wg.Go(func() { runs[li][vi], errs[li] = hdRunOne(env, v, load, sc, t) })
		}
		wg.Wait()
		cpu[vi] = userCPU() - t0
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("%s: %w", v.label, err)
		}
	}
	dir := filepath.Join(env.Out, hpccDCQCNFile)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := hdFigures(dir, runs); err != nil {
		return err
	}
	if err := writeFile(dir, "groups.csv", hdCSV(runs)); err != nil {
		return err
	}
	return writeFile(env.Out, hpccDCQCNFile+".md", hdReport(runs, cpu, sc, t))
}

// hdLoadNames is the loads in percent, "30% and 50".
func hdLoadNames() string {
	var ns []string
	for _, l := range hdLoads {
		ns = append(ns, strconv.Itoa(int(math.Round(100*l))))
	}
	return strings.Join(ns, "% and ")
}

var hdPctls = []struct {
	name, label string
	get         func(hdGroup) float64
}{
	{"p50", "median", func(g hdGroup) float64 { return g.p50 }},
	{"p95", "95th percentile", func(g hdGroup) float64 { return g.p95 }},
	{"p99", "99th percentile", func(g hdGroup) float64 { return g.p99 }},
}

func hdFigures(dir string, runs [][]*hdRun) error {
	for li, row := range runs {
		load := int(math.Round(100 * hdLoads[li]))
		for _, pc := range hdPctls {
			var ss []plot.Series
			for _, r := range row {
				s := plot.Series{Name: r.v.label}
				for _, g := range hdGroupsOf(r) {
					if !math.IsNaN(pc.get(g)) {
						s.Points = append(s.Points, plot.Point{X: float64(g.size), Y: pc.get(g)})
					}
				}
				ss = append(ss, s)
			}
			name := fmt.Sprintf("websearch%d_%s", load, pc.name)
			f, err := plot.Lines(name, fmt.Sprintf("WebSearch, %d%% load: %s FCT slowdown", load, pc.label),
				"flow size (bytes; each point: the largest of 5% of the flows)", "FCT slowdown", ss,
				plot.LineOptions{LogX: true, LogY: true, SIX: true})
			if err != nil {
				return err
			}
			err = results.WriteFileAtomic(filepath.Join(dir, name+".png"), func(w io.Writer) error { return f.Encode(w, "png") })
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func hdCSV(runs [][]*hdRun) string {
	var b strings.Builder
	b.WriteString("load,cc,group,max_size_bytes,p50,p95,p99\n")
	for _, row := range runs {
		for _, r := range row {
			for gi, g := range hdGroupsOf(r) {
				fmt.Fprintf(&b, "%.2f,%s,%d,%d,%.4f,%.4f,%.4f\n", r.load, r.v.name, gi+1, g.size, g.p50, g.p95, g.p99)
			}
		}
	}
	return b.String()
}

// hdShort is the size below which a flow is short: the authors' page says
// HPCC's gain is for flows under 200 KB (hpcc-group.github.io results).
const hdShort = 200_000

func hdReport(runs [][]*hdRun, cpu []float64, sc hdScale, t sim.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# HPCC vs DCQCN: FCT slowdown by flow size on WebSearch

`+"`lockstep experiment hpcc-dcqcn`"+` runs HPCC (cc/hpcc.go), DCQCN and DCQCN+w
(cc/dcqcn.go) on web-search traffic at 30%% and 50%% load and draws the FCT
slowdown by flow size as the HPCC paper's Fig. 11 does (Li et al., "HPCC:
High Precision Congestion Control", SIGCOMM 2019, §5.3).

**Setting** (examples/hpcc-websearch.yaml). The paper's §5.1 simulations
use a 320-host fat-tree (16 hosts per ToR at 100 Gb/s, 400 Gb/s above, 1 µs
per link, a 12 µs largest base RTT). Scaled to what runs on 2 cores: a
leaf-spine of 4 leaves and 4 spines, 16 hosts per leaf at 100 Gb/s and
400 Gb/s leaf-spine links (each leaf is the paper's ToR, 1.6 Tb/s down and
up), 1 µs per link: 64 hosts, a largest base RTT of %.2f µs (two tiers,
not three). 1000-byte payloads with 50-byte headers and 60-byte ACKs; a
PFC-lossless data class (XOFF 4 MB, about the authors' dynamic threshold,
1/8 of a mostly free 32 MB buffer). Poisson arrivals between random hosts
at 30%% or 50%% of the hosts' capacity in payload bytes (the authors'
definition of load), sizes from the DCTCP web-search distribution
(examples/workloads/websearch.cdf), %d flows per run, every flow run to
completion. The same flows for every variant at a load.

**Parameters** (the paper's, and its simulator's run.py where the paper
gives none):
- HPCC: η = 95%%, maxStage = 0, W_AI = 40 Mb/s × T, T = the largest base
  RTT for every flow (ns-3 GLOBAL_T), minimum rate 1 Gb/s; INT on every
  data packet (2 + 8 bytes per hop); ACKs in the data class.
- DCQCN: `+"`profile: hpcc`"+`, the authors' ns-3 model of the Mellanox NIC: α
  every 1 µs with g = 1/256, cuts on a 4 µs grid, a 300 µs timer, no byte
  counter, F = 1, R_AI = 20 Mb/s, R_HAI = 200 Mb/s, minimum rate 1 Gb/s, a
  CNP for every marked packet; RED marking at dequeue with Kmin = 400 KB,
  Kmax = 1600 KB, Pmax = 20%% at 100 Gb/s ports (1600 KB, 6400 KB at
  400 Gb/s: run.py's 100 KB and 400 KB per 25 Gb/s); ACKs and CNPs in a
  strict high class.
- DCQCN+w: the same with the window of the paper's DCQCN+w, BDP × Rc/B
  (run.py `+"`dcqcn_vwin`"+`: T the largest base RTT); ACKs in the data class.

**Slowdown** is the paper's: FCT until the sender has the last ACK, over
the FCT of the flow alone with basic headers (lockstep's exact ideal, plus
the return of one ACK). Flows are sorted by size and cut into 20 groups of
5%% of the flows; each point is a group's median, 95th or 99th percentile
(the value at index ⌊n·p⌋, as the authors' fct_analysis.py takes it) at
the group's largest size. (fct.csv's slowdown is one-way: the last byte's
arrival over the ideal one-way FCT; the summary table gives both.)

`, float64(t)/float64(sim.Microsecond), sc.flows)
	for li, row := range runs {
		load := int(math.Round(100 * hdLoads[li]))
		fmt.Fprintf(&b, "## %d%% load\n\n", load)
		for _, pc := range hdPctls {
			fmt.Fprintf(&b, "![%d%% load, %s](hpcc_dcqcn/websearch%d_%s.png)\n\n", load, pc.label, load, pc.name)
		}
		b.WriteString("Slowdown by flow-size group (each row 5% of the flows; size: the group's largest):\n\n| size (bytes) |")
		for _, r := range row {
			fmt.Fprintf(&b, " %s p50 | p95 | p99 |", r.v.label)
		}
		b.WriteString("\n|---|")
		for range row {
			b.WriteString("---|---|---|")
		}
		b.WriteString("\n")
		groups := make([][]hdGroup, len(row))
		for i, r := range row {
			groups[i] = hdGroupsOf(r)
		}
		for gi := range groups[0] {
			fmt.Fprintf(&b, "| %s |", hdSize(groups[0][gi].size))
			for i := range row {
				g := groups[i][gi]
				fmt.Fprintf(&b, " %.2f | %.2f | %.2f |", g.p50, g.p95, g.p99)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	b.WriteString(`## Summary

Short flows are those under 200 KB, long ones 1 MB and more. "ours" is
fct.csv's one-way slowdown. PAUSEs are the frames the switches sent.

| load | cc | short p50 | short p95 | short p99 | short p99 (ours) | long p50 | long p99 | all p99 | unfinished | PAUSEs | CNPs | ECN marks | peak port queue (KB) | events (M) |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
`)
	for _, row := range runs {
		for _, r := range row {
			s50, s95, s99, _ := hdPooled(r, false, 0, hdShort)
			_, _, o99, _ := hdPooled(r, true, 0, hdShort)
			l50, _, l99, _ := hdPooled(r, false, 1_000_000, math.MaxInt64)
			_, _, a99, _ := hdPooled(r, false, 0, math.MaxInt64)
			fmt.Fprintf(&b, "| %.0f%% | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %d | %d | %d | %d | %.0f | %.1f |\n",
				100*r.load, r.v.label, s50, s95, s99, o99, l50, l99, a99, r.unfinished, r.pauses, r.cnps, r.marks,
				float64(r.peakQueue)/1e3, float64(r.events)/1e6)
		}
	}
	b.WriteString("\nSimulation speed (this machine's, not part of the result): each cc's runs at both loads, side by side, in user CPU seconds of the process (getrusage).\n\n| cc | events (M) | user CPU (s) | events per user-CPU second (M) |\n|---|---|---|---|\n")
	for vi, v := range hdVariants {
		var ev uint64
		for _, row := range runs {
			ev += row[vi].events
		}
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.2f |\n", v.label, float64(ev)/1e6, cpu[vi], float64(ev)/1e6/max(cpu[vi], 1e-9))
	}
	b.WriteString("\nRatios of DCQCN's and DCQCN+w's slowdown to HPCC's, short flows:\n\n| load | DCQCN/HPCC p50 | p95 | p99 | DCQCN+w/HPCC p50 | p95 | p99 |\n|---|---|---|---|---|---|---|\n")
	for _, row := range runs {
		h50, h95, h99, _ := hdPooled(row[0], false, 0, hdShort)
		fmt.Fprintf(&b, "| %.0f%% |", 100*row[0].load)
		for _, r := range row[1:] {
			d50, d95, d99, _ := hdPooled(r, false, 0, hdShort)
			fmt.Fprintf(&b, " %.2f | %.2f | %.2f |", d50/h50, d95/h95, d99/h99)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	b.WriteString(hdDiscussion)
	b.WriteString("\nData: `hpcc_dcqcn/groups.csv` (every group's largest size and percentiles, per load and cc).\n")
	return b.String()
}

// hdSize writes a size as the paper's axis does: 3.3K, 1.1M.
func hdSize(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	case n >= 1000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "K"
	}
	return strconv.FormatInt(n, 10)
}

// hdDiscussion is the reading of the full run's numbers
// (docs/experiments/hpcc_dcqcn.md).
const hdDiscussion = `## Reading (numbers of the full run)

**What the paper's figures say, and what could be checked.** The values
plotted in the paper's Fig. 11 could not be read here: the stored copies
of the paper hold its first page only. So the comparison is with what the
paper and its authors state in words: the abstract ("compared to DCQCN
and TIMELY, HPCC shortens flow completion times by up to 95%"), and the
authors' page of complete results for the same simulation setting
(hpcc-group.github.io, results.md, with η = 99% there): HPCC "significantly
improves the FCT for flows < 200KB, especially at the tail"; at 30% load
"50-th percentile FCT are similar across different schemes", at 50%
"HPCC improves the short flows FCT even at 50-th percentile"; HPCC (with
INT) "has longer FCT for long flows" than the +w schemes, which keep
buffers occupied; DCQCN+w is "much better" than DCQCN. Each holds here:

- *Short flows, the tail.* Flows under 200 KB at 30% load: 99th
  percentile slowdown 2.66 with HPCC, 9.41 with DCQCN (3.5 times), 4.99
  with DCQCN+w (1.9 times); at 50%: 3.78, 13.73 (3.6 times), 7.25 (1.9
  times). By group the gap is widest for the smallest flows: for flows of
  at most 10 KB HPCC's 99th percentile is 1.5-1.7 at 30% and 1.9-2.3 at
  50%, DCQCN's 11-17 and 16-23: up to 10.4 times (group of 9.9 KB at 30%)
  and 12.1 times (3.3 KB at 50%), an FCT 90% and 92% shorter, against
  the abstract's "up to 95%". Against DCQCN+w the largest gap is 5.0 times
  (80%).
- *Short flows, the median.* At 30% the medians are within 7% of each
  other (1.11, 1.15, 1.19); at 50% HPCC's is lower (1.30 against 1.60 and
  1.79).
- *Long flows* (1 MB and more). HPCC's median matches DCQCN+w's (1.92 and
  1.94 at 30%, 2.75 and 2.89 at 50%) and its 99th percentile is worse
  (6.18 against 5.13, 9.95 against 9.02); DCQCN without a window is the
  slowest at the median (2.21, 3.27).
- *DCQCN+w against DCQCN:* the 99th percentile of short flows halves
  (9.41 to 4.99 at 30%, 13.73 to 7.25 at 50%).

**The mechanisms.**
- *DCQCN* marks nothing below Kmin = 400 KB at a 100 Gb/s port (32 µs of
  queue, about four base RTTs) and every packet only above Kmax = 1.6 MB
  (128 µs). Without a window its flows send at line rate until the queue
  is past Kmin, so queues of hundreds of KB are common (peak 2.0 MB at
  30%, 2.4 MB at 50%; 27253 and 62371 CNPs): a one-packet flow behind
  400 KB has a slowdown of about 1 + 32/8.6 = 4.7, behind 1.2 MB about 12,
  the range of DCQCN's short-flow tail. Its ACK waits too, since ACKs share
  the data class on the way back (as in the authors' simulator).
- *DCQCN+w* caps each flow at Rc·T, one BDP (104 KB) at line rate, so a
  port's queue is at most about one BDP per flow beyond those that fill
  its link: peaks of 538 KB and 985 KB, rarely above Kmin (93 and 1197
  CNPs). The queue is smaller but, being mostly unmarked, it lasts: the
  short-flow tail is half DCQCN's and still about twice HPCC's.
- *HPCC* holds each port near η = 95% with little queue (peaks of 199 KB
  and 210 KB). What remains is the first RTT of new flows, which start at
  line rate with W_init = B·T = 104 KB: two meeting at a receiver queue up
  to about one W_init (8 µs) until the first INT feedback, which puts the
  smallest flows' 99th percentile near 1.5-2. Flows of a few BDPs see
  more of it (the 99th percentile is 2.8-5.4 between 100 KB and 1 MB at
  30%).
  For long flows HPCC pays its 5% headroom and its INT bytes (2 + 8 per
  hop, up to 2.5% of a 1050-byte packet), which is why it does not beat
  DCQCN+w there.

**Where ours differs from the paper's setting, and what it changes.**
- *Two tiers, 64 hosts* instead of a three-tier fat-tree of 320: the
  largest base RTT is 8.4 µs, not 12 µs, so W_init and the first-RTT
  queue of HPCC are 30% smaller, and a one-packet flow's ideal is shorter,
  which makes a given queue a larger slowdown for every scheme.
- *Fewer flows:* 4000 per run, 200 per group, so a group's 99th
  percentile is its second largest value; the paper's runs are longer.
- *INT bytes:* lockstep counts 2 bytes plus 8 per hop (at most 26 bytes
  here); the authors' simulator carries a fixed INT header of about 42
  bytes, so its HPCC pays more on long flows (their page calls it "~5%").
- *CNPs* are separate ACK-sized packets here, flags on ACKs there; PFC
  thresholds are static here (4 MB), dynamic there; no run sent a PAUSE,
  so neither matters for these numbers.
- *The slowdown's definition:* fct.csv's one-way slowdown (the last
  byte's arrival over the one-way ideal, half an RTT shorter) gives 18-32%
  larger 99th percentiles of short flows for the same runs (the "ours"
  column), so the comparison uses the paper's definition.
`
