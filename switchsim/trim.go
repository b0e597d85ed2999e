package switchsim

import "github.com/lockstep-sim/lockstep/sim"

// ndpTrim is packet trimming as NDP does it (Handley et al., "Re-
// architecting datacenter networks and stacks for low latency and high
// performance", SIGCOMM 2017, §3.1; Ultra Ethernet's trimming): a data
// packet that does not fit is cut to its header and queued in the control
// class, which has its own allowance beside the data buffer (NDP's
// separate header queue). Payload and Seq stay, so the receiver knows
// which bytes were lost.
type ndpTrim struct {
	header int32
	queue  int64
}

// Trim implements Trimmer.Trim: every lossy data packet is cut.
func (t *ndpTrim) Trim(_ *Switch, pkt *sim.Packet, _, _ int) (int32, bool) {
	return t.header, pkt.Flags&sim.FlagData != 0
}

// HeaderQueue implements Trimmer.HeaderQueue.
func (t *ndpTrim) HeaderQueue() int64 { return t.queue }

// NeedsPortState implements PortStateUser (the per-class Trimmed
// counters).
func (t *ndpTrim) NeedsPortState() {}
