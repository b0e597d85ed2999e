// Package runner runs a built scenario in one process and gathers what the
// output files need. The CLI and the tests both use it.
package runner

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/pcap"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// Progress is a snapshot handed to Options.Progress.
type Progress struct {
	Now       sim.Time
	Limit     sim.Time
	Events    uint64
	FlowsDone int
	Flows     int
}

// Options tune a run.
type Options struct {
	// Progress, if set, is called every ProgressEvery events (default
	// 1<<18) and once at the end.
	Progress      func(Progress)
	ProgressEvery int
}

// Result is a finished run.
type Result struct {
	Built     *scenario.Built
	Fabric    *fabric.Fabric
	End       sim.Time
	StoppedBy string
	// Pcaps are the captures output.pcap asked for, in its host order.
	Pcaps []HostCapture
}

// HostCapture is one host's packet capture (pcap/h<Host>.pcap).
type HostCapture struct {
	Host    int
	Capture *pcap.Capture
}

// Run builds the fabric of b and runs it until every flow finished, the
// stop time, the time limit, or the last event.
func Run(b *scenario.Built, opt Options) (*Result, error) {
	f, err := fabric.New(b.Fabric)
	if err != nil {
		return nil, &scenario.Error{File: b.File, Path: "topology", Msg: err.Error()}
	}
	limit := b.StopAt
	if limit == sim.Never {
		limit = b.MaxTime
	}
	every := opt.ProgressEvery
	if every <= 0 {
		every = 1 << 18
	}
	report := func() {
		if opt.Progress != nil {
			opt.Progress(Progress{Now: f.Eng.Now(), Limit: limit, Events: f.Eng.Stats.Events,
				FlowsDone: f.T.Done, Flows: len(b.Fabric.Flows)})
		}
	}
	var caps []HostCapture
	for _, hi := range b.PcapHosts {
		if h := f.Hosts[hi]; h != nil {
			c := pcap.NewCapture()
			h.Tap = c.Tap
			caps = append(caps, HostCapture{Host: hi, Capture: c})
		}
	}
	for f.RunUntilBatch(limit, every) {
		report()
	}
	r := &Result{Built: b, Fabric: f, End: f.Eng.Now(), Pcaps: caps}
	switch {
	case f.Eng.NextEventTime() != sim.Never:
		r.End = limit
		r.StoppedBy = "max_time"
		if b.StopAt != sim.Never {
			r.StoppedBy = "stop_at"
		}
	case f.Done():
		r.End = f.LastCompletion()
		r.StoppedBy = "flows-done"
	default:
		r.StoppedBy = "no-events"
	}
	report()
	return r, nil
}

// Queues returns one row per port of every local switch, in node and port
// order.
func (r *Result) Queues() []results.QueueRow {
	f := r.Fabric
	t := f.Topo
	var rows []results.QueueRow
	for node, s := range f.Switches {
		if s == nil {
			continue
		}
		for pi := range s.Ports {
			p := &s.Ports[pi]
			l := &f.Eng.Links[p.Link]
			tl := t.Links[int(p.Link)/2]
			rows = append(rows, results.QueueRow{Switch: t.Nodes[node].Name, Port: pi, Peer: t.Nodes[p.Peer].Name,
				Tier: tl.Tier, RateBps: tl.Rate, Enqueued: p.Enqueued, Dropped: p.Dropped, Marked: p.Marked,
				PeakBytes: p.PeakBytes, Bytes: p.Bytes, TxPackets: p.TxPackets, LinkLost: l.LostRandom + l.LostDown})
		}
	}
	return rows
}

// Summary returns the machine-independent part of summary.json.
func (r *Result) Summary() results.Summary {
	f := r.Fabric
	b := r.Built
	s := results.Summary{Scenario: filepath.Base(b.File), Name: b.Name, Digest: b.Digest, Seed: b.Seed,
		EndNs: r.End.NsString(), Events: f.Eng.Stats.Events, Flows: len(b.Fabric.Flows),
		PacketsSent: f.Eng.Stats.Sent, LinkLost: f.Eng.Stats.LinkLost, StoppedBy: r.StoppedBy,
		PeakEventQueue: f.Eng.Stats.PeakQueue, PacketPool: f.Eng.Pool.Capacity()}
	for i := range f.T.Records {
		rec := &f.T.Records[i]
		if rec.Finished {
			s.FlowsFinished++
		}
		s.Retransmits += rec.Retransmits
		s.Timeouts += rec.Timeouts
	}
	for _, h := range f.Hosts {
		if h != nil {
			s.HostPackets += h.Created
		}
	}
	for _, sw := range f.Switches {
		if sw == nil {
			continue
		}
		for i := range sw.Ports {
			s.QueueDrops += sw.Ports[i].Dropped
			s.Marks += sw.Ports[i].Marked
		}
	}
	s.Drops = s.QueueDrops + s.LinkLost
	return s
}

// WriteDir writes fct.csv, queues.csv and summary.json into dir, each
// atomically, and pcap/h<index>.pcap per captured host.
func (r *Result) WriteDir(dir string, perf results.Perf) error {
	f := r.Fabric
	if err := results.WriteFileAtomic(filepath.Join(dir, "fct.csv"), func(w io.Writer) error {
		return results.WriteFCT(w, r.Built.Fabric.Flows, f.T.Records)
	}); err != nil {
		return err
	}
	rows := r.Queues()
	if err := results.WriteFileAtomic(filepath.Join(dir, "queues.csv"), func(w io.Writer) error {
		return results.WriteQueues(w, rows)
	}); err != nil {
		return err
	}
	if log := f.T.CwndLog; len(log) > 0 {
		rows := slices.Clone(log)
		slices.SortStableFunc(rows, func(a, b hostsim.CwndRow) int {
			if a.Time != b.Time {
				return cmp.Compare(a.Time, b.Time)
			}
			return cmp.Compare(a.Flow, b.Flow)
		})
		if err := results.WriteFileAtomic(filepath.Join(dir, "cwnd.csv"), func(w io.Writer) error {
			return results.WriteCwnd(w, rows)
		}); err != nil {
			return err
		}
	}
	if rows := r.Depths(); len(rows) > 0 {
		if err := results.WriteFileAtomic(filepath.Join(dir, "queue_depth.csv"), func(w io.Writer) error {
			return results.WriteDepth(w, rows)
		}); err != nil {
			return err
		}
	}
	if len(r.Pcaps) > 0 {
		pdir := filepath.Join(dir, "pcap")
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return err
		}
		for _, c := range r.Pcaps {
			if err := results.WriteFileAtomic(filepath.Join(pdir, fmt.Sprintf("h%d.pcap", c.Host)), func(w io.Writer) error {
				_, err := c.Capture.WriteTo(w)
				return err
			}); err != nil {
				return err
			}
		}
	}
	s := r.Summary()
	s.Perf = perf
	return results.WriteFileAtomic(filepath.Join(dir, "summary.json"), func(w io.Writer) error {
		return results.WriteSummary(w, &s)
	})
}

// Depths returns the queue samples of every local switch, by time, then
// switch (node order), then port.
func (r *Result) Depths() []results.DepthRow {
	var rows []results.DepthRow
	for node, s := range r.Fabric.Switches {
		if s == nil {
			continue
		}
		for _, q := range s.Samples {
			rows = append(rows, results.DepthRow{Time: q.Time, Switch: r.Fabric.Topo.Nodes[node].Name, Port: q.Port, Bytes: q.Bytes})
		}
	}
	slices.SortStableFunc(rows, func(a, b results.DepthRow) int { return cmp.Compare(a.Time, b.Time) })
	return rows
}
