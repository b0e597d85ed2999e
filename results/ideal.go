package results

import (
	"math"
	"slices"
	"strconv"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// hop is one link direction on a flow's path: its rate and its delay
// (propagation plus the sending switch's forwarding latency, as the fabric
// builds it).
type hop struct {
	rate  sim.Bandwidth
	delay sim.Time
}

// IdealFCT returns every flow's ideal FCT (in flows order): the time from
// its start until its last byte arrives when it is alone on the fabric as
// built and its sender puts every packet on the wire back to back, with no
// congestion control, no ACK clocking and no loss (the "empty fabric"
// normaliser of pFabric's normalized FCT and Homa's slowdown;
// docs/decisions.md "Ideal FCT and slowdown").
//
// The flow is cut into packets as the sender cuts it: n = ceil(size/MSS)
// packets, all MTU bytes on the wire but the last, which carries the rest
// of the payload plus the header. The path is the forwarding table's
// first equal-cost choice at every hop (lowest port). Every hop is
// store-and-forward: a packet's serialisation at a hop starts when it has
// fully arrived and the hop has finished the packet before it. For that
// tandem the last byte arrives at
//
//	sum of the hops' delays + max over the path's lattice of serialisation times
//
// which, with n-1 equal packets of w = MTU wire bytes followed by one of
// v wire bytes, is
//
//	max over m of  sum_{i<=m} t_i(w) + (n-2) max_{i<=m} t_i(w) + sum_{i>=m} t_i(v)
//
// (t_i(x): hop i's serialisation of x bytes, sim.Bandwidth.TxTime, as the
// engine rounds it). For n = 1 it is sum_i t_i(v). For a flow that the
// sender's window does not limit this is exactly what the engine computes,
// so such a flow alone on an empty fabric has slowdown 1. A flow whose
// path cannot be followed (it should not happen for a built scenario) has
// ideal FCT 0.
func IdealFCT(topo *topologies.Topology, cfg hostsim.Config, flows []hostsim.FlowSpec) []sim.Time {
	ix, err := topologies.Compile(topo)
	if err != nil {
		return make([]sim.Time, len(flows))
	}
	return IdealFCTRoutes(topo, cfg, flows, ix.Routes())
}

// IdealFCTRoutes is IdealFCT over routes already compiled for topo (every
// switch's row): a one-process run's fabric keeps them, and compiling them
// again costs as much as its setup did (5 s of a k=74 run).
func IdealFCTRoutes(topo *topologies.Topology, cfg hostsim.Config, flows []hostsim.FlowSpec, routes *topologies.Routes) []sim.Time {
	out := make([]sim.Time, len(flows))
	ix := topologies.CompilePorts(topo)
	mss := cfg.MTU - cfg.Header
	if mss <= 0 {
		return out
	}
	paths := map[[2]int][]hop{}
	for i := range flows {
		f := &flows[i]
		key := [2]int{f.Src, f.Dst}
		p, ok := paths[key]
		if !ok {
			p = pathOf(topo, ix, routes, f.Src, f.Dst)
			paths[key] = p
		}
		if len(p) == 0 {
			continue
		}
		out[i] = idealOver(p, f.Size, mss, cfg.Header)
	}
	return out
}

// pathOf follows the forwarding table from host src to host dst, taking
// the lowest equal-cost port at every node; nil if it cannot.
func pathOf(t *topologies.Topology, ix *topologies.Index, routes *topologies.Routes, src, dst int) []hop {
	if src < 0 || dst < 0 || src >= len(t.Hosts) || dst >= len(t.Hosts) || src == dst {
		return nil
	}
	node, end := t.Hosts[src], t.Hosts[dst]
	var p []hop
	for node != end {
		// A host sends on its NIC, its one link (hosts have no forwarding
		// rows: topologies.Routes.Next is empty there).
		first := int32(0)
		if t.Nodes[node].Kind != topologies.Host {
			next := routes.Next(node, dst)
			if len(next) == 0 {
				return nil
			}
			first = next[0]
		}
		if len(p) > len(t.Nodes) || len(ix.Ports(node)) == 0 {
			return nil
		}
		port := ix.Ports(node)[first]
		l := &t.Links[port.Link]
		p = append(p, hop{rate: l.Rate, delay: l.Delay + t.Nodes[node].Latency})
		node = port.Peer
	}
	return p
}

// idealOver is the ideal FCT of size payload bytes over path p (IdealFCT).
func idealOver(p []hop, size, mss, header int64) sim.Time {
	n := max(1, (size+mss-1)/mss)
	last := size - (n-1)*mss + header // wire bytes of the last packet
	full := mss + header
	var delay sim.Time
	for _, h := range p {
		delay += h.delay
	}
	if n == 1 {
		var s sim.Time
		for _, h := range p {
			s += h.rate.TxTime(int(last))
		}
		return delay + s
	}
	// suffix[m] = sum_{i>=m} t_i(last)
	suffix := make([]sim.Time, len(p)+1)
	for i := len(p) - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + p[i].rate.TxTime(int(last))
	}
	var best, prefix, peak sim.Time
	for m, h := range p {
		t := h.rate.TxTime(int(full))
		prefix += t
		peak = max(peak, t)
		best = max(best, prefix+sim.Time(n-2)*peak+suffix[m])
	}
	return delay + best
}

// Slowdown is fct over ideal (0 when either is unknown).
func Slowdown(fct, ideal sim.Time) float64 {
	if ideal <= 0 || fct <= 0 {
		return 0
	}
	return float64(fct) / float64(ideal)
}

// formatSlowdown writes a slowdown with six decimals (deterministic).
func formatSlowdown(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }

// Percentile is the nearest-rank q-quantile (0 < q <= 1) of xs, which it
// sorts; NaN when xs is empty. Nearest rank (the smallest value with at
// least q of the values at or below it) is always one of the samples, so
// it needs no interpolation rule.
func Percentile[T int64 | float64 | sim.Time](xs []T, q float64) (T, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	slices.Sort(xs)
	// The epsilon keeps 0.99*100 (99.00000000000001 in binary) at rank 99.
	k := int(math.Ceil(q*float64(len(xs))-1e-9)) - 1
	k = min(max(k, 0), len(xs)-1)
	return xs[k], true
}
