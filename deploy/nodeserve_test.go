package deploy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/member"
	"github.com/lockstep-sim/lockstep/internal/wire"
)

// TestNodeServerOptions_MeshAndPermissions: the servers of `run --procs
// --nodes-serve` as the launcher and two node processes start them. The
// node servers, given only the launcher's route, reach each other by the
// cluster's gossip; node 0's report, published in process, reaches node 1
// in process; node 0 may not publish node 1's report (its own server
// refuses it, as the launcher's would) nor hear batches meant for node 1;
// and a server with another route token gets no route.
func TestNodeServerOptions_MeshAndPermissions(t *testing.T) {
	const run = "r1"
	set, err := member.NewSet(run, []string{"c0"}, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	subj, err := wire.NewSubjects(run)
	if err != nil {
		t.Fatal(err)
	}
	start := func(opts *server.Options) *server.Server {
		t.Helper()
		ns, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go ns.Start()
		t.Cleanup(ns.Shutdown)
		if !ServerReady(ns, 10*time.Second) {
			t.Fatal("a server did not start")
		}
		return ns
	}
	lopts, err := ServerOptions(run, set)
	if err != nil {
		t.Fatal(err)
	}
	const token = "0123456789abcdef"
	lopts.Cluster = RouteCluster(token)
	ls := start(lopts)
	route := "nats://" + ls.ClusterAddr().String()
	var nodes []*server.Server
	for i := 0; i < 2; i++ {
		o, err := NodeServerOptions(set.Nodes[i], i, route, token)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, start(o))
	}
	deadline := time.Now().Add(20 * time.Second)
	for RoutesOf(nodes[0]) < 2 || RoutesOf(nodes[1]) < 2 || RoutesOf(ls) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no full mesh: routes %d, %d, launcher %d", RoutesOf(nodes[0]), RoutesOf(nodes[1]), RoutesOf(ls))
		}
		time.Sleep(5 * time.Millisecond) // polling the routes against the deadline
	}
	// Its client port takes node 0's key only.
	if nc, err := nats.Connect(nodes[0].ClientURL()); err == nil {
		nc.Close()
		t.Error("a client without node 0's key connected to node 0's server")
	}
	if mo, err := set.Nodes[1].Options(); err != nil {
		t.Fatal(err)
	} else if nc, err := nats.Connect(nodes[0].ClientURL(), mo...); err == nil {
		nc.Close()
		t.Error("node 1 logged in to node 0's server")
	}
	errs := make(chan error, 16)
	connect := func(i int) *nats.Conn {
		t.Helper()
		mo, err := set.Nodes[i].Options()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect("", append(mo, nats.InProcessServer(nodes[i]), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			errs <- err
		}))...)
		if err != nil {
			t.Fatalf("node %d in process: %v", i, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	n0, n1 := connect(0), connect(1)
	got, err := n1.SubscribeSync(subj.Reports())
	if err != nil {
		t.Fatal(err)
	}
	if err := n1.Flush(); err != nil {
		t.Fatal(err)
	}
	// Node 1's interest reaches node 0's server over their route.
	deadline = time.Now().Add(10 * time.Second)
	for {
		if err := n0.Publish(subj.Report(0), []byte("r0")); err != nil {
			t.Fatal(err)
		}
		if m, err := got.NextMsg(20 * time.Millisecond); err == nil {
			if m.Subject != subj.Report(0) {
				t.Fatalf("node 1 heard %s", m.Subject)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node 0's report never reached node 1")
		}
	}
	for { // drain the copies
		if _, err := got.NextMsg(50 * time.Millisecond); err != nil {
			break
		}
	}
	// Forged: node 0 speaking as node 1.
	if err := n0.Publish(subj.Report(1), []byte("forged")); err != nil {
		t.Fatal(err)
	}
	_ = n0.Flush()
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(err.Error(), "Permissions Violation") {
			t.Errorf("node 0 publishing node 1's report: %v, want a permissions violation", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("node 0 published node 1's report with no refusal")
	}
	if m, err := got.NextMsg(300 * time.Millisecond); err == nil {
		t.Errorf("node 1 heard %s %q: a forged report went through", m.Subject, m.Data)
	}
	// Node 0 may not hear node 1's batches.
	if _, err := n0.SubscribeSync(subj.Batches(1)); err == nil {
		_ = n0.Flush()
		select {
		case err := <-errs:
			if !strings.Contains(err.Error(), "Permissions Violation") {
				t.Errorf("node 0 subscribing to node 1's batches: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("node 0 subscribed to node 1's batches with no refusal")
		}
	}
	// Another token: nothing reaches its server. (Its route may show in
	// its own Routez for a moment: the launcher's server sends its INFO
	// before it reads, and refuses, the stranger's credentials.)
	o, err := NodeServerOptions(set.Nodes[1], 1, route, "wrong-token-wrong")
	if err != nil {
		t.Fatal(err)
	}
	stranger := start(o)
	mo, err := set.Nodes[1].Options()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := nats.Connect("", append(mo, nats.InProcessServer(stranger))...)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	heard, err := sc.SubscribeSync(subj.Reports())
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := n0.Publish(subj.Report(0), []byte("r0")); err != nil {
			t.Fatal(err)
		}
		if _, err := got.NextMsg(5 * time.Second); err != nil {
			t.Fatalf("node 1 stopped hearing node 0: %v", err)
		}
		if m, err := heard.NextMsg(20 * time.Millisecond); err == nil {
			t.Fatalf("a server with another route token heard %s", m.Subject)
		}
	}
	if _, err := NodeServerOptions(set.Nodes[0], 0, route, ""); err == nil {
		t.Error("a node server without a route token")
	}
	if _, err := NodeServerOptions(set.Nodes[0], 0, "nats://u:p@127.0.0.1:1", token); err == nil {
		t.Error("a route URL with its own user")
	}
	plain, err := member.NewSet(run, []string{"c0"}, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NodeServerOptions(plain.Nodes[0], 0, route, token); err == nil {
		t.Error("a node server without the members' keys")
	}
}
