package hostsim

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// pacedRun runs flows of dcqcn senders on host 0 to host 1 over a direct
// 40 Gb/s link. At cnpAt (if positive) flow 0's sender gets a CNP. It
// returns the data arrivals at host 1 (time and flow), the transport and
// the largest number of packets the sending NIC's FIFO held.
func pacedRun(t *testing.T, sizes []int64, cnpAt sim.Time) (arr []arrival, tr *Transport, maxFIFO int) {
	t.Helper()
	cfg := roceConfig("gbn")
	cfg.MTU, cfg.Header = 1000, 0
	cfg.RTO = DefaultConfig().RTO
	links := []sim.LinkSpec{
		{From: 0, To: 1, Rate: 40 * sim.GbitPerSecond, Delay: sim.Microsecond},
		{From: 1, To: 0, Rate: 40 * sim.GbitPerSecond, Delay: sim.Microsecond},
	}
	e, err := sim.NewEngine(1, 2, links, nil)
	if err != nil {
		t.Fatal(err)
	}
	var flows []FlowSpec
	for i, sz := range sizes {
		flows = append(flows, FlowSpec{ID: int32(i), Src: 0, Dst: 1, Size: sz, LineRate: 40 * sim.GbitPerSecond})
	}
	tr, err = NewTransport(cfg, flows, func(int) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	hosts := []*Host{NewHost(0, 0, 0, tr), NewHost(1, 1, 1, tr)}
	hosts[0].ScheduleStarts(e)
	injected := cnpAt <= 0
	for {
		ev, ok := e.Next(sim.Second)
		if !ok {
			break
		}
		if !injected && ev.At >= cnpAt {
			injected = true
			tr.senders[0].onCNP(hosts[0], e)
		}
		h := hosts[ev.Dst]
		switch ev.Kind {
		case sim.EvArrive:
			if ev.Dst == 1 {
				p := e.Pool.Get(ev.Pkt)
				arr = append(arr, arrival{ev.At, p.Flow})
			}
			h.OnArrive(e, ev.Pkt)
		case sim.EvTxDone:
			h.OnTxDone(e)
		case sim.EvTimer:
			h.OnTimer(e, &ev)
		}
		maxFIFO = max(maxFIFO, hosts[0].Queued())
	}
	for i := range flows {
		if !tr.Records[i].Finished {
			t.Fatalf("flow %d did not finish", i)
		}
	}
	return arr, tr, maxFIFO
}

type arrival struct {
	at   sim.Time
	flow int32
}

const tx40 = 200 * sim.Nanosecond // 1000 B at 40 Gb/s

// TestPaced_LineRateNeedsNoPaceTimer: a rate-based flow at line rate
// sends back to back, pulled by the NIC: no pacing event at all.
func TestPaced_LineRateNeedsNoPaceTimer(t *testing.T) {
	arr, tr, _ := pacedRun(t, []int64{1_000_000}, 0)
	for i := 1; i < len(arr); i++ {
		if g := arr[i].at - arr[i-1].at; g != tx40 {
			t.Fatalf("arrival %d: gap %v, want back to back (%v)", i, g, tx40)
		}
	}
	if tr.Rate.PaceTimers != 0 {
		t.Fatalf("%d pace timers at line rate, want 0", tr.Rate.PaceTimers)
	}
}

// TestPaced_NICSharesRoundRobin: two rate-based flows of one host at line
// rate each get half of the link, alternating packet by packet, and the
// NIC's FIFO never holds their data (the NIC pulls; hostsim/paced.go).
func TestPaced_NICSharesRoundRobin(t *testing.T) {
	arr, _, maxFIFO := pacedRun(t, []int64{500_000, 500_000}, 0)
	// Until the first flow ends the arrivals alternate and the link is
	// never idle. (Both start at 0: flow 0's first packet leaves before
	// flow 1 exists, and flow 0 queues for the NIC first, so the
	// alternation starts with the third packet.)
	n := 0
	for i := 2; i < len(arr) && n < 400; i++ {
		if arr[i].flow == arr[i-1].flow || arr[i].at-arr[i-1].at != tx40 {
			t.Fatalf("arrival %d: flow %d %v after flow %d, want the other flow back to back", i, arr[i].flow, arr[i].at-arr[i-1].at, arr[i-1].flow)
		}
		n++
	}
	if maxFIFO > 2 {
		t.Fatalf("the NIC FIFO held %d packets, want only control packets (<= 2)", maxFIFO)
	}
}

// TestPaced_RateCutSpacesPackets: after a CNP (alpha = 1 at the first:
// Rc = 20 Gb/s, Zhu et al. 2015 eq. 1) the flow's packets are 8000 bits /
// 20 Gb/s = 400 ns apart, each release a pace timer.
func TestPaced_RateCutSpacesPackets(t *testing.T) {
	cnpAt := 10 * sim.Microsecond
	arr, tr, _ := pacedRun(t, []int64{200_000}, cnpAt)
	// Packets sent after the CNP arrive one link delay later; skip the
	// one in flight at the cut, then ten gaps must be 400 ns (the timer
	// raises the rate only 55 us after the cut).
	k := 0
	for arr[k].at < cnpAt+sim.Microsecond+tx40 {
		k++
	}
	for i := k + 1; i < k+11; i++ {
		if g := arr[i].at - arr[i-1].at; g != 2*tx40 {
			t.Fatalf("arrival %d after the cut: gap %v, want %v", i, g, 2*tx40)
		}
	}
	if tr.Rate.PaceTimers < 10 {
		t.Fatalf("%d pace timers below line rate, want one per packet (>= 10)", tr.Rate.PaceTimers)
	}
}
