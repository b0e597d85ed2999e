package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/deploy"
	"github.com/lockstep-sim/lockstep/internal/liveness"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// distFlags are the run flags of a distributed run.
var distFlags = []string{"partitions", "procs", "nodes-serve", "coordinators", "nats", "transport", "run-id", "mark-every", "status-every", "external",
	"peer-timeout", "join-timeout", "element-keys"}

// addRunDistributedFlags adds the distributed-run flags to `lockstep run`.
func addRunDistributedFlags(cmd *cobra.Command, v *viper.Viper) {
	f := cmd.Flags()
	f.Int("partitions", 0, "run distributed in P partitions (placement: the scenario's, else auto)")
	f.Bool("procs", false, "run each partition as a 'lockstep node' child process (default: goroutines)")
	f.Bool("nodes-serve", false, "with --procs and the embedded server: every node process runs a NATS server of its own in process, joined by routes on loopback to this process's server and to the others', so that its reports and batches skip this process (false: the nodes connect to this process's server; unset: the nodes serve when each has a core of its own, partitions <= cores)")
	f.Int("coordinators", 1, "coordinator replicas: 1 (in this process) or 3 (child processes, raft)")
	f.String("nats", "", "use this NATS server instead of an embedded one on loopback")
	f.String("transport", "nats", "nats, or memory: partitions in this process without NATS or raft")
	f.String("run-id", "", "run id on NATS (default: random)")
	f.Bool("external", false, "start no node or coordinator: they run elsewhere on --nats and --run-id; only collect and merge")
	f.Uint64("mark-every", 0, "windows between the coordinators' progress marks in raft (default 256)")
	f.Duration("status-every", 0, "how often the coordinator leader and the nodes publish their status, their heartbeat (default 250ms)")
	f.Duration("peer-timeout", liveness.DefaultTimeout, "how long a node or the coordinator leader may be silent, or the NATS server unreachable, before the run fails (exit 3); back within it, the run goes on unchanged")
	f.Duration("join-timeout", deploy.DefaultJoinTimeout, "how long to wait for the coordinator leader and every node to be heard from (with --external: progress on stderr)")
	f.String("element-keys", "", "with the scenario's external elements on the embedded NATS server: write their keys, the server's URL and the run id into this directory")
	addNATSAuthFlags(cmd)
	addRunMetricsFlag(cmd)
	for _, n := range distFlags {
		_ = v.BindPFlag("run."+n, f.Lookup(n))
	}
}

// distributedAsked says whether `lockstep run` should run distributed: a
// distributed flag was given, or the scenario has a placement section.
func distributedAsked(cmd *cobra.Command, b *scenario.Built) bool {
	for _, n := range distFlags {
		if cmd.Flags().Changed(n) && asksDistribution(n, b) {
			return true
		}
	}
	return b.Scenario != nil && b.Scenario.Placement.Asks()
}

// runDistributedIfAsked runs b distributed when the flags (or the
// scenario's placement section) ask for it, writing the same files into
// out as a single-process run. It returns handled=false, and does
// nothing, otherwise.
func runDistributedIfAsked(cmd *cobra.Command, v *viper.Viper, b *scenario.Built, out string, stdout, stderr io.Writer, cut *autoCut,
	ck *ckptRun) (handled bool, err error) {
	var pl *partition.Placement
	transport := v.GetString("run.transport")
	switch {
	case cut != nil && cut.pl != nil && cut.explicit:
		// A resumed run that asked for --transport memory.
		pl, transport, cut = cut.pl, "memory", nil
	case cut != nil && cut.pl != nil:
		// The default cut: in-memory partitions, one per core.
		pl, transport = cut.pl, "memory"
	case cut != nil || !distributedAsked(cmd, b):
		return false, nil
	case resumeOf(cmd) != nil:
		// lockstep resume of a run over NATS: the setup's placement.
		pl = resumeOf(cmd).pl
	default:
		if pl, err = partition.ForScenario(b, v.GetInt("run.partitions")); err != nil {
			return true, badInput(err)
		}
	}
	coords := v.GetInt("run.coordinators")
	procs := v.GetBool("run.procs")
	switch {
	case transport != "nats" && transport != "memory":
		return true, badInput(fmt.Errorf("--transport %q: want nats or memory", transport))
	case coords != 1 && coords != 3:
		return true, badInput(fmt.Errorf("--coordinators %d: want 1 or 3", coords))
	case v.GetBool("run.external") && (v.GetString("run.nats") == "" || v.GetString("run.run-id") == "" || procs):
		return true, badInput(fmt.Errorf("--external needs --nats and --run-id (and starts no --procs)"))
	case transport == "memory" && (procs || coords != 1 || v.GetString("run.nats") != "" && len(b.External) == 0 || v.GetBool("run.external")):
		return true, badInput(fmt.Errorf("--transport memory runs every partition in this process: no --procs, --coordinators or --nats"))
	case v.GetDuration("run.peer-timeout") <= 0 || v.GetDuration("run.join-timeout") <= 0:
		return true, badInput(fmt.Errorf("--peer-timeout and --join-timeout must be positive"))
	case ck != nil && transport != "memory" && ck.wall > 0:
		return true, badInput(fmt.Errorf("--checkpoint-wall: not in runs over NATS, whose nodes agree on checkpoints by virtual time (--checkpoint-every) without a message"))
	case cmd.Flags().Changed("nodes-serve") && v.GetBool("run.nodes-serve") && (!procs || v.GetString("run.nats") != ""):
		return true, badInput(fmt.Errorf("--nodes-serve: the node processes of --procs serve NATS, joined to the embedded server: needs --procs and no --nats (it is --procs' default)"))
	case maxRestarts(cmd) < 0:
		return true, badInput(fmt.Errorf("--max-restarts %d: want 0 or more", maxRestarts(cmd)))
	}
	if ck != nil {
		ri := runInfo{Mode: modeMemory, Explicit: cut == nil}
		if transport == "nats" {
			ri = runInfo{Mode: modeNATS}
		}
		if cut != nil {
			ri.Cut = cut.info
		}
		if err := ck.start(cmd, b, pl, out, ri); err != nil {
			return true, err
		}
	}
	auth, err := natsAuthOptions(cmd)
	if err != nil {
		return true, badInput(err)
	}
	childArgs, childEnv, err := natsAuthArgs(cmd)
	if err != nil {
		return true, badInput(err)
	}
	margs, err := runMetricsArgs(cmd, procs, coords)
	if err != nil {
		return true, badInput(err)
	}
	childArgs = append(childArgs, margs...)
	quiet := v.GetBool("run.quiet")
	show := !quiet && (v.GetBool("run.progress") || isTerminal(stderr))
	ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	stats := node.Stats{Transport: transport, Nodes: "goroutines", Coordinators: coords}
	var m *results.Outputs
	var rs []*node.PartResult
	// Progress: the leader's window and virtual time, and the nodes'
	// events per second (NATS callbacks and RunLocal call it; mu orders
	// them).
	var mu sync.Mutex
	last := start
	events := make([]uint64, pl.P)
	// The last line (final) shows the run's end: the leader's last window
	// may start long after it (windows skip to the next event, which can
	// be a stale timer or max_time).
	progress := func(window uint64, vt sim.Time, final bool) {
		mu.Lock()
		defer mu.Unlock()
		if !show || time.Since(last) < 200*time.Millisecond && !final {
			return
		}
		last = time.Now()
		el := time.Since(start).Seconds()
		var total, lo, hi uint64
		lo = ^uint64(0)
		for _, e := range events {
			total += e
			lo, hi = min(lo, e), max(hi, e)
		}
		fmt.Fprintf(stderr, "\r  virtual %-12s window %-9d %7.0f windows/s  %6.2fM events/s (per node %.2f-%.2fM)   ",
			vt, window, float64(window)/el, float64(total)/el/1e6, float64(lo)/el/1e6, float64(hi)/el/1e6)
	}
	nodeStatus := func(st wire.NodeStatus) {
		mu.Lock()
		defer mu.Unlock()
		if st.Partition >= 0 && st.Partition < len(events) {
			events[st.Partition] = st.Events
		}
	}
	if transport == "memory" {
		// Ctrl-C or SIGTERM stops the partitions at the next window
		// boundary; what they have is written, marked incomplete (exit 3).
		lopt := node.LocalOptions{Parallel: true, Window: func(g barrier.Grant, cores []*node.Core) {
			for _, c := range cores {
				nodeStatus(wire.NodeStatus{Partition: c.Partition(), Events: c.F.Engine().Stats.Events})
			}
			progress(g.Window, g.Start, false)
		}, Stop: ctx.Done(), StopReason: "interrupted", TwoPhase: b.Scenario.Placement.TwoPhaseInMemory()}
		ck.localOptions(cmd, &lopt)
		lr, err := node.RunLocal(b, pl, lopt)
		if ferr := ck.finish(); err == nil && ferr != nil {
			return true, ferr // the last checkpoint could not be written
		}
		if errors.Is(err, node.ErrStopped) {
			if show {
				fmt.Fprintln(stderr)
			}
			return true, writePartial(&deploy.Result{Outputs: lr.Outputs}, out, time.Since(start).Seconds(), pl.P,
				errors.New("interrupted: every partition stopped at the same window boundary"))
		}
		if err != nil && lr != nil {
			// An external element failed: what the partitions have.
			if show {
				fmt.Fprintln(stderr)
			}
			return true, writePartial(&deploy.Result{Outputs: lr.Outputs}, out, time.Since(start).Seconds(), pl.P, err)
		}
		if err != nil {
			return true, err
		}
		m, rs = lr.Outputs, lr.Results
	} else {
		switch {
		case v.GetBool("run.external"):
			stats.Nodes = "external"
		case procs:
			stats.Nodes = "processes"
		}
		dopt := deploy.Options{Built: b, Placement: pl, Procs: procs, NodesServe: nodesServe(cmd, v, pl.P), Coordinators: coords,
			External: v.GetBool("run.external"),
			NATS:     v.GetString("run.nats"), Auth: auth, ChildArgs: childArgs, RunID: v.GetString("run.run-id"),
			ExeEnv: childEnv, NodeProfile: nodeProfile(cmd, procs), MarkEvery: v.GetUint64("run.mark-every"), StatusEvery: v.GetDuration("run.status-every"),
			PeerTimeout: v.GetDuration("run.peer-timeout"), JoinTimeout: v.GetDuration("run.join-timeout"),
			ElementKeys: v.GetString("run.element-keys"),
			Stderr:      stderr,
			OnStatus:    func(s wire.Status) { progress(s.Window, sim.Time(s.Start), false) }, OnNodeStatus: nodeStatus}
		ck.deployOptions(cmd, &dopt, v.GetBool("run.external"), maxRestarts(cmd))
		u0, uok := node.ProcessUsage()
		res, err := deploy.Run(ctx, dopt)
		if u1, ok := node.ProcessUsage(); ok && uok && (procs || v.GetBool("run.external")) {
			u := u1.Since(u0)
			stats.LauncherCPUSeconds, stats.LauncherRunqWaitSeconds = u.CPU.Seconds(), u.Runq.Seconds()
		}
		ck.distResult(res)
		if err != nil {
			if show {
				fmt.Fprintln(stderr)
			}
			if errors.Is(err, deploy.ErrInterrupted) {
				err = fmt.Errorf("interrupted: every node and coordinator stopped")
			}
			return true, writePartial(res, out, time.Since(start).Seconds(), pl.P, err)
		}
		m, rs = res.Outputs, res.Results
		stats.Rejected = res.Rejected
		stats.NATSRTTUs = res.RTTMicros
		for _, l := range res.Leaders {
			stats.Leaders = append(stats.Leaders, fmt.Sprintf("%s@%d", l.ID, l.Term))
		}
	}
	wall := time.Since(start).Seconds()
	ds := node.RunStats(pl, rs, m.End, wall)
	progress(ds.Windows, m.End, true)
	if show {
		fmt.Fprintln(stderr)
	}
	ds.Transport, ds.Nodes, ds.Coordinators, ds.Leaders = stats.Transport, stats.Nodes, stats.Coordinators, stats.Leaders
	ds.NATSRTTUs = stats.NATSRTTUs
	ds.LauncherCPUSeconds, ds.LauncherRunqWaitSeconds = stats.LauncherCPUSeconds, stats.LauncherRunqWaitSeconds
	ds.Rejected.NATS, ds.Rejected.Launcher, ds.Rejected.Coordinators = stats.Rejected.NATS, stats.Rejected.Launcher,
		stats.Rejected.Coordinators
	sum := m.Summary()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	perf := results.Perf{WallSeconds: wall, EventsPerSec: float64(sum.Events) / wall, PeakRSSBytes: peakRSS(),
		PeakHeapBytes: ms.HeapInuse, Partitions: pl.P}
	if f := ck.perf(cmd); f != nil {
		perf.Checkpoints = f()
	}
	var extra any
	if cut != nil {
		// A default cut is how this run executed, not what it asked for:
		// its statistics go with the machine-dependent ones.
		perf.Cut, perf.Distributed = cut.info, ds
	} else {
		extra = map[string]any{"distributed": ds}
	}
	if err := m.WriteDir(out, perf, extra); err != nil {
		return true, err
	}
	if !m.Complete {
		// A run that stopped on a failure it found (a PFC deadlock): the
		// same one-line error and exit status as in one process.
		return true, fmt.Errorf("%s; %d/%d flows finished by virtual %s; partial results in %s (summary.json \"complete\": false)",
			m.Reason, sum.FlowsFinished, sum.Flows, m.End, out)
	}
	if !quiet {
		fmt.Fprintf(stdout, "%s: %d/%d flows finished, virtual end %s, %d events in %.2fs (%.2fM events/s), %d drops, %d marks; %d partitions, %d windows -> %s\n",
			b.File, sum.FlowsFinished, sum.Flows, m.End, sum.Events, wall, perf.EventsPerSec/1e6, sum.Drops, sum.Marks,
			pl.P, ds.Windows, out)
	}
	return true, nil
}

// writePartial writes what a failed distributed run had (res.Outputs,
// marked incomplete) into out and returns the run's error, which says so.
func writePartial(res *deploy.Result, out string, wall float64, p int, err error) error {
	if res == nil || res.Outputs == nil {
		return err
	}
	m := res.Outputs
	sum := m.Summary()
	perf := results.Perf{WallSeconds: wall, PeakRSSBytes: peakRSS(), Partitions: p}
	if werr := m.WriteDir(out, perf, nil); werr != nil {
		return fmt.Errorf("%w; and the partial results could not be written: %v", err, werr)
	}
	missing := ""
	if len(m.Missing) > 0 {
		missing = fmt.Sprintf(", partitions %s missing", liveness.List(m.Missing))
	}
	return fmt.Errorf("%w; partial results in %s (%d/%d flows finished by virtual %s%s; summary.json \"complete\": false)",
		err, out, sum.FlowsFinished, sum.Flows, m.End, missing)
}

// addNATSAuthFlags adds the NATS credential and TLS flags (docs/design.md §7:
// a multi-machine run uses NATS credentials and TLS).
func addNATSAuthFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("nats-token", "", "NATS authentication token (also $LOCKSTEP_NATS_TOKEN)")
	f.String("nats-nkey", "", "NATS nkey seed file")
	f.String("nats-creds", "", "NATS user credentials file (JWT and nkey)")
	f.String("nats-ca", "", "CA certificate file to verify the NATS server (enables TLS)")
	f.String("nats-cert", "", "client certificate file for NATS TLS")
	f.String("nats-key", "", "client key file for NATS TLS")
}

// natsAuth reads the auth flags (the token also from the environment).
func natsAuth(cmd *cobra.Command) (map[string]string, error) {
	f := cmd.Flags()
	m := map[string]string{}
	for _, n := range []string{"nats-token", "nats-nkey", "nats-creds", "nats-ca", "nats-cert", "nats-key"} {
		s, err := f.GetString(n)
		if err != nil {
			return nil, err
		}
		if s != "" {
			m[n] = s
		}
	}
	if _, ok := m["nats-token"]; !ok {
		if t := os.Getenv("LOCKSTEP_NATS_TOKEN"); t != "" {
			m["nats-token"] = t
		}
	}
	if (m["nats-cert"] == "") != (m["nats-key"] == "") {
		return nil, fmt.Errorf("--nats-cert and --nats-key go together")
	}
	return m, nil
}

// natsAuthOptions turns the auth flags into NATS client options.
func natsAuthOptions(cmd *cobra.Command) ([]nats.Option, error) {
	m, err := natsAuth(cmd)
	if err != nil {
		return nil, err
	}
	var opts []nats.Option
	if t := m["nats-token"]; t != "" {
		opts = append(opts, nats.Token(t))
	}
	if s := m["nats-nkey"]; s != "" {
		o, err := nats.NkeyOptionFromSeed(s)
		if err != nil {
			return nil, fmt.Errorf("--nats-nkey %s: %w", s, err)
		}
		opts = append(opts, o)
	}
	if c := m["nats-creds"]; c != "" {
		opts = append(opts, nats.UserCredentials(c))
	}
	if ca := m["nats-ca"]; ca != "" {
		opts = append(opts, nats.RootCAs(ca))
	}
	if m["nats-cert"] != "" {
		opts = append(opts, nats.ClientCert(m["nats-cert"], m["nats-key"]))
	}
	return opts, nil
}

// natsAuthArgs repeats the auth flags for child processes, except the
// token, which goes in their environment (env) so that it does not show
// in ps.
func natsAuthArgs(cmd *cobra.Command) (args, env []string, err error) {
	m, err := natsAuth(cmd)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range []string{"nats-nkey", "nats-creds", "nats-ca", "nats-cert", "nats-key"} {
		if s := m[n]; s != "" {
			args = append(args, "--"+n, s)
		}
	}
	if t := m["nats-token"]; t != "" {
		env = append(env, "LOCKSTEP_NATS_TOKEN="+t)
	}
	return args, env, nil
}

// addTopoPartitionFlags adds --partitions to `lockstep topo`.
func addTopoPartitionFlags(cmd *cobra.Command) {
	cmd.Flags().Int("partitions", 0, "also show how the fabric is cut into P partitions")
}

// printPartitions prints the cut, the lookahead and the balance when
// --partitions was given (or the scenario has a placement section).
func printPartitions(cmd *cobra.Command, b *scenario.Built, stdout io.Writer) error {
	p, err := cmd.Flags().GetInt("partitions")
	if err != nil {
		return err
	}
	if !cmd.Flags().Changed("partitions") && (b.Scenario == nil || !b.Scenario.Placement.Asks()) {
		return nil
	}
	pl, err := partition.ForScenario(b, p)
	if err != nil {
		return badInput(err)
	}
	t := b.Topo
	mode := scenario.PlacementAuto
	if b.Scenario != nil && b.Scenario.Placement != nil {
		mode = b.Scenario.Placement.ModeOrDefault()
	}
	fmt.Fprintf(stdout, "partitions: %d (%s)\n", pl.P, mode)
	if pl.LookaheadLink >= 0 {
		l := t.Links[pl.LookaheadLink]
		fmt.Fprintf(stdout, "lookahead: %s (link %d, %s - %s)\n", pl.Lookahead, pl.LookaheadLink, t.Nodes[l.A].Name, t.Nodes[l.B].Name)
	} else {
		fmt.Fprintf(stdout, "lookahead: none (nothing is cut)\n")
	}
	fmt.Fprintf(stdout, "cut links: %d of %d\n", len(pl.Cuts), len(t.Links))
	fmt.Fprintf(stdout, "balance:   imbalance %.3f (largest load / mean load; load = ports per element)\n", pl.Imbalance())
	cuts := make([]int, pl.P)
	for _, c := range pl.Cuts {
		cuts[c.PartA]++
		cuts[c.PartB]++
	}
	fmt.Fprintf(stdout, "%9s %8s %6s %8s %6s %9s\n", "partition", "elements", "hosts", "switches", "load", "cut-links")
	for i := 0; i < pl.P; i++ {
		fmt.Fprintf(stdout, "%9d %8d %6d %8d %6d %9d\n", i, pl.Elements[i], pl.Hosts[i], pl.Elements[i]-pl.Hosts[i], pl.Load[i], cuts[i])
	}
	// Cut links grouped by delay, shortest first.
	byDelay := map[sim.Time]int{}
	for _, c := range pl.Cuts {
		byDelay[c.Delay]++
	}
	delays := make([]sim.Time, 0, len(byDelay))
	for d := range byDelay {
		delays = append(delays, d)
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	for _, d := range delays {
		fmt.Fprintf(stdout, "cut at %s: %d links\n", d, byDelay[d])
	}
	return nil
}

// nodesServe says whether the node processes of --procs run NATS servers
// of their own (deploy.Options.NodesServe): as --nodes-serve says, else
// when every node has a core of its own. With more nodes than cores the
// launcher's server, a process the kernel schedules apart from the nodes,
// relayed faster on a 2-core machine (docs/decisions.md, "Node processes
// serve").
func nodesServe(cmd *cobra.Command, v *viper.Viper, p int) bool {
	if !v.GetBool("run.procs") || v.GetString("run.nats") != "" {
		return false
	}
	if cmd.Flags().Changed("nodes-serve") {
		return v.GetBool("run.nodes-serve")
	}
	return p <= runtime.NumCPU()
}

// nodeProfile is where node processes write CPU profiles: with --procs,
// --cpuprofile X profiles each node i into X.node<i> too.
func nodeProfile(cmd *cobra.Command, procs bool) string {
	if !procs {
		return ""
	}
	p, _ := cmd.Flags().GetString("cpuprofile")
	return p
}

// maxRestarts is --max-restarts.
func maxRestarts(cmd *cobra.Command) int {
	n, _ := cmd.Flags().GetInt("max-restarts")
	return n
}
