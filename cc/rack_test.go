package cc

import (
	"fmt"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

const recUS = sim.Microsecond

// newRackHarness returns RACK-TLP for a flow of size segments with
// SRTT = min_RTT = 100 µs.
func newRackHarness(t *testing.T, size uint64, cfg RackConfig) (*recHarness, *RackRecovery) {
	t.Helper()
	r := NewRackRecovery(recMSS, size*recMSS, cfg)
	h := newRecHarness(t, r)
	h.rtt = RTTInfo{SRTT: 100 * recUS, MinRTT: 100 * recUS}
	return h, r
}

func TestRack_RFC8985_6_2_Step5_LossByTimeWithoutDupAcks(t *testing.T) {
	h, r := newRackHarness(t, 4, DefaultRackConfig())
	h.sendNew(4, recUS) // segments 0..3 at 0, 1, 2, 3 µs
	// Segment 0 is lost; segment 1 arrives and its SACK is back at 101 µs.
	h.now = 101 * recUS
	if v := h.ack(0, rblk(1, 2)); v.EnterRecovery {
		t.Fatalf("one SACK: want no recovery yet, got %+v", v)
	}
	// RACK.rtt = 100 µs, reo_wnd = min_RTT/4 = 25 µs: segment 0 is lost at
	// 0 + 100 + 25 = 125 µs; the reordering timer is set for then.
	if got, want := r.ReoWnd(), 25*recUS; got != want {
		t.Errorf("RACK.reo_wnd: want %v, got %v", want, got)
	}
	if got, want := r.Deadline(), 125*recUS; got != want {
		t.Fatalf("Deadline: want the reordering timer at %v, got %v", want, got)
	}
	if v := r.OnDeadlineVerdict(124 * recUS); v.EnterRecovery || r.IsLost(rseq(0)) {
		t.Fatalf("at 124 µs: want segment 0 not yet lost, got %+v", v)
	}
	v := r.OnDeadlineVerdict(125 * recUS)
	if !v.EnterRecovery || !r.IsLost(rseq(0)) || r.IsLost(rseq(2)) {
		t.Fatalf("at 125 µs: want segment 0 (only) lost and recovery, got %+v", v)
	}
	seg, ok := h.next()
	wantSeg(t, "first retransmission", seg, ok, 0, true, true)
}

func TestRack_RFC8985_6_2_Step4_ReorderingWindow(t *testing.T) {
	type step struct {
		cum    uint64
		blocks []sim.SackBlock
	}
	cases := []struct {
		name         string
		srtt, minRTT sim.Time
		cfg          func(*RackConfig)
		acks         []step
		want         sim.Time
	}{
		{"min_RTT/4", 100 * recUS, 100 * recUS, nil,
			[]step{{0, []sim.SackBlock{rblk(1, 2)}}}, 25 * recUS},
		{"bounded by SRTT", 20 * recUS, 100 * recUS, nil,
			[]step{{0, []sim.SackBlock{rblk(1, 2)}}}, 20 * recUS},
		{"multiplier", 100 * recUS, 100 * recUS, func(c *RackConfig) { c.ReoWndMult = 3 },
			[]step{{0, []sim.SackBlock{rblk(1, 2)}}}, 75 * recUS},
		{"zero once DupThresh segments are SACKed", 100 * recUS, 100 * recUS, nil,
			[]step{{0, []sim.SackBlock{rblk(1, 4)}}}, 0},
		// Segment 3 SACKed, then 0..2 arrive: never retransmitted and below
		// RACK.fack, they were reordered (step 3); the window stays open
		// even with DupThresh segments SACKed.
		{"kept after reordering", 100 * recUS, 100 * recUS, nil,
			[]step{{0, []sim.SackBlock{rblk(3, 4)}}, {rseq(3), []sim.SackBlock{rblk(3, 4)}},
				{rseq(3), []sim.SackBlock{rblk(5, 8)}}}, 25 * recUS},
		// A D-SACK (first block below the cumulative ACK) grows the
		// multiplier to 2.
		{"D-SACK", 100 * recUS, 100 * recUS, nil,
			[]step{{rseq(1), nil}, {rseq(1), []sim.SackBlock{rblk(0, 1), rblk(2, 3)}}}, 50 * recUS},
		{"D-SACK ignored when disabled", 100 * recUS, 100 * recUS, func(c *RackConfig) { c.DSACK = false },
			[]step{{rseq(1), nil}, {rseq(1), []sim.SackBlock{rblk(0, 1), rblk(2, 3)}}}, 25 * recUS},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultRackConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			h, r := newRackHarness(t, 20, cfg)
			h.rtt.SRTT, h.rtt.MinRTT = c.srtt, c.minRTT
			h.sendNew(10, recUS)
			h.now = 200 * recUS
			for _, a := range c.acks {
				h.ack(a.cum, a.blocks...)
				h.now += recUS
			}
			if got := r.ReoWnd(); got != c.want {
				t.Errorf("RACK.reo_wnd: want %v, got %v", c.want, got)
			}
		})
	}
}

func TestRack_RFC8985_6_2_Step4_ZeroWindowInRecovery(t *testing.T) {
	// Recovery started by the reordering timer with one SACKed segment; the
	// next ACK SACKs a second one: fewer than DupThresh SACKed, but in
	// recovery without reordering the window is 0.
	h, r := newRackHarness(t, 10, DefaultRackConfig())
	h.sendNew(4, recUS)
	h.now = 101 * recUS
	h.ack(0, rblk(1, 2))
	if r.ReoWnd() != 25*recUS {
		t.Fatalf("before recovery: want reo_wnd 25 µs, got %v", r.ReoWnd())
	}
	h.now = r.Deadline()
	if v := r.OnDeadlineVerdict(h.now); !v.EnterRecovery {
		t.Fatalf("reordering timer: want recovery, got %+v", v)
	}
	h.ack(0, rblk(1, 3))
	if r.ReoWnd() != 0 {
		t.Errorf("in recovery, no reordering, 2 SACKed: want reo_wnd 0, got %v", r.ReoWnd())
	}
}

func TestRack_RFC8985_6_2_Step4_DSACKMultiplierPersists(t *testing.T) {
	// With reo_wnd_persist = 1, the first recovery that ends after the
	// D-SACK round brings the multiplier back to 1.
	cfg := DefaultRackConfig()
	cfg.ReoWndPersist = 1
	h, r := newRackHarness(t, 40, cfg)
	h.sendNew(10, recUS)
	h.now = 200 * recUS
	h.ack(rseq(1))
	h.ack(rseq(1), rblk(0, 1), rblk(2, 3)) // D-SACK: multiplier 2, round ends at SND.NXT
	if r.reoWndMult != 2 {
		t.Fatalf("after a D-SACK: want reo_wnd_mult 2, got %d", r.reoWndMult)
	}
	h.ack(rseq(1), rblk(2, 5)) // segment 1 lost: recovery
	if !r.InRecovery() {
		t.Fatal("want recovery")
	}
	h.pump(1 << 40)
	if v := h.ack(rseq(10)); !v.ExitRecovery {
		t.Fatalf("want ExitRecovery, got %+v", v)
	}
	if r.reoWndMult != 1 {
		t.Errorf("after ReoWndPersist recoveries without D-SACK: want reo_wnd_mult 1, got %d", r.reoWndMult)
	}
}

func TestRack_RFC8985_6_2_Step4_DupThreshSackedMarksLostAtOnce(t *testing.T) {
	h, r := newRackHarness(t, 10, DefaultRackConfig())
	h.sendNew(10, recUS)
	for k, b := range []sim.SackBlock{rblk(1, 2), rblk(1, 3), rblk(1, 4)} {
		h.now = sim.Time(101+k) * recUS
		v := h.ack(0, b)
		if k < 2 && v.EnterRecovery {
			t.Fatalf("SACK %d: want no recovery, got %+v", k+1, v)
		}
		if k == 2 && (!v.EnterRecovery || !r.IsLost(rseq(0))) {
			t.Fatalf("third SACKed segment: reo_wnd 0 marks segment 0 lost at once; got %+v", v)
		}
	}
}

func TestRack_RFC8985_6_2_Step2_SpuriousRetransmissionRTTIgnored(t *testing.T) {
	// Segment 0 (sent at 1 µs) is marked lost at 125 µs (1 + 99 + 25) and
	// resent, then the original
	// arrives late: an ACK 5 µs after the retransmission (less than
	// min_RTT) or echoing the original's timestamp must not move RACK to
	// the retransmission.
	setup := func(t *testing.T) (*recHarness, *RackRecovery) {
		h, r := newRackHarness(t, 4, DefaultRackConfig())
		h.now = recUS
		h.sendNew(4, recUS) // segments 0..3 at 1..4 µs
		h.now = 101 * recUS
		h.ack(0, rblk(1, 2))
		h.now = 125 * recUS
		r.OnDeadlineVerdict(h.now)
		seg, _ := h.next()
		h.r.OnSent(h.now, seg, h.rtt)
		return h, r
	}
	t.Run("RTT below min_RTT", func(t *testing.T) {
		h, r := setup(t)
		h.now = 130 * recUS
		h.ack(rseq(2))
		if r.xmitTS != 2*recUS {
			t.Errorf("RACK.xmit_ts: want 2 µs (segment 1), got %v", r.xmitTS)
		}
	})
	t.Run("TSecr before the retransmission", func(t *testing.T) {
		h, r := setup(t)
		h.now = 300 * recUS
		h.tsecr = 1 * recUS // the original's TSval
		h.ack(rseq(2))
		if r.xmitTS != 2*recUS {
			t.Errorf("RACK.xmit_ts: want 2 µs (segment 1), got %v", r.xmitTS)
		}
	})
	t.Run("TSecr of the retransmission", func(t *testing.T) {
		h, r := setup(t)
		h.now = 300 * recUS
		h.tsecr = 125 * recUS
		h.ack(rseq(2))
		if r.xmitTS != 125*recUS || r.rtt != 175*recUS {
			t.Errorf("RACK.xmit_ts, RACK.rtt: want 125 µs, 175 µs, got %v, %v", r.xmitTS, r.rtt)
		}
	})
}

func TestRack_RFC8985_6_3_RTOMarksFirstAndOldSegments(t *testing.T) {
	h, r := newRackHarness(t, 6, DefaultRackConfig())
	h.sendNew(2, 0) // 0, 1 at 0
	h.now = 100 * recUS
	h.ack(rseq(1)) // RACK.rtt = 100 µs
	h.sendNew(2, 0)
	h.now = 250 * recUS
	h.sendNew(2, 0) // 2, 3 at 100 µs; 4, 5 at 250 µs
	h.now = 300 * recUS
	r.OnRTO(h.now, h.rtt)
	// reo_wnd = 0 in RTO recovery: 1 is first, 2 and 3 were sent 200 µs >=
	// RACK.rtt ago, 4 and 5 only 50 µs ago.
	for i, want := range []bool{false, true, true, true, false, false} {
		if got := r.IsLost(rseq(uint64(i))); got != want {
			t.Errorf("IsLost(segment %d) after RTO: want %v, got %v", i, want, got)
		}
	}
	if got, want := r.Pipe(), int64(2*recMSS); got != want {
		t.Errorf("pipe after RTO: want %d (4, 5), got %d", want, got)
	}
	if r.SndNxt() != rseq(6) || r.InRecovery() {
		t.Errorf("after RTO: want SndNxt %d and no fast recovery, got %d, %v", rseq(6), r.SndNxt(), r.InRecovery())
	}
	sent := h.pump(recMSS)
	if len(sent) != 1 || sent[0].Seq != rseq(1) || !sent[0].Retx || !sent[0].Force {
		t.Fatalf("after RTO with cwnd 1 segment: want segment 1 resent at once (forced), got %+v", sent)
	}
}

func TestRack_RFC8985_9_3_LostRetransmissionStartsNewRound(t *testing.T) {
	h, r := newRackHarness(t, 10, DefaultRackConfig())
	h.sendNew(4, recUS)
	for k, b := range []sim.SackBlock{rblk(1, 2), rblk(1, 3), rblk(1, 4)} {
		h.now = sim.Time(101+k) * recUS
		h.ack(0, b)
	}
	if !r.InRecovery() {
		t.Fatal("want recovery after three SACKed segments")
	}
	// At 103 µs: segment 0 resent, then new segment 4.
	sent := h.pump(1 << 40)
	if len(sent) < 2 || sent[0].Seq != 0 || sent[1].Seq != rseq(4) {
		t.Fatalf("in recovery: want segment 0 resent then segment 4, got %+v", sent)
	}
	// Segment 4 is SACKed 100 µs later, the retransmission of 0 is not:
	// it was sent before segment 4 and RACK.rtt has passed: lost again.
	h.now = 203 * recUS
	v := h.ack(0, rblk(1, 5))
	if !v.EnterRecovery || !r.IsLost(rseq(0)) {
		t.Fatalf("lost retransmission: want a new congestion response (EnterRecovery), got %+v", v)
	}
	seg, ok := h.next()
	wantSeg(t, "second retransmission", seg, ok, 0, true, true)
}

func TestRack_RFC8985_6_2_ReorderTimerVerdictStartsRecovery(t *testing.T) {
	h, r := newRackHarness(t, 4, DefaultRackConfig())
	h.sendNew(4, recUS)
	h.now = 101 * recUS
	h.ack(0, rblk(1, 2))
	h.now = 125 * recUS
	// The reordering timer fires: its verdict starts recovery at once, so
	// the host can cut cwnd without waiting for the next ACK.
	if v := r.OnDeadline(h.now, h.rtt); !v.EnterRecovery || !r.InRecovery() {
		t.Fatalf("OnDeadline at the reordering timer: verdict %+v, in recovery %v; want EnterRecovery", v, r.InRecovery())
	}
	h.now = 126 * recUS
	if v := h.ack(0, rblk(1, 3)); v.EnterRecovery {
		t.Fatalf("the next ACK reported EnterRecovery again: %+v", v)
	}
}

// tlpTail sends 0, 1 at 0 µs, takes their ACK at 100 µs (an RTT sample),
// then sends segments 2..5 at 100..103 µs, which are all lost.
func tlpTail(t *testing.T, size uint64, cfg RackConfig) (*recHarness, *RackRecovery) {
	t.Helper()
	h, r := newRackHarness(t, size, cfg)
	h.sendNew(2, 0)
	h.now = 100 * recUS
	h.ack(rseq(2))
	h.sendNew(4, recUS)
	h.now = 103 * recUS
	return h, r
}

func TestTLP_RFC8985_7_2_PTO(t *testing.T) {
	h, r := tlpTail(t, 6, DefaultRackConfig())
	// PTO = 2*SRTT after the last transmission (FlightSize > 1 segment).
	if got, want := r.Deadline(), 103*recUS+200*recUS; got != want {
		t.Fatalf("Deadline: want PTO at %v, got %v", want, got)
	}
	r.OnDeadlineVerdict(303 * recUS)
	// No new data: the probe is the highest segment sent, sent regardless
	// of cwnd.
	sent := h.pump(0)
	if len(sent) != 1 || sent[0].Seq != rseq(5) || !sent[0].Retx || !sent[0].Force {
		t.Fatalf("tail loss probe: want a forced retransmission of segment 5, got %+v", sent)
	}
	if !r.tlpSet || r.tlpEnd != rseq(6) || !r.tlpRetrans {
		t.Errorf("TLP.end_seq: want %d (retransmission), got %d set=%v retrans=%v", rseq(6), r.tlpEnd, r.tlpSet, r.tlpRetrans)
	}
	if r.Deadline() != sim.Never {
		t.Errorf("after the probe: want no PTO (the RTO takes over), got %v", r.Deadline())
	}
}

func TestTLP_RFC8985_7_2_PTOVariants(t *testing.T) {
	t.Run("one segment in flight adds max_ack_delay", func(t *testing.T) {
		cfg := DefaultRackConfig()
		cfg.MaxAckDelay = 40 * recUS
		h, r := newRackHarness(t, 6, cfg)
		h.sendNew(1, 0)
		if got, want := r.Deadline(), 200*recUS+40*recUS; got != want {
			t.Errorf("PTO with one segment: want %v, got %v", want, got)
		}
	})
	t.Run("no SRTT: 1 s", func(t *testing.T) {
		h, r := newRackHarness(t, 6, DefaultRackConfig())
		h.rtt.SRTT, h.rtt.MinRTT = 0, 0
		h.sendNew(2, 0)
		if got, want := r.Deadline(), sim.Second; got != want {
			t.Errorf("PTO without SRTT: want %v, got %v", want, got)
		}
	})
	t.Run("capped at the RTO", func(t *testing.T) {
		h, r := newRackHarness(t, 6, DefaultRackConfig())
		h.rtt.RTODeadline = 150 * recUS
		h.sendNew(2, 0)
		if got, want := r.Deadline(), 150*recUS; got != want {
			t.Errorf("PTO past the RTO: want %v, got %v", want, got)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		cfg := DefaultRackConfig()
		cfg.TLP = false
		h, r := newRackHarness(t, 6, cfg)
		h.sendNew(2, 0)
		if r.Deadline() != sim.Never {
			t.Errorf("TLP off: want no PTO, got %v", r.Deadline())
		}
	})
	t.Run("not with SACKed segments", func(t *testing.T) {
		h, r := newRackHarness(t, 20, DefaultRackConfig())
		h.sendNew(4, 0)
		h.now = 100 * recUS
		h.ack(rseq(1), rblk(2, 3))
		if got := r.ptoAt; got != sim.Never {
			t.Errorf("ACK with SACKed segments outstanding: want no PTO, got %v", got)
		}
	})
	t.Run("restarted by an ACK", func(t *testing.T) {
		h, r := newRackHarness(t, 20, DefaultRackConfig())
		h.sendNew(4, 0)
		h.now = 100 * recUS
		h.ack(rseq(1))
		if got, want := r.ptoAt, 300*recUS; got != want {
			t.Errorf("PTO after a cumulative ACK: want %v, got %v", want, got)
		}
	})
}

func TestTLP_RFC8985_7_3_ProbeSendsNewDataFirst(t *testing.T) {
	h, r := tlpTail(t, 20, DefaultRackConfig())
	r.OnDeadlineVerdict(r.Deadline())
	sent := h.pump(0)
	if len(sent) != 1 || sent[0].Seq != rseq(6) || sent[0].Retx || !sent[0].Force {
		t.Fatalf("probe with unsent data: want new segment 6, forced, got %+v", sent)
	}
	if r.tlpRetrans {
		t.Error("TLP.is_retrans: want false for a new-data probe")
	}
}

func TestTLP_RFC8985_7_3_OneProbeAndFreshRTT(t *testing.T) {
	h, r := tlpTail(t, 40, DefaultRackConfig())
	r.OnDeadlineVerdict(r.Deadline())
	h.pump(0)
	// New data goes out (cwnd allows) and re-arms the PTO, but the probe
	// is still in flight: condition 1 refuses a second one.
	h.now = 310 * recUS
	h.pump(10 * recMSS)
	if r.Deadline() == sim.Never {
		t.Fatal("new data after the probe: want a PTO")
	}
	r.OnDeadlineVerdict(r.Deadline())
	if seg, ok := h.next(); ok && seg.Force {
		t.Fatalf("probe in flight: want no second probe, got %+v", seg)
	}
	// The ACK of the probe (segment 6) brings an RTT sample (condition 2):
	// the next PTO may probe again.
	h.now = 520 * recUS
	h.ack(rseq(7))
	if r.tlpSet || !r.rttSampled {
		t.Fatalf("ACK past TLP.end_seq: want the probe done and an RTT sample, got set=%v sampled=%v", r.tlpSet, r.rttSampled)
	}
	r.OnDeadlineVerdict(r.Deadline())
	if seg, ok := h.next(); !ok || !seg.Force {
		t.Fatalf("next PTO: want a probe, got %+v ok=%v", seg, ok)
	}
}

func TestRackConfig_Validate(t *testing.T) {
	good := DefaultRackConfig()
	if err := good.Validate(); err != nil {
		t.Fatalf("default config: want valid, got %v", err)
	}
	for _, bad := range []func(*RackConfig){
		func(c *RackConfig) { c.DupThresh = 0 },
		func(c *RackConfig) { c.ReoWndMult = 0 },
		func(c *RackConfig) { c.ReoWndPersist = 0 },
		func(c *RackConfig) { c.MaxAckDelay = -1 },
	} {
		c := DefaultRackConfig()
		bad(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("config %+v: want an error, got none", c)
		}
	}
}

// BenchmarkRackOnAck is BenchmarkSackOnAck for RACK-TLP, every ACK
// delivering one segment newly and running the loss detection:
// go test ./cc/ -run '^$' -bench RackOnAck -benchmem
func BenchmarkRackOnAck(b *testing.B) {
	for _, w := range []uint64{64, 1024} {
		b.Run(fmt.Sprintf("window=%d", w), func(b *testing.B) {
			r := NewRackRecovery(recMSS, 1<<50, DefaultRackConfig())
			rt := RTTInfo{SRTT: 100 * recUS, MinRTT: 100 * recUS}
			var now sim.Time
			for k := uint64(0); k < w; k++ {
				r.OnSent(now, Segment{Seq: r.Nxt, Len: recMSS}, rt)
			}
			blocks := make([]sim.SackBlock, 2)
			ai := AckInfo{DupCandidate: true, RTTInfo: rt}
			k := uint64(0)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				now += recUS
				ai.Now = now
				ai.Ack = rseq(k)
				blocks[0] = rblk(k+1+w/4, k+w/2)
				blocks[1] = rblk(k+1, k+1+w/4)
				ai.Sack = blocks
				r.OnAck(&ai)
				_ = r.Pipe()
				if seg, ok := r.Next(); ok {
					r.OnSent(now, seg, rt)
				}
				if r.Nxt < rseq(k+w) {
					r.OnSent(now, Segment{Seq: r.Nxt, Len: recMSS}, rt)
				}
				_ = r.Deadline()
				k++
			}
		})
	}
}
