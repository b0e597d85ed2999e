package topologies

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Routes is a topology's shortest-path ECMP forwarding state: for a switch
// and a destination host, the ports of the switch that lie on a shortest
// path to the host, in increasing port order. Paths never pass through a
// host (hosts do not forward), though they may start or end at one.
//
// Its size does not grow with (switch, destination host) pairs. A host
// whose links all go to one switch (its edge switch: a ToR, a leaf) is
// reached through that switch, so every switch other than the edge switch
// forwards towards the host as it forwards towards the edge switch; the
// edge switch itself uses its ports to the host (the host's last hop). The
// state is therefore
//
//   - per destination *column*, one per edge switch and one per host that is
//     not on exactly one switch (a multi-homed host, or one linked to a
//     host), which is routed to as itself;
//   - per built switch (a row), one 32-bit next-hop set id per column;
//   - per host, its column, its edge switch and its last-hop set id;
//   - the distinct next-hop sets, once each (a fat-tree has a few dozen).
//
// A k=32 fat-tree (8,192 hosts, 1,280 switches, 512 ToRs) holds 655,360
// cells, 2.6 MB, where a table per (node, host) held 78 M entries. Rows
// are built only for the switches a partition asks for (CompileOptions),
// so P partitions hold about 1/P of the cells each.
//
// Compile builds it, as part of an Index; it is read-only afterwards and
// safe for concurrent use.
type Routes struct {
	numNodes, numHosts, numCols int

	dest []hostRoute // by host index
	row  []int32     // by node: the node's row of cells, or -1 (hosts, switches not built)
	// cells maps row*numCols + column to a set id; cells8 holds them
	// instead (cells nil) when there are at most 256 sets, as in the
	// fabrics the builders make: a switch reads one cell per packet, and
	// a k=74 fat-tree's 18.7 M cells take 19 MB as bytes, 75 MB as int32.
	cells  []int32
	cells8 []uint8
	// Set id s is ports[setOff[s]:setOff[s+1]]; set 0 is the empty set
	// (no route).
	setOff []int32
	ports  []int32
}

// hostRoute is how a destination host is reached.
type hostRoute struct {
	edge int32 // node of the host's edge switch, or -1: the host is its own column
	col  int32 // the column switches look up
	last int32 // set id of the edge switch's ports to the host (edge >= 0)
}

// Next returns the ports of switch node on a shortest path to host
// dstHost, in increasing order. It is empty when node cannot reach the
// host, is the host's own node, is a host, or is a switch whose row was
// not built (CompileOptions.Rows). The slice is shared and must not be
// modified; Next does not allocate.
func (r *Routes) Next(node, dstHost int) []int32 {
	d := &r.dest[dstHost]
	id := d.last
	if int(d.edge) != node {
		rw := r.row[node]
		if rw < 0 {
			return nil
		}
		i := int(rw)*r.numCols + int(d.col)
		if r.cells8 != nil {
			id = int32(r.cells8[i])
		} else {
			id = r.cells[i]
		}
	}
	lo, hi := r.setOff[id], r.setOff[id+1]
	return r.ports[lo:hi:hi]
}

// NumNodes is the number of nodes the routes cover.
func (r *Routes) NumNodes() int { return r.numNodes }

// NumHosts is the number of destination hosts the routes cover.
func (r *Routes) NumHosts() int { return r.numHosts }

// NumColumns is the number of destination columns: edge switches plus
// hosts that are not on exactly one switch.
func (r *Routes) NumColumns() int { return r.numCols }

// NumRows is the number of switches whose rows were built.
func (r *Routes) NumRows() int { return r.numCells() / max(r.numCols, 1) }

// numCells is the number of cells, whatever their width.
func (r *Routes) numCells() int { return len(r.cells) + len(r.cells8) }

// narrow moves the cells to bytes when every set id fits one.
func (r *Routes) narrow() {
	if len(r.setOff)-1 > 1<<8 {
		return
	}
	r.cells8 = make([]uint8, len(r.cells))
	for i, c := range r.cells {
		r.cells8[i] = uint8(c)
	}
	r.cells = nil
}

// Entries is the number of port entries in the distinct next-hop sets.
func (r *Routes) Entries() int { return len(r.ports) }

// Bytes is the memory the routes hold, in bytes (slices' lengths).
func (r *Routes) Bytes() int {
	return 12*len(r.dest) + 4*(len(r.row)+len(r.cells)+len(r.setOff)+len(r.ports)) + len(r.cells8)
}

// RouteBytes estimates the bytes Compile allocates for the routes of a
// fabric of nodes nodes and hosts hosts, with rows switches built and cols
// destination columns, not counting the distinct sets (a few KB in
// fabrics built here). Scenario estimates use it.
func RouteBytes(nodes, hosts, rows, cols int) int64 {
	return 12*int64(hosts) + 4*int64(nodes) + 4*int64(rows)*int64(cols)
}

// maxCells bounds rows x columns (the cells are indexed by int32 arithmetic
// in no place, but 2^31 cells is 8 GB).
const maxCells = math.MaxInt32

// setTable interns next-hop sets: equal sets share one id, ids in order of
// first appearance (so deterministic).
type setTable struct {
	index map[string]int32
	off   []int32
	ports []int32
	key   []byte
}

func newSetTable() *setTable {
	return &setTable{index: map[string]int32{}, off: []int32{0, 0}}
}

func (s *setTable) intern(ps []int32) int32 {
	if len(ps) == 0 {
		return 0
	}
	s.key = s.key[:0]
	for _, p := range ps {
		s.key = binary.LittleEndian.AppendUint32(s.key, uint32(p))
	}
	if id, ok := s.index[string(s.key)]; ok {
		return id
	}
	id := int32(len(s.off) - 1)
	s.ports = append(s.ports, ps...)
	s.off = append(s.off, int32(len(s.ports)))
	s.index[string(s.key)] = id
	return id
}

// singleEdge returns the one switch every link of node u goes to, or -1
// when u has no link, links to a host, or links to several nodes.
func singleEdge(ix *Index, u int) int32 {
	peers := ix.peer[ix.portStart[u]:ix.portStart[u+1]]
	if len(peers) == 0 || ix.hostOf[peers[0]] >= 0 {
		return -1
	}
	for _, q := range peers[1:] {
		if q != peers[0] {
			return -1
		}
	}
	return peers[0]
}

// computeRoutes builds the routes: for each built switch and column, the
// ports whose peer is one hop closer to the column's source (its edge
// switch, or its host) and is a switch or the destination host itself,
// on paths that never pass through a host (searchColumns; levelColumns
// where every column starts at a switch). rows selects the switches (nil:
// all). For each of pairs it also returns the hop count from the source
// host to the destination host (0 when unreachable or equal), from the
// same searches.
func computeRoutes(ix *Index, rows func(node int) bool, pairs []HostPair) (*Routes, []int32, error) {
	return computeRoutesBy(ix, rows, pairs, false, levelBlockBytes)
}

// computeRoutesBy is computeRoutes, by one search per column when search
// is set even where levelColumns could serve, with levelColumns' blocks
// of about blockBytes (the tests compare the two, and cover small blocks).
func computeRoutesBy(ix *Index, rows func(node int) bool, pairs []HostPair, search bool, blockBytes int) (*Routes, []int32, error) {
	nn, nh := ix.nodes, ix.hosts
	r := &Routes{numNodes: nn, numHosts: nh, dest: make([]hostRoute, nh), row: make([]int32, nn)}
	sets := newSetTable()

	// Columns: edge switches in order of their first host, and hosts that
	// are their own column. src[c] is the node the search of c starts at.
	colOf := make([]int32, nn) // edge switch -> column, or -1
	for i := range colOf {
		colOf[i] = -1
	}
	var src []int32
	var scratch []int32
	anyHostCol := false
	for h := 0; h < nh; h++ {
		u := int(ix.hostNode[h])
		d := hostRoute{edge: -1}
		if u >= 0 {
			d.edge = singleEdge(ix, u)
		}
		if d.edge >= 0 {
			e := d.edge
			if colOf[e] < 0 {
				colOf[e] = int32(len(src))
				src = append(src, e)
			}
			d.col = colOf[e]
			scratch = scratch[:0]
			for i, q := range ix.peer[ix.portStart[e]:ix.portStart[e+1]] {
				if int(q) == u {
					scratch = append(scratch, int32(i))
				}
			}
			d.last = sets.intern(scratch)
		} else {
			d.col = int32(len(src))
			src = append(src, int32(u)) // -1 for a host out of range: unreachable
			anyHostCol = true
		}
		r.dest[h] = d
	}
	ncol := len(src)
	r.numCols = ncol

	var rowNodes []int32
	for n := 0; n < nn; n++ {
		r.row[n] = -1
		if ix.hostOf[n] < 0 && (rows == nil || rows(n)) {
			r.row[n] = int32(len(rowNodes))
			rowNodes = append(rowNodes, int32(n))
		}
	}
	cells, ok := mulLimit(len(rowNodes), ncol, maxCells)
	if !ok {
		return nil, nil, fmt.Errorf("topologies: routes of %d switches x %d destination switches are too large (2^31 cells or more)", len(rowNodes), ncol)
	}
	r.cells = make([]int32, cells)

	// Pairs by the column of their destination (counting sort).
	hops := make([]int32, len(pairs))
	pstart := make([]int32, ncol+1)
	for _, p := range pairs {
		pstart[r.dest[p.Dst].col+1]++
	}
	for c := 0; c < ncol; c++ {
		pstart[c+1] += pstart[c]
	}
	byCol := make([]int32, len(pairs))
	fill := append([]int32(nil), pstart[:ncol]...)
	for i, p := range pairs {
		c := r.dest[p.Dst].col
		byCol[fill[c]] = int32(i)
		fill[c]++
	}

	if ix.group == nil && !anyHostCol && !search {
		levelColumns(ix, r, sets, src, rowNodes, pairs, byCol, pstart, hops, blockBytes)
	} else {
		searchColumns(ix, r, sets, src, rowNodes, pairs, byCol, pstart, hops)
	}
	if len(sets.ports) > math.MaxInt32/2 {
		return nil, nil, fmt.Errorf("topologies: the next-hop sets have more than 2^30 entries")
	}
	r.setOff, r.ports = sets.off, sets.ports
	r.narrow()
	return r, hops, nil
}

// searchColumns fills the cells of the built rows and the pairs' hop
// counts with one breadth-first search per column (from its edge switch,
// or from its host; hosts other than the source are reached but not
// expanded): a row's cell holds the ports whose peer is one hop closer to
// the column's source and is a switch or the destination host itself.
// It serves every fabric; levelColumns is the same for most, faster.
func searchColumns(ix *Index, r *Routes, sets *setTable, src, rowNodes []int32, pairs []HostPair, byCol, pstart, hops []int32) {
	nn, ncol := ix.nodes, r.numCols
	var scratch []int32
	dist := make([]int32, nn)
	queue := make([]int32, 0, nn)
	// With groups, dist is the distance without intra-group links (how a
	// packet that has left its group travels) and in the distance of a
	// packet still in the group it started in (dist elsewhere).
	var in []int32
	var intra [][2]int32
	if ix.group != nil {
		in = make([]int32, nn)
		intra = ix.intraLinks()
	}
	for c, s := range src {
		if s < 0 {
			continue // every cell stays 0: no route
		}
		at := dist
		if in != nil {
			queue = ix.groupDist(int(s), dist, in, intra, queue)
			at = in
		} else {
			queue = bfs(ix, int(s), dist, queue)
		}
		hostCol := ix.hostOf[s] >= 0
		for ri, n := range rowNodes {
			d := at[n]
			if d <= 0 {
				continue
			}
			lo, hi := ix.portStart[n], ix.portStart[n+1]
			scratch = scratch[:0]
			for i, q := range ix.peer[lo:hi] {
				dq := dist[q]
				if in != nil && ix.intra(n, q) {
					dq = in[q]
				}
				if dq == d-1 && (ix.hostOf[q] < 0 || (hostCol && q == s)) {
					scratch = append(scratch, int32(i))
				}
			}
			r.cells[ri*ncol+c] = sets.intern(scratch)
		}
		for _, pi := range byCol[pstart[c]:pstart[c+1]] {
			p := pairs[pi]
			from := ix.hostNode[p.Src]
			if p.Src == p.Dst || from < 0 {
				continue
			}
			h := dist[from]
			if in != nil {
				// The source's packets start in its edge's group.
				for _, q := range ix.peer[ix.portStart[from]:ix.portStart[from+1]] {
					if at[q] >= 0 && (h < 0 || at[q]+1 < h) {
						h = at[q] + 1
					}
				}
			}
			if h < 0 {
				continue
			}
			hops[pi] = h
			if !hostCol {
				hops[pi]++ // the edge switch's last hop
			}
		}
	}
}

// intraLinks lists the intra-group links, both directions: (u, v) with u
// and v switches of the same group.
func (ix *Index) intraLinks() [][2]int32 {
	var out [][2]int32
	for u := range ix.nodes {
		for _, v := range ix.peer[ix.portStart[u]:ix.portStart[u+1]] {
			if ix.intra(int32(u), v) {
				out = append(out, [2]int32{int32(u), v})
			}
		}
	}
	return out
}

// groupDist is the search of the column from s when nodes have groups. It
// leaves in dist the distance to s without intra-group links (how a packet
// that has left its group travels) and in in the distance of a packet
// that is still in the group where it started: it may take its group's
// intra links first, then leaves the group and may use no intra link
// again. This is PXN's rule (NCCL's PCI x NVLink): a GPU's data
// crosses the server's NVLink to the NIC on the destination's rail and
// never NVLink at the far end, unless source and destination share the
// server. For a node in no group in equals dist. It returns the queue
// for reuse.
//
// NB(collectives): a packet from outside a group that is routed through
// one of its switches follows in there, which could take intra links if
// that is shorter; it is not in the fabrics built here (a rail fabric
// routes such packets to the destination's own NIC port).
func (ix *Index) groupDist(s int, dist, in []int32, intra [][2]int32, queue []int32) []int32 {
	// Without intra-group links.
	for i := range dist {
		dist[i] = -1
	}
	dist[s] = 0
	queue = append(queue[:0], int32(s))
	for head := 0; head < len(queue); head++ {
		u := queue[head]
		if ix.hostOf[u] >= 0 && int(u) != s {
			continue
		}
		for _, v := range ix.peer[ix.portStart[u]:ix.portStart[u+1]] {
			if dist[v] < 0 && !ix.intra(u, v) {
				dist[v] = dist[u] + 1
				queue = append(queue, v)
			}
		}
	}
	copy(in, dist)
	// Then in[u] = min over v reachable inside u's group of hops(u, v) +
	// dist[v]: relax the intra links until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, e := range intra {
			u, v := e[0], e[1]
			if in[v] >= 0 && (in[u] < 0 || in[v]+1 < in[u]) {
				in[u] = in[v] + 1
				changed = true
			}
		}
	}
	return queue
}
