package topologies

import (
	"fmt"
	"math"
)

// oldRoutes is the forwarding table lockstep used before the routes by
// destination column (routes.go): kept in the tests only, as the reference
// the new routes must equal. It is a topology's shortest-path ECMP
// forwarding table: for every
// node and destination host, the ports of the node that lie on a shortest
// path to the host, in increasing port order. Paths never pass through a
// host (hosts do not forward), though they may start or end at one.
//
// The table is flat, laid out node by node so that one switch's entries
// are contiguous: the ports for (node, dst) are
// ports[offset[node*numHosts+dst]:offset[node*numHosts+dst+1]].
// Compile builds it, as part of an Index; it is read-only afterwards and
// safe for concurrent use.
type oldRoutes struct {
	numNodes, numHosts int
	offset             []int32 // len numNodes*numHosts+1
	ports              []int32
}

// Next returns the ports of node on a shortest path to host dstHost, in
// increasing order. It is empty when node is dstHost's own node or cannot
// reach it. The slice is shared and must not be modified; Next does not
// allocate.
func (r *oldRoutes) next(node, dstHost int) []int32 {
	i := node*r.numHosts + dstHost
	lo, hi := r.offset[i], r.offset[i+1]
	return r.ports[lo:hi:hi]
}

// Entries is the total number of port entries in the table (its size).
func (r *oldRoutes) Entries() int { return len(r.ports) }

// oldComputeRoutes builds the table. It runs a breadth-first search from each
// destination host (hosts other than the source are reached but not
// expanded), keeps the distances node-major, and then, node by node, keeps
// the ports whose peer is one hop closer to the destination and is either a
// switch or the destination itself. Distances are 16-bit when the fabric
// has fewer than 65535 nodes (no path is longer), halving the memory the
// second step streams through.
func oldComputeRoutes(ix *Index) (*oldRoutes, error) {
	if ix.nodes < 0xFFFF {
		return oldFillRoutes[uint16](ix)
	}
	return oldFillRoutes[int32](ix)
}

func oldFillRoutes[D uint16 | int32](ix *Index) (*oldRoutes, error) {
	nn, nh := ix.nodes, ix.hosts
	cells, ok := mulLimit(nn, nh, math.MaxInt32-1)
	if !ok {
		return nil, fmt.Errorf("topologies: a forwarding table of %d nodes x %d hosts is too large (2^31 cells or more)", nn, nh)
	}
	unreach := ^D(0) // 0xFFFF or -1
	// dist[n*nh+h] is the hop count from node n to host h, or unreach.
	dist := make([]D, cells)
	col := make([]int32, nn)
	queue := make([]int32, 0, nn)
	for h := 0; h < nh; h++ {
		src := ix.hostNode[h]
		if src < 0 {
			for n := 0; n < nn; n++ {
				dist[n*nh+h] = unreach
			}
			continue
		}
		queue = bfs(ix, int(src), col, queue)
		for n, d := range col {
			dist[n*nh+h] = D(d) // -1 becomes unreach
		}
	}

	// One pass, node by node and destination by destination: the order of
	// the flat table, so offsets follow the appends.
	r := &oldRoutes{numNodes: nn, numHosts: nh, offset: make([]int32, cells+1)}
	ports := make([]int32, 0, 2*cells)
	rows := make([]int, 0, 64) // dist row of each peer of the node
	for n := 0; n < nn; n++ {
		lo, hi := ix.portStart[n], ix.portStart[n+1]
		peers := ix.peer[lo:hi]
		rows = rows[:0]
		for _, q := range peers {
			rows = append(rows, int(q)*nh)
		}
		base := n * nh
		row := dist[base : base+nh]
		for h, d := range row {
			if d != unreach && d != 0 {
				want := d - 1
				for i, q := range peers {
					if dist[rows[i]+h] == want && (ix.hostOf[q] < 0 || int(ix.hostOf[q]) == h) {
						ports = append(ports, int32(i))
					}
				}
				if len(ports) > math.MaxInt32 {
					return nil, fmt.Errorf("topologies: the forwarding table of %d nodes x %d hosts has more than 2^31 entries", nn, nh)
				}
			}
			r.offset[base+h+1] = int32(len(ports))
		}
	}
	if cap(ports) > len(ports)+len(ports)/4 {
		ports = append([]int32(nil), ports...)
	}
	r.ports = ports
	return r, nil
}
