package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
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
required of every client when set.`,
		Example: "  lockstep nats --addr 0.0.0.0:4222 --store /data --monitor 0.0.0.0:8222",
		Args:    cobra.NoArgs,
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

func runNATS(cmd *cobra.Command, stdout, stderr io.Writer) error {
	f := cmd.Flags()
	addr, _ := f.GetString("addr")
	host, port, err := splitHostPort("--addr", addr)
	if err != nil {
		return badInput(err)
	}
	js, _ := f.GetBool("jetstream")
	store, _ := f.GetString("store")
	maxPayload, _ := f.GetInt("max-payload")
	name, _ := f.GetString("name")
	token, _ := f.GetString("nats-token")
	if token == "" {
		token = os.Getenv("LOCKSTEP_NATS_TOKEN")
	}
	opts := &server.Options{Host: host, Port: port, NoSigs: true, NoLog: true, MaxPayload: int32(maxPayload),
		ServerName: name, Authorization: token}
	if maxPayload <= 0 || maxPayload > 64<<20 {
		return badInput(fmt.Errorf("--max-payload %d: want 1..%d", maxPayload, 64<<20))
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
	ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}
