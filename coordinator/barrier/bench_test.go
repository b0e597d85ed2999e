package barrier_test

import (
	"fmt"
	"testing"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/sim"
)

// BenchmarkPeerReplicaWindow is what a node pays to read its peers'
// reports in a peer run (package doc, "Peers"): each operation is one
// window of a replica of n nodes, every node's report decoded from its
// wire bytes (wire.DecodeInto, as node.Run does) and stepped, then the
// grant taken. ns/report is the model's d_rep (scripts/dist-model.py
// --report-us). The reports are made beforehand by n Followers on a
// window sequence with nothing to simulate.
//
//	go test ./coordinator/barrier/ -run '^$' -bench PeerReplicaWindow
func BenchmarkPeerReplicaWindow(b *testing.B) {
	for _, n := range []int{16, 64, 256} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			const windows = 64
			cfg := barrier.Config{Nodes: n, Lookahead: sim.Microsecond, StopAt: sim.Never, Peer: true}
			msgs := peerReports(b, cfg, windows)
			var rep *barrier.Barrier
			var m wire.Message
			w := windows
			b.ResetTimer()
			for b.Loop() {
				if w == windows {
					b.StopTimer()
					var err error
					if rep, err = barrier.New(cfg); err != nil {
						b.Fatal(err)
					}
					w = 0
					b.StartTimer()
				}
				for _, data := range msgs[w] {
					if err := wire.DecodeInto(data, &m, nil); err != nil {
						b.Fatal(err)
					}
					if err := rep.Step(*m.Report); err != nil {
						b.Fatal(err)
					}
				}
				if _, ok := rep.Ready(); !ok {
					b.Fatalf("window %d: no grant after every report", w)
				}
				rep.Advance()
				w++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/report")
		})
	}
}

// peerReports runs n Followers and a replica through windows windows,
// every node answering each grant with a report whose next event is the
// window's end, and returns each window's reports as wire bytes.
func peerReports(b *testing.B, cfg barrier.Config, windows int) [][][]byte {
	b.Helper()
	n := cfg.Nodes
	rep, err := barrier.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	fs := make([]*barrier.Follower, n)
	for i := range fs {
		fs[i] = barrier.NewFollower(i, 0)
	}
	out := make([][][]byte, windows)
	next := barrier.Report{NextEvent: 0, MinSent: sim.Never}
	for w := range out {
		for i, f := range fs {
			r := next
			r.Sent = make([]uint32, n)
			r, err := f.Finish(r)
			if err != nil {
				b.Fatal(err)
			}
			out[w] = append(out[w], wire.AppendReport(nil, &r, 0, 0))
			if err := rep.Step(r); err != nil {
				b.Fatalf("window %d node %d: %v", w, i, err)
			}
		}
		g, ok := rep.Ready()
		if !ok {
			b.Fatalf("window %d: no grant", w)
		}
		rep.Advance()
		for _, f := range fs {
			if ok, why := f.Accept(g); !ok {
				b.Fatalf("window %d: %s", w, why)
			}
		}
		next = barrier.Report{NextEvent: g.End, MinSent: sim.Never}
	}
	return out
}
