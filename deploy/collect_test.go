package deploy

import (
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
	"github.com/lockstep-sim/lockstep/results"
)

// sendChunks sends result r of partition part to a collector of run as a
// node does (request/reply, chunks of size bytes), returning the reply
// type of each chunk.
func sendChunks(t *testing.T, nc *nats.Conn, run string, part int, r *node.PartResult, size int) []string {
	t.Helper()
	subj, err := wire.NewSubjects(run)
	if err != nil {
		t.Fatal(err)
	}
	data, err := node.EncodeResult(r)
	if err != nil {
		t.Fatal(err)
	}
	enc := wire.NewEncoder()
	total := (len(data) + size - 1) / size
	var replies []string
	for i := 0; i < total; i++ {
		ch := wire.ResultChunk{Partition: part, Index: i, Total: total, Data: data[i*size : min(len(data), (i+1)*size)]}
		req, err := enc.Control(wire.TypeResultChunk, ch)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := nc.Request(subj.Result(part), req, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		m, err := wire.Decode(msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		replies = append(replies, fmt.Sprint(m.Control.Type))
	}
	return replies
}

// TestCollector_AcknowledgesThenDecodes: a chunk is acknowledged once
// recorded, a complete result decoded after its last acknowledgement (its
// node exits meanwhile): Has says so at once, and Results waits for the
// decoding, so a result acknowledged is never missing from it. The first
// chunk calls first, once; a partition's chunk on another's subject is
// refused, and does not call it.
func TestCollector_AcknowledgesThenDecodes(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, MaxPayload: wire.MaxMessageBytes})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ServerReady(ns, 10*time.Second) {
		t.Fatal("server not ready")
	}
	defer ns.Shutdown()
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	ack := fmt.Sprint(wire.TypeAck)
	for k := 0; k < 10; k++ {
		run := fmt.Sprintf("collect-%d", k)
		firsts := 0
		col, err := NewCollector(nc, run, 2, nil, func() { firsts++ })
		if err != nil {
			t.Fatal(err)
		}
		for part := 0; part < 2; part++ {
			r := &node.PartResult{Part: results.Part{Partition: part, Digest: "d"}}
			for i := 0; i < 3000; i++ {
				r.Part.Ports = append(r.Part.Ports, results.PortRow{Node: i, Row: results.QueueRow{Switch: "s", Enqueued: uint64(i)}})
			}
			for _, rep := range sendChunks(t, nc, run, part, r, 16<<10) {
				if rep != ack {
					t.Fatalf("run %d partition %d: reply %s, want %s", k, part, rep, ack)
				}
			}
			if !col.Has(part) {
				t.Fatalf("run %d: partition %d acknowledged but not had", k, part)
			}
			got := col.Results()[part]
			if got == nil || len(got.Part.Ports) != 3000 || got.Part.Ports[2999].Row.Enqueued != 2999 {
				t.Fatalf("run %d: partition %d acknowledged but Results has %v", k, part, got)
			}
		}
		select {
		case <-col.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d: Done not closed with both results in", k)
		}
		if firsts != 1 {
			t.Errorf("run %d: first called %d times, want 1", k, firsts)
		}
		col.Close()
	}

	firsts := 0
	col, err := NewCollector(nc, "collect-x", 2, nil, func() { firsts++ })
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	subj, _ := wire.NewSubjects("collect-x")
	req, _ := wire.NewEncoder().Control(wire.TypeResultChunk, wire.ResultChunk{Partition: 1, Total: 1, Data: []byte{0x80}})
	msg, err := nc.Request(subj.Result(0), req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := wire.Decode(msg.Data); err != nil || m.Control.Type != wire.TypeError {
		t.Errorf("partition 1's chunk on partition 0's subject: reply %v (%v), want an error", m.Control, err)
	}
	if col.Rejected() != 1 || col.Has(0) || col.Has(1) || firsts != 0 {
		t.Errorf("rejected %d, has %v %v, first called %d times: want 1 rejected, nothing had, first not called", col.Rejected(), col.Has(0), col.Has(1), firsts)
	}
}

// TestResultsGC: with a small heap and no GOGC the results' decode and
// merge run at resultsGCPercent, and the restore puts back what was; with
// GOGC set, nothing changes.
func TestResultsGC(t *testing.T) {
	percent := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	before := percent()
	t.Setenv("GOGC", "")
	restore := resultsGC()
	if got := percent(); got != resultsGCPercent {
		t.Errorf("GC percent %d while the results are merged, want %d", got, resultsGCPercent)
	}
	restore()
	if got := percent(); got != before {
		t.Errorf("GC percent %d after, want %d as before", got, before)
	}
	t.Setenv("GOGC", "150")
	restore = resultsGC()
	if got := percent(); got != before {
		t.Errorf("GC percent %d with GOGC set, want it left at %d", got, before)
	}
	restore()
}

// TestResultsGC_Overlapping: two runs in one process whose tails overlap
// and end in either order leave the percent as it was.
func TestResultsGC_Overlapping(t *testing.T) {
	percent := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	t.Setenv("GOGC", "")
	before := percent()
	for _, firstEndsFirst := range []bool{true, false} {
		a := resultsGC()
		b := resultsGC()
		if firstEndsFirst {
			a()
			a() // a second call changes nothing
		} else {
			b()
		}
		if got := percent(); got != resultsGCPercent {
			t.Errorf("GC percent %d with one run's tail still on, want %d", got, resultsGCPercent)
		}
		if firstEndsFirst {
			b()
		} else {
			a()
		}
		if got := percent(); got != before {
			t.Errorf("GC percent %d after both, want %d as before", got, before)
		}
	}
}
