package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/lockstep-sim/lockstep/coordinator"
	"github.com/lockstep-sim/lockstep/deploy"
	"github.com/lockstep-sim/lockstep/internal/liveness"
	"github.com/lockstep-sim/lockstep/internal/metrics"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

func newCoordinatorCmd(v *viper.Viper, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "coordinator {FILE | --setup SETUP} --nats URL --run ID",
		Short: "Run a coordinator replica (raft) of a distributed run",
		Long: `Run one coordinator replica of a distributed run. Replicas form a raft
cluster (1 or 3 voters, --peers) that replicates the run's control state:
scenario digest, seed, partition map, membership, phase and progress marks.
The leader runs the lockstep barrier: it grants windows to the nodes over
NATS, and raft stays off that path. When a leader dies, another replica
takes over, asks the nodes where they stand, and continues with the same
windows, so the results do not change. The leader also answers the nodes'
setup requests with the effective scenario (FILE after --seed, --cwnd and
--queues) and the partition map. Instead of FILE, --setup names a setup file
written by the launcher: 'lockstep run --coordinators 3' starts three of
these processes itself, each with the setup it built.`,
		Example: `  lockstep coordinator s.yaml --nats nats://127.0.0.1:4222 --run exp1 --partitions 4 \
    --id c1 --raft-addr 127.0.0.1:7001 --raft-dir /var/lib/lockstep/c1 \
    --peers c1=127.0.0.1:7001,c2=127.0.0.1:7002,c3=127.0.0.1:7003`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCoordinator(cmd, v, args, stderr)
		},
	}
	f := cmd.Flags()
	f.String("nats", "", "NATS server URL (required)")
	f.String("run", "", "run id (required)")
	f.Int("partitions", 0, "number of partitions (default: the scenario's placement, else 2)")
	f.Uint64("seed", 0, "seed of every random stream (default: the scenario's, else 1)")
	f.String("id", "c1", "this replica's raft server id")
	f.String("raft-addr", "127.0.0.1:0", "address of this replica's raft TCP transport")
	f.String("peers", "", "every voter as id=host:port, comma-separated (default: this replica alone)")
	f.String("raft-dir", "", "directory for the BoltDB raft log and snapshots (default: in memory)")
	f.Uint64("mark-every", coordinator.DefaultMarkEvery, "windows between progress marks in raft")
	f.Duration("status-every", 0, "how often the leader publishes its status (default 250ms)")
	f.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	f.String("setup", "", "serve this setup file (written by 'lockstep run') instead of building FILE")
	f.Duration("peer-timeout", liveness.DefaultTimeout, "how long a node may be silent, or NATS unreachable, before the leader aborts the run naming the partition (exit 3); also how long this replica waits without a raft leader or a leader's status before it gives up (exit 3; 0 if the last leader said the run finished)")
	f.Duration("join-timeout", coordinator.DefaultJoinTimeout, "how long this replica waits for the first raft leader (its peers starting) before it gives up (exit 3)")
	f.Duration("checkpoint-every", 0, "with FILE: every node stores its part of a checkpoint at the first window boundary after each multiple of this virtual time, e.g. 100us, in the NATS server's JetStream object store (or --checkpoint-dir); a lost node is then replaced and every node rolled back to the last committed checkpoint")
	f.String("checkpoint-dir", "", "with FILE and --checkpoint-every: a directory every node shares (a shared volume) instead of JetStream")
	f.Int("max-restarts", 3, "with FILE: how many lost nodes the run survives (rollbacks to the last committed checkpoint) before it fails")
	addOutputFlags(cmd)
	addMetricsFlags(cmd)
	addInputFlags(cmd)
	addNATSAuthFlags(cmd)
	for _, n := range []string{"nats", "run", "partitions", "seed", "id", "raft-addr", "peers", "raft-dir", "mark-every", "status-every", "log-level", "peer-timeout", "join-timeout", "metrics", "metrics-linger"} {
		_ = v.BindPFlag("coordinator."+n, f.Lookup(n))
	}
	return cmd
}

// coordinatorSetup is the setup the replica serves: the --setup file, or
// FILE built with the command line's edits.
func coordinatorSetup(cmd *cobra.Command, v *viper.Viper, args []string) (*wire.Setup, error) {
	if path, _ := cmd.Flags().GetString("setup"); path != "" {
		for _, f := range []string{"seed", "partitions", "cwnd", "queues", "sender-fct", "checkpoint-every", "checkpoint-dir", "max-restarts"} {
			if cmd.Flags().Changed(f) {
				return nil, badInput(fmt.Errorf("coordinator: --setup carries the whole run: no --%s", f))
			}
		}
		if len(args) > 0 {
			return nil, badInput(fmt.Errorf("coordinator: give a scenario FILE or --setup, not both"))
		}
		su, err := deploy.ReadSetup(path)
		if err != nil {
			return nil, badInput(fmt.Errorf("--setup %s", oneLine(err.Error())))
		}
		return su, nil
	}
	if len(args) != 1 {
		return nil, badInput(fmt.Errorf("coordinator: a scenario FILE (or --setup) is required"))
	}
	edits, err := outputEdits(cmd)
	if err != nil {
		return nil, err
	}
	in, err := inputEdits(cmd)
	if err != nil {
		return nil, err
	}
	edits = append(in, edits...)
	if cmd.Flags().Changed("seed") {
		edits = append([]scenario.Edit{scenario.WithSeed(v.GetUint64("coordinator.seed"))}, edits...)
	}
	b, err := loadScenario(args[0], edits...)
	if err != nil {
		return nil, err
	}
	pl, err := partition.ForScenario(b, v.GetInt("coordinator.partitions"))
	if err != nil {
		return nil, badInput(err)
	}
	su := deploy.NewSetup(b, pl)
	every, _ := cmd.Flags().GetDuration("checkpoint-every")
	su.CheckpointDir, _ = cmd.Flags().GetString("checkpoint-dir")
	su.MaxRestarts, _ = cmd.Flags().GetInt("max-restarts")
	if every < 0 || su.MaxRestarts < 0 || su.CheckpointDir != "" && every == 0 {
		return nil, badInput(fmt.Errorf("coordinator: --checkpoint-every and --max-restarts must not be negative, and --checkpoint-dir needs --checkpoint-every"))
	}
	su.CheckpointEvery = int64(sim.Time(every.Nanoseconds()) * sim.Nanosecond)
	return su, nil
}

func parsePeers(s string) ([]coordinator.Peer, error) {
	if s == "" {
		return nil, nil
	}
	var peers []coordinator.Peer
	for _, p := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("--peers: %q is not id=host:port", p)
		}
		peers = append(peers, coordinator.Peer{ID: id, Addr: addr})
	}
	return peers, nil
}

func runCoordinator(cmd *cobra.Command, v *viper.Viper, args []string, stderr io.Writer) error {
	url, run := v.GetString("coordinator.nats"), v.GetString("coordinator.run")
	if url == "" || run == "" {
		return badInput(fmt.Errorf("coordinator: --nats and --run are required"))
	}
	su, err := coordinatorSetup(cmd, v, args)
	if err != nil {
		return err
	}
	peers, err := parsePeers(v.GetString("coordinator.peers"))
	if err != nil {
		return badInput(err)
	}
	log, creds, auth, err := memberSetup(cmd, run, v.GetString("coordinator.log-level"), stderr)
	if err != nil {
		return err
	}
	id := v.GetString("coordinator.id")
	ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	nc, err := liveness.ConnectWait(url, 2*time.Minute, stderr, "coordinator "+id,
		append(append([]nats.Option{nats.Name("lockstep coordinator " + id)}, liveness.ClientOptions()...), auth...)...)
	if err != nil {
		return fmt.Errorf("coordinator %s: connect to %s: %w", id, url, err)
	}
	defer nc.Close()
	cfg := coordinator.Config{Conn: nc, Run: run, Setup: su, ID: id, Creds: creds,
		Addr: v.GetString("coordinator.raft-addr"), Peers: peers, Dir: v.GetString("coordinator.raft-dir"),
		MarkEvery: v.GetUint64("coordinator.mark-every"), StatusEvery: v.GetDuration("coordinator.status-every"),
		PeerTimeout: v.GetDuration("coordinator.peer-timeout"), JoinTimeout: v.GetDuration("coordinator.join-timeout"), Logger: log, RaftLog: stderr}
	if addr := v.GetString("coordinator.metrics"); addr != "" {
		var cm *metrics.Coordinator
		srv, err := metrics.Listen(addr, func() bool { return cm.Ready() })
		if err != nil {
			return badInput(err)
		}
		if cm, err = metrics.RegisterCoordinator(srv.Reg, nc, run, id); err != nil {
			_ = srv.Close()
			return err
		}
		cfg.OnStart = cm.Started
		fmt.Fprintf(stderr, "lockstep coordinator %s: metrics on http://%s/metrics (probes /healthz, /readyz)\n", id, srv.Addr())
		defer lingerClose(ctx, srv, v.GetDuration("coordinator.metrics-linger"))
	}
	return coordinator.Run(ctx, cfg)
}
