package experiments

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/internal/yamlx"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// hsRow is one line of the HyStart table: a variant, paced or not.
type hsRow struct {
	label, hystart string
	paced          bool
	// hz > 0: a 2.6.29-2.6.38 sender (hsKernel2011): linux-2008 on the
	// jiffies clock of this HZ.
	hz int
	// ackEvery > 0 replaces the receivers' delayed-ACK count (1: an ACK
	// per segment).
	ackEvery int
}

var hsRows = []hsRow{
	{label: "off", hystart: "off", paced: false},
	{label: "linux-2008", hystart: "linux-2008", paced: false},
	{label: "proposal-2011", hystart: "proposal-2011", paced: false},
	{label: "linux-2011", hystart: "linux-2011", paced: false},
	{label: "linux-2014", hystart: "linux-2014", paced: false},
	{label: "linux", hystart: "linux", paced: false},
	{label: "hystart++", hystart: "hystart++", paced: false},
	{label: "linux, paced", hystart: "linux", paced: true},
	{label: "hystart++, paced", hystart: "hystart++", paced: true},
}

// The setup of examples/hystart.yaml, which the analysis needs.
const (
	hsLinkRate = 1e9                     // bits/s of the bottleneck
	hsRTT      = 11300 * sim.Microsecond // the path's propagation RTT
	hsStep     = 100 * sim.Microsecond   // sampling period of the driver
	hsPlotEnd  = 3 * sim.Second          // the cwnd figure's span
	hsZoomEnd  = 400 * sim.Millisecond   // the zoomed cwnd figure's span
)

// hsResult is what one run of one variant measured.
type hsResult struct {
	exitCwnd   float64  // packets at the end of slow start (before a loss cut)
	exitReason string   // ack-train, delay, loss, rto, css-exit
	exitAt     sim.Time // when slow start ended (sim.Never: not by the end)
	cssCwnd    float64  // hystart++: packets at CSS entry
	cssAt      sim.Time // sim.Never: no CSS
	dropCwnd   float64  // packets when the bottleneck first dropped
	dropAt     sim.Time // sim.Never: no drop
	t90        sim.Time // end of the first one-RTT window at >= 90% of the link rate
	peakCwnd   float64  // largest cwnd before the first loss was detected, packets
	drops      uint64   // bottleneck drops over the run
	retx       uint64
	timeouts   uint64
	end        sim.Time
	// Series for the figures, one point per millisecond up to hsPlotEnd.
	ts, cwnd, rate []float64 // s, packets, Gb/s over the last RTT
}

// hsOpts are the knobs of one run.
type hsOpts struct {
	start   sim.Time // the flow's start (the seeds' phase)
	horizon sim.Time // the run ends here at the latest
	buffer  int64    // the bottleneck buffer in bytes (0: the example's)
	// series keeps running to hsPlotEnd for the figures; otherwise the run
	// stops once slow start ended, the link was at 90% and it dropped.
	series bool
	// mutate, if set, changes the scenario last (tests and checks).
	mutate func(*scenario.Scenario)
}

// hsRun runs one variant.
func hsRun(env *Env, row hsRow, o hsOpts) (*hsResult, error) {
	b, err := builtVariant(env, "hystart.yaml", func(s *scenario.Scenario) {
		s.Transport.Options = map[string]string{"hystart": row.hystart}
		s.Transport.Pacing = nil
		if row.paced {
			s.Transport.Pacing = &scenario.Pacing{}
		}
		if row.hz > 0 {
			hsKernel2011(s, row.hz)
		}
		if row.ackEvery > 0 {
			s.Transport.DelayedAck.Count = row.ackEvery
		}
		s.Workload[0].Flows[0].Start = yamlx.Duration(o.start)
		if o.buffer > 0 {
			s.Topology.Graph.Defaults.Buffer = yamlx.Size(o.buffer)
		}
		// Every change of cwnd, so the window just before a loss cut is
		// known exactly; the driver consumes the rows as they come.
		s.Output.Cwnd = &scenario.CwndOutput{Flows: []int32{0}}
		if o.mutate != nil {
			o.mutate(s)
		}
	})
	if err != nil {
		return nil, err
	}
	f, err := fabric.New(b.Fabric)
	if err != nil {
		return nil, err
	}
	tc := &b.Fabric.Transport
	mss, mtu := float64(tc.CC.MSS), float64(tc.MTU)
	r := &hsResult{exitAt: sim.Never, cssAt: sim.Never, dropAt: sim.Never, t90: sim.Never}
	window := int(hsRTT / hsStep)
	var delivered []uint64 // bytes received at each step, from t = 0
	delivered = append(delivered, 0)
	var prev hostsim.CwndRow
	havePrev, lost := false, false
	snd := f.Transport().Sender(0)
	sw, port, err := portBetween(f, "nic", "left")
	if err != nil {
		return nil, err
	}
	bottleneck := &f.Switch(sw).Ports[port]
	var sent []uint64 // packets the bottleneck sent, at each step
	sent = append(sent, 0)
	for t := hsStep; t <= o.horizon; t += hsStep {
		f.RunUntil(t)
		for _, row := range f.Transport().CwndLog {
			hsScan(r, row, prev, havePrev, mss, &lost)
			prev, havePrev = row, true
		}
		f.Transport().CwndLog = f.Transport().CwndLog[:0]
		if r.dropAt == sim.Never && hsDrops(f) > 0 {
			r.dropAt, r.dropCwnd = t-o.start, float64(snd.Cwnd())/mss
		}
		delivered = append(delivered, f.Transport().Records[0].BytesReceived)
		sent = append(sent, bottleneck.TxPackets)
		n := len(delivered) - 1
		if n >= window {
			bits := float64(delivered[n]-delivered[n-window]) * mtu / mss * 8
			if r.t90 == sim.Never && bits/hsRTT.Seconds() >= 0.9*hsLinkRate {
				r.t90 = t - o.start
			}
		}
		if t%sim.Millisecond == 0 && t <= hsPlotEnd {
			// The figure shows what the bottleneck sends: the in-order
			// delivered rate spikes whenever a retransmission fills a hole.
			rate := 0.0
			if n >= window {
				rate = float64(sent[n]-sent[n-window]) * mtu * 8 / hsRTT.Seconds()
			}
			r.ts = append(r.ts, t.Seconds())
			r.cwnd = append(r.cwnd, float64(snd.Cwnd())/mss)
			r.rate = append(r.rate, rate/1e9)
		}
		r.end = t
		if r.t90 != sim.Never && r.exitAt != sim.Never && r.dropAt != sim.Never && (!o.series || t >= hsPlotEnd) {
			break
		}
	}
	rec := &f.Transport().Records[0]
	r.retx, r.timeouts, r.drops = rec.Retransmits, rec.Timeouts, hsDrops(f)
	if r.exitAt != sim.Never {
		r.exitAt -= o.start
	}
	if r.cssAt != sim.Never {
		r.cssAt -= o.start
	}
	return r, nil
}

// hsKernel2011 makes the sender a 2.6.29-2.6.38 kernel built with the
// given HZ: HyStart linux-2008 on jiffies (cc/jiffies.go), slow start by one
// packet per ACK (tcp_slow_start with the default tcp_abc = 0), and the
// initial window of RFC 3390 that tcp_init_cwnd computed before 2.6.39, 3
// segments of 1448 bytes; receivers with 2 quick ACKs at the start
// (tcp_incr_quickack: the initial receive window of 4 MSS from
// tcp_select_initial_window, over 2 MSS).
func hsKernel2011(s *scenario.Scenario, hz int) {
	s.Transport.Options = map[string]string{"hystart": "linux-2008",
		"hystart_hz": fmt.Sprint(hz), "slow_start": "per-ack"}
	s.Transport.InitCwnd = 3
	s.Transport.DelayedAck.QuickAcks = 2
}

// hsReason maps Cubic's slow-start exit reasons to the report's words.
func hsReason(r string) string {
	switch r {
	case "hystart-ack-train":
		return "ack-train"
	case "hystart-delay":
		return "delay"
	}
	return r
}

// hsDrops counts the packets every switch port dropped so far.
func hsDrops(f *fabric.Fabric) uint64 {
	var n uint64
	for i := range f.NumNodes() {
		s := f.Switch(i)
		if s == nil {
			continue
		}
		for i := range s.Ports {
			n += s.Ports[i].Dropped
		}
	}
	return n
}

// hsScan updates r with one cwnd.csv row; prev is the row before it.
func hsScan(r *hsResult, row, prev hostsim.CwndRow, havePrev bool, mss float64, lost *bool) {
	cwnd := float64(row.Cwnd) / mss
	loss := strings.Contains(row.Event, "fast-retransmit") || strings.Contains(row.Event, "rto")
	if !*lost {
		if loss {
			*lost = true
		} else {
			r.peakCwnd = max(r.peakCwnd, cwnd)
		}
	}
	if r.exitAt != sim.Never {
		return
	}
	switch row.State {
	case "slow-start":
		return
	case "conservative-slow-start":
		if r.cssAt == sim.Never {
			r.cssAt, r.cssCwnd = row.Time, cwnd
		}
		return
	}
	// Slow start (or CSS) ended on this row.
	r.exitAt = row.Time
	r.exitCwnd = cwnd
	switch {
	case loss:
		r.exitReason = "loss"
		if strings.Contains(row.Event, "rto") {
			r.exitReason = "rto"
		}
		if havePrev {
			r.exitCwnd = float64(prev.Cwnd) / mss // the window the loss cut
		}
	case strings.Contains(row.Event, "ss-exit:"):
		i := strings.Index(row.Event, "ss-exit:")
		r.exitReason = hsReason(strings.TrimSuffix(row.Event[i+len("ss-exit:"):], ";"))
	case r.cssAt != sim.Never:
		r.exitReason = "css-exit"
	default:
		r.exitReason = "?"
	}
}

// hsFill sets the discussion's placeholders from the seed-1 runs ("n/a"
// for rows a quick run skips).
func hsFill(fill map[string]string, first map[string]*hsResult) {
	get := func(label string, f func(r *hsResult) string) string {
		if r := first[label]; r != nil {
			return f(r)
		}
		return "n/a"
	}
	exit := func(r *hsResult) string { return fmt.Sprintf("%.0f", r.exitCwnd) }
	fill["{off.drop}"] = get("off", func(r *hsResult) string { return pktsOr(r.dropCwnd, r.dropAt, "none") })
	fill["{off.exit}"] = get("off", exit)
	fill["{off.cost}"] = get("off", func(r *hsResult) string {
		return fmt.Sprintf("%d drops, %d retransmissions and %d timeouts", r.drops, r.retx, r.timeouts)
	})
	fill["{prop.exit}"] = get("proposal-2011", exit)
	fill["{prop.reason}"] = get("proposal-2011", func(r *hsResult) string { return r.exitReason })
	fill["{linux.exit}"] = get("linux", exit)
	fill["{linuxp.exit}"] = get("linux, paced", exit)
	fill["{pp.css}"] = get("hystart++", func(r *hsResult) string { return pktsOr(r.cssCwnd, r.cssAt, "never") })
	fill["{ppp.css}"] = get("hystart++, paced", func(r *hsResult) string { return pktsOr(r.cssCwnd, r.cssAt, "never") })
	fill["{ppp.drop}"] = get("hystart++, paced", func(r *hsResult) string { return pktsOr(r.dropCwnd, r.dropAt, "none") })
	t90 := func(r *hsResult) string { return msOr(r.t90, "never") }
	fill["{t90}"] = get("linux", t90)
	fill["{t90p}"] = get("linux, paced", t90)
	if _, ok := fill["{2008.range}"]; !ok {
		fill["{2008.range}"] = "n/a"
	}
	for _, k := range []string{"{buf942.drop}", "{buf1256.drop}"} {
		if _, ok := fill[k]; !ok {
			fill[k] = "n/a"
		}
	}
}

// hsJitter is the start offset of seed s: 0 for seed 1, else uniform in
// [0, 1 ms) from the seed's own stream.
func hsJitter(s int) sim.Time {
	if s == 1 {
		return 0
	}
	rng := sim.NewRand(uint64(s), sim.StreamWorkload+777)
	return sim.Time(rng.Int64N(int64(sim.Millisecond)))
}

// hsBDP is the path's bandwidth-delay product in 1500-byte packets.
var hsBDP = hsLinkRate * hsRTT.Seconds() / 8 / 1500

func hyStart(env *Env) error {
	seeds := env.Seeds
	if seeds == 0 {
		seeds = 5
	}
	horizon := 30 * sim.Second
	rows := hsRows
	buffers := []float64{0.5, 1, 1256 / hsBDP} // in BDPs; the last is the example's
	if env.Quick {
		seeds, horizon = 2, 400*sim.Millisecond
		rows = []hsRow{hsRows[0], hsRows[1], hsRows[5]}
		buffers = buffers[2:]
	}
	dir := filepath.Join(env.Out, hyStartFile)
	var md, csv, series strings.Builder
	md.WriteString(hsIntro)
	md.WriteString("\n## Results (seed 1: the flow starts at t = 0)\n\n")
	md.WriteString("| variant | cwnd at slow-start exit (packets) | test that fired | exit at (ms) | CSS entry (packets at ms) | cwnd at first drop | peak cwnd before loss detected | time to 90% of 1 Gb/s (ms) | drops | retransmissions | timeouts |\n")
	md.WriteString("|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|\n")
	csv.WriteString("variant,seed,start_us,buffer_bytes,exit_cwnd_pkts,exit_reason,exit_ms,css_cwnd_pkts,css_ms,drop_cwnd_pkts,drop_ms,peak_cwnd_pkts,t90_ms,drops,retransmits,timeouts\n")
	series.WriteString("variant,time_s,cwnd_pkts,bottleneck_gbps\n")
	addCSV := func(label string, seed int, start sim.Time, buffer int64, r *hsResult) {
		fmt.Fprintf(&csv, "%s,%d,%.3f,%d,%.0f,%s,%s,%s,%s,%s,%s,%.0f,%s,%d,%d,%d\n", label, seed, start.Nanoseconds()/1e3, buffer,
			r.exitCwnd, r.exitReason, msOr(r.exitAt, ""), pktsOr(r.cssCwnd, r.cssAt, ""), msOr(r.cssAt, ""),
			pktsOr(r.dropCwnd, r.dropAt, ""), msOr(r.dropAt, ""), r.peakCwnd, msOr(r.t90, ""), r.drops, r.retx, r.timeouts)
	}
	var names []string
	var dashed []bool
	var xs, cw, rt, xs0, cw0 [][]float64
	first := map[string]*hsResult{} // seed 1 by label
	fill := map[string]string{}     // the discussion's placeholders
	spread := make([][]*hsResult, len(rows))
	for i, row := range rows {
		for s := 1; s <= seeds; s++ {
			env.logf("hystart: %s seed %d", row.label, s)
			start := hsJitter(s)
			r, err := hsRun(env, row, hsOpts{start: start, horizon: horizon, series: s == 1})
			if err != nil {
				return fmt.Errorf("%s seed %d: %w", row.label, s, err)
			}
			spread[i] = append(spread[i], r)
			addCSV(row.label, s, start, 0, r)
			if s != 1 {
				continue
			}
			css := "-"
			if r.cssAt != sim.Never {
				css = fmt.Sprintf("%.0f at %.1f", r.cssCwnd, r.cssAt.Seconds()*1e3)
			}
			fmt.Fprintf(&md, "| %s | %.0f | %s | %s | %s | %s | %.0f | %s | %d | %d | %d |\n", row.label,
				r.exitCwnd, orDash(r.exitReason), msOr(r.exitAt, "-"), css, pktsOr(r.dropCwnd, r.dropAt, "no drop"),
				r.peakCwnd, msOr(r.t90, fmt.Sprintf("> %.0f", r.end.Seconds()*1e3))+afterDrop(r), r.drops, r.retx, r.timeouts)
			first[row.label] = r
			names, dashed = append(names, row.label), append(dashed, row.paced)
			xs, cw, rt = append(xs, r.ts), append(cw, r.cwnd), append(rt, r.rate)
			k := min(len(r.ts), int(hsZoomEnd/sim.Millisecond))
			xs0, cw0 = append(xs0, r.ts[:k]), append(cw0, r.cwnd[:k])
			for j := range r.ts {
				fmt.Fprintf(&series, "%s,%.3f,%.1f,%.4f\n", row.label, r.ts[j], r.cwnd[j], r.rate[j])
			}
		}
	}
	fmt.Fprintf(&md, hsTableNotes, hsBDP, horizon.Seconds())

	fmt.Fprintf(&md, "\n## Over %d start phases (seeds)\n\n", seeds)
	md.WriteString(hsSeedsText)
	md.WriteString("| variant | exit cwnd min | median | max | tests that fired | time to 90% min (ms) | median | max |\n|---|---:|---:|---:|---|---:|---:|---:|\n")
	for i, row := range rows {
		if row.label == "linux-2008" {
			lo, hi := math.Inf(1), 0.0
			for _, r := range spread[i] {
				lo, hi = min(lo, r.exitCwnd), max(hi, r.exitCwnd)
			}
			fill["{2008.range}"] = fmt.Sprintf("%.0f-%.0f", lo, hi)
		}
		var cws, t90 []float64
		count := map[string]int{}
		for _, r := range spread[i] {
			cws = append(cws, r.exitCwnd)
			t90 = append(t90, math.Inf(1))
			if r.t90 != sim.Never {
				t90[len(t90)-1] = r.t90.Seconds() * 1e3
			}
			count[orDash(r.exitReason)]++
		}
		var fired []string
		for _, k := range sortedKeys(count) {
			fired = append(fired, fmt.Sprintf("%s ×%d", k, count[k]))
		}
		fmt.Fprintf(&md, "| %s | %.0f | %.0f | %.0f | %s | %s | %s | %s |\n", row.label,
			percentile(cws, 1), percentile(cws, 50), percentile(cws, 100), strings.Join(fired, ", "),
			fms(percentile(t90, 1)), fms(percentile(t90, 50)), fms(percentile(t90, 100)))
	}

	hzRes, err := hyStartHZ(env, dir, horizon, &md, &csv, addCSV)
	if err != nil {
		return err
	}
	hsHZFill(fill, hzRes)

	md.WriteString("\n## How the buffer was chosen\n\n")
	bufferTable := len(md.String())
	md.WriteString(hsBufferText)
	md.WriteString("| buffer (BDP) | buffer (packets) | variant | cwnd at first drop | cwnd at slow-start exit | test that fired |\n|---:|---:|---|---:|---:|---|\n")
	for _, bdp := range buffers {
		pkts := math.Round(bdp * hsBDP)
		for _, row := range []hsRow{hsRows[0], hsRows[2], hsRows[5]} {
			env.logf("hystart: buffer %.0f packets, %s", pkts, row.label)
			buf := int64(pkts) * 1500
			r, err := hsRun(env, row, hsOpts{horizon: min(horizon, 2*sim.Second), buffer: buf})
			if err != nil {
				return fmt.Errorf("%s buffer %d: %w", row.label, buf, err)
			}
			addCSV(row.label+" buffer", 1, 0, buf, r)
			if row.label == "off" {
				fill[fmt.Sprintf("{buf%.0f.drop}", pkts)] = pktsOr(r.dropCwnd, r.dropAt, "no drop")
			}
			fmt.Fprintf(&md, "| %.2f | %.0f | %s | %s | %.0f | %s |\n", bdp, pkts, row.label,
				pktsOr(r.dropCwnd, r.dropAt, "no drop"), r.exitCwnd, orDash(r.exitReason))
		}
	}
	hsFill(fill, first)
	var pairs []string
	for _, k := range sortedKeys(fill) {
		pairs = append(pairs, k, fill[k])
	}
	md.WriteString(strings.NewReplacer(pairs...).Replace(hsDiscussion))
	md.WriteString(hsFigures)
	if err := writeFile(dir, "runs.csv", csv.String()); err != nil {
		return err
	}
	if err := writeFile(dir, "series.csv", series.String()); err != nil {
		return err
	}
	o := lineOpts{dashed: dashed, xpad: 0.3}
	if err := linesOpt("HyStart variants: cwnd, first 3 s (seed 1; dashed: paced)", "time (s)", "cwnd (packets)", names, xs, cw, o, dir, "cwnd"); err != nil {
		return err
	}
	if err := linesOpt("HyStart variants: cwnd, first 400 ms (seed 1; dashed: paced)", "time (s)", "cwnd (packets)", names, xs0, cw0, o, dir, "cwnd_start"); err != nil {
		return err
	}
	if err := linesOpt("HyStart variants: bottleneck throughput over the last RTT (seed 1)", "time (s)", "Gb/s", names, xs, rt, o, dir, "rate"); err != nil {
		return err
	}
	text := md.String()
	// The buffer text cites the buffer table's numbers.
	text = text[:bufferTable] + strings.NewReplacer(pairs...).Replace(text[bufferTable:])
	return writeFile(env.Out, hyStartFile+".md", text)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func msOr(t sim.Time, none string) string {
	if t == sim.Never {
		return none
	}
	return fmt.Sprintf("%.1f", t.Seconds()*1e3)
}

func pktsOr(p float64, at sim.Time, none string) string {
	if at == sim.Never {
		return none
	}
	return fmt.Sprintf("%.0f", p)
}

func fms(x float64) string {
	if math.IsInf(x, 1) {
		return "not reached"
	}
	return fmt.Sprintf("%.1f", x)
}

// afterDrop marks a time to 90% that came after the first drop.
func afterDrop(r *hsResult) string {
	if r.t90 != sim.Never && r.dropAt != sim.Never && r.t90 > r.dropAt {
		return "*"
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

const hsIntro = `# HyStart on a long fat pipe (the 2011 netdev report)

Reproduce with:

    go run ./cmd/lockstep experiment hystart        # writes out/experiments/hystart.md and hystart/ (about half a minute)
    go run ./cmd/lockstep experiment hystart --docs # rewrites this page (docs/experiments/hystart.md) and hystart/

## The report

In March 2011 Lucas Nussbaum reported to netdev that CUBIC's HyStart ended
slow start far too early between two Grid'5000 sites: two hosts with gigabit
NICs behind a 10 Gb/s backbone, RTT 11.3 ms, a sender using TSO and a
receiver delaying its ACKs. As our issue summarises it (we could not find the
thread itself in the sources available to us; see
[docs/hystart-variants.md](../hystart-variants.md), proposal-2011): without
HyStart cwnd grows to about 2200 packets; with HyStart as merged in 2008,
slow start ends with cwnd below 100 and often below 20; with the thresholds
proposed in the thread it ends at 1900-2000 packets (ACK-train test) or
700-900 (delay test). The thread led to the 2011 fixes (our linux-2011).

## Setup (examples/hystart.yaml)

- Path: h0 -> nic =1 Gb/s=> left =10 Gb/s, 5.6 ms=> right =1 Gb/s=> h1,
  one-way 0 + 25 us + 5.6 ms + 25 us = 5.65 ms, so RTT 11.3 ms plus
  serialisation; BDP = 1 Gb/s x 11.3 ms = 942 packets of 1500 B. lockstep's
  host NIC queues are unbounded, so the sender's gigabit NIC with its
  bounded transmit queue is a 10 Gb/s host link into a switch ("nic") whose
  1 Gb/s port has a 1256-packet drop-tail buffer (1,884,000 B; derived
  below). That port is where the real path queues: the sender's NIC is its
  first gigabit hop, and the receiver's gigabit port then sees a smooth
  1 Gb/s stream.
- Transport: CUBIC (cc/cubic.go, Linux tcp_cubic.c semantics) with SACK
  recovery (RFC 6675), MTU 1500 with 52 header bytes (MSS 1448: IPv4, TCP,
  timestamps), initial window 10, TSO bursts of 45 segments (64 KB / 1448 B),
  receivers that ACK every second segment or after 40 ms (Linux
  TCP_DELACK_MIN; no quick-ACK phase), RTO minimum 200 ms. One 10 GB flow,
  which does not finish within a run.
- Variants: the seven detectors of docs/hystart-variants.md, unpaced; and
  linux and hystart++ again with pacing (ratio 2 in slow start, 1.2 after),
  the two whose detectors read the pacing state (linux does not halve its
  ACK-train threshold when paced; HyStart++ takes L = infinity).
- Measures. *cwnd at slow-start exit*: cwnd on the ACK where slow start
  ended; when a loss ended it, the window that the loss cut (the value
  just before the reduction); for HyStart++ the end of Conservative Slow
  Start, with the CSS entry in its own column. *Test that fired*: ack-train
  or delay (a HyStart test), css-exit (HyStart++ finished CSS), loss (fast
  retransmit) or rto. *Time to 90%*: the first t (from the flow's start,
  sampled every 100 us) at which the bytes delivered in [t - 11.3 ms, t],
  counted on the wire (payload x 1500/1448), reach 90% of 1 Gb/s. A time
  marked * came after the first drop, where a burst of in-order delivery
  after a repaired hole could fake it; the rate figure shows the
  bottleneck's throughput instead, which has no such bursts. *cwnd at
  first drop*: cwnd at the first 100-us sample after the bottleneck dropped
  its first packet. *Peak cwnd*: the largest cwnd before the first loss was
  detected.
- Randomness: none. The path has no random element (no random loss, one
  path, no jitter), and the same seed gives identical runs
  (TestHyStart_SameRunSameResult). The seeds vary only the flow's start,
  uniformly in [0, 1 ms) (seed 1 starts at 0), which shifts the flow against
  the millisecond clocks of the 2008-2014 variants; in the section on the
  2011 kernels, uniformly over one tick of the kernel's HZ.
`

const hsTableNotes = `
BDP = %.0f packets of 1500 B; buffer 1256 packets; BDP + buffer = 2198. Each
run lasts 3 s of virtual time (the figures' span; up to %.0f s if 90%% of the
link is not reached). Drops, retransmissions and timeouts are totals over
the run.
`

const hsSeedsText = `Seed s starts the flow at a uniformly drawn offset in [0, 1 ms) (seed 1 at 0).

`

const hsBufferText = `The report's HyStart-off CUBIC reaches about 2200 packets before a loss. In
slow start a drop-tail buffer of B packets at the path's first gigabit hop
first overflows when the flight fills the pipe and the buffer: cwnd = BDP +
B at the first drop. Hence B = 2200 - BDP = 2200 - 942 = 1258 packets; we
use 1256 (1.33 BDP), which is also what a 2011 Linux sender had in front of
its gigabit NIC: the default txqueuelen of 1000 packets plus a
256-descriptor TX ring. The table checks the rule on the model (one run per
line, seed 1). It holds from one BDP up ({buf942.drop} against 1884,
{buf1256.drop} against 2198). At half a BDP the buffer overflows earlier, on
the slow-start bursts rather than on the standing queue. Note that the loss is *detected* about
one RTT after the first drop, while slow start keeps doubling: that is why
the window a loss cuts is about twice the cwnd at the first drop. (A 2011
Linux sender whose own qdisc dropped would have reduced at once, through
tcp_enter_cwr, so in the report's traces the two numbers may coincide.)

`

const hsDiscussion = `
## Where we agree with the report, and where not

**No HyStart: agrees, by construction of the buffer.** The first drop comes
at cwnd {off.drop} (BDP + buffer = 2198; the last TSO burst and the 100-us
sampling make up the rest). Slow start runs one more RTT before the loss is
seen, so the window the loss cuts is {off.exit}, and the overshoot costs
{off.cost} in the first 3 s:
RFC 6675 recovery does not notice a lost retransmission, which then waits
for the RTO, and the link idles meanwhile (the throughput figure; so does
proposal-2011's). The HyStart variants that exit before the first drop keep
the link full with about a hundred drops. This is the damage HyStart exists
to prevent.

**The 2008 detector on a microsecond RTT (linux-2008): disagrees.** It
exits at {2008.range} packets (1.3 BDP) by the ACK train, not below 100.
On a path without noise the ACK train of a slow-start round lasts W x 12
us (an ACK per two 1448-byte segments at 1 Gb/s), so the test "train >=
minRTT/2" fires in the first round with W >= 471, at cwnd = W + 471,
between 942 and 1413: the detector ends slow start near the BDP, as it was
designed to. This row takes each RTT sample in microseconds and rounds it
up to a whole millisecond (HZ = 1000), which is not what the kernels of
2011 did; the next paragraph is.

**The 2008 detector as the kernels of 2011 ran it: agrees at HZ = 100, in
part at HZ = 250.** In 2.6.29-2.6.38 the RTT sample CUBIC received was a
difference of jiffies (section "The kernels of the report" above). At HZ =
100 an 11.3 ms RTT spans one 10-ms tick for 87% of send phases and is
measured as 1 jiffy, so delay_min = 1<<3 and the train threshold
delay_min>>4 is 0 jiffies: "curr_jiffies - round_start >= 0" always holds,
and the first ACK HyStart examines, at cwnd = hystart_low_window = 16,
ends slow start if it came within msecs_to_jiffies(2) = 1 jiffy of the
previous one, which within a round it always does. Every run exits at
{hz100.1.min} packets ({hz100.1.lt20} runs below 20; the same with a
receiver that ACKs every segment, {hz100.2.min}): the report's "often below
20". At HZ = 250 the RTT is 2 or 3 jiffies, the threshold 1 jiffy (4 ms),
and a round ends slow start when its ACKs straddle a tick boundary: the
ACKs of a round of W packets span W x 12 us at 1 Gb/s, so it does with a
probability of about W x 12 us / 4 ms, 5% at W = 16 and 50% near W = 170,
and with per-ACK growth a round is only 1.5 times the last when an ACK
covers two segments, which gives the early rounds more chances: exits from {hz250.1.min} to {hz250.1.max} packets, median
{hz250.1.med}, {hz250.1.lt100} below 100 and {hz250.1.lt20} below 20 with
delayed ACKs; {hz250.2.min}-{hz250.2.max}, median {hz250.2.med},
{hz250.2.lt100} below 100 with an ACK per segment. At HZ = 1000 the RTT is
11 or 12 jiffies, the threshold 5 jiffies, and the exits come at
{hz1000.1.min}-{hz1000.1.max} packets ({hz1000.2.min}-{hz1000.2.max} with
an ACK per segment): none below 100. So the report's numbers are those of
a kernel built with HZ = 100, or of HZ = 250 in the runs where an early
round crossed a tick; the clock alone explains them, with no receiver
noise: our receivers ACK on a perfectly regular 1 Gb/s stream, and
interrupt coalescing, which we do not model, was not needed. The cost is
the link: 90% of 1 Gb/s is reached after {hz100.1.t90} ms at HZ = 100 and
{hz250.1.t90} ms (median) at HZ = 250, against {hz1000.1.t90} ms at HZ =
1000, as CUBIC grows from a window far below the BDP (942 packets). The
2011 fixes replaced jiffies by a millisecond clock
(bictcp_clock) and took microsecond RTT samples when HZ < 1000; those are
our linux-2011 row.

**linux-2011, linux-2014:** identical to linux-2008 here (the three lines
coincide in the figures). They share its
ACK-train test (> instead of >=, a millisecond clock), and their delay
thresholds differ only in floors and fractions that never come into play
before the train fires.

**The 2011 proposal: disagrees on the ACK-train number, for an arithmetic
reason.** A train of 2 minRTT = 22.6 ms acknowledges 22.6 ms x 83 packets/ms
= 1884 packets, each adding one to cwnd, on top of the window the round
started with, which must itself exceed 1884 for the round to last that long
(once the pipe is full a round lasts W x 12 us). So this test cannot fire
below about 3768 packets, far past BDP + buffer = 2198: the buffer overflows
first, and in our run slow start ends at {prop.exit} ({prop.reason}), on the
queue that the overshoot built, after drops began: in effect a loss exit. By
the same arithmetic a train threshold of *one* minRTT could fire from
W + 942 with W >= 942, that is from about 1884 packets, near the report's
1900-2000 (our paced linux row, whose threshold is minRTT, exits later, at
{linuxp.exit}; we have not traced why). Either the thread's threshold
was minRTT, or its train was measured from another origin; we implemented
the issue's wording, and docs/hystart-variants.md marks proposal-2011 as
the variant to fix if the thread turns up. The
report's 700-900-packet delay exits need an RTT sample of 2 minRTT (22.6 ms)
while cwnd is below the BDP; on our noise-free path RTTs grow only with the
standing queue, which forms above the BDP.

**Today's kernel (linux): exits at {linux.exit}, by the ACK train.** The
microsecond clock and the TSO/GRO cushion (hystart_ack_delay) raise the
threshold slightly above minRTT/2. Paced, the threshold is not halved and
the exit moves to {linuxp.exit} packets (2 BDP), just below BDP + buffer.

**HyStart++: enters CSS late.** RFC 9406's delay test compares the minimum
RTTs of consecutive rounds with a 4 ms margin (clamp(minRTT/8, 4 ms,
16 ms)). A slow-start round's minimum is the RTT its first packets see, which
grows only once a standing queue forms (cwnd above the BDP) and must then
grow by 4 ms (333 packets) from one round to the next. With rounds doubling,
that happens in the round after the pipe filled: CSS begins at {pp.css} packets,
after the first drop, and the loss ends it. Paced, CSS begins at {ppp.css}
(first drop at {ppp.drop}).

**Time to 90% of the link.** Every unpaced variant reaches 90% of 1 Gb/s at
{t90} ms, during the slow-start round that fills the pipe, before any of them
exits: on a noise-free path no detector exits below the BDP, so none costs
utilisation. The report's complaint (low utilisation) follows from exits far
below the BDP, after which CUBIC needs seconds to grow to the BDP (the NCSU
page on the fixes, which credits Lucas Nussbaum's report, says as much:
http://netsrv.csc.ncsu.edu/wiki/index.php/HyStart_testing_between_Princeton_and_NCSU);
we have no such exit to show.
Paced flows reach it at {t90p} ms. Their window grows as Linux's does: a
paced sender is mostly stopped by its pacing timer rather than by cwnd,
and Linux's tcp_is_cwnd_limited counts a flow in slow start as
cwnd-limited while cwnd < 2 max_packets_out; hostsim applies the same rule
(AckEvent.CwndLimited).

**Seeds.** Moving the start within a millisecond moves the exit of the
millisecond-clock variants by one ACK-train step ({2008.range}); the
microsecond-clock linux and the loss- and delay-bound rows do not move.
On the 2011 kernels' jiffies the phase against the tick decides, at HZ =
250, in which round a tick falls inside the ACK train: the exits there
spread over more than a decade.
`

const hsFigures = `
## Figures

![cwnd over the first 400 ms](hystart/cwnd_start.png)
![cwnd over the first 3 s](hystart/cwnd.png)
![bottleneck throughput over the last RTT](hystart/rate.png)
![exit cwnd on the 2011 kernels' jiffies, ACK every 2nd segment](hystart/exit_hz_1.png)
![exit cwnd on the 2011 kernels' jiffies, ACK every segment](hystart/exit_hz_2.png)

Raw data: hystart/runs.csv (every run, the buffer runs included),
hystart/series.csv (cwnd and bottleneck throughput per millisecond, seed 1).
`
