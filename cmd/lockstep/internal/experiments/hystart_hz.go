package experiments

import (
	"fmt"
	"math"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/lockstep-sim/lockstep/sim"
)

// The second part of the HyStart experiment: senders as the kernels of the
// report ran HyStart, 2.6.29 to 2.6.38, on a jiffies clock of HZ = 100, 250
// or 1000 (cc/jiffies.go), over many phases of the flow against the ticks.

// hsHZs are the kernel HZ the experiment compares.
var hsHZs = []int{100, 250, 1000}

// hsReceiver is a receivers' ACK policy of the HZ section.
type hsReceiver struct {
	label    string
	ackEvery int // 0: the example's delayed ACKs (every 2nd segment)
}

// hsReceivers: the delayed ACKs of RFC 5681 and the 2.6.3x receiver's
// quick ACKs (every second segment, 40 ms timer, 2 quick ACKs at start),
// and the receiver that ACKs every segment, which a 2.6.3x receiver did
// while its receive window grew (tcp_grow_window sets icsk_ack.quick).
var hsReceivers = []hsReceiver{
	{"ACK every 2nd segment", 0},
	{"ACK every segment", 1},
}

// hsHZJitter is the start of seed s for a kernel of the given HZ: 0 for
// seed 1, else uniform over one tick, [0, 1 s/HZ), from the seed's own
// stream.
func hsHZJitter(s, hz int) sim.Time {
	if s == 1 {
		return 0
	}
	rng := sim.NewRand(uint64(s), sim.StreamWorkload+778)
	return sim.Time(rng.Int64N(int64(sim.Second) / int64(hz)))
}

// hsHZBins are the histogram's bins of exit cwnd, in packets: [lo, next lo).
var hsHZBins = []float64{0, 20, 50, 100, 200, 500, 1000, 2000}

func hsHZBinLabels() []string {
	var l []string
	for i, lo := range hsHZBins {
		switch {
		case i == 0:
			l = append(l, fmt.Sprintf("< %.0f", hsHZBins[1]))
		case i == len(hsHZBins)-1:
			l = append(l, fmt.Sprintf(">= %.0f", lo))
		default:
			l = append(l, fmt.Sprintf("%.0f-%.0f", lo, hsHZBins[i+1]-1))
		}
	}
	return l
}

func hsHZBin(x float64) int {
	for i := len(hsHZBins) - 1; i > 0; i-- {
		if x >= hsHZBins[i] {
			return i
		}
	}
	return 0
}

// hsHZResult is one HZ and receiver over its seeds.
type hsHZResult struct {
	hz   int
	recv hsReceiver
	runs []*hsResult
}

// hyStartHZ runs the HZ section and writes its text, CSV rows and figures.
func hyStartHZ(env *Env, dir string, horizon sim.Time, md, csv *strings.Builder,
	addCSV func(string, int, sim.Time, int64, *hsResult)) ([]hsHZResult, error) {
	seeds := env.Seeds
	if seeds == 0 {
		seeds = 20
	}
	hzs, recvs := hsHZs, hsReceivers
	if env.Quick {
		seeds, hzs, recvs = 2, hsHZs[:2], hsReceivers[:1]
	}
	var res []hsHZResult
	for _, rc := range recvs {
		for _, hz := range hzs {
			row := hsRow{label: hsHZLabel(hz, rc), hystart: "linux-2008", hz: hz, ackEvery: rc.ackEvery}
			h := hsHZResult{hz: hz, recv: rc}
			for s := 1; s <= seeds; s++ {
				env.logf("hystart: %s seed %d", row.label, s)
				start := hsHZJitter(s, hz)
				r, err := hsRun(env, row, hsOpts{start: start, horizon: horizon})
				if err != nil {
					return nil, fmt.Errorf("%s seed %d: %w", row.label, s, err)
				}
				addCSV(row.label, s, start, 0, r)
				h.runs = append(h.runs, r)
			}
			res = append(res, h)
		}
	}
	fmt.Fprintf(md, "\n## The kernels of the report: HyStart on jiffies (HZ = 100, 250, 1000)\n\n")
	md.WriteString(hsHZIntro)
	fmt.Fprintf(md, "Each line is %d runs; seed s starts the flow at a uniformly drawn phase within one tick, [0, 1 s/HZ) (seed 1 at 0).\n\n", seeds)
	md.WriteString("| receiver | HZ | exit cwnd min | median | max | exits < 20 | exits < 100 | tests that fired | time to 90% min (ms) | median | max |\n")
	md.WriteString("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n")
	for _, h := range res {
		cws, t90, below20, below100 := h.stats()
		fired := map[string]int{}
		for _, r := range h.runs {
			fired[orDash(r.exitReason)]++
		}
		var f []string
		for _, k := range sortedKeys(fired) {
			f = append(f, fmt.Sprintf("%s ×%d", k, fired[k]))
		}
		fmt.Fprintf(md, "| %s | %d | %.0f | %.0f | %.0f | %d of %d | %d of %d | %s | %s | %s | %s |\n",
			h.recv.label, h.hz, percentile(cws, 1), percentile(cws, 50), percentile(cws, 100),
			below20, len(cws), below100, len(cws), strings.Join(f, ", "),
			fms(percentile(t90, 1)), fms(percentile(t90, 50)), fms(percentile(t90, 100)))
	}
	// One histogram per receiver, a bar series per HZ.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for i, rc := range recvs {
		var series []string
		var values [][]float64
		for _, h := range res {
			if h.recv != rc {
				continue
			}
			hist := make([]float64, len(hsHZBins))
			for _, r := range h.runs {
				hist[hsHZBin(r.exitCwnd)]++
			}
			series = append(series, fmt.Sprintf("HZ = %d", h.hz))
			values = append(values, hist)
		}
		title := fmt.Sprintf("HyStart of 2.6.29-2.6.38: exit cwnd, %d seeds per HZ (%s)", seeds, rc.label)
		if err := hsHistogram(title, series, values, float64(seeds), dir, fmt.Sprintf("exit_hz_%d", i+1)); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func hsHZLabel(hz int, rc hsReceiver) string {
	s := fmt.Sprintf("linux-2008, HZ=%d", hz)
	if rc.ackEvery > 0 {
		s += fmt.Sprintf(", ACK every %d", rc.ackEvery)
	}
	return s
}

// hsHZFill sets the HZ discussion's placeholders ("n/a" for what a quick
// run skips).
func hsHZFill(fill map[string]string, res []hsHZResult) {
	for _, hz := range hsHZs {
		for i, rc := range hsReceivers {
			k := fmt.Sprintf("{hz%d.%d.", hz, i+1)
			for _, f := range []string{"min", "med", "max", "lt20", "lt100", "t90"} {
				fill[k+f+"}"] = "n/a"
			}
			for _, h := range res {
				if h.hz != hz || h.recv != rc {
					continue
				}
				cws, t90, lt20, lt100 := h.stats()
				fill[k+"min}"] = fmt.Sprintf("%.0f", percentile(cws, 1))
				fill[k+"med}"] = fmt.Sprintf("%.0f", percentile(cws, 50))
				fill[k+"max}"] = fmt.Sprintf("%.0f", percentile(cws, 100))
				fill[k+"lt20}"] = fmt.Sprintf("%d of %d", lt20, len(cws))
				fill[k+"lt100}"] = fmt.Sprintf("%d of %d", lt100, len(cws))
				fill[k+"t90}"] = fms(percentile(t90, 50))
			}
		}
	}
}

const hsHZIntro = `The report's kernels ran HyStart as merged in 2.6.29, up to 2.6.38, and
distributions built them with HZ = 100, 250 (Debian's choice) or 1000. In
those kernels HyStart's clock *and its RTT samples* were jiffies
(cc/jiffies.go): CUBIC did not ask for microsecond stamps, so
tcp_clean_rtx_queue gave it rtt_us = jiffies_to_usecs(now - when) with
both times in jiffies. Each line below is such a sender (cubic options
` + "`hystart: linux-2008, hystart_hz: HZ, slow_start: per-ack`" + `, init_cwnd 3): HyStart on
jiffies, slow start by one packet per ACK (tcp_slow_start with the default
tcp_abc = 0) and the initial window of RFC 3390 that tcp_init_cwnd gave a
1448-byte MSS before 2.6.39 (3 segments). The receivers are 2.6.3x's: an
ACK every second full segment or after TCP_DELACK_MIN = 40 ms, and 2 quick
ACKs at the start (tcp_incr_quickack: the initial receive window of 4 MSS
that tcp_select_initial_window offered, over 2 MSS). A 2.6.3x receiver
also ACKed at once whenever its receive window grew (tcp_grow_window sets
icsk_ack.quick), which during slow start is often; we do not model the
receive window's growth, so the second group of lines brackets it with a
receiver that ACKs every segment. Everything else is the setup above.

`

// stats are h's exit cwnds and times to 90% (ms), and how many exits were
// below 20 and below 100 packets.
func (h *hsHZResult) stats() (cws, t90 []float64, lt20, lt100 int) {
	for _, r := range h.runs {
		cws = append(cws, r.exitCwnd)
		t90 = append(t90, hsT90ms(r))
		if r.exitCwnd < 20 {
			lt20++
		}
		if r.exitCwnd < 100 {
			lt100++
		}
	}
	return cws, t90, lt20, lt100
}

// hsT90ms is the time to 90% in ms, +Inf when not reached.
func hsT90ms(r *hsResult) float64 {
	if r.t90 == sim.Never {
		return math.Inf(1)
	}
	return r.t90.Seconds() * 1e3
}

// hsHistogram draws the exit-cwnd histogram: a group of bars per bin, a
// bar per HZ, the legend at the top right above the bars.
func hsHistogram(title string, series []string, values [][]float64, runs float64, dir, name string) error {
	p := newPlot(title, "cwnd at slow-start exit (packets)", "runs")
	width := vg.Points(12)
	for si, sname := range series {
		b, err := plotter.NewBarChart(plotter.Values(values[si]), width)
		if err != nil {
			return err
		}
		b.Color = palette[si%len(palette)]
		b.LineStyle.Width = 0
		b.Offset = vg.Length(si-len(series)/2) * width
		if len(series)%2 == 0 {
			b.Offset += width / 2
		}
		p.Add(b)
		p.Legend.Add(sname, b)
	}
	p.NominalX(hsHZBinLabels()...)
	p.X.Min, p.X.Max = -0.7, float64(len(hsHZBins))-0.3
	p.Y.Min, p.Y.Max = 0, runs*1.35
	step := math.Max(1, math.Ceil(runs/20)*5)
	var ticks []plot.Tick
	for y := 0.0; y <= p.Y.Max; y += step {
		ticks = append(ticks, plot.Tick{Value: y, Label: fmt.Sprintf("%.0f", y)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	return save(p, dir, name)
}
