package cc

import (
	"fmt"
	"math"
	"testing"
)

// dctcpHarness feeds a DCTCP one-segment ACKs with a constant number of
// segments in flight, so that each observation window after the first holds
// exactly `flight` ACKs (see TestDCTCP_RFC8257_3_3_WindowBoundaries). As in
// the host, an ACK is processed before the sender refills the window, so
// SND.NXT = SND.UNA + (flight-1) segments when the controller sees it.
type dctcpHarness struct {
	t      *testing.T
	d      *DCTCP
	mss    int64
	flight uint64 // segments in flight after each ACK
	una    uint64
}

func newDCTCPHarness(t *testing.T, cfg DCTCPConfig, initCwnd int64) *dctcpHarness {
	return &dctcpHarness{t: t, d: NewDCTCP(cfg, 1000, initCwnd), mss: 1000, flight: 10}
}

// ack delivers one ACK for the next segment.
func (h *dctcpHarness) ack(ece bool) {
	h.una += uint64(h.mss)
	h.d.OnAck(&AckEvent{Acked: h.mss, ECE: ece, MSS: h.mss, SndUna: h.una,
		SndNxt: h.una + (h.flight-1)*uint64(h.mss)})
}

// window delivers the ACKs of one observation window, the first `marked`
// with ECE.
func (h *dctcpHarness) window(marked int) {
	for i := range int(h.flight) {
		h.ack(i < marked)
	}
}

func wantAlpha(t *testing.T, what string, d *DCTCP, want float64) {
	t.Helper()
	if got := d.Alpha(); math.Abs(got-want) > 1e-12 {
		t.Fatalf("%s: alpha: want %.15g, got %.15g", what, want, got)
	}
}

// RFC 8257 §3.3 step 3: a window ends with the first ACK whose SEG.ACK
// exceeds WindowEnd, and that ACK's bytes count in it. WindowEnd starts at
// SND.NXT = 0, so the first ACK is a window of its own.
func TestDCTCP_RFC8257_3_3_WindowBoundaries(t *testing.T) {
	h := newDCTCPHarness(t, DefaultDCTCPConfig(), 10)
	h.ack(false) // una 1000 > WindowEnd 0: alpha = 15/16; WindowEnd = 10000
	wantAlpha(t, "first ACK", h.d, 15.0/16)
	// ACKs up to una = 10000 do not pass WindowEnd = 10000 ...
	for range 9 {
		h.ack(true)
	}
	wantAlpha(t, "una == WindowEnd", h.d, 15.0/16)
	// ... una = 11000 does: 10 ACKs, 9 marked.
	h.ack(false)
	wantAlpha(t, "una > WindowEnd", h.d, 15.0/16*15.0/16+9.0/10/16)
}

// RFC 8257 §3.3 steps 4-5: alpha <- (1-g)*alpha + g*F, F the fraction of
// bytes marked in the window, worked by hand for g = 1/16 and alpha0 = 1.
func TestDCTCP_RFC8257_3_3_AlphaEWMA(t *testing.T) {
	h := newDCTCPHarness(t, DefaultDCTCPConfig(), 10)
	h.ack(false)
	// alpha1 = 15/16.
	wantAlpha(t, "first ACK", h.d, 15.0/16)
	// F = 5/10: 15/16 * 15/16 + 1/16 * 1/2 = 225/256 + 8/256 = 233/256.
	h.window(5)
	wantAlpha(t, "window 1, F = 0.5", h.d, 233.0/256)
	// F = 1: 15/16 * 233/256 + 1/16 = 3495/4096 + 256/4096 = 3751/4096.
	h.window(10)
	wantAlpha(t, "window 2, F = 1", h.d, 3751.0/4096)
	// F = 2/10: 15/16 * 3751/4096 + 1/16 * 1/5 = 56265/65536 + 1/80.
	h.window(2)
	wantAlpha(t, "window 3, F = 0.2", h.d, 56265.0/65536+1.0/80)
}

// RFC 8257 §3.3 step 5 with M = 0: alpha decays geometrically, alpha_n =
// (1-g)^n * alpha0, towards 0.
func TestDCTCP_RFC8257_3_3_AlphaDecaysWithoutMarks(t *testing.T) {
	for _, g := range []float64{1.0 / 16, 1.0 / 4} {
		h := newDCTCPHarness(t, DCTCPConfig{G: g, InitAlpha: 1}, 10)
		h.ack(false)
		prev := h.d.Alpha()
		for n := 2; n <= 200; n++ {
			h.window(0)
			want := math.Pow(1-g, float64(n))
			if got := h.d.Alpha(); math.Abs(got-want) > 1e-12*want {
				t.Fatalf("g %v, window %d: alpha: want (1-g)^n = %.15g, got %.15g", g, n, want, got)
			}
			if h.d.Alpha() >= prev {
				t.Fatalf("g %v, window %d: alpha did not decrease: %v -> %v", g, n, prev, h.d.Alpha())
			}
			prev = h.d.Alpha()
		}
		if prev > 1e-5 {
			t.Fatalf("g %v: alpha after 200 clean windows: want < 1e-5, got %v", g, prev)
		}
	}
}

// RFC 8257 §3.3 step 8: on ECE, cwnd = cwnd * (1 - alpha/2) (and ssthresh
// with it, RFC 3168 §6.1.2), at least 2*SMSS.
func TestDCTCP_RFC8257_3_3_ECNReduction(t *testing.T) {
	cases := []struct {
		alpha      float64
		initCwnd   int64
		wantCwnd   int64
		derivation string
	}{
		{1, 10, 5000, "10000 * (1 - 1/2)"},
		{0.5, 10, 7500, "10000 * (1 - 1/4)"},
		{1.0 / 16, 32, 31000, "32000 * (1 - 1/32)"},
		{0.25, 10, 8750, "10000 * (1 - 1/8)"},
		{1, 3, 2000, "max(3000 * 1/2, 2*SMSS)"},
	}
	for _, c := range cases {
		d := NewDCTCP(DCTCPConfig{G: dctcpDefaultG, InitAlpha: c.alpha}, 1000, c.initCwnd)
		d.OnCongestion(&CongestionEvent{Kind: CongECN, FlightSize: c.initCwnd * 1000, MSS: 1000})
		if got := d.Cwnd(); got != c.wantCwnd {
			t.Errorf("alpha %v, cwnd %d: want %s = %d, got %d", c.alpha, c.initCwnd*1000, c.derivation, c.wantCwnd, got)
		}
		if got := d.Ssthresh(); got != c.wantCwnd {
			t.Errorf("alpha %v: ssthresh: want %d, got %d", c.alpha, c.wantCwnd, got)
		}
		if got := d.Alpha(); got != c.alpha {
			t.Errorf("a reduction changed alpha: want %v, got %v", c.alpha, got)
		}
	}
}

// The reduction uses the alpha of the window that just closed: after the
// windows of TestDCTCP_RFC8257_3_3_AlphaEWMA, alpha = 3751/4096 and a
// 20-segment window becomes 20000 * (1 - 3751/8192) = 10842.29 -> 10843
// (the cut, 9157.71, is rounded down as Linux's shift does).
func TestDCTCP_RFC8257_3_3_ReductionUsesCurrentAlpha(t *testing.T) {
	d := NewDCTCP(DCTCPConfig{G: dctcpDefaultG, InitAlpha: 3751.0 / 4096}, 1000, 20)
	d.OnCongestion(&CongestionEvent{Kind: CongECN, FlightSize: 20000, MSS: 1000})
	if got := d.Cwnd(); got != 10843 {
		t.Fatalf("cwnd: want 20000 - floor(20000*3751/8192) = 10843, got %d", got)
	}
}

// RFC 8257 §3.5: loss is handled as conventional TCP: ssthresh =
// max(FlightSize/2, 2*SMSS), cwnd = ssthresh (RFC 5681 eq. 4), whatever
// alpha is; an RTO leaves 1 SMSS.
func TestDCTCP_RFC8257_3_5_LossHalves(t *testing.T) {
	for _, alpha := range []float64{0.01, 0.5, 1} {
		d := NewDCTCP(DCTCPConfig{G: dctcpDefaultG, InitAlpha: alpha}, 1000, 20)
		d.OnCongestion(&CongestionEvent{Kind: CongLoss, FlightSize: 20000, MSS: 1000})
		if got := d.Cwnd(); got != 10000 {
			t.Errorf("alpha %v: cwnd after loss: want 20000/2 = 10000, got %d", alpha, got)
		}
		if st := d.State().String(); st != "recovery" {
			t.Errorf("state after loss: want recovery, got %q", st)
		}
		d.OnRecoveryExit(0)
		if st := d.State().String(); st != "congestion-avoidance" {
			t.Errorf("state after recovery: want congestion-avoidance, got %q", st)
		}
		d.OnCongestion(&CongestionEvent{Kind: CongRTO, FlightSize: 10000, MSS: 1000})
		if got, gotSs := d.Cwnd(), d.Ssthresh(); got != 1000 || gotSs != 5000 {
			t.Errorf("alpha %v: after RTO: want cwnd 1000, ssthresh 5000, got %d, %d", alpha, got, gotSs)
		}
	}
}

// RFC 8257 §3.4: without marks, DCTCP's window grows exactly as Reno's
// (RFC 5681 slow start and congestion avoidance).
func TestDCTCP_RFC8257_3_4_GrowsLikeReno(t *testing.T) {
	d := NewDCTCP(DefaultDCTCPConfig(), 1000, 10)
	r := NewReno(1000, 10)
	var una uint64
	step := func(i int, acked int64) {
		una += uint64(acked)
		ev := AckEvent{Acked: acked, MSS: 1000, SndUna: una, SndNxt: una + 10000}
		d.OnAck(&ev)
		r.OnAck(&ev)
		if d.Cwnd() != r.Cwnd() || d.Ssthresh() != r.Ssthresh() {
			t.Fatalf("ACK %d: want Reno's cwnd %d ssthresh %d, got %d %d", i, r.Cwnd(), r.Ssthresh(), d.Cwnd(), d.Ssthresh())
		}
	}
	for i := range 30 {
		step(i, 1000)
	}
	loss := CongestionEvent{Kind: CongLoss, FlightSize: 30000, MSS: 1000}
	d.OnCongestion(&loss)
	r.OnCongestion(&loss)
	d.OnRecoveryExit(0)
	r.OnRecoveryExit(0)
	for i := range 200 {
		step(30+i, int64(500+i%3*700))
	}
}

func TestDCTCP_Config(t *testing.T) {
	d := NewDCTCP(DefaultDCTCPConfig(), 1000, 10)
	if d.g != 1.0/16 || d.Alpha() != 1 {
		t.Fatalf("default config: want g 1/16 and alpha 1 (Linux dctcp_alpha_on_init), got g %v alpha %v", d.g, d.Alpha())
	}
	// g must be in (0, 1]: 0 is no longer "the default" but an error.
	for _, c := range []DCTCPConfig{{G: 0, InitAlpha: 1}, {G: -0.1, InitAlpha: 1}, {G: 1.5, InitAlpha: 1},
		{G: math.NaN(), InitAlpha: 1}, {G: 0.5, InitAlpha: 2}, {G: 0.5, InitAlpha: -1}, {G: 0.5, InitAlpha: math.NaN()}} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v): want an error, got nil", c)
		}
	}
	for _, c := range []DCTCPConfig{{G: 1, InitAlpha: 1}, {G: 1.0 / 256, InitAlpha: 0.5}, {G: 1.0 / 16, InitAlpha: 0}} {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v): want nil, got %v", c, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("NewDCTCP with g = 0: want a panic (precondition), got none")
		}
	}()
	NewDCTCP(DCTCPConfig{G: 0, InitAlpha: 1}, 1000, 10)
}

// RFC 8257 §4 leaves the initial alpha open; 0 is valid (Linux
// dctcp_alpha_on_init, ns-3 DctcpAlphaOnInit) and must stay 0: the first
// reduction before any window closes is cwnd * (1 - 0/2), no cut at all
// (the 2*SMSS floor aside), where alpha = 1 would halve.
func TestDCTCP_RFC8257_4_InitAlphaZero(t *testing.T) {
	d := NewDCTCP(DCTCPConfig{G: dctcpDefaultG, InitAlpha: 0}, 1000, 10)
	if got := d.Alpha(); got != 0 {
		t.Fatalf("init_alpha 0: want alpha 0, got %v", got)
	}
	d.OnCongestion(&CongestionEvent{Kind: CongECN, FlightSize: 10000, MSS: 1000})
	if got := d.Cwnd(); got != 10000 {
		t.Fatalf("ECN cut with alpha 0: want cwnd 10000 * (1 - 0/2) = 10000, got %d", got)
	}
	// A first window with every byte marked: alpha = 0*(15/16) + 1/16.
	d.OnAck(&AckEvent{Acked: 1000, ECE: true, MSS: 1000, SndUna: 1000, SndNxt: 10000})
	if got := d.Alpha(); math.Abs(got-1.0/16) > 1e-15 {
		t.Fatalf("alpha after a fully marked window: want 1/16, got %v", got)
	}
}

// go test ./cc/ -run - -bench DCTCP -benchmem
func BenchmarkDCTCPOnAck(b *testing.B) {
	for _, marked := range []bool{false, true} {
		b.Run(fmt.Sprintf("ece=%v", marked), func(b *testing.B) {
			d := NewDCTCP(DefaultDCTCPConfig(), 1460, 10)
			ev := AckEvent{Acked: 1460, MSS: 1460, ECE: marked}
			b.ReportAllocs()
			for b.Loop() {
				ev.SndUna += 1460
				ev.SndNxt = ev.SndUna + 10*1460
				d.OnAck(&ev)
			}
		})
	}
}

// TestDCTCP_DeclaresECNDriven: DCTCP and DCQCN need ECN (a scenario
// without it is refused); loss-driven controllers do not.
func TestDCTCP_DeclaresECNDriven(t *testing.T) {
	for _, name := range ControllerNames {
		got := Describe(Config{CC: name, Recovery: "reno"}).NeedsECN
		if want := name == "dctcp" || name == "dcqcn"; got != want {
			t.Errorf("Describe(%s).NeedsECN = %v, want %v", name, got, want)
		}
	}
}
