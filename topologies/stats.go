package topologies

// TopoStats summarises a topology's size and path lengths. Path lengths
// count links (hops) on paths that never pass through a host.
type TopoStats struct {
	Hosts, Switches, Links int
	// Diameter is the largest hop distance between any two nodes that are
	// connected (pairs with no path are left out).
	Diameter int
	// MinHostPath and MaxHostPath are the smallest and largest hop
	// distances between two distinct hosts (0 with fewer than two hosts).
	MinHostPath, MaxHostPath int
}

// Stats computes the summary without a search per host: one
// breadth-first search per switch and per host that is not on exactly one
// switch. A host a on exactly one switch e is at 1 + dist(e, v) from every
// other node v, so e's search answers for all of e's hosts. Time is
// O((switches + multi-homed hosts) x (nodes + links)), memory O(nodes).
func (ix *Index) Stats() TopoStats {
	s := TopoStats{Hosts: ix.hosts, Switches: ix.switches, Links: ix.links}
	n := ix.nodes
	single := make([]bool, n)  // host node on exactly one switch
	onEdge := make([]int32, n) // switch -> number of such hosts
	for _, u := range ix.hostNode {
		if u < 0 {
			continue
		}
		if e := singleEdge(ix, int(u)); e >= 0 {
			single[u] = true
			onEdge[e]++
		}
	}
	dist := make([]int32, n)
	queue := make([]int32, 0, n)
	minHost := int32(-1)
	hostPair := func(d int32) {
		if minHost < 0 || d < minHost {
			minHost = d
		}
		s.MaxHostPath = max(s.MaxHostPath, int(d))
	}
	for src := 0; src < n; src++ {
		isHost := ix.hostOf[src] >= 0
		if isHost && single[src] {
			continue // its edge switch's search covers it
		}
		queue = bfs(ix, src, dist, queue)
		// queue holds the reached nodes in order of distance.
		s.Diameter = max(s.Diameter, int(dist[queue[len(queue)-1]]))
		if isHost {
			for _, v := range queue[1:] {
				if ix.hostOf[v] >= 0 {
					hostPair(dist[v])
				}
			}
			continue
		}
		if onEdge[src] == 0 {
			continue
		}
		// Pairs (a, v) for the hosts a on src alone: 1 + dist[v].
		for _, v := range queue {
			d := dist[v] + 1
			if ix.hostOf[v] < 0 {
				s.Diameter = max(s.Diameter, int(d))
				continue
			}
			if single[v] && dist[v] == 1 {
				// v is one of src's own hosts: a pair with another.
				if onEdge[src] < 2 {
					continue
				}
				d = 2
			}
			s.Diameter = max(s.Diameter, int(d))
			hostPair(d)
		}
	}
	if minHost > 0 {
		s.MinHostPath = int(minHost)
	}
	return s
}
