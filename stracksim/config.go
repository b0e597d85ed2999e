// Package stracksim is lockstep's STrack-Sim compatibility profile: the
// network and the two transports of the Rust simulator STrack-Sim (crate
// strack_sim, the simulator of the report "SimpleTcp 局限性分析报告",
// examples/tcp_limits/multi_loss.rs) as its code runs them, so that a
// scenario with `compat: stracksim` gives STrack-Sim's numbers under
// STrack-Sim's semantics. Sources, all read at the commit of the report's
// data (Leo-Yikang/fabric-sim 30f8e00): src/sim_runner.rs (the event
// loop, host send ticks, switch egress), src/network/switch.rs (ingress:
// drop and ECN rule), src/network/link.rs (serialisation), src/nic/tcp.rs
// (SimpleTCP), src/nic/strack.rs (STrack), src/core/event.rs (event order),
// src/monitor (FCT percentiles). docs/decisions.md, "STrack-Sim
// compatibility profile", lists every semantic and what we chose where the
// Rust code depends on its process (hash-map order).
//
// The whole fabric is one element (World): STrack-Sim orders events of
// equal time by one global creation counter, which lockstep's key (time,
// destination, source, source sequence) reproduces only when every event
// has the same destination and source. A profile run is therefore one
// partition. Nothing here is on the path of an ordinary run: the fabric
// builds a World instead of hosts and switches when the scenario selects
// the profile.
package stracksim

import (
	"fmt"
	"slices"

	"github.com/lockstep-sim/lockstep/sim"
)

// Protocol is the transport every host runs.
type Protocol uint8

// The zero Protocol is invalid.
const (
	// SimpleTcp is src/nic/tcp.rs: cumulative ACKs, 3 duplicate ACKs,
	// halving on every CE-echoing ACK that advances, a fixed timeout
	// checked at send ticks.
	SimpleTCP Protocol = 1 + iota
	// STrack is src/nic/strack.rs in STrack mode: per-packet ACKs, NACKs
	// with a 64-bit bitmap, path blacklisting on marks.
	STrack
)

func (p Protocol) String() string {
	switch p {
	case SimpleTCP:
		return "simpletcp"
	case STrack:
		return "strack"
	}
	return "invalid"
}

// ParseProtocol maps a scenario name to a Protocol.
func ParseProtocol(s string) (Protocol, error) {
	switch s {
	case "simpletcp":
		return SimpleTCP, nil
	case "strack":
		return STrack, nil
	}
	return 0, fmt.Errorf("unknown protocol %q (known: simpletcp, strack)", s)
}

// Config is the profile's transport. Windows are in packets, as in
// STrack-Sim.
type Config struct {
	Protocol Protocol
	// DataSize is every data packet's size on the wire (MTU_BYTES, 1024);
	// a flow of n bytes is ceil(n/DataSize) packets. AckSize is an ACK's
	// and a NACK's (64).
	DataSize, AckSize int32
	// InitCwnd, MaxCwnd, MinCwnd: 16, 256, 1 (SimpleTCP::new,
	// STrackProtocol::new). Ssthresh is SimpleTCP's initial slow-start
	// threshold (64, FlowTxState::new).
	InitCwnd, MaxCwnd, MinCwnd, Ssthresh int32
	// RTO is the fixed timeout (rto_ns, 100 us), checked only at send ticks.
	RTO sim.Time
	// Blacklist is how long STrack skips a marked path
	// (blacklist_duration_ns, 50 us).
	Blacklist sim.Time
	// TickSent and TickIdle are the send-tick periods after a tick that
	// sent (tx_tick_ns, 200 ns) and one that did not (25 us).
	TickSent, TickIdle sim.Time
}

// DefaultConfig is STrack-Sim's, for protocol p.
func DefaultConfig(p Protocol) Config {
	return Config{Protocol: p, DataSize: 1024, AckSize: 64, InitCwnd: 16, MaxCwnd: 256, MinCwnd: 1,
		Ssthresh: 64, RTO: 100 * sim.Microsecond, Blacklist: 50 * sim.Microsecond,
		TickSent: 200 * sim.Nanosecond, TickIdle: 25 * sim.Microsecond}
}

// Validate checks c.
func (c *Config) Validate() error {
	switch {
	case c.Protocol != SimpleTCP && c.Protocol != STrack:
		return fmt.Errorf("protocol: invalid (%d)", c.Protocol)
	case c.DataSize <= 0 || c.AckSize <= 0:
		return fmt.Errorf("packet sizes must be positive, got data %d and ack %d", c.DataSize, c.AckSize)
	case c.MinCwnd < 1 || c.InitCwnd < c.MinCwnd || c.MaxCwnd < c.InitCwnd:
		return fmt.Errorf("windows: need 1 <= min_cwnd <= init_cwnd <= max_cwnd, got %d, %d, %d", c.MinCwnd, c.InitCwnd, c.MaxCwnd)
	case c.Ssthresh < 1:
		return fmt.Errorf("ssthresh: must be at least 1, got %d", c.Ssthresh)
	}
	for _, d := range []struct {
		name string
		v    sim.Time
	}{{"rto", c.RTO}, {"blacklist", c.Blacklist}, {"tick", c.TickSent}, {"idle tick", c.TickIdle}} {
		if d.v <= 0 || d.v%sim.Nanosecond != 0 {
			return fmt.Errorf("%s: must be a positive whole number of nanoseconds, got %v", d.name, d.v)
		}
	}
	return nil
}

// Serialization is how long size bytes take at rate, in whole nanoseconds
// rounded down: Link::serialization_ns, size·8·10⁹ / bps in integers
// (1024 B: 81 ns at 100 Gb/s, 204 ns at 40 Gb/s; 64 B: 5 ns, 12 ns).
func Serialization(size int32, rate sim.Bandwidth) sim.Time {
	return sim.Time(int64(size)*8*1_000_000_000/int64(rate)) * sim.Nanosecond
}

// FCTSummary is what STrack-Sim reports of a run's FCTs
// (src/monitor/mod.rs, SimSummary::from_fcts, the same function at
// commits 53e2ec1 and f1a3a3e, which our search corpus holds): over the
// completed flows' FCTs sorted ascending (SimRunner::summarize in
// src/sim_runner.rs at the report's commit 30f8e00 keeps the flows whose
// finish_ns is set, at the sender), P50 is sorted[n·50/100], P95
// sorted[min(n·95/100, n−1)], P99 sorted[min(n·99/100, n−1)] and Max the
// largest, integer indices: an index percentile, not a nearest rank
// (with 4 flows P50 is the 3rd smallest and P99 the 4th; lockstep's
// nearest rank takes the 2nd and the 4th).
type FCTSummary struct {
	P50, P95, P99, Max sim.Time
}

// Summarize is STrack-Sim's FCTSummary of fcts, which it sorts in place;
// all zero when fcts is empty.
func Summarize(fcts []sim.Time) FCTSummary {
	n := len(fcts)
	if n == 0 {
		return FCTSummary{}
	}
	slices.Sort(fcts)
	return FCTSummary{P50: fcts[n*50/100], P95: fcts[min(n*95/100, n-1)], P99: fcts[min(n*99/100, n-1)], Max: fcts[n-1]}
}

// Percentiles are Summarize's P50 and P99 (fcts is sorted in place; both
// are 0 when it is empty).
func Percentiles(fcts []sim.Time) (p50, p99 sim.Time) {
	s := Summarize(fcts)
	return s.P50, s.P99
}
