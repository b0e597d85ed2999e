package topologies

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// equivTopologies are fabrics of every kind for the comparison with the
// old all-pairs table: dumbbell, leaf-spine (oversubscribed and not),
// fat-trees (plain and oversubscribed), htsim .topo files (the package's
// testdata and the examples'), and explicit graphs (random, with
// multi-homed hosts and host-host links).
func equivTopologies(t *testing.T) []*Topology {
	t.Helper()
	g := tierOf(gbps)
	var out []*Topology
	add := func(topo *Topology, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("building a test fabric: expected no error, got %v", err)
		}
		out = append(out, topo)
	}
	add(Dumbbell(DumbbellConfig{Senders: 3, Receivers: 2, Host: g, Bottleneck: g}))
	add(LeafSpine(LeafSpineConfig{Leaves: 6, Spines: 3, HostsPerLeaf: 8, Host: g, Oversubscription: 4}))
	add(LeafSpine(LeafSpineConfig{Leaves: 1, Spines: 2, HostsPerLeaf: 3, Host: g, Fabric: g}))
	for _, k := range []int{2, 4, 8, 16} {
		add(FatTree(FatTreeConfig{K: k, Host: g, Agg: g, Core: g}))
	}
	add(FatTree(FatTreeConfig{K: 4, Host: g, Agg: g, Core: g, Oversubscribed: 3}))
	files, _ := filepath.Glob("testdata/*.topo")
	more, _ := filepath.Glob("../examples/htsim/*.topo")
	files = append(files, more...)
	if len(files) < 4 {
		t.Fatalf("expected at least 4 .topo files, got %v", files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("reading %s: expected no error, got %v", f, err)
		}
		topo, err := ParseHtsimTopo(filepath.Base(f), data)
		if err != nil {
			t.Fatalf("parsing %s: expected no error, got %v", f, err)
		}
		topo.FillQueues(QueueConfig{Buffer: 1 << 20})
		out = append(out, topo)
	}
	for seed := uint64(100); seed < 200; seed++ {
		if topo, err := randomGraph(seed); err == nil {
			out = append(out, topo)
		}
	}
	return out
}

// TestRoutes_EqualTheOldAllPairsTable compares Routes.Next with the table
// by (node, destination host) that lockstep used before (routes_old_test.go)
// for every switch and destination, port for port and in order (the ECMP
// hash picks by index, so the order is part of every result).
func TestRoutes_EqualTheOldAllPairsTable(t *testing.T) {
	for _, topo := range equivTopologies(t) {
		ix := mustCompile(t, topo)
		old, err := oldComputeRoutes(buildPorts(topo))
		if err != nil {
			t.Fatalf("%s: old table: expected no error, got %v", topo.Name, err)
		}
		r := ix.Routes()
		rng := rand.New(rand.NewPCG(uint64(len(topo.Nodes)), 7))
		for n := range topo.Nodes {
			if topo.Nodes[n].Kind != Switch {
				continue
			}
			for h := range topo.Hosts {
				// All pairs up to 64 hosts, else a sample of 64 per switch.
				if len(topo.Hosts) > 64 && rng.IntN(len(topo.Hosts)) >= 64 {
					continue
				}
				if got, want := r.Next(n, h), old.next(n, h); !slices.Equal(got, want) {
					t.Fatalf("%s: %s to host %d: expected %v (old table), got %v", topo.Name, topo.Nodes[n].Name, h, want, got)
				}
			}
		}
		if old.Entries() > 0 && r.Bytes() >= 4*old.Entries() && len(topo.Hosts) >= 128 {
			t.Errorf("%s: expected routes smaller than the old table's %d bytes, got %d", topo.Name, 4*old.Entries(), r.Bytes())
		}
	}
}

// TestRoutes_RowsBuildOnlyTheChosenSwitches checks a partition's routes:
// the chosen switches' rows equal the whole fabric's, the others are empty.
func TestRoutes_RowsBuildOnlyTheChosenSwitches(t *testing.T) {
	for _, topo := range equivTopologies(t)[:12] {
		full := mustCompile(t, topo).Routes()
		odd := func(n int) bool { return n%2 == 1 }
		ix, err := CompileWith(topo, CompileOptions{Rows: odd})
		if err != nil {
			t.Fatalf("%s: CompileWith: expected no error, got %v", topo.Name, err)
		}
		r := ix.Routes()
		for n := range topo.Nodes {
			if topo.Nodes[n].Kind != Switch {
				continue
			}
			for h := range topo.Hosts {
				want := full.Next(n, h)
				if !odd(n) && r.dest[h].edge != int32(n) {
					want = nil
				}
				if got := r.Next(n, h); !slices.Equal(got, want) {
					t.Fatalf("%s: %s to host %d: expected %v, got %v", topo.Name, topo.Nodes[n].Name, h, want, got)
				}
			}
		}
		if r.NumRows() >= full.NumRows() && full.NumRows() > 1 {
			t.Errorf("%s: expected fewer rows than the full %d, got %d", topo.Name, full.NumRows(), r.NumRows())
		}
	}
}

// TestPairHops_EqualTheWalkAlongTheOldTable compares the hop counts from
// the route searches with a walk along the first port of the old table at
// every hop (what fabric.New did per flow).
func TestPairHops_EqualTheWalkAlongTheOldTable(t *testing.T) {
	for _, topo := range equivTopologies(t) {
		ixo := buildPorts(topo)
		old, err := oldComputeRoutes(ixo)
		if err != nil {
			t.Fatalf("%s: old table: expected no error, got %v", topo.Name, err)
		}
		rng := rand.New(rand.NewPCG(uint64(len(topo.Links)), 9))
		var pairs []HostPair
		for i := 0; i < 200; i++ {
			pairs = append(pairs, HostPair{int32(rng.IntN(len(topo.Hosts))), int32(rng.IntN(len(topo.Hosts)))})
		}
		ix, err := CompileWith(topo, CompileOptions{Pairs: pairs})
		if err != nil {
			t.Fatalf("%s: CompileWith: expected no error, got %v", topo.Name, err)
		}
		for i, p := range pairs {
			want, node := 0, topo.Hosts[p.Src]
			for node != topo.Hosts[p.Dst] && want <= len(topo.Nodes) {
				next := old.next(node, int(p.Dst))
				if len(next) == 0 {
					want = 0
					break
				}
				node = ixo.Ports(node)[next[0]].Peer
				want++
			}
			if got := ix.PairHops()[i]; int(got) != want {
				t.Fatalf("%s: hops %d -> %d: expected %d, got %d", topo.Name, p.Src, p.Dst, want, got)
			}
		}
	}
}

// BenchmarkNext measures one lookup, the switch's per-packet routing cost.
// go test -run '^$' -bench Next -benchmem ./topologies/
func BenchmarkNext(b *testing.B) {
	for _, k := range []int{8, 32} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			topo := mustFatTree(b, k)
			r := mustCompile(b, topo).Routes()
			tor := len(topo.Hosts)
			b.ReportAllocs()
			sink, h := 0, 0
			for b.Loop() {
				sink += len(r.Next(tor+h%(k*k/2), h))
				h = (h + 7919) % len(topo.Hosts)
			}
			_ = sink
		})
	}
}

// TestLevelColumns_EqualTheSearches compares the level-set computation of
// the routes (levelColumns) with one search per column (searchColumns) on
// every fabric where it applies: every cell, for every switch and
// destination, and the hop counts of sampled pairs, in blocks of 64
// columns (several blocks on the fabrics of more than 64 edge switches).
func TestLevelColumns_EqualTheSearches(t *testing.T) {
	applied := 0
	for _, topo := range equivTopologies(t) {
		ix := buildPorts(topo)
		rng := rand.New(rand.NewPCG(uint64(len(topo.Links)), 11))
		var pairs []HostPair
		for i := 0; i < 300 && len(topo.Hosts) > 0; i++ {
			pairs = append(pairs, HostPair{int32(rng.IntN(len(topo.Hosts))), int32(rng.IntN(len(topo.Hosts)))})
		}
		odd := func(n int) bool { return n%3 != 1 }
		for _, rows := range []func(int) bool{nil, odd} {
			// Blocks of one word (64 columns).
			fast, fh, err := computeRoutesBy(ix, rows, pairs, false, 1)
			if err != nil {
				t.Fatalf("%s: levels: expected no error, got %v", topo.Name, err)
			}
			slow, sh, err := computeRoutesBy(ix, rows, pairs, true, 0)
			if err != nil {
				t.Fatalf("%s: searches: expected no error, got %v", topo.Name, err)
			}
			if ix.group == nil && fast.numCols == countEdgeColumns(fast) {
				applied++
			}
			for n := range topo.Nodes {
				for h := range topo.Hosts {
					if got, want := fast.Next(n, h), slow.Next(n, h); !slices.Equal(got, want) {
						t.Fatalf("%s: %s to host %d: expected %v (searches), got %v", topo.Name, topo.Nodes[n].Name, h, want, got)
					}
				}
			}
			if !slices.Equal(fh, sh) {
				t.Fatalf("%s: pair hops: expected %v (searches), got %v", topo.Name, sh, fh)
			}
			if fast.Entries() != slow.Entries() {
				t.Fatalf("%s: expected %d set entries (searches), got %d", topo.Name, slow.Entries(), fast.Entries())
			}
		}
	}
	t.Logf("the level sets served %d of the fabrics' builds", applied)
	if applied < 20 {
		t.Fatalf("expected the level sets to serve at least 20 of the fabrics, got %d", applied)
	}
}

// countEdgeColumns is the number of columns that start at an edge switch.
func countEdgeColumns(r *Routes) int {
	seen := map[int32]bool{}
	for _, d := range r.dest {
		if d.edge >= 0 {
			seen[d.col] = true
		}
	}
	return len(seen)
}

// TestRoutes_WideCellsBeyond256Sets checks the int32 cells that a fabric
// of more than 256 distinct next-hop sets keeps: a star of 300 switches
// around a hub, each with one host, has a set per spoke at the hub.
func TestRoutes_WideCellsBeyond256Sets(t *testing.T) {
	const n = 300
	g := tierOf(gbps)
	topo := &Topology{Name: "star"}
	topo.Nodes = append(topo.Nodes, Node{Name: "hub", Kind: Switch, Tier: 2})
	for i := range n {
		sw := len(topo.Nodes)
		topo.Nodes = append(topo.Nodes, Node{Name: fmt.Sprintf("s%d", i), Kind: Switch, Tier: 1},
			Node{Name: fmt.Sprintf("h%d", i), Kind: Host})
		topo.Hosts = append(topo.Hosts, sw+1)
		topo.Links = append(topo.Links, Link{A: 0, B: sw, Rate: g.Rate, Delay: g.Delay, Queue: g.Queue, Tier: 2},
			Link{A: sw, B: sw + 1, Rate: g.Rate, Delay: g.Delay, Queue: g.Queue, Tier: 1})
	}
	r := mustCompile(t, topo).Routes()
	if r.cells == nil || r.cells8 != nil {
		t.Fatalf("expected int32 cells for %d sets, got %d int32 and %d byte cells", len(r.setOff)-1, len(r.cells), len(r.cells8))
	}
	for h := range n {
		if got := r.Next(0, h); !slices.Equal(got, []int32{int32(h)}) {
			t.Fatalf("hub to host %d: expected port [%d], got %v", h, h, got)
		}
		if got := r.Next(1+2*((h+1)%n), h); !slices.Equal(got, []int32{0}) {
			t.Fatalf("another spoke to host %d: expected its port [0] to the hub, got %v", h, got)
		}
	}
}
