package plot

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// farRun writes a run whose FCTs lie far from 0 (2.9 to 3.3 ms), whose
// cwnd and queues rise to a peak at their last sample, and whose title
// and port names are long.
func farRun(t *testing.T) *Run {
	t.Helper()
	var fct, cwnd, q strings.Builder
	fct.WriteString("flow_id,src,dst,size_bytes,start_ns,finish_ns,fct_ns,packets_sent,retransmits,timeouts,ecn_marked_acks,finished,ideal_fct_ns,slowdown\n")
	for i := range 20 {
		f := 2.9e6 + float64(i)*2e4
		fmt.Fprintf(&fct, "%d,0,1,1000000,0.000,%.3f,%.3f,1,0,0,0,true,800000.000,%.6f\n", i, f, f, f/8e5)
	}
	cwnd.WriteString("time_ns,flow,cwnd_bytes,ssthresh_bytes,srtt_ns,min_rtt_ns,state,event\n")
	q.WriteString("time_ns,switch,port,depth_bytes\n")
	for fl := range 20 {
		for k := range 50 {
			fmt.Fprintf(&cwnd, "%d.000,%d,%d,,,,slow_start,ack\n", 1000*k, fl, 14600+1000*k*(fl+1))
		}
		for k := range 50 {
			fmt.Fprintf(&q, "%d.000,aggregation-switch-%d,%d,%d\n", 1000*k, fl, fl, 1500*k*(fl+1))
		}
	}
	dir := writeDir(t, map[string]string{
		FCTFile: fct.String(), CwndFile: cwnd.String(), QueueDepthFile: q.String(),
		SummaryFile: `{"name": "a-rather-long-scenario-name-for-a-fat-tree-with-128-hosts", "virtual_end_ps": 3500000000}`,
	})
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func byName(t *testing.T, figs []*Figure, name string) *Figure {
	t.Helper()
	for _, f := range figs {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no figure %s", name)
	return nil
}

// unitDiv reads the unit of an axis label "... (MB)".
func unitDiv(t *testing.T, label string) float64 {
	t.Helper()
	i := strings.LastIndex(label, "(")
	u := strings.TrimSuffix(label[i+1:], ")")
	for _, c := range []struct {
		u string
		d float64
	}{{"bytes", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"ns", 1}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}} {
		if u == c.u {
			return c.d
		}
	}
	t.Fatalf("no unit in %q", label)
	return 0
}

// Every curve stays inside its axes with room to spare: the axis maxima
// lie above the data maxima (the cwnd and queue curves used to touch and
// run off the top), and the FCT CDF's x axis starts at the data, not at 0.
func TestFigures_AxesHoldTheData(t *testing.T) {
	r := farRun(t)
	figs, _, err := Figures(r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	maxOf := func(ss []Series, n int) (x, y float64) {
		for _, s := range ss[:min(n, len(ss))] {
			for _, p := range s.Points {
				x, y = math.Max(x, p.X), math.Max(y, p.Y)
			}
		}
		return x, y
	}
	for _, c := range []struct {
		fig string
		ss  []Series
	}{{FigCwnd, r.Cwnd}, {FigQueueDepth, r.Queues}} {
		p := byName(t, figs, c.fig).plot
		x, y := maxOf(c.ss, DefaultMaxSeries)
		x, y = x/unitDiv(t, p.X.Label.Text), y/unitDiv(t, p.Y.Label.Text)
		if p.Y.Max <= y || p.X.Max < x || p.Y.Min != 0 {
			t.Errorf("%s: axes x [%v, %v] y [%v, %v], want the data's x max %v and y max %v inside, with y from 0",
				c.fig, p.X.Min, p.X.Max, p.Y.Min, p.Y.Max, x, y)
		}
	}
	lo, hi := math.Inf(1), 0.0
	for _, f := range r.Flows {
		lo, hi = math.Min(lo, f.FCTNs/1e3), math.Max(hi, f.FCTNs/1e3)
	}
	cdf := byName(t, figs, FigFCTCDF).plot
	if cdf.X.Min > lo || cdf.X.Max < hi || cdf.X.Min < lo/2 || cdf.Y.Max <= 1 {
		t.Errorf("fct_cdf: x [%v, %v] y max %v; want x from at most %v but not from far below it (the data start far from 0), up to at least %v, y above 1",
			cdf.X.Min, cdf.X.Max, cdf.Y.Max, lo, hi)
	}
	pf := byName(t, figs, FigFCTPerFlow).plot
	if pf.Y.Max <= hi || pf.X.Min >= 0 || pf.X.Max <= 19 {
		t.Errorf("fct_per_flow: x [%v, %v] y max %v; want ids 0..19 inside and y above %v", pf.X.Min, pf.X.Max, pf.Y.Max, hi)
	}
	sd := byName(t, figs, FigSlowdown).plot
	if want := (2.9e6 + 19*2e4) / 8e5; sd.Y.Max <= want {
		t.Errorf("slowdown_vs_size: y max %v, want above the largest slowdown %v", sd.Y.Max, want)
	}
	// Near 0 the CDF starts at 0.
	run, err := Load("testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	small, _, _ := Figures(run, Options{})
	if p := byName(t, small, FigFCTCDF).plot; p.X.Min != 0 {
		t.Errorf("fct_cdf of FCTs from 12.5 ns: x min %v, want 0", p.X.Min)
	}
}

var trailingZero = regexp.MustCompile(`\.\d*0$|^-?0\d`)

// checkTicks: labelled ticks are 1, 2 or 5 times a power of ten apart,
// evenly, with no superfluous zeros ("250", "0.5", never "250.00").
func checkTicks(t *testing.T, what string, ts []gplot.Tick) {
	t.Helper()
	var vals []float64
	for _, tk := range ts {
		if tk.Label == "" {
			continue
		}
		if trailingZero.MatchString(tk.Label) {
			t.Errorf("%s: tick label %q has superfluous zeros", what, tk.Label)
		}
		v, err := strconv.ParseFloat(tk.Label, 64)
		if err != nil || math.Abs(v-tk.Value) > 1e-9*math.Max(1, math.Abs(v)) {
			t.Errorf("%s: tick label %q is not its value %v", what, tk.Label, tk.Value)
		}
		vals = append(vals, v)
	}
	if len(vals) < 2 {
		t.Errorf("%s: %d labelled ticks, want at least 2", what, len(vals))
		return
	}
	step := vals[1] - vals[0]
	m := step / math.Pow10(int(math.Floor(math.Log10(step)+1e-9)))
	if math.Abs(m-1) > 1e-6 && math.Abs(m-2) > 1e-6 && math.Abs(m-5) > 1e-6 {
		t.Errorf("%s: step %v is not 1, 2 or 5 times a power of ten (%v)", what, step, vals)
	}
	for i := 2; i < len(vals); i++ {
		if d := vals[i] - vals[i-1]; math.Abs(d-step) > 1e-6*step {
			t.Errorf("%s: uneven steps %v", what, vals)
			break
		}
	}
}

func TestNiceTicks_OneTwoFiveNoTrailingZeros(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 1875, "0 500 1000 1500"},
		{0, 1.05, "0 0.2 0.4 0.6 0.8 1"},
		{2920, 3350, "3000 3100 3200 3300"},
		{0, 0.0042, "0 0.001 0.002 0.003 0.004"},
		{-0.5, 19.5, "0 5 10 15"},
	} {
		ts := niceTicks{}.Ticks(c.lo, c.hi)
		checkTicks(t, fmt.Sprint(c.lo, c.hi), ts)
		var got []string
		for _, tk := range ts {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("[%v, %v]: labels %q, want %q", c.lo, c.hi, strings.Join(got, " "), c.want)
		}
	}
	if ts := (niceTicks{integer: true}).Ticks(-0.2, 3.2); len(ts) == 0 || ts[0].Value != 0 || ts[1].Value != 1 {
		t.Errorf("integer ticks on [-0.2, 3.2]: %v, want 0, 1, 2, 3", ts)
	}
}

// Every figure's linear axes have nice ticks, every title fits the
// figure's width (the queue-depth title was cut off), and a legend sits
// right of the plot, never over it.
func TestFigures_TicksTitlesLegends(t *testing.T) {
	r := farRun(t)
	c := draw.New(vgimg.New(Width, Height))
	for _, opt := range []Options{{}, {MaxSeries: 20}} {
		figs, _, err := Figures(r, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range figs {
			for _, ax := range []struct {
				n string
				a *gplot.Axis
			}{{"x", &f.plot.X}, {"y", &f.plot.Y}} {
				if _, log := ax.a.Scale.(gplot.LogScale); !log {
					checkTicks(t, f.Name+" "+ax.n, ax.a.Tick.Marker.Ticks(ax.a.Min, ax.a.Max))
				}
			}
			lo := f.layout(c)
			if w := lo.titleStyle.Width(lo.title); lo.title == "" || w > c.Size().X {
				t.Errorf("%s: title %q is %v wide, want it to fit in %v", f.Name, lo.title, w, c.Size().X)
			}
			if f.legend != nil {
				if lo.legend.Min.X < lo.plot.Max.X || lo.legend.Max.X > c.Max.X {
					t.Errorf("%s: legend x [%v, %v] overlaps the plot (ends at %v) or leaves the figure", f.Name,
						lo.legend.Min.X, lo.legend.Max.X, lo.plot.Max.X)
				}
				if h := f.legend.Rectangle(lo.legend).Size().Y; h > lo.legend.Size().Y {
					t.Errorf("%s: legend %v tall in %v", f.Name, h, lo.legend.Size().Y)
				}
			}
			if lo.plot.Max.Y > c.Max.Y-lo.titleStyle.Height(lo.title) {
				t.Errorf("%s: the plot reaches into the title", f.Name)
			}
		}
	}
	// A title too long for any font size is shortened, not cut off.
	r.Title = strings.Repeat("very-long-name ", 20)
	figs, _, _ := Figures(r, Options{})
	lo := figs[0].layout(c)
	if !strings.HasSuffix(lo.title, "…") || lo.titleStyle.Width(lo.title) > c.Size().X {
		t.Errorf("a 300-character title: %q, want it shortened with … to fit", lo.title)
	}
}
