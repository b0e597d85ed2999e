package cc

import "testing"

// newNewRenoHarness sends n segments of a flow of size segments.
func newNewRenoHarness(t *testing.T, size uint64, n int) (*recHarness, *NewRenoLossRecovery) {
	t.Helper()
	r := NewNewRenoRecovery(recMSS, size*recMSS, 3)
	h := newRecHarness(t, r)
	h.sendNew(n, 0)
	return h, r
}

func TestNewReno_RFC3042_LimitedTransmit(t *testing.T) {
	h, r := newNewRenoHarness(t, 20, 10)
	for k := int64(1); k <= 2; k++ {
		if v := h.ack(0); !v.Dup || v.EnterRecovery {
			t.Fatalf("duplicate %d: want Dup only, got %+v", k, v)
		}
		// FlightSize may exceed cwnd by the duplicates' segments.
		if got, want := r.Pipe(), (10-k)*recMSS; got != want {
			t.Errorf("pipe after %d duplicates: want %d, got %d", k, want, got)
		}
	}
}

func TestNewReno_RFC6582_3_2_Step1_ThirdDupAckFastRetransmits(t *testing.T) {
	h, r := newNewRenoHarness(t, 20, 10)
	h.ack(0)
	h.ack(0)
	v := h.ack(0)
	if !v.EnterRecovery || !r.InRecovery() {
		t.Fatalf("third duplicate: want EnterRecovery, got %+v", v)
	}
	if r.recover != rseq(10) {
		t.Errorf("recover+1: want the highest sequence number sent + 1 = %d, got %d", rseq(10), r.recover)
	}
	seg, ok := h.next()
	wantSeg(t, "fast retransmission", seg, ok, 0, true, true)
	// RFC 5681 §3.2 step 2: cwnd = ssthresh + 3*SMSS, i.e. pipe = FlightSize - 3*SMSS.
	if got, want := r.Pipe(), int64(7*recMSS); got != want {
		t.Errorf("pipe on entry: want %d, got %d", want, got)
	}
	h.r.OnSent(h.now, seg, h.rtt)
	// Step 3/4: each further duplicate inflates the window by one SMSS.
	h.ack(0)
	if got, want := r.Pipe(), int64(6*recMSS); got != want {
		t.Errorf("pipe after a fourth duplicate: want %d, got %d", want, got)
	}
}

// twoLossWindow plays a window of 10 segments with 2 and 5 lost into r,
// up to the ACK of the retransmission of segment 2 (a partial ACK for
// NewReno). It returns the verdict of that ACK.
func twoLossWindow(t *testing.T, h *recHarness) AckVerdict {
	t.Helper()
	h.sendNew(10, 0)
	h.ack(rseq(1))
	h.ack(rseq(2))
	h.ack(rseq(2))                             // segment 3 arrives
	h.ack(rseq(2))                             // segment 4 arrives
	if v := h.ack(rseq(2)); !v.EnterRecovery { // segment 6 arrives
		t.Fatalf("third duplicate: want EnterRecovery, got %+v", v)
	}
	seg, ok := h.next()
	wantSeg(t, "fast retransmission", seg, ok, 2, true, true)
	h.r.OnSent(h.now, seg, h.rtt)
	h.ack(rseq(2)) // segment 7 arrives
	h.ack(rseq(2)) // segment 8 arrives
	h.ack(rseq(2)) // segment 9 arrives
	return h.ack(rseq(5))
}

func TestNewReno_RFC6582_3_2_PartialAckRetransmits(t *testing.T) {
	r := NewNewRenoRecovery(recMSS, 10*recMSS, 3)
	h := newRecHarness(t, r)
	v := twoLossWindow(t, h)
	if !v.AdvancedUna || v.ExitRecovery || !r.InRecovery() {
		t.Fatalf("partial ACK (5000 < recover 10000): want to stay in fast recovery, got %+v", v)
	}
	// Retransmit the first unacknowledged segment at once.
	seg, ok := h.next()
	wantSeg(t, "partial-ACK retransmission", seg, ok, 5, true, true)
	// Inflation: 3 (entry) + 3 (duplicates) - 3 (acknowledged) + 1 (at
	// least one SMSS acknowledged) = 4 segments; FlightSize 5: pipe 1.
	if got, want := r.Pipe(), int64(1*recMSS); got != want {
		t.Errorf("pipe after the partial ACK: want %d, got %d", want, got)
	}
	h.r.OnSent(h.now, seg, h.rtt)
	// Full ACK: both losses repaired without a timeout.
	if v := h.ack(rseq(10)); !v.ExitRecovery || r.InRecovery() {
		t.Fatalf("full ACK: want ExitRecovery, got %+v", v)
	}
	if r.Pipe() != 0 {
		t.Errorf("pipe after the full ACK: want 0, got %d", r.Pipe())
	}
}

// TestReno_RFC5681_TwoLossesNeedTimeout is the same window under Reno
// (RenoRecovery): the partial ACK ends fast recovery and nothing resends
// segment 5, so only the RTO can repair it.
func TestReno_RFC5681_TwoLossesNeedTimeout(t *testing.T) {
	r := NewRenoRecovery(recMSS, 10*recMSS, 3)
	h := newRecHarness(t, r)
	v := twoLossWindow(t, h)
	if !v.ExitRecovery || r.InRecovery() {
		t.Fatalf("Reno on the partial ACK: want ExitRecovery, got %+v", v)
	}
	if seg, ok := h.next(); ok {
		t.Fatalf("Reno after the partial ACK: want nothing to send (all data sent, segment 5 not resent), got %+v", seg)
	}
}

func TestNewReno_RFC6582_3_2_Step5_DeflateAddsBackSMSSOnlyForFullSegment(t *testing.T) {
	// A partial ACK of 500 bytes (less than one SMSS) deflates by 500 and
	// adds nothing back.
	h, r := newNewRenoHarness(t, 20, 10)
	h.ack(0)
	h.ack(0)
	h.ack(0)
	seg, _ := h.next()
	h.r.OnSent(h.now, seg, h.rtt)
	before := r.inflation
	h.ack(500)
	if got, want := r.inflation, before-500; got != want {
		t.Errorf("inflation after a 500-byte partial ACK: want %d, got %d", want, got)
	}
	seg, ok := h.next()
	if !ok || seg.Seq != 500 || !seg.Force {
		t.Fatalf("partial ACK: want a forced retransmission from 500, got %+v", seg)
	}
	// A partial ACK of 2 SMSS: -2000 + 1000.
	h.r.OnSent(h.now, seg, h.rtt)
	before = r.inflation
	h.ack(2500)
	if got, want := r.inflation, before-2000+recMSS; got != want {
		t.Errorf("inflation after a 2000-byte partial ACK: want %d, got %d", want, got)
	}
}

func TestNewReno_RFC6582_3_2_Step6_NoFastRetransmitAfterRTO(t *testing.T) {
	h, r := newNewRenoHarness(t, 30, 10)
	r.OnRTO(h.now, h.rtt)
	if r.recover != rseq(10) || r.SndNxt() != 0 {
		t.Fatalf("after RTO: want recover+1 = %d and SndNxt 0, got %d, %d", rseq(10), r.recover, r.SndNxt())
	}
	sent := h.pump(recMSS)
	if len(sent) != 1 || sent[0].Seq != 0 || !sent[0].Retx {
		t.Fatalf("go-back-N: want segment 0 resent, got %+v", sent)
	}
	// Duplicates for the data sent before the RTO: the cumulative ACK does
	// not cover more than recover, so no fast retransmit (step 1).
	for k := 0; k < 5; k++ {
		if v := h.ack(0); v.EnterRecovery {
			t.Fatalf("duplicate %d after RTO: want no fast retransmit, got %+v", k+1, v)
		}
	}
	if r.InRecovery() {
		t.Fatal("after RTO duplicates: want no fast recovery")
	}
	// No inflation beyond limited transmit: pipe = FlightSize - 2 SMSS, at 0.
	if r.Pipe() != 0 {
		t.Errorf("pipe: want 0, got %d", r.Pipe())
	}
	// Once the ACK covers recover, three duplicates start fast retransmit.
	h.ack(rseq(10))
	h.sendNew(10, 0)
	h.ack(rseq(10))
	h.ack(rseq(10))
	if v := h.ack(rseq(10)); !v.EnterRecovery {
		t.Fatalf("third duplicate after the ACK covered recover: want EnterRecovery, got %+v", v)
	}
}
