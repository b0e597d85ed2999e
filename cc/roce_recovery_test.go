package cc

import (
	"math/rand/v2"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// roceChannel runs a RoCERecovery against a model responder over a FIFO
// path that loses data packets with probability loss (ACKs and NAKs are
// not lost), with at most window segments beyond SndUna. The responder is
// go-back-N (drop out-of-order, one NAK per gap) or selective repeat
// (keep them, a NAK naming each). It returns the segments sent in all and
// the retransmissions of segments the sender had seen selectively
// acknowledged (which selective repeat must never make).
func roceChannel(t *testing.T, mode NakMode, seed uint64, loss float64) (sent, sackedResent int) {
	t.Helper()
	const mss, segs, window = 1000, 400, 32
	size := uint64(segs * mss)
	r := NewRoCERecovery(mode, mss, size)
	rng := rand.New(rand.NewPCG(seed, 9))
	var path []Segment
	rcvNxt := uint64(0)
	have := map[uint64]bool{} // selective repeat's out-of-order segments
	sacked := map[uint64]bool{}
	nakSent, nakFor := false, uint64(0)
	now := sim.Time(0)
	var ai AckInfo
	deliver := func(ack uint64, nak bool, block *sim.SackBlock) {
		ai = AckInfo{Now: now, Ack: ack, Nak: nak, DupCandidate: true}
		if block != nil {
			ai.Sack = []sim.SackBlock{*block}
			sacked[block.Start] = true
		}
		r.OnAck(&ai)
	}
	for step := 0; r.Una < size; step++ {
		if step > 200000 {
			t.Fatalf("mode %d seed %d: no progress (una %d)", mode, seed, r.Una)
		}
		now += sim.Microsecond
		for {
			seg, ok := r.Next()
			if !ok || (!seg.Force && seg.Seq+uint64(seg.Len) > r.Una+window*mss) {
				break
			}
			if seg.Retx && sacked[seg.Seq] && seg.Seq >= r.Una {
				sackedResent++
			}
			r.OnSent(now, seg, RTTInfo{})
			sent++
			if rng.Float64() >= loss {
				path = append(path, seg)
			}
		}
		if len(path) == 0 {
			r.OnRTO(now, RTTInfo{}) // nothing in flight: the timeout
			continue
		}
		seg := path[0]
		path = path[1:]
		switch {
		case seg.Seq == rcvNxt:
			rcvNxt += uint64(seg.Len)
			for have[rcvNxt] {
				delete(have, rcvNxt)
				rcvNxt += mss
			}
			deliver(rcvNxt, false, nil)
		case seg.Seq < rcvNxt:
			deliver(rcvNxt, false, nil) // a duplicate: ACK again
		case mode == NakGoBackN:
			if !nakSent || nakFor != rcvNxt {
				nakSent, nakFor = true, rcvNxt
				deliver(rcvNxt, true, nil)
			}
		default:
			have[seg.Seq] = true
			b := sim.SackBlock{Start: seg.Seq, End: seg.Seq + uint64(seg.Len)}
			deliver(rcvNxt, true, &b)
		}
	}
	return sent, sackedResent
}

// TestRoCE_RecoversEveryLoss: over many loss patterns both recoveries
// deliver every byte; selective repeat never resends a segment it saw
// selectively acknowledged and sends far fewer packets than go-back-N.
func TestRoCE_RecoversEveryLoss(t *testing.T) {
	var gbn, sr int
	for seed := uint64(1); seed <= 20; seed++ {
		g, _ := roceChannel(t, NakGoBackN, seed, 0.05)
		s, bad := roceChannel(t, NakSelective, seed, 0.05)
		if bad > 0 {
			t.Fatalf("seed %d: selective repeat resent %d segments it knew had arrived", seed, bad)
		}
		gbn += g
		sr += s
	}
	t.Logf("packets sent for 8000 segments: go-back-N %d, selective repeat %d", gbn, sr)
	// 400 segments x 20 runs: 8000 needed. With 5% loss selective repeat
	// resends about 5%; go-back-N resends up to a window per loss.
	if sr >= gbn || sr > 8000*12/10 {
		t.Fatalf("sent %d packets with selective repeat and %d with go-back-N for 8000 segments", sr, gbn)
	}
}
