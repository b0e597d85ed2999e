package hostsim

import (
	"fmt"
	"testing"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// benchRig is one endless Reno flow whose sender is fed ACKs directly: the
// NIC is held busy so every data packet queues there and is freed after
// the step, and time moves 100 ns per step. What is measured is the
// sender's ACK and send path (endpoint, packet building, timers, NIC
// queue), without links, switches or a receiver.
type benchRig struct {
	e   *sim.Engine
	h   *Host
	s   *Sender
	ack sim.Packet
}

func newBenchRig(b *testing.B, cfg Config) *benchRig {
	b.Helper()
	cfg.RWnd = 256 * (cfg.MTU - cfg.Header) // bounds the window: sends follow ACKs 1:1
	links := []sim.LinkSpec{
		{From: 0, To: 1, Rate: 100 * sim.GbitPerSecond, Delay: sim.Microsecond},
		{From: 1, To: 0, Rate: 100 * sim.GbitPerSecond, Delay: sim.Microsecond},
	}
	e, err := sim.NewEngine(1, 2, links, nil)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := NewTransport(cfg, []FlowSpec{{ID: 0, Src: 0, Dst: 1, Size: 1 << 50}}, func(int) bool { return true })
	if err != nil {
		b.Fatal(err)
	}
	r := &benchRig{e: e, h: NewHost(0, 0, 0, tr), s: tr.Sender(0)}
	r.h.busy = true
	r.advance(100 * sim.Microsecond)
	r.s.trySend(r.h, e)
	r.drain()
	r.ack = sim.Packet{Flow: 0, Flags: sim.FlagAck, DstHost: 0, SrcHost: 1}
	return r
}

// advance moves time by d, dropping the timer events due on the way.
func (r *benchRig) advance(d sim.Time) {
	t := r.e.Now() + d
	for r.e.NextEventTime() <= t {
		r.e.Next(t + 1)
	}
	r.e.SetNow(t)
}

// drain frees what the sender queued on the NIC.
func (r *benchRig) drain() int {
	n := 0
	for r.h.nic.Len() > 0 {
		p, _ := r.h.nic.Take()
		r.e.Pool.Free(p)
		n++
	}
	return n
}

// step delivers one ACK that acknowledges segs more segments.
func (r *benchRig) step(segs int64) int {
	r.advance(100 * sim.Nanosecond)
	r.ack.Ack += uint64(segs * r.h.T.Cfg.CC.MSS)
	r.ack.TSecr = r.e.Now() - 10*sim.Microsecond
	r.s.onAck(r.h, r.e, &r.ack, nil)
	return r.drain()
}

// BenchmarkSenderOnAck is one ACK of one segment and the one segment it
// releases (Reno and NewReno in congestion avoidance, CUBIC, SACK).
//
//	go test ./hostsim -run - -bench Sender -benchmem
func BenchmarkSenderOnAck(b *testing.B) {
	for _, m := range [][2]string{{"reno", "reno"}, {"cubic", "sack"}, {"dctcp", "rack"}, {"nscc", "uet"}} {
		b.Run(fmt.Sprintf("cc=%s/recovery=%s", m[0], m[1]), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.CC.CC, cfg.CC.Recovery = m[0], m[1]
			cfg.SACK = m[1] != "reno" && m[1] != "uet"
			cfg.ECN = true
			if m[1] == "uet" { // per-packet timers, UET's bitmap load balancing
				cfg.RTO = cc.RTOConfig{Mode: cc.RTOFixed, Fixed: 100 * sim.Microsecond}
				cfg.STrack = &STrackConfig{Mode: cc.PathBitmap, Entropies: 128}
			}
			r := newBenchRig(b, cfg)
			for range 10_000 {
				r.step(1)
			}
			b.ReportAllocs()
			for b.Loop() {
				r.step(1)
			}
		})
	}
}

// BenchmarkSenderSend is the send path: each ACK acknowledges 16 segments
// and the sender sends the 16 it releases; segs/op and ns/seg are
// reported.
func BenchmarkSenderSend(b *testing.B) {
	cfg := DefaultConfig()
	cfg.ECN = true
	r := newBenchRig(b, cfg)
	for range 1_000 {
		r.step(16)
	}
	b.ReportAllocs()
	segs := 0
	for b.Loop() {
		segs += r.step(16)
	}
	b.ReportMetric(float64(segs)/float64(b.N), "segs/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(segs), "ns/seg")
}
