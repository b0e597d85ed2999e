package cc

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// Pacer is a per-flow rate limiter as RDMA NICs have one per queue pair:
// a packet of n bytes that starts at t holds the flow's next packet until
// t + n×8/rate. A rate-paced controller that is an RDMA queue pair
// (RatePaced and NICScheduled: DCQCN's current rate Rc) sends through it,
// in the endpoint and in `lockstep cc trace` alike; HPCC's W/T can by
// declaring NICScheduled.
//
// Sources: the DCQCN paper (Zhu et al., SIGCOMM 2015, §3: the RP sets the
// rate of a NIC rate limiter) and HPCC's ns-3 rdma-hw.cc (UpdateNextAvail:
// nextAvail = now + size/rate after each packet; ChangeRate: a rate change
// re-times the gap after the last packet, nextAvail += new - old gap).
//
// Time is exact: the gap is an integer division in picoseconds and its
// remainder is carried to the next packet, so a long run sends at exactly
// the rate, whatever the packet sizes. The zero Pacer has no rate and
// never holds a packet.
type Pacer struct {
	rate      int64    // bits per second; 0: unpaced
	last      sim.Time // when the last packet started
	lastBytes int64    // its size on the wire
	carry     int64    // remainder of the last gap, in ps × rate units
	next      sim.Time // earliest start of the next packet
	sent      bool     // a packet went out since the rate was set
}

// psPerBit8 is 8 bits per byte × 1e12 picoseconds per second.
const psPerBit8 = 8 * int64(sim.Second)

// maxPacedBytes bounds a packet's size so that bytes × 8e12 fits an int64.
const maxPacedBytes = (1<<63 - 1) / psPerBit8

// Rate is the pacing rate in bits per second (0: unpaced).
func (p *Pacer) Rate() int64 { return p.rate }

// Next is the earliest time the next packet may start.
func (p *Pacer) Next() sim.Time { return p.next }

// Ready reports whether a packet may start at now.
func (p *Pacer) Ready(now sim.Time) bool { return now >= p.next }

// gap is how long n bytes take at the rate, with the carried remainder.
func (p *Pacer) gap(n int64) (sim.Time, int64) {
	if n > maxPacedBytes {
		panic(fmt.Sprintf("cc: pacer: packet of %d bytes is too large", n))
	}
	num := n*psPerBit8 + p.carry
	return sim.Time(num / p.rate), num % p.rate
}

// OnSent records a packet of n bytes (on the wire) that started at now.
// A packet sent before the pacer released it (inside a TSO burst) counts
// from its release: the gaps of a burst add up.
func (p *Pacer) OnSent(now sim.Time, n int64) {
	now = max(now, p.next)
	p.last, p.lastBytes, p.sent = now, n, true
	if p.rate <= 0 {
		p.next = now
		return
	}
	g, c := p.gap(n)
	p.carry = c
	p.next = now + g
}

// SetRate changes the rate. The gap after the last packet is re-timed at
// the new rate (HPCC rdma-hw.cc ChangeRate), so a rate cut holds the
// next packet longer and an increase releases it sooner; the carried
// remainder is dropped.
func (p *Pacer) SetRate(bps int64) {
	if bps < 0 {
		panic(fmt.Sprintf("cc: pacer: negative rate %d", bps))
	}
	if bps == p.rate {
		return
	}
	p.rate = bps
	p.carry = 0
	if !p.sent {
		return
	}
	if bps == 0 {
		p.next = p.last
		return
	}
	g, c := p.gap(p.lastBytes)
	p.carry = c
	p.next = p.last + g
}
