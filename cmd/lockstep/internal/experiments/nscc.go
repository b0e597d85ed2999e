package experiments

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/internal/yamlx"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// The nscc experiment (issue 12, item 5): Ultra Ethernet's NSCC over the
// UET transport against STrack and DCTCP on htsim's own perm1024 inputs
// (fat_tree_1024.topo, perm_1024n_1024c_0u_2000000b.cm) with the queues,
// ECN thresholds, trimming and timeouts of uet-htsim's main_uec.cpp, and on
// an incast over the same fabric.

const nsExample = "htsim/perm1024-nscc.yaml"

// nsTransport is one row of the tables.
type nsTransport struct {
	label, short string
	mutate       func(*scenario.Scenario)
}

var nsTransports = []nsTransport{
	{"NSCC, mixed LB (htsim's default)", "NSCC mixed", nsNSCC("mixed")},
	{"NSCC, bitmap LB", "NSCC bitmap", nsNSCC("bitmap")},
	{"NSCC, REPS LB", "NSCC REPS", nsNSCC("reps")},
	{"NSCC, oblivious spraying", "NSCC oblivious", nsNSCC("oblivious")},
	{"NSCC, mixed LB, one NIC FIFO", "NSCC FIFO NIC", nsNSCCFIFO},
	{"STrack (skip paths, htsim target), spraying", "STrack", nsStrack(0)},
	{"STrack, reo_wnd 10 us", "STrack reo", nsStrack(10 * sim.Microsecond)},
	{"DCTCP (SACK) over ECMP", "DCTCP", nsDCTCP},
}

// Indices into nsTransports for the text.
const (
	nsMixed = iota
	nsBitmap
	nsREPS
	nsOblivious
	nsFIFO
	nsSTrack
	nsSTrackReo
	nsDCTCPi
)

// nsEntropies is the 128 entropies per sender.
const nsEntropies = 128

// nsNSCC keeps the example's NSCC with the given load-balancing policy.
func nsNSCC(lb string) func(*scenario.Scenario) {
	return func(s *scenario.Scenario) {
		s.Transport.NSCC = &scenario.NSCC{LB: lb, Entropies: nsEntropies}
	}
}

// nsNSCCFIFO is NSCC with the hosts' single NIC FIFO instead of UecNIC's
// rules (transport.nscc.nic: fifo): the mechanism behind the largest
// difference we measured.
func nsNSCCFIFO(s *scenario.Scenario) {
	s.Transport.NSCC = &scenario.NSCC{LB: "mixed", Entropies: nsEntropies, NIC: "fifo"}
}

// nsStrack is STrack with htsim's defaults (strack.cpp: skip paths, target
// 20 us + 3.05 us per hop, RTO floor 100 us) over the same spraying
// switches, starting at one BDP (43 packets, as NSCC starts at 1.5 BDP).
// reo > 0 lets a hole count as lost only if it was sent that long before
// the packet that revealed it (transport.strack.reo_wnd).
func nsStrack(reo sim.Time) func(*scenario.Scenario) {
	return func(s *scenario.Scenario) {
		s.Transport.CC, s.Transport.Recovery, s.Transport.NSCC = "strack", "strack", nil
		s.Transport.InitCwnd = 43
		s.Transport.STrack = &scenario.STrack{Paths: "skip", Entropies: nsEntropies, ReoWnd: yamlx.Duration(reo)}
		s.Transport.RTO = scenario.RTO{Min: yamlx.Duration(100 * sim.Microsecond), Initial: yamlx.Duration(sim.Millisecond)}
	}
}

// nsDCTCP is DCTCP (RFC 8257, per-packet ECN echo) with SACK recovery
// (RFC 6675) pinned to one path per flow by ECMP, starting at one BDP,
// with an RTO floored at 1 ms (also the initial RTO).
func nsDCTCP(s *scenario.Scenario) {
	s.Switch.Forwarding = "ecmp"
	s.Transport.CC, s.Transport.Recovery, s.Transport.NSCC = "dctcp", "sack", nil
	s.Transport.ECNEcho = "per-packet"
	s.Transport.InitCwnd = 43
	s.Transport.RTO = scenario.RTO{Min: yamlx.Duration(sim.Millisecond), Initial: yamlx.Duration(sim.Millisecond)}
}

// nsSizes are the workloads' sizes.
type nsSizes struct {
	quick         bool
	incastSenders int
	incastSize    yamlx.Size
	incastFirst   int // the first sender's host index
	permSize      yamlx.Size
	spreadSeeds   int
}

func nsSizesFor(env *Env) nsSizes {
	if env.Quick {
		return nsSizes{quick: true, incastSenders: 8, incastSize: 64_000, incastFirst: 4, permSize: 256_000, spreadSeeds: 1}
	}
	seeds := env.Seeds
	if seeds == 0 {
		seeds = 3
	}
	return nsSizes{incastSenders: 32, incastSize: 1_000_000, incastFirst: 64, spreadSeeds: seeds}
}

// nsWorkload replaces the example's workload: quick mode's small fabric
// gets a permutation; "incast" sends from incastSenders hosts of another
// pod to host 0.
func nsWorkload(kind string, z nsSizes) func(*scenario.Scenario) {
	return func(s *scenario.Scenario) {
		if z.quick {
			s.Topology.Htsim.File = "fattree16.topo"
			if kind == "perm" {
				s.Workload = []scenario.Workload{{Type: "permutation", Size: z.permSize}}
			}
		}
		if kind == "incast" {
			senders := make([]int, z.incastSenders)
			for i := range senders {
				senders[i] = z.incastFirst + i
			}
			s.Workload = []scenario.Workload{{Type: "incast", Dst: 0, Senders: senders, Size: z.incastSize}}
		}
	}
}

// nsRun is what one run contributes.
type nsRun struct {
	fct        []float64 // us, receiver side (fct.csv)
	done       []float64 // us, sender side: the last byte acknowledged (htsim's "finished at")
	unfinished int
	t          totals
	trims      uint64 // data packets trimmed by switches
	qa         uint64 // NSCC quick adapts that set a window
	events     uint64
	toFCT      []float64 // FCTs (us) of the flows that had a timeout
	// rtt and cwnd are the time-weighted means, over the traced flows'
	// lives, of their smoothed RTT (us) and window (bytes).
	rtt, cwnd float64
	ceiling   float64 // NSCC: the mean window ceiling (payload bytes), 0 otherwise
}

func nsMeasure(r *runner.Result) nsRun {
	f, unfinished := fcts(r)
	out := nsRun{fct: f, unfinished: unfinished, t: sum(r), events: r.Summary().Events}
	tr := r.Fabric.Transport()
	b := &tr.Cfg
	nn := 0
	for i, rec := range tr.Records {
		if rec.AckedAt > 0 {
			out.done = append(out.done, us(rec.AckedAt-r.Built.Fabric.Flows[i].Start))
		}
		if rec.Timeouts > 0 && rec.Finished {
			out.toFCT = append(out.toFCT, us(rec.Finish-r.Built.Fabric.Flows[i].Start))
		}
		if s := tr.Sender(int32(i)); s != nil {
			if n, ok := s.Endpoint().Controller().(*cc.NSCC); ok {
				out.qa += n.QuickAdapts
				out.ceiling += float64(n.MaxCwnd()) * float64(b.CC.MSS) / float64(b.MTU)
				nn++
			}
		}
	}
	if nn > 0 {
		out.ceiling /= float64(nn)
	}
	out.rtt, out.cwnd = nsTraceMeans(tr.CwndLog)
	for _, c := range r.Outputs.Classes {
		out.trims += c.Trimmed
	}
	return out
}

// nsTraceMeans averages the traced flows' smoothed RTT and window over
// time: each sample holds until the flow's next one.
func nsTraceMeans(log []hostsim.CwndRow) (rtt, cwnd float64) {
	last := map[int32]hostsim.CwndRow{}
	var wr, wc, total float64
	for _, r := range log {
		if p, ok := last[r.Flow]; ok {
			dt := float64(r.Time - p.Time)
			wr += dt * us(p.SRTT)
			wc += dt * float64(p.Cwnd)
			total += dt
		}
		last[r.Flow] = r
	}
	if total == 0 {
		return 0, 0
	}
	return wr / total, wc / total
}

// nsTrace traces 16 of the workload's flows, spread over it.
func nsTrace(kind string, z nsSizes) func(*scenario.Scenario) {
	n := 1024
	switch {
	case kind == "incast":
		n = z.incastSenders
	case z.quick:
		n = 16
	}
	var ids []int32
	for i := 0; i < n; i += max(1, n/16) {
		ids = append(ids, int32(i))
	}
	return func(s *scenario.Scenario) { s.Output.Cwnd = &scenario.CwndOutput{Flows: ids} }
}

func (x nsRun) row(label string) string {
	return fmt.Sprintf("| %s | %.1f | %.1f | %.1f | %.1f | %d | %d | %d | %d | %d | %d | %.1f | %.1f |\n", label,
		percentile(x.fct, 50), percentile(x.fct, 99), percentile(x.fct, 100), percentile(x.done, 100),
		x.t.retx, x.t.timeouts, x.trims, x.t.drops, x.t.marks, x.qa, x.rtt, x.cwnd/1000)
}

const nsTableHead = "| transport | P50 FCT (us) | P99 FCT (us) | max FCT (us) | max, sender side (us) | retransmissions | timeouts | trims | drops | ECN marks | quick adapts | mean sRTT (us) | mean cwnd (KB) |\n" +
	"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"

// nsRunOne runs one transport on one workload with one seed.
func nsRunOne(env *Env, tr nsTransport, kind string, z nsSizes, seed uint64) (nsRun, error) {
	env.logf("nscc: %s %s seed %d", kind, tr.short, seed)
	b, err := scenario.LoadFile(filepath.Join(env.Examples, nsExample), tr.mutate, nsWorkload(kind, z), nsTrace(kind, z),
		scenario.WithSeed(seed))
	if err != nil {
		return nsRun{}, err
	}
	r, err := runner.Run(b, runner.Options{})
	if err != nil {
		return nsRun{}, fmt.Errorf("%s %s: %w", kind, tr.short, err)
	}
	x := nsMeasure(r)
	if x.unfinished > 0 {
		return x, fmt.Errorf("%s %s seed %d: %d flows did not finish by %v", kind, tr.short, seed, x.unfinished, r.End)
	}
	return x, nil
}

func nsccExp(env *Env) error {
	z := nsSizesFor(env)
	dir := filepath.Join(env.Out, nsccFile)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var data, md strings.Builder
	data.WriteString("workload,transport,seed,flow,fct_us,sender_done_us\n")
	res := map[string][]nsRun{}
	for _, kind := range []string{"perm", "incast"} {
		var names []string
		var samples [][]float64
		var p50, p99, pmax []float64
		for _, tr := range nsTransports {
			x, err := nsRunOne(env, tr, kind, z, 1)
			if err != nil {
				return err
			}
			res[kind] = append(res[kind], x)
			names, samples = append(names, tr.short), append(samples, x.fct)
			p50, p99, pmax = append(p50, percentile(x.fct, 50)), append(p99, percentile(x.fct, 99)), append(pmax, percentile(x.fct, 100))
			for i, v := range x.fct {
				fmt.Fprintf(&data, "%s,%s,1,%d,%.3f,%.3f\n", kind, tr.short, i, v, x.done[i])
			}
		}
		label := "perm1024"
		if z.quick {
			label = "permutation (quick)"
		}
		if kind == "incast" {
			label = "incast"
		}
		if err := spCDF(label+": FCT CDF", "FCT (us)", names, samples, dir, kind+"_fct_cdf"); err != nil {
			return err
		}
		if err := bars(label+": FCT", "FCT (us)", names, []string{"P50", "P99", "max"}, [][]float64{p50, p99, pmax}, dir, kind+"_fct_bars"); err != nil {
			return err
		}
	}
	// The permutation's spread over seeds (the load balancers' and RED's
	// draws; the permutation itself is htsim's and fixed).
	spread := map[int][]float64{}
	for _, ti := range []int{nsMixed, nsSTrackReo, nsDCTCPi} {
		spread[ti] = append(spread[ti], percentile(res["perm"][ti].fct, 100))
		for s := 2; s <= z.spreadSeeds; s++ {
			x, err := nsRunOne(env, nsTransports[ti], "perm", z, uint64(s))
			if err != nil {
				return err
			}
			spread[ti] = append(spread[ti], percentile(x.fct, 100))
		}
	}
	nsReport(&md, env, z, res, spread)
	if err := writeFile(dir, "fct.csv", data.String()); err != nil {
		return err
	}
	return writeFile(env.Out, nsccFile+".md", md.String())
}

// nsReport writes the page: set-up, tables, the comparison with htsim.
func nsReport(w *strings.Builder, env *Env, z nsSizes, res map[string][]nsRun, spread map[int][]float64) {
	w.WriteString(nsIntro)
	if z.quick {
		w.WriteString("\n**Quick mode** (tests): htsim's 16-host fattree16.topo, a 256 KB permutation and an 8->1 incast of 64 KB; not the published results.\n")
	}
	w.WriteString(nsSetup)
	perm, inc := res["perm"], res["incast"]
	heading := "perm1024: 1024 flows of 2 MB, htsim's permutation"
	if z.quick {
		heading = fmt.Sprintf("Permutation of %d KB flows on fattree16 (quick)", z.permSize/1000)
	}
	fmt.Fprintf(w, "\n## %s (seed 1)\n\n%s", heading, nsTableHead)
	for i, tr := range nsTransports {
		w.WriteString(perm[i].row(tr.label))
	}
	w.WriteString("\n![FCT CDF](nscc/perm_fct_cdf.png)\n![FCT P50, P99, max](nscc/perm_fct_bars.png)\n")
	fmt.Fprintf(w, "\nLargest FCT over seeds 1-%d (us; each seed draws the load balancers' entropies and RED's marks anew):\n\n| transport | min | median | max |\n|---|---:|---:|---:|\n", z.spreadSeeds)
	for _, ti := range []int{nsMixed, nsSTrackReo, nsDCTCPi} {
		s := spread[ti]
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f |\n", nsTransports[ti].label, percentile(s, 1), percentile(s, 50), percentile(s, 100))
	}
	fmt.Fprintf(w, "\n## Incast: %d senders of another pod, %d KB each, to host 0 (seed 1)\n\n%s", z.incastSenders, z.incastSize/1000, nsTableHead)
	for i, tr := range nsTransports {
		w.WriteString(inc[i].row(tr.label))
	}
	// The incast's ideal: every byte, headers included, through host 0's
	// 100 Gb/s link.
	pkts := (int64(z.incastSize) + 4085) / 4086
	ideal := float64(int64(z.incastSenders)*(int64(z.incastSize)+pkts*64)) * 8 / 100e9 * 1e6
	fmt.Fprintf(w, "\nThe receiver's link needs %.1f us for the incast's bytes (headers included) at 100 Gb/s; the last flow cannot finish earlier.\n", ideal)
	w.WriteString("\n![FCT CDF](nscc/incast_fct_cdf.png)\n![FCT P50, P99, max](nscc/incast_fct_bars.png)\n")
	nsCompareText(w, perm, spread)
	nsLBText(w, perm)
	nsIncastText(w, inc, ideal, int64(z.incastSenders)*pkts)
	w.WriteString(nsNotes)
}

const nsIntro = `# NSCC vs STrack vs DCTCP on htsim's perm1024 and an incast

` + "`lockstep experiment nscc`" + ` runs Ultra Ethernet's NSCC (cc/nscc.go: UEC 1.0 §3.6.13 as
uet-htsim's uec.cpp runs it) over the UET transport (packet-level SACK,
trim NACKs, per-packet timeouts: cc/uet_recovery.go, hostsim/uet.go) with
each of UET's load-balancing policies (cc/uetpaths.go), STrack, and DCTCP,
on htsim's own 1024-host inputs and on an incast over the same fabric.
Data: [nscc/fct.csv](nscc/fct.csv) (` + "`workload,transport,seed,flow,fct_us,sender_done_us`" + `).
`

const nsSetup = `
## Set-up

Every run uses ` + "`examples/htsim/perm1024-nscc.yaml`" + `: htsim's fat_tree_1024.topo
(1024 hosts, 3 tiers, 100 Gb/s, 1 us per link) and its permutation
perm_1024n_1024c_0u_2000000b.cm, both read unchanged, with what the .topo
format cannot say set as uet-htsim's main_uec.cpp sets a UEC run with
trimming:

- packets of 4150 bytes (64 of header), ACKs and NACKs of 64;
- every switch queue one BDP of packets (main_uec: the queue is
  DEFAULT_TRIMMING_QUEUESIZE_FACTOR = 1 × calculate_bdp_pkt = ceil(14.02272
  us × 12.5 GB/s / 4150) = 43 packets = 178,450 bytes);
- ECN marked on dequeue with a probability rising from 0 at 20% of the
  queue to 1 at 80% (main_uec's ecn_low/high = 0.2 and 0.8 of the queue;
  CompositeQueue::decide_ECN marks on dequeue);
- trimming to 64-byte headers, which (with ACKs and NACKs) go in a strict
  priority class ahead of data (htsim's CompositeQueue serves its header
  queue first, in a weighted ratio);
- NSCC: network RTT 14.02272 us (calculate_rtt), target 0.75 × that with
  trimming, the window starting at its ceiling 1.5 BDP, per-packet timeout
  15 us + 6 × 178,450 bytes at 100 Gb/s = 100.656 us (_min_rto), receivers
  acknowledging every 16,384 bytes (UecSink::_bytes_unacked_threshold), and
  128 entropies per sender (the issue's number; main_uec's default is 64).

STrack keeps htsim's strack.cpp defaults (target 20 us + 3.05 us per hop,
skip paths) over the same spraying switches, 128 entropies, starting at
one BDP (43 packets); DCTCP (g = 1/16, per-packet ECN echo, SACK
recovery) is pinned to one path per flow by ECMP and starts at one BDP.
Both see the same queues, marking and trimming. FCT is measured at the
receiver (the last byte in, as fct.csv); "sender side" is when the sender
saw the last byte acknowledged, which is what htsim prints as "finished
at".
`

// nsCompareText compares the permutation's runs with htsim's figures and
// names the mechanisms the runs show.
func nsCompareText(w *strings.Builder, perm []nsRun, spread map[int][]float64) {
	m, ff, st, sr, dc := perm[nsMixed], perm[nsFIFO], perm[nsSTrack], perm[nsSTrackReo], perm[nsDCTCPi]
	sp := spread[nsMixed]
	fmt.Fprintf(w, `
## Against htsim

The issue quotes htsim's NSCC on this permutation at a tail FCT of 213 us,
and our STrack at 249 us before this work. htsim prints a flow as
finished when its sender sees the last byte acknowledged, so the number
to compare is the sender side: NSCC with htsim's default load balancing
finished its last flow at %.1f us (seed 1; %.1f-%.1f us at the receiver
over seeds 1-%d), %+.1f%% from htsim's 213 us. It needed %d
retransmissions, %d trims and %d quick adapts; every host link carries
one flow each way, and the queueing is what sprayed packets meet in the
core (%d ECN marks). A 2 MB flow alone on this fabric needs about 170 us
(lockstep's ideal FCT, fct.csv).

What sets the tail: over their lives the 16 traced flows held a mean
window of %.1f KB against NSCC's ceiling of %.1f KB (1.5 BDP of the base
RTT), so a flow moves at about window / RTT and its FCT follows the RTT
it sees (mean smoothed RTT %.1f us). The mechanism that moved our result
most is the host NIC: with one FIFO for data and ACKs and send times
taken when a packet enters it (how lockstep's other transports send), a
host's ACKs wait behind its own outgoing window and its RTT samples
include the time its data waited in its NIC; the mean smoothed RTT rises
to %.1f us (window %.1f KB) and the run ends at %.1f us on the sender
side (%.1f us at the receiver).
htsim's UecNIC lets a source send only when a port is free and
interleaves control packets ten to one, which is what the default
`+"`nic: uec`"+` does; its switches serve ACKs and trimmed headers ahead
of data, as the example's control class does. We could not run htsim
here and the run behind 213 us (its seed, entropies, load balancer) is
not given: the remaining %+.1f%% would be about %.1f us of RTT on every
flow, and we have not attributed it.

STrack, on the same switches, ends at %.1f us with %d retransmissions
against %d trims and %d drops: the retransmissions beyond those were of
packets that were not lost. Its receivers NACK every hole, and with
128-way spraying most holes are reordering; its recovery counts a hole as
lost as soon as a later packet overtakes it (reo_wnd 0). With a 10 us
reordering tolerance it retransmits %d packets and ends at %.1f us (seed
1; its largest FCT over seeds 1-%d has median %.1f us; the issue's
figure for our STrack is 249 us). DCTCP over ECMP (one path per flow):
P50 %.1f us, max %.1f us, %d trims, %d drops, %d timeouts; %d flows had a
timeout (1 ms floor), and their median FCT is %.1f us: the tail is those
timeouts.
`, percentile(m.done, 100), percentile(sp, 1), percentile(sp, 100), len(sp),
		100*(percentile(m.done, 100)/213-1), m.t.retx, m.trims, m.qa, m.t.marks,
		m.cwnd/1000, m.ceiling/1000, m.rtt, ff.rtt, ff.cwnd/1000, percentile(ff.done, 100), percentile(ff.fct, 100),
		100*(percentile(m.done, 100)/213-1), m.rtt*(213/percentile(m.done, 100)-1),
		percentile(st.fct, 100), st.t.retx, st.trims, st.t.drops,
		sr.t.retx, percentile(sr.fct, 100), len(spread[nsSTrackReo]), percentile(spread[nsSTrackReo], 50),
		percentile(dc.fct, 50), percentile(dc.fct, 100), dc.trims, dc.t.drops, dc.t.timeouts,
		len(dc.toFCT), percentile(dc.toFCT, 50))
}

// nsLBText compares the load-balancing policies on the permutation.
func nsLBText(w *strings.Builder, perm []nsRun) {
	m, b, r, o := perm[nsMixed], perm[nsBitmap], perm[nsREPS], perm[nsOblivious]
	fmt.Fprintf(w, `
Load balancing (the first four rows): oblivious spraying, which ignores
feedback, met %d trims, %d drops and %d ECN marks and finished at %.1f us
(sender side); the policies that steer by feedback kept away from
congested entropies: bitmap %d trims and %d marks (%.1f us), REPS %d and
%d (%.1f us), mixed (REPS's recycling first, bitmap otherwise) %d and %d
(%.1f us). The drops are of packets without payload (ACKs, NACKs,
headers beyond their allowance): trimming cuts data rather than dropping
it.
`, o.trims, o.t.drops, o.t.marks, percentile(o.done, 100), b.trims, b.t.marks, percentile(b.done, 100),
		r.trims, r.t.marks, percentile(r.done, 100), m.trims, m.t.marks, percentile(m.done, 100))
}

// nsIncastText describes the incast's runs.
// packets is the number of data packets the incast's flows hold.
func nsIncastText(w *strings.Builder, inc []nsRun, ideal float64, packets int64) {
	m, st, dc := inc[nsMixed], inc[nsSTrack], inc[nsDCTCPi]
	fmt.Fprintf(w, `
## The incast

NSCC's last flow finished at %.1f us, %.1f%% above the %.1f us the
receiver's link needs. Every sender starts at 1.5 BDP, so the first
windows overflow the last hop, which trims: %d trims, %d
retransmissions, %d timeouts. Each trim's NACK takes its packet out of the
window and asks for quick adapt, which set a window to what its flow had
delivered %d times.

STrack ends at %.1f us (%d retransmissions, %d timeouts). Its receivers
answer each trim with a trim NACK and the sender resends at once
(decisions.md "Trim NACK"), but its windows stay above what the last hop
drains (the traced flows' mean window %.1f KB, %d flows at once), so the
resends are trimmed again: %d trims for %d packets, %.1f per packet.
Nothing was dropped (%d drops): the timeouts fire on packets that were
not lost but not delivered within the RTO (at least 100 us) either,
trimmed again or queued. NSCC cuts its
window on every NACK (%.1f KB mean window) and trims each packet %.2f
times. DCTCP ends at %.1f us (%d retransmissions, %d timeouts, %d trims):
a trim is answered by one duplicate ACK, and SACK recovery starts only
with three (RFC 6675).
`, percentile(m.fct, 100), 100*(percentile(m.fct, 100)/ideal-1), ideal, m.trims, m.t.retx, m.t.timeouts, m.qa,
		percentile(st.fct, 100), st.t.retx, st.t.timeouts, st.cwnd/1000, len(st.fct),
		st.trims, packets, float64(st.trims)/float64(packets), st.t.drops,
		m.cwnd/1000, float64(m.trims)/float64(packets),
		percentile(dc.fct, 100), dc.t.retx, dc.t.timeouts, dc.trims)
}

const nsNotes = `
## Notes

- NSCC's parameters and formulas are uet-htsim's (decisions.md "NSCC and
  the UET transport");
  the UEC specification's text is not in our sources, and where third-party
  ports quote it, they agree with htsim on what this run uses.
- htsim's NIC sends control packets and data in a 10:1 ratio, and so do
  our UET hosts by default (` + "`nic: uec`" + `); STrack's and DCTCP's hosts send
  from one FIFO. htsim's CompositeQueue serves headers and data in a
  weighted ratio; our switches give the control class strict priority.
- The load balancers' random draws (the oblivious/bitmap XOR mask, REPS's
  random entropies) come from each host's stream, so each seed sprays
  differently; the permutation is htsim's and does not change with the
  seed.
`
