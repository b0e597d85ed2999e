package node

import (
	"errors"
	"testing"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/sim"
)

// A 1x1 dumbbell: h0 - left - right - h1, 1us host links and a 2us
// bottleneck, one 1000-byte flow from h0 to h1 at 5us. Cut at the
// bottleneck: partition 0 = {h0, left}, 1 = {h1, right}; L = 2us.
const oneFlow = `topology:
  type: dumbbell
  dumbbell:
    senders: 1
    receivers: 1
    host: {rate: 100Gbps, delay: 1us}
    bottleneck: {rate: 40Gbps, delay: 2us}
workload:
  - type: flows
    flows: [{src: 0, dst: 1, size: 1000, start: 5us}]
`

func twoCores(t *testing.T) (*Core, *Core, *partition.Placement) {
	t.Helper()
	b := loadText(t, "one.yaml", oneFlow)
	pl, err := partition.Make(b.Topo, nil, []int{0, 1, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Lookahead != 2*sim.Microsecond {
		t.Fatalf("lookahead %v, want 2us", pl.Lookahead)
	}
	c0, err := NewCore(b, pl, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := NewCore(b, pl, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	return c0, c1, pl
}

// The setup report carries the first event: the flow's start at 5us on
// the sender's side, nothing on the receiver's (docs/design.md §3: "After a
// window a node reports ... its next event time").
func TestCore_Design3_SetupReportsFirstEvent(t *testing.T) {
	c0, c1, _ := twoCores(t)
	r0, err := c0.Setup()
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := c1.Setup()
	if r0.Report.NextEvent != 5*sim.Microsecond || r1.Report.NextEvent != sim.Never {
		t.Errorf("setup next events %v and %v, want 5us and never", r0.Report.NextEvent, r1.Report.NextEvent)
	}
	if r0.Report.Window != 0 || r0.Report.Term != 1 {
		t.Errorf("setup report window %d term %d, want 0 and 1", r0.Report.Window, r0.Report.Term)
	}
}

// A packet sent across the cut in a window is batched for the far
// partition and counted in Sent; its arrival is >= the window's end
// (MinSent), and the far node cannot run the next window until the batch
// is delivered (Expect).
func TestCore_Design3_BatchesCrossTheCutAndGateTheNextWindow(t *testing.T) {
	c0, c1, pl := twoCores(t)
	bar, err := barrier.New(barrier.Config{Nodes: 2, Lookahead: pl.Lookahead, StopAt: sim.Second, Term: 1})
	if err != nil {
		t.Fatal(err)
	}
	step := func(o Output) {
		t.Helper()
		if err := bar.Step(o.Report); err != nil {
			t.Fatal(err)
		}
	}
	o0, _ := c0.Setup()
	o1, _ := c1.Setup()
	step(o0)
	step(o1)
	var batch *wire.Batch
	for w := 1; batch == nil && w < 10; w++ {
		g, ok := bar.Ready()
		if !ok {
			t.Fatalf("no grant for window %d", w)
		}
		bar.Advance()
		c0.Accept(g)
		c1.Accept(g)
		o0, err := c0.Run()
		if err != nil {
			t.Fatal(err)
		}
		o1, err := c1.Run()
		if err != nil {
			t.Fatal(err)
		}
		if len(o0.Batches) > 0 {
			batch = &o0.Batches[0]
			if o0.Report.Sent[1] != 1 || o0.Report.MinSent < g.End || o0.Report.MinSent != batch.Packets[0].At {
				t.Errorf("window %d: sent %v, min sent %v (end %v, packet at %v)", w, o0.Report.Sent, o0.Report.MinSent,
					g.End, batch.Packets[0].At)
			}
			// Data packet: host link 85.12ns + 1us, then the switch
			// serialises 212.8ns at 40G: it reaches right at 5us +
			// 1085.12ns + 212.8ns + 2us = 8297.92ns.
			if got := batch.Packets[0].At; got != 8297920*sim.Picosecond {
				t.Errorf("packet arrives at %v, want 8297.92ns", got)
			}
		}
		step(o0)
		step(o1)
	}
	if batch == nil {
		t.Fatal("no batch crossed the cut")
	}
	g, _ := bar.Ready()
	bar.Advance()
	if g.Expect[1] != 1 {
		t.Fatalf("grant expects %v messages, want 1 for node 1", g.Expect)
	}
	c0.Accept(g)
	c1.Accept(g)
	if c1.Runnable() {
		t.Errorf("node 1 runnable before its batch arrived")
	}
	if err := c1.Deliver(batch); err != nil {
		t.Fatal(err)
	}
	if !c1.Runnable() {
		t.Errorf("node 1 not runnable after its batch arrived")
	}
}

func TestCore_DeliverRejectsForeignPackets(t *testing.T) {
	c0, c1, _ := twoCores(t)
	_, _ = c0.Setup()
	_, _ = c1.Setup()
	// Link 2 is the bottleneck; direction left->right crosses into 1.
	good := sim.RemotePacket{Link: fabric.DirID(2, true), At: 10 * sim.Microsecond}
	cases := []struct {
		name string
		to   *Core
		b    wire.Batch
	}{
		{"wrong destination", c1, wire.Batch{From: 0, To: 0, Window: 0, Packets: []sim.RemotePacket{good}}},
		{"from itself", c1, wire.Batch{From: 1, To: 1, Window: 0}},
		{"link out of range", c1, wire.Batch{From: 0, To: 1, Packets: []sim.RemotePacket{{Link: 99}}}},
		{"link that does not cross", c1, wire.Batch{From: 0, To: 1, Packets: []sim.RemotePacket{{Link: fabric.DirID(0, true)}}}},
		{"link in the other direction", c0, wire.Batch{From: 1, To: 0, Packets: []sim.RemotePacket{good}}},
	}
	for _, c := range cases {
		if err := c.to.Deliver(&c.b); !errors.Is(err, ErrBadBatch) {
			t.Errorf("%s: err = %v, want ErrBadBatch", c.name, err)
		}
	}
	if err := c1.Deliver(&wire.Batch{From: 0, To: 1, Packets: []sim.RemotePacket{good}}); err != nil {
		t.Errorf("good batch: %v", err)
	}
}

// A node process's core (NewPeerCore) yields every YieldEvents events
// (fabric.YieldEvery: its NATS server's goroutines share its one thread);
// a core in memory (NewCore, RunLocal's) does not.
func TestNewPeerCore_Yields(t *testing.T) {
	b := loadText(t, "one.yaml", oneFlow)
	pl, err := partition.Make(b.Topo, nil, []int{0, 1, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewPeerCore(b, pl, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.F.Yields(); got != YieldEvents {
		t.Errorf("a peer core yields every %d events, want %d", got, YieldEvents)
	}
	m, err := NewCore(b, pl, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.F.Yields(); got != 0 {
		t.Errorf("an in-memory core yields every %d events, want never", got)
	}
}
