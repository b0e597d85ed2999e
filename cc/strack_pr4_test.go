package cc

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// TestStrackPR4_FixedWindowAndTimeoutsInARow: with CC off the window is
// the initial one whatever the ACKs say; timeouts halve it, and only five
// in a row (no advancing ACK between) set it to one MSS.
func TestStrackPR4_FixedWindowAndTimeoutsInARow(t *testing.T) {
	s := NewStrackPR4(StrackPR4Config{}, 1000, 64)
	for i := 0; i < 10; i++ {
		s.OnAck(&AckEvent{Now: sim.Time(i) * sim.Microsecond, Acked: 1000, RTT: 100 * sim.Microsecond,
			Delay: 100 * sim.Microsecond, MinRTT: 5 * sim.Microsecond, MSS: 1000})
	}
	if s.Cwnd() != 64000 {
		t.Fatalf("CC off: cwnd %d, want the initial 64000", s.Cwnd())
	}
	rto := &CongestionEvent{Kind: CongRTO, MSS: 1000}
	for i := 0; i < 4; i++ {
		s.OnCongestion(rto)
	}
	if s.Cwnd() != 4000 {
		t.Fatalf("four timeouts: cwnd %d, want 64000/16", s.Cwnd())
	}
	s.OnAck(&AckEvent{Acked: 1000, MSS: 1000}) // an advancing ACK: the count restarts
	s.OnCongestion(rto)
	if s.Cwnd() != 2000 {
		t.Fatalf("a timeout after an advancing ACK halves: cwnd %d, want 2000", s.Cwnd())
	}
	for i := 0; i < 3; i++ {
		s.OnCongestion(rto)
	}
	s.cwnd = 8000
	s.OnCongestion(rto) // the fifth in a row
	if s.Cwnd() != 1000 {
		t.Fatalf("the fifth timeout in a row: cwnd %d, want one MSS", s.Cwnd())
	}
}

// TestGoBackN_TimeoutResendsFromTheFirstHole: no reaction to duplicates;
// a timeout sends everything again from SndUna.
func TestGoBackN_TimeoutResendsFromTheFirstHole(t *testing.T) {
	r := NewGoBackNRecovery(1000, 10000)
	for i := uint64(0); i < 5; i++ {
		r.OnSent(0, Segment{Seq: i * 1000, Len: 1000}, RTTInfo{})
	}
	v := r.OnAck(&AckInfo{Ack: 1000})
	if !v.AdvancedUna || v.Acked != 1000 {
		t.Fatalf("verdict %+v", v)
	}
	for i := 0; i < 5; i++ {
		if v := r.OnAck(&AckInfo{Ack: 1000, DupCandidate: true}); v.EnterRecovery || !v.Dup {
			t.Fatal("duplicates must not start a recovery")
		}
	}
	st := r.OnRTO(sim.Millisecond, RTTInfo{})
	seg, ok := r.Next()
	if st.Nxt != 1000 || !ok || seg.Seq != 1000 || !seg.Retx {
		t.Fatalf("after the timeout: nxt %d, next %+v; want a retransmission from 1000", st.Nxt, seg)
	}
}

// TestRTO_KeepBackoff: htsim PR #4's RTO only doubles; a new sample does
// not clear the back-off.
func TestRTO_KeepBackoff(t *testing.T) {
	r := NewRTO(RTOConfig{Mode: RTOFixed, Fixed: sim.Millisecond, Backoff: true, KeepBackoff: true})
	r.OnExpire()
	r.OnExpire()
	r.OnSample(10 * sim.Microsecond)
	if r.Timeout() != 4*sim.Millisecond {
		t.Fatalf("timeout %v, want 4ms", r.Timeout())
	}
	r = NewRTO(RTOConfig{Mode: RTOFixed, Fixed: sim.Millisecond, Backoff: true})
	r.OnExpire()
	r.OnSample(10 * sim.Microsecond)
	if r.Timeout() != sim.Millisecond {
		t.Fatalf("without KeepBackoff a sample clears the back-off: %v", r.Timeout())
	}
}
