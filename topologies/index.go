package topologies

import "fmt"

// Index is a topology compiled for simulation: its port adjacency, its host
// numbering and its shortest-path forwarding state. Compile builds it once;
// afterwards it is immutable and safe for concurrent use. It holds no
// reference to the Topology it was built from, which stays plain data: a
// Topology changed after Compile needs a new Index.
type Index struct {
	nodes, links, hosts, switches int

	// The ports of node n are ports[portStart[n]:portStart[n+1]], in Links
	// order; peer[i] == ports[i].Peer.
	portStart []int32 // len nodes+1
	ports     []Port
	peer      []int32
	hostOf    []int32 // node -> host index, or -1
	hostNode  []int32 // host index -> node
	// group is every node's Node.Group, or nil when no node has one.
	group []int32

	routes   *Routes
	pairHops []int32 // CompileOptions.Pairs' hop counts
}

// HostPair is a source and a destination host index.
type HostPair struct{ Src, Dst int32 }

// CompileOptions narrow what Compile builds.
type CompileOptions struct {
	// Rows selects the switches whose forwarding rows are built (a
	// partition's own); nil builds every switch's. Routes.Next is empty
	// for the others.
	Rows func(node int) bool
	// Pairs are (source, destination) host pairs whose hop counts
	// PairHops reports, computed from the searches that build the routes.
	// Host indices must be in range.
	Pairs []HostPair
}

// Compile validates t (see Validate) and builds its index: the ports of
// every node and the forwarding state of every switch (see Routes).
func Compile(t *Topology) (*Index, error) { return CompileWith(t, CompileOptions{}) }

// CompileWith is Compile with options. Where every host is on one switch
// and no node has a group, all the columns' searches run at once as bit
// sets, O(levels x links x columns / 64) time; otherwise it costs one
// breadth-first search per destination column, O(columns x (nodes +
// links)). Memory is O(nodes + links + rows x columns); it refuses 2^31
// cells or more before allocating them.
func CompileWith(t *Topology, o CompileOptions) (*Index, error) {
	ix, err := t.validate()
	if err != nil {
		return nil, err
	}
	for i, p := range o.Pairs {
		if p.Src < 0 || int(p.Src) >= ix.hosts || p.Dst < 0 || int(p.Dst) >= ix.hosts {
			return nil, fmt.Errorf("topologies: pair %d: hosts %d -> %d out of range [0, %d)", i, p.Src, p.Dst, ix.hosts)
		}
	}
	if ix.routes, ix.pairHops, err = computeRoutes(ix, o.Rows, o.Pairs); err != nil {
		return nil, err
	}
	return ix, nil
}

// CompilePorts builds only t's port adjacency and host maps: an Index
// whose Ports, NumNodes and NumHosts work and whose Routes is nil, for a
// caller that has the routes already (a one-process fabric keeps them:
// fabric.Fabric.Routes). It costs O(nodes + links); t is not validated.
func CompilePorts(t *Topology) *Index { return buildPorts(t) }

// PairHops returns the hop count (links) of each of CompileOptions.Pairs,
// in order: 0 when the hosts are equal or not connected. The slice is
// shared and must not be modified.
func (ix *Index) PairHops() []int32 { return ix.pairHops }

// buildPorts computes the port adjacency and host maps (everything but the
// routes). Links with an endpoint out of range are skipped and hosts out
// of range map to -1 (Validate reports both), so it never panics.
func buildPorts(t *Topology) *Index {
	n := len(t.Nodes)
	ix := &Index{nodes: n, links: len(t.Links), hosts: len(t.Hosts)}
	ix.portStart = make([]int32, n+1)
	in := func(v int) bool { return v >= 0 && v < n }
	for _, l := range t.Links {
		if in(l.A) && in(l.B) {
			ix.portStart[l.A+1]++
			ix.portStart[l.B+1]++
		}
	}
	for i := range n {
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
	ix.switches = t.NumSwitches()
	for i := range t.Nodes {
		if g := t.Nodes[i].Group; g != 0 {
			if ix.group == nil {
				ix.group = make([]int32, n)
			}
			ix.group[i] = int32(g)
		}
	}
	return ix
}

// intra reports whether the link from node u to node v is intra-group:
// both are switches of the same positive group.
func (ix *Index) intra(u, v int32) bool {
	return ix.group != nil && ix.group[u] > 0 && ix.group[u] == ix.group[v] && ix.hostOf[u] < 0 && ix.hostOf[v] < 0
}

// Ports returns node's ports: port i is the i-th link, in Links order,
// that touches the node. The slice is shared and must not be modified.
func (ix *Index) Ports(node int) []Port {
	lo, hi := ix.portStart[node], ix.portStart[node+1]
	return ix.ports[lo:hi:hi]
}

// Routes returns the forwarding state.
func (ix *Index) Routes() *Routes { return ix.routes }

// NumNodes is the number of nodes.
func (ix *Index) NumNodes() int { return ix.nodes }

// NumHosts is the number of hosts.
func (ix *Index) NumHosts() int { return ix.hosts }

// NumSwitches is the number of switch nodes.
func (ix *Index) NumSwitches() int { return ix.switches }

// NumHosts is the number of hosts.
func (t *Topology) NumHosts() int { return len(t.Hosts) }

// NumSwitches is the number of switch nodes (it counts them).
func (t *Topology) NumSwitches() int {
	n := 0
	for i := range t.Nodes {
		if t.Nodes[i].Kind == Switch {
			n++
		}
	}
	return n
}

// FirstLink returns the index of the first link, in Links order, that
// touches node (port 0 of the node), or -1 if none does. It scans Links;
// use an Index for repeated lookups.
func (t *Topology) FirstLink(node int) int {
	for i, l := range t.Links {
		if l.A == node || l.B == node {
			return i
		}
	}
	return -1
}

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
