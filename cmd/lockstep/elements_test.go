package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/elementproto"
	"github.com/lockstep-sim/lockstep/elementproto/natspeer"
	"github.com/lockstep-sim/lockstep/examples/extswitch"
)

// extFatTreeYAML: a k=4 fat-tree with small buffers, ECN by a step on
// two tiers (one on dequeue), a switch latency, an incast and a
// permutation: queues, drops, marks and ties at the switches.
const extFatTreeYAML = `seed: 7
topology:
  type: fattree
  fattree:
    k: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 64KiB, ecn: {mode: step, k: 20KiB}}
    agg:  {rate: 100Gbps, delay: 2us, buffer: 64KiB}
    core: {rate: 100Gbps, delay: 1us, buffer: 64KiB, ecn: {mode: step, k: 16KiB, on: dequeue}}
    switch_latency: 300ns
transport: {mtu: 4096, ecn: true, rto: {min: 1ms, initial: 2ms}}
workload:
  - {type: incast, n: 8, dst: 0, size: 300KB}
  - {type: permutation, size: 200KB}
`

// extList replaces a ToR, an aggregation switch (under another element
// name) and the four cores by external elements.
const extList = `external:
  - {switch: tor0}
  - {switch: agg1, element: aggregation-1}
  - {switch: "core*"}
`

var extElements = []string{"tor0", "aggregation-1", "core0", "core1", "core2", "core3"}

// serveElements serves fresh example switches for run on nc, each made
// by mk (nil: extswitch.New).
func serveElements(t *testing.T, nc *nats.Conn, run string, mk func(el string) natspeer.Element) {
	t.Helper()
	for _, el := range extElements {
		var e natspeer.Element = extswitch.New()
		if mk != nil {
			e = mk(el)
		}
		sub, err := natspeer.Serve(nc, natspeer.Subject(run, el), e)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
}

// TestRun_ExternalElementsSameFilesAsTheBuiltIn: the scenario's external
// list replaces six switches of a fat-tree by the example external
// switch, served over NATS (as the extswitch command serves it); the
// run in one process, in 4 in-memory partitions, in 2 and 4 partitions
// of goroutine nodes over NATS and in 3 node processes writes every file
// byte-identical to the run with lockstep's own switches (queues.csv
// included: the external switches' rows come from their counters).
func TestRun_ExternalElementsSameFilesAsTheBuiltIn(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1") // for the child processes only
	ns := startNATS(t)
	url := ns.ClientURL()
	ec, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	dir := write(t, map[string]string{"ref.yaml": extFatTreeYAML, "ext.yaml": extFatTreeYAML + extList})
	ref := filepath.Join(dir, "builtin")
	runCLI(t, "run", filepath.Join(dir, "ref.yaml"), "--partitions", "1", "--out", ref, "--quiet")
	if q := string(readOut(t, ref, "queues.csv")); !strings.Contains(q, "\ntor0,") || !strings.Contains(q, "\ncore3,") {
		t.Fatalf("queues.csv:\n%s", q)
	}
	for i, c := range []struct {
		name string
		args []string
	}{
		{"one process", nil},
		{"4 partitions, memory", []string{"--partitions", "4", "--transport", "memory"}},
		{"2 partitions, goroutines over NATS", []string{"--partitions", "2"}},
		{"4 partitions, goroutines over NATS", []string{"--partitions", "4"}},
		{"3 node processes", []string{"--partitions", "3", "--procs"}},
	} {
		run := fmt.Sprintf("ext%d", i)
		serveElements(t, ec, run, nil)
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		stdout := runCLI(t, append([]string{"run", filepath.Join(dir, "ext.yaml"), "--nats", url, "--run-id", run,
			"--out", out}, c.args...)...)
		if c.args != nil && !strings.Contains(stdout, "partitions") {
			t.Errorf("%s: %q", c.name, stdout)
		}
		sameFiles(t, c.name, ref, out)
		t.Logf("%s: %s", c.name, stdout)
	}
}

// silent answers its setup and then nothing until the test ends.
type silent struct{ stop <-chan struct{} }

func (s *silent) Setup([]byte) error { return nil }
func (s *silent) Step([]byte) ([]byte, error) {
	<-s.stop
	return nil, fmt.Errorf("silent")
}

// lateStart is the example switch whose first departure starts 1 ps
// before its packet arrived.
type lateStart struct {
	*extswitch.Switch
	done bool
}

func (l *lateStart) Step(msg []byte) ([]byte, error) {
	out, err := l.Switch.Step(msg)
	if err != nil || l.done {
		return out, err
	}
	var r elementproto.Reply
	if err := elementproto.Unmarshal(out, &r); err != nil || len(r.Departures) == 0 {
		return out, err
	}
	var w elementproto.Window
	_ = elementproto.Unmarshal(msg, &w)
	r.Departures[0].Start = w.Start - 1
	l.done = true
	return elementproto.Marshal(&r)
}

// TestRun_ExternalElementMisbehavesFailsTheRun: an element that stays
// silent, or starts a packet before its window, fails the run within the
// peer timeout, in one process, in memory, over NATS and in node
// processes: exit status 3, one line naming the element, and the partial
// results written (summary.json "complete": false).
func TestRun_ExternalElementMisbehavesFailsTheRun(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	ns := startNATS(t)
	url := ns.ClientURL()
	ec, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	dir := write(t, map[string]string{"ext.yaml": extFatTreeYAML + extList})
	stop := make(chan struct{})
	defer close(stop)
	for i, c := range []struct {
		name, bad, want string
		args            []string
	}{
		{"silent, one process", "core2", "external element core2 (node 34): window 0: step: no reply within the peer timeout (500ms)", nil},
		{"silent, memory", "core2", "external element core2 (node 34): window 0: step: no reply within the peer timeout (500ms)",
			[]string{"--partitions", "2", "--transport", "memory"}},
		{"early start, goroutines over NATS", "tor0", "external element tor0 (node 16): window 0: packet 0 (arrived at",
			[]string{"--partitions", "2"}},
		{"silent, node processes", "aggregation-1", "external element agg1 (node 25): window 0: step: no reply within the peer timeout (500ms)",
			[]string{"--partitions", "2", "--procs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprintf("bad%d", i)
			serveElements(t, ec, id, func(el string) natspeer.Element {
				switch {
				case el != c.bad:
					return extswitch.New()
				case strings.HasPrefix(c.name, "silent"):
					return &silent{stop: stop}
				}
				return &lateStart{Switch: extswitch.New()}
			})
			out := filepath.Join(dir, id)
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"run", filepath.Join(dir, "ext.yaml"), "--nats", url, "--run-id", id, "--peer-timeout", "1s",
				"--out", out, "--quiet"}, c.args...), &stdout, &stderr)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if code != 3 || !strings.Contains(last, c.want) || !strings.Contains(last, "partial results in") {
				t.Fatalf("exit %d, want 3 with one line containing %q; stderr:\n%s", code, c.want, stderr.String())
			}
			var sum struct {
				Complete bool   `json:"complete"`
				Reason   string `json:"incomplete_reason"`
			}
			if err := json.Unmarshal(readOut(t, out, "summary.json"), &sum); err != nil || sum.Complete || !strings.Contains(sum.Reason, c.want) {
				t.Fatalf("summary.json: %+v, %v", sum, err)
			}
		})
	}
}

// TestRun_ExternalElementsUsage: a scenario with external elements and
// no --nats or --run-id, or with checkpoints, is refused before anything
// runs (exit 2, one line naming the file and the field).
func TestRun_ExternalElementsUsage(t *testing.T) {
	dir := write(t, map[string]string{"ext.yaml": extFatTreeYAML + extList})
	s := filepath.Join(dir, "ext.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "ext.yaml: external: 6 switches run as external elements, which serve on NATS: give --nats URL and --run-id ID"},
		{[]string{"--partitions", "2"}, "ext.yaml: external: 6 switches run as external elements"},
		{[]string{"--nats", "nats://127.0.0.1:1"}, "give --nats URL and --run-id ID"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--run-id", "a.b"}, `--run-id "a.b"`},
		{[]string{"--nats", "nats://127.0.0.1:1", "--run-id", "r", "--checkpoint-every", "1ms"}, "ext.yaml: external: a run with external elements cannot checkpoint"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"run", s, "--out", filepath.Join(dir, "out"), "--quiet"}, c.args...), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
			t.Errorf("%v: exit %d, want 2 and one line containing %q; stderr:\n%s", c.args, code, c.want, stderr.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
			t.Errorf("%v: --out written", c.args)
		}
	}
}

// TestRun_ExternalElementsOnTheEmbeddedServer: a run over the embedded
// NATS server writes each external element's key, the server's URL and
// the run id into --element-keys; elements that log in with them serve
// the run (byte-identical to lockstep's own switches). The server lets
// nobody in without a key, and an element's key answers its own
// subjects only: it can neither hear another element's requests nor
// publish a report.
func TestRun_ExternalElementsOnTheEmbeddedServer(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	dir := write(t, map[string]string{"ref.yaml": extFatTreeYAML, "ext.yaml": extFatTreeYAML + extList})
	ref := filepath.Join(dir, "builtin")
	runCLI(t, "run", filepath.Join(dir, "ref.yaml"), "--partitions", "1", "--out", ref, "--quiet")
	for _, procs := range []bool{false, true} {
		keys, out := filepath.Join(dir, fmt.Sprintf("keys%v", procs)), filepath.Join(dir, fmt.Sprintf("out%v", procs))
		args := []string{"run", filepath.Join(dir, "ext.yaml"), "--partitions", "2", "--element-keys", keys, "--out", out, "--quiet"}
		if procs {
			args = append(args, "--procs")
		}
		var stderr bytes.Buffer
		done := make(chan int, 1)
		go func() { done <- run(args, io.Discard, &syncWriter{w: &stderr}) }()
		deadline := time.Now().Add(30 * time.Second)
		var url []byte
		for {
			if b, err := os.ReadFile(filepath.Join(keys, "url")); err == nil && len(bytes.TrimSpace(b)) > 0 {
				url = bytes.TrimSpace(b)
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no url written")
			}
			time.Sleep(5 * time.Millisecond) // polling the file against the deadline
		}
		runID := strings.TrimSpace(string(readOut(t, keys, "run")))
		if nc, err := nats.Connect(string(url), nats.MaxReconnects(0)); err == nil {
			nc.Close()
			t.Errorf("the embedded server let a client in without a key")
		}
		violations := make(chan error, 16)
		for _, el := range extElements {
			opt, err := nats.NkeyOptionFromSeed(filepath.Join(keys, el+".nk"))
			if err != nil {
				t.Fatal(err)
			}
			nc, err := nats.Connect(string(url), opt, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				violations <- err
			}))
			if err != nil {
				t.Fatalf("element %s: %v", el, err)
			}
			defer nc.Close()
			if _, err := natspeer.Serve(nc, natspeer.Subject(runID, el), extswitch.New()); err != nil {
				t.Fatal(err)
			}
			if el == "tor0" {
				_, _ = nc.Subscribe(natspeer.Subject(runID, "core0")+".*", func(*nats.Msg) {})
				_ = nc.Publish("lockstep."+runID+".report.0", []byte("forged"))
				_ = nc.Flush()
			}
		}
		select {
		case code := <-done:
			if code != 0 {
				t.Fatalf("procs %v: exit %d:\n%s", procs, code, stderr.String())
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("procs %v: the run did not end:\n%s", procs, stderr.String())
		}
		if !strings.Contains(stderr.String(), "external elements tor0,aggregation-1,core0,core1,core2,core3 of run "+runID) {
			t.Errorf("stderr does not say where the elements serve:\n%s", stderr.String())
		}
		sameFiles(t, fmt.Sprintf("embedded server, procs %v", procs), ref, out)
		for _, want := range []string{"Subscription to \"lockstep." + runID + ".element.core0.*\"", "Publish to \"lockstep." + runID + ".report.0\""} {
			select {
			case err := <-violations:
				if !strings.Contains(err.Error(), "Permissions Violation") {
					t.Errorf("want a permissions violation (%s), got %v", want, err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("no permissions violation for %s", want)
			}
		}
	}
}
