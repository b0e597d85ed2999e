package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// PFC deadlock detection (docs/decisions.md "PFC deadlock detection").
//
// A deadlock of priority flow control is a cycle of ports each paused by the
// next while holding packets (a cyclic buffer dependency: Hu et al., "Deadlocks
// in Datacenter Networks: Why Do They Form, and How to Avoid Them", HotNets
// 2016; Shpiner et al., "Unlocking credit loop deadlock", HotNets 2016). The
// run looks for one on a grid of virtual times: at a grid time T, after every
// event before T, each partition lists its egress class queues that are
// paused and hold packets (PausedPort), and the cycle is searched for in the
// union of the lists. Neither the grid nor the lists depend on how the fabric
// is cut, so the time and the cycle found do not either.

// PausedPort is an egress class queue of element Elem that its link peer
// Peer keeps paused while it holds packets: Elem waits for Peer. The pause
// began at Since and, unless refreshed, ends at Until.
type PausedPort struct {
	Elem, Peer   ElemID
	Port, Class  int32
	Since, Until Time
}

// NextGrid is the first multiple of every after t.
func NextGrid(t, every Time) Time { return (t/every + 1) * every }

// FindDeadlock looks, at the grid times G (multiples of every) with
// lo <= G <= hi in increasing order, for a cycle of ports each paused since
// at least G-threshold and still at G (Since <= G-threshold, Until > G). It
// returns the first such G and its cycle in canonical order (from its
// smallest port by Elem, Port, Class, following the waits). Preconditions:
// ports describes the state at lo and nothing happens before hi (no event),
// every > 0.
func FindDeadlock(ports []PausedPort, lo, hi, every, threshold Time) (Time, []PausedPort, bool) {
	if len(ports) == 0 || hi < lo {
		return 0, nil, false
	}
	// The set of long-paused ports changes only where a port becomes long
	// paused (Since+threshold) or its pause ends (Until): the candidates
	// are the first grid times at or after the former.
	var cands []Time
	for _, p := range ports {
		g := max(lo, p.Since+threshold)
		if r := g % every; r != 0 {
			g += every - r
		}
		if g <= hi && g < p.Until {
			cands = append(cands, g)
		}
	}
	slices.Sort(cands)
	cands = slices.Compact(cands)
	sorted := slices.Clone(ports)
	slices.SortFunc(sorted, func(a, b PausedPort) int {
		return cmp.Or(cmp.Compare(a.Elem, b.Elem), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Class, b.Class))
	})
	for _, g := range cands {
		var active []PausedPort
		for _, p := range sorted {
			if p.Since+threshold <= g && p.Until > g {
				active = append(active, p)
			}
		}
		if c := findCycle(active); c != nil {
			return g, c, true
		}
	}
	return 0, nil, false
}

// findCycle returns a cycle of the wait graph of ports (sorted by Elem,
// Port, Class), or nil: a depth-first search from each element in order,
// following each element's first port to an element that waits itself.
func findCycle(ports []PausedPort) []PausedPort {
	first := map[ElemID]int{} // an element's first port in ports
	for i, p := range ports {
		if _, ok := first[p.Elem]; !ok {
			first[p.Elem] = i
		}
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := map[ElemID]int{}
	for _, start := range ports {
		if state[start.Elem] != unseen {
			continue
		}
		// Every waiting element has out-edges; a walk along the first
		// edges that can be followed ends in a cycle or at an element that
		// waits for nobody. Try each edge of an element in order.
		var path []PausedPort
		if c := walk(ports, first, state, start.Elem, &path); c != nil {
			return canonical(c)
		}
	}
	return nil
}

// walk is the depth-first search of findCycle from element at.
func walk(ports []PausedPort, first map[ElemID]int, state map[ElemID]int, at ElemID, path *[]PausedPort) []PausedPort {
	state[at] = 1
	for i := first[at]; i < len(ports) && ports[i].Elem == at; i++ {
		p := ports[i]
		*path = append(*path, p)
		switch state[p.Peer] {
		case 1:
			// The cycle is the path from p.Peer's port on.
			for k, q := range *path {
				if q.Elem == p.Peer {
					return slices.Clone((*path)[k:])
				}
			}
		case 0:
			if _, waits := first[p.Peer]; waits {
				if c := walk(ports, first, state, p.Peer, path); c != nil {
					return c
				}
			}
		}
		*path = (*path)[:len(*path)-1]
	}
	state[at] = 2
	return nil
}

// canonical rotates cycle c to start at its smallest port.
func canonical(c []PausedPort) []PausedPort {
	k := 0
	for i, p := range c {
		q := c[k]
		if cmp.Or(cmp.Compare(p.Elem, q.Elem), cmp.Compare(p.Port, q.Port), cmp.Compare(p.Class, q.Class)) < 0 {
			k = i
		}
	}
	return append(slices.Clone(c[k:]), c[:k]...)
}

// DeadlockReport is the one-line report of a deadlock found at at with
// threshold, naming each element by name.
func DeadlockReport(at, threshold Time, cycle []PausedPort, name func(ElemID) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pfc deadlock at %v: a cycle of %d ports each paused by the next for at least %v while holding packets:", at, len(cycle), threshold)
	for i, p := range cycle {
		sep := " ->"
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s port %d class %d (paused since %v)", sep, name(p.Elem), p.Port, p.Class, p.Since)
	}
	fmt.Fprintf(&b, " -> back to %s", name(cycle[0].Elem))
	return b.String()
}
