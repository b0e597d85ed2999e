package results

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/internal/version"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/stracksim"
)

// Outputs is a run's outputs: the merge of its parts. A single-process
// run is the merge of one part; a partitioned run's outputs are the same,
// byte for byte (docs/design.md §2).
type Outputs struct {
	Built   *scenario.Built
	Records []hostsim.FlowRecord // by flow, in b.Fabric.Flows order
	// Ideal is every flow's ideal FCT (IdealFCT), in the same order.
	Ideal []sim.Time
	// TaskFired is when each compute task fired (sim.Never: it did not),
	// in b.Fabric.Tasks order.
	TaskFired []sim.Time
	Ports     []QueueRow
	// Classes is queues_class.csv (empty without per-class counters).
	Classes []ClassRow
	// PFC is pfc.csv (empty unless fabric.Config.PFCReport).
	PFC    []PFCRow
	Cwnd   []hostsim.CwndRow
	Depths []DepthRow
	// ClassDepths is queue_depth_class.csv (with several classes).
	ClassDepths []ClassDepthRow
	Pcaps       []HostPcap // in the scenario's output.pcap order
	End         sim.Time
	// StoppedBy is summary.json's stopped_by: "flows-done", "stop_at",
	// "max_time", "no-events", "pfc-deadlock" (Complete false) or
	// "incomplete".
	StoppedBy string
	Parts     []*Part // by partition (MergePartial: nil where missing)
	// Complete says the run finished; a run that failed after it started
	// (MergePartial) has Complete false, Reason why, and Missing the
	// partitions whose part never came.
	Complete bool
	Reason   string
	Missing  []int
}

// Merge combines the parts of a run of b, one per partition 0..len-1.
//
// Flow records are merged by flow id: the sender's part gives the record,
// the receiver's part its receive-side fields (Finished, Finish,
// BytesReceived), as hostsim.FlowRecord documents. Ports are concatenated
// in node order; cwnd samples are sorted stably by (time, flow); queue
// samples by switch node, then stably by time; pcaps follow output.pcap.
// The run ends at the time limit if it stopped there, else at the last
// completion if every flow finished, else at the last event.
func Merge(b *scenario.Built, parts []*Part) (*Outputs, error) { return MergeIdeal(b, parts, nil) }

// MergeIdeal is Merge with the flows' ideal FCTs (IdealFCT, in
// b.Fabric.Flows order) already computed; nil computes them.
func MergeIdeal(b *scenario.Built, parts []*Part, ideal []sim.Time) (*Outputs, error) {
	byPart := make([]*Part, len(parts))
	for _, r := range parts {
		if r == nil || r.Partition < 0 || r.Partition >= len(parts) || byPart[r.Partition] != nil {
			return nil, fmt.Errorf("results: the part of partition %v is missing or repeated", partOf(r))
		}
		if r.Digest != b.Digest() {
			return nil, fmt.Errorf("results: partition %d ran scenario %.16s, not %.16s", r.Partition, r.Digest, b.Digest())
		}
		byPart[r.Partition] = r
	}
	if len(byPart) == 0 {
		return nil, fmt.Errorf("results: no parts to merge")
	}
	flows := b.Fabric.Flows
	if len(ideal) != len(flows) {
		ideal = IdealFCT(b.Topo, b.Fabric.Transport, flows)
	}
	o := &Outputs{Built: b, Records: make([]hostsim.FlowRecord, len(flows)), Parts: byPart, Ideal: ideal}
	// Flow ids are 0..n-1 in order (hostsim.NewTransport), so a flow's
	// index is its id; index checks it.
	index := func(id int32) (int, bool) {
		return int(id), id >= 0 && int(id) < len(flows) && flows[id].ID == id
	}
	snd := make([]*hostsim.FlowRecord, len(flows))
	rcv := make([]*hostsim.FlowRecord, len(flows))
	for _, r := range byPart {
		for k := range r.Flows {
			fp := &r.Flows[k]
			i, ok := index(fp.ID)
			if !ok || fp.Sender && snd[i] != nil || fp.Receiver && rcv[i] != nil {
				return nil, fmt.Errorf("results: partition %d: flow %d unknown or held twice", r.Partition, fp.ID)
			}
			if fp.Sender {
				snd[i] = &fp.Rec
			}
			if fp.Receiver {
				rcv[i] = &fp.Rec
			}
		}
	}
	for i := range flows {
		if snd[i] == nil || rcv[i] == nil {
			return nil, fmt.Errorf("results: flow %d: no record of its sender or its receiver", flows[i].ID)
		}
		rec := *snd[i]
		d := rcv[i]
		rec.Finished, rec.Finish, rec.BytesReceived = d.Finished, d.Finish, d.BytesReceived
		o.Records[i] = rec
	}

	if err := o.mergeTasks(byPart); err != nil {
		return nil, err
	}
	o.mergeSeries(byPart)
	for _, h := range b.PcapHosts {
		if !o.addPcap(byPart, h) {
			return nil, fmt.Errorf("results: no capture of host %d", h)
		}
	}

	finish := byPart[0].Finish
	done := true
	var last, now sim.Time
	for _, r := range byPart {
		if r.Finish != finish {
			return nil, fmt.Errorf("results: partitions %d and %d finished differently", 0, r.Partition)
		}
		done = done && r.FlowsDone
		last = max(last, r.LastCompletion)
		now = max(now, r.Now)
	}
	switch {
	case finish == FinishDeadlock:
		// A failed run: whole files, marked incomplete, with the report
		// every part agrees on.
		d := byPart[0].Deadlock
		if d == nil {
			return nil, fmt.Errorf("results: a deadlock finish without its report")
		}
		for _, r := range byPart {
			if r.Deadlock == nil || r.Deadlock.At != d.At || !slices.Equal(r.Deadlock.Cycle, d.Cycle) {
				return nil, fmt.Errorf("results: partitions 0 and %d report different deadlocks", r.Partition)
			}
		}
		o.End = d.At
		o.StoppedBy = "pfc-deadlock"
		o.Reason = d.Report(b.Topo)
		return o, nil
	case finish == FinishLimit:
		o.End = b.Limit()
		o.StoppedBy = "max_time"
		if b.StopAt != sim.Never {
			o.StoppedBy = "stop_at"
		}
	case finish != FinishDrained:
		return nil, fmt.Errorf("results: the run has not finished")
	case done:
		o.End = last
		o.StoppedBy = "flows-done"
	default:
		o.End = now
		o.StoppedBy = "no-events"
	}
	o.Complete = true
	return o, nil
}

// mergeTasks fills TaskFired from the parts present (nil entries are
// skipped); a task unknown or reported twice is an error, after which the
// other parts' tasks are still merged.
func (o *Outputs) mergeTasks(parts []*Part) error {
	o.TaskFired = make([]sim.Time, len(o.Built.Fabric.Tasks))
	for k := range o.TaskFired {
		o.TaskFired[k] = sim.Never
	}
	var err error
	for _, r := range parts {
		if r == nil {
			continue
		}
		for _, tp := range r.Tasks {
			if tp.ID < 0 || int(tp.ID) >= len(o.TaskFired) || o.TaskFired[tp.ID] != sim.Never {
				err = cmp.Or(err, fmt.Errorf("results: partition %d: task %d unknown or reported twice", r.Partition, tp.ID))
				continue
			}
			o.TaskFired[tp.ID] = tp.At
		}
	}
	return err
}

// MergePartial combines what a run that failed after it started has: the
// parts of p partitions (nil, or absent past len(parts), where a part never
// came), each as its fabric stood when it stopped, perhaps one window
// apart. It never fails. A flow's sender fields come from its sender's
// part and its receive fields from its receiver's, as in Merge; a flow
// whose receiver's part is missing counts as unfinished. Ports, cwnd and
// queue samples and captures are those of the parts present. The outputs
// end at the latest event any part ran, are stopped by "incomplete", and
// carry reason.
func MergePartial(b *scenario.Built, p int, parts []*Part, reason string) *Outputs {
	byPart := make([]*Part, p)
	for _, r := range parts {
		if r != nil && r.Partition >= 0 && r.Partition < p && r.Digest == b.Digest() && byPart[r.Partition] == nil {
			byPart[r.Partition] = r
		}
	}
	flows := b.Fabric.Flows
	o := &Outputs{Built: b, Records: make([]hostsim.FlowRecord, len(flows)), Parts: byPart, StoppedBy: "incomplete",
		Reason: reason, Ideal: IdealFCT(b.Topo, b.Fabric.Transport, flows)}
	// Flow ids are 0..n-1 in order (hostsim.NewTransport), so a flow's
	// index is its id; index checks it.
	index := func(id int32) (int, bool) {
		return int(id), id >= 0 && int(id) < len(flows) && flows[id].ID == id
	}
	present := make([]*Part, 0, p)
	for i, r := range byPart {
		if r == nil {
			o.Missing = append(o.Missing, i)
			continue
		}
		present = append(present, r)
		for k := range r.Flows {
			fp := &r.Flows[k]
			i, ok := index(fp.ID)
			if !ok {
				continue
			}
			rec := &o.Records[i]
			if fp.Sender {
				fin, at, got := rec.Finished, rec.Finish, rec.BytesReceived
				*rec = fp.Rec
				rec.Finished, rec.Finish, rec.BytesReceived = fin, at, got
			}
			if fp.Receiver {
				rec.Finished, rec.Finish, rec.BytesReceived = fp.Rec.Finished, fp.Rec.Finish, fp.Rec.BytesReceived
			}
		}
		o.End = max(o.End, r.Now)
	}
	_ = o.mergeTasks(present) // a partial run keeps what it can
	o.mergeSeries(present)
	for _, h := range b.PcapHosts {
		o.addPcap(present, h)
	}
	return o
}

// mergeSeries fills the port rows and the per-class rows (by switch node,
// each switch's ports in order), the cwnd samples (stably by time, then flow: a flow's samples
// all come from its sender's part, in time order) and the queue samples
// (switch by switch in node order, then stably by time) of parts, in an
// order that does not depend on the cut.
func (o *Outputs) mergeSeries(parts []*Part) {
	var nports, nclasses, ndepths, ncdepths, npfc, ncwnd int
	for _, r := range parts {
		nports += len(r.Ports)
		nclasses += len(r.Classes)
		ndepths += len(r.Depths)
		ncdepths += len(r.ClassDepths)
		npfc += len(r.PFC)
		ncwnd += len(r.Cwnd)
	}
	ports := make([]PortRow, 0, nports)
	classes := make([]ClassPart, 0, nclasses)
	depths := make([]DepthPart, 0, ndepths)
	cdepths := make([]ClassDepthPart, 0, ncdepths)
	pfc := make([]PFCPart, 0, npfc)
	o.Cwnd = slices.Grow(o.Cwnd, ncwnd)
	for _, r := range parts {
		pfc = append(pfc, r.PFC...)
		cdepths = append(cdepths, r.ClassDepths...)
		ports = append(ports, r.Ports...)
		classes = append(classes, r.Classes...)
		o.Cwnd = append(o.Cwnd, r.Cwnd...)
		depths = append(depths, r.Depths...)
	}
	sortByNode(ports, func(r PortRow) int { return r.Node })
	sortByNode(classes, func(r ClassPart) int { return r.Node })
	sortByNode(pfc, func(r PFCPart) int { return r.Node })
	sortByNode(depths, func(r DepthPart) int { return r.Node })
	sortByNode(cdepths, func(r ClassDepthPart) int { return r.Node })
	o.Ports = slices.Grow(o.Ports, len(ports))
	for i := range ports {
		o.Ports = append(o.Ports, ports[i].Row)
	}
	o.Classes = slices.Grow(o.Classes, len(classes))
	for i := range classes {
		o.Classes = append(o.Classes, classes[i].Row)
	}
	o.PFC = slices.Grow(o.PFC, len(pfc))
	for i := range pfc {
		o.PFC = append(o.PFC, pfc[i].Row)
	}
	sortStable(o.Cwnd, func(a, b hostsim.CwndRow) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.Flow, b.Flow))
	})
	o.Depths = slices.Grow(o.Depths, len(depths))
	for i := range depths {
		o.Depths = append(o.Depths, depths[i].Row)
	}
	sortStable(o.Depths, func(a, b DepthRow) int { return cmp.Compare(a.Time, b.Time) })
	o.ClassDepths = slices.Grow(o.ClassDepths, len(cdepths))
	for i := range cdepths {
		o.ClassDepths = append(o.ClassDepths, cdepths[i].Row)
	}
	sortStable(o.ClassDepths, func(a, b ClassDepthRow) int { return cmp.Compare(a.Time, b.Time) })
}

// sortByNode sorts rows stably by node.
func sortByNode[R any](rows []R, node func(R) int) {
	sortStable(rows, func(a, b R) int { return cmp.Compare(node(a), node(b)) })
}

// sortStable is slices.SortStableFunc, which leaves sorted rows as they
// are: it skips them (one part's rows are mostly in order already).
func sortStable[R any](rows []R, cmp func(a, b R) int) {
	if !slices.IsSortedFunc(rows, cmp) {
		slices.SortStableFunc(rows, cmp)
	}
}

// addPcap appends host h's capture from the part that holds it and
// reports whether one did.
func (o *Outputs) addPcap(parts []*Part, h int) bool {
	for _, r := range parts {
		for _, c := range r.Pcaps {
			if c.Host == h {
				o.Pcaps = append(o.Pcaps, HostPcap{Host: h, Data: c.Data})
				return true
			}
		}
	}
	return false
}

func partOf(r *Part) any {
	if r == nil {
		return "nil"
	}
	return r.Partition
}

// Summary is summary.json's machine-independent part. Events, packets and
// losses are sums over the parts; PeakEventQueue is the largest part's and
// PacketPool the sum of the parts' pools (WriteDir writes both under perf).
func (o *Outputs) Summary() Summary {
	b := o.Built
	s := Summary{Scenario: filepath.Base(b.File), Name: b.Name, Digest: b.Digest(), Seed: b.Seed(),
		EndPs: int64(o.End), EndNs: json.Number(o.End.NsString()), Flows: len(b.Fabric.Flows), StoppedBy: o.StoppedBy, Complete: o.Complete,
		Reason: o.Reason, MissingPartitions: o.Missing, Build: version.Get()}
	for _, r := range o.Parts {
		if r == nil {
			continue
		}
		s.Events += r.Stats.Events
		s.PacketsSent += r.Stats.Sent
		s.LinkLost += r.Stats.LinkLost
		s.PeakEventQueue = max(s.PeakEventQueue, r.Stats.PeakQueue)
		s.PacketPool += r.PoolSlots
		s.HostPackets += r.HostPackets
	}
	var fcts []sim.Time
	var slows []float64
	for i := range o.Records {
		rec := &o.Records[i]
		if rec.Finished {
			s.FlowsFinished++
			fct := rec.Finish - FlowStart(&b.Fabric.Flows[i], rec)
			fcts = append(fcts, fct)
			if i < len(o.Ideal) && o.Ideal[i] > 0 {
				slows = append(slows, Slowdown(fct, o.Ideal[i]))
			}
		}
		s.Retransmits += rec.Retransmits
		s.Timeouts += rec.Timeouts
	}
	if len(fcts) > 0 {
		p := func(q float64) json.Number { v, _ := Percentile(fcts, q); return json.Number(v.NsString()) }
		s.FCT = &FCTPercentiles{P50: p(0.5), P99: p(0.99), P999: p(0.999)}
	}
	if len(slows) > 0 {
		p := func(q float64) json.Number { v, _ := Percentile(slows, q); return json.Number(formatSlowdown(v)) }
		s.Slowdown = &SlowdownPercentiles{P50: p(0.5), P99: p(0.99)}
	}
	for _, q := range o.Ports {
		s.QueueDrops += q.Dropped
		s.Marks += q.Marked
	}
	for _, r := range o.Parts {
		if r != nil {
			s.NICDrops += r.NICDrops
		}
	}
	s.Drops = s.QueueDrops + s.LinkLost + s.NICDrops
	if b.SenderFCT {
		o.senderSide(&s)
	}
	return s
}

// senderSide adds the sender-side FCTs' percentiles to s, and under
// compat: stracksim what STrack-Sim reports.
func (o *Outputs) senderSide(s *Summary) {
	b := o.Built
	var fcts []sim.Time
	var sent, retx uint64
	for i := range o.Records {
		rec := &o.Records[i]
		if rec.AckedAt > 0 {
			fcts = append(fcts, rec.AckedAt-FlowStart(&b.Fabric.Flows[i], rec))
		}
		sent += rec.PacketsSent
		retx += rec.Retransmits
	}
	if len(fcts) > 0 {
		p := func(q float64) json.Number { v, _ := Percentile(fcts, q); return json.Number(v.NsString()) }
		s.SenderFCT = &FCTPercentiles{P50: p(0.5), P99: p(0.99), P999: p(0.999)}
	}
	if b.Fabric.Compat == nil {
		return
	}
	// SimRunner::summarize: the completed flows only, then
	// SimSummary::from_fcts (stracksim.Summarize).
	f := stracksim.Summarize(slices.Clone(fcts))
	ns := func(t sim.Time) json.Number { return json.Number(t.NsString()) }
	s.StrackSim = &StrackSimSummary{CompletedFlows: len(fcts), PacketsSent: sent, PacketsRetransmits: retx,
		ECNMarks: s.Marks, Drops: s.Drops, P50: ns(f.P50), P95: ns(f.P95), P99: ns(f.P99), Max: ns(f.Max)}
}

// Conservation sums the parts' packet counts; at the end of a run no
// packet is between partitions, so the sum balances as one fabric's does.
func (o *Outputs) Conservation() fabric.Conservation {
	var c fabric.Conservation
	for _, r := range o.Parts {
		if r == nil {
			continue
		}
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
func (o *Outputs) WriteFCT(w io.Writer) error {
	return WriteFCT(w, o.Built.Fabric.Flows, o.Records, o.Ideal, o.Built.SenderFCT)
}

// WriteDir writes fct.csv, queues.csv, and when the scenario asks for
// them cwnd.csv, queue_depth.csv and pcap/h<i>.pcap, then summary.json
// last, each atomically. perf and extra go to the summary's perf and
// extra fields (extra nil: none).
func (o *Outputs) WriteDir(dir string, perf Perf, extra any) error {
	if err := WriteFileAtomic(filepath.Join(dir, "fct.csv"), o.WriteFCT); err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(dir, "queues.csv"), func(w io.Writer) error {
		return WriteQueues(w, o.Ports)
	}); err != nil {
		return err
	}
	if len(o.Classes) > 0 {
		if err := WriteFileAtomic(filepath.Join(dir, "queues_class.csv"), func(w io.Writer) error {
			return WriteClasses(w, o.Classes)
		}); err != nil {
			return err
		}
	}
	if len(o.PFC) > 0 {
		if err := WriteFileAtomic(filepath.Join(dir, "pfc.csv"), func(w io.Writer) error {
			return WritePFC(w, o.PFC)
		}); err != nil {
			return err
		}
	}
	cwnd, rate := splitRate(o.Cwnd)
	if len(cwnd) > 0 {
		if err := WriteFileAtomic(filepath.Join(dir, "cwnd.csv"), func(w io.Writer) error {
			return WriteCwnd(w, cwnd)
		}); err != nil {
			return err
		}
	}
	if len(rate) > 0 {
		if err := WriteFileAtomic(filepath.Join(dir, "rate.csv"), func(w io.Writer) error {
			return WriteRate(w, rate)
		}); err != nil {
			return err
		}
	}
	if len(o.Built.Collectives) > 0 {
		rows := o.Collectives()
		if err := WriteFileAtomic(filepath.Join(dir, "collectives.csv"), func(w io.Writer) error {
			return WriteCollectives(w, rows)
		}); err != nil {
			return err
		}
		if err := WriteFileAtomic(filepath.Join(dir, "jobs.csv"), func(w io.Writer) error {
			return WriteJobs(w, rows)
		}); err != nil {
			return err
		}
	}
	if len(o.Depths) > 0 {
		if err := WriteFileAtomic(filepath.Join(dir, "queue_depth.csv"), func(w io.Writer) error {
			return WriteDepth(w, o.Depths)
		}); err != nil {
			return err
		}
	}
	if len(o.ClassDepths) > 0 {
		if err := WriteFileAtomic(filepath.Join(dir, "queue_depth_class.csv"), func(w io.Writer) error {
			return WriteClassDepth(w, o.ClassDepths)
		}); err != nil {
			return err
		}
	}
	if len(o.Pcaps) > 0 {
		pdir := filepath.Join(dir, "pcap")
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return err
		}
		for _, c := range o.Pcaps {
			if err := WriteFileAtomic(filepath.Join(pdir, fmt.Sprintf("h%d.pcap", c.Host)), func(w io.Writer) error {
				_, err := w.Write(c.Data)
				return err
			}); err != nil {
				return err
			}
		}
	}
	s := o.Summary()
	perf.PeakEventQueue, perf.PacketPool = s.PeakEventQueue, s.PacketPool
	s.Perf = perf
	s.Extra = extra
	return WriteFileAtomic(filepath.Join(dir, "summary.json"), func(w io.Writer) error {
		return WriteSummary(w, &s)
	})
}
