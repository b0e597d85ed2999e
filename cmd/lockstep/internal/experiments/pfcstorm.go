package experiments

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// The PFC storm experiment (docs/experiments/pfc_storm.md): a host whose
// NIC receive pipeline stalls (Guo et al., "RDMA over Commodity Ethernet
// at Scale", SIGCOMM 2016, §4.3) keeps pausing its ToR; the pause spreads
// to the spines and the other leaves and stalls victim flows between
// healthy hosts of the other leaves. Each row adds one mitigation: the
// switches' PFC watchdog (drop or forward, on every switch or on the
// ToRs' ports), or the NIC's own.

const pfcStormFile = "pfc_storm"

// psScale is the experiment's time scale (Env.Quick shrinks it).
type psScale struct {
	t1, t2, end sim.Time // the stall and the end of the run
	bin         sim.Time // throughput bins
}

var (
	psFull  = psScale{t1: 100 * sim.Microsecond, t2: 2100 * sim.Microsecond, end: 4100 * sim.Microsecond, bin: 50 * sim.Microsecond}
	psQuick = psScale{t1: 100 * sim.Microsecond, t2: 1100 * sim.Microsecond, end: 1600 * sim.Microsecond, bin: 50 * sim.Microsecond}
)

// The fabric: 4 leaves of 8 hosts, 2 spines, 100 Gb/s, 1 us, 1 MiB per
// port; RoCEv2 with DCQCN (RED marking 5 KB-200 KB, 1%), go-back-N;
// class 0 lossless (XOFF 64 KiB, XON 32 KiB), CNPs, ACKs and NAKs in
// class 1. Host 0 (leaf0) stalls from t1 to t2; from t1 hosts 8l+5..8l+7
// of leaves 1-3 send it 2 MB each (an application that keeps writing to
// the dead server); the victims, host 8l+2 of leaf l (1-3) to host 8m+2
// of the next of those leaves m, run all along and never touch leaf0.
const psYAML = `name: pfc-storm
topology:
  type: leafspine
  leafspine:
    leaves: 4
    spines: 2
    hosts_per_leaf: 8
    host: {rate: 100Gbps, delay: 1us, ecn: {mode: red, min: 5KB, max: 200KB, pmax: 1%%}%s}
    fabric: {rate: 100Gbps, delay: 1us, ecn: {mode: red, min: 5KB, max: 200KB, pmax: 1%%}}
transport:
  cc: dcqcn
  recovery: gbn
  ecn: true
  mtu: 4096
  rto: {mode: fixed, value: 1ms}
switch:
  classes: [{lossless: true}, {}]
  pfc: {xoff: 64KiB, xon: 32KiB%s}
%sworkload:
  - type: flows
    flows: [%s]
  - type: flows
    flows: [%s]
`

// psVictimSize is a victim's size: more than it can send by the end.
const psVictimSize = 1 << 30

// psEvery is the gap between the writes to host 0.
const psEvery = 25 * sim.Microsecond

// psRow is one configuration of the experiment.
type psRow struct {
	name string
	// storm: host 0 stalls; tier, pfc: YAML added to the host tier and to
	// switch.pfc; nic: the NIC watchdog.
	storm     bool
	tier, pfc string
	nic       sim.Time
}

const (
	psWatchdog = "storm_watchdog: {detection_time: 200us, restoration_time: 400us, action: %s}"
)

var psRows = []psRow{
	{name: "no storm"},
	{name: "storm", storm: true},
	{name: "storm + switch watchdog (drop)", storm: true, pfc: ", " + fmt.Sprintf(psWatchdog, "drop")},
	{name: "storm + ToR watchdog (drop)", storm: true,
		tier: ", switch: {pfc: {xoff: 64KiB, xon: 32KiB, " + fmt.Sprintf(psWatchdog, "drop") + "}}"},
	{name: "storm + switch watchdog (forward)", storm: true, pfc: ", " + fmt.Sprintf(psWatchdog, "forward")},
	{name: "storm + NIC watchdog", storm: true, nic: 200 * sim.Microsecond},
}

// psResult is one row's numbers.
type psResult struct {
	before, during, after float64   // victims' aggregate goodput, Gb/s
	series                []float64 // per bin, Gb/s
	// PAUSE frames sent by: the stalled host, its ToR, the spines, the
	// other leaves.
	pHost, pToR, pSpine, pLeaf uint64
	// First paused, in us after t1 (NaN: never): the ToR's port to host
	// 0, a spine's port, another leaf's uplink.
	fToR, fSpine, fLeaf float64
	// victimPaused: how long the victims' senders were paused in all, us.
	victimPaused     float64
	hostsPaused      int // healthy hosts their switch paused
	storms, nicTrips uint64
	drops, nicDrops  uint64
}

// psScenario builds row r's scenario.
func psScenario(env *Env, r psRow, sc psScale) (*scenario.Built, error) {
	var dead, victims []string
	for k := 0; k < 12; k++ {
		l := 1 + k%3
		dead = append(dead, fmt.Sprintf("{src: %d, dst: 0, size: 256KB, start: %s}", 8*l+4+k/3, sc.t1+sim.Time(k)*psEvery))
	}
	for l := 1; l <= 3; l++ {
		victims = append(victims, fmt.Sprintf("{src: %d, dst: %d, size: %d}", 8*l+2, 8*(l%3+1)+2, psVictimSize))
	}
	imp := ""
	if r.storm {
		nic := ""
		if r.nic > 0 {
			nic = fmt.Sprintf(", nic_watchdog: %s", r.nic)
		}
		imp = fmt.Sprintf("impairments:\n  - host: h0\n    pfc_storm: {at: %s, until: %s%s}\n", sc.t1, sc.t2, nic)
	}
	text := fmt.Sprintf(psYAML, r.tier, r.pfc, imp, strings.Join(dead, ", "), strings.Join(victims, ", "))
	return scenario.Load("pfc_storm.yaml", []byte(text), scenario.Dir(env.Examples))
}

// psRun runs row r and gathers its numbers.
func psRun(env *Env, r psRow, sc psScale) (*psResult, error) {
	b, err := psScenario(env, r, sc)
	if err != nil {
		return nil, err
	}
	f, err := fabric.New(b.Fabric)
	if err != nil {
		return nil, err
	}
	for h := range f.NumHosts() {
		f.Host(h).EnablePFC() // the victims' paused time, in every row
	}
	recs := f.Transport().Records
	victimBytes := func() uint64 {
		var n uint64
		for i := range recs {
			if b.Fabric.Flows[i].Dst != 0 {
				n += recs[i].BytesReceived
			}
		}
		return n
	}
	gbps := func(bytes uint64, d sim.Time) float64 { return float64(bytes) * 8 / d.Seconds() / 1e9 }
	res := &psResult{}
	var at1, at2, last uint64
	for t := sc.bin; t <= sc.end; t += sc.bin {
		f.RunUntil(t)
		n := victimBytes()
		res.series = append(res.series, gbps(n-last, sc.bin))
		last = n
		if t == sc.t1 {
			at1 = n
		}
		if t == sc.t2 {
			at2 = n
		}
	}
	res.before = gbps(at1, sc.t1)
	res.during = gbps(at2-at1, sc.t2-sc.t1)
	res.after = gbps(last-at2, sc.end-sc.t2)
	psCounters(f, sc.t1, res)
	for h := range f.NumHosts() {
		if psVictimSender(h) {
			res.victimPaused += us(f.Host(h).PausedTime(0, sc.end))
		}
	}
	return res, nil
}

// psCounters gathers the PAUSE frames by tier, the spread and the
// watchdogs' work.
func psCounters(f *fabric.Fabric, t1 sim.Time, res *psResult) {
	t := f.Topology()
	first := func(cur *float64, at sim.Time) {
		if at == 0 {
			return
		}
		if v := us(at - t1); *cur != *cur || v < *cur {
			*cur = v
		}
	}
	nan := func() float64 { var z float64; return z / z }
	res.fToR, res.fSpine, res.fLeaf = nan(), nan(), nan()
	for n := range f.NumNodes() {
		s := f.Switch(n)
		if s == nil {
			continue
		}
		tor := t.Nodes[n].Name == "leaf0"
		for i := range s.Ports {
			pt := &s.Ports[i]
			k := pt.Class(0)
			res.storms += k.Storms
			res.drops += pt.Dropped
			peer := t.Nodes[pt.Peer]
			switch {
			case tor:
				res.pToR += k.PausesSent
				if peer.Name == "h0" {
					first(&res.fToR, k.FirstPaused)
				}
			case t.Nodes[n].Tier == 2:
				res.pSpine += k.PausesSent
				first(&res.fSpine, k.FirstPaused)
			default:
				res.pLeaf += k.PausesSent
				if peer.Kind == topologies.Switch {
					first(&res.fLeaf, k.FirstPaused)
				}
			}
			// A leaf's port to a healthy host: the leaf paused it.
			if peer.Kind == topologies.Host && peer.Name != "h0" && k.FirstPauseSent != 0 {
				res.hostsPaused++
			}
		}
	}
	h := f.Host(0)
	res.pHost, res.nicTrips, res.nicDrops = h.PausesSent(), h.PFC(0).Trips, h.RxDrops()
}

// psVictimSender reports whether host h sends a victim flow.
func psVictimSender(h int) bool { return h == 10 || h == 18 || h == 26 }

func pfcStorm(env *Env) error {
	sc := psFull
	if env.Quick {
		sc = psQuick
	}
	dir := filepath.Join(env.Out, pfcStormFile)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var rs []*psResult
	for _, r := range psRows {
		env.logf("pfc-storm: %s", r.name)
		res, err := psRun(env, r, sc)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		rs = append(rs, res)
	}
	var md, csv strings.Builder
	fmt.Fprintf(&md, "# pfc-storm: a stalled NIC's PAUSE storm and the watchdogs\n\n"+
		"Generated by `lockstep experiment pfc-storm --docs`%s.\n\n", map[bool]string{true: " (quick mode)"}[env.Quick])
	fmt.Fprintf(&md, "A leaf-spine of 4 leaves × 8 hosts and 2 spines, 100 Gb/s links with 1 µs delay and 1 MiB per port; "+
		"DCTCP (ECN step marking at 64 KiB), 4 KB MTU, RTO min 1 ms (initial 2 ms); class 0 lossless under PFC (XOFF 64 KiB, "+
		"XON 32 KiB, 65535 quanta), ACKs in class 1. Host 0 (on leaf0) is the storm source: from %s to %s its NIC's receive "+
		"pipeline stops (`impairments: [{host: h0, pfc_storm: {at: %s, until: %s}}]`; Guo et al., SIGCOMM 2016 §4.3), and from %s "+
		"hosts 8l and 8l+1 of leaves 1-3 send it 4 MB each. The victims are 18 long flows between healthy hosts of leaves 1-3 "+
		"(hosts 8l+2..8l+7 of leaf l to the same hosts of the next leaf), running from 0: none of them touches leaf0 or host 0. "+
		"The watchdogs detect after 200 µs and restore after 400 µs without PAUSE frames (vendors' defaults of 200 ms, "+
		"scaled to this run); `ToR watchdog` sets it in the host tier's `switch` only (Guo et al.'s switches watch their "+
		"server-facing ports); the NIC watchdog stops the NIC's PAUSE frames after %s without progress (checked at its "+
		"refreshes, every 168 µs).\n\n", sc.t1, sc.t2, sc.t1, sc.t2, sc.t1, psRows[len(psRows)-1].nic)
	md.WriteString("## Victim goodput and PAUSE frames\n\nGoodput is the victims' aggregate (bytes received per second) " +
		"before the stall, during it and after it. PAUSE frames are those sent by host 0's NIC, by its ToR (leaf0), by the spines " +
		"and by the other leaves.\n\n")
	md.WriteString("| run | victims before (Gb/s) | during the stall | after | PAUSE host 0 | PAUSE leaf0 | PAUSE spines | PAUSE other leaves | storms found | NIC watchdog trips | switch drops | host 0 NIC drops |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	csv.WriteString("run,victims_before_gbps,victims_during_gbps,victims_after_gbps,pause_host0,pause_tor,pause_spines,pause_leaves," +
		"tor_paused_us,spine_paused_us,leaf_paused_us,victim_senders_paused_us,hosts_paused,storms,nic_trips,switch_drops,nic_drops\n")
	for i, r := range psRows {
		x := rs[i]
		fmt.Fprintf(&md, "| %s | %.0f | %.0f | %.0f | %d | %d | %d | %d | %d | %d | %d | %d |\n", r.name, x.before, x.during, x.after,
			x.pHost, x.pToR, x.pSpine, x.pLeaf, x.storms, x.nicTrips, x.drops, x.nicDrops)
		fmt.Fprintf(&csv, "%s,%.3f,%.3f,%.3f,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%d,%d,%d,%d,%d\n", r.name, x.before, x.during, x.after,
			x.pHost, x.pToR, x.pSpine, x.pLeaf, x.fToR, x.fSpine, x.fLeaf, x.victimPaused, x.hostsPaused, x.storms, x.nicTrips, x.drops, x.nicDrops)
	}
	if err := writeFile(dir, "storm.csv", csv.String()); err != nil {
		return err
	}
	md.WriteString("\n## How fast the pause spreads\n\nThe first time (µs after the stall began) each tier was paused in class 0, " +
		"from the switches' counters (pfc.csv's `first_paused_ns`): leaf0's port to host 0, a spine's port, another leaf's uplink; " +
		"how long the victims' senders (hosts 10, 18, 26) were paused in all (pfc.csv's `paused_ns` of a host), and how many of the " +
		"31 healthy hosts their leaf paused. The row without a storm shows what the same traffic pauses by itself.\n\n")
	md.WriteString("| run | leaf0 → host 0 | a spine | another leaf | victims' senders paused (µs) | hosts paused |\n|---|---|---|---|---|---|\n")
	for i, r := range psRows {
		x := rs[i]
		fmt.Fprintf(&md, "| %s | %s | %s | %s | %.0f | %d |\n", r.name, psUs(x.fToR), psUs(x.fSpine), psUs(x.fLeaf), x.victimPaused, x.hostsPaused)
	}
	var names []string
	var xs, ys [][]float64
	csv.Reset()
	csv.WriteString("time_us")
	for i, r := range psRows {
		names = append(names, r.name)
		fmt.Fprintf(&csv, ",%s", r.name)
		var x []float64
		for k := range rs[i].series {
			x = append(x, us(sc.bin*sim.Time(k+1)))
		}
		xs, ys = append(xs, x), append(ys, rs[i].series)
	}
	csv.WriteString("\n")
	for k := range rs[0].series {
		fmt.Fprintf(&csv, "%.0f", xs[0][k])
		for i := range rs {
			fmt.Fprintf(&csv, ",%.3f", rs[i].series[k])
		}
		csv.WriteString("\n")
	}
	if err := writeFile(dir, "goodput.csv", csv.String()); err != nil {
		return err
	}
	if err := linesOpt(fmt.Sprintf("Victims' goodput (stall from %s to %s)", sc.t1, sc.t2), "time (µs)", "aggregate goodput (Gb/s)",
		names, xs, ys, lineOpts{ymax: 480, dashed: []bool{false, false, false, true}}, dir, "goodput"); err != nil {
		return err
	}
	md.WriteString("\n![victims' goodput](pfc_storm/goodput.png)\n\nData: [storm.csv](pfc_storm/storm.csv), " +
		"[goodput.csv](pfc_storm/goodput.csv) (per 50 µs bin).\n")
	md.WriteString(psReading)
	return writeFile(env.Out, pfcStormFile+".md", md.String())
}

// psUs formats a time in µs, or "never".
func psUs(v float64) string {
	if v != v {
		return "never"
	}
	return fmt.Sprintf("%.1f", v)
}

// psReading is the page's reading of the numbers; the tables above it are
// generated.
const psReading = `
## What the numbers show

The reading is of the full-size run (--docs); quick mode's shorter stall
shows the same signs with other magnitudes.

- **Without a storm** the same traffic barely pauses anything: the writes
  to host 0 are 256 KB each, 25 µs apart, and a victim that shares an
  uplink with one is paused briefly (92 µs in all for the three victims'
  senders); the victims keep about 280 Gb/s (three flows, one per leaf).
- **The storm** is Guo et al.'s picture tier by tier: host 0's NIC pauses
  leaf0 17 µs after its pipeline stopped (its buffer, XOFF 64 KiB, fills
  from the first write), leaf0 pauses a spine 12 µs later, the spine
  pauses another leaf 11 µs after that, and the leaves pause their hosts.
  The victims, which never touch leaf0, fall from 276 to 17 Gb/s for the
  2 ms of the stall (their three senders paused 6.2 ms in all, about the
  stall's length each), and come back only after it ends.
- **The switches' watchdog (drop)** finds one storm, at leaf0's port to
  host 0, 200 µs after that port was first paused; dropping what is queued
  for host 0 releases leaf0's buffers, and the pause recedes before any
  other port has been paused for 200 µs, so no other port triggers, and a
  watchdog on the ToRs' ports only (Guo et al.'s placement) gives the same
  run. The victims get 197 Gb/s during the stall. What they lack is
  DCQCN's, not the storm's: one victim's rate was cut to 25 Gb/s by the
  congestion of the spread and grows back by R_AI (40 Mb/s per 55 µs
  timer, the paper's parameters): 25.1 Gb/s at 1 ms, 27.0 Gb/s at 4 ms.
  The writes to host 0 are dropped (2,277 packets) and resent by
  go-back-N every RTO (1 ms) until the port is restored 400 µs after the
  stall's end.
- **Forward** sends host 0's packets through the pause; its stalled NIC
  drops what its buffer cannot hold (1,509 packets). The victims get 183
  Gb/s: the forwarded writes still cross leaf0 and its port to host 0, so
  the back-pressure lasts longer than with drop.
- **The NIC's watchdog** stops host 0's PAUSE frames at the first refresh
  after 200 µs without progress (2 frames in all against 13); the ToR's
  last pause runs out 335 µs after it was sent, then host 0's NIC drops
  what arrives. The victims get 154 Gb/s: the stall spreads for longer
  than with the switch watchdog, but no switch needs one.
`
