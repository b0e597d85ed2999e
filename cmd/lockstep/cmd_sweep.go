package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sweep"
)

func newSweepCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		out      string
		parallel int
		progress bool
		quiet    bool
	)
	cmd := &cobra.Command{
		Use:   "sweep SPEC",
		Short: "Run a scenario over a grid of parameters and seeds; write sweep.csv and sweep-summary.csv",
		Long: `Run the base scenario a sweep spec names over every combination of its
parameters (scenario fields by path, each a list or a range) and seeds,
several runs at once (--parallel, default one per core). Each run is
exactly 'lockstep run' of the edited scenario and writes its usual files
into OUT/NAME=VALUE,.../seed=N/. A run whose folder already holds a
complete summary.json of the same effective scenario (digest) is not run
again, so an interrupted sweep resumes where it stopped. Then:

  sweep.csv          one row per run: the parameters, the seed and the
                     summary's metrics (FCT and slowdown percentiles, drops,
                     marks, events/s, ...)
  sweep-summary.csv  per point: mean and 95% confidence interval
                     (Student's t) of every metric over the seeds

'lockstep plot OUT --metric slowdown_p99 --x PATH' draws a metric against a
parameter with error bars. The spec format is in docs/scenario.md
("Sweeps"); a progress bar goes to stderr when it is a terminal (or with
--progress).`,
		Example: "  lockstep sweep examples/sweeps/dumbbell-cc.yaml --out out/cc-sweep",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := sweep.Load(args[0])
			if err != nil {
				return badInput(err)
			}
			if parallel <= 0 {
				parallel = runtime.GOMAXPROCS(0)
			}
			opt := sweep.Options{Out: out, Parallel: parallel, Run: func(b *scenario.Built, dir string) error {
				res, _, err := execute(b, nil, time.Time{}, nil, dir, runner.Options{}, nil, nil)
				if err != nil {
					return err
				}
				if !res.Complete {
					return fmt.Errorf("%s: run incomplete", dir)
				}
				return nil
			}}
			if !quiet && (progress || isTerminal(stderr)) {
				opt.Progress = stderr
			}
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sigs)
			stop := make(chan struct{})
			done := make(chan struct{})
			defer close(done)
			go func() {
				select {
				case <-sigs:
					close(stop)
				case <-done:
				}
			}()
			opt.Stop = stop
			rep, err := sweep.Run(l, opt)
			if err != nil {
				if rep == nil {
					return badInput(err)
				}
				return err
			}
			if !quiet {
				fmt.Fprintf(stdout, "%s: %d runs (%d run, %d resumed) in %.1fs -> %s/%s, %s\n", args[0], rep.Runs, rep.Ran,
					rep.Resumed, rep.Wall.Seconds(), rep.Out, sweep.RunsFile, sweep.SummaryFile)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "output directory (default: the spec's out, else out/NAME for SPEC NAME.yaml)")
	f.IntVar(&parallel, "parallel", 0, "runs at once (default: one per core, GOMAXPROCS)")
	f.BoolVar(&progress, "progress", false, "show the progress bar even when stderr is not a terminal")
	f.BoolVar(&quiet, "quiet", false, "no progress bar and no closing line")
	return cmd
}
