package ui

import (
	"time"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// Live feeds a Model from a running fabric. Observe is runner.Options'
// Observe: it runs on the run's goroutine between event batches, reads
// the fabric and hands copies to the model; nothing else touches the
// fabric, and nothing it does reaches the run's outputs.
type Live struct {
	*Model
	b        *scenario.Built
	ideal    []sim.Time
	seen     []bool
	lastTx   []uint64 // per switch port (in fabric order), bytes sent
	lastT    sim.Time
	cwndAt   int
	start    time.Time
	ports    []portRef
	linkRate []int64
}

type portRef struct {
	node, port, link int
}

// NewLive makes the model of a run of b.
func NewLive(b *scenario.Built) *Live {
	l := &Live{Model: newModel(topologyOf(b.Topo, b.Name)), b: b, start: time.Now()}
	l.ideal = results.IdealFCT(b.Topo, b.Fabric.Transport, b.Fabric.Flows)
	l.seen = make([]bool, len(b.Fabric.Flows))
	for _, lk := range b.Topo.Links {
		l.linkRate = append(l.linkRate, int64(lk.Rate))
	}
	l.update(func(s *State) {
		s.Progress = Progress{LimitNs: nsOf(b.Limit()), Flows: len(b.Fabric.Flows), Live: true}
	})
	return l
}

func topologyOf(t *topologies.Topology, name string) Topology {
	out := Topology{Name: name}
	for _, n := range t.Nodes {
		out.Nodes = append(out.Nodes, Node{Name: n.Name, Kind: n.Kind.String(), Tier: n.Tier})
	}
	for _, lk := range t.Links {
		out.Links = append(out.Links, Link{A: lk.A, B: lk.B, RateBps: int64(lk.Rate), Tier: lk.Tier})
	}
	return out
}

func nsOf(t sim.Time) float64 { return float64(t) / float64(sim.Nanosecond) }

// Observe takes a snapshot of f (runner.Options.Observe).
func (l *Live) Observe(f *fabric.Fabric) {
	e := f.Engine()
	now := e.Now()
	tr := f.Transport()
	var flows []Flow
	for i := range tr.Flows {
		r := &tr.Records[i]
		if l.seen[i] || !r.Finished {
			continue
		}
		l.seen[i] = true
		fl := &tr.Flows[i]
		fct := r.Finish - fl.Start
		flows = append(flows, Flow{ID: fl.ID, Size: fl.Size, FCTNs: nsOf(fct), Slowdown: results.Slowdown(fct, l.ideal[i])})
	}
	sortFlows(flows)
	var cwnd []CwndPoint
	for _, r := range tr.CwndLog[l.cwndAt:] {
		if r.Flow < MaxCwndFlows {
			cwnd = append(cwnd, CwndPoint{TNs: nsOf(r.Time), Flow: r.Flow, Cwnd: r.Cwnd})
		}
	}
	l.cwndAt = len(tr.CwndLog)
	nn := len(l.topo.Nodes)
	fr := Frame{TNs: nsOf(now), Util: make([]float64, len(l.topo.Links)), Queue: make([]int64, nn)}
	if l.ports == nil {
		for node := range f.NumNodes() {
			if s := f.Switch(node); s != nil {
				for pi := range s.Ports {
					l.ports = append(l.ports, portRef{node: node, port: pi, link: int(s.Ports[pi].Link) / 2})
				}
			}
		}
		l.lastTx = make([]uint64, len(l.ports))
	}
	dt := now - l.lastT
	for node := range f.NumNodes() {
		if s := f.Switch(node); s != nil {
			s.Settle(e) // a port whose elided transmit-done has passed is idle
		}
	}
	for i, pr := range l.ports {
		p := &f.Switch(pr.node).Ports[pr.port]
		fr.Queue[pr.node] += p.Occupancy()
		if dt > 0 && l.linkRate[pr.link] > 0 {
			capBytes := float64(l.linkRate[pr.link]) / 8 * float64(dt) / float64(sim.Second)
			u := float64(p.Bytes-l.lastTx[i]) / capBytes
			fr.Util[pr.link] = max(fr.Util[pr.link], min(u, 1))
		}
		l.lastTx[i] = p.Bytes
	}
	l.lastT = now
	events := e.Stats.Events
	wall := time.Since(l.start).Seconds()
	l.update(func(s *State) {
		s.Progress.NowNs = nsOf(now)
		s.Progress.Events = events
		if wall > 0 {
			s.Progress.EventsPerSec = float64(events) / wall
		}
		s.Progress.FlowsDone = tr.Done
		s.Flows = append(s.Flows, flows...)
		s.Cwnd = append(s.Cwnd, cwnd...)
		if dt > 0 || len(s.Frames) == 0 {
			s.Frames = append(s.Frames, fr)
		}
	})
}

// Finish marks the run ended at end (the run's virtual end). The last
// snapshot may have been taken later in virtual time, after the engine
// drained a stale timer (an RTO armed for 1 s after the last flow ended):
// the first frame past end is moved to end (its utilisation over the
// shorter interval, nothing having been sent after the end) and any later
// one dropped, so the view ends where the run did.
func (l *Live) Finish(end sim.Time) {
	endNs := nsOf(end)
	l.update(func(s *State) {
		s.Progress.Finished = true
		s.Progress.NowNs = endNs
		for i := range s.Frames {
			fr := &s.Frames[i]
			if fr.TNs <= endNs {
				continue
			}
			prev := 0.0
			if i > 0 {
				prev = s.Frames[i-1].TNs
			}
			if endNs > prev {
				scale := (fr.TNs - prev) / (endNs - prev)
				util := make([]float64, len(fr.Util))
				for j, u := range fr.Util {
					util[j] = min(1, u*scale)
				}
				fr.Util, fr.TNs = util, endNs
				i++
			}
			s.Frames = s.Frames[:i]
			break
		}
	})
}
