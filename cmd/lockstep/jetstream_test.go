package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func jetStreamServer(t *testing.T, dir string, port int) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: dir, MaxPayload: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats did not start")
	}
	return s
}

// TestFetchResults_JetStreamSameBytesAsRequestReply: on a NATS server with
// JetStream the nodes also store their results in the run's object store
// bucket; `lockstep fetch-results` reads them back — after the launcher
// has gone and the NATS server has restarted — and writes exactly the
// files the launcher wrote from the request/reply upload, which are the
// single-process run's.
func TestFetchResults_JetStreamSameBytesAsRequestReply(t *testing.T) {
	requireWired(t)
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	scen := filepath.Join(dir, "r.yaml")
	store := filepath.Join(dir, "js")
	port := freeTCPPort(t)
	ns := jetStreamServer(t, store, port)
	url := ns.ClientURL()
	single, rr, js := filepath.Join(dir, "single"), filepath.Join(dir, "rr"), filepath.Join(dir, "js-out")
	runCLI(t, "run", scen, "--out", single, "--quiet")
	runCLI(t, "run", scen, "--partitions", "3", "--nats", url, "--run-id", "js-1", "--out", rr, "--quiet")
	sameFiles(t, "request/reply", single, rr)

	// The launcher is gone; so is the server, for a moment.
	ns.Shutdown()
	ns.WaitForShutdown()
	ns = jetStreamServer(t, store, port)
	defer ns.Shutdown()
	out := runCLI(t, "fetch-results", "js-1", "--nats", url, "--out", js)
	if !strings.Contains(out, "3 partitions from JetStream bucket lockstep-results-js-1") {
		t.Errorf("fetch-results said %q", out)
	}
	sameFiles(t, "fetched from JetStream", rr, js)

	var stdout, stderr bytes.Buffer
	if code := run([]string{"fetch-results", "no-such-run", "--nats", url, "--out", filepath.Join(dir, "none")}, &stdout, &stderr); code != exitFailed ||
		!strings.Contains(stderr.String(), "no-such-run") {
		t.Errorf("fetch-results of an unknown run: exit %d, %q", code, stderr.String())
	}
}
