package topologies

import (
	"fmt"
)

// Validate checks that the topology is well formed: node kinds are set,
// names are unique, link endpoints are in range and distinct, rates are
// positive, delays, latencies and buffers are not negative, Hosts lists
// every host node exactly once, every host has a link, and every host can
// reach every other host through switches only (hosts never forward).
func (t *Topology) Validate() error {
	_, err := t.validate()
	return err
}

// validate is Validate, returning the port index it built to check
// connectivity (without routes).
func (t *Topology) validate() (*Index, error) {
	errf := func(format string, args ...any) error {
		return fmt.Errorf("topology %q: %s", t.Name, fmt.Sprintf(format, args...))
	}
	n := len(t.Nodes)
	names := make(map[string]int, n)
	for i := range t.Nodes {
		nd := &t.Nodes[i]
		if nd.Kind != Host && nd.Kind != Switch {
			return nil, errf("node %d (%s): kind is not set", i, nd.Name)
		}
		if nd.Latency < 0 {
			return nil, errf("node %d (%s): latency must not be negative, got %v", i, nd.Name, nd.Latency)
		}
		if nd.Group < 0 || nd.Group > maxNodes {
			return nil, errf("node %d (%s): group must be in [0, %d], got %d", i, nd.Name, maxNodes, nd.Group)
		}
		if nd.Name == "" {
			continue
		}
		if j, dup := names[nd.Name]; dup {
			return nil, errf("node %d: name %q is also node %d's", i, nd.Name, j)
		}
		names[nd.Name] = i
	}
	for i := range t.Links {
		l := &t.Links[i]
		if l.A < 0 || l.A >= n || l.B < 0 || l.B >= n {
			return nil, errf("link %d: endpoints %d-%d out of range [0, %d)", i, l.A, l.B, n)
		}
		what := fmt.Sprintf("link %d (%s-%s)", i, t.Nodes[l.A].Name, t.Nodes[l.B].Name)
		if l.A == l.B {
			return nil, errf("%s: self-loop", what)
		}
		if l.Rate <= 0 {
			return nil, errf("%s: rate must be positive, got %v", what, l.Rate)
		}
		if l.Delay < 0 {
			return nil, errf("%s: delay must not be negative, got %v", what, l.Delay)
		}
		if err := checkQueue("queue", &l.Queue); err != nil {
			return nil, errf("%s: %v", what, err)
		}
	}
	if len(t.Hosts) == 0 {
		return nil, errf("no hosts")
	}
	seen := make([]int, n)
	for h, node := range t.Hosts {
		if node < 0 || node >= n {
			return nil, errf("host %d: node %d out of range [0, %d)", h, node, n)
		}
		if t.Nodes[node].Kind != Host {
			return nil, errf("host %d: node %d (%s) is a %v", h, node, t.Nodes[node].Name, t.Nodes[node].Kind)
		}
		if seen[node] != 0 {
			return nil, errf("host %d: node %d (%s) is also host %d", h, node, t.Nodes[node].Name, seen[node]-1)
		}
		seen[node] = h + 1
	}
	for i := range t.Nodes {
		if t.Nodes[i].Kind == Host && seen[i] == 0 {
			return nil, errf("node %d (%s) is a host but not in Hosts", i, t.Nodes[i].Name)
		}
	}
	ix := buildPorts(t)
	for h, node := range t.Hosts {
		if ix.portStart[node] == ix.portStart[node+1] {
			return nil, errf("host %d (%s) has no link", h, t.Nodes[node].Name)
		}
	}
	if a, b, ok := hostsConnected(ix); !ok {
		return nil, errf("hosts %s and %s are not connected (hosts never forward)",
			t.Nodes[t.Hosts[a]].Name, t.Nodes[t.Hosts[b]].Name)
	}
	return ix, nil
}

// hostsConnected reports whether every host reaches every other host on a
// path whose inner nodes are all switches. If not, it names a host pair
// (host indices) that is not connected. Precondition: every host's node
// is in range.
func hostsConnected(ix *Index) (a, b int, ok bool) {
	nh := ix.hosts
	if nh < 2 {
		return 0, 0, true
	}
	// Fast path: some component of the switch-only graph touches every
	// host. True of every fabric built here.
	n := ix.nodes
	comp := make([]int32, n)
	for i := range comp {
		comp[i] = int32(i)
	}
	find := func(x int32) int32 {
		for comp[x] != x {
			comp[x] = comp[comp[x]]
			x = comp[x]
		}
		return x
	}
	for u := 0; u < n; u++ {
		if ix.hostOf[u] >= 0 {
			continue
		}
		for _, v := range ix.peer[ix.portStart[u]:ix.portStart[u+1]] {
			if ix.hostOf[v] < 0 {
				if ru, rv := find(int32(u)), find(v); ru != rv {
					comp[ru] = rv
				}
			}
		}
	}
	touched := make([]int32, n) // hosts touching each component root
	last := make([]int32, n)    // last host counted for each root
	for i := range last {
		last[i] = -1
	}
	for u := 0; u < n; u++ {
		h := ix.hostOf[u]
		if h < 0 {
			continue
		}
		for _, v := range ix.peer[ix.portStart[u]:ix.portStart[u+1]] {
			if ix.hostOf[v] >= 0 {
				continue
			}
			r := find(v)
			if last[r] != h {
				last[r] = h
				touched[r]++
				if int(touched[r]) == nh {
					return 0, 0, true
				}
			}
		}
	}
	// Slow path: search from every host.
	dist := make([]int32, n)
	queue := make([]int32, 0, n)
	nodeOf := ix.hostNode
	for h := 0; h < nh; h++ {
		queue = bfs(ix, int(nodeOf[h]), dist, queue)
		for g := 0; g < nh; g++ {
			if dist[nodeOf[g]] < 0 {
				return h, g, false
			}
		}
	}
	return 0, 0, true
}

// bfs fills dist with hop counts from src (-1: unreachable) on paths that
// never pass through a host: hosts other than src are reached but not
// expanded. queue is scratch space; bfs returns it for reuse.
func bfs(ix *Index, src int, dist []int32, queue []int32) []int32 {
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	queue = append(queue[:0], int32(src))
	for head := 0; head < len(queue); head++ {
		u := queue[head]
		if ix.hostOf[u] >= 0 && int(u) != src {
			continue
		}
		d := dist[u] + 1
		for _, v := range ix.peer[ix.portStart[u]:ix.portStart[u+1]] {
			if dist[v] < 0 {
				dist[v] = d
				queue = append(queue, v)
			}
		}
	}
	return queue
}
