package cc

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

const sMSS = 1000

// sendN sends n new segments at now.
func sendN(t *testing.T, r *StrackRecovery, now sim.Time, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		seg, ok := r.Next()
		if !ok || seg.Retx {
			t.Fatalf("send %d: got %+v ok=%v, want new data", i, seg, ok)
		}
		r.OnSent(now+sim.Time(i), seg, RTTInfo{}) // segment i leaves at now+i ps
	}
}

func TestStrack_NackWithTwoHolesRetransmitsExactlyThoseTwo(t *testing.T) {
	r := NewStrackRecovery(sMSS, 100*sMSS)
	sendN(t, r, 0, 10)
	// Segments 0 and 1 arrive; 2 and 5 are missing; 3, 4, 6 arrive. The
	// ACK of segment 6 carries the bitmap after the next expected (2):
	// bits 1 (seg 3), 2 (seg 4), 4 (seg 6).
	now := 10 * sim.Microsecond
	for _, seg := range []uint64{0, 1} {
		r.OnAck(&AckInfo{Now: now, Ack: (seg + 1) * sMSS, Echo: seg * sMSS, EchoValid: true, RTTInfo: RTTInfo{MinRTT: sim.Microsecond}})
	}
	v := r.OnAck(&AckInfo{Now: now, Ack: 2 * sMSS, Echo: 6 * sMSS, EchoValid: true, Nack: true,
		Bitmap: 1<<1 | 1<<2 | 1<<4, RTTInfo: RTTInfo{MinRTT: sim.Microsecond}})
	if !v.EnterRecovery {
		t.Fatalf("verdict %+v: want a loss episode to begin", v)
	}
	var resent []uint64
	for {
		seg, ok := r.Next()
		if !ok || !seg.Retx {
			break
		}
		resent = append(resent, seg.Seq/sMSS)
		r.OnSent(now, seg, RTTInfo{})
	}
	if len(resent) != 2 || resent[0] != 2 || resent[1] != 5 {
		t.Fatalf("retransmitted segments %v, want exactly [2 5]", resent)
	}
	// Pipe: 10 sent, 2 cumulatively acked, 3 acked by the bitmap, 1 by the
	// echo (6), 2 lost and resent (back in flight): 10-2-3-1 = 4 segments
	// (2, 5 resent; 7, 8, 9 outstanding ... minus none) -> 2 + 3 = 5? Count:
	// outstanding = {2r, 5r, 7, 8, 9} = 5 segments.
	if got := r.Pipe(); got != 5*sMSS {
		t.Fatalf("pipe %d, want %d (segments 2, 5 resent and 7, 8, 9)", got, 5*sMSS)
	}
	// A second NACK right away (before the resends could land) must not
	// resend them again.
	r.OnAck(&AckInfo{Now: now + 1, Ack: 2 * sMSS, Echo: 7 * sMSS, EchoValid: true, Nack: true,
		Bitmap: 1<<1 | 1<<2 | 1<<4 | 1<<5, RTTInfo: RTTInfo{MinRTT: sim.Microsecond}})
	if seg, ok := r.Next(); ok && seg.Retx {
		t.Fatalf("a repeated NACK resent %d again within one RTT", seg.Seq/sMSS)
	}
}

func TestStrack_CumulativeAckAcrossBitmapAckedSegments(t *testing.T) {
	r := NewStrackRecovery(sMSS, 5*sMSS)
	sendN(t, r, 0, 5)
	r.OnAck(&AckInfo{Now: 1, Ack: 0, Echo: 3 * sMSS, EchoValid: true})
	v := r.OnAck(&AckInfo{Now: 2, Ack: 5 * sMSS, Echo: 0, EchoValid: true})
	if r.SndUna() != 5*sMSS || r.Pipe() != 0 || v.Acked != 4*sMSS {
		t.Fatalf("una %d pipe %d acked %d, want 5000, 0 and 4000 (segment 3 was acked before)", r.SndUna(), r.Pipe(), v.Acked)
	}
}

func TestStrack_RTOResendsOnlyWhatIsMissing(t *testing.T) {
	r := NewStrackRecovery(sMSS, 6*sMSS)
	sendN(t, r, 0, 6)
	r.OnAck(&AckInfo{Now: 1, Ack: 0, Echo: 2 * sMSS, EchoValid: true})
	r.OnAck(&AckInfo{Now: 1, Ack: 0, Echo: 4 * sMSS, EchoValid: true})
	r.OnRTO(100, RTTInfo{})
	var resent []uint64
	for {
		seg, ok := r.Next()
		if !ok {
			break
		}
		resent = append(resent, seg.Seq/sMSS)
		r.OnSent(100, seg, RTTInfo{})
	}
	want := []uint64{0, 1, 3, 5}
	if len(resent) != len(want) {
		t.Fatalf("after the RTO resent %v, want %v", resent, want)
	}
	for i := range want {
		if resent[i] != want[i] {
			t.Fatalf("after the RTO resent %v, want %v", resent, want)
		}
	}
}

func TestStrackCC_AdditiveIncreaseProportionalToGap(t *testing.T) {
	cfg := DefaultStrackConfig(sMSS)
	s := NewStrack(cfg, sMSS, 10)
	// First sample sets srtt = 5 us; target = 20 us (hops 0); per-ACK
	// increase = 0.25 * (20e6 - 5e6) ps / 10000 B = 375 bytes.
	s.OnAck(&AckEvent{Now: sim.Microsecond, Acked: sMSS, RTT: 5 * sim.Microsecond, MSS: sMSS})
	if got := s.Cwnd(); got != 10375 {
		t.Fatalf("cwnd %d, want 10375 (0.25*(target-srtt)/cwnd added)", got)
	}
}

func TestStrackCC_MultiplicativeDecreaseOncePerRTT(t *testing.T) {
	cfg := DefaultStrackConfig(sMSS)
	s := NewStrack(cfg, sMSS, 100)
	// RTT 25 us > target 20 us: cwnd *= max(1 - 0.8*5/25, 0.5) = 0.84.
	s.OnAck(&AckEvent{Now: 100 * sim.Microsecond, Acked: sMSS, RTT: 25 * sim.Microsecond, MSS: sMSS})
	if got := s.Cwnd(); got != 84000 {
		t.Fatalf("cwnd %d, want 84000", got)
	}
	// Within one smoothed RTT: no second decrease.
	s.OnAck(&AckEvent{Now: 110 * sim.Microsecond, Acked: sMSS, RTT: 25 * sim.Microsecond, MSS: sMSS})
	if got := s.Cwnd(); got != 84000 {
		t.Fatalf("cwnd %d after a second sample within an RTT, want 84000", got)
	}
	// A huge delay is floored at max_mdf: 1 - 0.8*(200-20)/200 = 0.28 < 0.5.
	s.OnAck(&AckEvent{Now: 200 * sim.Microsecond, Acked: sMSS, RTT: 200 * sim.Microsecond, MSS: sMSS})
	if got := s.Cwnd(); got != 42000 {
		t.Fatalf("cwnd %d, want 42000 (floored at 1-max_mdf)", got)
	}
}

// A trim NACK (NDP, htsim ndp.cpp NdpSrc::processNack) names the packet a
// switch cut; its TSecr is the cut transmission's send time. The named
// packet is resent at once and nothing else; the pipe loses it. A trim
// NACK of a transmission older than the packet's latest (it was resent in
// between, here by the RTO) names nothing lost: no second resend.
func TestStrack_TrimNackResendsTheNamedTransmissionOnly(t *testing.T) {
	r := NewStrackRecovery(sMSS, 10*sMSS)
	sendN(t, r, 0, 4) // segment i sent at i ps
	now := 10 * sim.Microsecond
	// Segment 2's transmission at 2 ps was trimmed.
	r.OnAck(&AckInfo{Now: now, Ack: 0, Echo: 2 * sMSS, EchoValid: true, Trimmed: true, TSecr: 2})
	if got := r.Pipe(); got != 3*sMSS {
		t.Fatalf("pipe after a trim NACK of segment 2: want 3 segments (0, 1, 3), got %d bytes", got)
	}
	seg, ok := r.Next()
	if !ok || !seg.Retx || seg.Seq != 2*sMSS {
		t.Fatalf("after a trim NACK of segment 2: want its resend, got %+v (ok %v)", seg, ok)
	}
	if r.SndUna() != 0 || r.TrimResent != 1 {
		t.Fatalf("a trim NACK acknowledges nothing: una %d (want 0), TrimResent %d (want 1)", r.SndUna(), r.TrimResent)
	}
	r.OnSent(now, seg, RTTInfo{})
	// The RTO resends everything outstanding at 2 * now; a late trim NACK
	// of segment 1's first transmission (1 ps) then names nothing lost.
	r.OnRTO(2*now, RTTInfo{})
	for {
		s, ok := r.Next()
		if !ok || !s.Retx {
			break
		}
		r.OnSent(2*now, s, RTTInfo{})
	}
	r.OnAck(&AckInfo{Now: 2*now + 1, Ack: 0, Echo: 1 * sMSS, EchoValid: true, Trimmed: true, TSecr: 1})
	if s, ok := r.Next(); ok && s.Retx {
		t.Fatalf("a trim NACK of a transmission older than the RTO's resend: want no resend, got segment %d", s.Seq/sMSS)
	}
	// A trim NACK of the resend itself (TSecr = its send time) does.
	r.OnAck(&AckInfo{Now: 2*now + 2, Ack: 0, Echo: 1 * sMSS, EchoValid: true, Trimmed: true, TSecr: 2 * now})
	if s, ok := r.Next(); !ok || !s.Retx || s.Seq != 1*sMSS {
		t.Fatalf("a trim NACK of segment 1's latest transmission: want its resend, got %+v (ok %v)", s, ok)
	}
}
