package coordinator_test

import (
	"fmt"
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

// benchNATSOpts starts a server with opts; connect logs in as creds[k] on
// its k-th call (when given).
func benchNATSOpts(b *testing.B, opts *server.Options, creds []*member.Creds) (*server.Server, func() *nats.Conn) {
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

// BenchmarkBarrierRound measures one lockstep window with nothing to
// simulate: every node reports, the coordinator's barrier grants, every
// node receives the grant. Nodes are bare Followers on their own NATS
// connections; the coordinator is a one-replica raft leader.
//
// auth=members is the embedded server as deploy runs it: each node and the
// coordinator log in with their own nkey and may publish only on their
// own subjects (deploy.ServerOptions); auth=none is an open server.
func BenchmarkBarrierRound(b *testing.B) {
	for _, auth := range []string{"none", "members"} {
		for _, n := range []int{1, 2, 4, 8} {
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
	// Each fake node answers every grant at once with a report whose next
	// event is the window's end, so the barrier grants the next window.
	for i := 0; i < n; i++ {
		nc := connect()
		f := barrier.NewFollower(i, 0)
		enc := wire.NewEncoder()
		report := func(r barrier.Report) {
			r.Sent = make([]uint32, n)
			r, err := f.Finish(r)
			if err != nil {
				b.Error(err)
				return
			}
			_ = nc.Publish(subj.Report(i), enc.Report(&r))
		}
		handle := func(m *nats.Msg) {
			msg, err := wire.Decode(m.Data)
			if err != nil {
				return
			}
			switch msg.Kind {
			case wire.KindResync:
				for _, r := range f.Resend(msg.Resync.Term) {
					_ = nc.Publish(subj.Report(i), enc.Report(&r))
				}
			case wire.KindGrant:
				g := *msg.Grant
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
				report(barrier.Report{NextEvent: g.End, MinSent: sim.Never})
			case wire.KindBatch, wire.KindReport, wire.KindControl: // not subscribed
			}
		}
		for _, s := range []string{subj.Grant(), subj.Resync()} {
			if _, err := nc.Subscribe(s, handle); err != nil {
				b.Fatal(err)
			}
		}
		_ = nc.Flush()
		report(barrier.Report{NextEvent: 0, MinSent: sim.Never})
	}
	// Wait for window 1 (leader elected, nodes resynchronised), then time
	// b.N windows.
	<-first
	b.ResetTimer()
	<-done
	b.StopTimer()
	close(stop)
}
