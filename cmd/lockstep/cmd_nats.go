package main

import (
	"cmp"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/deploy"
)

// newNATSCmd is `lockstep nats`: the embedded nats-server, with JetStream,
// as a process of its own. The image has no other NATS server (nothing can
// be pulled where it is built), so containers and Kubernetes pods run this.
func newNATSCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nats [--addr HOST:PORT]",
		Short: "Serve a NATS server (with JetStream) for distributed runs",
		Long: `Serve the NATS server lockstep embeds, with JetStream (nodes store their
results in a per-run object store bucket when it is on), until SIGTERM or
Ctrl-C. It listens on loopback unless --addr says otherwise; in a container
give --addr 0.0.0.0:4222. A token (--nats-token or $LOCKSTEP_NATS_TOKEN) is
required of every client when set.

With --cluster the server also listens for other servers' routes, and
--routes names servers to join: one server per machine, each node
connecting to its own, spreads the fan-out of the per-window reports over
the servers (docs/deploy.md, "A NATS server per machine"). A token, when
set, is required of routes too (user "lockstep", the token as password; it
is added to --routes URLs that carry no user). A node can also run its
machine's server itself: 'lockstep node --serve' takes the same cluster
flags.`,
		Example: `  lockstep nats --addr 0.0.0.0:4222 --store /data --monitor 0.0.0.0:8222
  lockstep nats --addr 0.0.0.0:4222 --cluster 0.0.0.0:6222 --routes nats://hostA:6222,nats://hostB:6222 --jetstream=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runNATS(cmd, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.String("addr", "127.0.0.1:4222", "client listen address")
	f.Bool("jetstream", true, "enable JetStream (the results' object store)")
	f.String("store", "", "JetStream storage directory (default: a directory under $TMPDIR)")
	f.String("monitor", "", "HTTP monitoring address (/healthz, /varz); off by default")
	f.String("nats-token", "", "token every client must present (also $LOCKSTEP_NATS_TOKEN)")
	f.Int("max-payload", 8<<20, "largest message in bytes")
	f.String("name", "", "server name (default: the host name)")
	f.String("cluster", "", "listen for routes from other servers on HOST:PORT (a NATS cluster); off by default")
	f.String("cluster-name", "lockstep", "the cluster's name (every server of it gives the same)")
	f.StringSlice("routes", nil, "route URLs of other servers of the cluster (nats://HOST:PORT, comma-separated); needs --cluster")
	return cmd
}

func splitHostPort(what, s string) (string, int, error) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, fmt.Errorf("%s %q: %w", what, s, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("%s %q: bad port", what, s)
	}
	return h, n, nil
}

// routeUser is the user name routes present when the cluster has a token.
const routeUser = "lockstep"

// clusterRoutes parses --routes: nats:// URLs (nats-route:// is accepted
// too) with a host and a port; a URL without a user gets routeUser and
// the token, when there is one.
func clusterRoutes(list []string, token string) ([]*url.URL, error) {
	var out []*url.URL
	for _, s := range list {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || (u.Scheme != "nats" && u.Scheme != "nats-route") || u.Hostname() == "" || u.Port() == "" {
			return nil, fmt.Errorf("--routes %q: want nats://HOST:PORT", s)
		}
		if u.User == nil && token != "" {
			u.User = url.UserPassword(routeUser, token)
		}
		out = append(out, u)
	}
	return out, nil
}

// clusterServer is what a NATS server of a lockstep cluster is given:
// its client address, its route address and routes (none: no cluster),
// the token clients and routes present, its name and the largest
// message.
type clusterServer struct {
	addrFlag                   string // the flag that gave addr (default --addr)
	addr, cluster, clusterName string
	routes                     []string
	token, name                string
	maxPayload                 int
}

// options are the server's options (JetStream off, the caller's to set).
// Errors name the flag at fault.
func (c clusterServer) options() (*server.Options, error) {
	host, port, err := splitHostPort(cmp.Or(c.addrFlag, "--addr"), c.addr)
	if err != nil {
		return nil, err
	}
	if c.maxPayload <= 0 || c.maxPayload > 64<<20 {
		return nil, fmt.Errorf("--max-payload %d: want 1..%d", c.maxPayload, 64<<20)
	}
	opts := &server.Options{Host: host, Port: port, NoSigs: true, NoLog: true, MaxPayload: int32(c.maxPayload),
		ServerName: c.name, Authorization: c.token}
	switch {
	case c.cluster != "":
		h, p, err := splitHostPort("--cluster", c.cluster)
		if err != nil {
			return nil, err
		}
		routes, err := clusterRoutes(c.routes, c.token)
		if err != nil {
			return nil, err
		}
		opts.Cluster = server.ClusterOpts{Name: c.clusterName, Host: h, Port: p}
		if c.token != "" {
			opts.Cluster.Username, opts.Cluster.Password = routeUser, c.token
		}
		opts.Routes = routes
	case len(c.routes) > 0:
		return nil, fmt.Errorf("--routes: needs --cluster (this server's route address)")
	}
	return opts, nil
}

func runNATS(cmd *cobra.Command, stdout, stderr io.Writer) error {
	f := cmd.Flags()
	addr, _ := f.GetString("addr")
	cluster, _ := f.GetString("cluster")
	clusterName, _ := f.GetString("cluster-name")
	routeURLs, _ := f.GetStringSlice("routes")
	js, _ := f.GetBool("jetstream")
	store, _ := f.GetString("store")
	maxPayload, _ := f.GetInt("max-payload")
	name, _ := f.GetString("name")
	token, _ := f.GetString("nats-token")
	if token == "" {
		token = os.Getenv("LOCKSTEP_NATS_TOKEN")
	}
	opts, err := clusterServer{addr: addr, cluster: cluster, clusterName: clusterName, routes: routeURLs,
		token: token, name: name, maxPayload: maxPayload}.options()
	if err != nil {
		return badInput(err)
	}
	if mon, _ := f.GetString("monitor"); mon != "" {
		h, p, err := splitHostPort("--monitor", mon)
		if err != nil {
			return badInput(err)
		}
		opts.HTTPHost, opts.HTTPPort = h, p
	}
	if js {
		if store == "" {
			store = os.TempDir() + "/lockstep-nats"
		}
		opts.JetStream, opts.StoreDir = true, store
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return badInput(fmt.Errorf("nats: %w", err))
	}
	go srv.Start()
	if !deploy.ServerReady(srv, 30*time.Second) {
		srv.Shutdown()
		return fmt.Errorf("nats: the server did not start on %s", addr)
	}
	fmt.Fprintf(stderr, "lockstep nats: listening on %s (jetstream %v)\n", srv.Addr(), js)
	if cluster != "" {
		fmt.Fprintf(stderr, "lockstep nats: routes on %s, cluster %q, %d route(s) to join\n", srv.ClusterAddr(), clusterName, len(opts.Routes))
	}
	ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}
