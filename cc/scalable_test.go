package cc

import (
	"fmt"
	"math"
	"testing"
)

// scalableHarness drives a Scalable with one-segment ACKs.
type scalableHarness struct {
	t   *testing.T
	s   *Scalable
	mss int64
}

func newScalableHarness(t *testing.T, variant string, mss, initCwnd int64) *scalableHarness {
	t.Helper()
	s, err := NewScalable(variant, mss, initCwnd)
	if err != nil {
		t.Fatalf("NewScalable(%q, %d, %d): %v", variant, mss, initCwnd, err)
	}
	return &scalableHarness{t: t, s: s, mss: mss}
}

// ackN delivers n ACKs of `bytes` each.
func (h *scalableHarness) ackN(n int, bytes int64) {
	for range n {
		h.s.OnAck(&AckEvent{Acked: bytes, MSS: h.mss})
	}
}

func (h *scalableHarness) congest(kind CongestionKind) {
	h.s.OnCongestion(&CongestionEvent{Kind: kind, FlightSize: h.s.Cwnd(), MSS: h.mss})
}

// wantSeg checks cwnd against segs segments (a float in the kelly variant,
// exact in hundredths).
func (h *scalableHarness) wantCwnd(what string, wantBytes int64) {
	h.t.Helper()
	if got := h.s.Cwnd(); got != wantBytes {
		h.t.Fatalf("%s: cwnd: want %d bytes (%.2f segments), got %d (%.2f)", what, wantBytes,
			float64(wantBytes)/float64(h.mss), got, float64(got)/float64(h.mss))
	}
}

func (h *scalableHarness) wantSsthresh(what string, wantBytes int64) {
	h.t.Helper()
	if got := h.s.Ssthresh(); got != wantBytes {
		h.t.Fatalf("%s: ssthresh: want %d bytes, got %d", what, wantBytes, got)
	}
}

func TestScalable_NewScalable_RejectsBadInput(t *testing.T) {
	cases := []struct {
		variant       string
		mss, initCwnd int64
	}{{"kelley", 1000, 10}, {"", 1000, 10}, {"kelly", 0, 10}, {"linux", 1000, 0}}
	for _, c := range cases {
		if _, err := NewScalable(c.variant, c.mss, c.initCwnd); err == nil {
			t.Errorf("NewScalable(%q, %d, %d): want an error, got nil", c.variant, c.mss, c.initCwnd)
		}
	}
}

// Kelly 2003 §2: in congestion avoidance cwnd grows by a = 0.01 segment for
// every acknowledgement, so after N ACKs from W it is W + 0.01*N.
func TestScalable_Kelly2003_AdditiveIncreasePerAck(t *testing.T) {
	for _, mss := range []int64{1000, 1460} {
		h := newScalableHarness(t, "kelly", mss, 16)
		// A loss at 16 segments: 16 - ceil(2) = 14 = ssthresh = cwnd.
		h.congest(CongLoss)
		h.s.OnRecoveryExit(0)
		h.wantCwnd("after loss at W=16", 14*mss)
		if st := h.s.State().String(); st != "congestion-avoidance" {
			t.Fatalf("state at cwnd == ssthresh: want congestion-avoidance, got %q", st)
		}
		const w = 14
		for n := 1; n <= 400; n++ {
			h.ackN(1, mss)
			// W + 0.01*N segments, in hundredths: (100*W + N)*MSS/100.
			want := (100*w + int64(n)) * mss / 100
			h.wantCwnd(fmt.Sprintf("mss %d, %d ACKs from W=%d", mss, n, w), want)
		}
	}
}

// Kelly 2003 §2: the increase is per acknowledgement, not per byte: a
// stretch ACK of 4 segments adds 0.01, like a single-segment ACK.
func TestScalable_Kelly2003_StretchAckCountsOnce(t *testing.T) {
	h := newScalableHarness(t, "kelly", 1000, 16)
	h.congest(CongLoss)
	h.s.OnRecoveryExit(0)
	h.ackN(10, 4000)
	h.wantCwnd("10 stretch ACKs from W=14", 14100)
}

// Kelly 2003 §2: on congestion cwnd <- cwnd - ceil(0.125*cwnd): 0.875x
// when cwnd is a multiple of 8 segments, a little less otherwise.
func TestScalable_Kelly2003_MultiplicativeDecrease(t *testing.T) {
	const mss = 1000
	cases := []struct {
		name   string
		init   int64 // segments
		acks   int   // CA acks after reaching CA at init (hundredths added)
		loss   int   // further losses
		want   int64 // cwnd in bytes after the last loss
		reason string
	}{
		{"16 segments", 16, 0, 0, 14000, "16 - ceil(2) = 14 = 0.875*16"},
		{"80 segments", 80, 0, 0, 70000, "80 - ceil(10) = 70 = 0.875*80"},
		{"9 segments", 9, 0, 0, 7000, "9 - ceil(1.125) = 7"},
		// From 14 (after the first loss at 16) plus 50 ACKs: 14.5;
		// 14.5 - ceil(1.8125) = 12.5.
		{"fractional 14.5", 16, 50, 1, 12500, "14.5 - ceil(1.8125) = 12.5"},
		// Floor at 2 segments: 2 - ceil(0.25) = 1 -> 2.
		{"floor", 2, 0, 0, 2000, "max(2 - ceil(0.25), 2) = 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newScalableHarness(t, "kelly", mss, c.init)
			h.congest(CongLoss)
			h.s.OnRecoveryExit(0)
			h.ackN(c.acks, mss)
			for range c.loss {
				h.congest(CongLoss)
				h.s.OnRecoveryExit(0)
			}
			h.wantCwnd(c.reason, c.want)
			h.wantSsthresh(c.reason, c.want)
		})
	}
}

// Kelly 2003 §2 (slow start as standard TCP): RFC 5681 §3.1 with RFC 3465
// byte counting doubles the window per round: 10 ACKs of 1 segment take
// 10 segments to 20.
func TestScalable_Kelly2003_StandardSlowStart(t *testing.T) {
	h := newScalableHarness(t, "kelly", 1000, 10)
	h.ackN(10, 1000)
	h.wantCwnd("10 ACKs in slow start", 20000)
	// RFC 3465 §2.2: a stretch ACK of 4 segments counts as L = 2.
	h.ackN(1, 4000)
	h.wantCwnd("stretch ACK in slow start", 22000)
	if st := h.s.State().String(); st != "slow-start" {
		t.Fatalf("state: want slow-start, got %q", st)
	}
}

// RFC 5681 §3.1: an RTO leaves 1 segment (the loss window) and the reduced
// ssthresh; slow start then stops at ssthresh.
func TestScalable_RFC5681_3_1_RTO(t *testing.T) {
	for _, variant := range ScalableVariants {
		t.Run(variant, func(t *testing.T) {
			h := newScalableHarness(t, variant, 1000, 16)
			h.congest(CongRTO)
			h.wantCwnd("after RTO", 1000)
			h.wantSsthresh("after RTO at 16", 14000) // both: 16 - 2
			// A second RTO before new data is acknowledged keeps
			// ssthresh (RFC 5681 §3.1; Linux tcp_enter_loss).
			h.congest(CongRTO)
			h.wantSsthresh("after a second RTO", 14000)
			h.ackN(20, 1000)
			if got := h.s.Cwnd(); got < 14000 || got > 15000 {
				t.Fatalf("slow start after RTO: want cwnd just past ssthresh 14000, got %d", got)
			}
			if st := h.s.State().String(); st != "congestion-avoidance" {
				t.Fatalf("state: want congestion-avoidance, got %q", st)
			}
		})
	}
}

// Linux tcp_scalable.c: tcp_cong_avoid_ai(tp, min(cwnd, 100), acked) adds a
// packet every 100 packets acknowledged once cwnd >= 100.
func TestScalable_LinuxTcpScalableC_AIEvery100(t *testing.T) {
	h := newScalableHarness(t, "linux", 1000, 200)
	h.congest(CongLoss) // ssthresh = 200 - 25 = 175
	h.s.OnRecoveryExit(0)
	h.wantCwnd("after loss at 200", 175000)
	h.ackN(99, 1000)
	h.wantCwnd("99 acked at 175", 175000)
	h.ackN(1, 1000)
	h.wantCwnd("100 acked at 175", 176000)
	h.ackN(100, 1000)
	h.wantCwnd("200 acked", 177000)
	// A stretch ACK of 250 packets: cnt 250 -> +2, cnt 50.
	h.ackN(1, 250*1000)
	h.wantCwnd("stretch ACK of 250", 179000)
	h.ackN(49, 1000)
	h.wantCwnd("cnt 99", 179000)
	h.ackN(1, 1000)
	h.wantCwnd("cnt 100", 180000)
}

// Linux tcp_scalable.c: below 100 packets, w = cwnd: one packet per cwnd
// acknowledged (Reno's rate).
func TestScalable_LinuxTcpScalableC_AIEveryCwndWhenSmall(t *testing.T) {
	h := newScalableHarness(t, "linux", 1000, 8)
	h.congest(CongLoss) // 8 - 1 = 7
	h.s.OnRecoveryExit(0)
	h.wantCwnd("after loss at 8", 7000)
	h.ackN(6, 1000)
	h.wantCwnd("6 acked at 7", 7000)
	h.ackN(1, 1000)
	h.wantCwnd("7 acked at 7", 8000)
	h.ackN(7, 1000)
	h.wantCwnd("7 acked at 8", 8000)
	h.ackN(1, 1000)
	h.wantCwnd("8 acked at 8", 9000)
	// Half-segment ACKs: two make a packet.
	h.ackN(17, 500)
	h.wantCwnd("8.5 packets acked at 9", 9000)
	h.ackN(1, 500)
	h.wantCwnd("9 packets acked at 9", 10000)
}

// Linux tcp_scalable_ssthresh: max(cwnd - (cwnd >> 3), 2).
func TestScalable_LinuxTcpScalableC_Ssthresh(t *testing.T) {
	cases := []struct{ cwnd, want int64 }{
		{8, 7}, {2, 2}, {3, 3}, {16, 14}, {100, 88}, {1000, 875}, {15, 14},
	}
	for _, c := range cases {
		h := newScalableHarness(t, "linux", 1000, c.cwnd)
		h.congest(CongECN)
		h.wantSsthresh(fmt.Sprintf("cwnd %d", c.cwnd), c.want*1000)
		h.wantCwnd(fmt.Sprintf("cwnd %d", c.cwnd), c.want*1000)
	}
	// After an RTO cwnd is 1: a loss then gives max(1 - 0, 2) = 2.
	h := newScalableHarness(t, "linux", 1000, 10)
	h.congest(CongRTO)
	h.ackN(1, 1000) // slow start: 2 (ssthresh 9)
	h.congest(CongLoss)
	h.wantSsthresh("loss at cwnd 2", 2000)
}

// Linux tcp_slow_start: cwnd = min(cwnd + acked, ssthresh), no ABC cap, the
// leftover spills into tcp_cong_avoid_ai.
func TestScalable_LinuxTcpCongC_SlowStartSpill(t *testing.T) {
	h := newScalableHarness(t, "linux", 1000, 16)
	h.ackN(1, 5000)
	h.wantCwnd("stretch ACK of 5 in slow start", 21000)
	h.congest(CongRTO) // ssthresh = 21 - 2 = 19, cwnd 1
	h.wantSsthresh("after RTO at 21", 19000)
	// 30 packets: slow start takes 18 to reach 19, 12 go to cnt (w = 19).
	h.ackN(1, 30000)
	h.wantCwnd("spill", 19000)
	h.ackN(6, 1000)
	h.wantCwnd("cnt 18", 19000)
	h.ackN(1, 1000)
	h.wantCwnd("cnt 19", 20000)
}

// The window does not grow during recovery (RFC 5681 §3.2), and recovery
// ends with cwnd = ssthresh (step 6).
func TestScalable_RFC5681_3_2_NoGrowthInRecovery(t *testing.T) {
	for _, variant := range ScalableVariants {
		t.Run(variant, func(t *testing.T) {
			h := newScalableHarness(t, variant, 1000, 16)
			h.congest(CongLoss)
			if st := h.s.State().String(); st != "recovery" {
				t.Fatalf("state after loss: want recovery, got %q", st)
			}
			for range 50 {
				h.s.OnAck(&AckEvent{Acked: 1000, InRecovery: true, MSS: 1000})
			}
			h.wantCwnd("acks in recovery", 14000)
			h.s.OnRecoveryExit(0)
			h.wantCwnd("recovery exit", 14000)
			if st := h.s.State().String(); st != "congestion-avoidance" {
				t.Fatalf("state after recovery: want congestion-avoidance, got %q", st)
			}
		})
	}
}

func TestScalable_InitialSsthreshIsUnbounded(t *testing.T) {
	for _, variant := range ScalableVariants {
		h := newScalableHarness(t, variant, 1460, 10)
		if got := h.s.Ssthresh(); got != math.MaxInt64/2 {
			t.Errorf("%s: initial ssthresh: want %d (as Reno), got %d", variant, int64(math.MaxInt64/2), got)
		}
	}
}

// go test ./cc/ -run - -bench Scalable -benchmem
func BenchmarkScalableOnAck(b *testing.B) {
	for _, variant := range ScalableVariants {
		b.Run("variant="+variant, func(b *testing.B) {
			s, err := NewScalable(variant, 1460, 10)
			if err != nil {
				b.Fatal(err)
			}
			s.OnCongestion(&CongestionEvent{Kind: CongLoss, FlightSize: 14600, MSS: 1460})
			s.OnRecoveryExit(0)
			ev := AckEvent{Acked: 1460, MSS: 1460}
			b.ReportAllocs()
			for b.Loop() {
				s.OnAck(&ev)
			}
		})
	}
}

// Linux before 5.7 ("tcp: fix stretch ACK bugs in Scalable", 2020):
// tcp_cong_avoid_ai(tp, min(cwnd, TCP_SCALABLE_AI_CNT = 50), 1), one count
// per ACK. At cwnd 105 (a loss at 120: 120 - 120>>3): w = 50 ACKs for one
// packet, whatever each acknowledges; today's code counts packets with w =
// min(105, 100) = 100, so 3-packet ACKs add one after 34 ACKs (102 >= 100,
// snd_cwnd_cnt 2 left over).
func TestScalable_LinuxTcpScalableC2019_AIEvery50Acks(t *testing.T) {
	for _, c := range []struct {
		variant string
		acks    int // ACKs of 3 packets for the first increase
	}{{"linux-2019", 50}, {"linux", 34}} {
		h := newScalableHarness(t, c.variant, 1000, 120)
		h.congest(CongLoss)
		h.s.OnRecoveryExit(0)
		h.wantCwnd(c.variant+": after a loss at 120", 105000)
		h.ackN(c.acks-1, 3000)
		h.wantCwnd(fmt.Sprintf("%s: %d ACKs of 3 packets", c.variant, c.acks-1), 105000)
		h.ackN(1, 3000)
		h.wantCwnd(fmt.Sprintf("%s: %d ACKs of 3 packets", c.variant, c.acks), 106000)
	}
	// Below 50 packets w = cwnd for both: at cwnd 18, 18 ACKs of one
	// packet add one.
	h := newScalableHarness(t, "linux-2019", 1000, 20)
	h.congest(CongLoss) // 20 - 20>>3 = 18
	h.s.OnRecoveryExit(0)
	h.ackN(17, 1000)
	h.wantCwnd("linux-2019 at 18: 17 ACKs", 18000)
	h.ackN(1, 1000)
	h.wantCwnd("linux-2019 at 18: 18 ACKs", 19000)
}

// Before 5.7 tcp_scalable_cong_avoid ignored tcp_slow_start's return: the
// packets an ACK acknowledges beyond ssthresh are lost to congestion
// avoidance. After an RTO at 16 (ssthresh 16 - 2 = 14, cwnd 1), one ACK of
// 30 packets: linux-2019 stops at 14; today's code spills 17 packets into
// tcp_cong_avoid_ai with w = 14: 15, 3 left.
func TestScalable_LinuxTcpScalableC2019_SlowStartDoesNotSpill(t *testing.T) {
	for _, c := range []struct {
		variant string
		want    int64
	}{{"linux-2019", 14000}, {"linux", 15000}} {
		h := newScalableHarness(t, c.variant, 1000, 16)
		h.congest(CongRTO)
		h.wantSsthresh(c.variant+": RTO at 16", 14000)
		h.ackN(1, 30000)
		h.wantCwnd(c.variant+": one ACK of 30 packets from 1", c.want)
	}
}
