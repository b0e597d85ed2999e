package hostsim

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// rxHarness is a receiving host (element 0) whose NIC link leads to a sink
// (element 1); acks lists what the host sent, in order.
type rxHarness struct {
	t    *testing.T
	e    *sim.Engine
	h    *Host
	r    *Receiver
	acks []sim.Packet
	at   []sim.Time // when each of acks reached the sink
}

const rxMSS = 1000

func newRx(t *testing.T, cfg Config) *rxHarness {
	t.Helper()
	cfg.MTU, cfg.Header = rxMSS+40, 40
	e, err := sim.NewEngine(1, 2, []sim.LinkSpec{{From: 0, To: 1, Rate: 100 * sim.GbitPerSecond}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	flows := []FlowSpec{{ID: 0, Src: 1, Dst: 0, Size: 100 * rxMSS}}
	tr, err := NewTransport(cfg, flows, func(h int) bool { return h == 0 })
	if err != nil {
		t.Fatal(err)
	}
	h := NewHost(0, 0, 0, tr)
	return &rxHarness{t: t, e: e, h: h, r: tr.receivers[0]}
}

// data delivers segment i (bytes [i*MSS, (i+1)*MSS)) at the current time.
func (x *rxHarness) data(i int, flags sim.Flags) {
	p := x.e.Pool.Alloc()
	pk := x.e.Pool.Get(p)
	*pk = sim.Packet{Flow: 0, SrcHost: 1, DstHost: 0, Flags: sim.FlagData | flags, Seq: uint64(i * rxMSS),
		Payload: rxMSS, Size: rxMSS + 40, TSval: x.e.Now()}
	x.h.OnArrive(x.e, p)
	x.drain(x.e.Now() + 10*sim.Nanosecond)
}

// drain runs events before t, collecting ACKs that reach the sink.
func (x *rxHarness) drain(t sim.Time) {
	for {
		ev, ok := x.e.Next(t)
		if !ok {
			if x.e.Now() < t && x.e.NextEventTime() >= t {
				x.e.SetNow(t)
			}
			return
		}
		switch {
		case ev.Kind == sim.EvArrive && ev.Dst == 1:
			x.acks = append(x.acks, *x.e.Pool.Get(ev.Pkt))
			x.at = append(x.at, ev.At)
			x.e.Pool.Free(ev.Pkt)
		case ev.Kind == sim.EvTxDone:
			x.h.OnTxDone(x.e)
		case ev.Kind == sim.EvTimer:
			x.h.OnTimer(x.e, &ev)
		}
	}
}

func blocks(p sim.Packet) [][2]uint64 {
	var b [][2]uint64
	for i := 0; i < int(p.NSack); i++ {
		b = append(b, [2]uint64{p.Sack[i].Start / rxMSS, p.Sack[i].End / rxMSS})
	}
	return b
}

func TestReceiver_RFC2018_4_SackBlocksMostRecentFirst(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SACK = true
	x := newRx(t, cfg)
	for _, seg := range []int{0, 2, 4, 6} {
		x.data(seg, 0)
	}
	last := x.acks[len(x.acks)-1]
	want := [][2]uint64{{6, 7}, {4, 5}, {2, 3}}
	if got := blocks(last); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || last.Ack != rxMSS {
		t.Fatalf("after 0,2,4,6: ack %d blocks %v (in segments), want ack 1 seg and %v", last.Ack/rxMSS, got, want)
	}
	// Segment 3 joins [2,3) and [4,5): that block comes first (it holds the
	// segment that triggered the ACK), then the others by recency.
	x.data(3, 0)
	last = x.acks[len(x.acks)-1]
	want = [][2]uint64{{2, 5}, {6, 7}}
	if got := blocks(last); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("after 3: blocks %v, want %v", got, want)
	}
	// Segment 1 fills the first hole: the cumulative ACK jumps to 5.
	x.data(1, 0)
	last = x.acks[len(x.acks)-1]
	if last.Ack != 5*rxMSS || blocks(last)[0] != [2]uint64{6, 7} {
		t.Fatalf("after 1: ack %d blocks %v, want ack 5 and [[6 7]]", last.Ack/rxMSS, blocks(last))
	}
}

func TestReceiver_RFC5681_4_2_DelayedAckEverySecondSegment(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DelAck = DelAckConfig{Enabled: true, Count: 2, Timeout: 40 * sim.Microsecond}
	x := newRx(t, cfg)
	t0 := x.e.Now() // segment 0's TSval
	x.data(0, 0)
	if len(x.acks) != 0 {
		t.Fatalf("first segment acknowledged at once; want it delayed")
	}
	x.drain(x.e.Now() + 5*sim.Microsecond)
	x.data(1, 0)
	if len(x.acks) != 1 || x.acks[0].Ack != 2*rxMSS {
		t.Fatalf("after two segments: %d acks (last ack %v), want one ACK of 2 segments", len(x.acks), x.acks)
	}
	// RFC 7323 §4.3: echo the timestamp of the earliest unacknowledged segment.
	if x.acks[0].TSecr != t0 {
		t.Fatalf("TSecr %v, want the first segment's TSval %v", x.acks[0].TSecr, t0)
	}
}

func TestReceiver_RFC5681_4_2_DelayedAckTimer(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DelAck = DelAckConfig{Enabled: true, Count: 2, Timeout: 40 * sim.Microsecond}
	x := newRx(t, cfg)
	start := x.e.Now()
	x.data(0, 0)
	x.drain(start + 39*sim.Microsecond)
	if len(x.acks) != 0 {
		t.Fatalf("ACK before the 40us delayed-ACK timeout")
	}
	x.drain(start + 41*sim.Microsecond)
	if len(x.acks) != 1 || x.acks[0].Ack != rxMSS {
		t.Fatalf("after the timeout: %d acks, want one for the segment", len(x.acks))
	}
}

func TestReceiver_RFC5681_4_2_OutOfOrderAckedAtOnce(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DelAck = DelAckConfig{Enabled: true, Count: 2, Timeout: sim.Millisecond}
	x := newRx(t, cfg)
	x.data(1, 0) // a hole at 0
	if len(x.acks) != 1 || x.acks[0].Ack != 0 {
		t.Fatalf("out-of-order segment: %d acks, want an immediate duplicate ACK of 0", len(x.acks))
	}
	x.data(0, 0) // fills the gap
	if len(x.acks) != 2 || x.acks[1].Ack != 2*rxMSS {
		t.Fatalf("gap-filling segment: %d acks, want an immediate ACK of 2 segments", len(x.acks))
	}
}

func TestReceiver_RFC8257_3_2_CEChangeAcksAtOnce(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Echo = EchoPerPacket
	cfg.DelAck = DelAckConfig{Enabled: true, Count: 2, Timeout: sim.Millisecond}
	x := newRx(t, cfg)
	x.data(0, 0)          // held back, CE state false
	x.data(1, sim.FlagCE) // state changes: ACK segment 0 with ECE clear at once
	if len(x.acks) != 1 || x.acks[0].Ack != rxMSS || x.acks[0].Flags&sim.FlagECE != 0 {
		t.Fatalf("on the CE change: %v, want one ACK of segment 0 without ECE", x.acks)
	}
	x.data(2, sim.FlagCE) // second CE segment: the count is reached, ECE set
	if len(x.acks) != 2 || x.acks[1].Ack != 3*rxMSS || x.acks[1].Flags&sim.FlagECE == 0 {
		t.Fatalf("after two CE segments: %v, want an ACK of 3 segments with ECE", x.acks)
	}
}

func TestReceiver_RFC3168_6_1_3_EceUntilCwr(t *testing.T) {
	x := newRx(t, DefaultConfig())
	x.data(0, sim.FlagCE)
	x.data(1, 0)
	x.data(2, sim.FlagCWR)
	ece := func(i int) bool { return x.acks[i].Flags&sim.FlagECE != 0 }
	if !ece(0) || !ece(1) || ece(2) {
		t.Fatalf("ECE on acks = %v %v %v, want true true false (latched until CWR)", ece(0), ece(1), ece(2))
	}
}
