package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

func newRunCmd(v *viper.Viper, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a scenario and write fct.csv, queues.csv and summary.json",
		Long: `Run a scenario in this process and write into --out:
  fct.csv       one row per flow (start, finish, FCT, packets, retransmits, ...)
  queues.csv    one row per switch port (enqueued, dropped, marked, peak depth)
  summary.json  seed, scenario digest, virtual end time, events, drops, marks,
                wall time, events per second and peak memory
  cwnd.csv, queue_depth.csv, pcap/  when the scenario's output section or
                --cwnd / --queues ask for them
Each file is written atomically. A run that fails after it starts (Ctrl-C,
a node that dies or goes silent past --peer-timeout, NATS gone) writes what
it has, marked "complete": false in summary.json, and exits 3 (see
'lockstep --help' for every exit status). Progress in virtual time goes to stderr when
stderr is a terminal (or with --progress). Flags may also be set from the
environment: LOCKSTEP_OUT, LOCKSTEP_SEED, LOCKSTEP_PROGRESS.`,
		Example: "  lockstep run examples/dumbbell.yaml --out out/dumbbell --seed 7",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd, v, args[0], stdout, stderr)
		},
	}
	cmd.Flags().String("out", "out", "directory for the output files (created if missing)")
	cmd.Flags().Uint64("seed", 0, "seed of every random stream (default: the scenario's, else 1)")
	cmd.Flags().Bool("progress", false, "show progress on stderr even when it is not a terminal")
	cmd.Flags().Bool("quiet", false, "no progress and no closing line")
	addOutputFlags(cmd)
	addRunDistributedFlags(cmd, v)
	for _, f := range []string{"out", "seed", "progress", "quiet"} {
		_ = v.BindPFlag("run."+f, cmd.Flags().Lookup(f))
		_ = v.BindEnv("run."+f, "LOCKSTEP_"+upper(f))
	}
	return cmd
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

func runRun(cmd *cobra.Command, v *viper.Viper, path string, stdout, stderr io.Writer) error {
	edits, err := runEdits(cmd, v)
	if err != nil {
		return err
	}
	out := v.GetString("run.out")
	b, err := loadScenario(path, edits...)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return badInput(fmt.Errorf("--out %s: %v", out, unwrapPathErr(err)))
	}
	setCrashDir(out)
	if testHook != nil {
		testHook("run")
	}
	if handled, err := runDistributedIfAsked(cmd, v, b, out, stdout, stderr); handled {
		return err
	}
	if _, err := runMetricsArgs(cmd, false, 1); err != nil {
		return badInput(err) // --metrics without node processes
	}
	quiet := v.GetBool("run.quiet")
	show := !quiet && (v.GetBool("run.progress") || isTerminal(stderr))
	start := time.Now()
	var peakHeap uint64
	last := start
	opt := runner.Options{Progress: func(p runner.Progress) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peakHeap = max(peakHeap, ms.HeapInuse)
		if !show || time.Since(last) < 200*time.Millisecond && p.FlowsDone != p.Flows {
			return
		}
		last = time.Now()
		el := time.Since(start).Seconds()
		fmt.Fprintf(stderr, "\r  virtual %-12s events %-12d %8.2fM ev/s  flows %d/%d   ",
			p.Now, p.Events, float64(p.Events)/el/1e6, p.FlowsDone, p.Flows)
	}}
	// Ctrl-C or SIGTERM stops the run between event batches; what it has
	// is written, marked incomplete (exit status 3).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	stopRun := make(chan struct{})
	var stopWhy string
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case sig := <-sigs:
			stopWhy = "interrupted by " + sig.String()
			close(stopRun)
		case <-done:
		}
	}()
	opt.Stop = stopRun
	opt.StopReason = "interrupted"
	res, err := runner.Run(b, opt)
	if err != nil {
		// A fabric the scenario cannot build is bad input; a single part
		// that does not merge is a broken invariant.
		if se := (*scenario.Error)(nil); errors.As(err, &se) {
			return badInput(err)
		}
		return internal(err)
	}
	wall := time.Since(start).Seconds()
	if show {
		fmt.Fprintln(stderr)
	}
	if !res.Complete {
		res.Reason = stopWhy
	}
	perf := results.Perf{WallSeconds: wall, EventsPerSec: float64(res.Fabric.Engine().Stats.Events) / wall,
		PeakRSSBytes: peakRSS(), PeakHeapBytes: peakHeap, Partitions: 1}
	if err := res.WriteDir(out, perf, nil); err != nil {
		return err
	}
	if !res.Complete {
		s := res.Summary()
		return fmt.Errorf("%s; %d/%d flows finished by virtual %s; partial results in %s (summary.json \"complete\": false)",
			res.Reason, s.FlowsFinished, s.Flows, res.End, out)
	}
	if !quiet {
		s := res.Summary()
		fmt.Fprintf(stdout, "%s: %d/%d flows finished, virtual end %s, %d events in %.2fs (%.2fM events/s), %d drops, %d marks -> %s\n",
			path, s.FlowsFinished, s.Flows, res.End, s.Events, wall, perf.EventsPerSec/1e6, s.Drops, s.Marks, out)
	}
	return nil
}

// runEdits are the changes the command line makes to the scenario before
// it is built (--seed, --cwnd, --queues): every run, in one process or
// many, builds the scenario after them.
func runEdits(cmd *cobra.Command, v *viper.Viper) ([]scenario.Edit, error) {
	var edits []scenario.Edit
	if cmd.Flags().Changed("seed") || v.IsSet("run.seed") && os.Getenv("LOCKSTEP_SEED") != "" {
		edits = append(edits, scenario.WithSeed(v.GetUint64("run.seed")))
	}
	more, err := outputEdits(cmd)
	if err != nil {
		return nil, err
	}
	return append(edits, more...), nil
}

// addOutputFlags adds --cwnd and --queues, which ask for optional outputs.
func addOutputFlags(cmd *cobra.Command) {
	cmd.Flags().Bool("cwnd", false, "also write cwnd.csv for every flow (as output.cwnd: {all: true})")
	cmd.Flags().Duration("queues", 0, "also write queue_depth.csv, sampling every this long in virtual time, e.g. 10us (as output.queues)")
}

// outputEdits are the edits of --cwnd and --queues.
func outputEdits(cmd *cobra.Command) ([]scenario.Edit, error) {
	var edits []scenario.Edit
	if cwnd, _ := cmd.Flags().GetBool("cwnd"); cwnd {
		edits = append(edits, scenario.WithCwnd())
	}
	queues, _ := cmd.Flags().GetDuration("queues")
	if queues < 0 {
		return nil, badInput(fmt.Errorf("--queues: must not be negative, got %v", queues))
	}
	if queues > 0 {
		// Durations on the command line are real-time units read as
		// virtual time: 1us means one virtual microsecond.
		edits = append(edits, scenario.WithQueues(sim.Time(queues.Nanoseconds())*sim.Nanosecond))
	}
	return edits, nil
}

// peakRSS is the process's peak resident set size in bytes (Linux: ru_maxrss in KiB).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) * 1024 //nolint:unconvert // Maxrss is an int32 on 32-bit Linux
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
