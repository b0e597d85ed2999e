package cc

import (
	"fmt"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// newSackHarness sends n segments of a flow of size segments.
func newSackHarness(t *testing.T, size uint64, n, dupThresh int) (*recHarness, *SackRecovery) {
	t.Helper()
	r := NewSackRecovery(recMSS, size*recMSS, dupThresh)
	h := newRecHarness(t, r)
	h.sendNew(n, 0)
	return h, r
}

func TestSack_RFC6675_IsLost_DupThreshSegments(t *testing.T) {
	// RFC 6675 §4 IsLost: at least DupThresh SACKed segments (or more than
	// (DupThresh-1)*SMSS SACKed bytes) above the sequence number.
	cases := []struct {
		name      string
		dupThresh int
		blocks    []sim.SackBlock
		lost      []uint64 // segments expected lost among 0..9
	}{
		{"one SACKed", 3, []sim.SackBlock{rblk(2, 3)}, nil},
		{"two SACKed", 3, []sim.SackBlock{rblk(2, 4)}, nil},
		{"three contiguous", 3, []sim.SackBlock{rblk(2, 5)}, []uint64{0, 1}},
		{"three discontiguous", 3, []sim.SackBlock{rblk(3, 4), rblk(5, 6), rblk(7, 8)}, []uint64{0, 1, 2}},
		{"DupThresh 1", 1, []sim.SackBlock{rblk(5, 6)}, []uint64{0, 1, 2, 3, 4}},
		{"DupThresh 4", 4, []sim.SackBlock{rblk(4, 7), rblk(8, 9)}, []uint64{0, 1, 2, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, r := newSackHarness(t, 10, 10, c.dupThresh)
			h.ack(0, c.blocks...)
			want := map[uint64]bool{}
			for _, i := range c.lost {
				want[i] = true
			}
			for i := uint64(0); i < 10; i++ {
				if got := r.IsLost(rseq(i)); got != want[i] {
					t.Errorf("IsLost(segment %d): want %v, got %v", i, want[i], got)
				}
			}
		})
	}
}

func TestSack_RFC6675_IsLost_MoreThanDupThreshMinus1SMSSBytes(t *testing.T) {
	// Flow of 5 full segments and a 100-byte sixth: SACKing segments 4 and
	// 5 puts 1100 bytes above segment 3, not more than 2*SMSS = 2000: not
	// lost. SACKing 3, 4 and 5 puts 2100 bytes above segment 2: lost.
	r := NewSackRecovery(recMSS, 5*recMSS+100, 3)
	h := newRecHarness(t, r)
	h.sendNew(6, 0)
	h.ack(0, sim.SackBlock{Start: rseq(4), End: 5*recMSS + 100})
	if r.IsLost(rseq(3)) {
		t.Errorf("IsLost(segment 3) with 1100 bytes SACKed above: want false, got true")
	}
	h.ack(0, sim.SackBlock{Start: rseq(3), End: 5*recMSS + 100})
	if !r.IsLost(rseq(2)) {
		t.Errorf("IsLost(segment 2) with 2100 bytes SACKed above: want true, got false")
	}
}

func TestSack_RFC6675_4_SetPipe(t *testing.T) {
	h, r := newSackHarness(t, 10, 10, 3)
	// Segments 3, 4, 5 SACKed: 0, 1, 2 are lost; 6..9 are in the network.
	v := h.ack(0, rblk(3, 6))
	if got, want := r.Pipe(), int64(4*recMSS); got != want {
		t.Fatalf("pipe with 0-2 lost and 3-5 SACKed: want %d, got %d", want, got)
	}
	if !v.EnterRecovery {
		t.Fatalf("IsLost(HighACK+1) on a duplicate ACK: want EnterRecovery, got %+v", v)
	}
	// A retransmission of a lost segment adds it back once (S1 <= HighRxt).
	sent := h.pump(1 << 40)
	if len(sent) < 1 || sent[0].Seq != rseq(0) {
		t.Fatalf("first segment sent in recovery: want segment 0, got %+v", sent)
	}
	// Segments 0, 1, 2 resent: 4 in flight + 3 retransmissions.
	if got, want := r.Pipe(), int64(7*recMSS); got != want {
		t.Errorf("pipe after resending 0-2: want %d, got %d", want, got)
	}
}

func TestSack_RFC6675_5_2_EnterOnIsLostHighACKPlus1(t *testing.T) {
	// Two duplicate ACKs SACKing one segment each: DupAcks = 2 < 3 and
	// IsLost(HighACK+1) is false; no recovery, limited transmit only.
	h, r := newSackHarness(t, 20, 10, 3)
	for _, b := range []sim.SackBlock{rblk(1, 2), rblk(1, 3)} {
		if v := h.ack(0, b); !v.Dup || v.EnterRecovery {
			t.Fatalf("duplicate ACK SACKing %v: want Dup and no recovery, got %+v", b, v)
		}
	}
	if r.InRecovery() {
		t.Fatal("after two duplicates: want no recovery")
	}
	// Limited transmit (§5 (3)): pipe = 8 segments, so two new ones fit a
	// window of 10.
	if sent := h.pump(10 * recMSS); len(sent) != 2 || sent[0].Seq != rseq(10) {
		t.Fatalf("limited transmit: want segments 10 and 11, got %+v", sent)
	}
	// One ACK SACKing three segments at once: DupAcks = 1 but
	// IsLost(HighACK+1) holds (§5 (2)).
	h2, r2 := newSackHarness(t, 20, 10, 3)
	v := h2.ack(0, rblk(1, 4))
	if !v.EnterRecovery || !r2.InRecovery() || r2.dupAcks != 1 {
		t.Fatalf("one ACK SACKing 3 segments: want EnterRecovery with DupAcks 1, got %+v DupAcks %d", v, r2.dupAcks)
	}
}

func TestSack_RFC6675_5_4_3_FastRetransmitIsForced(t *testing.T) {
	h, r := newSackHarness(t, 10, 10, 3)
	h.ack(0, rblk(1, 4))
	seg, ok := h.next()
	wantSeg(t, "fast retransmission", seg, ok, 0, true, true)
	h.r.OnSent(h.now, seg, h.rtt)
	// HighRxt and RescueRxt are the last octet of segment 0.
	if r.highRxt != rseq(1) || !r.rescueSet || r.rescueRxt != rseq(1) {
		t.Errorf("after (4.3): want HighRxt+1 = RescueRxt+1 = %d, got %d, %d (set %v)", rseq(1), r.highRxt, r.rescueRxt, r.rescueSet)
	}
	if r.recoveryPoint != rseq(10) {
		t.Errorf("RecoveryPoint+1: want HighData+1 = %d, got %d", rseq(10), r.recoveryPoint)
	}
}

func TestSack_RFC6675_NextSeg_Rule1(t *testing.T) {
	// Segments 4..7 SACKed: 0..3 are lost, 8 and 9 are not (nothing SACKed
	// above them), and they lie above the highest SACKed octet anyway.
	h, _ := newSackHarness(t, 20, 10, 3)
	h.ack(0, rblk(4, 8))
	for k, i := range []uint64{0, 1, 2, 3} {
		seg, ok := h.next()
		wantSeg(t, fmt.Sprintf("retransmission %d", k), seg, ok, i, true, i == 0)
		h.r.OnSent(h.now, seg, h.rtt)
	}
}

func TestSack_RFC6675_NextSeg_Rule2(t *testing.T) {
	// Once the lost segments are resent, NextSeg returns new data (HighData+1).
	h, _ := newSackHarness(t, 20, 10, 3)
	h.ack(0, rblk(4, 8))
	for k := 0; k < 4; k++ {
		seg, _ := h.next()
		h.r.OnSent(h.now, seg, h.rtt)
	}
	seg, ok := h.next()
	wantSeg(t, "rule (2)", seg, ok, 10, false, false)
}

func TestSack_RFC6675_NextSeg_Rule3(t *testing.T) {
	// A 6-segment flow, all sent; 1, 3 and 5 SACKed. Segment 0 is lost
	// (three SACKed above); 2 and 4 are not (two and one above). No new
	// data: rule (3) resends 2 then 4, which then count twice in the pipe.
	h, r := newSackHarness(t, 6, 6, 3)
	h.ack(0, rblk(1, 2), rblk(3, 4), rblk(5, 6))
	seg, ok := h.next()
	wantSeg(t, "fast retransmission", seg, ok, 0, true, true)
	h.r.OnSent(h.now, seg, h.rtt)
	for _, i := range []uint64{2, 4} {
		seg, ok := h.next()
		wantSeg(t, "rule (3)", seg, ok, i, true, false)
		h.r.OnSent(h.now, seg, h.rtt)
	}
	// 0: lost, resent: 1. 2 and 4: not lost, resent: 2 each.
	if got, want := r.Pipe(), int64(5*recMSS); got != want {
		t.Errorf("pipe: want %d, got %d", want, got)
	}
	// Rule (4) waits for HighACK > RescueRxt.
	if seg, ok := h.next(); ok {
		t.Errorf("after rules (1)-(3): want nothing (HighACK <= RescueRxt), got %+v", seg)
	}
}

func TestSack_RFC6675_NextSeg_Rule4(t *testing.T) {
	// A 10-segment flow; 0, 8 and 9 lost; 1..7 SACKed.
	h, r := newSackHarness(t, 10, 10, 3)
	h.ack(0, rblk(1, 8))
	seg, ok := h.next()
	wantSeg(t, "fast retransmission", seg, ok, 0, true, true)
	h.r.OnSent(h.now, seg, h.rtt)
	if seg, ok := h.next(); ok {
		t.Fatalf("HighACK <= RescueRxt: want no rescue yet, got %+v", seg)
	}
	// Segment 0 arrives: the cumulative ACK jumps to 8, below RecoveryPoint.
	if v := h.ack(rseq(8)); v.ExitRecovery {
		t.Fatalf("ACK of 8000 < RecoveryPoint: want to stay in recovery, got %+v", v)
	}
	// Rules (1)-(3) fail; HighACK > RescueRxt: resend the segment holding
	// the highest unSACKed octet, 9.
	seg, ok = h.next()
	wantSeg(t, "rule (4)", seg, ok, 9, true, false)
	h.r.OnSent(h.now, seg, h.rtt)
	if r.highRxt != rseq(1) {
		t.Errorf("rule (4) must not move HighRxt: want %d, got %d", rseq(1), r.highRxt)
	}
	if r.rescueRxt != rseq(10) {
		t.Errorf("RescueRxt+1: want RecoveryPoint+1 = %d, got %d", rseq(10), r.rescueRxt)
	}
	if seg, ok := h.next(); ok {
		t.Errorf("one rescue per recovery: want nothing more, got %+v", seg)
	}
	// 8 and 9 are not lost; the rescue copy is not counted (HighRxt < 9).
	if got, want := r.Pipe(), int64(2*recMSS); got != want {
		t.Errorf("pipe: want %d, got %d", want, got)
	}
}

func TestSack_RFC6675_5_A_ExitAtRecoveryPoint(t *testing.T) {
	h, r := newSackHarness(t, 10, 10, 3)
	h.ack(0, rblk(1, 8))
	h.pump(1 << 40)
	if v := h.ack(rseq(9)); v.ExitRecovery || !r.InRecovery() {
		t.Fatalf("ACK below RecoveryPoint: want recovery to go on, got %+v", v)
	}
	if v := h.ack(rseq(10)); !v.ExitRecovery || r.InRecovery() {
		t.Fatalf("ACK of RecoveryPoint: want ExitRecovery, got %+v", v)
	}
}

// TestSack_RFC6675_TwoLossesRetransmittedInOneRTT: a window of 10 with
// segments 2 and 5 lost. Both are resent before the first retransmission
// can be acknowledged (Reno needs a timeout here, NewReno a round trip per
// loss; see newreno_recovery_test.go).
func TestSack_RFC6675_TwoLossesRetransmittedInOneRTT(t *testing.T) {
	h, r := newSackHarness(t, 10, 10, 3)
	h.ack(rseq(1))
	h.ack(rseq(2))
	h.ack(rseq(2), rblk(3, 4))
	h.ack(rseq(2), rblk(3, 5))
	flight := r.FlightSize()
	v := h.ack(rseq(2), rblk(6, 7), rblk(3, 5))
	if !v.EnterRecovery {
		t.Fatalf("third duplicate: want EnterRecovery, got %+v", v)
	}
	// RFC 6675 (4.2): cwnd = FlightSize/2 = 4 segments.
	cwnd := flight / 2
	sent := h.pump(cwnd)
	if len(sent) != 1 || sent[0].Seq != rseq(2) || !sent[0].Force {
		t.Fatalf("on entry: want the forced retransmission of segment 2 only, got %+v", sent)
	}
	// Segment 7 arrives: 5 has two SACKed segments above, not yet lost.
	if sent := (func() []Segment { h.ack(rseq(2), rblk(6, 8), rblk(3, 5)); return h.pump(cwnd) })(); len(sent) != 0 {
		t.Fatalf("after segment 7: want nothing sent (pipe 4 = cwnd), got %+v", sent)
	}
	// Segment 8 arrives: 5 is lost; pipe = 2 (2 resent, 9), room for it.
	h.ack(rseq(2), rblk(6, 9), rblk(3, 5))
	sent = h.pump(cwnd)
	if len(sent) != 1 || sent[0].Seq != rseq(5) || !sent[0].Retx {
		t.Fatalf("after segment 8: want the retransmission of segment 5, got %+v", sent)
	}
	// Both retransmissions left while SndUna was still 2000.
	if r.SndUna() != rseq(2) {
		t.Fatalf("SndUna: want %d, got %d", rseq(2), r.SndUna())
	}
	h.ack(rseq(2), rblk(6, 10), rblk(3, 5))
	if v := h.ack(rseq(5), rblk(6, 10)); v.ExitRecovery {
		t.Fatalf("partial ACK: want recovery to go on, got %+v", v)
	}
	if v := h.ack(rseq(10)); !v.ExitRecovery {
		t.Fatalf("ACK of everything: want ExitRecovery, got %+v", v)
	}
}

func TestSack_RFC6675_5_1_RTOExpungesAndFencesNewRecovery(t *testing.T) {
	h, r := newSackHarness(t, 20, 10, 3)
	h.ack(0, rblk(3, 4))
	h.ack(0, rblk(3, 5))
	r.OnRTO(h.now, h.rtt)
	if r.Scoreboard().IsSacked(rseq(3)) {
		t.Error("after RTO: want SACK information expunged (RFC 2018 §8)")
	}
	if r.SndNxt() != 0 || r.Pipe() != 0 || r.InRecovery() {
		t.Fatalf("after RTO: want SndNxt 0, pipe 0, no recovery; got %d, %d, %v", r.SndNxt(), r.Pipe(), r.InRecovery())
	}
	sent := h.pump(recMSS)
	if len(sent) != 1 || sent[0].Seq != 0 || !sent[0].Retx {
		t.Fatalf("go-back-N with cwnd 1 segment: want segment 0 resent, got %+v", sent)
	}
	// Duplicate ACKs re-reporting SACKed data (even IsLost(HighACK+1))
	// start no recovery before HighACK >= RecoveryPoint (§5.1).
	for k := 3; k <= 8; k++ {
		if v := h.ack(0, rblk(3, uint64(k))); v.EnterRecovery {
			t.Fatalf("duplicate after RTO: want no new recovery, got %+v", v)
		}
	}
	// Go-back-N skips what was SACKed since the RTO: 1, 2, then 8.
	h.ack(rseq(1), rblk(3, 8))
	sent = h.pump(1 << 40)
	var got []uint64
	for _, s := range sent {
		got = append(got, s.Seq/recMSS)
	}
	if fmt.Sprint(got) != "[1 2 8 9 10 11 12 13 14 15 16 17 18 19]" {
		t.Fatalf("go-back-N after SACKs: want segments 1, 2, 8, 9 then new data, got %v", got)
	}
	// Past RecoveryPoint, a new loss starts a recovery again.
	if v := h.ack(rseq(10), rblk(11, 14)); !v.EnterRecovery {
		t.Fatalf("after HighACK >= RecoveryPoint: want a new recovery, got %+v", v)
	}
}

func TestSack_RFC2883_DSACKIgnored(t *testing.T) {
	h, r := newSackHarness(t, 10, 10, 3)
	h.ack(rseq(2))
	// A D-SACK for segment 0 (below the cumulative ACK) first, then a
	// block inside an already SACKed range: neither counts.
	v := h.ack(rseq(2), rblk(0, 1), rblk(4, 5))
	if v.Acked != recMSS || !v.Dup {
		t.Fatalf("D-SACK then a new block: want 1000 bytes newly SACKed and Dup, got %+v", v)
	}
	v = h.ack(rseq(2), rblk(4, 5), rblk(4, 6))
	if v.Acked != recMSS {
		t.Fatalf("block covered by the next: want only segment 5 new, got %+v", v)
	}
	if v = h.ack(rseq(2), rblk(4, 5)); v.Dup || v.Acked != 0 {
		t.Fatalf("repeated SACK: want no duplicate, got %+v", v)
	}
	if r.Scoreboard().SackedSegments() != 2 {
		t.Fatalf("SACKed segments: want 2, got %d", r.Scoreboard().SackedSegments())
	}
}

// BenchmarkSackOnAck measures one ACK with SACK blocks and the host's
// follow-up (Pipe, Next, OnSent) in a window that keeps a hole:
// go test ./cc/ -run '^$' -bench SackOnAck -benchmem
func BenchmarkSackOnAck(b *testing.B) {
	for _, w := range []uint64{64, 1024} {
		b.Run(fmt.Sprintf("window=%d", w), func(b *testing.B) {
			r := NewSackRecovery(recMSS, 1<<50, 3)
			var now sim.Time
			send := func() {
				seg, ok := r.Next()
				if ok {
					r.OnSent(now, seg, RTTInfo{})
				}
			}
			for k := uint64(0); k < w; k++ {
				r.OnSent(now, Segment{Seq: r.Nxt, Len: recMSS}, RTTInfo{})
			}
			blocks := make([]sim.SackBlock, 2)
			ai := AckInfo{DupCandidate: true}
			k := uint64(0)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				now += sim.Microsecond
				// Segment k is the hole; above it, half the window is
				// SACKed, in two blocks.
				ai.Now = now
				ai.Ack = rseq(k)
				blocks[0] = rblk(k+1+w/4, k+w/2)
				blocks[1] = rblk(k+1, k+1+w/4)
				ai.Sack = blocks
				r.OnAck(&ai)
				_ = r.Pipe()
				send()
				if r.Nxt < rseq(k+w) {
					r.OnSent(now, Segment{Seq: r.Nxt, Len: recMSS}, RTTInfo{})
				}
				k++
			}
		})
	}
}
