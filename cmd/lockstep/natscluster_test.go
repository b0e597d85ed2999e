package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/liveness"
)

// freePorts returns n distinct loopback ports that were free a moment ago
// (all n held open at once, so none is handed out twice).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range ls {
		ln.Close()
	}
	return ports
}

// routez is the part of a server's /routez the test reads.
type routez struct {
	NumRoutes int `json:"num_routes"`
	Routes    []struct {
		RemoteName string `json:"remote_name"`
		InMsgs     int64  `json:"in_msgs"`
		OutMsgs    int64  `json:"out_msgs"`
	} `json:"routes"`
}

func getRoutez(port int) (routez, error) {
	var r routez
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/routez", port))
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	return r, json.NewDecoder(resp.Body).Decode(&r)
}

// peers is the set of other servers a server has a route to.
func (r routez) peers() map[string]bool {
	m := map[string]bool{}
	for _, x := range r.Routes {
		m[x.RemoteName] = true
	}
	return m
}

// natsCluster is n `lockstep nats` processes on loopback joined by routes,
// every one requiring token of clients and routes; start runs more
// processes of the test binary as lockstep (killed at the end).
type natsCluster struct {
	t       *testing.T
	token   string
	client  []int // client port of server i
	mon     []int // its monitor port
	routes  []string
	servers []*exec.Cmd
	stderr  *lockedWriter
}

// newNATSCluster starts the servers (s0, s1, ...) and waits until each has
// a route to every other.
func newNATSCluster(t *testing.T, n int, token string) *natsCluster {
	t.Helper()
	ports := freePorts(t, 3*n) // client, route, monitor per server
	c := &natsCluster{t: t, token: token, client: ports[:n], mon: ports[2*n:], stderr: &lockedWriter{w: &bytes.Buffer{}}}
	for _, p := range ports[n : 2*n] {
		c.routes = append(c.routes, fmt.Sprintf("nats://127.0.0.1:%d", p)) // the token is added by `lockstep nats`
	}
	for i := 0; i < n; i++ {
		c.servers = append(c.servers, c.start(token, "nats", "--addr", fmt.Sprintf("127.0.0.1:%d", c.client[i]),
			"--cluster", fmt.Sprintf("127.0.0.1:%d", ports[n+i]), "--routes", strings.Join(c.routes, ","),
			"--jetstream=false", "--name", fmt.Sprintf("s%d", i), "--monitor", fmt.Sprintf("127.0.0.1:%d", c.mon[i])))
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < n; i++ {
		for {
			r, err := getRoutez(c.mon[i])
			joined := 0
			for j := 0; j < n; j++ {
				if r.peers()[fmt.Sprintf("s%d", j)] {
					joined++
				}
			}
			if err == nil && joined == n-1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server s%d: routes to %v after 30 s (err %v); stderr:\n%s", i, r.peers(), err, c.stderr.string())
			}
			time.Sleep(10 * time.Millisecond) // polling the monitor against the deadline
		}
	}
	return c
}

// start runs lockstep args with LOCKSTEP_NATS_TOKEN=token.
func (c *natsCluster) start(token string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "LOCKSTEP_NATS_TOKEN="+token)
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// url is server i's client URL.
func (c *natsCluster) url(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.client[i]) }

// runOn starts a coordinator on server 0 and node i on server i for
// scenario s as run id, and runs the launcher on server 1 into out.
func (c *natsCluster) runOn(s, id, out string) {
	c.t.Helper()
	n := len(c.client)
	c.start(c.token, "coordinator", s, "--nats", c.url(0), "--run", id, "--partitions", fmt.Sprint(n))
	for i := 0; i < n; i++ {
		c.start(c.token, "node", "--nats", c.url(i), "--run", id, "--partition", fmt.Sprint(i))
	}
	runCLI(c.t, "run", s, "--out", out, "--quiet", "--external", "--nats", c.url(1), "--run-id", id, "--partitions", fmt.Sprint(n),
		"--nats-token", c.token)
}

// TestRunDistributed_ServerPerNode runs a partition per node on a NATS
// cluster of three `lockstep nats` processes joined by routes (a server per
// machine, docs/deploy.md): node i and the coordinator on server i (the
// coordinator on server 0), the launcher on server 1, a token on clients
// and routes. Every report and batch between nodes crosses a route; the
// files must equal a single process's, and the routes must have carried
// the windows' messages.
func TestRunDistributed_ServerPerNode(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	const n = 3
	c := newNATSCluster(t, n, "tok3n")
	// A server with another token tries to join through s0: its routes
	// are refused for the whole run.
	rogue := freePorts(t, 3)
	c.start("wrong", "nats", "--addr", fmt.Sprintf("127.0.0.1:%d", rogue[0]), "--cluster", fmt.Sprintf("127.0.0.1:%d", rogue[1]),
		"--routes", c.routes[0], "--jetstream=false", "--name", "rogue", "--monitor", fmt.Sprintf("127.0.0.1:%d", rogue[2]))

	dir := write(t, map[string]string{"r.yaml": randomYAML})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	out := filepath.Join(dir, "cluster")
	c.runOn(s, fmt.Sprintf("cluster-%d", os.Getpid()), out)
	sameFiles(t, "a server per node", single, out)

	// Each node's reports reach the two others through its server's
	// routes: every server sent at least one message a window on them.
	var sum struct {
		Extra struct {
			Distributed struct {
				Windows int64 `json:"windows"`
			} `json:"distributed"`
		} `json:"extra"`
	}
	if err := json.Unmarshal(readOut(t, out, "summary.json"), &sum); err != nil {
		t.Fatal(err)
	}
	w := sum.Extra.Distributed.Windows
	if w < 10 {
		t.Fatalf("summary.json: %d windows; want a run of many", w)
	}
	for i := 0; i < n; i++ {
		r, err := getRoutez(c.mon[i])
		if err != nil {
			t.Fatal(err)
		}
		if p := r.peers(); len(p) != n-1 || p["rogue"] {
			t.Errorf("server s%d has routes to %v; want the two others of the cluster and not the rogue", i, p)
		}
		var outMsgs int64
		for _, x := range r.Routes {
			outMsgs += x.OutMsgs
		}
		if outMsgs < w {
			t.Errorf("server s%d sent %d messages on its routes in a run of %d windows; want a report a window at least", i, outMsgs, w)
		}
	}
	if r, err := getRoutez(rogue[2]); err != nil || r.NumRoutes != 0 {
		t.Errorf("the rogue server: %d routes (err %v); want none without the token", r.NumRoutes, err)
	}
}

// TestRunDistributed_ServerPerNode_ServerLost: with a server per node,
// the loss of one server mid-run is not the loss of the run. Server s2 is
// killed at window 300 of a run of ~2,600; node 2's connection fails over
// to a server it learned of from the cluster (nats.go reconnects to the
// servers a server advertises), the messages lost in between are sent
// again on the leader's resync request, and the files equal one
// process's.
func TestRunDistributed_ServerPerNode_ServerLost(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	const n = 3
	c := newNATSCluster(t, n, "tok3n")
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "fattree-k8-permutation.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "size: 2MB", "size: 6MB", 1)
	if text == string(b) {
		t.Fatal("the example has no 'size: 2MB' to scale")
	}
	dir := write(t, map[string]string{"k8.yaml": text})
	s := filepath.Join(dir, "k8.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	id := fmt.Sprintf("lost-%d", os.Getpid())
	// The leader's status, through s0, says when window 300 is reached.
	var killed atomic.Bool
	onWindow(t, c.url(0), id, 300, func() {
		_ = c.servers[2].Process.Kill()
		killed.Store(true)
	}, nats.Token(c.token))
	out := filepath.Join(dir, "cluster")
	c.runOn(s, id, out)
	if !killed.Load() {
		t.Fatal("the run ended before window 300: server s2 was never killed")
	}
	sameFiles(t, "a server per node, s2 lost", single, out)
}

// TestNATS_RoutesNeedClusterAndToken: --routes without --cluster is bad
// input, a route URL must be nats://HOST:PORT, and with a token a route
// URL without a user gets the token (clusterRoutes).
func TestNATS_RoutesNeedClusterAndToken(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nats", "--routes", "nats://127.0.0.1:6222"}, "--routes: needs --cluster"},
		{[]string{"nats", "--cluster", "127.0.0.1:0", "--routes", "http://h:1"}, `--routes "http://h:1": want nats://HOST:PORT`},
		{[]string{"nats", "--cluster", "127.0.0.1:0", "--routes", "nats://h"}, `--routes "nats://h": want nats://HOST:PORT`},
		{[]string{"nats", "--cluster", "127.0.0.1:x"}, `--cluster "127.0.0.1:x": bad port`},
	} {
		var o, e bytes.Buffer
		if code := run(c.args, &o, &e); code != exitUsage || !strings.Contains(e.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, e.String(), exitUsage, c.want)
		}
	}
	us, err := clusterRoutes([]string{"nats://a:6222", "nats://u:p@b:6222"}, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if got := us[0].String(); got != "nats://lockstep:tok@a:6222" {
		t.Errorf("route without a user: %s; want the token as lockstep's password", got)
	}
	if got := us[1].String(); got != "nats://u:p@b:6222" {
		t.Errorf("route with a user: %s; want it kept", got)
	}
	if us, _ := clusterRoutes([]string{"nats://a:6222"}, ""); us[0].User != nil {
		t.Errorf("no token: route %s has a user", us[0])
	}
}

// TestRunDistributed_NodesServeNATS runs three nodes that each run their
// machine's NATS server in process (`lockstep node --serve --cluster
// --routes`, docs/deploy.md) with a token on clients and routes: no
// server process at all. The coordinator connects to node 0's server and
// the launcher to node 1's; a node reaches the others only through its
// server's routes, and the files must equal a single process's. The
// launcher's results from node 0 and node 2 pass node 1's server, which
// must stay up after node 1's own run while it has clients (checked with
// a client that stays past the launcher).
func TestRunDistributed_NodesServeNATS(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	const n = 3
	ports := freePorts(t, 2*n) // client, route per node
	c := &natsCluster{t: t, token: "tok3n", client: ports[:n], stderr: &lockedWriter{w: &bytes.Buffer{}}}
	for _, p := range ports[n:] {
		c.routes = append(c.routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	id := fmt.Sprintf("serve-%d", os.Getpid())
	for i := 0; i < n; i++ {
		c.start(c.token, "node", "--serve", fmt.Sprintf("127.0.0.1:%d", c.client[i]), "--cluster", fmt.Sprintf("127.0.0.1:%d", ports[n+i]),
			"--routes", strings.Join(c.routes, ","), "--run", id, "--partition", fmt.Sprint(i))
	}
	c.start(c.token, "coordinator", s, "--nats", c.url(0), "--run", id, "--partitions", fmt.Sprint(n))
	// A client of node 1's server that stays: the server must outlive
	// node 1's run while it has clients.
	obs, err := liveness.ConnectWait(c.url(1), 30*time.Second, io.Discard, "observer", nats.Token(c.token), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	out := filepath.Join(dir, "served")
	runCLI(t, "run", s, "--out", out, "--quiet", "--external", "--nats", c.url(1), "--run-id", id, "--partitions", fmt.Sprint(n),
		"--nats-token", c.token)
	sameFiles(t, "nodes serving NATS", single, out)
	if err := obs.FlushTimeout(5 * time.Second); err != nil {
		t.Errorf("node 1's server, after the run, with a client left: %v", err)
	}
	var sum struct {
		Extra struct {
			Distributed struct {
				Windows int64             `json:"windows"`
				PerNode []json.RawMessage `json:"per_node"`
			} `json:"distributed"`
		} `json:"extra"`
	}
	if err := json.Unmarshal(readOut(t, out, "summary.json"), &sum); err != nil {
		t.Fatal(err)
	}
	if d := sum.Extra.Distributed; d.Windows < 10 || len(d.PerNode) != n {
		t.Errorf("summary.json: %d windows, %d nodes; want a run of many windows on %d nodes", d.Windows, len(d.PerNode), n)
	}
	t.Logf("%d windows", sum.Extra.Distributed.Windows)
	for i := 0; i < n; i++ {
		if want := fmt.Sprintf("lockstep node %d: NATS server on", i); !strings.Contains(c.stderr.string(), want) {
			t.Errorf("stderr has no %q:\n%s", want, c.stderr.string())
		}
	}
}

// TestRunDistributed_ProcsNodesServe: `run --procs --nodes-serve`, every
// node process serving NATS in process, joined by routes to the
// launcher's server and by gossip to each other, writes the files one
// process does, with no message lost, and each node's summary says its
// server was joined to every other. --nodes-serve=false puts the nodes on
// the launcher's server (no routes); unset, the nodes serve when each has
// a core (P <= cores) and not with more partitions than cores.
// --nodes-serve where no node process serves is refused.
func TestRunDistributed_ProcsNodesServe(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	type node struct {
		CPU     float64 `json:"cpu_seconds"`
		Resends *uint64 `json:"resends"`
		Routes  int     `json:"routes"`
	}
	// procs runs the scenario in p node processes with flags and returns
	// what summary.json says of the nodes.
	procs := func(name string, p int, flags ...string) []node {
		t.Helper()
		out := filepath.Join(dir, name)
		var so, se bytes.Buffer
		args := append([]string{"run", s, "--out", out, "--quiet", "--procs", "--partitions", fmt.Sprint(p)}, flags...)
		if code := run(args, &so, &se); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, se.String())
		}
		sameFiles(t, name, single, out)
		if se.Len() > 0 {
			t.Errorf("%v: stderr of a quiet run: %q", args, se.String())
		}
		var sum struct {
			Extra struct {
				Distributed struct {
					Nodes   string `json:"nodes"`
					Windows int64  `json:"windows"`
					PerNode []node `json:"per_node"`
				} `json:"distributed"`
			} `json:"extra"`
		}
		if err := json.Unmarshal(readOut(t, out, "summary.json"), &sum); err != nil {
			t.Fatal(err)
		}
		if d := sum.Extra.Distributed; d.Windows < 10 || len(d.PerNode) != p || d.Nodes != "processes" || d.PerNode[0].CPU <= 0 {
			t.Fatalf("%v: summary.json: %+v; want a run of many windows on %d node processes", args, d, p)
		}
		return sum.Extra.Distributed.PerNode
	}
	routes := func(ns []node) []int {
		var r []int
		for _, n := range ns {
			r = append(r, n.Routes)
		}
		return r
	}
	const n = 3
	for i, pn := range procs("served", n, "--nodes-serve") {
		// Its own server, joined to the launcher's and the other nodes'.
		if pn.Routes != n {
			t.Errorf("node %d: its server had routes to %d servers, want %d", i, pn.Routes, n)
		}
		// No message lost: a node publishes only once its server knows
		// every peer's subscriptions (node.Config.Interest), so the
		// leader never had to ask for resends (a window-0 batch sent
		// before a peer's subscription crossed its route would be lost,
		// and the run would stall until a resync).
		if pn.Resends == nil {
			t.Errorf("node %d: no resends in summary.json", i)
		} else if *pn.Resends != 0 {
			t.Errorf("node %d: resends %d, want 0", i, *pn.Resends)
		}
	}
	if r := routes(procs("one-server", n, "--nodes-serve=false")); slices.ContainsFunc(r, func(x int) bool { return x != 0 }) {
		t.Errorf("--nodes-serve=false: the nodes' servers had routes %v, want none", r)
	}
	// Unset: as many partitions as cores (at most 3) serve; more do not.
	p := min(runtime.NumCPU(), n)
	if r := routes(procs("default", p)); slices.ContainsFunc(r, func(x int) bool { return x != p }) {
		t.Errorf("%d partitions on %d cores: routes %v, want %d each (the nodes serve)", p, runtime.NumCPU(), r, p)
	}
	if runtime.NumCPU() < n {
		if r := routes(procs("default-more", n)); slices.ContainsFunc(r, func(x int) bool { return x != 0 }) {
			t.Errorf("%d partitions on %d cores: routes %v, want none (the launcher's server)", n, runtime.NumCPU(), r)
		}
	}
	for _, bad := range [][]string{{"--nodes-serve", "--partitions", "2"}, {"--nodes-serve", "--procs", "--partitions", "2", "--nats", "nats://127.0.0.1:1"}} {
		var o, e bytes.Buffer
		if code := run(append([]string{"run", s, "--out", filepath.Join(dir, "bad")}, bad...), &o, &e); code != 2 || !strings.Contains(e.String(), "--nodes-serve: ") {
			t.Errorf("run %v: exit %d, stderr %q; want exit 2 naming --nodes-serve", bad, code, e.String())
		}
	}
}

// TestNode_ServeRefusesBadInput: `lockstep node --serve` says what is
// wrong in one line, exit 2 for the flags; a server that never gets its
// routes gives up after --setup-timeout, exit 3 (NATS unreachable).
func TestNode_ServeRefusesBadInput(t *testing.T) {
	p := freePorts(t, 3)
	serve := fmt.Sprintf("127.0.0.1:%d", p[0])
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--serve", serve, "--nats", "nats://127.0.0.1:1"}, 2, "--nats (or --serve, or --route)"},
		{[]string{"--route", "nats://127.0.0.1:1", "--serve", serve}, 2, "--nats (or --serve, or --route)"},
		{[]string{"--route", "nats://127.0.0.1:1"}, 2, "--route needs --cluster-size of at least 2"},
		{[]string{"--route", "nats://127.0.0.1:1", "--cluster-size", "3"}, 2, "--route needs the member credentials"},
		{[]string{"--serve", "127.0.0.1:x"}, 2, `--serve "127.0.0.1:x": bad port`},
		{[]string{"--serve", serve, "--routes", "nats://a:1"}, 2, "--routes: needs --cluster"},
		{[]string{"--serve", serve, "--cluster", "127.0.0.1:0", "--routes", "tcp://a"}, 2, `--routes "tcp://a": want nats://HOST:PORT`},
		{[]string{"--serve", serve, "--nats-ca", "ca.pem"}, 2, "knows a token only (--nats-token), not --nats-ca"},
		{[]string{"--serve", serve, "--cluster", fmt.Sprintf("127.0.0.1:%d", p[1]), "--setup-timeout", "100ms",
			"--routes", fmt.Sprintf("nats://127.0.0.1:%d,nats://127.0.0.1:%d", p[1], p[2])}, 3, "routes to 0 of the 1 other servers after 100ms"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"node", "--run", "r", "--partition", "0"}, c.args...), &out, &errb)
		// The error is one line, the last (a server that started says
		// where first).
		msg := strings.TrimPrefix(strings.TrimSpace(errb.String()), fmt.Sprintf("lockstep node 0: NATS server on %s\n", serve))
		if code != c.code || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", c.args, code, msg, c.code, c.want)
		}
	}
}
