package results

import (
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/pcap"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// Finish says why a fabric stopped running.
type Finish uint8

const (
	// FinishDrained: no event was left before the time limit.
	FinishDrained Finish = 1 + iota
	// FinishLimit: events were left at the time limit (stop_at or
	// max_time).
	FinishLimit
	// FinishDeadlock: the PFC deadlock search found one (Part.Deadlock);
	// every event before its time ran, none after.
	FinishDeadlock
)

// FlowPart is one flow's record as one partition saw it: the sender's
// fields are valid if Sender (the flow's source host is local), the
// receive-side fields (Finished, Finish, BytesReceived) if Receiver.
type FlowPart struct {
	ID       int32
	Sender   bool
	Receiver bool
	Rec      hostsim.FlowRecord
}

// TaskPart is when compute task ID (fabric.Config.Tasks) fired.
type TaskPart struct {
	ID int32
	At sim.Time
}

// PortRow is a queues.csv row with the switch's node index, for merging.
type PortRow struct {
	Node int
	Row  QueueRow
}

// ClassPart is a queues_class.csv row with the switch's node index.
type ClassPart struct {
	Node int
	Row  ClassRow
}

// PFCPart is a pfc.csv row with its node index.
type PFCPart struct {
	Node int
	Row  PFCRow
}

// ClassDepthPart is a queue_depth_class.csv row with the switch's node
// index.
type ClassDepthPart struct {
	Node int
	Row  ClassDepthRow
}

// DepthPart is a queue_depth.csv row with the switch's node index.
type DepthPart struct {
	Node int
	Row  DepthRow
}

// HostPcap is one host's capture (pcap/h<Host>.pcap).
type HostPcap struct {
	Host int
	Data []byte
}

// Part is what one fabric (a whole run, or one partition of it)
// contributes to a run's outputs. It is a plain value (msgpack-encodable)
// so that a node process can send it back over NATS; Merge combines the
// parts of a run.
type Part struct {
	Partition int
	// Digest is the digest of the scenario the fabric was built from;
	// Merge refuses parts of another scenario.
	Digest string
	// Flows holds the records of flows with a local endpoint, in flow
	// order.
	Flows []FlowPart
	// Tasks holds when the local compute tasks that fired did, in task
	// order.
	Tasks []TaskPart `msgpack:",omitempty"`
	// Ports holds the local switches' ports in node and port order.
	Ports []PortRow
	// Classes holds their class queues (queues_class.csv), when the
	// switches keep per-class counters.
	Classes []ClassPart
	// PFC holds the local switch ports' and hosts' pfc.csv rows, in node
	// order (with fabric.Config.PFCReport); NICDrops sums the local
	// hosts' receive-buffer drops.
	PFC      []PFCPart `msgpack:",omitempty"`
	NICDrops uint64    `msgpack:",omitempty"`
	// Cwnd is the local senders' cwnd samples (cwnd.csv), in the order
	// they were taken.
	Cwnd []hostsim.CwndRow
	// Depths is the local switches' queue samples (queue_depth.csv),
	// switch by switch in node order, each in the order taken.
	Depths []DepthPart
	// ClassDepths is the same per class queue (queue_depth_class.csv),
	// with several classes.
	ClassDepths []ClassDepthPart
	// Pcaps are the local captured hosts' pcap files, in output.pcap order.
	Pcaps []HostPcap
	Stats sim.Stats
	// Now is the time of the last event the fabric ran.
	Now            sim.Time
	LastCompletion sim.Time
	// FlowsDone says every local flow's local parts finished.
	FlowsDone   bool
	HostPackets uint64
	PoolSlots   int
	// Cons is the fabric's packet conservation counts; a caller that
	// holds packets outside the fabric (a node's unread batches) adds them.
	Cons   fabric.Conservation
	Finish Finish
	// Deadlock is the PFC deadlock that stopped the run (FinishDeadlock).
	Deadlock *fabric.Deadlock
}

// Recorder gathers a fabric's part of the outputs: it taps the local
// hosts that output.pcap captures when it is made, before the fabric
// runs, and makes the Part when the fabric has stopped.
type Recorder struct {
	f      *fabric.Fabric
	digest string
	caps   []hostCapture
	limit  sim.Time // the run's end bound: open pauses count up to it
}

type hostCapture struct {
	host int
	c    *pcap.Capture
}

// pfcRows is the local part of pfc.csv: every switch port and host, in
// node order, for each class some switch runs lossless.
func (r *Recorder) pfcRows() []PFCPart {
	f := r.f
	t := f.Topology()
	var rows []PFCPart
	for node := range f.NumNodes() {
		s := f.Switch(node)
		if s == nil {
			continue
		}
		for pi := range s.Ports {
			pt := &s.Ports[pi]
			for c := 0; c < pt.NumClasses(); c++ {
				if f.LosslessClasses()&(1<<uint(c)) == 0 {
					continue
				}
				k := pt.Class(c)
				rows = append(rows, PFCPart{Node: node, Row: PFCRow{Node: t.Nodes[node].Name, Kind: "switch", Port: pi,
					Peer: t.Nodes[pt.Peer].Name, Class: c, PausesSent: k.PausesSent, PausesRecv: k.PausesRecv,
					FirstPauseSent: k.FirstPauseSent, FirstPaused: k.FirstPaused, Paused: pt.PausedTime(c, r.limit),
					Storms: k.Storms, Restores: k.Restores, Drops: k.StormDrops}})
			}
		}
	}
	for hi := range f.NumHosts() {
		h := f.Host(hi)
		if h == nil {
			continue
		}
		node := t.Hosts[hi]
		peer := f.Engine().LinkTo(h.Link)
		for c := 0; c < sim.MaxClasses; c++ {
			if f.LosslessClasses()&(1<<uint(c)) == 0 {
				continue
			}
			k := h.PFC(c)
			rows = append(rows, PFCPart{Node: node, Row: PFCRow{Node: t.Nodes[node].Name, Kind: "host", Peer: t.Nodes[peer].Name,
				Class: c, PausesSent: k.PausesSent, PausesRecv: k.PausesRecv, FirstPauseSent: k.FirstPauseSent,
				FirstPaused: k.FirstPaused, Paused: h.PausedTime(c, r.limit), Storms: k.Trips, Restores: k.Restores,
				Drops: k.RxDrops}})
		}
	}
	return rows
}

// NewRecorder attaches to f, built from b (perhaps one partition of it).
func NewRecorder(b *scenario.Built, f *fabric.Fabric) *Recorder {
	r := &Recorder{f: f, digest: b.Digest(), limit: b.Limit()}
	for _, hi := range b.PcapHosts {
		if h := f.Host(hi); h != nil {
			c := pcap.NewCapture()
			h.Tap = c.Tap
			r.caps = append(r.caps, hostCapture{host: hi, c: c})
		}
	}
	return r
}

// Part makes partition's part from the fabric as it stands, which
// stopped for reason finish.
func (r *Recorder) Part(partition int, finish Finish) *Part {
	f := r.f
	e := f.Engine()
	p := &Part{Partition: partition, Digest: r.digest, Stats: e.Stats, Now: e.Now(), LastCompletion: f.LastCompletion(),
		FlowsDone: f.Done(), PoolSlots: e.Pool.Capacity(), Cons: f.Conservation(), Cwnd: f.Transport().CwndLog, Finish: finish}
	t := f.Topology()
	nflows, nports := 0, 0
	for i := range f.Transport().Flows {
		fl := &f.Transport().Flows[i]
		if e.Local(sim.ElemID(t.Hosts[fl.Src])) || e.Local(sim.ElemID(t.Hosts[fl.Dst])) {
			nflows++
		}
	}
	for node := range f.NumNodes() {
		if s := f.Switch(node); s != nil {
			nports += len(s.Ports)
		}
	}
	p.Flows = make([]FlowPart, 0, nflows)
	p.Ports = make([]PortRow, 0, nports)
	for i := range f.Transport().Flows {
		fl := &f.Transport().Flows[i]
		snd, rcv := e.Local(sim.ElemID(t.Hosts[fl.Src])), e.Local(sim.ElemID(t.Hosts[fl.Dst]))
		if snd || rcv {
			p.Flows = append(p.Flows, FlowPart{ID: fl.ID, Sender: snd, Receiver: rcv, Rec: f.Transport().Records[i]})
		}
	}
	for k, at := range f.Transport().TaskFired {
		if at != sim.Never {
			p.Tasks = append(p.Tasks, TaskPart{ID: int32(k), At: at})
		}
	}
	for i := range f.NumHosts() {
		h := f.Host(i)
		if h != nil {
			p.HostPackets += h.Created
			p.NICDrops += h.RxDrops()
		}
	}
	if f.PFCReport() {
		p.PFC = r.pfcRows()
	}
	for _, hc := range r.caps {
		p.Pcaps = append(p.Pcaps, HostPcap{Host: hc.host, Data: hc.c.Bytes()})
	}
	for node := range f.NumNodes() {
		s := f.Switch(node)
		if s == nil {
			p.Ports = externalPorts(f, node, p.Ports)
			continue
		}
		for _, q := range s.ClassSamples {
			p.ClassDepths = append(p.ClassDepths, ClassDepthPart{Node: node, Row: ClassDepthRow{Time: q.Time,
				Switch: t.Nodes[node].Name, Port: q.Port, Class: q.Class, Bytes: q.Bytes}})
		}
		for _, q := range s.Samples {
			p.Depths = append(p.Depths, DepthPart{Node: node, Row: DepthRow{Time: q.Time,
				Switch: t.Nodes[node].Name, Port: q.Port, Bytes: q.Bytes}})
		}
		for pi := range s.Ports {
			pt := &s.Ports[pi]
			l := e.Links[pt.Link]
			tl := t.Links[int(pt.Link)/2]
			p.Ports = append(p.Ports, PortRow{Node: node, Row: QueueRow{Switch: t.Nodes[node].Name, Port: pi,
				Peer: t.Nodes[pt.Peer].Name, Tier: tl.Tier, RateBps: tl.Rate, Enqueued: pt.Enqueued, Dropped: pt.Dropped,
				Marked: pt.Marked, PeakBytes: pt.PeakBytes, Bytes: pt.Bytes, TxPackets: pt.TxPackets,
				LinkLost: l.LostRandom + l.LostDown}})
			for c := 0; c < pt.NumClasses() && pt.HasClassCounters(); c++ {
				k := pt.Class(c)
				p.Classes = append(p.Classes, ClassPart{Node: node, Row: ClassRow{Switch: t.Nodes[node].Name, Port: pi,
					Peer: t.Nodes[pt.Peer].Name, Class: c, Enqueued: k.Enqueued, Dropped: k.Dropped, Marked: k.Marked,
					TxPackets: k.TxPackets, Trimmed: k.Trimmed, TrimBytes: k.TrimBytes, PausesSent: k.PausesSent,
					PausesRecv: k.PausesRecv, Paused: pt.PausedTime(c, r.limit), HeadroomDrops: k.HeadroomDrops, PeakBytes: k.PeakBytes,
					CutThrough: k.CutThrough, SharedPeak: max(0, k.SharedPeak)}})
			}
		}
	}
	return p
}

// externalPorts appends the queues.csv rows of external element node
// (fabric/external.go): its ports, with the counters it last reported
// (none: no rows).
func externalPorts(f *fabric.Fabric, node int, rows []PortRow) []PortRow {
	cs := f.ExternalCounters(node)
	if cs == nil {
		return rows
	}
	t := f.Topology()
	e := f.Engine()
	for pi, link := range f.ExternalLinks(node) {
		c := &cs[pi]
		l := e.Links[link]
		tl := t.Links[int(link)/2]
		rows = append(rows, PortRow{Node: node, Row: QueueRow{Switch: t.Nodes[node].Name, Port: pi,
			Peer: t.Nodes[e.LinkTo(link)].Name, Tier: tl.Tier, RateBps: tl.Rate, Enqueued: c.Enqueued, Dropped: c.Dropped,
			Marked: c.Marked, PeakBytes: c.PeakBytes, Bytes: c.Bytes, TxPackets: c.TxPackets,
			LinkLost: l.LostRandom + l.LostDown}})
	}
	return rows
}
