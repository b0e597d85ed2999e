package cc

import "github.com/lockstep-sim/lockstep/sim"

// Rate pacing: a controller that sets its own sending rate (HPCC's R = W/T,
// Swift's pacing below one packet of window, and any rate-based sender)
// implements RatePaced. The endpoint then spaces the starts of its
// segments, headers included, at that rate, as a NIC's per-flow rate
// limiter does (ns-3 RdmaHw::UpdateNextAvail: the next packet may leave one
// transmission time at the flow's rate after this one).
//
// The endpoint reads the rate once after each controller event, never per
// segment. A controller that is also NICScheduled (an RDMA queue pair:
// DCQCN) paces through the NIC's rate limiter (cc/pacer.go): exact to the
// picosecond, a rate change re-timing the gap after the last packet (ns-3
// RdmaHw::ChangeRate); the others space each segment by its transmission
// time at the rate, rounded up. A rate-paced sender may always have one
// segment in flight, even when its window is smaller than a segment: Swift
// lets cwnd fall below one packet and then sends one packet per pacing
// interval (Swift §3.4), which the rate expresses.

// RatePaced is a controller that paces its own packets.
type RatePaced interface {
	// PacingRate is the rate in bits per second at which the flow may
	// send; 0 means no rate limit (the window alone decides).
	PacingRate() sim.Bandwidth
}

// LinkAware is a controller that needs its host's line rate and the
// flow's base (unloaded) round-trip time, as HPCC does for W_init = B·T
// (HPCC §3.3). The endpoint calls SetLink once at construction.
type LinkAware interface {
	SetLink(lineRate sim.Bandwidth, baseRTT sim.Time)
}
