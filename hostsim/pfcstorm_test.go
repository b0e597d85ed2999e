package hostsim

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// stormRx is newRx (host 0 receives flow 0 over a 100 Gb/s link) with a
// receive pipeline that stalls from 10us to 200us: XOFF 5000 bytes, XON
// 2000, headroom 3000, 1000 quanta (5.12us at 100 Gb/s, refreshed every
// 2.56us), class 0 lossless.
func stormRx(t *testing.T, drain sim.Bandwidth, watchdog sim.Time) *rxHarness {
	t.Helper()
	x := newRx(t, DefaultConfig())
	s := Storm{At: 10 * sim.Microsecond, Until: 200 * sim.Microsecond, Drain: drain, XOFF: 5000, XON: 2000,
		Headroom: 3000, Quanta: 1000, Lossless: 1, Watchdog: watchdog}
	if err := x.h.SetStorm(x.e, s); err != nil {
		t.Fatal(err)
	}
	return x
}

// split separates what reached the sink into PAUSE frames and the rest.
func split(ps []sim.Packet) (pauses, acks []sim.Packet) {
	for _, p := range ps {
		if p.Flags&sim.FlagPause != 0 {
			pauses = append(pauses, p)
		} else {
			acks = append(acks, p)
		}
	}
	return pauses, acks
}

// TestStorm_StalledPipelinePausesUntilTheStallEnds: before the stall a
// packet is acknowledged at once. From 10us nothing is delivered: the 5th
// packet of 1040 bytes takes class 0 over XOFF (5200 > 5000) and the NIC
// sends an XOFF of 1000 quanta, refreshed every 2.56us; the 8th would
// exceed XOFF + headroom and is dropped. At 200us the 7 buffered packets
// are delivered at once and acknowledged, and an XON follows.
func TestStorm_StalledPipelinePausesUntilTheStallEnds(t *testing.T) {
	x := stormRx(t, 0, 0)
	x.data(0, 0)
	if _, acks := split(x.acks); len(acks) != 1 {
		t.Fatalf("before the stall: want 1 ACK, got %d", len(acks))
	}
	x.drain(10 * sim.Microsecond)
	var xoffAt sim.Time
	for i := 1; i <= 8; i++ {
		if i == 5 {
			xoffAt = x.e.Now()
		}
		x.data(i, 0)
	}
	x.drain(199 * sim.Microsecond)
	pauses, acks := split(x.acks)
	if len(acks) != 1 || x.h.RxDrops() != 1 || x.h.PFC(0).RxDrops != 1 || x.h.pfc.rx.q.Len() != 7 {
		t.Fatalf("during the stall: want no new ACK, 1 drop, 7 packets buffered; got %d ACKs, %d drops, %d buffered",
			len(acks)-1, x.h.RxDrops(), x.h.pfc.rx.q.Len())
	}
	if len(pauses) == 0 || pauses[0].PauseQuanta(0) != 1000 || pauses[0].Bitmap != 1 {
		t.Fatalf("want an XOFF of 1000 quanta for class 0, got %+v", pauses)
	}
	if k := x.h.PFC(0); k.FirstPauseSent != xoffAt {
		t.Fatalf("want the first XOFF when the 5th packet arrived (%v), got %v", xoffAt, k.FirstPauseSent)
	}
	x.drain(300 * sim.Microsecond)
	pauses, acks = split(x.acks)
	// XOFF at xoffAt, refreshes every 2.56us while before 200us, an XON.
	refresh := 1000 * (100 * sim.GbitPerSecond).TxTime(64) / 2
	want := 1 + int((200*sim.Microsecond-1-xoffAt)/refresh) + 1
	if len(pauses) != want || x.h.PausesSent() != uint64(want) {
		t.Fatalf("want %d PAUSE frames (XOFF, refreshes every %v, XON), got %d (counted %d)", want, refresh, len(pauses), x.h.PausesSent())
	}
	if last := pauses[len(pauses)-1]; last.PauseQuanta(0) != 0 {
		t.Fatalf("want the last PAUSE frame an XON, got %d quanta", last.PauseQuanta(0))
	}
	if len(acks) != 8 || acks[len(acks)-1].Ack != 8*rxMSS {
		t.Fatalf("after the stall: want 7 more ACKs up to segment 8, got %d ACKs, last %d", len(acks)-1, acks[len(acks)-1].Ack/rxMSS)
	}
	if x.h.Queued() != 0 || x.e.Pool.Live() != 0 {
		t.Fatalf("want nothing left, got %d queued, %d live packets", x.h.Queued(), x.e.Pool.Live())
	}
}

// TestStorm_SlowPipelineDrainsAtItsRate: a pipeline draining 1 Gb/s
// (a slow receiver, Guo et al. §4.4) processes a 1040-byte packet in
// 8.32us. Five packets arriving at 10us take class 0 over XOFF; the k-th
// is delivered and acknowledged at 10us + k x 8.32us; when the 4th is
// processed 1040 bytes are left (<= XON 2000) and the XON leaves first,
// ahead of that packet's ACK.
func TestStorm_SlowPipelineDrainsAtItsRate(t *testing.T) {
	x := stormRx(t, sim.GbitPerSecond, 0)
	x.drain(10 * sim.Microsecond)
	t1 := x.e.Now()
	for i := 0; i < 5; i++ {
		x.data(i, 0)
	}
	x.drain(150 * sim.Microsecond)
	proc := sim.GbitPerSecond.TxTime(1040)
	wire := (100 * sim.GbitPerSecond).TxTime(64) // a PAUSE or an ACK (64 bytes)
	type frame struct {
		pause bool
		at    sim.Time
	}
	var got []frame
	for i, p := range x.acks {
		if p.Flags&sim.FlagPause == 0 || p.PauseQuanta(0) == 0 {
			got = append(got, frame{p.Flags&sim.FlagPause != 0, x.at[i]})
		}
	}
	want := []frame{{false, t1 + proc + wire}, {false, t1 + 2*proc + wire}, {false, t1 + 3*proc + wire},
		{true, t1 + 4*proc + wire}, {false, t1 + 4*proc + 2*wire}, {false, t1 + 5*proc + wire}}
	if len(got) != len(want) {
		t.Fatalf("want 5 ACKs and an XON, got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("frame %d: want %+v, got %+v", i, want[i], got[i])
		}
	}
	if k := x.h.PFC(0); k.FirstPauseSent != t1+40*sim.Nanosecond {
		t.Errorf("want the XOFF when the 5th packet arrived (%v), got %v", t1+40*sim.Nanosecond, k.FirstPauseSent)
	}
}

// TestStorm_NICWatchdogStopsThePauses: with a 20us NIC watchdog the
// pipeline, stalled since the first packet was buffered at 10us, trips it
// at the first refresh 20us later: no PAUSE frame after that (the last
// pause expires), no XON either, and the NIC may pause again once the
// stall ends and it delivers.
func TestStorm_NICWatchdogStopsThePauses(t *testing.T) {
	x := stormRx(t, 0, 20*sim.Microsecond)
	x.drain(10 * sim.Microsecond)
	for i := 0; i < 5; i++ {
		x.data(i, 0)
	}
	xoffAt := x.h.PFC(0).FirstPauseSent
	x.drain(300 * sim.Microsecond)
	pauses, acks := split(x.acks)
	refresh := 1000 * (100 * sim.GbitPerSecond).TxTime(64) / 2
	// Refreshes at xoffAt + k x 2.56us; the first at or after 30us trips.
	trip := xoffAt + (30*sim.Microsecond-xoffAt+refresh-1)/refresh*refresh
	n := int((trip - xoffAt) / refresh) // the XOFF and the refreshes before the trip
	k := x.h.PFC(0)
	if len(pauses) != n || k.Trips != 1 || k.Restores != 1 {
		t.Fatalf("want %d PAUSE frames (the XOFF and the refreshes before %v), 1 trip and 1 restore, got %d, %d, %d",
			n, trip, len(pauses), k.Trips, k.Restores)
	}
	if last := x.at[len(x.at)-len(acks)-1]; last >= trip {
		t.Fatalf("a PAUSE frame at %v, after the trip at %v", last, trip)
	}
	if len(acks) != 5 {
		t.Fatalf("want the 5 packets acknowledged after the stall, got %d", len(acks))
	}
}
