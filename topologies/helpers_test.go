package topologies

import (
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// tierOf is a tier with the given rate, a 1 us delay and a 1 MB buffer.
func tierOf(rate sim.Bandwidth) TierConfig {
	return TierConfig{Rate: rate, Delay: sim.Microsecond, Queue: QueueConfig{Buffer: 1 << 20}}
}

func mustFatTree(t testing.TB, k int) *Topology {
	t.Helper()
	g := 100 * sim.GbitPerSecond
	topo, err := FatTree(FatTreeConfig{K: k, Host: tierOf(g), Agg: tierOf(g), Core: tierOf(g)})
	if err != nil {
		t.Fatalf("FatTree(k=%d): expected no error, got %v", k, err)
	}
	return topo
}

// wantErr checks that err is an error whose text is want (or, when want
// ends in "...", starts with it).
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected error %q, got none", want)
	}
	got := err.Error()
	if strings.Contains(got, "\n") {
		t.Errorf("expected a one-line error, got %q", got)
	}
	if p, ok := strings.CutSuffix(want, "..."); ok {
		if !strings.HasPrefix(got, p) {
			t.Errorf("expected error starting %q, got %q", p, got)
		}
		return
	}
	if got != want {
		t.Errorf("expected error %q, got %q", want, got)
	}
}

// refDist is a reference distance matrix computed by Floyd-Warshall with
// only switches allowed as intermediate nodes (hosts never forward):
// d[a][b] hops, or -1. It shares no code with bfs.
func refDist(topo *Topology) [][]int {
	n := len(topo.Nodes)
	const inf = 1 << 30
	d := make([][]int, n)
	for i := range d {
		d[i] = make([]int, n)
		for j := range d[i] {
			d[i][j] = inf
		}
		d[i][i] = 0
	}
	for _, l := range topo.Links {
		d[l.A][l.B], d[l.B][l.A] = 1, 1
	}
	for k := 0; k < n; k++ {
		if topo.Nodes[k].Kind != Switch {
			continue
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if d[i][k]+d[k][j] < d[i][j] {
					d[i][j] = d[i][k] + d[k][j]
				}
			}
		}
	}
	for i := range d {
		for j := range d[i] {
			if d[i][j] >= inf {
				d[i][j] = -1
			}
		}
	}
	return d
}

// refNext is the reference next-hop set of node n towards host h: ports
// whose peer is h, or a switch on a shortest path to h.
func refNext(topo *Topology, d [][]int, n, h int) []int32 {
	dst := topo.Hosts[h]
	if n == dst || d[n][dst] < 0 {
		return nil
	}
	var out []int32
	pi := int32(0)
	for _, l := range topo.Links {
		if l.A != n && l.B != n {
			continue
		}
		q := l.B
		if l.B == n {
			q = l.A
		}
		if (q == dst || topo.Nodes[q].Kind == Switch) && d[q][dst] == d[n][dst]-1 {
			out = append(out, pi)
		}
		pi++
	}
	return out
}

func equalPorts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// countPeersOfTier counts the ports in ps whose peer is a node of tier.
func countPeersOfTier(topo *Topology, ix *Index, node int, ps []int32, tier int) int {
	c := 0
	ports := ix.Ports(node)
	for _, p := range ps {
		if topo.Nodes[ports[p].Peer].Tier == tier {
			c++
		}
	}
	return c
}

func nodeByName(t *testing.T, topo *Topology, name string) int {
	t.Helper()
	for i := range topo.Nodes {
		if topo.Nodes[i].Name == name {
			return i
		}
	}
	t.Fatalf("expected a node named %q, found none", name)
	return -1
}

func mustCompile(t testing.TB, topo *Topology) *Index {
	t.Helper()
	ix, err := Compile(topo)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}
