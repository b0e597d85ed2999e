// Package scenario defines lockstep's YAML scenario format and turns a
// scenario into the plain values the engine runs: a topology, a workload,
// transport settings and impairments. docs/scenario.md documents every
// field; this file is the format's single source of truth.
//
// Parsing is strict: an unknown field, a value of the wrong type or unit,
// and an impossible setting are errors that name the file and the field.
// Files a scenario refers to (CDFs, .cm and .topo files) are read through
// an fs.FS rooted at the scenario's directory, supplied by the caller.
package scenario

import (
	"github.com/lockstep-sim/lockstep/internal/yamlx"
	"github.com/lockstep-sim/lockstep/switchsim"
)

// Scenario is the top level of a scenario file.
type Scenario struct {
	Name string `yaml:"name"`
	// Seed of every random stream (default 1). `lockstep run --seed`
	// overrides it.
	Seed *uint64 `yaml:"seed"`
	// StopAt ends the run at this virtual time even if flows are
	// unfinished (default: run until every flow finishes).
	StopAt yamlx.Duration `yaml:"stop_at"`
	// MaxTime is a safety limit on virtual time when StopAt is not set
	// (default 10s): a run that reaches it reports unfinished flows.
	MaxTime     yamlx.Duration `yaml:"max_time"`
	Topology    Topology       `yaml:"topology" lockstep:"required"`
	Transport   Transport      `yaml:"transport"`
	Switch      Switch         `yaml:"switch"`
	Workload    []Workload     `yaml:"workload" lockstep:"required"`
	Impairments []Impairment   `yaml:"impairments"`
	Output      Output         `yaml:"output"`
	Placement   *Placement     `yaml:"placement"`
	// External lists the switches that run outside lockstep, as external
	// elements (docs/external-elements.md).
	External []External `yaml:"external" json:",omitempty"`
	// Compat selects a compatibility profile, which replaces lockstep's
	// hosts, switches and transports by another simulator's semantics as a
	// whole: "stracksim" (docs/scenario.md, compat).
	Compat string `yaml:"compat"`

	memLimit int64 // WithMemoryLimit; not part of the scenario
	// switchReg resolves switch module names (WithSwitchModules; nil:
	// the built-ins); not part of the scenario.
	switchReg *switchsim.Registry
	// outside: the files it names may be outside its folder (AllowOutside).
	outside bool
	// editErrs are the errors of edits that could not be applied
	// (WithField on a list index the scenario does not have); Load
	// reports them.
	editErrs []error
}

// Topology chooses one builder; the section named by Type must be present.
type Topology struct {
	Type      string     `yaml:"type" lockstep:"required"`
	Dumbbell  *Dumbbell  `yaml:"dumbbell"`
	LeafSpine *LeafSpine `yaml:"leafspine"`
	FatTree   *FatTree   `yaml:"fattree"`
	Htsim     *Htsim     `yaml:"htsim"`
	Graph     *Graph     `yaml:"graph"`
	Rail      *Rail      `yaml:"rail"`
}

// Rail is a rail-optimised fabric: servers of GPUsPerServer NICs, NIC g of
// every server on rail g, each rail a leaf-spine (Joined: the rails share
// their spines; default true). NVLink, when present, adds every server's
// NVSwitch (the hosts are then GPUs, each behind its NIC), over which
// traffic crosses rails.
type Rail struct {
	Servers         int            `yaml:"servers" lockstep:"required"`
	GPUsPerServer   int            `yaml:"gpus_per_server" lockstep:"required"`
	ServersPerLeaf  int            `yaml:"servers_per_leaf" lockstep:"required"`
	Spines          int            `yaml:"spines" lockstep:"required"`
	Joined          *bool          `yaml:"joined"`
	Host            Tier           `yaml:"host"`
	Fabric          Tier           `yaml:"fabric"`
	SwitchLatency   yamlx.Duration `yaml:"switch_latency"`
	NVLink          *Tier          `yaml:"nvlink"`
	NVSwitchLatency yamlx.Duration `yaml:"nvswitch_latency"`
}

// Tier is the settings of a group of links: rate, propagation delay, and
// the output queue of the switch ports on them.
type Tier struct {
	Rate   yamlx.Rate     `yaml:"rate"`
	Delay  yamlx.Duration `yaml:"delay"`
	Buffer yamlx.Size     `yaml:"buffer"`
	ECN    *ECN           `yaml:"ecn"`
	// Switch overrides the switch section's mechanisms for the switches of
	// this tier (those whose downlinks are this tier's links).
	Switch *SwitchTier `yaml:"switch" json:",omitempty"`
}

// SwitchTier is a tier's own switch mechanisms: each field given replaces
// the switch section's, and Off turns the named ones off.
type SwitchTier struct {
	Classes      []SwitchClass `yaml:"classes"`
	ControlClass *int          `yaml:"control_class"`
	PFC          *PFC          `yaml:"pfc"`
	SharedBuffer *SharedBuffer `yaml:"shared_buffer"`
	Trim         *Trim         `yaml:"trim"`
	CutThrough   *CutThrough   `yaml:"cut_through"`
	// Off names mechanisms of the switch section this tier does without:
	// pfc, shared_buffer, trim, cut_through.
	Off []string `yaml:"off"`
	// Modules: each stage given replaces the switch section's module for
	// this tier's switches.
	Modules *SwitchModules `yaml:"modules" json:",omitempty"`
}

// SwitchModules selects the switch pipeline's modules by stage
// (`lockstep switch list`; docs/adding-a-switch-module.md). A stage not
// given takes the module the other switch fields imply.
type SwitchModules struct {
	Classify *SwitchModule `yaml:"classify" json:",omitempty"`
	Forward  *SwitchModule `yaml:"forward" json:",omitempty"`
	Buffer   *SwitchModule `yaml:"buffer" json:",omitempty"`
	AQM      *SwitchModule `yaml:"aqm" json:",omitempty"`
	Schedule *SwitchModule `yaml:"schedule" json:",omitempty"`
	Trim     *SwitchModule `yaml:"trim" json:",omitempty"`
}

// stage is the selection of st, or nil.
func (m *SwitchModules) stage(st switchsim.Stage) *SwitchModule {
	if m == nil {
		return nil
	}
	switch st {
	case switchsim.StageClassify:
		return m.Classify
	case switchsim.StageForward:
		return m.Forward
	case switchsim.StageBuffer:
		return m.Buffer
	case switchsim.StageAQM:
		return m.AQM
	case switchsim.StageSchedule:
		return m.Schedule
	case switchsim.StageTrim:
		return m.Trim
	}
	return nil
}

// SwitchModule names one module and its options (key: value; numbers
// and booleans as YAML writes them).
type SwitchModule struct {
	Name    string            `yaml:"name" lockstep:"required"`
	Options map[string]string `yaml:"options" json:",omitempty"`
}

// ECN is a port's marking rule.
type ECN struct {
	// Mode: off, step (mark above K bytes) or red (linear from Min to Max,
	// probability PMax at Max, always above Max).
	Mode string            `yaml:"mode" lockstep:"required"`
	K    yamlx.Size        `yaml:"k"`
	Min  yamlx.Size        `yaml:"min"`
	Max  yamlx.Size        `yaml:"max"`
	PMax yamlx.Probability `yaml:"pmax"`
	// On: arrival (default; the occupancy a packet finds) or dequeue (the
	// backlog behind a packet as it leaves, as htsim's UEC queues mark).
	On string `yaml:"on"`
}

// Dumbbell: Senders hosts on switch "left", Receivers on "right".
type Dumbbell struct {
	Senders    int  `yaml:"senders" lockstep:"required"`
	Receivers  int  `yaml:"receivers" lockstep:"required"`
	Host       Tier `yaml:"host"`
	Bottleneck Tier `yaml:"bottleneck"`
}

// LeafSpine: every leaf connects to every spine.
type LeafSpine struct {
	Leaves           int     `yaml:"leaves" lockstep:"required"`
	Spines           int     `yaml:"spines" lockstep:"required"`
	HostsPerLeaf     int     `yaml:"hosts_per_leaf" lockstep:"required"`
	Oversubscription float64 `yaml:"oversubscription"`
	Host             Tier    `yaml:"host"`
	Fabric           Tier    `yaml:"fabric"`
}

// FatTree is the 3-tier k-ary fat-tree (k^3/4 hosts).
type FatTree struct {
	K              int            `yaml:"k" lockstep:"required"`
	Host           Tier           `yaml:"host"`
	Agg            Tier           `yaml:"agg"`
	Core           Tier           `yaml:"core"`
	SwitchLatency  yamlx.Duration `yaml:"switch_latency"`
	Oversubscribed int            `yaml:"oversubscribed"`
}

// Htsim reads an htsim tiered .topo file unchanged. Such files carry no
// buffer or ECN settings: Queue gives them for every switch port.
type Htsim struct {
	File  string `yaml:"file" lockstep:"required"`
	Queue Tier   `yaml:"queue"`
}

// Graph is an explicit graph.
type Graph struct {
	Defaults Tier        `yaml:"defaults"`
	Nodes    []GraphNode `yaml:"nodes" lockstep:"required"`
	Links    []GraphLink `yaml:"links" lockstep:"required"`
}

// GraphNode is a node of an explicit graph.
type GraphNode struct {
	Name    string         `yaml:"name" lockstep:"required"`
	Kind    string         `yaml:"kind" lockstep:"required"` // host or switch
	Tier    int            `yaml:"tier"`
	Latency yamlx.Duration `yaml:"latency"`
}

// GraphLink is a link of an explicit graph; unset settings come from
// Graph.Defaults.
type GraphLink struct {
	A      string          `yaml:"a" lockstep:"required"`
	B      string          `yaml:"b" lockstep:"required"`
	Rate   yamlx.Rate      `yaml:"rate"`
	Delay  *yamlx.Duration `yaml:"delay"`
	Buffer yamlx.Size      `yaml:"buffer"`
	ECN    *ECN            `yaml:"ecn"`
}

// Transport configures every flow's endpoints.
type Transport struct {
	CC        string      `yaml:"cc"`         // reno (default)
	Recovery  string      `yaml:"recovery"`   // reno (default)
	MTU       yamlx.Size  `yaml:"mtu"`        // data packet size on the wire (default 1500)
	Header    *yamlx.Size `yaml:"header"`     // header bytes per packet (default 64)
	AckSize   yamlx.Size  `yaml:"ack_size"`   // pure ACK size (default 64)
	InitCwnd  int         `yaml:"init_cwnd"`  // segments (default 10)
	DupThresh int         `yaml:"dup_thresh"` // default 3
	RTO       RTO         `yaml:"rto"`
	ECN       bool        `yaml:"ecn"`      // ECT data packets, react to ECE
	ECNEcho   string      `yaml:"ecn_echo"` // rfc3168 (default) or per-packet
	// SACK makes receivers send SACK blocks (default: on when the
	// recovery uses them).
	SACK *bool `yaml:"sack"`
	// DelayedAck configures receivers' delayed ACKs (default off).
	DelayedAck *DelayedAck `yaml:"delayed_ack"`
	// TSOSegments: senders emit bursts of up to this many segments.
	TSOSegments int `yaml:"tso_segments"`
	// Pacing: senders pace at Linux's rate (ratio * cwnd / srtt).
	Pacing *Pacing `yaml:"pacing"`
	// RWnd is the receive window (default unlimited).
	RWnd yamlx.Size `yaml:"rwnd"`
	// STrack configures STrack's endpoints (cc strack).
	STrack *STrack `yaml:"strack"`
	// NSCC configures Ultra Ethernet's NSCC and the UET transport (cc
	// nscc; scenario/nscc.go).
	NSCC *NSCC `yaml:"nscc"`
	// Options are the congestion control's own settings (docs/scenario.md
	// lists them per module), e.g. {variant: linux} for scalable,
	// {hystart: linux-2008} for cubic, {g: 0.0625} for dctcp.
	Options map[string]string `yaml:"options"`
}

// STrack holds STrack's parameters; docs/scenario.md gives each default
// and its source.
type STrack struct {
	Paths      string          `yaml:"paths"`     // skip (default), reuse
	Entropies  int             `yaml:"entropies"` // default 256
	Alpha      *float64        `yaml:"alpha"`
	Beta       *float64        `yaml:"beta"`
	MaxMDF     *float64        `yaml:"max_mdf"`
	BaseTarget yamlx.Duration  `yaml:"base_target"`
	PerHop     *yamlx.Duration `yaml:"per_hop"`
	MinCwnd    yamlx.Size      `yaml:"min_cwnd"`
	MaxCwnd    yamlx.Size      `yaml:"max_cwnd"`
	// ReoWnd: a hole counts as lost only if it was sent more than this
	// before the packet that revealed it (default 0, every hole).
	ReoWnd yamlx.Duration `yaml:"reo_wnd"`
	// Variant: "" (today's STrack) or htsim-pr4 (the authors' htsim code,
	// csg-htsim PR #4; docs/scenario.md).
	Variant string `yaml:"variant"`
	// CCEnabled turns htsim-pr4's window control on (default off: a fixed
	// window equal to the initial window, cut only by timeouts).
	CCEnabled *bool `yaml:"cc_enabled"`
}

// DelayedAck is the receivers' delayed-ACK policy.
type DelayedAck struct {
	Count     int            `yaml:"count"`     // default 2 (RFC 5681 §4.2)
	Timeout   yamlx.Duration `yaml:"timeout"`   // default 40ms (Linux TCP_DELACK_MIN)
	QuickAcks int            `yaml:"quickacks"` // default 0
}

// Pacing is Linux's pacing: rate = ratio * cwnd / srtt.
type Pacing struct {
	SSRatio float64 `yaml:"ss_ratio"` // default 2.0 (tcp_pacing_ss_ratio)
	CARatio float64 `yaml:"ca_ratio"` // default 1.2 (tcp_pacing_ca_ratio)
}

// Output asks for optional outputs.
type Output struct {
	// Cwnd records cwnd.csv for these flows (all, or a list of ids).
	Cwnd *CwndOutput `yaml:"cwnd"`
	// Queues records queue_depth.csv.
	Queues *QueuesOutput `yaml:"queues"`
	// Pcap writes pcap/h<index>.pcap for these hosts.
	Pcap *PcapOutput `yaml:"pcap"`
	// SenderFCT adds the sender side of every flow's completion to
	// fct.csv (acked_ns, sender_fct_ns) and to summary.json
	// (sender_fct_ns): when the sender saw the last byte acknowledged,
	// where htsim and STrack-Sim end a flow. compat: stracksim implies it.
	// Omitted from the canonical encoding when false, so that scenarios
	// without it keep their digests.
	SenderFCT bool `yaml:"sender_fct" json:",omitempty"`
}

// MaxPcapHosts bounds output.pcap.hosts: captures are held in memory until
// the run ends.
const MaxPcapHosts = 64

// PcapOutput lists the hosts whose packets are captured (pcap package).
type PcapOutput struct {
	Hosts []int `yaml:"hosts" lockstep:"required"`
}

// QueuesOutput samples switch port occupancy every Interval.
type QueuesOutput struct {
	Interval yamlx.Duration `yaml:"interval" lockstep:"required"`
}

// CwndOutput selects the traced flows.
type CwndOutput struct {
	All      bool           `yaml:"all"`
	Flows    []int32        `yaml:"flows"`
	Interval yamlx.Duration `yaml:"interval"`
}

// RTO configures the retransmission timeout.
type RTO struct {
	Mode    string         `yaml:"mode"`    // rfc6298 (default) or fixed
	Value   yamlx.Duration `yaml:"value"`   // fixed: the timeout
	Min     yamlx.Duration `yaml:"min"`     // rfc6298: default 200ms (Linux)
	Max     yamlx.Duration `yaml:"max"`     // default 60s
	Initial yamlx.Duration `yaml:"initial"` // rfc6298: default 1s
	Backoff *bool          `yaml:"backoff"` // default: true for rfc6298, false for fixed
}

// Switch configures every switch.
type Switch struct {
	// Forwarding: ecmp (hash of the 5-tuple, default) or spray (hash of the
	// per-packet entropy, which senders then draw at random per packet).
	Forwarding string `yaml:"forwarding"`
	// FlowletGap: the idle gap after which flowlet forwarding may move a
	// flow (default 50us).
	FlowletGap yamlx.Duration `yaml:"flowlet_gap"`
	// Classes gives every port one queue per class (at most 8).
	Classes []SwitchClass `yaml:"classes"`
	// ControlClass: the class of ACKs, NACKs and trimmed headers (default:
	// the last class).
	ControlClass *int `yaml:"control_class"`
	// PFC: IEEE 802.1Qbb for the lossless classes.
	PFC *PFC `yaml:"pfc"`
	// SharedBuffer: a switch-wide pool with dynamic thresholds.
	SharedBuffer *SharedBuffer `yaml:"shared_buffer"`
	// Trim: cut data packets that do not fit to their header.
	Trim *Trim `yaml:"trim"`
	// CutThrough: forward once the header has arrived.
	CutThrough *CutThrough `yaml:"cut_through" json:",omitempty"`
	// INT: in-band network telemetry (HPCC); on whenever transport.cc
	// needs it.
	INT *INT `yaml:"int" json:",omitempty"`
	// Modules selects the pipeline's modules by stage.
	Modules *SwitchModules `yaml:"modules" json:",omitempty"`
}

// INT is in-band network telemetry: every switch appends a record to each
// data packet, the receiver echoes the records in its ACK.
type INT struct {
	HopBytes *yamlx.Size `yaml:"hop_bytes"` // bytes per record (default 8)
	Header   *yamlx.Size `yaml:"header"`    // bytes of the INT header before any record (default 2)
}

// CutThrough is cut-through forwarding.
type CutThrough struct {
	Header yamlx.Size `yaml:"header"`
}

// SwitchClass is one traffic class of every switch port.
type SwitchClass struct {
	// Weight: 0 strict priority, else a DWRR weight.
	Weight   int     `yaml:"weight"`
	Lossless bool    `yaml:"lossless"`
	Alpha    float64 `yaml:"alpha"` // dynamic-threshold factor (default 1)
}

// PFC is priority flow control.
type PFC struct {
	XOFF     yamlx.Size     `yaml:"xoff" lockstep:"required"`
	XON      yamlx.Size     `yaml:"xon"`
	Headroom yamlx.Size     `yaml:"headroom"`
	MTU      yamlx.Size     `yaml:"mtu"`
	Quanta   int            `yaml:"quanta"`
	Watchdog yamlx.Duration `yaml:"watchdog"`
	// StormWatchdog: every port's PFC storm watchdog (off unless given).
	StormWatchdog *StormWatchdog `yaml:"storm_watchdog" json:",omitempty"`
}

// StormWatchdog is the switches' PFC storm watchdog: a class queue paused
// without a break for DetectionTime while holding packets stops honouring
// PAUSE frames (and with action drop discards the class's packets to and
// from the peer) until none came for RestorationTime.
type StormWatchdog struct {
	DetectionTime   yamlx.Duration `yaml:"detection_time" lockstep:"required"`
	RestorationTime yamlx.Duration `yaml:"restoration_time"` // default: DetectionTime
	Action          string         `yaml:"action"`           // drop (default) or forward
}

// SharedBuffer is a switch-wide buffer pool.
type SharedBuffer struct {
	Size     yamlx.Size `yaml:"size" lockstep:"required"`
	Reserved yamlx.Size `yaml:"reserved"`
}

// Trim is packet trimming.
type Trim struct {
	Header yamlx.Size `yaml:"header"`
}

// Workload is one group of flows; a scenario concatenates its groups and
// numbers the flows 0..n-1 in that order.
type Workload struct {
	// Type: flows, permutation, incast, alltoall, poisson, cm or
	// collective.
	Type string `yaml:"type" lockstep:"required"`
	// Class: the traffic class (0-7) of the group's data packets.
	Class int            `yaml:"class"`
	Flows []FlowEntry    `yaml:"flows"` // flows
	Size  yamlx.Size     `yaml:"size"`  // permutation, incast, alltoall
	Start yamlx.Duration `yaml:"start"` // permutation, incast, alltoall, poisson
	// Incast: Senders (host indices) send to Dst; or the first N hosts
	// other than Dst when Senders is empty.
	Senders []int `yaml:"senders"`
	Dst     int   `yaml:"dst"`
	N       int   `yaml:"n"`
	// AllToAll: Hosts (default: all).
	Hosts []int `yaml:"hosts"`
	// Poisson: Load (0..1] of every host's link, sizes from CDF (a file),
	// arrivals until Start+Duration or MaxFlows.
	Load     float64        `yaml:"load"`
	CDF      string         `yaml:"cdf"`
	Duration yamlx.Duration `yaml:"duration"`
	MaxFlows int            `yaml:"max_flows"`
	// CM: an htsim connection-matrix file. TriggerDelay is the delay of
	// its triggers (htsim: none).
	File         string         `yaml:"file"`
	TriggerDelay yamlx.Duration `yaml:"trigger_delay"`
	// Collective: a collective (or a job of them) over ranks on Hosts (or
	// the ranks of Collective.Ranks), of Size bytes, from Start.
	Collective *CollectiveSpec `yaml:"collective"`
}

// CollectiveSpec is a collective of ML training, repeated as a job.
type CollectiveSpec struct {
	// Job names it in collectives.csv and jobs.csv (default w<index>).
	Job string `yaml:"job"`
	// Op: allreduce, reduce_scatter, allgather or alltoall.
	Op string `yaml:"op" lockstep:"required"`
	// Algorithm: ring (default), halving_doubling or double_binary_tree
	// (allreduce); direct (alltoall, the default there).
	Algorithm string `yaml:"algorithm"`
	// Ranks: with no hosts, this many ranks, one per host in order from
	// FirstHost, or rail-aware (Placement rail).
	Ranks     int    `yaml:"ranks"`
	FirstHost int    `yaml:"first_host"`
	Placement string `yaml:"placement"` // in_order (default) or rail
	// GPUsPerServer: for placement rail, hosts are NICs and every
	// GPUsPerServer consecutive hosts are one server (NIC i on rail i).
	GPUsPerServer int `yaml:"gpus_per_server"`
	Chunks        int `yaml:"chunks"`
	Pipeline      int `yaml:"pipeline"`
	// Delay of every dependency between steps (a reduction's cost).
	Delay yamlx.Duration `yaml:"delay"`
	// Iterations of compute then collective (default 1), Compute long.
	Iterations int            `yaml:"iterations"`
	Compute    yamlx.Duration `yaml:"compute"`
	// ComputeMax: every rank's compute of every iteration is uniform in
	// [Compute, ComputeMax] (stragglers), from the workload's random stream.
	ComputeMax yamlx.Duration `yaml:"compute_max"`
	// Buckets: the collective in this many pieces overlapped with compute.
	Buckets int `yaml:"buckets"`
	// Parallel adds tensor and pipeline parallelism: the collective is
	// then the data-parallel all-reduce of the gradients, and Compute the
	// optimizer step.
	Parallel *Parallel `yaml:"parallel"`
}

// Parallel is a job's tensor- and pipeline-parallel structure
// (workloads.ParallelConfig).
type Parallel struct {
	TP           int            `yaml:"tp"`
	PP           int            `yaml:"pp"`
	Microbatches int            `yaml:"microbatches"`
	Schedule     string         `yaml:"schedule"`
	Layers       int            `yaml:"layers"`
	Forward      yamlx.Duration `yaml:"forward"`
	Backward     yamlx.Duration `yaml:"backward"`
	TPSize       yamlx.Size     `yaml:"tp_size"`
	TPAlgorithm  string         `yaml:"tp_algorithm"`
	PPSize       yamlx.Size     `yaml:"pp_size"`
}

// FlowEntry is one explicit flow.
type FlowEntry struct {
	Src   int            `yaml:"src"`
	Dst   int            `yaml:"dst"`
	Size  yamlx.Size     `yaml:"size" lockstep:"required"`
	Start yamlx.Duration `yaml:"start"`
}

// Impairment attaches faults to the link between two named nodes, or
// (Host) to a host.
type Impairment struct {
	// Link names its two end nodes, e.g. [left, right].
	Link []string `yaml:"link"`
	// Host names a host; its faults: PFCStorm.
	Host string `yaml:"host" json:",omitempty"`
	// PFCStorm stalls the host's receive pipeline: its PFC-capable NIC
	// pauses its switch while the receive buffer is full.
	PFCStorm *PFCStorm `yaml:"pfc_storm" json:",omitempty"`
	// Direction: both (default), forward (from Link[0] to Link[1]) or reverse.
	Direction string            `yaml:"direction"`
	Loss      yamlx.Probability `yaml:"loss"`
	Gilbert   *Gilbert          `yaml:"gilbert_elliott"`
	Jitter    yamlx.Duration    `yaml:"jitter"`
	Reorder   *Reorder          `yaml:"reorder"`
	Schedule  []Change          `yaml:"schedule"`
}

// PFCStorm is a host whose NIC's receive pipeline stalls (a PFC storm
// source, Guo et al. SIGCOMM 2016 §4.3): from At to Until it drains its
// receive buffer at Drain (0: not at all), and it sends PAUSE frames for
// the lossless classes above XOFF. XOFF, XON, Headroom and Quanta default
// to the host's switch's PFC settings.
type PFCStorm struct {
	At          yamlx.Duration `yaml:"at"`
	Until       yamlx.Duration `yaml:"until"` // default: to the end of the run
	Drain       yamlx.Rate     `yaml:"drain"`
	XOFF        yamlx.Size     `yaml:"xoff"`
	XON         *yamlx.Size    `yaml:"xon"`
	Headroom    yamlx.Size     `yaml:"headroom"`
	Quanta      int            `yaml:"quanta"`
	NICWatchdog yamlx.Duration `yaml:"nic_watchdog"`
}

// Gilbert is the Gilbert-Elliott bursty loss model.
type Gilbert struct {
	P        yamlx.Probability  `yaml:"p" lockstep:"required"` // good -> bad per packet
	R        yamlx.Probability  `yaml:"r" lockstep:"required"` // bad -> good per packet
	LossGood yamlx.Probability  `yaml:"loss_good"`             // default 0
	LossBad  *yamlx.Probability `yaml:"loss_bad"`              // default 1
}

// Reorder holds back a fraction of packets.
type Reorder struct {
	Prob  yamlx.Probability `yaml:"prob" lockstep:"required"`
	Delay yamlx.Duration    `yaml:"delay" lockstep:"required"`
}

// Change is one scheduled change. "down at 10ms for 100ms" is
// {at: 10ms, down: 100ms}.
type Change struct {
	At    yamlx.Duration  `yaml:"at"`
	Down  yamlx.Duration  `yaml:"down"`  // the link is down for this long
	Rate  yamlx.Rate      `yaml:"rate"`  // new rate from At on
	Delay *yamlx.Duration `yaml:"delay"` // new propagation delay from At on
	// Loss sets the independent loss probability from At on.
	Loss *yamlx.Probability `yaml:"loss"`
}
