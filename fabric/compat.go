package fabric

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/stracksim"
	"github.com/lockstep-sim/lockstep/switchsim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// newCompat builds a fabric under the STrack-Sim profile: one element, the
// World, on the first node, receives every event; switches exist for
// their port counters only and hosts not at all (their records live in
// the Transport as usual). It runs in one partition.
func newCompat(cfg Config) (*Fabric, error) {
	t := cfg.Topo
	if cfg.Local != nil {
		for node := range t.Nodes {
			if !cfg.Local(node) {
				return nil, fmt.Errorf("compat stracksim: the profile runs in one partition (STrack-Sim orders events of equal time by one global counter)")
			}
		}
	}
	if len(cfg.Impairments) > 0 {
		return nil, fmt.Errorf("compat stracksim: link impairments are not part of the profile")
	}
	if len(cfg.Tasks) > 0 {
		return nil, fmt.Errorf("compat stracksim: compute tasks (jobs of collectives) are not part of the profile")
	}
	ix, err := topologies.Compile(t)
	if err != nil {
		return nil, err
	}
	n := len(t.Nodes)
	specs := make([]sim.LinkSpec, 2*len(t.Links))
	for i, l := range t.Links {
		specs[DirID(i, true)] = sim.LinkSpec{From: sim.ElemID(l.A), To: sim.ElemID(l.B), Rate: l.Rate, Delay: l.Delay + t.Nodes[l.A].Latency}
		specs[DirID(i, false)] = sim.LinkSpec{From: sim.ElemID(l.B), To: sim.ElemID(l.A), Rate: l.Rate, Delay: l.Delay + t.Nodes[l.B].Latency}
	}
	eng, err := sim.NewEngine(cfg.Seed, n, specs, nil)
	if err != nil {
		return nil, err
	}
	for i := range cfg.Flows {
		fl := &cfg.Flows[i]
		if fl.Src < 0 || fl.Src >= len(t.Hosts) || fl.Dst < 0 || fl.Dst >= len(t.Hosts) || fl.Src == fl.Dst {
			return nil, fmt.Errorf("flow %d: %d -> %d is not a pair of distinct hosts of the %d", fl.ID, fl.Src, fl.Dst, len(t.Hosts))
		}
		if int(fl.ID) != i || fl.Size <= 0 {
			return nil, fmt.Errorf("flow %d: ids must be 0..n-1 in order and sizes positive", i)
		}
	}
	dir := func(node int, p topologies.Port) sim.LinkID { return DirID(p.Link, t.Links[p.Link].A == node) }
	f := &Fabric{eng: eng, topo: t, tr: hostsim.NewRecordTransport(cfg.Transport, cfg.Flows),
		hosts: make([]*hostsim.Host, len(t.Hosts)), switches: make([]*switchsim.Switch, n),
		kind: make([]uint8, n), hostOf: make([]int32, n), linkPort: make([]int32, 2*len(t.Links)), routes: ix.Routes()}
	for node := 0; node < n; node++ {
		f.hostOf[node] = -1
		if t.Nodes[node].Kind != topologies.Switch {
			continue
		}
		ports := ix.Ports(node)
		sp := make([]switchsim.Port, len(ports))
		for pi, p := range ports {
			sp[pi] = switchsim.Port{Link: dir(node, p), Peer: sim.ElemID(p.Peer), Queue: t.Links[p.Link].Queue}
			f.linkPort[dir(node, p)] = int32(pi)
		}
		f.switches[node] = switchsim.New(sim.ElemID(node), node, sp, ix.Routes(), switchsim.ECMP)
	}
	fb := &stracksim.Fabric{Topo: t, Ports: ix.Ports, Routes: ix.Routes(), Dir: dir, Links: specs, Switches: f.switches}
	w, err := stracksim.New(eng, 0, fb, *cfg.Compat, f.tr)
	if err != nil {
		return nil, fmt.Errorf("compat stracksim: %w", err)
	}
	f.compat = w
	f.kind[0] = kindCompat
	return f, nil
}
