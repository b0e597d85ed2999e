package stracksim

import (
	"slices"
	"testing"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
)

const us = sim.Microsecond

// tickAt runs one send tick of host 0 at now and returns the sequence
// numbers it sent, in order, and how many were retransmissions.
func tickAt(e *sim.Engine, w *World, now sim.Time) (seqs []int32, retx int) {
	w.out = w.out[:0]
	w.sendTick(e, &w.hosts[0], now)
	for _, p := range w.out {
		pkt := e.Pool.Get(p)
		seqs = append(seqs, int32(pkt.Seq))
		if pkt.Flags&sim.FlagRetx != 0 {
			retx++
		}
		e.Pool.Free(p)
	}
	w.out = w.out[:0]
	return seqs, retx
}

// ackAt delivers an ACK (or a NACK) for flow 0 to host 0.
func ackAt(e *sim.Engine, w *World, now sim.Time, ack int32, ce bool, nackSeq int32, bits uint64) {
	var pkt sim.Packet
	pkt.Flow, pkt.Ack, pkt.Flags = 0, uint64(ack), sim.FlagAck
	if ce {
		pkt.Flags |= sim.FlagCE
	}
	if nackSeq >= 0 {
		pkt.Flags |= sim.FlagNack
		pkt.Seq, pkt.Bitmap = uint64(nackSeq), bits
	}
	w.onControl(&w.hosts[0], &pkt, now)
}

// TestSimpleTcp_TimeoutRequeuesEveryOldPacket: at a send tick, every
// packet sent more than 100 us ago and not cumulatively acknowledged is
// queued again (the receiver may hold some: the sender cannot know);
// cwnd returns to the initial window and ssthresh to half the old cwnd;
// the tick resends at most the OLD cwnd of them, outside the in-flight
// count, and the rest go on later ticks.
func TestSimpleTcp_TimeoutRequeuesEveryOldPacket(t *testing.T) {
	e, w := newTestWorld(t, SimpleTCP, []hostsim.FlowSpec{flow(0, 0, 3, 40*1024, us)})
	w.startFlow(e, 0, us)
	if s, _ := tickAt(e, w, us); len(s) != 16 {
		t.Fatalf("first tick sent %d, want the initial 16", len(s))
	}
	ackAt(e, w, 5*us, 4, false, -1, 0) // 0..3 acknowledged: slow start, cwnd 20
	f := w.tx[0]
	if f.cwnd != 20 || f.inflight != 12 || f.base != 4 {
		t.Fatalf("after ACK 4: cwnd %d, in flight %d, base %d; want 20, 12, 4", f.cwnd, f.inflight, f.base)
	}
	f.cwnd = 5 // as if ECN had cut it
	if s, _ := tickAt(e, w, 101*us); len(s) != 0 {
		t.Fatalf("at exactly 100 us nothing is old enough (now − t > rto), sent %v", s)
	}
	seqs, retx := tickAt(e, w, 101*us+sim.Nanosecond)
	if len(seqs) != 5 || retx != 5 || f.cwnd != 16 || f.ssth != 2 || len(f.retx) != 7 || f.inflight != 12 {
		t.Fatalf("timeout tick: sent %v (%d retx), cwnd %d, ssthresh %d, queued %d, in flight %d; want 5 resent (the old cwnd), cwnd 16, ssthresh 2, 7 queued, 12 in flight",
			seqs, retx, f.cwnd, f.ssth, len(f.retx), f.inflight)
	}
	seqs2, retx2 := tickAt(e, w, 101*us+201*sim.Nanosecond)
	if retx2 != 7 || len(seqs2) != 11 || f.inflight != 16 {
		t.Fatalf("next tick: sent %v (%d retx), in flight %d; want the 7 queued then 4 new (in flight 12 -> 16)", seqs2, retx2, f.inflight)
	}
	all := append(slices.Clone(seqs[:5]), seqs2[:7]...)
	slices.Sort(all)
	if !slices.Equal(all, []int32{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}) {
		t.Fatalf("resent %v, want every unacknowledged packet 4..15 once", all)
	}
	if w.tr.Records[0].Timeouts != 1 || w.tr.Records[0].Retransmits != 12 {
		t.Fatalf("records %+v", w.tr.Records[0])
	}
}

// TestSimpleTcp_AckRules: three duplicate ACKs resend the first
// unacknowledged packet and set cwnd = ssthresh + 3; every further
// duplicate inflates by one and nothing deflates; EVERY advancing ACK
// that echoes CE halves (no once-per-window guard); a non-advancing CE
// echo does not.
func TestSimpleTcp_AckRules(t *testing.T) {
	e, w := newTestWorld(t, SimpleTCP, []hostsim.FlowSpec{flow(0, 0, 3, 100*1024, us)})
	w.startFlow(e, 0, us)
	tickAt(e, w, us)
	f := w.tx[0]
	for i := 0; i < 2; i++ {
		ackAt(e, w, 5*us, 0, false, -1, 0)
	}
	if len(f.retx) != 0 || f.cwnd != 16 {
		t.Fatal("two duplicates must not retransmit")
	}
	ackAt(e, w, 5*us, 0, false, -1, 0)
	if !slices.Equal(f.retx, []int32{0}) || f.ssth != 8 || f.cwnd != 11 {
		t.Fatalf("3rd duplicate: queue %v, ssthresh %d, cwnd %d; want [0], 8, 11", f.retx, f.ssth, f.cwnd)
	}
	ackAt(e, w, 5*us, 0, true, -1, 0) // a 4th duplicate, marked
	if f.cwnd != 12 {
		t.Fatalf("4th duplicate: cwnd %d, want 12 (inflation; a duplicate's CE echo changes nothing)", f.cwnd)
	}
	ackAt(e, w, 6*us, 5, true, -1, 0)
	if f.cwnd != 6 || f.ssth != 6 {
		t.Fatalf("advancing CE echo: cwnd %d, ssthresh %d; want 6, 6 (no deflation first, just halving)", f.cwnd, f.ssth)
	}
	ackAt(e, w, 6*us, 6, true, -1, 0)
	ackAt(e, w, 6*us, 7, true, -1, 0)
	if f.cwnd != 1 {
		t.Fatalf("two more marked advancing ACKs in the same window: cwnd %d, want 6 -> 3 -> 1", f.cwnd)
	}
}

// TestSTrack_NACKAndHalving: the receiver ACKs every packet and NACKs one
// that sets a new bit of its 64-bit bitmap; packets 64 or more beyond
// next_expected are dropped unrecorded; the sender queues every hole
// below the NACK's packet that is not already queued, again after it was
// resent (no memory of a retransmission in flight); every CE-echoing ACK
// halves, advancing or not, and an unmarked advancing ACK adds one.
func TestSTrack_NACKAndHalving(t *testing.T) {
	e, w := newTestWorld(t, STrack, []hostsim.FlowSpec{flow(0, 0, 3, 200*1024, us)})
	w.startFlow(e, 0, us)
	r := &w.rx[0]
	recv := func(seq int32) (acks, nacks int) {
		var d sim.Packet
		d.Flow, d.Seq, d.Flags = 0, uint64(seq), sim.FlagData
		w.out = w.out[:0]
		w.onData(e, &w.hosts[3], &d, 2*us)
		for _, p := range w.out {
			if e.Pool.Get(p).Flags&sim.FlagNack != 0 {
				nacks++
			} else {
				acks++
			}
			e.Pool.Free(p)
		}
		w.out = w.out[:0]
		return acks, nacks
	}
	if a, n := recv(0); a != 1 || n != 0 || r.next != 1 {
		t.Fatal("in order: one ACK")
	}
	if a, n := recv(3); a != 1 || n != 1 || r.bits != 1<<2 {
		t.Fatalf("3 out of order: %d ACK, %d NACK, bits %b", a, n, r.bits)
	}
	if _, n := recv(3); n != 0 {
		t.Fatal("a bit already set: no NACK")
	}
	if a, n := recv(65); a != 1 || n != 0 || r.bits != 1<<2 {
		t.Fatalf("65 is 64 beyond next_expected 1: discarded with an ACK only (%d, %d, bits %b)", a, n, r.bits)
	}
	if _, n := recv(64); n != 1 {
		t.Fatal("64 is 63 beyond: recorded, NACKed")
	}
	if recv(1); r.next != 2 || r.bits != 1<<1|1<<62 {
		t.Fatalf("1 fills: next %d, bits %b", r.next, r.bits)
	}

	tickAt(e, w, us)
	f := w.tx[0]
	ackAt(e, w, 3*us, 1, false, 4, 0b1100) // NACK: base 1, 3 and 4 received
	if !slices.Equal(f.retx, []int32{1, 2}) || f.cwnd != 16 {
		t.Fatalf("NACK: queue %v, cwnd %d; want the holes [1 2] below 4, cwnd unchanged", f.retx, f.cwnd)
	}
	tickAt(e, w, 3*us) // resends 1 and 2
	if len(f.retx) != 0 {
		t.Fatal("the tick resends the queue")
	}
	ackAt(e, w, 3*us+sim.Nanosecond, 1, false, 5, 0b11100)
	if !slices.Equal(f.retx, []int32{1, 2}) {
		t.Fatalf("a later NACK queues 1 and 2 again though they are in flight: %v", f.retx)
	}
	ackAt(e, w, 4*us, 1, false, -1, 0)
	if f.cwnd != 17 || f.base != 1 {
		t.Fatalf("an unmarked advancing ACK adds one: cwnd %d, want 17", f.cwnd)
	}
	ackAt(e, w, 4*us, 1, true, -1, 0)
	if f.cwnd != 8 {
		t.Fatalf("a marked duplicate ACK halves: cwnd %d, want 8", f.cwnd)
	}
	ackAt(e, w, 4*us, 2, true, -1, 0)
	if f.cwnd != 4 || f.base != 2 {
		t.Fatalf("a marked advancing ACK halves without the +1: cwnd %d, want 4", f.cwnd)
	}
}

// TestSTrack_TimeoutKeepsTheWindow: STrack resends every packet older
// than the RTO and leaves cwnd alone.
func TestSTrack_TimeoutKeepsTheWindow(t *testing.T) {
	e, w := newTestWorld(t, STrack, []hostsim.FlowSpec{flow(0, 0, 3, 40*1024, us)})
	w.startFlow(e, 0, us)
	tickAt(e, w, us)
	seqs, retx := tickAt(e, w, 102*us)
	if f := w.tx[0]; retx != 16 || len(seqs) != 16 || f.cwnd != 16 {
		t.Fatalf("timeout: %d resent of %d sent, cwnd %d; want all 16 resent, cwnd 16", retx, len(seqs), f.cwnd)
	}
}
