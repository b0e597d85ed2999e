package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/lockstep-sim/lockstep/cmd/lockstep/internal/ui"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/internal/yamlx"
	"github.com/lockstep-sim/lockstep/partition"
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
fct.csv's fct_ns ends when the receiver has the last byte; --sender-fct
(output.sender_fct, always under compat: stracksim) adds sender_fct_ns, when
the sender saw it acknowledged, where htsim and STrack-Sim end a flow.
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
	cmd.Flags().Int("cores", 0, "use at most this many cores (default: GOMAXPROCS): a large enough fabric is cut into one in-memory partition per core")
	cmd.Flags().String("cpuprofile", "", "write a CPU profile of the run (go tool pprof) to this file; with --procs each node i also writes FILE.node<i>")
	cmd.Flags().String("ui", "", "serve the live view (docs/ui.md) on this loopback address while the run goes on, e.g. 127.0.0.1:8080")
	cmd.Flags().Bool("ui-wait", false, "with --ui: keep serving after the run ends, until interrupted")
	addOutputFlags(cmd)
	addInputFlags(cmd)
	addRunDistributedFlags(cmd, v)
	addCheckpointFlags(cmd)
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
	rs := resumeOf(cmd)
	var b *scenario.Built
	var cut *autoCut
	if rs != nil {
		// lockstep resume: the scenario, seed and cut the run had.
		b, cut = rs.b, rs.cut()
	} else {
		if b, err = loadScenario(path, edits...); err != nil {
			return err
		}
		// How the run is cut (the default cut, or one partition), then
		// what the run builds is built before anything is written: a
		// fabric it cannot build leaves no --out behind (and validate
		// says the same).
		if cut, err = defaultCut(cmd, b); err != nil {
			return badInput(err)
		}
	}
	ck, err := checkpointing(cmd, out)
	if err != nil {
		return err
	}
	if ck != nil && len(b.External) > 0 {
		return badInput(fmt.Errorf("%s: external: a run with external elements cannot checkpoint (their state is theirs)", b.File))
	}
	// The external elements, if any: connected here for a run in this
	// process, by the nodes for a run over NATS.
	inProcess := cut != nil || v.GetString("run.transport") == "memory"
	closeElements, err := connectElements(cmd, v, b, inProcess)
	if err != nil {
		return err
	}
	defer closeElements()
	var f *fabric.Fabric
	var building time.Time // when building f began: the run's setup and wall time count from there
	switch {
	case cut != nil && cut.pl == nil:
		// One partition, in this process.
		building = perfClock()
		if f, err = runner.Prepare(b); err != nil {
			return badInput(err)
		}
	case cut == nil:
		// Distributed as the flags or the scenario's placement ask.
		if _, err := partition.ForScenario(b, v.GetInt("run.partitions")); err != nil {
			return badInput(err)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return badInput(fmt.Errorf("--out %s: %v", out, unwrapPathErr(err)))
	}
	setCrashDir(out)
	if testHook != nil {
		testHook("run")
	}
	if prof, _ := cmd.Flags().GetString("cpuprofile"); prof != "" {
		stopProf, err := startCPUProfile(prof)
		if err != nil {
			return badInput(err)
		}
		defer stopProf()
	}
	if handled, err := runDistributedIfAsked(cmd, v, b, out, stdout, stderr, cut, ck); handled {
		return err
	}
	if ck != nil {
		pl, err := partition.MakeFlows(b.Topo, b.Fabric.Impairments, b.Fabric.Flows, b.Fabric.Tasks, make([]int, len(b.Topo.Nodes)))
		if err != nil {
			return internal(err)
		}
		if err := ck.start(cmd, b, pl, out, runInfo{Mode: modeOne, Cut: cut.info}); err != nil {
			return err
		}
	}
	if _, err := runMetricsArgs(cmd, false, 1); err != nil {
		return badInput(err) // --metrics without node processes
	}
	quiet := v.GetBool("run.quiet")
	start := time.Now()
	last := start
	show := !quiet && (v.GetBool("run.progress") || isTerminal(stderr))
	opt := runner.Options{Progress: func(p runner.Progress) {
		if !show || time.Since(last) < 200*time.Millisecond && p.FlowsDone != p.Flows && !p.Final {
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
	ck.runnerOptions(cmd, &opt)
	var live *ui.Live
	if addr, _ := cmd.Flags().GetString("ui"); addr != "" {
		live = ui.NewLive(b)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		at, wait, err := ui.Serve(ctx, addr, live.Model)
		if err != nil {
			return badInput(err)
		}
		defer wait()
		defer cancel()
		fmt.Fprintf(stderr, "live view: http://%s/\n", at)
		// Observe runs between event batches; smaller batches only make
		// the view smoother (the events and their order do not change).
		opt.Observe = live.Observe
		if testObserveDelay > 0 {
			hold := testObserveHold
			opt.Observe = func(f *fabric.Fabric) {
				live.Observe(f)
				if hold != nil {
					<-hold
				}
				time.Sleep(testObserveDelay)
			}
		}
		opt.ProgressEvery = 1 << 14
	}
	res, perf, err := execute(b, f, building, cut.info, out, opt, ck.perf(cmd), func(r *runner.Result) {
		if show {
			fmt.Fprintln(stderr)
		}
		if !r.Complete && r.StoppedBy == "incomplete" && stopWhy != "" {
			r.Reason = stopWhy
		}
	})
	if ferr := ck.finish(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	wall := perf.WallSeconds
	if live != nil {
		live.Finish(res.End)
		if wait, _ := cmd.Flags().GetBool("ui-wait"); wait {
			fmt.Fprintln(stderr, "live view: the run has ended; serving until interrupted")
			select {
			case <-stopRun:
			case <-cmd.Context().Done():
			}
		}
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

// perfClock is the wall clock of summary.json's perf (setup and wall
// seconds); tests replace it.
var perfClock = time.Now

// testObserveDelay, set by tests only, slows a run with --ui down (in wall
// time) so that a browser can watch it.
var testObserveDelay time.Duration

// testObserveHold, set by tests only with testObserveDelay, holds a run
// with --ui after its first batch until it is closed: a browser that is
// slow to start (a loaded machine) still sees the run going on.
var testObserveHold chan struct{}

// execute runs b in this process and writes its outputs into out (which
// exists): what `lockstep run` does once the scenario is loaded, and what
// `lockstep sweep` does for every run, so a sweep's run is the run alone.
// before, if set, sees the result before it is written. If the caller
// built f, building is when it began: perf's setup and wall seconds count
// from there (from now if it is zero).
func execute(b *scenario.Built, f *fabric.Fabric, building time.Time, cut *partition.DefaultCut, out string, opt runner.Options,
	ckpt func() any, before func(*runner.Result)) (*runner.Result, results.Perf, error) {
	start := building
	if start.IsZero() {
		start = perfClock()
	}
	var peakHeap uint64
	var setup float64
	progress := opt.Progress
	opt.Progress = func(p runner.Progress) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peakHeap = max(peakHeap, ms.HeapInuse)
		if progress != nil {
			progress(p)
		}
	}
	opt.Setup = func() { setup = perfClock().Sub(start).Seconds() }
	var res *runner.Result
	var err error
	if f == nil {
		f, err = runner.Prepare(b)
	}
	if err == nil {
		res, err = runner.RunPrepared(b, f, opt)
	}
	if err != nil {
		// A fabric the scenario cannot build is bad input; a single part
		// that does not merge is a broken invariant.
		if se := (*scenario.Error)(nil); errors.As(err, &se) {
			return nil, results.Perf{}, badInput(err)
		}
		if errors.As(err, new(usageError)) || errors.As(err, new(runFailedError)) {
			return nil, results.Perf{}, err
		}
		return nil, results.Perf{}, internal(err)
	}
	wall := perfClock().Sub(start).Seconds()
	if before != nil {
		before(res)
	}
	perf := results.Perf{WallSeconds: wall, SetupSeconds: setup, EventsPerSec: float64(res.Fabric.Engine().Stats.Events) / wall,
		PeakRSSBytes: peakRSS(), PeakHeapBytes: peakHeap, Partitions: 1, Cut: cut}
	if ckpt != nil {
		perf.Checkpoints = ckpt()
	}
	if err := res.WriteDir(out, perf, nil); err != nil {
		return nil, perf, err
	}
	return res, perf, nil
}

// runEdits are the changes the command line makes to the scenario before
// it is built (--seed, --cwnd, --queues, --sender-fct): every run, in one
// process or many, builds the scenario after them.
func runEdits(cmd *cobra.Command, v *viper.Viper) ([]scenario.Edit, error) {
	edits, err := inputEdits(cmd)
	if err != nil {
		return nil, err
	}
	if cmd.Flags().Changed("seed") || v.IsSet("run.seed") && os.Getenv("LOCKSTEP_SEED") != "" {
		edits = append(edits, scenario.WithSeed(v.GetUint64("run.seed")))
	}
	more, err := outputEdits(cmd)
	if err != nil {
		return nil, err
	}
	return append(edits, more...), nil
}

// addInputFlags adds --allow-outside, which lets a scenario read files
// outside its folder.
func addInputFlags(cmd *cobra.Command) {
	cmd.Flags().Bool("allow-outside", false, "let the scenario read files outside its folder (absolute names, ..)")
	cmd.Flags().String("max-memory", "", "refuse a scenario whose memory estimate exceeds this, e.g. 8GiB; 0: no limit (default: 80% of this machine's memory)")
}

// inputEdits are the edits of --allow-outside and --max-memory.
func inputEdits(cmd *cobra.Command) ([]scenario.Edit, error) {
	var edits []scenario.Edit
	if ok, _ := cmd.Flags().GetBool("allow-outside"); ok {
		edits = append(edits, scenario.AllowOutside())
	}
	if v, _ := cmd.Flags().GetString("max-memory"); v != "" {
		var sz yamlx.Size
		switch err := sz.UnmarshalYAMLScalar(v); {
		case v == "0":
			edits = append(edits, scenario.WithMemoryLimit(0))
		case err != nil || sz.Bytes() <= 0:
			return nil, badInput(fmt.Errorf("--max-memory: want a size such as 8GiB, or 0 for no limit; got %q", v))
		default:
			edits = append(edits, scenario.WithMemoryLimit(sz.Bytes()))
		}
	}
	return edits, nil
}

// defaultMemoryLimit is the share of the machine's memory a scenario may
// need (docs/design.md §9: refused before allocation): 80%, leaving room
// for the OS and the outputs. 0 (no limit) where the memory is unknown.
func defaultMemoryLimit() int64 { return machineMemory() / 5 * 4 }

// addOutputFlags adds --cwnd, --queues and --sender-fct, which ask for
// optional outputs.
func addOutputFlags(cmd *cobra.Command) {
	cmd.Flags().Bool("cwnd", false, "also write cwnd.csv for every flow (as output.cwnd: {all: true})")
	cmd.Flags().Bool("sender-fct", false, "also write each flow's sender-side completion, where htsim and STrack-Sim end a flow: fct.csv's acked_ns and sender_fct_ns, summary.json's sender_fct_ns (as output.sender_fct: true)")
	cmd.Flags().Duration("queues", 0, "also write queue_depth.csv, sampling every this long in virtual time, e.g. 10us (as output.queues)")
}

// outputEdits are the edits of --cwnd, --queues and --sender-fct.
func outputEdits(cmd *cobra.Command) ([]scenario.Edit, error) {
	var edits []scenario.Edit
	if cwnd, _ := cmd.Flags().GetBool("cwnd"); cwnd {
		edits = append(edits, scenario.WithCwnd())
	}
	if sender, _ := cmd.Flags().GetBool("sender-fct"); sender {
		edits = append(edits, scenario.WithSenderFCT())
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

// cutModel decides the default cut (tests replace it).
var cutModel = partition.DefaultCutModel

// autoCut is the default cut of a run that asked for no distribution:
// the placement when the model cuts (nil: one partition) and its reasons.
type autoCut struct {
	pl   *partition.Placement
	info *partition.DefaultCut
	// explicit: a resumed run whose in-memory partitions were asked for
	// (--transport memory), not the default cut.
	explicit bool
}

// defaultCut decides how `lockstep run` without distributed flags cuts
// b: one in-memory partition per core when the model says it pays
// (design.md §9), one partition with --partitions 1. A run that asked for
// a distributed execution (flags or a placement section) gets nil.
func defaultCut(cmd *cobra.Command, b *scenario.Built) (*autoCut, error) {
	cores := runtime.GOMAXPROCS(0)
	if n, _ := cmd.Flags().GetInt("cores"); cmd.Flags().Changed("cores") {
		if n < 1 {
			return nil, fmt.Errorf("--cores %d: want at least 1", n)
		}
		cores = min(cores, n)
	}
	if p, _ := cmd.Flags().GetInt("partitions"); cmd.Flags().Changed("partitions") && p == 1 && onlyPartitionsFlag(cmd, b) &&
		(b.Scenario == nil || !b.Scenario.Placement.Asks()) {
		return &autoCut{info: &partition.DefaultCut{Partitions: 1, Cores: cores, Reason: "--partitions 1"}}, nil
	}
	if distributedAsked(cmd, b) {
		return nil, nil
	}
	pl, info, err := cutModel.Decide(b, cores)
	if err != nil {
		return nil, err
	}
	return &autoCut{pl: pl, info: &info}, nil
}

// onlyPartitionsFlag reports whether --partitions is the only distributed
// flag given (so --partitions 1 means one plain partition).
func onlyPartitionsFlag(cmd *cobra.Command, b *scenario.Built) bool {
	for _, n := range distFlags {
		if n != "partitions" && cmd.Flags().Changed(n) && asksDistribution(n, b) {
			return false
		}
	}
	return true
}

// startCPUProfile starts a CPU profile into path; the returned function
// stops it and closes the file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %v", unwrapPathErr(err))
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpuprofile: %v", err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
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
