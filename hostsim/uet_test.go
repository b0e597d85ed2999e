package hostsim

import (
	"testing"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// pdsConfig is cc nscc over UET's recovery, whose receivers are PDS ones;
// an ACK is due every 4 packets (4 × 1040 bytes on the wire).
func pdsConfig() Config {
	cfg := DefaultConfig()
	cfg.CC.CC, cfg.CC.Recovery = "nscc", "uet"
	cfg.ECN = true
	cfg.RTO = cc.RTOConfig{Mode: cc.RTOFixed, Fixed: 100 * sim.Microsecond}
	cfg.PDS.AckBytes = 4 * (rxMSS + 40)
	return cfg
}

// pkt delivers a data packet of segment i with flags and entropy ev.
func (x *rxHarness) pkt(i int, flags sim.Flags, ev uint16, mutate func(*sim.Packet)) {
	p := x.e.Pool.Alloc()
	pk := x.e.Pool.Get(p)
	*pk = sim.Packet{Flow: 0, SrcHost: 1, DstHost: 0, Flags: sim.FlagData | flags, Seq: uint64(i * rxMSS),
		Payload: rxMSS, Size: rxMSS + 40, TSval: x.e.Now() - 5*sim.Microsecond, Entropy: ev}
	if mutate != nil {
		mutate(pk)
	}
	x.h.OnArrive(x.e, p)
	x.drain(x.e.Now() + 10*sim.Nanosecond)
}

// TestPDS_UecSink_AckPolicy: the first packet, every 4 packets' bytes, a
// CE mark, an ack request and a duplicate are acknowledged at once; each
// ACK names its packet (Seq, entropy, send time) and carries the
// cumulative ACK (UecSink::processData).
func TestPDS_UecSink_AckPolicy(t *testing.T) {
	x := newRx(t, pdsConfig())
	x.pkt(0, 0, 7, nil) // the first packet: forced
	if len(x.acks) != 1 {
		t.Fatalf("first packet: want an ACK, got %d", len(x.acks))
	}
	a := x.acks[0]
	if a.Ack != rxMSS || a.Seq != 0 || a.Entropy != 7 || a.TSecr != x.e.Now()-10*sim.Nanosecond-5*sim.Microsecond ||
		a.Flags&(sim.FlagECE|sim.FlagTrimmed) != 0 || a.Flags&sim.FlagAck == 0 {
		t.Errorf("ACK %+v: want cum 1000, echo 0, entropy 7, the packet's send time, no ECE", a)
	}
	for i := 1; i <= 3; i++ {
		x.pkt(i, 0, 0, nil)
	}
	if len(x.acks) != 1 {
		t.Fatalf("3 more packets (3120 bytes < 4160): want no new ACK, got %d", len(x.acks)-1)
	}
	x.pkt(4, 0, 3, nil)
	if len(x.acks) != 2 || x.acks[1].Ack != 5*rxMSS || x.acks[1].Seq != 4*rxMSS || x.acks[1].Entropy != 3 {
		t.Fatalf("the 4th packet since the last ACK: want an ACK of 5000 naming packet 4, got %+v", x.acks[len(x.acks)-1])
	}
	x.pkt(5, sim.FlagCE, 0, nil)
	if len(x.acks) != 3 || x.acks[2].Flags&sim.FlagECE == 0 {
		t.Fatal("a CE-marked packet: want an ACK at once with ECE")
	}
	x.pkt(6, sim.FlagAckReq, 0, nil)
	if len(x.acks) != 4 || x.acks[3].Flags&sim.FlagECE != 0 {
		t.Fatal("an ack request: want an ACK at once, without ECE")
	}
	x.pkt(3, 0, 0, nil)
	if len(x.acks) != 5 || x.acks[4].Seq != 3*rxMSS {
		t.Fatal("a duplicate: want an ACK at once naming it")
	}
}

// TestPDS_UecSink_SackBitmapAndDrainedAckRequest: out-of-order packets are
// reported in the bitmap from max(PSN − 63, cum + 1); an ack request that
// finds a hole is answered at once and again when the hole fills.
func TestPDS_UecSink_SackBitmapAndDrainedAckRequest(t *testing.T) {
	x := newRx(t, pdsConfig())
	x.pkt(0, 0, 0, nil)
	x.pkt(2, 0, 0, nil)
	x.pkt(3, 0, 0, nil)
	x.pkt(5, sim.FlagAckReq, 0, nil)
	a := x.acks[len(x.acks)-1]
	// cum 1 (packet 1 missing), echo 5: base = max(5 − 63, 2) = 2; packets
	// 2, 3, 5 are bits 0, 1, 3.
	if len(x.acks) != 2 || a.Ack != rxMSS || a.Seq != 5*rxMSS || a.Bitmap != 0b1011 {
		t.Fatalf("ack request over a hole: want cum 1000, echo 5000, bitmap 0b1011, got %d ACKs, last %+v", len(x.acks), a)
	}
	x.pkt(4, 0, 0, nil) // packet 4: the hole (1) is still open, no ACK due
	if len(x.acks) != 2 {
		t.Fatalf("want no ACK while the hole stays, got %d", len(x.acks))
	}
	x.pkt(1, 0, 0, nil) // the hole fills: the pending request is answered
	if len(x.acks) != 3 || x.acks[2].Ack != 6*rxMSS || x.acks[2].Bitmap != 0 {
		t.Fatalf("the reorder queue drained: want an ACK of 6000 with an empty bitmap, got %+v", x.acks[len(x.acks)-1])
	}
	// Far above the cumulative ACK the bitmap ends at the echoed packet:
	// hole at 6, packets 7 and 80 arrive, 80 marked (an ACK at once):
	// base = max(80 − 63, 7) = 17, so 7 is out of it and 80 is bit 63.
	x.pkt(7, 0, 0, nil)
	x.pkt(80, sim.FlagCE, 0, nil)
	if a := x.acks[len(x.acks)-1]; a.Seq != 80*rxMSS || a.Ack != 6*rxMSS || a.Bitmap != 1<<63 {
		t.Fatalf("echo 80 over a hole at 6: want bitmap 1<<63 (base 17), got %#x (%+v)", a.Bitmap, a)
	}
}

// TestPDS_UecSink_NackNamesTrimmedPacket: a trimmed packet the receiver
// lacks is answered by a NACK naming it, with its entropy and send time,
// and the last-hop bit when the switch that cut it was the last one (its
// Hops noted in Ack); one it has already is SACKed instead.
func TestPDS_UecSink_NackNamesTrimmedPacket(t *testing.T) {
	x := newRx(t, pdsConfig())
	x.pkt(0, 0, 0, nil)
	trim := func(hopsAtTrim, hops uint64) func(*sim.Packet) {
		return func(p *sim.Packet) {
			p.Flags |= sim.FlagTrimmed
			p.Size = 64
			p.Ack, p.Hops = hopsAtTrim, uint8(hops)
		}
	}
	x.pkt(3, sim.FlagCE, 9, trim(3, 6)) // cut in the fabric
	n := x.acks[len(x.acks)-1]
	if n.Flags&sim.FlagTrimmed == 0 || n.Seq != 3*rxMSS || n.Entropy != 9 || n.Bitmap != 0 || n.Flags&sim.FlagECE == 0 {
		t.Fatalf("NACK %+v: want FlagTrimmed (a trim NACK), packet 3, entropy 9, not last hop, ECE (the header was marked)", n)
	}
	x.pkt(4, 0, 2, trim(5, 6)) // cut at the last switch
	if n := x.acks[len(x.acks)-1]; n.Flags&sim.FlagTrimmed == 0 || n.Bitmap != 1 {
		t.Fatalf("NACK %+v: want the last-hop bit", n)
	}
	x.pkt(0, 0, 0, trim(3, 6)) // a trimmed copy of a packet it has
	if a := x.acks[len(x.acks)-1]; a.Flags&sim.FlagTrimmed != 0 || a.Seq != 0 {
		t.Fatalf("a trimmed duplicate: want a SACK naming it, got %+v", a)
	}
	if x.h.Trimmed != 3 {
		t.Errorf("trimmed count %d: want 3", x.h.Trimmed)
	}
	if x.h.TrimNacks != 2 {
		t.Errorf("trim NACKs %d: want 2 (the hosts' generic count)", x.h.TrimNacks)
	}
}

// TestPDS_ConfigNeedsFixedRTOAndPowerOfTwo: recovery uet times packets
// out after a fixed RTO, and UET's load balancing needs a power of two.
func TestPDS_ConfigNeedsFixedRTOAndPowerOfTwo(t *testing.T) {
	cfg := pdsConfig()
	cfg.RTO = cc.DefaultRTOConfig()
	if err := cfg.Validate(); err == nil {
		t.Error("recovery uet with an adaptive RTO: want an error")
	}
	cfg = pdsConfig()
	cfg.STrack = &STrackConfig{Mode: cc.PathBitmap, Entropies: 6}
	if err := cfg.Validate(); err == nil {
		t.Error("bitmap over 6 entropies: want an error")
	}
	cfg = pdsConfig()
	if err := cfg.Validate(); err != nil || cfg.DelAck.Enabled {
		t.Errorf("PDS receivers: want a valid config without delayed ACKs, got %v (delack %v)", err, cfg.DelAck.Enabled)
	}
}

// TestPDS_UecNIC_ControlTenToOneAndSendTime: a UET host keeps ACKs and
// NACKs apart from data and, when both wait, sends ten control packets per
// data packet (UecNIC::doNextEvent); a data packet's send time is when it
// starts serialising.
func TestPDS_UecNIC_ControlTenToOneAndSendTime(t *testing.T) {
	x := newRx(t, pdsConfig())
	queue := func(seq int, data bool) {
		p := x.e.Pool.Alloc()
		pk := x.e.Pool.Get(p)
		*pk = sim.Packet{Flow: 0, SrcHost: 0, DstHost: 1, Seq: uint64(seq), TSval: 0}
		if data {
			pk.Flags, pk.Payload, pk.Size = sim.FlagData, rxMSS, rxMSS+40
		} else {
			pk.Flags, pk.Size = sim.FlagAck, 64
		}
		x.h.send(x.e, p)
	}
	x.e.SetNow(sim.Microsecond)
	for i := range 3 {
		queue(100+i, true)
	}
	for i := range 12 {
		queue(i, false)
	}
	x.drain(x.e.Now() + 10*sim.Microsecond)
	var order []uint64
	for _, p := range x.acks {
		order = append(order, p.Seq)
		if p.Flags&sim.FlagData != 0 && (p.Seq == 100) != (p.TSval == sim.Microsecond) {
			t.Errorf("data %d: send time %v, want when it started serialising (1us for the first only)", p.Seq, p.TSval)
		}
	}
	want := []uint64{100, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 101, 10, 11, 102}
	if len(order) != len(want) {
		t.Fatalf("sent %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("sent %v, want %v (10 control packets per data packet)", order, want)
		}
	}
	if x.h.Queued() != 0 {
		t.Errorf("queued %d after the drain, want 0", x.h.Queued())
	}
}

// TestPDS_FIFONIC_KeepsOneQueue: with FIFONIC a UET host sends in arrival
// order and keeps the enqueue-time stamps.
func TestPDS_FIFONIC_KeepsOneQueue(t *testing.T) {
	cfg := pdsConfig()
	cfg.PDS.FIFONIC = true
	x := newRx(t, cfg)
	for i := range 3 {
		p := x.e.Pool.Alloc()
		pk := x.e.Pool.Get(p)
		*pk = sim.Packet{DstHost: 1, Seq: uint64(i), Flags: sim.FlagData, Payload: rxMSS, Size: rxMSS + 40}
		if i == 1 {
			pk.Flags, pk.Payload, pk.Size = sim.FlagAck, 0, 64
		}
		x.h.send(x.e, p)
	}
	x.drain(x.e.Now() + sim.Microsecond)
	if len(x.acks) != 3 || x.acks[1].Seq != 1 || x.acks[2].TSval != 0 {
		t.Fatalf("want the three in order with their enqueue stamps (0), got %+v", x.acks)
	}
}

// TestPDS_PacketTimerRunsFromSerialisation: a UET sender's per-packet
// timer starts when its packet starts serialising, as uet-htsim's UecSrc
// records a packet when its NIC lets it send, not when the endpoint hands
// the window over. The flow's 100 packets are handed to the NIC at t=0 and
// leave one per 83.2 ns (1040 bytes at 100 Gb/s); once packets 0-9 are
// acknowledged, the earliest timer is packet 10's: 10 × 83.2 ns + 100 us.
func TestPDS_PacketTimerRunsFromSerialisation(t *testing.T) {
	cfg := pdsConfig()
	cfg.MTU, cfg.Header = rxMSS+40, 40
	e, err := sim.NewEngine(1, 2, []sim.LinkSpec{{From: 0, To: 1, Rate: 100 * sim.GbitPerSecond}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTransport(cfg, []FlowSpec{{ID: 0, Src: 0, Dst: 1, Size: 100 * rxMSS}}, func(h int) bool { return h == 0 })
	if err != nil {
		t.Fatal(err)
	}
	x := &rxHarness{t: t, e: e, h: NewHost(0, 0, 0, tr)}
	s := tr.Sender(0)
	s.trySend(x.h, e)
	if d := s.ep.RecoveryDeadline(); d != 100*sim.Microsecond {
		t.Fatalf("deadline before the NIC ran: %v, want 100us (packet 0, handed over at 0)", d)
	}
	x.drain(20 * sim.Microsecond)
	if len(x.acks) != 100 {
		t.Fatalf("%d packets left the NIC by 20us, want all 100", len(x.acks))
	}
	tx := (100 * sim.GbitPerSecond).TxTime(rxMSS + 40)
	for i, p := range x.acks {
		if p.TSval != sim.Time(i)*tx {
			t.Fatalf("packet %d: send time %v, want %v", i, p.TSval, sim.Time(i)*tx)
		}
	}
	ack := sim.Packet{Flow: 0, Flags: sim.FlagAck, SrcHost: 1, DstHost: 0, Ack: 10 * rxMSS, Seq: 9 * rxMSS,
		TSecr: 9 * tx, Entropy: x.acks[9].Entropy}
	s.onAck(x.h, e, &ack, nil)
	if d, want := s.ep.RecoveryDeadline(), 10*tx+100*sim.Microsecond; d != want {
		t.Errorf("deadline after packets 0-9: %v, want packet 10's %v (from its serialisation)", d, want)
	}
}

// TestPDS_UecSink_TrimmedDuplicateKeepsTheByteCount: the SACK a trimmed
// copy of a packet already received gets does not restart the count
// towards the next coalesced ACK (UecSink::processTrimmed leaves
// _accepted_bytes alone; processData's ACKs clear it).
func TestPDS_UecSink_TrimmedDuplicateKeepsTheByteCount(t *testing.T) {
	x := newRx(t, pdsConfig())
	x.pkt(0, 0, 0, nil) // forced: the first packet
	x.pkt(1, 0, 0, nil)
	x.pkt(2, 0, 0, nil)
	x.pkt(3, 0, 0, nil) // 3 × 1040 bytes since the last ACK
	x.pkt(1, 0, 0, func(p *sim.Packet) { p.Flags |= sim.FlagTrimmed; p.Size = 64 })
	if len(x.acks) != 2 || x.acks[1].Seq != rxMSS || x.acks[1].Flags&sim.FlagTrimmed != 0 {
		t.Fatalf("a trimmed duplicate: want a SACK naming it, got %d ACKs", len(x.acks))
	}
	x.pkt(4, 0, 0, nil) // 4 × 1040 = 4160: an ACK is due
	if len(x.acks) != 3 || x.acks[2].Seq != 4*rxMSS {
		t.Fatalf("the 4th packet since the last data ACK: want an ACK naming it, got %d ACKs", len(x.acks))
	}
}

// TestSackBitmap_EqualsThePacketWalk compares sackBitmap's ranges with the
// walk over packets it replaced (bit by bit, up to the first packet that
// does not end inside the interval), on random receive states, flows
// whose last packet is short, and triggers far from the cumulative ACK.
func TestSackBitmap_EqualsThePacketWalk(t *testing.T) {
	walk := func(r *Receiver, psn, mss uint64) uint64 {
		base := max(int64(psn)-63, int64(r.rcvNxt/mss)+1)
		top := base + 64
		var b uint64
		for _, iv := range r.ooo {
			for idx := max(int64((iv.start+mss-1)/mss), base); idx < top; idx++ {
				if min(uint64(idx+1)*mss, r.size) > iv.end {
					break
				}
				b |= 1 << uint(idx-base)
			}
		}
		return b
	}
	rng := sim.NewRand(7, 7)
	for i := 0; i < 20000; i++ {
		mss := uint64(1 + rng.IntN(5000))
		pkts := uint64(1 + rng.IntN(300))
		size := pkts*mss - uint64(rng.IntN(int(mss))) // the last packet may be short
		r := &Receiver{size: size, rcvNxt: uint64(rng.IntN(int(pkts))) * mss}
		at := r.rcvNxt + mss
		for at < size && rng.IntN(4) > 0 {
			s := at + uint64(rng.IntN(3))*mss + uint64(rng.IntN(2))*uint64(rng.IntN(int(mss)))
			e := min(s+uint64(1+rng.IntN(40))*mss-uint64(rng.IntN(2))*uint64(rng.IntN(int(mss))), size)
			if s >= e {
				break
			}
			r.ooo = append(r.ooo, interval{start: s, end: e})
			at = e + 1 + uint64(rng.IntN(int(mss)))
		}
		psn := r.rcvNxt/mss + uint64(rng.IntN(200))
		if got, want := r.sackBitmap(psn, mss), walk(r, psn, mss); got != want {
			t.Fatalf("case %d (mss %d, size %d, cum %d, psn %d, ooo %v): expected %#x (the walk), got %#x",
				i, mss, size, r.rcvNxt, psn, r.ooo, want, got)
		}
	}
}
