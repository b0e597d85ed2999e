package topologies

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// GraphNode is a node of an explicit graph.
type GraphNode struct {
	Name    string
	Kind    string // "host" or "switch"
	Tier    int
	Latency sim.Time // switch forwarding latency
}

// GraphLink is a full-duplex link between the nodes named A and B. A zero
// Rate or Delay, or a nil Queue, takes the value from GraphConfig.Defaults.
type GraphLink struct {
	A, B  string
	Rate  sim.Bandwidth
	Delay sim.Time
	Queue *QueueConfig
}

// GraphConfig is the requested state of an explicit graph.
type GraphConfig struct {
	Name     string // topology name; "graph" if empty
	Nodes    []GraphNode
	Links    []GraphLink
	Defaults TierConfig // a zero Defaults.Rate means every link sets its own
}

// Graph builds a topology from an explicit list of nodes and links. Nodes
// and links keep their order; hosts are numbered in node order. A link's
// tier is the larger tier of its two ends.
func Graph(cfg GraphConfig) (*Topology, error) {
	if err := checkTier("graph.defaults", cfg.Defaults, true); err != nil {
		return nil, err
	}
	if len(cfg.Nodes) > maxNodes || len(cfg.Links) > maxLinks {
		return nil, checkSize("graph", len(cfg.Nodes), len(cfg.Links))
	}
	name := cfg.Name
	if name == "" {
		name = "graph"
	}
	t := &Topology{
		Name:  name,
		Nodes: make([]Node, len(cfg.Nodes)),
		Links: make([]Link, len(cfg.Links)),
	}
	byName := make(map[string]int, len(cfg.Nodes))
	for i, gn := range cfg.Nodes {
		what := fmt.Sprintf("graph.nodes[%d]", i)
		if gn.Name == "" {
			return nil, fmt.Errorf("%s.name: must not be empty", what)
		}
		what = fmt.Sprintf("graph.nodes[%d] %q", i, gn.Name)
		if j, dup := byName[gn.Name]; dup {
			return nil, fmt.Errorf("%s: duplicate name (also nodes[%d])", what, j)
		}
		byName[gn.Name] = i
		var kind NodeKind
		switch gn.Kind {
		case "host":
			kind = Host
			t.Hosts = append(t.Hosts, i)
		case "switch":
			kind = Switch
		default:
			return nil, fmt.Errorf("%s.kind: must be \"host\" or \"switch\", got %q", what, gn.Kind)
		}
		if gn.Latency < 0 {
			return nil, fmt.Errorf("%s.latency: must not be negative, got %v", what, gn.Latency)
		}
		t.Nodes[i] = Node{Name: gn.Name, Kind: kind, Tier: gn.Tier, Latency: gn.Latency}
	}
	if len(t.Hosts) == 0 {
		return nil, fmt.Errorf("graph.nodes: no node is a host")
	}
	for i, gl := range cfg.Links {
		what := fmt.Sprintf("graph.links[%d] (%s-%s)", i, gl.A, gl.B)
		a, okA := byName[gl.A]
		if !okA {
			return nil, fmt.Errorf("%s.a: unknown node %q", what, gl.A)
		}
		b, okB := byName[gl.B]
		if !okB {
			return nil, fmt.Errorf("%s.b: unknown node %q", what, gl.B)
		}
		if a == b {
			return nil, fmt.Errorf("%s: self-loop on %q", what, gl.A)
		}
		l := Link{A: a, B: b, Rate: gl.Rate, Delay: gl.Delay, Queue: cfg.Defaults.Queue,
			Tier: max(t.Nodes[a].Tier, t.Nodes[b].Tier)}
		if l.Rate == 0 {
			l.Rate = cfg.Defaults.Rate
		}
		if l.Delay == 0 {
			l.Delay = cfg.Defaults.Delay
		}
		if gl.Queue != nil {
			l.Queue = *gl.Queue
		}
		if gl.Rate < 0 {
			return nil, fmt.Errorf("%s.rate: must be positive, got %v", what, gl.Rate)
		}
		if l.Rate == 0 {
			return nil, fmt.Errorf("%s.rate: not set, and graph.defaults.rate is not set either", what)
		}
		if l.Delay < 0 {
			return nil, fmt.Errorf("%s.delay: must not be negative, got %v", what, l.Delay)
		}
		if err := checkQueue(what+".queue", &l.Queue); err != nil {
			return nil, err
		}
		t.Links[i] = l
	}
	ix := buildPorts(t)
	for _, node := range t.Hosts {
		if ix.portStart[node] == ix.portStart[node+1] {
			return nil, fmt.Errorf("graph: host %q has no link", t.Nodes[node].Name)
		}
	}
	if a, b, ok := hostsConnected(ix); !ok {
		return nil, fmt.Errorf("graph: hosts %q and %q are not connected (hosts never forward)",
			t.Nodes[t.Hosts[a]].Name, t.Nodes[t.Hosts[b]].Name)
	}
	return t, nil
}
