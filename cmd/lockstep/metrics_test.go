package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func freeTCPPort(t *testing.T) int {
	t.Helper()
	return freePorts(t, 1)[0]
}

// promQuery asks Prometheus's HTTP API for an instant vector and returns
// each series' labels and value.
func promQuery(t *testing.T, base, q string) []map[string]string {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			} `json:"result"`
		} `json:"data"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("query %q: %v %s", q, err, r.Error)
	}
	var out []map[string]string
	for _, s := range r.Data.Result {
		m := map[string]string{}
		for k, v := range s.Metric {
			m[k] = v
		}
		if len(s.Value) == 2 {
			m["value"] = fmt.Sprint(s.Value[1])
		}
		out = append(out, m)
	}
	return out
}

func value(t *testing.T, m map[string]string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(m["value"], 64)
	if err != nil {
		t.Fatalf("value of %v: %v", m, err)
	}
	return f
}

// TestMetrics_PrometheusScrapesARun starts a real Prometheus (Debian's
// prometheus; make deps installs it) scraping every second a
// multi-process run whose coordinator and nodes serve --metrics, and reads
// the metrics back through Prometheus's query API: the nodes' events add
// up to the run's, every partition reached the last window, one replica
// led, raft had a term. The processes keep serving a few seconds after the
// run (--metrics-linger) so that the end is scraped too. Outputs are
// checked against a run without metrics: byte-identical.
func TestMetrics_PrometheusScrapesARun(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("prometheus is not installed (make deps installs it): %v", err)
		}
		t.Skip("prometheus is not installed (make deps installs it)")
	}
	requireWired(t)
	dir := t.TempDir()
	scen := filepath.Join("..", "..", "examples", "fattree-k8-permutation.yaml")
	const p = 2
	// NATS for the run.
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, MaxPayload: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats did not start")
	}
	defer ns.Shutdown()
	natsURL := ns.ClientURL()

	// The members' metrics ports and Prometheus's configuration.
	members := []string{"coordinator"}
	for i := 0; i < p; i++ {
		members = append(members, fmt.Sprintf("node%d", i))
	}
	ports := map[string]int{}
	var targets []string
	for _, m := range members {
		ports[m] = freeTCPPort(t)
		targets = append(targets, fmt.Sprintf("'127.0.0.1:%d'", ports[m]))
	}
	cfg := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: lockstep\n    static_configs:\n      - targets: [%s]\n",
		strings.Join(targets, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	promPort := freeTCPPort(t)
	promURL := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	var promLog bytes.Buffer
	pc := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort))
	pc.Stdout, pc.Stderr = &promLog, &promLog
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = pc.Process.Kill()
		_ = pc.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", promLog.String())
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if r, err := http.Get(promURL + "/-/ready"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready:\n%s", promLog.String())
		}
		time.Sleep(100 * time.Millisecond) // polling its readiness against the deadline
	}

	// Prometheus hands new targets to its scrape loops after up to 5 s
	// (its discovery manager's update interval): wait until it scrapes
	// all of them (down, for now) before the run starts.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if n := len(promQuery(t, promURL, `up{job="lockstep"}`)); n == len(members) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus does not scrape the targets:\n%s", promLog.String())
		}
		time.Sleep(200 * time.Millisecond) // polling its targets against the deadline
	}

	// The members, as child processes (this test binary as lockstep).
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := "metrics-test"
	var logs bytes.Buffer
	var procs []*exec.Cmd
	start := func(args ...string) {
		c := exec.Command(exe, args...)
		c.Env = append(os.Environ(), asMainEnv+"=1")
		c.Stdout, c.Stderr = &syncWriter{w: &logs}, &syncWriter{w: &logs}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, c)
	}
	defer func() {
		for _, c := range procs {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		if t.Failed() {
			t.Logf("members:\n%s", logs.String())
		}
	}()
	const linger = "4s"
	start("coordinator", scen, "--nats", natsURL, "--run", run, "--partitions", strconv.Itoa(p),
		"--metrics", fmt.Sprintf(":%d", ports["coordinator"]), "--metrics-linger", linger)
	for i := 0; i < p; i++ {
		start("node", "--nats", natsURL, "--run", run, "--partition", strconv.Itoa(i),
			"--metrics", fmt.Sprintf("127.0.0.1:%d", ports[fmt.Sprintf("node%d", i)]), "--metrics-linger", linger)
	}
	out := filepath.Join(dir, "out")
	runCLI(t, "run", scen, "--partitions", strconv.Itoa(p), "--external", "--nats", natsURL, "--run-id", run, "--out", out, "--quiet")
	for _, c := range procs {
		if err := c.Wait(); err != nil {
			t.Fatalf("a member failed: %v", err)
		}
	}
	procs = nil
	var sum struct {
		Events float64 `json:"events"`
		Extra  struct {
			Distributed struct {
				Windows float64 `json:"windows"`
			} `json:"distributed"`
		} `json:"extra"`
	}
	if b, err := os.ReadFile(filepath.Join(out, "summary.json")); err != nil || json.Unmarshal(b, &sum) != nil {
		t.Fatalf("summary.json: %v", err)
	}

	// What Prometheus scraped.
	up := promQuery(t, promURL, `count_over_time(up{job="lockstep"}[5m])`)
	if len(up) != len(members) {
		t.Fatalf("Prometheus scraped %d targets, want %d: %v", len(up), len(members), up)
	}
	for _, s := range up {
		if value(t, s) < 3 {
			t.Errorf("target %s scraped %v times, want at least 3", s["instance"], s["value"])
		}
	}
	var events float64
	for _, s := range promQuery(t, promURL, `max_over_time(lockstep_node_events_total[5m])`) {
		events += value(t, s)
	}
	if events != sum.Events {
		t.Errorf("the nodes' lockstep_node_events_total add up to %v, the run had %v events", events, sum.Events)
	}
	wins := promQuery(t, promURL, `max_over_time(lockstep_partition_window[5m])`)
	if len(wins) != p {
		t.Errorf("lockstep_partition_window: %d partitions, want %d", len(wins), p)
	}
	for _, q := range []string{`max_over_time(lockstep_raft_term[5m])`, `max_over_time(lockstep_raft_leader[5m])`,
		`max_over_time(lockstep_run_window[5m])`, `max_over_time(lockstep_node_cross_bytes_total[5m])`,
		`max_over_time(lockstep_node_packets_sent_total[5m])`, `max_over_time(lockstep_node_virtual_time_seconds[5m])`} {
		r := promQuery(t, promURL, q)
		if len(r) == 0 || value(t, r[0]) <= 0 {
			t.Errorf("%s: %v, want a positive value", q, r)
		}
		t.Logf("%s = %v", q, r)
	}
	t.Logf("Prometheus scraped %d targets at 1s (%v scrapes of the first); the nodes' events sum to %v = the run's; %v windows",
		len(up), up[0]["value"], events, sum.Extra.Distributed.Windows)

	// Metrics never change outputs.
	plain := filepath.Join(dir, "plain")
	runCLI(t, "run", scen, "--out", plain, "--quiet")
	sameFiles(t, "with metrics", plain, out)
}

var metricsLogMu sync.Mutex

// syncWriter serialises the children's output into one buffer.
type syncWriter struct{ w io.Writer }

func (s *syncWriter) Write(b []byte) (int, error) {
	metricsLogMu.Lock()
	defer metricsLogMu.Unlock()
	return s.w.Write(b)
}

// TestRunMetrics_ChildrenSayWhere: `lockstep run --procs --metrics
// 127.0.0.1:0` gives every node process a metrics listener of its own and
// each says on stderr where; without node processes --metrics is refused.
func TestRunMetrics_ChildrenSayWhere(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1") // for the child processes only
	dir := t.TempDir()
	scen := filepath.Join("..", "..", "examples", "dumbbell.yaml")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", scen, "--partitions", "2", "--procs", "--metrics", "127.0.0.1:0", "--out", filepath.Join(dir, "a"), "--quiet"},
		&stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for i := 0; i < 2; i++ {
		if w := fmt.Sprintf("node %d: lockstep node %d: metrics on http://127.0.0.1:", i, i); !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}
	for _, args := range [][]string{{"--metrics", "127.0.0.1:0"}, {"--partitions", "2", "--procs", "--metrics", "127.0.0.1:9100"}} {
		stderr.Reset()
		if code := run(append([]string{"run", scen, "--out", filepath.Join(dir, "b")}, args...), &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want 2: %s", args, code, stderr.String())
		}
	}
}
