// Package results owns a run's outputs (docs/style.md §14: one owner per concern):
// a Part is what one fabric contributes (a whole run, or one partition),
// Merge combines the parts of a run into Outputs, and Outputs.WriteDir is
// the one writer: fct.csv (one row per flow), queues.csv (one row per
// switch port), cwnd.csv, queue_depth.csv and pcap/h<i>.pcap when asked
// for, and summary.json. A single-process run is the merge of one part,
// so it and a partitioned run cannot drift apart. Every file is written
// atomically (a temporary file in the same directory, then a rename), so
// an interrupted run never leaves a half-written file.
//
// The package knows nothing of nodes, barriers or NATS: a node wraps its
// Part with its own statistics to send it.
package results

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/internal/version"
	"github.com/lockstep-sim/lockstep/sim"
)

// FCTHeader is the first line of fct.csv.
const FCTHeader = "flow_id,src,dst,size_bytes,start_ns,finish_ns,fct_ns,packets_sent,retransmits,timeouts,ecn_marked_acks,finished,ideal_fct_ns,slowdown"

// SenderColumns are the columns fct.csv appends to FCTHeader's when the
// scenario asks for the sender side (output.sender_fct; always under
// compat: stracksim): acked_ns, when the sender saw the flow's last byte
// acknowledged (hostsim.FlowRecord.AckedAt), and sender_fct_ns, acked_ns
// minus start_ns. A flow ends there in htsim (its sources print "finished
// at" on the ACK that covers the flow: csg-htsim sim/strack.cpp
// STrackSrc::send_packets, uet-htsim uec.cpp UecSrc::checkFinished) and
// in STrack-Sim (SimRunner::handle_arrive_at_host sets finish_ns on the
// control packet that finishes the flow), one ACK's way after fct_ns's
// end at the receiver.
const SenderColumns = "acked_ns,sender_fct_ns"

// WriteFCT writes fct.csv. Unfinished flows have empty finish_ns, fct_ns
// and slowdown and finished=false. ideal holds every flow's ideal FCT
// (IdealFCT; nil or 0: unknown, an empty ideal_fct_ns and slowdown);
// slowdown is fct_ns / ideal_fct_ns with six decimals. With sender, every
// row ends with SenderColumns (empty for a flow its sender did not see
// acknowledged); the other columns are the same either way.
func WriteFCT(w io.Writer, flows []hostsim.FlowSpec, recs []hostsim.FlowRecord, ideal []sim.Time, sender bool) error {
	bw := bufio.NewWriter(w)
	if sender {
		fmt.Fprintln(bw, FCTHeader+","+SenderColumns)
	} else {
		fmt.Fprintln(bw, FCTHeader)
	}
	for i, f := range flows {
		r := &recs[i]
		finish, fct, ideals, slow := "", "", "", ""
		var id sim.Time
		if i < len(ideal) {
			id = ideal[i]
		}
		if id > 0 {
			ideals = id.NsString()
		}
		start := FlowStart(&f, r)
		if r.Finished {
			finish = r.Finish.NsString()
			fct = (r.Finish - start).NsString()
			if id > 0 {
				slow = formatSlowdown(Slowdown(r.Finish-start, id))
			}
		}
		fmt.Fprintf(bw, "%d,%d,%d,%d,%s,%s,%s,%d,%d,%d,%d,%t,%s,%s", f.ID, f.Src, f.Dst, f.Size,
			start.NsString(), finish, fct, r.PacketsSent, r.Retransmits, r.Timeouts, r.ECNMarkedAcks, r.Finished,
			ideals, slow)
		if sender {
			acked, sfct := "", ""
			if r.AckedAt > 0 {
				acked, sfct = r.AckedAt.NsString(), (r.AckedAt - start).NsString()
			}
			fmt.Fprintf(bw, ",%s,%s", acked, sfct)
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

// FlowStart is when flow f started: its Start, or for a flow that waits
// on others (Need > 0) the time its last activation arrived (0 if it never
// started).
func FlowStart(f *hostsim.FlowSpec, r *hostsim.FlowRecord) sim.Time {
	if f.Need > 0 {
		return r.StartAt
	}
	return f.Start
}

// CwndHeader is the first line of cwnd.csv.
const CwndHeader = "time_ns,flow,cwnd_bytes,ssthresh_bytes,srtt_ns,min_rtt_ns,state,event"

// WriteCwnd writes cwnd.csv from rows sorted by time, then flow.
func WriteCwnd(w io.Writer, rows []hostsim.CwndRow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, CwndHeader)
	for _, r := range rows {
		ss := fmt.Sprint(r.Ssthresh)
		if r.Ssthresh >= 1<<60 {
			ss = "" // still "arbitrarily high" (RFC 5681 §3.1)
		}
		fmt.Fprintf(bw, "%s,%d,%d,%s,%s,%s,%s,%s\n", r.Time.NsString(), r.Flow, r.Cwnd, ss,
			r.SRTT.NsString(), r.MinRTT.NsString(), r.State, r.Event)
	}
	return bw.Flush()
}

// RateHeader is the first line of rate.csv, the samples of rate-based
// senders (DCQCN): current and target rate, alpha.
const RateHeader = "time_ns,flow,rate_bps,target_bps,alpha,state,event"

// WriteRate writes rate.csv from rows sorted by time, then flow.
func WriteRate(w io.Writer, rows []hostsim.CwndRow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, RateHeader)
	for _, r := range rows {
		fmt.Fprintf(bw, "%s,%d,%d,%d,%.6f,%s,%s\n", r.Time.NsString(), r.Flow, r.Rate, r.TargetRate,
			r.Alpha, r.State, r.Event)
	}
	return bw.Flush()
}

// splitRate separates the samples of rate-based senders (Rate > 0, for
// rate.csv) from the window samples (cwnd.csv), each keeping its order.
func splitRate(rows []hostsim.CwndRow) (cwnd, rate []hostsim.CwndRow) {
	for _, r := range rows {
		if r.Rate > 0 {
			rate = append(rate, r)
		} else {
			cwnd = append(cwnd, r)
		}
	}
	return cwnd, rate
}

// DepthRow is one queue_depth.csv row.
type DepthRow struct {
	Time   sim.Time
	Switch string
	Port   int32
	Bytes  int64
}

// ClassDepthRow is one queue_depth_class.csv row.
type ClassDepthRow struct {
	Time   sim.Time
	Switch string
	Port   int32
	Class  int8
	Bytes  int64
}

// ClassDepthHeader is the first line of queue_depth_class.csv.
const ClassDepthHeader = "time_ns,switch,port,class,depth_bytes"

// WriteClassDepth writes queue_depth_class.csv.
func WriteClassDepth(w io.Writer, rows []ClassDepthRow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, ClassDepthHeader)
	for _, r := range rows {
		fmt.Fprintf(bw, "%s,%s,%d,%d,%d\n", r.Time.NsString(), r.Switch, r.Port, r.Class, r.Bytes)
	}
	return bw.Flush()
}

// DepthHeader is the first line of queue_depth.csv.
const DepthHeader = "time_ns,switch,port,depth_bytes"

// WriteDepth writes queue_depth.csv.
func WriteDepth(w io.Writer, rows []DepthRow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, DepthHeader)
	for _, r := range rows {
		fmt.Fprintf(bw, "%s,%s,%d,%d\n", r.Time.NsString(), r.Switch, r.Port, r.Bytes)
	}
	return bw.Flush()
}

// QueueRow is one switch port's counters.
type QueueRow struct {
	Switch    string
	Port      int
	Peer      string
	Tier      int
	RateBps   sim.Bandwidth
	Enqueued  uint64
	Dropped   uint64
	Marked    uint64
	PeakBytes int64
	Bytes     uint64
	TxPackets uint64
	LinkLost  uint64 // lost on the port's outgoing wire (impairments, down)
}

// QueuesHeader is the first line of queues.csv.
const QueuesHeader = "switch,port,peer,tier,rate_bps,enqueued,dropped,marked,peak_bytes,bytes,tx_packets,link_lost"

// WriteQueues writes queues.csv.
func WriteQueues(w io.Writer, rows []QueueRow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, QueuesHeader)
	for _, r := range rows {
		fmt.Fprintf(bw, "%s,%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d\n", r.Switch, r.Port, r.Peer, r.Tier, int64(r.RateBps),
			r.Enqueued, r.Dropped, r.Marked, r.PeakBytes, r.Bytes, r.TxPackets, r.LinkLost)
	}
	return bw.Flush()
}

// ClassRow is one class queue of one switch port.
type ClassRow struct {
	Switch                 string
	Port                   int
	Peer                   string
	Class                  int
	Enqueued, Dropped      uint64
	Marked, TxPackets      uint64
	Trimmed, TrimBytes     uint64
	PausesSent, PausesRecv uint64
	Paused                 sim.Time // time the peer kept the class paused
	HeadroomDrops          uint64
	PeakBytes              int64
	CutThrough             uint64
	SharedPeak             int64 // most bytes in the shared pool
}

// ClassHeader is the first line of queues_class.csv.
const ClassHeader = "switch,port,peer,class,enqueued,dropped,marked,tx_packets,trimmed,trim_bytes,pauses_sent,pauses_recv,paused_ns,headroom_drops,peak_bytes,cut_through,shared_peak_bytes"

// WriteClasses writes queues_class.csv.
func WriteClasses(w io.Writer, rows []ClassRow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, ClassHeader)
	for _, r := range rows {
		fmt.Fprintf(bw, "%s,%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%s,%d,%d,%d,%d\n", r.Switch, r.Port, r.Peer, r.Class,
			r.Enqueued, r.Dropped, r.Marked, r.TxPackets, r.Trimmed, r.TrimBytes, r.PausesSent, r.PausesRecv,
			r.Paused.NsString(), r.HeadroomDrops, r.PeakBytes, r.CutThrough, r.SharedPeak)
	}
	return bw.Flush()
}

// PFCRow is one class of one switch port or host NIC in pfc.csv: how a
// PFC storm (or any pause) reached it and what the watchdogs did.
type PFCRow struct {
	Node  string
	Kind  string // "switch" or "host"
	Port  int    // a host's is 0
	Peer  string
	Class int
	// PausesSent, PausesRecv: PAUSE frames (XOFF, refreshes, XON) sent to
	// and received from Peer for the class.
	PausesSent, PausesRecv uint64
	// FirstPauseSent is the first XOFF sent, FirstPaused when Peer first
	// paused the class (0: never); Paused how long Peer kept it paused.
	FirstPauseSent, FirstPaused, Paused sim.Time
	// Storms and Restores: a switch port's storm watchdog found a storm
	// and honoured PAUSE frames again; a host's NIC watchdog stopped its
	// PAUSE frames and let them go again.
	Storms, Restores uint64
	// Drops: a switch port's packets its watchdog dropped (to and from
	// Peer); a host's packets its receive buffer dropped.
	Drops uint64
}

// PFCHeader is the first line of pfc.csv.
const PFCHeader = "node,kind,port,peer,class,pauses_sent,pauses_recv,first_pause_sent_ns,first_paused_ns,paused_ns,storms,restores,drops"

// WritePFC writes pfc.csv.
func WritePFC(w io.Writer, rows []PFCRow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, PFCHeader)
	at := func(t sim.Time) string {
		if t == 0 {
			return ""
		}
		return t.NsString()
	}
	for _, r := range rows {
		fmt.Fprintf(bw, "%s,%s,%d,%s,%d,%d,%d,%s,%s,%s,%d,%d,%d\n", r.Node, r.Kind, r.Port, r.Peer, r.Class, r.PausesSent,
			r.PausesRecv, at(r.FirstPauseSent), at(r.FirstPaused), r.Paused.NsString(), r.Storms, r.Restores, r.Drops)
	}
	return bw.Flush()
}

// Summary is summary.json. Fields under Perf depend on the machine; all
// others are a function of the scenario and the seed.
type Summary struct {
	Scenario string `json:"scenario"`
	Name     string `json:"name,omitempty"`
	Digest   string `json:"scenario_digest"`
	Seed     uint64 `json:"seed"`
	// EndPs is the virtual end time in picoseconds (exact); EndNs is the
	// same time in nanoseconds with three decimals, as a JSON number.
	EndPs         int64       `json:"virtual_end_ps"`
	EndNs         json.Number `json:"virtual_end_ns"`
	Events        uint64      `json:"events"`
	Flows         int         `json:"flows"`
	FlowsFinished int         `json:"flows_finished"`
	PacketsSent   uint64      `json:"packets"` // packets put on any wire
	HostPackets   uint64      `json:"host_packets"`
	Drops         uint64      `json:"drops"` // queue drops + link losses + NIC drops
	QueueDrops    uint64      `json:"queue_drops"`
	// NICDrops counts the packets hosts' receive buffers dropped (a PFC
	// storm source's NIC; absent when none).
	NICDrops    uint64 `json:"nic_drops,omitempty"`
	LinkLost    uint64 `json:"link_lost"`
	Marks       uint64 `json:"ecn_marks"`
	Retransmits uint64 `json:"retransmits"`
	Timeouts    uint64 `json:"timeouts"`
	StoppedBy   string `json:"stopped_by"` // "flows-done", "stop_at", "max_time", "no-events", "incomplete"
	// FCT and Slowdown are percentiles over the finished flows (nearest
	// rank; absent when no flow finished).
	FCT      *FCTPercentiles      `json:"fct_ns,omitempty"`
	Slowdown *SlowdownPercentiles `json:"slowdown,omitempty"`
	// SenderFCT are the same percentiles of the sender-side FCTs
	// (fct.csv's sender_fct_ns) over the flows their senders saw
	// acknowledged; only when the scenario asks for the sender side
	// (scenario.Built.SenderFCT) and some flow finished there.
	SenderFCT *FCTPercentiles `json:"sender_fct_ns,omitempty"`
	// StrackSim is what STrack-Sim reports of the run, under its
	// definitions (compat: stracksim only).
	StrackSim *StrackSimSummary `json:"stracksim,omitempty"`
	// Complete says the run finished. A run that failed after it started
	// writes what it had with Complete false, the Reason and the
	// partitions whose part never came.
	Complete          bool   `json:"complete"`
	Reason            string `json:"incomplete_reason,omitempty"`
	MissingPartitions []int  `json:"missing_partitions,omitempty"`
	// PeakEventQueue (the largest part's) and PacketPool (the sum of the
	// parts') depend on how the run was cut: WriteDir writes them under
	// perf (Perf.PeakEventQueue, Perf.PacketPool), not here.
	PeakEventQueue int `json:"-"`
	PacketPool     int `json:"-"`
	// Build is the binary that wrote the file (lockstep version).
	Build version.Info `json:"build"`
	Perf  Perf         `json:"perf"`
	Extra any          `json:"extra,omitempty"`
}

// FCTPercentiles are summary.json's fct_ns: percentiles of the finished
// flows' FCTs in nanoseconds (exact to the picosecond, as fct.csv).
type FCTPercentiles struct {
	P50  json.Number `json:"p50"`
	P99  json.Number `json:"p99"`
	P999 json.Number `json:"p999"`
}

// StrackSimSummary is summary.json's stracksim: the fields of
// STrack-Sim's SimSummary (src/monitor/mod.rs, named as its to_json names
// them) that the profile reproduces, under STrack-Sim's definitions: FCTs
// at the sender (sender_fct_ns) over the flows completed there, and its
// index percentiles (stracksim.Summarize), in nanoseconds; packets sent
// and retransmitted are the hosts' data packets (fct.csv's packets_sent
// and retransmits summed), drops and marks the switches' (as drops and
// ecn_marks).
type StrackSimSummary struct {
	CompletedFlows     int         `json:"completed_flows"`
	PacketsSent        uint64      `json:"total_packets_sent"`
	PacketsRetransmits uint64      `json:"total_packets_retransmitted"`
	ECNMarks           uint64      `json:"total_ecn_marks"`
	Drops              uint64      `json:"total_drops"`
	P50                json.Number `json:"fct_p50_ns"`
	P95                json.Number `json:"fct_p95_ns"`
	P99                json.Number `json:"fct_p99_ns"`
	Max                json.Number `json:"fct_max_ns"`
}

// SlowdownPercentiles are summary.json's slowdown: percentiles of the
// finished flows' slowdowns (fct.csv's slowdown column).
type SlowdownPercentiles struct {
	P50 json.Number `json:"p50"`
	P99 json.Number `json:"p99"`
}

// Perf is the machine-dependent part of the summary.
type Perf struct {
	WallSeconds float64 `json:"wall_seconds"`
	// SetupSeconds is the part of WallSeconds spent building the fabric
	// (0 when not measured).
	SetupSeconds  float64 `json:"setup_seconds,omitempty"`
	EventsPerSec  float64 `json:"events_per_second"`
	PeakRSSBytes  int64   `json:"peak_rss_bytes"`
	PeakHeapBytes uint64  `json:"peak_heap_bytes"`
	Partitions    int     `json:"partitions"`
	// PeakEventQueue (the largest partition's event queue at its peak) and
	// PacketPool (the sum of the partitions' packet pools) depend on how
	// the run was cut, so they are here rather than in the results.
	PeakEventQueue int `json:"peak_event_queue"`
	PacketPool     int `json:"packet_pool_slots"`
	// Cut says how the run was cut and why (partition.DefaultCut): the
	// default cut's model inputs, or the flag that fixed it.
	Cut any `json:"cut,omitempty"`
	// Distributed holds the window and batch statistics of a run that the
	// default cut split (a run asked to be distributed has them in
	// extra.distributed instead): they describe the execution, not the
	// results, so they stay out of the result fields.
	Distributed any `json:"distributed,omitempty"`
	// Checkpoints says what checkpointing cost and where a resumed run
	// resumed from (internal/checkpoint).
	Checkpoints any `json:"checkpoints,omitempty"`
}

// WriteSummary writes summary.json.
func WriteSummary(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteFileAtomic writes path by writing a temporary file beside it and
// renaming it into place.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// CreateTemp makes the file 0600; outputs are for everyone to read.
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
