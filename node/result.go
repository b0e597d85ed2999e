package node

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// FlowPart is one flow's record as one partition saw it.
type FlowPart struct {
	ID  int32
	Rec hostsim.FlowRecord
}

// PortRow is a queues.csv row with the switch's node index, for merging.
type PortRow struct {
	Node int
	Row  results.QueueRow
}

// DepthRow is a queue_depth.csv row with the switch's node index.
type DepthRow struct {
	Node int
	Row  results.DepthRow
}

// HostPcap is one host's capture (pcap/h<Host>.pcap).
type HostPcap struct {
	Host int
	Data []byte
}

// PartResult is everything a partition contributes to a run's outputs. It
// is a plain value (msgpack-encodable) so that node processes can send it
// back over NATS.
type PartResult struct {
	Partition int
	// Flows holds the records of flows with a local endpoint, by id.
	Flows []FlowPart
	// Ports holds the local switches' ports in node and port order.
	Ports []PortRow
	// Cwnd is the local senders' cwnd samples (cwnd.csv), in the order
	// they were taken.
	Cwnd []hostsim.CwndRow
	// Depths is the local switches' queue samples (queue_depth.csv),
	// switch by switch in node order, each in the order taken.
	Depths []DepthRow
	// Pcaps are the local captured hosts' pcap files.
	Pcaps []HostPcap
	Stats sim.Stats
	// Now is the time of the last event the partition ran.
	Now            sim.Time
	LastCompletion sim.Time
	// FlowsDone says every local flow's local parts finished.
	FlowsDone   bool
	HostPackets uint64
	PoolSlots   int
	Cons        fabric.Conservation
	Core        CoreStats
	// Final is the finishing grant the partition accepted.
	Final barrier.Grant
	// Perf is the shell's wall-clock view (zero in memory).
	Perf NodePerf
}

// NodePerf is a node's machine-dependent statistics.
type NodePerf struct {
	WallSeconds float64 // from setup to the finishing grant
	RunSeconds  float64 // running windows
	WaitSeconds float64 // waiting for grants and batches
	MaxWait     float64 // the longest single wait, seconds
	Messages    uint64  // NATS messages received (batches, grants, resyncs)
}

// Result collects the partition's part of the outputs.
func (c *Core) Result() *PartResult {
	f := c.F
	r := &PartResult{Partition: c.part, Stats: f.Eng.Stats, Now: f.Eng.Now(), LastCompletion: f.LastCompletion(),
		FlowsDone: f.Done(), PoolSlots: f.Eng.Pool.Capacity(), Cons: f.Conservation(), Core: c.stats, Final: c.grant,
		Cwnd: f.T.CwndLog}
	// Packets received in batches and not yet injected are still on
	// their wires, as they would be in a single process.
	for _, b := range c.inbox {
		r.Cons.OnWire += len(b.Packets)
		r.Cons.PoolLive += len(b.Packets)
	}
	t := f.Topo
	for i := range f.T.Flows {
		fl := &f.T.Flows[i]
		if c.F.Eng.Local(sim.ElemID(t.Hosts[fl.Src])) || c.F.Eng.Local(sim.ElemID(t.Hosts[fl.Dst])) {
			r.Flows = append(r.Flows, FlowPart{ID: fl.ID, Rec: f.T.Records[i]})
		}
	}
	for _, h := range f.Hosts {
		if h != nil {
			r.HostPackets += h.Created
		}
	}
	for _, hc := range c.caps {
		r.Pcaps = append(r.Pcaps, HostPcap{Host: hc.host, Data: hc.c.Bytes()})
	}
	for node, s := range f.Switches {
		if s == nil {
			continue
		}
		for _, q := range s.Samples {
			r.Depths = append(r.Depths, DepthRow{Node: node, Row: results.DepthRow{Time: q.Time,
				Switch: t.Nodes[node].Name, Port: q.Port, Bytes: q.Bytes}})
		}
		for pi := range s.Ports {
			p := &s.Ports[pi]
			l := &f.Eng.Links[p.Link]
			tl := t.Links[int(p.Link)/2]
			r.Ports = append(r.Ports, PortRow{Node: node, Row: results.QueueRow{Switch: t.Nodes[node].Name, Port: pi,
				Peer: t.Nodes[p.Peer].Name, Tier: tl.Tier, RateBps: tl.Rate, Enqueued: p.Enqueued, Dropped: p.Dropped,
				Marked: p.Marked, PeakBytes: p.PeakBytes, Bytes: p.Bytes, TxPackets: p.TxPackets,
				LinkLost: l.LostRandom + l.LostDown}})
		}
	}
	return r
}

// Merged is a partitioned run's outputs, merged: the same fct.csv and
// queues.csv as a single-process run of the same scenario and seed.
type Merged struct {
	Built     *scenario.Built
	Placement *partition.Placement
	Records   []hostsim.FlowRecord
	Ports     []results.QueueRow
	Cwnd      []hostsim.CwndRow
	Depths    []results.DepthRow
	Pcaps     []HostPcap // in the scenario's output.pcap order
	End       sim.Time
	StoppedBy string
	Parts     []*PartResult // by partition
}

// Merge combines the partitions' results. Flow records are merged by flow
// id: the sender's partition gives the record, the receiver's partition
// its receive-side fields (Finished, Finish, BytesReceived), as
// hostsim.FlowRecord documents. The end of the run follows runner.Run: the
// stop time if the barrier finished on it, the last completion if every
// flow finished, else the last event.
func Merge(b *scenario.Built, pl *partition.Placement, parts []*PartResult) (*Merged, error) {
	if len(parts) != pl.P {
		return nil, fmt.Errorf("node: %d results for %d partitions", len(parts), pl.P)
	}
	byPart := make([]*PartResult, pl.P)
	for _, r := range parts {
		if r == nil || r.Partition < 0 || r.Partition >= pl.P || byPart[r.Partition] != nil {
			return nil, fmt.Errorf("node: results of partition %v missing or repeated", partOf(r))
		}
		byPart[r.Partition] = r
	}
	t := b.Topo
	flows := b.Fabric.Flows
	m := &Merged{Built: b, Placement: pl, Records: make([]hostsim.FlowRecord, len(flows)), Parts: byPart}
	recs := make([]map[int32]*hostsim.FlowRecord, pl.P)
	for i, r := range byPart {
		recs[i] = make(map[int32]*hostsim.FlowRecord, len(r.Flows))
		for k := range r.Flows {
			recs[i][r.Flows[k].ID] = &r.Flows[k].Rec
		}
	}
	for i := range flows {
		f := &flows[i]
		sp, dp := pl.Part[t.Hosts[f.Src]], pl.Part[t.Hosts[f.Dst]]
		s, ok1 := recs[sp][f.ID]
		d, ok2 := recs[dp][f.ID]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("node: flow %d: no record from partition %d or %d", f.ID, sp, dp)
		}
		rec := *s
		rec.Finished, rec.Finish, rec.BytesReceived = d.Finished, d.Finish, d.BytesReceived
		m.Records[i] = rec
	}
	var rows []PortRow
	for _, r := range byPart {
		rows = append(rows, r.Ports...)
	}
	slices.SortStableFunc(rows, func(a, b PortRow) int { return cmp.Compare(a.Node, b.Node) })
	for _, r := range rows {
		m.Ports = append(m.Ports, r.Row)
	}
	// A flow's samples all come from its sender's partition, in time
	// order, so a stable sort by (time, flow) of the concatenation gives
	// runner.Result.WriteDir's order.
	for _, r := range byPart {
		m.Cwnd = append(m.Cwnd, r.Cwnd...)
	}
	slices.SortStableFunc(m.Cwnd, func(a, b hostsim.CwndRow) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.Flow, b.Flow))
	})
	// runner.Result.Depths: switch by switch in node order, then stably
	// by time.
	var depths []DepthRow
	for _, r := range byPart {
		depths = append(depths, r.Depths...)
	}
	slices.SortStableFunc(depths, func(a, b DepthRow) int { return cmp.Compare(a.Node, b.Node) })
	for _, d := range depths {
		m.Depths = append(m.Depths, d.Row)
	}
	slices.SortStableFunc(m.Depths, func(a, b results.DepthRow) int { return cmp.Compare(a.Time, b.Time) })
	caps := map[int][]byte{}
	for _, r := range byPart {
		for _, c := range r.Pcaps {
			caps[c.Host] = c.Data
		}
	}
	for _, h := range b.PcapHosts {
		data, ok := caps[h]
		if !ok {
			return nil, fmt.Errorf("node: no capture of host %d", h)
		}
		m.Pcaps = append(m.Pcaps, HostPcap{Host: h, Data: data})
	}

	final := byPart[0].Final
	done := true
	var last, now sim.Time
	for _, r := range byPart {
		if !sameFinal(r.Final, final) {
			return nil, fmt.Errorf("node: partitions %d and %d finished differently", 0, r.Partition)
		}
		done = done && r.FlowsDone
		last = max(last, r.LastCompletion)
		now = max(now, r.Now)
	}
	switch {
	case !final.Finished:
		return nil, fmt.Errorf("node: the run has not finished")
	case final.Reason == barrier.FinishStopTime:
		m.End = Limit(b)
		m.StoppedBy = "max_time"
		if b.StopAt != sim.Never {
			m.StoppedBy = "stop_at"
		}
	case done:
		m.End = last
		m.StoppedBy = "flows-done"
	default:
		m.End = now
		m.StoppedBy = "no-events"
	}
	return m, nil
}

func partOf(r *PartResult) any {
	if r == nil {
		return "nil"
	}
	return r.Partition
}

func sameFinal(a, b barrier.Grant) bool {
	return a.Window == b.Window && a.Start == b.Start && a.Finished == b.Finished && a.Reason == b.Reason
}

// Summary is summary.json's machine-independent part, computed as
// runner.Result.Summary does over the merged partitions. Events, packets
// and losses are sums; PeakEventQueue is the largest partition's and
// PacketPool the sum of the partitions' pools.
func (m *Merged) Summary() results.Summary {
	b := m.Built
	s := results.Summary{Scenario: filepath.Base(b.File), Name: b.Name, Digest: b.Digest, Seed: b.Seed,
		EndNs: m.End.NsString(), Flows: len(b.Fabric.Flows), StoppedBy: m.StoppedBy}
	for _, r := range m.Parts {
		s.Events += r.Stats.Events
		s.PacketsSent += r.Stats.Sent
		s.LinkLost += r.Stats.LinkLost
		s.PeakEventQueue = max(s.PeakEventQueue, r.Stats.PeakQueue)
		s.PacketPool += r.PoolSlots
		s.HostPackets += r.HostPackets
	}
	for i := range m.Records {
		rec := &m.Records[i]
		if rec.Finished {
			s.FlowsFinished++
		}
		s.Retransmits += rec.Retransmits
		s.Timeouts += rec.Timeouts
	}
	for _, q := range m.Ports {
		s.QueueDrops += q.Dropped
		s.Marks += q.Marked
	}
	s.Drops = s.QueueDrops + s.LinkLost
	return s
}

// Conservation sums the partitions' packet counts; at the end of a run
// no packet is between partitions, so the sum balances as a single
// fabric's does.
func (m *Merged) Conservation() fabric.Conservation {
	var c fabric.Conservation
	for _, r := range m.Parts {
		x := r.Cons
		c.Created += x.Created
		c.Consumed += x.Consumed
		c.QueueDrops += x.QueueDrops
		c.LinkLost += x.LinkLost
		c.NoRoute += x.NoRoute
		c.Misrouted += x.Misrouted
		c.InQueues += x.InQueues
		c.OnWire += x.OnWire
		c.PoolLive += x.PoolLive
	}
	return c
}

// WriteFCT writes fct.csv.
func (m *Merged) WriteFCT(w io.Writer) error {
	return results.WriteFCT(w, m.Built.Fabric.Flows, m.Records)
}

// WriteDir writes fct.csv, queues.csv, and when the scenario asks for
// them cwnd.csv, queue_depth.csv and pcap/h<i>.pcap, then summary.json,
// each atomically, as runner.Result.WriteDir does; extra goes to the summary's
// Extra field.
func (m *Merged) WriteDir(dir string, perf results.Perf, extra any) error {
	if err := results.WriteFileAtomic(filepath.Join(dir, "fct.csv"), m.WriteFCT); err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, "queues.csv"), func(w io.Writer) error {
		return results.WriteQueues(w, m.Ports)
	}); err != nil {
		return err
	}
	if len(m.Depths) > 0 {
		if err := results.WriteFileAtomic(filepath.Join(dir, "queue_depth.csv"), func(w io.Writer) error {
			return results.WriteDepth(w, m.Depths)
		}); err != nil {
			return err
		}
	}
	if len(m.Pcaps) > 0 {
		pdir := filepath.Join(dir, "pcap")
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return err
		}
		for _, c := range m.Pcaps {
			if err := results.WriteFileAtomic(filepath.Join(pdir, fmt.Sprintf("h%d.pcap", c.Host)), func(w io.Writer) error {
				_, err := w.Write(c.Data)
				return err
			}); err != nil {
				return err
			}
		}
	}
	if len(m.Cwnd) > 0 {
		if err := results.WriteFileAtomic(filepath.Join(dir, "cwnd.csv"), func(w io.Writer) error {
			return results.WriteCwnd(w, m.Cwnd)
		}); err != nil {
			return err
		}
	}
	s := m.Summary()
	s.Perf = perf
	s.Extra = extra
	return results.WriteFileAtomic(filepath.Join(dir, "summary.json"), func(w io.Writer) error {
		return results.WriteSummary(w, &s)
	})
}
