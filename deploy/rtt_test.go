package deploy

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/lockstep-sim/lockstep/internal/member"
)

// TestRTTConn_OverTheNetwork: with the embedded server, the launcher's own
// connections are in process (a pipe), but the one its NATS round trip is
// sampled on goes over TCP, the path of the node processes: an in-process
// PING measures two goroutine hand-offs, not the nodes' network, and
// understated the round trip that summary.json's nats_rtt_us sets the
// barrier wait against.
func TestRTTConn_OverTheNetwork(t *testing.T) {
	creds, err := member.NewSet("rtt-test", []string{"c0"}, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	l := &launch{o: Options{RunID: "rtt-test"}, creds: creds}
	if err := l.startNATS(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, nc := range l.conns {
			nc.Close()
		}
		l.srv.Shutdown()
		l.srv.WaitForShutdown()
	}()
	in, err := l.connect("launcher", l.member(member.Launcher))
	if err != nil {
		t.Fatal(err)
	}
	if a := in.ConnectedAddr(); a != "pipe" {
		t.Errorf("the launcher's connection: remote %q, want an in-process pipe", a)
	}
	rc, err := l.rttConn()
	if err != nil {
		t.Fatal(err)
	}
	a, err := net.ResolveTCPAddr("tcp", rc.ConnectedAddr())
	if err != nil || !a.IP.IsLoopback() || a.Port != l.srv.Addr().(*net.TCPAddr).Port {
		t.Errorf("the round trip's connection: remote %q (%v), want the embedded server's TCP address %v", rc.ConnectedAddr(), err, l.srv.Addr())
	}
	if err := rc.Flush(); err != nil {
		t.Errorf("a PING over it: %v", err)
	}
}

// TestDial_WaitsForAnExternalServer: with --nats the launcher may start
// before the deployment's server (docker compose, a Kubernetes apply): its
// connection waits for it within the join timeout, as a node's does.
func TestDial_WaitsForAnExternalServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var buf bytes.Buffer
	said := &syncWriter{w: &buf}
	saidSoFar := func() string {
		said.mu.Lock()
		defer said.mu.Unlock()
		return buf.String()
	}
	l := &launch{o: Options{NATS: fmt.Sprintf("nats://127.0.0.1:%d", port), JoinTimeout: time.Minute, Stderr: said}}
	if err := l.startNATS(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		nc, err := l.dial("launcher", nil, false)
		if err == nil {
			nc.Close()
		}
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(saidSoFar(), "lockstep launcher: waiting up to 1m0s for NATS") {
		select {
		case err := <-done:
			t.Fatalf("dial returned before the server was up: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the launcher never said it waits")
		}
		time.Sleep(time.Millisecond) // polling its output against the deadline
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if err := <-done; err != nil {
		t.Fatalf("the server came up; dial: %v", err)
	}
}
