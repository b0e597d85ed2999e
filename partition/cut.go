package partition

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// CutModel predicts, before a run, whether cutting it into in-memory
// partitions makes it faster (the default of `lockstep run`, design.md
// §9). Its constants are measured on this project's machines
// (docs/decisions.md, "The default cut"); the prediction is
//
//	one  = E * Event
//	cut  = (E*Event + X*Cross) * imbalance / P + W * (RoundBase + RoundPerPart*P)
//
// with E the estimated events, X the packets that cross the cut and W the
// barrier rounds. A run is cut when cut <= MaxRatio*one and one-cut >=
// MinSaving.
type CutModel struct {
	Event        float64 // seconds of CPU per event
	Cross        float64 // seconds of CPU per packet crossing a cut link (export, batch, inject)
	RoundBase    float64 // seconds of wall per barrier round
	RoundPerPart float64 // and per partition of the round
	MaxRatio     float64 // cut only when it takes at most this share of one partition's time
	MinSaving    float64 // and saves at least this many seconds
}

// DefaultCutModel holds the constants measured for docs/decisions.md.
var DefaultCutModel = CutModel{
	Event:        0.25e-6,
	Cross:        0.35e-6,
	RoundBase:    0.4e-6,
	RoundPerPart: 1.2e-6,
	MaxRatio:     0.8,
	MinSaving:    0.25,
}

// DefaultCut is how a run was cut and why: summary.json's perf.cut.
type DefaultCut struct {
	Partitions int    `json:"partitions"`
	Reason     string `json:"reason"`
	Cores      int    `json:"cores"`
	// The model's inputs and prediction (zero when it was not consulted).
	Events      float64 `json:"estimated_events,omitempty"`
	Windows     float64 `json:"estimated_windows,omitempty"`
	Cross       float64 `json:"estimated_cross_packets,omitempty"`
	Hops        float64 `json:"mean_hops,omitempty"`
	LookaheadNs float64 `json:"lookahead_ns,omitempty"`
	Imbalance   float64 `json:"imbalance,omitempty"`
	OneSeconds  float64 `json:"predicted_one_partition_s,omitempty"`
	CutSeconds  float64 `json:"predicted_cut_s,omitempty"`
}

// Decide chooses the default cut of b for a process given `cores` cores:
// the placement (nil for one partition) and the reasons. A scenario with
// a placement section is not the model's business (the caller runs it as
// asked).
func (m CutModel) Decide(b *scenario.Built, cores int) (*Placement, DefaultCut, error) {
	c := DefaultCut{Partitions: 1, Cores: cores}
	if cores < 2 {
		c.Reason = "one core"
		return nil, c, nil
	}
	if b.Fabric.Compat != nil {
		c.Reason = "compat profile: one element"
		return nil, c, nil
	}
	if len(b.Fabric.External) > 0 {
		// Their windows cost a round trip each, which a cut does not
		// share out (the model does not count them).
		c.Reason = "external elements: their round trips set the pace"
		return nil, c, nil
	}
	t := b.Topo
	if len(t.Hosts) < 2 || len(t.Nodes) < 4 {
		c.Reason = "fabric too small to cut"
		return nil, c, nil
	}
	c.Hops = meanHops(t)
	mtu := float64(max(b.Fabric.Transport.MTU, 64))
	limit := b.Limit()
	// A flow cut short by the time limit sends at most at the slowest
	// link's rate (a bottleneck it may cross; on fat-trees and
	// leaf-spines every link is at least a NIC's rate).
	slowest := sim.Bandwidth(1<<62 - 1)
	for _, l := range t.Links {
		slowest = min(slowest, max(l.Rate, 1))
	}
	var pkts float64
	sent := make([]float64, len(t.Hosts))
	recv := make([]float64, len(t.Hosts))
	var first, last sim.Time = sim.Never, 0
	for i := range b.Fabric.Flows {
		f := &b.Fabric.Flows[i]
		if f.Src < 0 || f.Src >= len(t.Hosts) || f.Dst < 0 || f.Dst >= len(t.Hosts) {
			continue
		}
		size := float64(f.Size)
		if limit != sim.Never && f.Start < limit {
			size = min(size, float64(min(slowest, hostRate(t, f.Src)))/8*(limit-f.Start).Seconds())
		}
		pkts += size / mtu
		sent[f.Src] += size
		recv[f.Dst] += size
		first, last = min(first, f.Start), max(last, f.Start)
	}
	// A data packet and its ACK each cost an arrival and a transmit
	// completion per hop: 4 events per hop (24 on a fat-tree's 6 hops,
	// as measured on examples/fattree-k8-permutation.yaml).
	c.Events = pkts * 4 * c.Hops
	c.OneSeconds = c.Events * m.Event
	if c.OneSeconds*(1-1/float64(cores)) < m.MinSaving {
		c.Reason = fmt.Sprintf("too little work: about %.3g events, %.2fs in one partition; a cut saves less than %.2fs", c.Events, c.OneSeconds, m.MinSaving)
		return nil, c, nil
	}
	// Busy virtual time: the most loaded NIC at line rate, or the spread
	// of the flows' starts (idle time between them is skipped, so this
	// overestimates the rounds).
	var busy float64
	for h := range sent {
		busy = max(busy, max(sent[h], recv[h])*8/float64(hostRate(t, h)))
	}
	if last > first {
		busy = max(busy, (last - first).Seconds())
	}
	if limit != sim.Never {
		busy = min(busy, limit.Seconds())
	}
	var best *Placement
	bestCut := DefaultCut{}
	for p := cores; p >= 2; p /= 2 {
		if p > len(t.Nodes) {
			continue
		}
		pl, err := AutoFlows(t, b.Fabric.Impairments, b.Fabric.Flows, b.Fabric.Tasks, p)
		if err != nil {
			return nil, c, err
		}
		if pl.Lookahead == sim.Never || pl.Lookahead <= 0 {
			continue
		}
		cc := c
		cc.Partitions = p
		cc.LookaheadNs = float64(pl.Lookahead) / float64(sim.Nanosecond)
		cc.Imbalance = pl.Imbalance()
		cc.Windows = busy / pl.Lookahead.Seconds()
		cc.Cross = pkts * 2 * c.Hops * float64(len(pl.Cuts)) / float64(max(len(t.Links), 1))
		cc.CutSeconds = (c.Events*m.Event+cc.Cross*m.Cross)*cc.Imbalance/float64(p) +
			cc.Windows*(m.RoundBase+m.RoundPerPart*float64(p))
		if best == nil || cc.CutSeconds < bestCut.CutSeconds {
			best, bestCut = pl, cc
		}
	}
	if best == nil {
		c.Reason = "no link can be cut"
		return nil, c, nil
	}
	if bestCut.CutSeconds > m.MaxRatio*c.OneSeconds || c.OneSeconds-bestCut.CutSeconds < m.MinSaving {
		c = bestCut
		c.Partitions = 1
		c.Reason = fmt.Sprintf("a cut does not pay: %.2fs predicted in %d partitions against %.2fs in one", bestCut.CutSeconds, bestCut.Partitions, bestCut.OneSeconds)
		return nil, c, nil
	}
	bestCut.Reason = fmt.Sprintf("%d cores: %.2fs predicted in %d partitions against %.2fs in one", cores, bestCut.CutSeconds, bestCut.Partitions, bestCut.OneSeconds)
	return best, bestCut, nil
}

// hostRate is the rate of host h's first link (its NIC), at least 1 bit/s.
func hostRate(t *topologies.Topology, h int) sim.Bandwidth {
	node := t.Hosts[h]
	for _, l := range t.Links {
		if l.A == node || l.B == node {
			return max(l.Rate, 1)
		}
	}
	return 1
}

// meanHops is the mean number of links from host 0 to the other hosts
// (one breadth-first search; at least 1).
func meanHops(t *topologies.Topology) float64 {
	n := len(t.Nodes)
	adj := make([][]int32, n)
	for _, l := range t.Links {
		if l.A >= 0 && l.A < n && l.B >= 0 && l.B < n {
			adj[l.A] = append(adj[l.A], int32(l.B))
			adj[l.B] = append(adj[l.B], int32(l.A))
		}
	}
	dist := make([]int32, n)
	for i := range dist {
		dist[i] = -1
	}
	src := t.Hosts[0]
	dist[src] = 0
	queue := []int32{int32(src)}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range adj[v] {
			if dist[w] < 0 {
				dist[w] = dist[v] + 1
				queue = append(queue, w)
			}
		}
	}
	var sum, cnt float64
	for _, h := range t.Hosts[1:] {
		if h >= 0 && h < n && dist[h] > 0 {
			sum += float64(dist[h])
			cnt++
		}
	}
	if cnt == 0 {
		return 1
	}
	return sum / cnt
}
