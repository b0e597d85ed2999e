package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/lockstep-sim/lockstep/deploy"
	"github.com/lockstep-sim/lockstep/internal/liveness"
	"github.com/lockstep-sim/lockstep/internal/member"
	"github.com/lockstep-sim/lockstep/internal/metrics"
	"github.com/lockstep-sim/lockstep/node"
)

func newNodeCmd(v *viper.Viper, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node (--nats URL | --serve HOST:PORT) --run ID --partition I",
		Short: "Run one partition of a distributed run (a node process)",
		Long: `Run one partition of a distributed run. The node needs nothing but a NATS URL,
the run id and its partition index: it fetches the scenario and the partition
map from the run's coordinator over NATS, builds only its partition's hosts
and switches, runs the lockstep windows (every node hears every node's
barrier report and grants the next window itself; the coordinator follows
the run from the nodes' statuses),
exchanges the packets that cross the cut with the other nodes, and sends its
results back when the run ends. 'lockstep run --procs' starts these processes itself.

With --serve instead of --nats the node runs its machine's NATS server
itself (with --cluster and --routes, one server per machine joined by
routes, as 'lockstep nats' runs it) and talks to it in process: no
loopback hop for its reports and batches, and no server process beside
it. The coordinator and the launcher connect to any node's server; the
node keeps its server up after its run until they have left.`,
		Example: `  lockstep node --nats nats://10.0.0.5:4222 --run exp1 --partition 3 --nats-token s3cret
  lockstep node --serve 0.0.0.0:4222 --cluster 0.0.0.0:6222 --routes nats://hostA:6222,nats://hostB:6222 \
    --run exp1 --partition 0 --nats-token s3cret`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runNode(cmd, v, stderr)
		},
	}
	f := cmd.Flags()
	f.String("nats", "", "NATS server URL (required)")
	f.String("run", "", "run id (required)")
	f.Int("partition", -1, "this node's partition index (required; default $JOB_COMPLETION_INDEX, a Kubernetes Indexed Job's)")
	f.Duration("setup-timeout", 2*time.Minute, "how long to wait for a coordinator to answer")
	f.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	f.Duration("peer-timeout", liveness.DefaultTimeout, "how long the coordinator leader may be silent, or NATS unreachable, before the node gives up (exit 3)")
	f.Duration("status-every", 0, "how often the node publishes its status, its heartbeat (default 250ms)")
	f.String("cpuprofile", "", "write a CPU profile of the node (go tool pprof) to this file")
	f.String("serve", "", "instead of --nats: run this machine's NATS server in the node, its clients on HOST:PORT, and connect to it in process (with --cluster and --routes, one of a server per machine; JetStream off)")
	f.String("cluster", "", "with --serve: listen for the other servers' routes on HOST:PORT")
	f.StringSlice("routes", nil, "with --serve: route URLs of the cluster's servers (nats://HOST:PORT, comma-separated; the same list on every machine: a server skips itself); the node waits until it has a route to all but one of them before it joins")
	f.String("cluster-name", "lockstep", "with --serve: the cluster's name")
	f.String("route", "", "instead of --nats: run a NATS server of the node's own in process (its client port on loopback takes the node's own key only), joined by a route to this URL (nats://127.0.0.1:PORT, the route password in $"+deploy.RouteTokenEnv+"): what 'lockstep run --procs --nodes-serve' gives its nodes")
	f.Int("cluster-size", 0, "with --route: the servers of the run's cluster (the launcher's and every node's); the node waits for a route to every other before it joins")
	addMetricsFlags(cmd)
	addNATSAuthFlags(cmd)
	for _, n := range []string{"nats", "run", "partition", "setup-timeout", "log-level", "peer-timeout", "status-every", "metrics", "metrics-linger"} {
		_ = v.BindPFlag("node."+n, f.Lookup(n))
	}
	return cmd
}

func runNode(cmd *cobra.Command, v *viper.Viper, stderr io.Writer) error {
	url, run, part := v.GetString("node.nats"), v.GetString("node.run"), v.GetInt("node.partition")
	if s := os.Getenv("JOB_COMPLETION_INDEX"); part < 0 && s != "" {
		// A pod of a Kubernetes Indexed Job: its index is the partition.
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return badInput(fmt.Errorf("node: JOB_COMPLETION_INDEX %q is not a partition index", s))
		}
		part = n
	}
	serve, _ := cmd.Flags().GetString("serve")
	route, _ := cmd.Flags().GetString("route")
	given := 0
	for _, x := range []string{url, serve, route} {
		if x != "" {
			given++
		}
	}
	if given != 1 || run == "" || part < 0 {
		return badInput(fmt.Errorf("node: --nats (or --serve, or --route), --run and --partition are required"))
	}
	log, creds, auth, err := memberSetup(cmd, run, v.GetString("node.log-level"), stderr)
	if err != nil {
		return err
	}
	if prof, _ := cmd.Flags().GetString("cpuprofile"); prof != "" {
		stopProf, err := startCPUProfile(prof)
		if err != nil {
			return badInput(err)
		}
		defer stopProf()
	}
	ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	copts := append(append(append([]nats.Option{nats.Name(fmt.Sprintf("lockstep node %d", part))}, liveness.ClientOptions()...), node.ConnOptions()...), auth...)
	var nc *nats.Conn
	var ns *server.Server // the node's own, with --serve or --route
	switch {
	case route != "":
		size, _ := cmd.Flags().GetInt("cluster-size")
		if ns, err = routedNATS(part, route, size, creds, v.GetDuration("node.setup-timeout")); err != nil {
			return err
		}
	case serve != "":
		if creds != nil {
			return badInput(fmt.Errorf("node %d: --serve runs a server that knows a token only, not the member credentials of $%s", part, member.Env))
		}
		if ns, err = serveNATS(cmd, part, serve, v.GetDuration("node.setup-timeout"), stderr); err != nil {
			return err
		}
	}
	if ns != nil {
		// The server outlives the node's run (and its own connection,
		// closed first) while others use it: with --serve the launcher or
		// a coordinator may be its clients (with --route it has none but
		// the node). At most a peer timeout, and not past an interrupt.
		defer func() {
			deadline := time.Now().Add(v.GetDuration("node.peer-timeout"))
			for ns.NumClients() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
				time.Sleep(time.Millisecond) // polling the server's clients against the deadline
			}
			ns.Shutdown()
			ns.WaitForShutdown()
		}()
		url = ns.ClientURL()
		nc, err = nats.Connect("", append(copts, nats.InProcessServer(ns))...)
	} else {
		nc, err = liveness.ConnectWait(url, v.GetDuration("node.setup-timeout"), stderr, fmt.Sprintf("node %d", part), copts...)
	}
	if err != nil {
		return fmt.Errorf("node %d: connect to %s: %w", part, url, err)
	}
	defer nc.Close()
	cfg := node.Config{Conn: nc, Run: run, Partition: part, Creds: creds, OwnProcess: true,
		SetupTimeout: v.GetDuration("node.setup-timeout"), Logger: log,
		PeerTimeout: v.GetDuration("node.peer-timeout"), StatusEvery: v.GetDuration("node.status-every")}
	if ns != nil {
		acc := ns.GlobalAccount()
		cfg.Interest, cfg.Routes = acc.SubscriptionInterest, deploy.RoutesOf(ns)
		log.Info("NATS server in process", "routes", cfg.Routes)
	}
	if addr := v.GetString("node.metrics"); addr != "" {
		var nm *metrics.Node
		srv, err := metrics.Listen(addr, func() bool { return nm.Joined() })
		if err != nil {
			return badInput(err)
		}
		nm = metrics.RegisterNode(srv.Reg, run, part)
		cfg.Observe = nm.Observe
		fmt.Fprintf(stderr, "lockstep node %d: metrics on http://%s/metrics (probes /healthz, /readyz)\n", part, srv.Addr())
		defer lingerClose(ctx, srv, v.GetDuration("node.metrics-linger"))
	}
	return node.Run(ctx, cfg)
}

// addMetricsFlags adds --metrics (and the tests' --metrics-linger).
func addMetricsFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("metrics", "", "serve Prometheus metrics and the /healthz and /readyz probes on this address (a bare :PORT is loopback; 0.0.0.0:PORT for every interface); off by default")
	f.Duration("metrics-linger", 0, "keep serving metrics this long after the run (so a scraper sees the end)")
	_ = f.MarkHidden("metrics-linger")
}

// lingerClose keeps srv up for d (unless ctx ends), then closes it.
func lingerClose(ctx context.Context, srv *metrics.Server, d time.Duration) {
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	_ = srv.Close()
}

// memberSetup is what a node or coordinator process needs before it
// connects: its logger, its member credentials ($LOCKSTEP_CREDENTIALS) and
// the NATS options (the flags' auth plus the credentials). Errors are bad
// input.
func memberSetup(cmd *cobra.Command, run, logLevel string, stderr io.Writer) (*slog.Logger, *member.Creds, []nats.Option, error) {
	log, err := newLogger(logLevel, stderr)
	if err != nil {
		return nil, nil, nil, badInput(err)
	}
	auth, err := natsAuthOptions(cmd)
	if err != nil {
		return nil, nil, nil, badInput(err)
	}
	creds, auth, err := memberAuth(run, auth)
	if err != nil {
		return nil, nil, nil, badInput(err)
	}
	return log, creds, auth, nil
}

// memberAuth adds the member credentials the environment names
// ($LOCKSTEP_CREDENTIALS, written by the launcher for its children) to the
// NATS options auth; it returns nil credentials if there are none.
func memberAuth(run string, auth []nats.Option) (*member.Creds, []nats.Option, error) {
	c, err := member.FromEnv()
	if err != nil || c == nil {
		return nil, auth, err
	}
	if c.Run != run {
		return nil, nil, fmt.Errorf("$%s: credentials of run %s, not %s", member.Env, c.Run, run)
	}
	opts, err := c.Options()
	if err != nil {
		return nil, nil, err
	}
	return c, append(auth, opts...), nil
}

// cmdContext is the command's context, or Background outside Execute.
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// routedNATS starts the NATS server of a node with --route (run --procs
// --nodes-serve): deploy.NodeServerOptions, with the route token from the
// environment. It waits within wait until the server has a route to each
// of the size − 1 other servers of the run (the launcher's, whose route
// is given, and the other nodes', which the cluster's gossip names), so
// that no window-0 report goes out before its route exists.
func routedNATS(part int, route string, size int, creds *member.Creds, wait time.Duration) (*server.Server, error) {
	if size < 2 {
		return nil, badInput(fmt.Errorf("node %d: --route needs --cluster-size of at least 2 (the launcher's server and this one)", part))
	}
	if creds == nil {
		return nil, badInput(fmt.Errorf("node %d: --route needs the member credentials of $%s", part, member.Env))
	}
	opts, err := deploy.NodeServerOptions(creds, part, route, os.Getenv(deploy.RouteTokenEnv))
	if err != nil {
		return nil, badInput(err)
	}
	return startNodeServer(part, "--route", opts, size-1, wait, nil)
}

// startNodeServer starts a node's NATS server with opts (flag names the
// flag that asked for it) and waits within wait until it has routes to
// peers other servers: a report published before its route exists is
// lost, and only the leader's resync would bring it back. With stderr it
// says where it listens for clients.
func startNodeServer(part int, flag string, opts *server.Options, peers int, wait time.Duration, stderr io.Writer) (*server.Server, error) {
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, badInput(fmt.Errorf("node %d: %s: %w", part, flag, err))
	}
	go ns.Start()
	if !deploy.ServerReady(ns, 30*time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("node %d: its NATS server did not start", part)
	}
	if stderr != nil {
		fmt.Fprintf(stderr, "lockstep node %d: NATS server on %s\n", part, ns.Addr())
	}
	deadline := time.Now().Add(wait)
	for {
		n := deploy.RoutesOf(ns)
		if n >= peers {
			return ns, nil
		}
		if time.Now().After(deadline) {
			ns.Shutdown()
			return nil, fmt.Errorf("node %d: its NATS server has routes to %d of the %d other servers after %v", part, n, peers, wait)
		}
		time.Sleep(time.Millisecond) // polling the routes against the deadline
	}
}

// serveNATS starts the NATS server of a node with --serve: clients on
// addr, routes per --cluster and --routes, the token of --nats-token
// required of clients and routes, JetStream off (docs/deploy.md, "A NATS
// server per machine"). It waits within wait until the server has a route
// to all but one of --routes (the same list on every machine names this
// one too): a report published before a route exists is lost, and only
// the leader's resync would bring it back.
func serveNATS(cmd *cobra.Command, part int, addr string, wait time.Duration, stderr io.Writer) (*server.Server, error) {
	f := cmd.Flags()
	cluster, _ := f.GetString("cluster")
	clusterName, _ := f.GetString("cluster-name")
	routes, _ := f.GetStringSlice("routes")
	m, err := natsAuth(cmd)
	if err != nil {
		return nil, badInput(err)
	}
	for _, n := range []string{"nats-nkey", "nats-creds", "nats-ca", "nats-cert"} {
		if m[n] != "" {
			return nil, badInput(fmt.Errorf("node %d: --serve runs a server that knows a token only (--nats-token), not --%s", part, n))
		}
	}
	opts, err := clusterServer{addrFlag: "--serve", addr: addr, cluster: cluster, clusterName: clusterName, routes: routes,
		token: m["nats-token"], name: fmt.Sprintf("node-%d", part), maxPayload: 8 << 20}.options()
	if err != nil {
		return nil, badInput(fmt.Errorf("node %d: %w", part, err))
	}
	return startNodeServer(part, "--serve", opts, len(routes)-1, wait, stderr)
}
