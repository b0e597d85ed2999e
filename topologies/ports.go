package topologies

import (
	"sync"
	"sync/atomic"
)

// topoCache holds tables derived from a Topology: its port index and its
// routes. It sits behind a pointer so that copying a Topology value copies
// no lock; copies share the cache, which checks on every use that it still
// describes the topology it is asked about.
type topoCache struct {
	mu     sync.Mutex // serialises building; readers use the atomics
	idx    atomic.Pointer[index]
	routes atomic.Pointer[Routes]
}

// index is the adjacency of a topology in compressed form: the ports of
// node n are ports[portStart[n]:portStart[n+1]], in Links order.
type index struct {
	// What the index was built from, to notice a topology that changed.
	nodes, links, hosts int
	link0               *Link

	portStart []int32 // len nodes+1
	ports     []Port
	peer      []int32 // peer[i] == ports[i].Peer
	hostOf    []int32 // node -> host index, or -1
	hostNode  []int32 // host index -> node, or -1 if out of range
	switches  int
}

func (ix *index) describes(t *Topology) bool {
	return ix.nodes == len(t.Nodes) && ix.links == len(t.Links) && ix.hosts == len(t.Hosts) && ix.link0 == firstLink(t)
}

func firstLink(t *Topology) *Link {
	if len(t.Links) == 0 {
		return nil
	}
	return &t.Links[0]
}

// buildIndex computes the port index. Links with an endpoint out of range
// are skipped (Validate reports them), so it never panics.
func buildIndex(t *Topology) *index {
	n := len(t.Nodes)
	ix := &index{nodes: n, links: len(t.Links), hosts: len(t.Hosts), link0: firstLink(t)}
	ix.portStart = make([]int32, n+1)
	in := func(v int) bool { return v >= 0 && v < n }
	for _, l := range t.Links {
		if in(l.A) && in(l.B) {
			ix.portStart[l.A+1]++
			ix.portStart[l.B+1]++
		}
	}
	for i := 0; i < n; i++ {
		ix.portStart[i+1] += ix.portStart[i]
	}
	ix.ports = make([]Port, ix.portStart[n])
	ix.peer = make([]int32, ix.portStart[n])
	next := make([]int32, n)
	copy(next, ix.portStart[:n])
	put := func(node, link, peer int) {
		i := next[node]
		next[node]++
		ix.ports[i] = Port{Link: link, Peer: peer}
		ix.peer[i] = int32(peer)
	}
	for li, l := range t.Links {
		if in(l.A) && in(l.B) {
			put(l.A, li, l.B)
			put(l.B, li, l.A)
		}
	}
	ix.hostOf = make([]int32, n)
	for i := range ix.hostOf {
		ix.hostOf[i] = -1
	}
	ix.hostNode = make([]int32, len(t.Hosts))
	for h, node := range t.Hosts {
		ix.hostNode[h] = -1
		if in(node) {
			ix.hostNode[h] = int32(node)
			if ix.hostOf[node] < 0 {
				ix.hostOf[node] = int32(h)
			}
		}
	}
	for i := range t.Nodes {
		if t.Nodes[i].Kind == Switch {
			ix.switches++
		}
	}
	return ix
}

// cacheRef returns the topology's cache, creating it for a Topology that
// was not made by a builder. NB: that creation is the one step that is not
// safe for concurrent use; builders create the cache up front.
func (t *Topology) cacheRef() *topoCache {
	if t.cache == nil {
		t.cache = &topoCache{}
	}
	return t.cache
}

// index returns the port index, building it on first use.
func (t *Topology) index() *index {
	c := t.cacheRef()
	if ix := c.idx.Load(); ix != nil && ix.describes(t) {
		return ix
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ix := c.idx.Load(); ix != nil && ix.describes(t) {
		return ix
	}
	ix := buildIndex(t)
	c.idx.Store(ix)
	return ix
}

// Ports returns node's ports: port i is the i-th link, in Links order,
// that touches the node. The slice is shared and must not be modified.
// The table is built once, on first use; a Topology must not be changed
// after that. Topologies from this package's builders are safe for
// concurrent use; a hand-built one should call Validate (or Ports) once
// before it is shared between goroutines.
func (t *Topology) Ports(node int) []Port {
	ix := t.index()
	lo, hi := ix.portStart[node], ix.portStart[node+1]
	return ix.ports[lo:hi:hi]
}

// NumHosts is the number of hosts.
func (t *Topology) NumHosts() int { return len(t.Hosts) }

// NumSwitches is the number of switch nodes.
func (t *Topology) NumSwitches() int { return t.index().switches }

// FillQueues sets the queue of every link whose Buffer is 0 (not set) to
// q and returns how many links it changed. htsim .topo files may leave
// buffer sizes to htsim's -q flag; this is the equivalent.
func (t *Topology) FillQueues(q QueueConfig) int {
	n := 0
	for i := range t.Links {
		if t.Links[i].Queue.Buffer == 0 {
			t.Links[i].Queue = q
			n++
		}
	}
	return n
}
