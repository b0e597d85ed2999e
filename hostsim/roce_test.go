package hostsim

import (
	"slices"
	"strconv"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func roceConfig(recovery string) Config {
	cfg := DefaultConfig()
	cfg.CC.CC, cfg.CC.Recovery, cfg.ECN = "dcqcn", recovery, true
	return cfg
}

// kinds summarises what reached the sink: "A<n>" an ACK of n segments,
// "N<n>" a NAK expecting segment n ("N<n>[a,b)" with selective repeat's
// block), "C" a CNP.
func kinds(ps []sim.Packet) []string {
	var out []string
	for _, p := range ps {
		switch {
		case p.Flags&sim.FlagCNP != 0:
			out = append(out, "C")
		case p.Flags&sim.FlagNack != 0:
			s := "N" + itoa(p.Ack/rxMSS)
			if p.NSack > 0 {
				s += "[" + itoa(p.Sack[0].Start/rxMSS) + "," + itoa(p.Sack[0].End/rxMSS) + ")"
			}
			out = append(out, s)
		default:
			out = append(out, "A"+itoa(p.Ack/rxMSS))
		}
	}
	return out
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// TestRoCE_IBTA_9_7_5_2_8_GoBackNOneNakPerGap: a go-back-N responder drops
// out-of-order packets and sends one NAK (PSN sequence error) per gap,
// with the expected sequence; a new gap (a new expected sequence) gets its
// own NAK.
func TestRoCE_IBTA_9_7_5_2_8_GoBackNOneNakPerGap(t *testing.T) {
	x := newRx(t, roceConfig("gbn"))
	for _, seg := range []int{0, 2, 3, 4, 1, 3, 2} {
		x.data(seg, 0)
	}
	// 0: ACK 1. 2: NAK expecting 1 (dropped). 3, 4: dropped, no NAK.
	// 1: ACK 2 (2-4 were dropped). 3: a new gap at 2: NAK 2. 2: ACK 3.
	want := []string{"A1", "N1", "A2", "N2", "A3"}
	if got := kinds(x.acks); !slices.Equal(got, want) {
		t.Fatalf("go-back-N responder sent %v, want %v", got, want)
	}
	if x.r.rcvNxt != 3*rxMSS || len(x.r.ooo) != 0 {
		t.Fatalf("rcvNxt %d with %d out-of-order ranges, want 3 segments and none kept", x.r.rcvNxt/rxMSS, len(x.r.ooo))
	}
	if x.h.T.Rate.NAKs != 2 {
		t.Fatalf("NAKs counted %d, want 2", x.h.T.Rate.NAKs)
	}
}

// TestRoCE_IRN_3_1_SelectiveNakPerPacket: a selective-repeat responder
// keeps out-of-order packets and answers each with a NAK carrying the
// cumulative ACK and that packet (IRN §3.1).
func TestRoCE_IRN_3_1_SelectiveNakPerPacket(t *testing.T) {
	x := newRx(t, roceConfig("sr"))
	for _, seg := range []int{0, 2, 3, 1} {
		x.data(seg, 0)
	}
	want := []string{"A1", "N1[2,3)", "N1[3,4)", "A4"}
	if got := kinds(x.acks); !slices.Equal(got, want) {
		t.Fatalf("selective-repeat responder sent %v, want %v", got, want)
	}
}

// TestDCQCN_3_1_NotificationPointOneCNPPerInterval: a marked packet with
// no CNP in the last N (50 us) sends one at once; marks within the window
// of the last CNP send one more when it ends; ACKs carry no ECE (Zhu et
// al. 2015, §3.1).
func TestDCQCN_3_1_NotificationPointOneCNPPerInterval(t *testing.T) {
	x := newRx(t, roceConfig("gbn"))
	t0 := x.e.Now()
	cnps := func() (n int, at []sim.Time) {
		for _, p := range x.acks {
			if p.Flags&sim.FlagCNP != 0 {
				n++
				at = append(at, p.TSval-t0)
			}
			if p.Flags&sim.FlagECE != 0 {
				t.Fatalf("an ACK carries ECE: the notification point sends CNPs instead")
			}
		}
		return n, at
	}
	x.data(0, sim.FlagCE) // CNP at once (t0)
	x.drain(t0 + 10*sim.Microsecond)
	x.data(1, sim.FlagCE) // inside the window: deferred
	x.drain(t0 + 20*sim.Microsecond)
	x.data(2, sim.FlagCE)
	if n, _ := cnps(); n != 1 {
		t.Fatalf("%d CNPs after three marks within 50us, want 1", n)
	}
	x.drain(t0 + 51*sim.Microsecond) // the window ends: one CNP for both
	if n, at := cnps(); n != 2 || at[1] != 50*sim.Microsecond {
		t.Fatalf("CNPs at %v, want two, the second at 50us", at)
	}
	x.drain(t0 + 120*sim.Microsecond)
	x.data(3, 0) // unmarked: nothing
	x.data(4, sim.FlagCE)
	if n, at := cnps(); n != 3 || at[2] != 120*sim.Microsecond+10*sim.Nanosecond {
		t.Fatalf("CNPs at %v, want a third at once (120us + the 10ns step)", at)
	}
	x.drain(t0 + time200us)
	if n, _ := cnps(); n != 3 {
		t.Fatalf("%d CNPs: no mark came after the third, want no deferred one", n)
	}
	if x.h.T.Rate.CNPs != 3 {
		t.Fatalf("CNPs counted %d, want 3", x.h.T.Rate.CNPs)
	}
}

const time200us = 200 * sim.Microsecond
