package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/plot"
)

func newPlotCmd(stdout io.Writer) *cobra.Command {
	var (
		out       string
		formats   []string
		logx      bool
		maxSeries int
		metric, x string
	)
	cmd := &cobra.Command{
		Use:   "plot DIR",
		Short: "Draw a run's standard figures (FCT, slowdown, cwnd, queue depth) as PNG and SVG",
		Long: `Read the CSV files a run wrote into DIR and draw its standard figures, each
as NAME.png and NAME.svg (6x4 inches):

  fct_cdf       CDF of flow completion time (µs) of the finished flows
  fct_per_flow  FCT against flow id; unfinished flows are marked
  fct_vs_size   FCT against flow size, log-log
  slowdown_vs_size  slowdown (fct.csv: FCT over the ideal FCT) against flow
                size, with the median and p99 per size bin
  cwnd          cwnd over time per flow (needs cwnd.csv)
  queue_depth   queue depth over time per port, highest peaks first
                (needs queue_depth.csv)

For a sweep's directory (lockstep sweep), --metric M --x PATH draws
sweep_M_vs_NAME: the metric's mean over the seeds against the parameter
PATH, one line per combination of the other parameters, with the 95%
confidence interval as error bars (from sweep-summary.csv).

fct.csv is required; a figure whose input is missing is skipped. The title
comes from summary.json when present. The same inputs give the same bytes.
Exit status 2 when DIR or one of its files is missing or malformed.`,
		Example: "  lockstep plot results/run1\n  lockstep plot --logx --format svg --out figs results/run1\n" +
			"  lockstep plot out/k8-sweep --metric slowdown_p99 --x transport.cc",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmts, err := plot.ParseFormats(formats)
			if err != nil {
				return badInput(err)
			}
			if maxSeries < 1 {
				return badInput(fmt.Errorf("--max-series: want at least 1, got %d", maxSeries))
			}
			dir := out
			if dir == "" {
				dir = args[0]
			}
			if metric != "" || x != "" || plot.IsSweep(args[0]) {
				if metric == "" || x == "" {
					return badInput(fmt.Errorf("%s is a sweep: give --metric and --x (e.g. --metric slowdown_p99 --x transport.cc)", args[0]))
				}
				fig, err := plot.SweepFigure(args[0], metric, x)
				if err != nil {
					return badInput(err)
				}
				outs, err := plot.Save([]*plot.Figure{fig}, dir, fmts)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "drew %s: %s\n", outs[0].Figure, strings.Join(outs[0].Files, " "))
				return nil
			}
			run, err := plot.Load(args[0])
			if err != nil {
				return badInput(err)
			}
			figs, skips, err := plot.Figures(run, plot.Options{LogX: logx, MaxSeries: maxSeries})
			if err != nil {
				return err
			}
			outs, err := plot.Save(figs, dir, fmts)
			if err != nil {
				return err
			}
			for _, o := range outs {
				fmt.Fprintf(stdout, "drew %s: %s\n", o.Figure, strings.Join(o.Files, " "))
			}
			for _, s := range skips {
				fmt.Fprintf(stdout, "skipped %s: %s\n", s.Name, s.Reason)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "write the figures into this directory (created if needed) instead of DIR")
	f.StringSliceVar(&formats, "format", []string{"png", "svg"}, "output formats: png, svg or both")
	f.BoolVar(&logx, "logx", false, "log-scale FCT axis in fct_cdf")
	f.StringVar(&metric, "metric", "", "sweep: the metric to draw (a sweep.csv column, e.g. slowdown_p99)")
	f.StringVar(&x, "x", "", "sweep: the parameter on the x axis (its path, as in the spec)")
	f.IntVar(&maxSeries, "max-series", plot.DefaultMaxSeries, "most lines in the cwnd and queue_depth figures")
	return cmd
}
