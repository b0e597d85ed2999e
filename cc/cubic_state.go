package cc

import "github.com/lockstep-sim/lockstep/sim"

// CubicState is a copy of Cubic's internals for traces and tests (`lockstep
// cc trace` expect keys), in the kernel's units (struct bictcp).
type CubicState struct {
	// K is bic_K: the time from the epoch start to the origin point, in
	// 1/1024 s (BICTCP_HZ).
	K uint32
	// Target is bic_target of the last cnt computation, packets (0 before
	// the first).
	Target uint32
	// Cnt is ca->cnt: cwnd grows by one packet per Cnt packets
	// acknowledged in congestion avoidance.
	Cnt uint32
	// LastMax is last_max_cwnd (W_max), packets.
	LastMax uint32
	// OriginPoint is bic_origin_point, packets.
	OriginPoint uint32
	// RenoCwnd is tcp_cwnd, the Reno-friendly estimate (RFC 9438 §4.3's
	// W_est), packets.
	RenoCwnd uint32
	// DelayMin is delay_min, the smallest RTT sample, 0 before the first.
	DelayMin sim.Time
	// AckDelay is hystart_ack_delay(), today's HyStart's TSO/GRO cushion
	// (0 for the other detectors and before a pacing-rate estimate).
	AckDelay sim.Time
	// InfiniteSsthresh: ssthresh is still TCP_INFINITE_SSTHRESH.
	InfiniteSsthresh bool
}

// Internals returns a copy of c's internals.
func (c *Cubic) Internals() CubicState {
	s := CubicState{K: c.bicK, Target: c.bicTarget, Cnt: c.cnt, LastMax: c.lastMaxCwnd,
		OriginPoint: c.bicOriginPoint, RenoCwnd: c.tcpCwnd,
		DelayMin:         sim.Time(c.delayMin) * sim.Microsecond,
		InfiniteSsthresh: c.ssthresh >= tcpInfiniteSsthresh}
	if c.hy.Variant() == HyStartLinux {
		s.AckDelay = sim.Time(hystartAckDelayUs(c.pacingRate)) * sim.Microsecond
	}
	return s
}
