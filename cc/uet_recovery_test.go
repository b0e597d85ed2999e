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
