package cc_test

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// fixedWindow is the smallest Controller there is: a constant window that
// halves on congestion and never grows again. docs/adding-a-cc-module.md
// walks through what a real module adds to it.
type fixedWindow struct{ cwnd int64 }

var _ cc.Controller = (*fixedWindow)(nil)

// OnAck implements cc.Controller.OnAck: a fixed window ignores ACKs.
func (w *fixedWindow) OnAck(*cc.AckEvent) {}

// OnCongestion implements cc.Controller.OnCongestion.
func (w *fixedWindow) OnCongestion(ev *cc.CongestionEvent) { w.cwnd = max(w.cwnd/2, ev.MSS) }

// OnRecoveryExit implements cc.Controller.OnRecoveryExit.
func (w *fixedWindow) OnRecoveryExit(sim.Time) {}

// Cwnd implements cc.Controller.Cwnd.
func (w *fixedWindow) Cwnd() int64 { return w.cwnd }

// Ssthresh implements cc.Controller.Ssthresh.
func (w *fixedWindow) Ssthresh() int64 { return w.cwnd }

// An Endpoint drives any Controller with any Recovery: here a 4-segment
// fixed window over cumulative-ACK Reno recovery, the way a host does it
// (send what Next allows, record it with OnSent, feed ACKs to OnAck).
func ExampleEndpoint() {
	const mss = 1000
	rec, err := cc.NewRecovery(cc.Config{Recovery: "reno", MSS: mss}, 8*mss)
	if err != nil {
		panic(err)
	}
	ep, err := cc.NewEndpoint(cc.EndpointConfig{MSS: mss, Size: 8 * mss, RTO: cc.DefaultRTOConfig()},
		&fixedWindow{cwnd: 4 * mss}, rec)
	if err != nil {
		panic(err)
	}
	now := sim.Time(0)
	send := func() {
		ep.BeginSend()
		for {
			seg, ok := ep.Next(now)
			if !ok {
				return
			}
			ep.OnSent(now, seg, nil)
			fmt.Printf("t=%v send %d+%d\n", now, seg.Seq, seg.Len)
		}
	}
	send()
	// Every ACK arrives 10 us later and acknowledges one more segment.
	for ack := uint64(mss); !ep.Done(); ack += mss {
		now += 10 * sim.Microsecond
		act := ep.OnAck(now, &cc.Ack{Ack: ack, TSecr: now - 10*sim.Microsecond, HasTSecr: true})
		if act.Send {
			send()
		}
	}
	fmt.Printf("done at %v, srtt %v\n", now, ep.RTO().SRTT())
	// Output:
	// t=0ps send 0+1000
	// t=0ps send 1000+1000
	// t=0ps send 2000+1000
	// t=0ps send 3000+1000
	// t=10us send 4000+1000
	// t=20us send 5000+1000
	// t=30us send 6000+1000
	// t=40us send 7000+1000
	// done at 80us, srtt 10us
}
