package topologies

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// randomGraph builds a random connected-ish fabric from seed: a few
// switches with random links between them and hosts on one or two
// switches (multi-homed hosts test that hosts never forward). It may fail
// validation; callers skip those.
func randomGraph(seed uint64) (*Topology, error) {
	rng := rand.New(rand.NewPCG(seed, 0x70b0))
	ns := 2 + rng.IntN(8)
	nh := 2 + rng.IntN(8)
	var cfg GraphConfig
	cfg.Defaults = tierOf(gbps)
	for i := 0; i < ns; i++ {
		cfg.Nodes = append(cfg.Nodes, GraphNode{Name: fmt.Sprintf("s%d", i), Kind: "switch", Tier: 1})
	}
	for i := 0; i < nh; i++ {
		cfg.Nodes = append(cfg.Nodes, GraphNode{Name: fmt.Sprintf("h%d", i), Kind: "host"})
	}
	for i := 1; i < ns; i++ { // a random tree, then extra links
		cfg.Links = append(cfg.Links, GraphLink{A: fmt.Sprintf("s%d", rng.IntN(i)), B: fmt.Sprintf("s%d", i)})
	}
	for e := rng.IntN(2 * ns); e > 0; e-- {
		a, b := rng.IntN(ns), rng.IntN(ns)
		if a != b {
			cfg.Links = append(cfg.Links, GraphLink{A: fmt.Sprintf("s%d", a), B: fmt.Sprintf("s%d", b)})
		}
	}
	for i := 0; i < nh; i++ {
		for n := 1 + rng.IntN(2); n > 0; n-- {
			cfg.Links = append(cfg.Links, GraphLink{A: fmt.Sprintf("h%d", i), B: fmt.Sprintf("s%d", rng.IntN(ns))})
		}
	}
	if rng.IntN(3) == 0 { // a direct host-host link
		cfg.Links = append(cfg.Links, GraphLink{A: "h0", B: "h1"})
	}
	return Graph(cfg)
}

// testTopologies are the fabrics the reference comparisons run on.
func testTopologies(t *testing.T) []*Topology {
	t.Helper()
	var out []*Topology
	out = append(out, mustFatTree(t, 2), mustFatTree(t, 4))
	ls, err := LeafSpine(LeafSpineConfig{Leaves: 3, Spines: 2, HostsPerLeaf: 3, Host: tierOf(gbps), Fabric: tierOf(gbps)})
	if err != nil {
		t.Fatalf("LeafSpine: expected no error, got %v", err)
	}
	db, err := Dumbbell(DumbbellConfig{Senders: 2, Receivers: 3, Host: tierOf(gbps), Bottleneck: tierOf(gbps)})
	if err != nil {
		t.Fatalf("Dumbbell: expected no error, got %v", err)
	}
	out = append(out, ls, db)
	for seed := uint64(0); seed < 60; seed++ {
		g, err := randomGraph(seed)
		if err == nil {
			out = append(out, g)
		}
	}
	if len(out) < 30 {
		t.Fatalf("expected at least 26 random graphs to be valid, got %d", len(out)-4)
	}
	return out
}

func TestRoutes_MatchFloydWarshallReferenceWithHostsNeverForwarding(t *testing.T) {
	for _, topo := range testTopologies(t) {
		ix := mustCompile(t, topo)
		d := refDist(topo)
		r := ix.Routes()
		if r.NumNodes() != len(topo.Nodes) || r.NumHosts() != len(topo.Hosts) {
			t.Fatalf("%s: expected a %dx%d table, got %dx%d", topo.Name, len(topo.Nodes), len(topo.Hosts), r.NumNodes(), r.NumHosts())
		}
		for n := range topo.Nodes {
			if topo.Nodes[n].Kind != Switch {
				continue // hosts have no rows: a host sends on its one NIC
			}
			for h := range topo.Hosts {
				want := refNext(topo, d, n, h)
				if got := r.Next(n, h); !equalPorts(got, want) {
					t.Fatalf("%s: next hops of %s to host %d: expected %v, got %v", topo.Name, topo.Nodes[n].Name, h, want, got)
				}
			}
		}
	}
}

func TestStats_MatchFloydWarshallReference(t *testing.T) {
	for _, topo := range testTopologies(t) {
		ix := mustCompile(t, topo)
		d := refDist(topo)
		want := TopoStats{Hosts: len(topo.Hosts), Links: len(topo.Links)}
		for i := range topo.Nodes {
			if topo.Nodes[i].Kind == Switch {
				want.Switches++
			}
		}
		minH := -1
		for a := range topo.Nodes {
			for b := range topo.Nodes {
				want.Diameter = max(want.Diameter, d[a][b])
				if a != b && topo.Nodes[a].Kind == Host && topo.Nodes[b].Kind == Host && d[a][b] > 0 {
					want.MaxHostPath = max(want.MaxHostPath, d[a][b])
					if minH < 0 || d[a][b] < minH {
						minH = d[a][b]
					}
				}
			}
		}
		want.MinHostPath = max(minH, 0)
		if got := ix.Stats(); got != want {
			t.Fatalf("%s: expected %+v, got %+v", topo.Name, want, got)
		}
	}
}

func TestRoutes_HostsNeverTransit(t *testing.T) {
	// h0 is on s0 and s1; h1 only on s0, h2 only on s1: h1 and h2 cannot
	// talk (Graph refuses), so build it by hand and check Routes directly.
	g := tierOf(gbps)
	topo := &Topology{Name: "transit",
		Nodes: []Node{{Name: "h0", Kind: Host}, {Name: "h1", Kind: Host}, {Name: "h2", Kind: Host},
			{Name: "s0", Kind: Switch, Tier: 1}, {Name: "s1", Kind: Switch, Tier: 1}},
		Links: []Link{{A: 0, B: 3, Rate: g.Rate}, {A: 0, B: 4, Rate: g.Rate}, {A: 1, B: 3, Rate: g.Rate}, {A: 2, B: 4, Rate: g.Rate}},
		Hosts: []int{0, 1, 2}}
	ix := buildPorts(topo) // Compile refuses it (see the last check)
	r, hops, err := computeRoutes(ix, nil, []HostPair{{1, 2}, {0, 2}, {1, 0}})
	if err != nil {
		t.Fatalf("computeRoutes: expected no error, got %v", err)
	}
	if got := r.Next(3, 2); len(got) != 0 {
		t.Errorf("s0 to h2 (only via h0): expected no route, got %v", got)
	}
	if got := r.Next(4, 2); len(got) != 1 || ix.Ports(4)[got[0]].Peer != 2 {
		t.Errorf("s1 to h2: expected the port to h2, got %v", got)
	}
	if got := r.Next(4, 0); len(got) != 1 || ix.Ports(4)[got[0]].Peer != 0 {
		t.Errorf("s1 to h0: expected the port to h0, got %v", got)
	}
	if got := r.Next(0, 2); len(got) != 0 {
		t.Errorf("h0 (a host: no row) to h2: expected nothing, got %v", got)
	}
	if want := []int32{0, 2, 2}; !slices.Equal(hops, want) {
		t.Errorf("hops h1->h2, h0->h2, h1->h0: expected %v, got %v", want, hops)
	}
	wantErr(t, topo.Validate(), `topology "transit": hosts h1 and h2 are not connected (hosts never forward)`)
}

func TestRoutes_DeterministicAcrossBuilds(t *testing.T) {
	a := mustCompile(t, mustFatTree(t, 8)).Routes()
	b := mustCompile(t, mustFatTree(t, 8)).Routes()
	if !slices.Equal(a.cells, b.cells) || !slices.Equal(a.cells8, b.cells8) || !slices.Equal(a.setOff, b.setOff) ||
		!slices.Equal(a.ports, b.ports) || !slices.Equal(a.dest, b.dest) || !slices.Equal(a.row, b.row) {
		t.Fatalf("expected identical routes from two builds, got %d/%d cells and %d/%d sets",
			a.numCells(), b.numCells(), len(a.setOff), len(b.setOff))
	}
	if a.cells8 == nil || a.cells != nil {
		t.Fatalf("expected a k=8 fat-tree's %d sets in byte cells, got %d byte and %d int32 cells",
			len(a.setOff)-1, len(a.cells8), len(a.cells))
	}
}

func TestRoutes_NextIsIncreasingAndDoesNotAllocate(t *testing.T) {
	topo := mustFatTree(t, 4)
	ix := mustCompile(t, topo)
	r := ix.Routes()
	for n := range topo.Nodes {
		if topo.Nodes[n].Kind != Switch {
			continue
		}
		for h := range topo.Hosts {
			ps := r.Next(n, h)
			for i := 1; i < len(ps); i++ {
				if ps[i] <= ps[i-1] {
					t.Fatalf("Next(%d, %d): expected increasing ports, got %v", n, h, ps)
				}
			}
			if cap(ps) != len(ps) {
				t.Fatalf("Next(%d, %d): expected cap == len so appends cannot clobber the table, got %d > %d", n, h, cap(ps), len(ps))
			}
		}
	}
	sink := 0
	allocs := testing.AllocsPerRun(100, func() {
		for h := range topo.Hosts {
			sink += len(r.Next(20, h))
		}
	})
	if allocs != 0 {
		t.Errorf("Next: expected 0 allocations, got %v", allocs)
	}
	_ = sink
}

func TestCompile_IndexIsASnapshotOfPlainData(t *testing.T) {
	topo := mustFatTree(t, 4)
	copied := *topo // a Topology is plain data: copying it copies no lock or cache
	ix := mustCompile(t, topo)
	// Add a host hx on tor0.
	topo.Nodes = append(topo.Nodes, Node{Name: "hx", Kind: Host})
	topo.Hosts = append(topo.Hosts, len(topo.Nodes)-1)
	topo.Links = append(topo.Links, Link{A: len(topo.Nodes) - 1, B: nodeByName(t, topo, "tor0"), Rate: gbps})
	if ix.NumHosts() != 16 || ix.Routes().NumHosts() != 16 || len(ix.Ports(nodeByName(t, topo, "tor0"))) != 4 {
		t.Errorf("the index compiled before the change: expected 16 hosts and 4 ports on tor0, got %d, %d",
			ix.NumHosts(), len(ix.Ports(nodeByName(t, topo, "tor0"))))
	}
	ix2 := mustCompile(t, topo)
	if ix2.Routes().NumHosts() != 17 {
		t.Errorf("after adding a host: expected a table with 17 hosts, got %d", ix2.Routes().NumHosts())
	}
	if got := len(ix2.Ports(nodeByName(t, topo, "tor0"))); got != 5 {
		t.Errorf("tor0 after adding a host: expected 5 ports, got %d", got)
	}
	if ixc := mustCompile(t, &copied); ixc.NumHosts() != 16 || ixc.Stats() != ix.Stats() {
		t.Errorf("the copy: expected the original 16 hosts and stats %+v, got %d and %+v", ix.Stats(), ixc.NumHosts(), ixc.Stats())
	}
}

func TestCompile_RefusesAnInvalidTopology(t *testing.T) {
	topo := handBuilt()
	topo.Links = topo.Links[:2] // one host loses its link
	if _, err := Compile(topo); err == nil || err.Error() != topo.Validate().Error() {
		t.Errorf("expected Validate's error, got %v", err)
	}
}

func TestPorts_PortIIsTheIthLinkTouchingTheNode(t *testing.T) {
	for _, topo := range testTopologies(t)[:8] {
		ix := mustCompile(t, topo)
		next := make([]int, len(topo.Nodes))
		for li, l := range topo.Links {
			for _, end := range [2][2]int{{l.A, l.B}, {l.B, l.A}} {
				ps := ix.Ports(end[0])
				i := next[end[0]]
				next[end[0]]++
				if i >= len(ps) || ps[i].Link != li || ps[i].Peer != end[1] {
					t.Fatalf("%s: node %d port %d: expected link %d to %d, got %+v", topo.Name, end[0], i, li, end[1], ps)
				}
			}
		}
		for n := range topo.Nodes {
			if len(ix.Ports(n)) != next[n] {
				t.Fatalf("%s: node %d: expected %d ports, got %d", topo.Name, n, next[n], len(ix.Ports(n)))
			}
		}
	}
}

func TestFillQueues_SetsOnlyUnsetBuffers(t *testing.T) {
	topo := mustFatTree(t, 2)
	topo.Links[0].Queue.Buffer = 0
	topo.Links[1].Queue.Buffer = 0
	q := QueueConfig{Buffer: 4096, ECN: ECNConfig{Mode: ECNStep, K: 1000}}
	if n := topo.FillQueues(q); n != 2 {
		t.Errorf("expected 2 links filled, got %d", n)
	}
	if topo.Links[0].Queue != q || topo.Links[2].Queue.Buffer != 1<<20 {
		t.Errorf("expected link 0 filled and link 2 untouched, got %+v and %+v", topo.Links[0].Queue, topo.Links[2].Queue)
	}
}

// BenchmarkRoutes measures building the forwarding table.
// go test -run '^$' -bench Routes -benchmem ./topologies/
func BenchmarkRoutes(b *testing.B) {
	for _, k := range []int{8, 16, 32} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			g := 100 * sim.GbitPerSecond
			topo, err := FatTree(FatTreeConfig{K: k, Host: tierOf(g), Agg: tierOf(g), Core: tierOf(g)})
			if err != nil {
				b.Fatalf("FatTree: expected no error, got %v", err)
			}
			ix := buildPorts(topo)
			b.ReportAllocs()
			var r *Routes
			for b.Loop() {
				if r, _, err = computeRoutes(ix, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.Bytes()), "bytes")
		})
	}
}
