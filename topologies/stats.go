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

// Stats computes the summary with one breadth-first search per node.
func (ix *Index) Stats() TopoStats {
	s := TopoStats{Hosts: ix.hosts, Switches: ix.switches, Links: ix.links}
	dist := make([]int32, ix.nodes)
	queue := make([]int32, 0, ix.nodes)
	minHost := int32(-1)
	for src := 0; src < ix.nodes; src++ {
		queue = bfs(ix, src, dist, queue)
		// queue holds the reached nodes in order of distance.
		if d := int(dist[queue[len(queue)-1]]); d > s.Diameter {
			s.Diameter = d
		}
		if ix.hostOf[src] < 0 {
			continue
		}
		for _, v := range queue[1:] {
			if ix.hostOf[v] < 0 {
				continue
			}
			d := dist[v]
			if minHost < 0 || d < minHost {
				minHost = d
			}
			if int(d) > s.MaxHostPath {
				s.MaxHostPath = int(d)
			}
		}
	}
	if minHost > 0 {
		s.MinHostPath = int(minHost)
	}
	return s
}
