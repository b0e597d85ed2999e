package coordinator_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/coordinator"
	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/deploy"
	"github.com/lockstep-sim/lockstep/internal/member"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/sim"
)

// benchNATS starts a NATS server on loopback TCP, as `lockstep run
// --procs` uses it.
func benchNATS(b *testing.B) (*server.Server, func() *nats.Conn) {
	return benchNATSOpts(b, &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true}, nil)
}

// benchNATSOpts starts a server with opts for a benchmark or a test;
// connect logs in as creds[k] on its k-th call (when given).
func benchNATSOpts(b testing.TB, opts *server.Options, creds []*member.Creds) (*server.Server, func() *nats.Conn) {
	b.Helper()
	ns, err := server.NewServer(opts)
	if err != nil {
		b.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		b.Fatal("NATS did not start")
	}
	b.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	k := 0
	return ns, func() *nats.Conn {
		var o []nats.Option
		if k < len(creds) {
			o, _ = creds[k].Options()
			k++
		}
		nc, err := nats.Connect(ns.ClientURL(), o...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		return nc
	}
}

// BenchmarkNATSRequestReply is the floor a barrier round is compared with:
// one request and its reply between two connections through the server.
//
//	go test ./coordinator/ -run '^$' -bench 'NATSRequestReply|BarrierRound' -benchtime 2000x
func BenchmarkNATSRequestReply(b *testing.B) {
	_, connect := benchNATS(b)
	srv, cli := connect(), connect()
	if _, err := srv.Subscribe("rr", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		b.Fatal(err)
	}
	_ = srv.Flush()
	payload := make([]byte, 40) // about a report's size
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cli.Request("rr", payload, 5*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNATSRequestReplyAcrossRoute is BenchmarkNATSRequestReply with
// the two connections on two servers joined by a route (a NATS server per
// machine, docs/deploy.md): request and reply each pass a second server.
// Its difference from BenchmarkNATSRequestReply, halved, is what the
// model's --hop-us stands for (scripts/dist-model.py).
func BenchmarkNATSRequestReplyAcrossRoute(b *testing.B) {
	opts := func(name string, routes ...string) *server.Options {
		o := &server.Options{ServerName: name, Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "bench", Host: "127.0.0.1", Port: -1}}
		o.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		return o
	}
	a, connectA := benchNATSOpts(b, opts("a"), nil)
	_, connectB := benchNATSOpts(b, opts("b", fmt.Sprintf("nats://%s", a.ClusterAddr())), nil)
	srv, cli := connectB(), connectA()
	if _, err := srv.Subscribe("rr", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		b.Fatal(err)
	}
	_ = srv.Flush()
	payload := make([]byte, 40) // about a report's size
	// The route and the subscription's interest reach a: poll until a
	// request is answered.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := cli.Request("rr", payload, 100*time.Millisecond); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("no answer across the route in 10 s")
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cli.Request("rr", payload, 5*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBarrierRound measures one lockstep window with nothing to
// simulate: every node publishes its report to every node, and each
// node's replica of the barrier grants the next window (a peer run). Nodes
// are bare Followers and replicas on their own NATS connections; the
// coordinator, a one-replica raft leader, hears no reports (it follows a
// run from the nodes' statuses, which these bare nodes do not send).
//
// auth=members is the embedded server as deploy runs it: each node and the
// coordinator log in with their own nkey and may publish only on their
// own subjects (deploy.ServerOptions); auth=none is an open server.
func BenchmarkBarrierRound(b *testing.B) {
	for _, auth := range []string{"none", "members"} {
		for _, n := range []int{2, 4, 8} {
			b.Run(fmt.Sprintf("auth=%s/nodes=%d", auth, n), func(b *testing.B) { benchRound(b, n, auth == "members") })
		}
	}
}

func benchRound(b *testing.B, n int, members bool) {
	run := fmt.Sprintf("bench%d", n)
	var connect func() *nats.Conn
	if members {
		set, err := member.NewSet(run, []string{"c0"}, n, true)
		if err != nil {
			b.Fatal(err)
		}
		opts, err := deploy.ServerOptions(run, set)
		if err != nil {
			b.Fatal(err)
		}
		_, connect = benchNATSOpts(b, opts, append([]*member.Creds{set.Coordinators["c0"]}, set.Nodes...))
	} else {
		_, connect = benchNATS(b)
	}
	subj, _ := wire.NewSubjects(run)
	part := make([]int, n)
	for i := range part {
		part[i] = i
	}
	su := &wire.Setup{Digest: "bench", P: n, Part: part, Lookahead: int64(sim.Microsecond), StopAt: int64(sim.Never)}
	c, err := coordinator.Start(coordinator.Config{Conn: connect(), Run: run, Setup: su, MarkEvery: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()

	var windows atomic.Uint64
	first, done := make(chan struct{}), make(chan struct{})
	stop := make(chan struct{})
	// Each fake node runs the barrier the peer way (barrier package doc,
	// "Peers"): a replica fed with every node's report; it answers every
	// grant of its replica at once with a report whose next event is the
	// window's end, so the next window follows. A round is one report hop.
	for i := 0; i < n; i++ {
		nc := connect()
		f := barrier.NewFollower(i, 0)
		rep, err := barrier.New(barrier.Config{Nodes: n, Lookahead: sim.Microsecond, StopAt: sim.Never, Peer: true})
		if err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		var w0 barrier.Report
		heard0 := make([]bool, n)
		// report finishes the node's window and publishes its report.
		report := func(r barrier.Report) barrier.Report {
			r.Sent = make([]uint32, n)
			r, err := f.Finish(r)
			if err != nil {
				b.Error(err)
				return r
			}
			if r.Window == 0 {
				w0 = r
			}
			_ = nc.Publish(subj.Report(i), wire.AppendReport(nil, &r, 0, 0))
			return r
		}
		// step feeds r to the replica and runs every window it grants.
		step := func(r barrier.Report) {
			for rep.Step(r) == nil {
				g, ok := rep.Ready()
				if !ok {
					return
				}
				rep.Advance()
				if ok, _ := f.Accept(g); !ok {
					return
				}
				if i == 0 {
					switch windows.Add(1) {
					case 1:
						close(first)
					case uint64(b.N) + 1:
						close(done)
					}
				}
				select {
				case <-stop:
					return
				default:
				}
				r = report(barrier.Report{NextEvent: g.End, MinSent: sim.Never})
			}
		}
		handle := func(m *nats.Msg) {
			msg, err := wire.Decode(m.Data)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch msg.Kind {
			case wire.KindResync:
				for _, r := range f.Last() {
					_ = nc.Publish(subj.Report(i), wire.AppendReport(nil, &r, 0, 0))
				}
			case wire.KindReport:
				r := *msg.Report
				if r.Node == i {
					return
				}
				if r.Window == 0 && !heard0[r.Node] {
					heard0[r.Node] = true
					_ = nc.Publish(subj.Report(i), wire.AppendReport(nil, &w0, 0, 0))
				}
				step(r)
			case wire.KindBatch, wire.KindGrant, wire.KindControl: // not subscribed
			}
		}
		for _, s := range []string{subj.Reports(), subj.Resync()} {
			if _, err := nc.Subscribe(s, handle); err != nil {
				b.Fatal(err)
			}
		}
		_ = nc.Flush()
		mu.Lock()
		step(report(barrier.Report{NextEvent: 0, MinSent: sim.Never}))
		mu.Unlock()
	}
	// Wait for window 1 (leader elected, nodes resynchronised), then time
	// b.N windows.
	wait := func(ch chan struct{}, what string) {
		t := time.NewTimer(time.Minute)
		defer t.Stop()
		select {
		case <-ch:
		case <-t.C:
			close(stop)
			b.Fatalf("%d nodes: %s within a minute (window %d)", n, what, windows.Load())
		}
	}
	wait(first, "no first window")
	b.ResetTimer()
	wait(done, fmt.Sprintf("not %d windows", b.N))
	b.StopTimer()
	close(stop)
}
