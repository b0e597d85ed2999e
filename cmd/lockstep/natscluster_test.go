package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// freePorts returns n loopback ports that were free a moment ago.
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
	ports := freePorts(t, 3*n+3) // client, route, monitor per server, and a rogue's
	client, route, mon := ports[:n], ports[n:2*n], ports[2*n:3*n]
	var routes []string
	for _, p := range route {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p)) // the token is added by `lockstep nats`
	}
	var errs bytes.Buffer
	lw := &lockedWriter{w: &errs}
	start := func(token string, args ...string) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "LOCKSTEP_NATS_TOKEN="+token)
		cmd.Stderr = lw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	for i := 0; i < n; i++ {
		start("tok3n", "nats", "--addr", fmt.Sprintf("127.0.0.1:%d", client[i]), "--cluster", fmt.Sprintf("127.0.0.1:%d", route[i]),
			"--routes", strings.Join(routes, ","), "--jetstream=false", "--name", fmt.Sprintf("s%d", i),
			"--monitor", fmt.Sprintf("127.0.0.1:%d", mon[i]))
	}
	// A server with another token tries to join through s0: its routes
	// are refused for the whole run.
	rogue := ports[3*n:]
	start("wrong", "nats", "--addr", fmt.Sprintf("127.0.0.1:%d", rogue[0]), "--cluster", fmt.Sprintf("127.0.0.1:%d", rogue[1]),
		"--routes", routes[0], "--jetstream=false", "--name", "rogue", "--monitor", fmt.Sprintf("127.0.0.1:%d", rogue[2]))
	// The cluster is formed when every server has a route to both others.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < n; i++ {
		for {
			r, err := getRoutez(mon[i])
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
				t.Fatalf("server s%d: routes to %v after 30 s (err %v); stderr:\n%s", i, r.peers(), err, lw.string())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	dir := write(t, map[string]string{"r.yaml": randomYAML})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	url := func(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", client[i]) }
	id := fmt.Sprintf("cluster-%d", os.Getpid())
	start("tok3n", "coordinator", s, "--nats", url(0), "--run", id, "--partitions", fmt.Sprint(n))
	for i := 0; i < n; i++ {
		start("tok3n", "node", "--nats", url(i), "--run", id, "--partition", fmt.Sprint(i))
	}
	out := filepath.Join(dir, "cluster")
	runCLI(t, "run", s, "--out", out, "--quiet", "--external", "--nats", url(1), "--run-id", id, "--partitions", fmt.Sprint(n),
		"--nats-token", "tok3n")
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
		r, err := getRoutez(mon[i])
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
