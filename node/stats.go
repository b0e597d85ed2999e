package node

import (
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/sim"
)

// Stats is the distributed run's part of summary.json (under
// "extra"."distributed"). Fields marked wall-clock depend on the machine;
// the others are a function of the scenario, seed and placement.
type Stats struct {
	Transport    string `json:"transport"` // "nats" or "memory"
	Nodes        string `json:"nodes"`     // "goroutines" or "processes"
	Coordinators int    `json:"coordinators"`
	Partitions   int    `json:"partitions"`
	// The cut.
	LookaheadNs string  `json:"lookahead_ns"`
	CutLinks    int     `json:"cut_links"`
	Imbalance   float64 `json:"imbalance"`
	// Windows: how many ran, their mean virtual length, the idle time the
	// barrier skipped (up to the last event, which may lie well after the
	// last flow finished: stray timers), and how many windows one
	// simulated millisecond took (over the run's virtual end).
	Windows uint64 `json:"windows"`
	// EmptyWindows counts (node, window) pairs in which the node ran no
	// event.
	EmptyWindows    uint64  `json:"empty_node_windows"`
	LastEventNs     string  `json:"last_event_ns"`
	MeanWindowNs    string  `json:"mean_window_ns"`
	SkippedNs       string  `json:"skipped_ns"`
	WindowsPerSimMs float64 `json:"windows_per_simulated_ms"`
	// Messages: batches and the packets in them, over all nodes.
	Batches           uint64  `json:"batches"`
	CrossPackets      uint64  `json:"cross_packets"`
	BatchesPerWindow  float64 `json:"batches_per_window"`
	MeanBarrierWaitUs float64 `json:"mean_barrier_wait_us"` // wall-clock: per window, mean over nodes
	WindowsPerSec     float64 `json:"windows_per_second"`   // wall-clock
	// Wall-clock, per window and mean over nodes: where a window's time
	// goes (NodePerf), the barrier wait net of load imbalance, and the
	// median NATS round trip the launcher measured during the run (0 in
	// memory; set by the caller, see RTTSampler).
	Window        WindowSplit `json:"window_us"`
	MeanNetWaitUs float64     `json:"mean_net_wait_us"`
	NATSRTTUs     float64     `json:"nats_rtt_us"`
	// The launcher's process over the run, when its nodes run elsewhere
	// (--procs, --external; set by the caller): its CPU seconds and its
	// threads' run-queue wait (Linux). With --procs it hosts the embedded
	// NATS server and the coordinators, so this is what relaying the
	// windows' messages cost beside the nodes.
	LauncherCPUSeconds      float64 `json:"launcher_cpu_seconds,omitempty"`
	LauncherRunqWaitSeconds float64 `json:"launcher_runq_wait_seconds,omitempty"`
	// Leaders lists the coordinator leaders in term order ("c2@3").
	Leaders []string `json:"leaders,omitempty"`
	// Rejected counts messages refused as not from a member of the run,
	// or not from the member they claim (docs/decisions.md, "Members and
	// credentials").
	Rejected Rejected    `json:"rejected"`
	PerNode  []NodeStats `json:"per_node"`
}

// WindowSplit is the mean wall-clock cost of a window, µs, by part.
type WindowSplit struct {
	Compute       float64 `json:"compute"`
	Encode        float64 `json:"encode"`
	Publish       float64 `json:"publish"`
	Decode        float64 `json:"decode"`
	WaitImbalance float64 `json:"wait_imbalance"`
	WaitNet       float64 `json:"wait_net"`
	// Ahead is the part of Compute run as the window's first phase,
	// while the node waited for its grant (two-phase windows).
	Ahead float64 `json:"ahead"`
}

// Rejected counts refused messages by where they were refused.
type Rejected struct {
	// NATS: connections, publishes and subscriptions the embedded server
	// refused (no or wrong credentials, another member's subject).
	NATS uint64 `json:"nats"`
	// Launcher: result chunks the collector refused.
	Launcher uint64 `json:"launcher"`
	// Coordinators: reports the leaders refused and raft connections
	// their replicas refused (each leader term's last published count,
	// summed).
	Coordinators uint64 `json:"coordinators"`
	// Nodes: messages the nodes refused (their per_node counts, summed).
	Nodes uint64 `json:"nodes"`
}

// NodeStats is one node's line in Stats.
type NodeStats struct {
	Partition  int    `json:"partition"`
	Elements   int    `json:"elements"`
	Events     uint64 `json:"events"`
	BatchesOut uint64 `json:"batches_out"`
	BatchesIn  uint64 `json:"batches_in"`
	PacketsOut uint64 `json:"packets_out"`
	PacketsIn  uint64 `json:"packets_in"`
	// Wall-clock.
	WallSeconds float64 `json:"wall_seconds"`
	RunSeconds  float64 `json:"run_seconds"`
	WaitSeconds float64 `json:"wait_seconds"`
	MaxWaitMs   float64 `json:"max_wait_ms"`
	Rejected    uint64  `json:"rejected"`
	// Resends counts the leader's resync requests the node answered: the
	// run stalled (a message lost, a peer behind) and it resent its last
	// reports and batches.
	Resends uint64 `json:"resends"`
	// Routes: the other NATS servers the node's own server was joined to
	// (run --procs, whose node processes serve; lockstep node --serve).
	Routes        uint64  `json:"routes,omitempty"`
	EventsPerSec  float64 `json:"events_per_second"`
	WindowsPerSec float64 `json:"windows_per_second"`
	// Wall-clock: NodePerf's split of the node's time.
	ComputeSeconds   float64 `json:"compute_seconds"`
	EncodeSeconds    float64 `json:"encode_seconds"`
	PublishSeconds   float64 `json:"publish_seconds"`
	DecodeSeconds    float64 `json:"decode_seconds"`
	ImbalanceSeconds float64 `json:"imbalance_seconds"`
	// Wall-clock: the time spent running windows' first phases while
	// waiting (two-phase windows, Core.RunAhead). Which windows have one
	// depends on when the peers' messages come, so the number of events
	// they ran is not here (the node logs it).
	AheadSeconds float64 `json:"ahead_seconds,omitempty"`
	// A node alone in its process (lockstep node, --procs, containers):
	// the process's CPU seconds (user and system) over wall_seconds, and
	// how often the kernel took its core away for another process
	// (involuntary context switches). CPU well below wall_seconds with
	// many preemptions: the node's compute waited for a core.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	Preempted  uint64  `json:"preempted,omitempty"`
	// RunqWaitSeconds (Linux) is how long the process's threads were
	// runnable but waited for a CPU, summed over its threads: the
	// compute and the message handling the machine's cores held back.
	RunqWaitSeconds float64 `json:"runq_wait_seconds,omitempty"`
}

// RunStats gathers the distributed statistics of a run cut by pl that
// ended at virtual time end, from its nodes' results (by partition); wall
// is the run's wall time in seconds (0: unknown).
func RunStats(pl *partition.Placement, rs []*PartResult, end sim.Time, wall float64) Stats {
	s := Stats{Partitions: pl.P, CutLinks: len(pl.Cuts), Imbalance: pl.Imbalance()}
	if pl.Lookahead != sim.Never {
		s.LookaheadNs = pl.Lookahead.NsString()
	}
	first := rs[0].Core
	s.Windows, s.EmptyWindows = first.Windows, 0
	if first.Windows > 0 {
		s.MeanWindowNs = (first.Covered / sim.Time(first.Windows)).NsString()
	}
	s.SkippedNs = first.Skipped.NsString()
	if end > 0 {
		s.WindowsPerSimMs = float64(first.Windows) / (float64(end) / float64(sim.Millisecond))
	}
	var wait float64
	var split WindowSplit
	var lastEvent sim.Time
	for _, r := range rs {
		p := &r.Part
		lastEvent = max(lastEvent, p.Now)
		c := r.Core
		ns := NodeStats{Partition: p.Partition, Elements: pl.Elements[p.Partition], Events: p.Stats.Events,
			BatchesOut: c.BatchesOut, BatchesIn: c.BatchesIn, PacketsOut: c.PacketsOut, PacketsIn: c.PacketsIn,
			WallSeconds: r.Perf.WallSeconds, RunSeconds: r.Perf.RunSeconds, WaitSeconds: r.Perf.WaitSeconds,
			MaxWaitMs: r.Perf.MaxWait * 1e3, Rejected: r.Perf.Rejected, Resends: r.Perf.Resends, Routes: r.Perf.Routes,
			ComputeSeconds: r.Perf.ComputeSeconds, EncodeSeconds: r.Perf.EncodeSeconds, PublishSeconds: r.Perf.PublishSeconds,
			DecodeSeconds: r.Perf.DecodeSeconds, ImbalanceSeconds: r.Perf.ImbalanceSeconds,
			AheadSeconds: r.Perf.AheadSeconds, CPUSeconds: r.Perf.CPUSeconds, Preempted: r.Perf.Preempted,
			RunqWaitSeconds: r.Perf.RunqSeconds}
		if w := r.Perf.WallSeconds; w > 0 {
			ns.EventsPerSec = float64(p.Stats.Events) / w
			ns.WindowsPerSec = float64(c.Windows) / w
		}
		s.EmptyWindows += c.EmptyWindows
		s.Rejected.Nodes += r.Perf.Rejected
		s.Batches += c.BatchesOut
		s.CrossPackets += c.PacketsOut
		wait += r.Perf.WaitSeconds
		split.Compute += r.Perf.ComputeSeconds
		split.Encode += r.Perf.EncodeSeconds
		split.Publish += r.Perf.PublishSeconds
		split.Decode += r.Perf.DecodeSeconds
		split.WaitImbalance += r.Perf.ImbalanceSeconds
		split.Ahead += r.Perf.AheadSeconds
		split.WaitNet += max(0, r.Perf.WaitSeconds-r.Perf.ImbalanceSeconds)
		s.PerNode = append(s.PerNode, ns)
	}
	s.LastEventNs = lastEvent.NsString()
	if s.Windows > 0 {
		s.BatchesPerWindow = float64(s.Batches) / float64(s.Windows)
		per := func(x float64) float64 { return x / float64(len(rs)) / float64(s.Windows) * 1e6 }
		s.MeanBarrierWaitUs = per(wait)
		s.MeanNetWaitUs = per(split.WaitNet)
		s.Window = WindowSplit{Compute: per(split.Compute), Encode: per(split.Encode), Publish: per(split.Publish),
			Decode: per(split.Decode), WaitImbalance: per(split.WaitImbalance), WaitNet: per(split.WaitNet),
			Ahead: per(split.Ahead)}
	}
	if wall > 0 {
		s.WindowsPerSec = float64(s.Windows) / wall
	}
	return s
}
