package experiments

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/internal/yamlx"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// The DCQCN experiment (docs/experiments/dcqcn.md): on the paper's 40 Gb/s
// dumbbell (examples/dcqcn.yaml), (a) two flows converging to fairness
// when the second joins, and (b) the bottleneck queue with N flows,
// against the fixed point and a numerical solution of the paper's fluid
// model (§5) for the same parameters.

// The setup of examples/dcqcn.yaml that the analysis needs.
const (
	dqRate    = 40e9                  // every link, bits/s
	dqWire    = 1064.0                // a full packet on the wire, bytes
	dqPayload = 1000.0                // its payload
	dqLong    = int64(1) << 40        // a flow that never finishes
	dqBin     = 100 * sim.Microsecond // throughput bins of (a)
	dqWin     = sim.Millisecond       // fairness windows of (a)
	dqQStep   = sim.Microsecond       // queue samples of (b)
	dqHop     = sim.Microsecond       // every link's delay
)

// dqScale is the experiment's time scale (Env.Quick shrinks it).
type dqScale struct {
	join, convEnd sim.Time // (a): the second flow's start, the end
	qEnd, qFrom   sim.Time // (b): the end, and the start of the statistics
	ns            []int    // (b): flow counts
}

var (
	dqFull  = dqScale{join: 5 * sim.Millisecond, convEnd: 80 * sim.Millisecond, qEnd: 60 * sim.Millisecond, qFrom: 40 * sim.Millisecond, ns: []int{2, 4, 8, 16}}
	dqQuick = dqScale{join: sim.Millisecond, convEnd: 6 * sim.Millisecond, qEnd: 4 * sim.Millisecond, qFrom: 2 * sim.Millisecond, ns: []int{2, 8}}
)

// dqProfile is a DCQCN parameter set of the comparison.
type dqProfile struct{ label, name string }

var dqProfiles = []dqProfile{{"paper (Zhu et al. 2015)", "paper"}, {"ConnectX firmware defaults", "connectx"}}

// dqConv is part (a) for one profile.
type dqConv struct {
	ts       []float64    // bin ends, ms
	thr, rc  [2][]float64 // goodput per bin and Rc at the bin's end, Gb/s
	minRc    float64      // the lowest Rc after the join, Gb/s
	converge float64      // ms after the join until both stay within 20% of the fair share (NaN: never)
	reach    float64      // ms after the join until both are first within 20% of it (NaN: never)
	jainTail float64      // Jain's index of the two goodputs over the last half
	utilTail float64      // their sum over the last half / the goodput capacity
	jainMin  float64      // the lowest 1-ms Jain index after the join
	cnps     uint64
}

// dqConvRun runs (a) for one profile.
func dqConvRun(env *Env, p dqProfile, sc dqScale) (*dqConv, error) {
	f, err := fabricVariant(env, "dcqcn.yaml", func(s *scenario.Scenario) {
		s.Transport.Options = map[string]string{"profile": p.name}
		s.Workload[0].Flows[0].Size = yamlx.Size(dqLong)
		s.Workload[0].Flows[1].Size = yamlx.Size(dqLong)
		s.Workload[0].Flows[1].Start = yamlx.Duration(sc.join)
		s.Output.Cwnd, s.Output.Queues = nil, nil
	})
	if err != nil {
		return nil, err
	}
	r := &dqConv{minRc: math.Inf(1), converge: math.NaN(), reach: math.NaN()}
	var prev [2]uint64
	fair := dqRate * dqPayload / dqWire / 2 / 1e9 // Gb/s of goodput each
	for t := dqBin; t <= sc.convEnd; t += dqBin {
		f.RunUntil(t)
		r.ts = append(r.ts, t.Seconds()*1e3)
		for i := range 2 {
			got := f.Transport().Records[i].BytesReceived
			r.thr[i] = append(r.thr[i], float64(got-prev[i])*8/dqBin.Seconds()/1e9)
			prev[i] = got
			rc := 0.0 // before the flow starts: nothing (the figure's flat 0)
			d, ok := f.Transport().Sender(int32(i)).Endpoint().Controller().(*cc.DCQCN)
			if ok && (i == 0 || t > sc.join) {
				rc = float64(d.Rate()) / 1e9
				if t > sc.join {
					r.minRc = min(r.minRc, rc)
				}
			}
			r.rc[i] = append(r.rc[i], rc)
		}
	}
	r.cnps = f.Transport().Rate.CNPs
	// Per 1-ms window after the join: Jain's index, and whether both flows
	// are within 20% of the fair share.
	per := int(dqWin / dqBin)
	first := int(sc.join / dqBin)
	r.jainMin = 1
	lastBad := -1
	var wins int
	for w := first; w+per <= len(r.ts); w += per {
		var x [2]float64
		for i := range 2 {
			x[i] = mean(r.thr[i][w : w+per])
		}
		r.jainMin = min(r.jainMin, jain(x[:]))
		if math.Abs(x[0]-fair) > 0.2*fair || math.Abs(x[1]-fair) > 0.2*fair {
			lastBad = w
		} else if math.IsNaN(r.reach) {
			r.reach = (sim.Time(w+per-first) * dqBin).Seconds() * 1e3
		}
		wins++
	}
	if lastBad+per < len(r.ts) {
		r.converge = (sim.Time(max(lastBad+per, first)-first) * dqBin).Seconds() * 1e3
	}
	tail := len(r.ts) - (len(r.ts)-first)/2
	var x [2]float64
	for i := range 2 {
		x[i] = mean(r.thr[i][tail:])
	}
	r.jainTail = jain(x[:])
	r.utilTail = (x[0] + x[1]) / (2 * fair)
	return r, nil
}

// dqQueue is part (b) for one flow count.
type dqQueue struct {
	n                   int
	ts, q               []float64 // ms, KB (simulation)
	fts, fq             []float64 // ms, KB (fluid model)
	mean, p99, max      float64   // KB over [qFrom, qEnd] (simulation)
	util                float64   // bottleneck utilisation then (simulation)
	minRc, fMinRc       float64   // the lowest Rc of any flow, Gb/s (simulation, model)
	fMean, fMin, fMax   float64   // KB over [qFrom, qEnd] (fluid model)
	fixed, pFixed, aFix float64   // the fluid model's fixed point: queue KB, p, alpha
	pauses, cnps        uint64
}

// dqQueueRun runs (b) for n flows on a dumbbell of n pairs, all starting at
// once at line rate.
func dqQueueRun(env *Env, n int, sc dqScale) (*dqQueue, error) {
	f, err := fabricVariant(env, "dcqcn.yaml", func(s *scenario.Scenario) {
		s.Topology.Dumbbell.Senders, s.Topology.Dumbbell.Receivers = n, n
		flows := make([]scenario.FlowEntry, n)
		for i := range flows {
			flows[i] = scenario.FlowEntry{Src: i, Dst: n + i, Size: yamlx.Size(dqLong)}
		}
		s.Workload[0].Flows = flows
		s.Output.Cwnd, s.Output.Queues = nil, nil
	})
	if err != nil {
		return nil, err
	}
	sw, port, err := portBetween(f, "left", "right")
	if err != nil {
		return nil, err
	}
	pt := &f.Switch(sw).Ports[port]
	r := &dqQueue{n: n, minRc: math.Inf(1)}
	var tail []float64
	var bytesFrom uint64
	for t := dqQStep; t <= sc.qEnd; t += dqQStep {
		f.RunUntil(t)
		q := float64(pt.Occupancy()) / 1e3
		if t%(10*dqQStep) == 0 {
			r.ts, r.q = append(r.ts, t.Seconds()*1e3), append(r.q, q)
			for i := range n {
				if d, ok := f.Transport().Sender(int32(i)).Endpoint().Controller().(*cc.DCQCN); ok {
					r.minRc = min(r.minRc, float64(d.Rate())/1e9)
				}
			}
		}
		if t == sc.qFrom {
			bytesFrom = pt.Bytes
		}
		if t > sc.qFrom {
			tail = append(tail, q)
		}
	}
	r.mean, r.p99, r.max = mean(tail), percentile(tail, 99), slices.Max(tail)
	r.util = float64(pt.Bytes-bytesFrom) * 8 / (sc.qEnd - sc.qFrom).Seconds() / dqRate
	r.cnps = f.Transport().Rate.CNPs
	for h := range n {
		r.pauses += f.Host(h).PausesRecv
	}
	m := dqModelFor(n)
	r.pFixed, r.aFix = m.fixedPoint()
	r.fixed = m.queueAt(r.pFixed) / 1e3
	r.fts, r.fq, r.fMean, r.fMin, r.fMax, r.fMinRc = m.integrate(sc.qEnd, sc.qFrom)
	return r, nil
}

// dqModel is the DCQCN fluid model of Zhu et al. 2015 §5 (as the
// authors' model code writes it: jitupadhye-zz/rdma,
// fluidmodel/dcqcn/dcqcn2.m), in packets of dqWire bytes: N flows
// with rates Rc, Rt and alpha, one queue, RED marking p(q) on the queue
// τ* ago, and for each flow
//
//	a = 1 - (1-p)^(τ Rc'),  b = p / ((1-p)^-B - 1),  c = b (1-p)^(F B),
//	d = p / ((1-p)^(-T Rc') - 1),  e = d (1-p)^(F T Rc'),
//	dRc/dt = -Rc α a/(2τ) + (Rt - Rc) Rc' b/2 + (Rt - Rc) Rc' d/2,
//	dRt/dt = -(Rt - Rc) a/τ + R_AI Rc' c + R_AI Rc' e,
//	dα/dt  = g/τ' ((1 - (1-p)^(τ' Rc')) - α),
//	dq/dt  = Σ Rc - C,
//
// where Rc' is the flow's rate τ* ago, τ the CNP interval N, τ' the alpha
// period K, T the timer, B the byte counter, F the fast-recovery steps.
// Hyper increase is not in the model.
type dqModel struct {
	n                int
	c                float64 // capacity, packets/s
	tau, taup, tstar float64 // s
	timer, b, f, rai float64 // s, packets, steps, packets/s
	g                float64
	kmin, kmax, pmax float64 // bytes
	minRate          float64 // packets/s
	pkt              float64 // bytes per packet
}

// dqModelFor is the model with the paper's parameters (cc.DCQCNPaper)
// and examples/dcqcn.yaml's fabric: the feedback delay τ* is the base
// round trip of data out and a CNP back (three 1 µs links each way, a
// data packet and a CNP serialised at each hop).
func dqModelFor(n int) *dqModel {
	p := cc.DCQCNPaper()
	pkt := dqWire
	tx := func(bytes float64) float64 { return bytes * 8 / dqRate }
	return &dqModel{n: n, c: dqRate / (8 * pkt), tau: p.CNPInterval.Seconds(), taup: p.AlphaPeriod.Seconds(),
		tstar: 6*dqHop.Seconds() + 3*tx(pkt) + 3*tx(64),
		timer: p.Timer.Seconds(), b: float64(p.ByteCounter) / pkt, f: float64(p.F), rai: float64(p.RAI) / (8 * pkt),
		g: p.G, kmin: 5e3, kmax: 200e3, pmax: 0.01, minRate: float64(p.MinRate) / (8 * pkt), pkt: pkt}
}

// red is the marking probability at q bytes.
func (m *dqModel) red(q float64) float64 {
	switch {
	case q <= m.kmin:
		return 0
	case q >= m.kmax:
		return 1
	}
	return m.pmax * (q - m.kmin) / (m.kmax - m.kmin)
}

// queueAt inverts the ramp: the queue (bytes) at which RED marks with p.
func (m *dqModel) queueAt(p float64) float64 {
	if p >= m.pmax {
		return m.kmax
	}
	return m.kmin + p/m.pmax*(m.kmax-m.kmin)
}

// pow1m is (1-p)^x, and powm1 is (1-p)^x - 1, accurate for small p.
func pow1m(p, x float64) float64 { return math.Exp(x * math.Log1p(-p)) }
func powm1(p, x float64) float64 { return math.Expm1(x * math.Log1p(-p)) }

// terms are a-e above for marking p and delayed rate r.
func (m *dqModel) terms(p, r float64) (a, b, c, d, e float64) {
	switch {
	case p <= 0:
		b = 1 / m.b
		if r > 0 {
			d = 1 / (m.timer * r)
		}
		return 0, b, b, d, d
	case p >= 1:
		return 1, 0, 0, 0, 0
	}
	a = -powm1(p, m.tau*r)
	b = p / powm1(p, -m.b)
	c = b * pow1m(p, m.f*m.b)
	if r > 0 {
		d = p / powm1(p, -m.timer*r)
		e = d * pow1m(p, m.f*m.timer*r)
	}
	return a, b, c, d, e
}

// fixedPoint solves the model's equilibrium with every flow at C/N: dα =
// 0 gives α = 1 - (1-p)^(τ' R), dRt = 0 gives Rt - Rc = τ R_AI R (c+e)/a,
// and dRc = 0 then gives α a² = τ² R_AI R (b+d)(c+e), one equation in p,
// solved by bisection.
func (m *dqModel) fixedPoint() (p, alpha float64) {
	r := m.c / float64(m.n)
	resid := func(p float64) float64 {
		a, b, c, d, e := m.terms(p, r)
		al := -powm1(p, m.taup*r)
		return al*a*a - m.tau*m.tau*m.rai*r*(b+d)*(c+e)
	}
	lo, hi := 1e-12, 0.999
	for range 200 {
		mid := math.Sqrt(lo * hi)
		if resid(mid) > 0 {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo, -powm1(lo, m.taup*r)
}

// integrate solves the model from every flow at line rate, α = 1 and an
// empty queue (as the simulation starts) to end with Euler steps of
// 0.1 µs and the delay line of τ*. It returns the queue every 10 µs (ms,
// KB), its mean, minimum and maximum after from (KB), and the lowest rate
// of the run (Gb/s).
func (m *dqModel) integrate(end, from sim.Time) (ts, qs []float64, qMean, qMin, qMax, minRc float64) {
	const dt = 1e-7
	lag := int(math.Round(m.tstar / dt))
	n := m.n
	rc, rt, al := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		rc[i], rt[i], al[i] = m.c, m.c, 1
	}
	q := 0.0 // packets
	// Rings of the past: q and the (identical) flows' rc, per step.
	histQ := make([]float64, lag+1)
	histR := make([][]float64, lag+1)
	for k := range histR {
		histR[k] = slices.Clone(rc)
	}
	steps := int(end.Seconds() / dt)
	var sum float64
	var cnt int
	qMin, qMax, minRc = math.Inf(1), 0, math.Inf(1)
	for s := 0; s < steps; s++ {
		old := s % (lag + 1) // the state τ* ago (before it is overwritten)
		p := m.red(histQ[old] * m.pkt)
		var total float64
		for i := range n {
			rd := histR[old][i]
			a, b, c, d, e := m.terms(p, rd)
			drc := -rc[i]*al[i]*a/(2*m.tau) + (rt[i]-rc[i])*rd*b/2 + (rt[i]-rc[i])*rd*d/2
			drt := -(rt[i]-rc[i])*a/m.tau + m.rai*rd*c + m.rai*rd*e
			da := m.g / m.taup * ((-powm1(p, m.taup*rd)) - al[i])
			rc[i] = min(max(rc[i]+drc*dt, m.minRate), m.c)
			rt[i] = min(max(rt[i]+drt*dt, 0), m.c)
			al[i] = min(max(al[i]+da*dt, 0), 1)
			total += rc[i]
			minRc = min(minRc, rc[i]*8*m.pkt/1e9)
		}
		q = max(q+(total-m.c)*dt, 0)
		histQ[old] = q
		copy(histR[old], rc)
		t := float64(s+1) * dt
		if (s+1)%100 == 0 {
			ts, qs = append(ts, t*1e3), append(qs, q*m.pkt/1e3)
		}
		if t > from.Seconds() {
			kb := q * m.pkt / 1e3
			sum += kb
			cnt++
			qMin, qMax = min(qMin, kb), max(qMax, kb)
		}
	}
	return ts, qs, sum / float64(cnt), qMin, qMax, minRc
}

// dcqcnExp runs the experiment and writes dcqcn.md and dcqcn/.
func dcqcnExp(env *Env) error {
	sc := dqFull
	if env.Quick {
		sc = dqQuick
	}
	dir := filepath.Join(env.Out, dcqcnFile)
	var convs []*dqConv
	for _, p := range dqProfiles {
		env.logf("dcqcn: convergence, %s", p.name)
		r, err := dqConvRun(env, p, sc)
		if err != nil {
			return err
		}
		convs = append(convs, r)
	}
	var queues []*dqQueue
	for _, n := range sc.ns {
		env.logf("dcqcn: queue, %d flows", n)
		r, err := dqQueueRun(env, n, sc)
		if err != nil {
			return err
		}
		queues = append(queues, r)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := dqFigures(dir, convs, queues, sc); err != nil {
		return err
	}
	if err := dqData(dir, convs, queues); err != nil {
		return err
	}
	return writeFile(env.Out, dcqcnFile+".md", dqReport(convs, queues, sc))
}

func dqFigures(dir string, convs []*dqConv, queues []*dqQueue, sc dqScale) error {
	for k, r := range convs {
		// Goodput in 1-ms windows (solid); the paper's profile also shows
		// Rc at every 100-us bin (dashed): ConnectX's Rc swings too fast
		// to read.
		per := int(dqWin / dqBin)
		var wts []float64
		var w [2][]float64
		for j := 0; j+per <= len(r.ts); j += per {
			wts = append(wts, r.ts[j+per-1])
			for i := range 2 {
				w[i] = append(w[i], mean(r.thr[i][j:j+per]))
			}
		}
		names := []string{"flow 0 goodput (1 ms)", "flow 1 goodput (1 ms)"}
		xs, ys := [][]float64{wts, wts}, [][]float64{w[0], w[1]}
		if k == 0 {
			names = append(names, "flow 0 Rc", "flow 1 Rc")
			xs, ys = append(xs, r.ts, r.ts), append(ys, r.rc[0], r.rc[1])
		}
		title := fmt.Sprintf("DCQCN, %s: two flows, the second joins at %v", dqProfiles[k].label, sc.join)
		if err := linesOpt(title, "time (ms)", "Gb/s", names, xs, ys,
			lineOpts{dashed: []bool{false, false, true, true}, ymax: 42}, dir, "convergence_"+dqProfiles[k].name); err != nil {
			return err
		}
	}
	for _, r := range queues {
		title := fmt.Sprintf("Bottleneck queue, %d DCQCN flows at 40 Gb/s (start-up off the scale)", r.n)
		if err := linesOpt(title, "time (ms)", "queue (KB)", []string{"simulation", "fluid model (§5)", "fluid fixed point"},
			[][]float64{r.ts, r.fts, {0, sc.qEnd.Seconds() * 1e3}}, [][]float64{r.q, r.fq, {r.fixed, r.fixed}},
			lineOpts{dashed: []bool{false, true, true}, ymax: 400}, dir, fmt.Sprintf("queue_%d", r.n)); err != nil {
			return err
		}
	}
	return nil
}

func dqData(dir string, convs []*dqConv, queues []*dqQueue) error {
	var b strings.Builder
	b.WriteString("profile,time_ms,goodput0_gbps,goodput1_gbps,rc0_gbps,rc1_gbps\n")
	for k, r := range convs {
		for i := range r.ts {
			fmt.Fprintf(&b, "%s,%.1f,%.3f,%.3f,%.3f,%.3f\n", dqProfiles[k].name, r.ts[i], r.thr[0][i], r.thr[1][i], r.rc[0][i], r.rc[1][i])
		}
	}
	if err := writeFile(dir, "convergence.csv", b.String()); err != nil {
		return err
	}
	b.Reset()
	b.WriteString("flows,source,time_ms,queue_kb\n")
	for _, r := range queues {
		for i := range r.ts {
			if i%5 == 4 { // every 50 us
				fmt.Fprintf(&b, "%d,simulation,%.3f,%.3f\n", r.n, r.ts[i], r.q[i])
			}
		}
		for i := range r.fts {
			if i%5 == 4 { // every 50 us, as the simulation's rows
				fmt.Fprintf(&b, "%d,fluid,%.3f,%.3f\n", r.n, r.fts[i], r.fq[i])
			}
		}
	}
	return writeFile(dir, "queue.csv", b.String())
}

func dqReport(convs []*dqConv, queues []*dqQueue, sc dqScale) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# DCQCN: convergence to fairness and the queue

`+"`lockstep experiment dcqcn`"+` runs DCQCN (cc/dcqcn.go; Zhu et al., "Congestion
Control for Large-Scale RDMA Deployments", SIGCOMM 2015) on the paper's
40 Gb/s setting, examples/dcqcn.yaml: a dumbbell of 40 Gb/s links with
1 µs of delay each, RED marking at the bottleneck with the paper's Kmin
5 KB, Kmax 200 KB, Pmax 1%%, a PFC-lossless data class, CNPs in the strict
control class, 1000-byte payloads (1064 bytes on the wire), go-back-N.
The goodput capacity is 40 × 1000/1064 = 37.6 Gb/s.

## (a) Two flows: convergence to fairness

Flow 0 starts alone at 0, flow 1 joins at %v; both are endless. The
figure shows each flow's goodput in %v bins (solid) and its current rate
Rc (dashed). "Converged" is the time after the join from which every 1 ms
window has both goodputs within 20%% of the fair share (18.8 Gb/s); "first
within" is the end of the first such window. Jain's index and the
utilisation are over the second half of the time after the join.

| profile | lowest Rc after the join (Gb/s) | first within 20%% after (ms) | stays within 20%% after (ms) | lowest 1-ms Jain index | Jain, second half | utilisation, second half | CNPs |
|---|---|---|---|---|---|---|---|
`, sc.join, dqBin)
	for k, r := range convs {
		ms := func(x float64) string {
			if math.IsNaN(x) {
				return "not within the run"
			}
			return fmt.Sprintf("%.1f", x)
		}
		fmt.Fprintf(&b, "| %s | %.2f | %s | %s | %.3f | %.4f | %.3f | %d |\n", dqProfiles[k].label, r.minRc, ms(r.reach),
			ms(r.converge), r.jainMin, r.jainTail, r.utilTail, r.cnps)
	}
	b.WriteString("\n")
	for _, p := range dqProfiles {
		fmt.Fprintf(&b, "![%s](dcqcn/convergence_%s.png)\n\n", p.label, p.name)
	}
	fmt.Fprintf(&b, `## (b) The queue with N flows, against the fluid model

N flows start together at line rate on N sender-receiver pairs. The
simulation samples the bottleneck's occupancy every %v (the figures plot
every 10 µs, with the start-up transient off the scale). The fluid model
of §5 (the paper's equations as its authors' model code writes them, with
the paper's parameters: N = 50 µs, K = 55 µs, T = 55 µs, B = 10 MB, F = 5,
R_AI = 40 Mb/s, g = 1/256; no hyper increase; the feedback delay τ* is
the fabric's base round trip of a data packet out and a CNP back, %.2f µs;
rates floored at the 100 Mb/s minimum) is solved from the same start with
Euler steps of 0.1 µs. Its fixed point with every flow at C/N gives the
equilibrium marking probability p* (from α a² = τ² R_AI R (b+d)(c+e)),
α* and the queue q* = Kmin + p*/Pmax (Kmax − Kmin), or Kmax when p*
exceeds Pmax. Statistics are over [%v, %v].

| flows | simulated mean (KB) | p99 (KB) | max (KB) | utilisation | fluid model mean (KB) | fluid min-max (KB) | fixed point q* (KB) | p* | α* | lowest Rc, simulated (Gb/s) | lowest Rc, fluid (Gb/s) | CNPs | PAUSEs at the senders |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
`, dqQStep, dqModelFor(2).tstar*1e6, sc.qFrom, sc.qEnd)
	for _, r := range queues {
		fmt.Fprintf(&b, "| %d | %.1f | %.1f | %.1f | %.3f | %.1f | %.1f-%.1f | %.1f | %.2e | %.3f | %.2f | %.2f | %d | %d |\n", r.n, r.mean, r.p99, r.max,
			r.util, r.fMean, r.fMin, r.fMax, r.fixed, r.pFixed, r.aFix, r.minRc, r.fMinRc, r.cnps, r.pauses)
	}
	b.WriteString("\n")
	for _, r := range queues {
		fmt.Fprintf(&b, "![%d flows](dcqcn/queue_%d.png)\n\n", r.n, r.n)
	}
	b.WriteString(dqDiscussion)
	b.WriteString("\nData: `dcqcn/convergence.csv` (goodput and Rc per bin), `dcqcn/queue.csv` (both queue series, every 50 µs).\n")
	return b.String()
}

// dqDiscussion is the reading of the tables; the numbers it quotes are
// the full run's (docs/experiments/dcqcn.md).
const dqDiscussion = `## Reading (numbers of the full run)

**The paper's figures.** This page compares with the paper's fluid model
(§5), solved here from its equations, not with the paper's plotted
curves: no copy of the paper's figures was at hand when this experiment
was written, so no number below is read off them.

**(a) Convergence.** When flow 1 joins at line rate the queue grows
beyond Kmax (200 KB) before the first CNPs arrive (two flows starting
together, part (b), peak at 428 KB); above
Kmax every packet is marked, so each flow gets a CNP every N = 50 µs, and
with α at 1 (it starts at 1 and eq. 1 keeps it there under back-to-back
CNPs) each cut halves Rc: 40, 20, 10, 5, 2.5, 1.25 Gb/s, five cuts before
the queue falls under Kmin. Both flows then climb together: fast
recovery back to Rt = 2.5 Gb/s, then additive increase of R_AI = 40 Mb/s
per T = 55 µs, 0.73 Gb/s per ms (the byte counter, every 10 MB, fires only
every few ms at these rates, which keeps hyper increase away), so both
first come within 20% of the fair share 20 ms after the join. From there
they settle unevenly, about 22 and 16.5 Gb/s for tens of milliseconds: at the
equilibrium marking probability (p* = 8.3e-4 per packet, part (b)) a flow
of 2.35 Mpackets/s gets a CNP only every 0.5 ms or so, and a cut at α* =
0.10 takes 5%, so the gap closes slowly. The 1-ms Jain index never falls
below 0.96 (it is 1 during the common crash) and is 0.985 over the second
half, with 99.6% of the goodput capacity used. With ConnectX's firmware
defaults on the same switch thresholds, CNPs every 2 µs and a cut every
4 µs take both flows to the 1 Mb/s floor within tens of microseconds,
hyper increase (F = 1, a byte-counter step every 32 KB, i growing with the
timer) brings them back to line rate within a few milliseconds, and the
cycle repeats: 55% utilisation, 21641 CNPs in 75 ms. Those defaults were
not set for a 5 KB Kmin; the experiment shows they cannot be paired with
the paper's marking thresholds.

**(b) The queue.** For 2 and 4 flows the simulated mean queue (19.9 and
45.6 KB) is within 7% of the fluid model's (20.4 and 42.8 KB) and of its
fixed point (21.1 and 44.2 KB). From 8 flows on they part: the packet-level
queue does not settle but cycles between empty and about 210 KB with a
period near 2 ms: each time it crosses Kmax every packet is marked, all
flows are cut in the same CNP window and the queue empties (mean 67.8 KB
against the model's 96.7 KB, 97.3% utilisation). The model's flows are
identical and see the average marking probability, so it damps to its
fixed point instead (in about 40 ms). For 16 flows the fixed point's p* =
1.16% exceeds Pmax = 1%: there is no equilibrium on the RED ramp, the
model sits at Kmax (179 KB mean), and the simulation cycles between
synchronised cuts at Kmax and an empty queue (51.9 KB mean, 91.7%
utilisation). The fixed point grows with N (21, 44, 99, 200 KB for 2, 4,
8, 16 flows) up to Kmax, which is the bound of the queue with the paper's
parameters: after the start-up the simulated queue never exceeds Kmax by
more than 50 KB (its maxima 64, 155, 218, 250 KB), about what N flows at
their rates add above C in one feedback delay and one CNP interval.

**Where ours differs from the model, and why.**
- *Discrete cuts.* A CNP cuts Rc by a step of α/2 at most once per 50 µs;
  the model decays Rc continuously at α a/(2τ). At the start-up both see
  the same marking, but the steps overshoot: the lowest simulated Rc with
  2 flows is 1.25 Gb/s, the model's 10.4 Gb/s (the model recovers in 7 ms,
  the simulation in 25 ms).
- *Synchronisation at Kmax.* Per-packet RED marking jumps from Pmax to 1
  at Kmax; the simulation's flows, cut together, oscillate; the model's
  average flow does not.
- *What the model leaves out:* hyper increase (the byte counter rarely
  fires at these rates), PFC (the start-up queue of 16 flows reaches
  4.2 MB, held by 48 PAUSE frames at the senders; the model's reaches
  6.8 MB), the minimum rate (floored here at 100 Mb/s, as the simulation
  does), and packets (the model counts in 1064-byte packets).
`
