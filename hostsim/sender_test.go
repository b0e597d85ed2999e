package hostsim

import (
	"slices"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// pairRun runs one flow between two hosts joined by a direct link and
// returns the inter-arrival gaps of data packets at the receiver from the
// n-th packet on. The link has no queue to re-space packets: what arrives
// is what the sender's pacing and bursts made.
func pairRun(t *testing.T, cfg Config, segs int, skip int) []sim.Time {
	t.Helper()
	cfg.MTU, cfg.Header = 1500, 0
	cfg.RTO.Min = 10 * sim.Millisecond
	links := []sim.LinkSpec{
		{From: 0, To: 1, Rate: 100 * sim.GbitPerSecond, Delay: 500 * sim.Microsecond},
		{From: 1, To: 0, Rate: 100 * sim.GbitPerSecond, Delay: 500 * sim.Microsecond},
	}
	e, err := sim.NewEngine(1, 2, links, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTransport(cfg, []FlowSpec{{ID: 0, Src: 0, Dst: 1, Size: int64(segs) * 1500}}, func(int) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	hosts := []*Host{NewHost(0, 0, 0, tr), NewHost(1, 1, 1, tr)}
	hosts[0].ScheduleStarts(e)
	var arrivals []sim.Time
	for {
		ev, ok := e.Next(sim.Second)
		if !ok {
			break
		}
		h := hosts[ev.Dst]
		switch ev.Kind {
		case sim.EvArrive:
			if ev.Dst == 1 {
				arrivals = append(arrivals, ev.At)
			}
			h.OnArrive(e, ev.Pkt)
		case sim.EvTxDone:
			h.OnTxDone(e)
		case sim.EvTimer:
			h.OnTimer(e, &ev)
		}
	}
	if !tr.Records[0].Finished {
		t.Fatal("flow did not finish")
	}
	var gaps []sim.Time
	for i := skip + 1; i < len(arrivals); i++ {
		gaps = append(gaps, arrivals[i]-arrivals[i-1])
	}
	return gaps
}

const serTime = 120 * sim.Nanosecond // 1500 B at 100 Gb/s

func backToBack(gaps []sim.Time) float64 {
	n := 0
	for _, g := range gaps {
		if g == serTime {
			n++
		}
	}
	return float64(n) / float64(len(gaps))
}

func median(gaps []sim.Time) sim.Time {
	g := slices.Clone(gaps)
	slices.Sort(g)
	return g[len(g)/2]
}

func TestSender_UnpacedKeepsLineRateBursts(t *testing.T) {
	gaps := pairRun(t, DefaultConfig(), 3000, 100)
	if f := backToBack(gaps); f < 0.9 {
		t.Fatalf("unpaced: %.2f of data packets arrive back to back, want >= 0.9 (ACK clocking keeps the initial burst)", f)
	}
}

func TestSender_LinuxPacingSpacesPackets(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Pacing.Enabled = true
	gaps := pairRun(t, cfg, 3000, 100)
	// Slow start paces at 2*cwnd/srtt (tcp_pacing_ss_ratio): with cwnd
	// below half the 8333-packet BDP (1 ms RTT) the gap is several serialisation times.
	if f := backToBack(gaps); f > 0.2 {
		t.Fatalf("paced: %.2f of data packets back to back, want <= 0.2", f)
	}
	if m := median(gaps); m < 2*serTime {
		t.Fatalf("paced: median gap %v, want >= %v", m, 2*serTime)
	}
}

func TestSender_TSOBurstsLeaveBackToBack(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Pacing.Enabled = true
	cfg.TSOSegments = 16
	gaps := pairRun(t, cfg, 3000, 100)
	// Bursts of 16: 15 of every 16 gaps are one serialisation time.
	if f := backToBack(gaps); f < 0.8 {
		t.Fatalf("paced 16-segment bursts: %.2f back to back, want >= 0.8 (15/16 = 0.94)", f)
	}
	if slices.Max(gaps) < 16*serTime {
		t.Fatalf("largest gap %v, want bursts separated by >= %v", slices.Max(gaps), 16*serTime)
	}
}

// TestSender_HoldBack: with HoldBack 2 (htsim PR #4's queuesize(flow) > 2)
// a sender stops while its NIC queue holds more than two packets and goes
// on as it drains, so the queue never exceeds three; without it the whole
// initial window (and slow start's growth) waits in the NIC.
func TestSender_HoldBack(t *testing.T) {
	peak := func(hold int) int {
		cfg := DefaultConfig()
		cfg.MTU, cfg.Header = 1500, 0
		cfg.CC.InitCwnd = 20
		cfg.HoldBack = hold
		links := []sim.LinkSpec{
			{From: 0, To: 1, Rate: 10 * sim.GbitPerSecond, Delay: sim.Microsecond},
			{From: 1, To: 0, Rate: 10 * sim.GbitPerSecond, Delay: sim.Microsecond},
		}
		e, err := sim.NewEngine(1, 2, links, nil)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := NewTransport(cfg, []FlowSpec{{ID: 0, Src: 0, Dst: 1, Size: 100 * 1500}}, func(int) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		hosts := []*Host{NewHost(0, 0, 0, tr), NewHost(1, 1, 1, tr)}
		hosts[0].ScheduleStarts(e)
		most := 0
		for ev, ok := e.Next(sim.Second); ok; ev, ok = e.Next(sim.Second) {
			h := hosts[ev.Dst]
			switch ev.Kind {
			case sim.EvArrive:
				h.OnArrive(e, ev.Pkt)
			case sim.EvTxDone:
				h.OnTxDone(e)
			case sim.EvTimer:
				h.OnTimer(e, &ev)
			}
			most = max(most, hosts[0].Queued())
		}
		if !tr.Records[0].Finished {
			t.Fatalf("hold %d: the flow did not finish", hold)
		}
		return most
	}
	if got := peak(2); got != 3 {
		t.Fatalf("with hold-back 2 the NIC queue peaked at %d packets, want 3", got)
	}
	if got := peak(0); got < 19 {
		t.Fatalf("without hold-back the NIC queue peaked at %d, want at least 19 (the initial window less the one in service)", got)
	}
}
