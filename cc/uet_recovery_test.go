package cc

import (
	"math/rand/v2"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func newUET(t *testing.T, mss int64, size uint64, rto sim.Time) *UETRecovery {
	t.Helper()
	r, err := NewUETRecovery(mss, size, rto)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sendAll sends the recovery's next segments at now, n of them.
func sendAll(r *UETRecovery, now sim.Time, n int) {
	for range n {
		seg, ok := r.Next()
		if !ok {
			return
		}
		r.OnSent(now, seg, RTTInfo{})
	}
}

// TestUET_PDS_SackBitmapBaseFollowsTheEcho: the bitmap's first packet is
// max(echoed PSN − 63, cumulative PSN + 1) (htsim UecSink::sackBitmapBase),
// so with a hole far below the echo the bitmap reports the 64 packets up
// to the echoed one.
func TestUET_PDS_SackBitmapBaseFollowsTheEcho(t *testing.T) {
	r := newUET(t, 1000, 200_000, sim.Millisecond)
	sendAll(r, 0, 100)
	// Cumulative 0 (packet 0 missing), echo packet 80: base 17. Bits 0 and
	// 63 set: packets 17 and 80.
	v := r.OnAck(&AckInfo{Ack: 0, Echo: 80_000, EchoValid: true, Nack: true, Bitmap: 1 | 1<<63})
	if v.Acked != 2000 {
		t.Fatalf("acked %d: want packets 17 and 80 (2000 bytes)", v.Acked)
	}
	for _, psn := range []int64{17, 80} {
		if !r.at(psn).acked {
			t.Errorf("packet %d: want acknowledged", psn)
		}
	}
	// Close to the cumulative ACK the base is cum + 1: echo 5, cum 3 ->
	// base 4, bit 1 = packet 5.
	v = r.OnAck(&AckInfo{Ack: 3000, Echo: 5000, EchoValid: true, Nack: true, Bitmap: 0b11})
	if v.Acked != 3000+2000 || !r.at(4).acked || !r.at(5).acked {
		t.Errorf("acked %d: want packets 0-2 cumulatively and 4, 5 by the bitmap (5000 bytes)", v.Acked)
	}
	if v.EnterRecovery || v.SeqState.InRecovery {
		t.Error("holes in the bitmap must not start a recovery: UET infers no loss from them")
	}
	if _, ok := r.Next(); !ok || r.Queued() != 0 {
		t.Errorf("holes are not resent: want new data next and nothing queued, got %d queued", r.Queued())
	}
}

// TestUET_PDS_MatchesReference drives the recovery with random sends,
// ACKs, NACKs and timer expiries and checks it against a brute-force model
// of htsim's send records: pipe, the next deadline (the earliest
// outstanding send + RTO) and the retransmission order (lowest PSN first).
func TestUET_PDS_MatchesReference(t *testing.T) {
	const mss, n = 1000, 60
	rto := 50 * sim.Microsecond
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		r := newUET(t, mss, n*mss, rto)
		type rec struct {
			sent        bool
			at          sim.Time
			acked, lost bool
		}
		ref := make([]rec, n)
		now := sim.Time(0)
		for step := 0; step < 400 && r.Una < n*mss; step++ {
			now += sim.Time(rng.IntN(5000)) * sim.Nanosecond
			switch rng.IntN(4) {
			case 0: // send what Next offers
				seg, ok := r.Next()
				if !ok {
					break
				}
				psn := int(seg.Seq / mss)
				// lowest PSN first among the queued
				for q := 0; q < psn && seg.Retx; q++ {
					if ref[q].lost && !ref[q].acked {
						t.Fatalf("trial %d: resent %d while %d waits", trial, psn, q)
					}
				}
				r.OnSent(now, seg, RTTInfo{})
				ref[psn] = rec{sent: true, at: now} // no longer lost, if it was
			case 1: // an ACK of a random sent packet, cumulative to the first hole
				cum := 0
				for cum < n && ref[cum].acked {
					cum++
				}
				var sent []int
				for i := range ref {
					if ref[i].sent && !ref[i].acked && !ref[i].lost {
						sent = append(sent, i)
					}
				}
				if len(sent) == 0 {
					break
				}
				p := sent[rng.IntN(len(sent))]
				ref[p].acked = true
				for cum < n && ref[cum].acked {
					cum++
				}
				r.OnAck(&AckInfo{Ack: uint64(cum) * mss, Echo: uint64(p) * mss, EchoValid: true})
			case 2: // a NACK of a random packet
				p := rng.IntN(n)
				_, _, ok := r.OnNack(now, uint64(p)*mss)
				want := ref[p].sent && !ref[p].acked && !ref[p].lost
				if ok != want {
					t.Fatalf("trial %d: NACK of %d accepted %v, want %v", trial, p, ok, want)
				}
				if ok {
					ref[p].lost = true
				}
			case 3: // the recovery's timer
				st := r.State()
				if st.Deadline > now {
					break
				}
				r.OnDeadline(now, RTTInfo{})
				for i := range ref {
					if ref[i].sent && !ref[i].acked && !ref[i].lost && ref[i].at+rto <= now {
						ref[i].lost = true
					}
				}
			}
			var pipe int64
			deadline := sim.Never
			for i := range ref {
				if ref[i].sent && !ref[i].acked && !ref[i].lost {
					pipe += mss
					deadline = min(deadline, ref[i].at+rto)
				}
			}
			st := r.State()
			if st.Pipe != pipe || st.Deadline != deadline {
				t.Fatalf("trial %d step %d: pipe %d deadline %v; want %d and %v", trial, step, st.Pipe, st.Deadline, pipe, deadline)
			}
		}
	}
}

// TestUET_PDS_EveryDueTimerAtOnce: packets whose timers expired by the
// deadline all time out in one OnDeadline (htsim one per event, all at the
// same time), with their entropies reported for the path manager.
func TestUET_PDS_EveryDueTimerAtOnce(t *testing.T) {
	r := newUET(t, 1000, 10_000, 100*sim.Microsecond)
	for i := range 3 {
		seg, _ := r.Next()
		seg.Entropy = uint16(10 + i)
		r.OnSent(sim.Time(i)*sim.Microsecond, seg, RTTInfo{})
	}
	if d := r.State().Deadline; d != 100*sim.Microsecond {
		t.Fatalf("deadline %v: want 100us", d)
	}
	v := r.OnDeadline(101500*sim.Nanosecond, RTTInfo{})
	if v.TimedOut != 2000 || r.TimedOut != 2 {
		t.Fatalf("timed out %d bytes (%d packets): want the two due by 101.5us", v.TimedOut, r.TimedOut)
	}
	if e := r.TimedOutEntropies(); len(e) != 2 || e[0] != 10 || e[1] != 11 {
		t.Errorf("timed-out entropies %v: want [10 11]", e)
	}
	if v.Deadline != 102*sim.Microsecond || v.Pipe != 1000 {
		t.Errorf("after: deadline %v pipe %d; want 102us and 1000", v.Deadline, v.Pipe)
	}
	// The two are resent first, lowest first, and their timers restart.
	seg, _ := r.Next()
	if !seg.Retx || seg.Seq != 0 {
		t.Fatalf("next: want packet 0 again, got %+v", seg)
	}
	r.OnSent(110*sim.Microsecond, seg, RTTInfo{})
	if d := r.State().Deadline; d != 102*sim.Microsecond {
		t.Errorf("deadline %v: still packet 2's, 102us", d)
	}
}

// TestUET_PDS_TimerRestartsWhenSerialised: OnSerialise moves a packet's
// timer to when it started serialising; a packet already acknowledged or
// presumed lost keeps what it had.
func TestUET_PDS_TimerRestartsWhenSerialised(t *testing.T) {
	r := newUET(t, 1000, 10_000, 100*sim.Microsecond)
	sendAll(r, 0, 3)
	if d := r.OnSerialise(sim.Microsecond, 0).Deadline; d != 100*sim.Microsecond {
		t.Fatalf("packet 0 serialised at 1us, packets 1 and 2 not yet: deadline %v, want 100us (theirs)", d)
	}
	r.OnSerialise(2*sim.Microsecond, 1000)
	if d := r.OnSerialise(3*sim.Microsecond, 2000).Deadline; d != 101*sim.Microsecond {
		t.Fatalf("all three serialised at 1, 2, 3 us: deadline %v, want 101us", d)
	}
	r.OnAck(&AckInfo{Ack: 1000, Echo: 0, EchoValid: true, Nack: true})
	if _, _, ok := r.OnNack(0, 1000); !ok {
		t.Fatal("NACK of packet 1: want it taken out of the flight")
	}
	if d := r.State().Deadline; d != 103*sim.Microsecond {
		t.Fatalf("packet 0 acknowledged, 1 NACKed: deadline %v, want packet 2's 103us", d)
	}
	// The NACKed packet's stale copy and the acknowledged one leave the
	// timers alone.
	if d := r.OnSerialise(5*sim.Microsecond, 1000).Deadline; d != 103*sim.Microsecond || r.at(1).sentAt != 2*sim.Microsecond {
		t.Errorf("serialising a NACKed packet: deadline %v, sent at %v; want 103us and 2us", d, r.at(1).sentAt)
	}
	if d := r.OnSerialise(5*sim.Microsecond, 0).Deadline; d != 103*sim.Microsecond {
		t.Errorf("serialising an acknowledged packet: deadline %v, want 103us", d)
	}
}

// TestUET_EndpointPerPacketPathAllocatesNothing: NSCC over UET's recovery
// with the mixed load balancer, in steady state: sends, their
// serialisation, ACKs with SACK bitmaps, trim NACKs and their
// retransmissions, and per-packet timeouts allocate nothing
// (docs/adding-a-cc-module.md: the per-packet path).
func TestUET_EndpointPerPacketPathAllocatesNothing(t *testing.T) {
	const mss = 4086
	rec := newUET(t, mss, 1<<40, 100*sim.Microsecond)
	cfg := DefaultNSCCConfig()
	cfg.Header = 64
	paths := PathConfig{Mode: PathMixed, Entropies: 128}
	ep, err := NewEndpoint(EndpointConfig{MSS: mss, Size: 1 << 40, Header: 64, ECN: true,
		RTO: RTOConfig{Mode: RTOFixed, Fixed: 100 * sim.Microsecond}, Paths: &paths, PathBase: 0x1200},
		NewNSCC(cfg, mss), rec)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	now := sim.Time(0)
	var ack Ack
	round := 0
	step := func() {
		round++
		now += sim.Microsecond
		ep.BeginSend()
		for {
			seg, ok := ep.Next(now)
			if !ok {
				break
			}
			ep.OnSent(now, seg, rng)
			ep.OnSerialise(now+100*sim.Nanosecond, seg.Seq)
		}
		st := ep.SeqState()
		// Every round: acknowledge the oldest packet with a bitmap over the
		// next ones, NACK one in the fabric; every 50th, let timers fire.
		una := st.Una
		ack = Ack{Ack: una + mss, Echo: una + 2*mss, EchoValid: true, Nack: true, Bitmap: 0b1,
			TSecr: now - 13*sim.Microsecond, HasTSecr: true, ECE: round%3 == 0, Entropy: uint16(0x1200 + round%128)}
		ep.OnAck(now, &ack)
		ep.OnNack(now, &Nack{Seq: una + 4*mss, Entropy: uint16(0x1200 + round%128), TSecr: now - 20*sim.Microsecond, HasTSecr: true})
		if round%50 == 0 {
			now += 200 * sim.Microsecond
			ep.OnDeadline(now, TimerRecovery)
		}
	}
	for range 2000 { // grow every ring and slice to its steady size
		step()
	}
	// One run of 2000 rounds: AllocsPerRun floors its average, which would
	// hide an allocation in fewer than every round.
	if n := testing.AllocsPerRun(1, func() {
		for range 2000 {
			step()
		}
	}); n != 0 {
		t.Errorf("%v allocations in 2000 rounds, want 0", n)
	}
	if rec.Nacked == 0 || rec.TimedOut == 0 || rec.Retransmissions == 0 {
		t.Errorf("the loop should NACK, time out and retransmit: %d, %d, %d", rec.Nacked, rec.TimedOut, rec.Retransmissions)
	}
}

// TestUET_TimeoutPenalisesTheEntropyItTook: a packet's timeout reaches
// the bitmap load balancer as a timeout of the entropy that packet took
// (the maximum penalty, 15), and the controller loses the packet's bytes.
func TestUET_TimeoutPenalisesTheEntropyItTook(t *testing.T) {
	const mss = 1000
	rec := newUET(t, mss, 100*mss, 100*sim.Microsecond)
	cfg := DefaultNSCCConfig()
	cfg.InitCwnd = 2
	paths := PathConfig{Mode: PathBitmap, Entropies: 8, NoShuffle: true}
	ep, err := NewEndpoint(EndpointConfig{MSS: mss, Size: 100 * mss, ECN: true,
		RTO: RTOConfig{Mode: RTOFixed, Fixed: 100 * sim.Microsecond}, Paths: &paths, PathBase: 0x40},
		NewNSCC(cfg, mss), rec)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var evs []uint16
	for {
		seg, ok := ep.Next(0)
		if !ok {
			break
		}
		evs = append(evs, ep.OnSent(0, seg, rng).Entropy)
	}
	if len(evs) != 2 || evs[0] != 0x40 || evs[1] != 0x41 {
		t.Fatalf("sent entropies %#x: want 0x40, 0x41", evs)
	}
	// Packet 1 is acknowledged; packet 0 times out.
	ep.OnAck(13*sim.Microsecond, &Ack{Ack: 0, Echo: mss, EchoValid: true, Nack: true, Bitmap: 1, Entropy: 0x41,
		TSecr: 0, HasTSecr: true})
	act := ep.OnDeadline(100*sim.Microsecond, TimerRecovery)
	if !act.RTO || rec.TimedOut != 1 {
		t.Fatalf("at 100us: want packet 0 timed out, got %+v (%d)", act, rec.TimedOut)
	}
	if pen := ep.PathManager().uet.pen; pen[0] != bitmapMaxPenalty || pen[1] != 0 {
		t.Errorf("penalties %v: want 15 on entropy 0 (the timed-out packet's), none on 1", pen)
	}
	if ep.Controller().(*NSCC).State() != StateTimeoutDecrease {
		t.Errorf("controller state %v: want timeout-decrease", ep.Controller().(*NSCC).State())
	}
}
