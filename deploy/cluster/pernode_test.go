//go:build cluster

package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Case (j): a NATS server per node container (docs/deploy.md, "A NATS
// server per machine"): two `lockstep nats` containers joined by routes
// with the run's token, JetStream off; node 0 and the coordinator on the
// first, node 1 on the second, the launcher on this host through the
// first. The k=8 permutation is byte-identical to one process, so every
// report and batch between the nodes crossed the route.
func TestCluster_J_ServerPerNode(t *testing.T) {
	file := scenarioFile(t, k8YAML(t))
	ref := reference(t, file)
	e := newEnv(t)
	token := newToken(t)
	envFile := tokenEnvFile(t, token)
	port, mon := freePort(t), freePort(t)
	routes := "nats://nats0:6222,nats://nats1:6222"
	for i := 0; i < 2; i++ {
		opts := []string{"--env-file", envFile}
		if i == 0 {
			opts = append(opts, "-p", fmt.Sprintf("127.0.0.1:%d:4222", port), "-p", fmt.Sprintf("127.0.0.1:%d:8222", mon))
		}
		e.run(container{member: fmt.Sprintf("nats%d", i), opts: opts, args: []string{"nats", "--addr", "0.0.0.0:4222",
			"--jetstream=false", "--name", fmt.Sprintf("s%d", i), "--cluster", "0.0.0.0:6222", "--routes", routes,
			"--monitor", "0.0.0.0:8222"}})
	}
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	waitNATS(t, url, token)
	// The cluster is formed when the first server has a route to the
	// second (its monitor's /routez).
	deadline := time.Now().Add(30 * time.Second)
	for {
		var rz struct {
			Routes []struct {
				RemoteName string `json:"remote_name"`
			} `json:"routes"`
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/routez", mon))
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&rz)
			resp.Body.Close()
		}
		if err == nil && len(rz.Routes) > 0 && rz.Routes[0].RemoteName == "s1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the two NATS servers did not join in 30 s:\n%s\n%s", e.logs("nats0"), e.logs("nats1"))
		}
		time.Sleep(50 * time.Millisecond) // polling the server against the deadline
	}
	run := "r" + e.id
	l := startLauncher(t, file, url, run, token, 2, "--peer-timeout", "20s")
	common := func(server string) []string {
		return []string{"--nats", "nats://" + server + ":4222", "--run", run, "--peer-timeout", "20s"}
	}
	e.run(container{member: "c0", opts: []string{"-v", file + ":/scenario.yaml:ro", "--env-file", envFile},
		args: append([]string{"coordinator", "/scenario.yaml", "--partitions", "2", "--id", "c0"}, common("nats0")...)})
	for i := 0; i < 2; i++ {
		e.run(container{member: fmt.Sprintf("n%d", i), opts: []string{"--env-file", envFile},
			args: append([]string{"node", "--partition", fmt.Sprint(i)}, common(fmt.Sprintf("nats%d", i))...)})
	}
	if code := l.wait(t, 3*time.Minute); code != 0 {
		for _, m := range []string{"nats0", "nats1", "c0", "n0", "n1"} {
			t.Logf("%s:\n%s", m, e.logs(m))
		}
		t.Fatalf("launcher exit %d:\n%s", code, l.stderr.String())
	}
	sameOutputs(t, ref, l.out)
	for _, m := range []string{"n0", "n1"} {
		if code, err := e.exitCode(m, 30*time.Second); err != nil || code != 0 {
			t.Errorf("%s: exit %d, %v", m, code, err)
		}
	}
	if logs := e.logs("nats1"); !strings.Contains(logs, `routes on`) {
		t.Errorf("nats1 did not say it listens for routes:\n%s", logs)
	}
}

// Case (k): the nodes serve NATS themselves (docs/deploy.md, "The node
// runs its machine's server"): two node containers, each running its
// server in process (`lockstep node --serve --cluster --routes`) with the
// run's token, and no server container at all; the coordinator on node
// 0's server, the launcher on this host through node 0's published port.
// The k=8 permutation is byte-identical to one process.
func TestCluster_K_NodesServeNATS(t *testing.T) {
	file := scenarioFile(t, k8YAML(t))
	ref := reference(t, file)
	e := newEnv(t)
	token := newToken(t)
	envFile := tokenEnvFile(t, token)
	port := freePort(t)
	run := "r" + e.id
	for i := 0; i < 2; i++ {
		opts := []string{"--env-file", envFile}
		if i == 0 {
			opts = append(opts, "-p", fmt.Sprintf("127.0.0.1:%d:4222", port))
		}
		e.run(container{member: fmt.Sprintf("n%d", i), opts: opts, args: []string{"node", "--partition", fmt.Sprint(i),
			"--serve", "0.0.0.0:4222", "--cluster", "0.0.0.0:6222", "--routes", "nats://n0:6222,nats://n1:6222",
			"--run", run, "--peer-timeout", "20s"}})
	}
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	waitNATS(t, url, token)
	e.run(container{member: "c0", opts: []string{"-v", file + ":/scenario.yaml:ro", "--env-file", envFile},
		args: []string{"coordinator", "/scenario.yaml", "--partitions", "2", "--id", "c0", "--nats", "nats://n0:4222",
			"--run", run, "--peer-timeout", "20s"}})
	l := startLauncher(t, file, url, run, token, 2, "--peer-timeout", "20s")
	if code := l.wait(t, 3*time.Minute); code != 0 {
		for _, m := range []string{"c0", "n0", "n1"} {
			t.Logf("%s:\n%s", m, e.logs(m))
		}
		t.Fatalf("launcher exit %d:\n%s", code, l.stderr.String())
	}
	sameOutputs(t, ref, l.out)
	for _, m := range []string{"n0", "n1"} {
		if code, err := e.exitCode(m, 30*time.Second); err != nil || code != 0 {
			t.Errorf("%s: exit %d, %v", m, code, err)
		}
		if logs := e.logs(m); !strings.Contains(logs, "NATS server on") {
			t.Errorf("%s did not say it serves NATS:\n%s", m, logs)
		}
	}
}
