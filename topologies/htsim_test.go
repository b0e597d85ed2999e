package topologies

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading testdata %s: expected no error, got %v", name, err)
	}
	return data
}

func mustParse(t *testing.T, name string, data []byte) *Topology {
	t.Helper()
	topo, err := ParseHtsimTopo(name, data)
	if err != nil {
		t.Fatalf("ParseHtsimTopo(%s): expected no error, got %v", name, err)
	}
	if err := topo.Validate(); err != nil {
		t.Fatalf("ParseHtsimTopo(%s): Validate: expected nil, got %v", name, err)
	}
	return topo
}

func TestParseHtsimTopo_Testdata(t *testing.T) {
	cases := []struct {
		file                   string
		hosts, switches, links int
		minPath, maxPath       int
	}{
		// k=8: 128 hosts, 32 ToR + 32 agg + 16 core, 128+128+128 links.
		{"fattree_k8.topo", 128, 80, 384, 2, 6},
		// 4 leaves x 16 hosts, 4 spines: 64 + 16 links.
		{"leafspine_oversub.topo", 64, 8, 80, 2, 4},
		// 8 pods x (4 ToR + 4 agg) + 8 cores; 128 + 128 + 32*2*2 links.
		{"fattree_bundled.topo", 128, 72, 384, 2, 6},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			topo := mustParse(t, tc.file, readTestdata(t, tc.file))
			ix := mustCompile(t, topo)
			st := ix.Stats()
			want := TopoStats{Hosts: tc.hosts, Switches: tc.switches, Links: tc.links,
				Diameter: tc.maxPath, MinHostPath: tc.minPath, MaxHostPath: tc.maxPath}
			if st != want {
				t.Errorf("stats: expected %+v, got %+v", want, st)
			}
			if topo.Name != tc.file {
				t.Errorf("name: expected %s, got %s", tc.file, topo.Name)
			}
		})
	}
}

func TestParseHtsimTopo_K8FileEqualsFatTreeK8(t *testing.T) {
	file := mustParse(t, "fattree_k8.topo", readTestdata(t, "fattree_k8.topo"))
	if got := file.NumHosts(); got != 128 {
		t.Fatalf("hosts: expected 128, got %d", got)
	}
	tier := func(d sim.Time) TierConfig {
		return TierConfig{Rate: 400 * gbps, Delay: d, Queue: QueueConfig{Buffer: 1000000}}
	}
	built, err := FatTree(FatTreeConfig{K: 8, Host: tier(500 * sim.Nanosecond), Agg: tier(500 * sim.Nanosecond),
		Core: tier(1000 * sim.Nanosecond), SwitchLatency: 300 * sim.Nanosecond})
	if err != nil {
		t.Fatalf("FatTree: expected no error, got %v", err)
	}
	if len(file.Nodes) != len(built.Nodes) || len(file.Links) != len(built.Links) {
		t.Fatalf("expected %d nodes and %d links, got %d and %d", len(built.Nodes), len(built.Links), len(file.Nodes), len(file.Links))
	}
	for i := range built.Nodes {
		if file.Nodes[i] != built.Nodes[i] {
			t.Fatalf("node %d: expected %+v, got %+v", i, built.Nodes[i], file.Nodes[i])
		}
	}
	for i := range built.Links {
		if file.Links[i] != built.Links[i] {
			t.Fatalf("link %d: expected %+v, got %+v", i, built.Links[i], file.Links[i])
		}
	}
}

func TestParseHtsimTopo_LeafSpineOversubSettings(t *testing.T) {
	topo := mustParse(t, "leafspine_oversub.topo", readTestdata(t, "leafspine_oversub.topo"))
	ix := mustCompile(t, topo)
	for i, l := range topo.Links {
		wantBuf := int64(500000)
		if l.Tier == 2 {
			wantBuf = 2000000 // tier 0 Queue_Up == tier 1 Queue_Down
		}
		if l.Rate != 100*gbps || l.Delay != 200*sim.Nanosecond || l.Queue.Buffer != wantBuf {
			t.Fatalf("link %d (tier %d): expected 100Gbps, 200ns, buffer %d; got %v, %v, %d", i, l.Tier, wantBuf, l.Rate, l.Delay, l.Queue.Buffer)
		}
	}
	leaf := nodeByName(t, topo, "tor0")
	if topo.Nodes[leaf].Latency != 500*sim.Nanosecond {
		t.Errorf("tor0 latency: expected 500ns, got %v", topo.Nodes[leaf].Latency)
	}
	if got := len(ix.Ports(leaf)); got != 20 {
		t.Errorf("tor0 ports: expected 16 down + 4 up, got %d", got)
	}
	// A leaf reaches a host on another leaf through every spine.
	if got := ix.Routes().Next(leaf, 63); len(got) != 4 {
		t.Errorf("tor0 -> host 63: expected 4 spine ports, got %v", got)
	}
	// Same fabric as the LeafSpine builder with the same numbers.
	host := TierConfig{Rate: 100 * gbps, Delay: 200 * sim.Nanosecond, Queue: QueueConfig{Buffer: 500000}}
	fabric := TierConfig{Delay: 200 * sim.Nanosecond, Queue: QueueConfig{Buffer: 2000000}}
	ls, err := LeafSpine(LeafSpineConfig{Leaves: 4, Spines: 4, HostsPerLeaf: 16, Host: host, Fabric: fabric,
		Oversubscription: 4, SwitchLatency: 500 * sim.Nanosecond})
	if err != nil {
		t.Fatalf("LeafSpine: expected no error, got %v", err)
	}
	for i := range ls.Links {
		if ls.Links[i] != topo.Links[i] {
			t.Fatalf("link %d: expected LeafSpine's %+v, got %+v", i, ls.Links[i], topo.Links[i])
		}
	}
}

func TestParseHtsimTopo_BundleMakesParallelLinks(t *testing.T) {
	topo := mustParse(t, "fattree_bundled.topo", readTestdata(t, "fattree_bundled.topo"))
	ix := mustCompile(t, topo)
	core0, agg0, tor0 := nodeByName(t, topo, "core0"), nodeByName(t, topo, "agg0"), nodeByName(t, topo, "tor0")
	if got := len(ix.Ports(core0)); got != 16 {
		t.Errorf("core0: expected Radix_Down 16 ports (8 pods x 2), got %d", got)
	}
	// agg0 is at position 0 of pod 0: cores 0 and 4, two links each.
	var peers []string
	for _, p := range ix.Ports(agg0) {
		if topo.Nodes[p.Peer].Tier == 3 {
			peers = append(peers, topo.Nodes[p.Peer].Name)
		}
	}
	if got := strings.Join(peers, " "); got != "core0 core0 core4 core4" {
		t.Errorf("agg0 uplinks: expected core0 core0 core4 core4, got %s", got)
	}
	r := ix.Routes()
	const otherPod = 100
	if got := r.Next(agg0, otherPod); len(got) != 4 {
		t.Errorf("agg0 -> other pod: expected 2 cores x 2 links = 4 ports, got %v", got)
	}
	if got := r.Next(core0, otherPod); len(got) != 2 {
		t.Errorf("core0 -> host: expected the 2 links of one bundle, got %v", got)
	}
	if got := r.Next(tor0, otherPod); len(got) != 4 {
		t.Errorf("tor0 -> other pod: expected 4 uplinks, got %v", got)
	}
	for _, l := range topo.Links {
		want := map[int]sim.Time{1: 300, 2: 300, 3: 50000}[l.Tier] * sim.Nanosecond
		if l.Delay != want || l.Rate != 200*gbps || l.Queue.Buffer != 0 {
			t.Fatalf("tier %d link: expected %v, 200Gbps, buffer unset; got %v, %v, %d", l.Tier, want, l.Delay, l.Rate, l.Queue.Buffer)
		}
	}
	if n := topo.FillQueues(QueueConfig{Buffer: 1 << 20}); n != len(topo.Links) {
		t.Errorf("FillQueues: expected all %d links filled, got %d", len(topo.Links), n)
	}
	if topo.Nodes[tor0].Latency != 0 || topo.Nodes[agg0].Latency != 250*sim.Nanosecond {
		t.Errorf("switch latency: expected ToR 0 (unset) and agg 250ns, got %v and %v",
			topo.Nodes[tor0].Latency, topo.Nodes[agg0].Latency)
	}
}

// htsimFatTree writes an htsim file for a k-ary fat-tree.
func htsimFatTree(k int) string {
	h := k / 2
	return fmt.Sprintf(`Nodes %d
Tiers 3
Podsize %d
Tier 0
Downlink_speed_Gbps 100
Radix_Down %d
Radix_Up %d
Downlink_Latency_ns 1000
Tier 1
Downlink_speed_Gbps 100
Radix_Down %d
Radix_Up %d
Downlink_Latency_ns 1000
Tier 2
Downlink_speed_Gbps 100
Radix_Down %d
Downlink_Latency_ns 1000
`, k*k*k/4, h*h, h, h, h, h, k)
}

func TestParseHtsimTopo_K16EquivalentHas1024Hosts(t *testing.T) {
	topo := mustParse(t, "k16.topo", []byte(htsimFatTree(16)))
	if topo.NumHosts() != 1024 || topo.NumSwitches() != 320 || len(topo.Links) != 3072 {
		t.Errorf("expected 1024 hosts, 320 switches, 3072 links; got %d, %d, %d", topo.NumHosts(), topo.NumSwitches(), len(topo.Links))
	}
}

// htsimTier is one section for htsimFile.
type htsimTier struct {
	gbps, radixDown, radixUp, latencyNs, oversub, bundle int
}

// htsimFile writes a .topo file; zero radixUp, oversub and bundle are left
// out.
func htsimFile(nodes, podsize int, tiers ...htsimTier) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Nodes %d\nTiers %d\nPodsize %d\n", nodes, len(tiers), podsize)
	for i, t := range tiers {
		fmt.Fprintf(&b, "\nTier %d\nDownlink_speed_Gbps %d\nRadix_Down %d\nDownlink_Latency_ns %d\n", i, t.gbps, t.radixDown, t.latencyNs)
		if t.radixUp != 0 {
			fmt.Fprintf(&b, "Radix_Up %d\n", t.radixUp)
		}
		if t.oversub != 0 {
			fmt.Fprintf(&b, "Oversubscribed %d\n", t.oversub)
		}
		if t.bundle != 0 {
			fmt.Fprintf(&b, "Bundle %d\n", t.bundle)
		}
	}
	return b.String()
}

func TestParseHtsimTopo_ShapesOfHtsimExamplesBuildAsHtsimDoes(t *testing.T) {
	cases := []struct {
		name                   string
		in                     string
		hosts, switches, links int
		corePorts              int
	}{
		// fat_tree_1024.topo: a k=16 fat-tree.
		{"fat_tree_1024", htsimFile(1024, 64, htsimTier{100, 8, 8, 1000, 1, 0}, htsimTier{100, 8, 8, 1000, 1, 1}, htsimTier{100, 16, 0, 1000, 0, 1}),
			1024, 128 + 128 + 64, 1024 * 3, 16},
		// leaf_spine_tiny.topo: 4 leaves of 8 hosts, 2 spines, 4:1.
		{"leaf_spine_tiny", htsimFile(32, 32, htsimTier{100, 8, 2, 1000, 4, 0}, htsimTier{100, 4, 0, 1000, 0, 0}),
			32, 4 + 2, 32 + 8, 0},
		// zrs.topo: 12 pods of 36 hosts, 12 cores with 3-link bundles.
		{"zrs", htsimFile(432, 36, htsimTier{100, 6, 6, 1000, 0, 0}, htsimTier{100, 6, 6, 1000, 0, 0}, htsimTier{100, 36, 0, 600000, 0, 3}),
			432, 72 + 72 + 12, 432 * 3, 36},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topo := mustParse(t, tc.name+".topo", []byte(tc.in))
			ix := mustCompile(t, topo)
			if topo.NumHosts() != tc.hosts || topo.NumSwitches() != tc.switches || len(topo.Links) != tc.links {
				t.Errorf("expected %d hosts, %d switches, %d links; got %d, %d, %d",
					tc.hosts, tc.switches, tc.links, topo.NumHosts(), topo.NumSwitches(), len(topo.Links))
			}
			if tc.corePorts != 0 {
				if got := len(ix.Ports(nodeByName(t, topo, "core0"))); got != tc.corePorts {
					t.Errorf("core0: expected %d ports, got %d", tc.corePorts, got)
				}
			}
		})
	}
}

func TestParseHtsimTopo_Tier1BundleAndMixedSpeeds(t *testing.T) {
	// ToR-agg links bundled in pairs: 2 pods, 2 aggs per pod, each ToR
	// with 2x2 uplinks, each agg 4 ToRs x 2 = 8 downlinks and 8 uplinks to
	// 16 cores of 2 downlinks each.
	bundled := `Nodes 32
Tiers 3
Podsize 16
Tier 0
Downlink_speed_Gbps 100
Radix_Down 4
Radix_Up 4
Downlink_Latency_ns 100
Tier 1
Downlink_speed_Gbps 100
Radix_Down 8
Radix_Up 8
Bundle 2
Downlink_Latency_ns 100
Tier 2
Downlink_speed_Gbps 100
Radix_Down 2
Downlink_Latency_ns 100
`
	topo := mustParse(t, "b1.topo", []byte(bundled))
	ix := mustCompile(t, topo)
	if got := ix.Routes().Next(nodeByName(t, topo, "tor0"), 31); len(got) != 4 {
		t.Errorf("tor0 -> other pod: expected 2 aggs x 2 links, got %v", got)
	}
	if st := ix.Stats(); st.Switches != 8+4+16 || st.Links != 32+32+32 {
		t.Errorf("expected 8 ToRs + 4 aggs + 16 cores and 96 links, got %+v", st)
	}

	// 16 hosts at 100G per leaf over 4 x 400G uplinks: 1:1, which htsim's
	// integer Radix_Down/Radix_Up check (16/4 != 1) refuses but the wiring
	// is consistent (deviation 4).
	mixed := `Nodes 64
Tiers 2
Podsize 64
Tier 0
Downlink_speed_Gbps 100
Radix_Down 16
Radix_Up 4
Downlink_Latency_ns 100
Tier 1
Downlink_speed_Gbps 400
Radix_Down 4
Downlink_Latency_ns 100
`
	topo = mustParse(t, "mixed.topo", []byte(mixed))
	if topo.NumSwitches() != 8 || topo.Links[len(topo.Links)-1].Rate != 400*gbps {
		t.Errorf("expected 4 leaves + 4 spines with 400G fabric links, got %d switches, last link %+v", topo.NumSwitches(), topo.Links[len(topo.Links)-1])
	}
}

func TestParseHtsimTopo_SyntaxTolerance(t *testing.T) {
	// Tabs, CRLF, mixed case, trailing comments, blank and comment lines.
	in := "# header\r\nnodes\t16\r\nTIERS 2 # two\r\n  PODSIZE   16  \r\n\r\ntier 0\r\n" +
		"downlink_speed_gbps 100\r\nRADIX_DOWN 8\r\nradix_up 2\r\noversubscribed 4\r\nDOWNLINK_LATENCY_NS 1000\r\n" +
		"Tier 1\r\nDownlink_speed_Gbps 100\r\nRadix_Down 2\r\nDownlink_Latency_ns 1000"
	topo := mustParse(t, "crlf.topo", []byte(in))
	if topo.NumHosts() != 16 || topo.NumSwitches() != 4 {
		t.Errorf("expected 16 hosts and 2 leaves + 2 spines, got %d and %d", topo.NumHosts(), topo.NumSwitches())
	}
}

// base is a valid 2-tier file the error cases edit: 8 hosts, 2 leaves, 2
// spines. Line numbers: Nodes 1, Tiers 2, Podsize 3, Tier 0 on 5.
const base = `Nodes 8
Tiers 2
Podsize 8

Tier 0
Downlink_speed_Gbps 100
Radix_Down 4
Radix_Up 2
Oversubscribed 2
Downlink_Latency_ns 1000

Tier 1
Downlink_speed_Gbps 100
Radix_Down 2
Downlink_Latency_ns 1000
`

func TestParseHtsimTopo_BaseFileIsValid(t *testing.T) {
	topo := mustParse(t, "f.topo", []byte(base))
	if topo.NumHosts() != 8 || topo.NumSwitches() != 4 {
		t.Errorf("expected 8 hosts and 4 switches, got %d and %d", topo.NumHosts(), topo.NumSwitches())
	}
}

func TestParseHtsimTopo_Errors(t *testing.T) {
	repl := func(old, with string) string {
		if !strings.Contains(base, old) {
			panic("test bug: " + old)
		}
		return strings.Replace(base, old, with, 1)
	}
	cases := []struct {
		name, in, want string
	}{
		{"unknown key", repl("Radix_Up 2", "Radix_Sideways 2"),
			"f.topo:8: Radix_Sideways: unknown key (htsim accepts Nodes, Tiers, Podsize, Tier, Downlink_speed_Gbps, " +
				"Downlink_Latency_ns, Radix_Down, Radix_Up, Switch_Latency_ns, Oversubscribed, Bundle, Queue_Down, Queue_Up)"},
		{"bad number", repl("Downlink_speed_Gbps 100\nRadix_Down 4", "Downlink_speed_Gbps fast\nRadix_Down 4"),
			`f.topo:6: Downlink_speed_Gbps: expected a number, got "fast"`},
		{"number with unit", repl("Downlink_speed_Gbps 100\nRadix_Down 4", "Downlink_speed_Gbps 100G\nRadix_Down 4"),
			`f.topo:6: Downlink_speed_Gbps: expected a number, got "100G"`},
		{"fraction", repl("Downlink_Latency_ns 1000\n\nTier 1", "Downlink_Latency_ns 2.5\n\nTier 1"),
			`f.topo:10: Downlink_Latency_ns: expected a whole number, got "2.5"`},
		{"huge number", repl("Nodes 8", "Nodes 99999999999999999999"), `f.topo:1: Nodes: number out of range, got "99999999999999999999"`},
		{"negative latency", repl("Downlink_Latency_ns 1000\n\nTier 1", "Downlink_Latency_ns -5\n\nTier 1"),
			"f.topo:10: Downlink_Latency_ns: must not be negative, got -5"},
		{"zero radix", repl("Radix_Down 4", "Radix_Down 0"), "f.topo:7: Radix_Down: must be positive, got 0"},
		{"three tiers too many", repl("Tiers 2", "Tiers 4"), "f.topo:2: Tiers: must be between 2 and 3, got 4"},
		{"missing value", repl("Radix_Up 2", "Radix_Up"), "f.topo:8: Radix_Up: expected a value"},
		{"two values", repl("Radix_Up 2", "Radix_Up 2 4"), "f.topo:8: Radix_Up: expected one value, got 2"},
		{"missing Nodes", repl("Nodes 8\n", "\n"), "f.topo:5: Nodes: missing (it must come before the first Tier line)"},
		{"missing Tiers", repl("Tiers 2\n", "\n"), "f.topo:5: Tiers: missing (it must come before the first Tier line)"},
		{"missing Podsize", repl("Podsize 8\n", "\n"), "f.topo:5: Podsize: missing (it must come before the first Tier line)"},
		{"missing Nodes, no tiers", "Tiers 2\nPodsize 8\n", "f.topo:2: Nodes: missing"},
		{"no sections", "Nodes 8\nTiers 2\nPodsize 8\n", "f.topo:3: Tier: no section for tier 0 (the header says Tiers 2)"},
		{"missing tier section", base[:strings.Index(base, "Tier 1")], "f.topo:11: Tier: no section for tier 1 (the header says Tiers 2)"},
		{"missing required key", repl("Radix_Down 2\n", ""), "f.topo:12: Radix_Down: missing in the Tier 1 section"},
		{"missing Radix_Up below the top", repl("Radix_Up 2\n", ""), "f.topo:5: Radix_Up: missing in the Tier 0 section"},
		{"duplicate key", repl("Radix_Up 2", "Radix_Up 2\nradix_up 2"), "f.topo:9: radix_up: duplicate in Tier 0 (first set on line 8)"},
		{"duplicate header key", repl("Podsize 8", "Podsize 8\nNodes 8"), "f.topo:4: Nodes: duplicate (first set on line 1)"},
		{"duplicate section", repl("Tier 1", "Tier 0"), "f.topo:12: Tier: duplicate section for tier 0 (first on line 5)"},
		{"tier out of range", repl("Tier 1", "Tier 2"), "f.topo:12: Tier: the header says Tiers 2, so tiers are 0..1, got 2"},
		{"key before any Tier", repl("Podsize 8", "Podsize 8\nBundle 1"), "f.topo:4: Bundle: must follow a Tier line"},
		{"header after Tier", base + "Nodes 16\n", "f.topo:16: Nodes: must come before the first Tier line (line 5)"},
		{"Radix_Up on the top tier", base + "Radix_Up 4\n", "f.topo:16: Radix_Up: tier 1 is the top tier and has no uplinks"},
		{"Queue_Up on the top tier", base + "Queue_Up 4\n", "f.topo:16: Queue_Up: tier 1 is the top tier and has no uplinks"},
		{"bundled host links", repl("Radix_Up 2", "Radix_Up 2\nBundle 2"),
			"f.topo:9: Bundle: must be 1 in Tier 0 (htsim does not bundle host links), got 2"},
		{"Nodes not a multiple of Podsize", repl("Nodes 8", "Nodes 12"), "f.topo:3: Podsize: Nodes 12 is not a multiple of Podsize 8"},
		{"2-tier with two pods", repl("Nodes 8", "Nodes 16"),
			"f.topo:3: Podsize: a 2-tier fabric is one pod, so Podsize must equal Nodes (16), got 8"},
		{"Podsize not a multiple of the ToR radix", repl("Radix_Down 4", "Radix_Down 3"),
			"f.topo:7: Radix_Down: Podsize 8 is not a multiple of Tier 0 Radix_Down 3"},
		{"inconsistent tier counts: ToR uplinks", repl("Radix_Up 2", "Radix_Up 3"),
			"f.topo:8: Radix_Up: Tier 0 has Radix_Up 3, but 2 Tier 1 switches per pod x Bundle 1 give each ToR 2 uplinks (check Oversubscribed and the link speeds)"},
		{"inconsistent tier counts: oversubscription", repl("Oversubscribed 2", "Oversubscribed 1"),
			"f.topo:8: Radix_Up: Tier 0 has Radix_Up 2, but 4 Tier 1 switches per pod x Bundle 1 give each ToR 4 uplinks (check Oversubscribed and the link speeds)"},
		{"oversubscription not a whole number of uplinks", repl("Oversubscribed 2", "Oversubscribed 3"),
			"f.topo:9: Oversubscribed: 8 hosts x 100 Gb/s over 100 Gb/s ToR uplinks at oversubscription 3 is not a whole number of uplinks"},
		{"inconsistent tier counts: spine radix", repl("Radix_Down 2\n", "Radix_Down 3\n"),
			"f.topo:14: Radix_Down: 4 ToR uplinks do not divide evenly among 1 pod(s) of Tier 1 switches with Radix_Down 3"},
		{"inconsistent tier counts: spine radix vs ToRs", repl("Radix_Down 2\n", "Radix_Down 1\n"),
			"f.topo:8: Radix_Up: Tier 0 has Radix_Up 2, but 4 Tier 1 switches per pod x Bundle 1 give each ToR 4 uplinks..."},
		{"buffers differ between directions", repl("Radix_Up 2", "Radix_Up 2\nQueue_Up 1000") + "Queue_Down 2000\n",
			"f.topo:9: Queue_Up: Tier 0 Queue_Up 1000 differs from Tier 1 Queue_Down 2000 (line 17); a link here has one buffer size for both directions"},
		{"odd key bytes are quoted", "Nodes 8\nT\x01er 0\n", `f.topo:2: "T\x01er": unknown key...`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHtsimTopo("f.topo", []byte(tc.in))
			wantErr(t, err, tc.want)
		})
	}
}

func TestParseHtsimTopo_ThreeTierErrors(t *testing.T) {
	k4 := htsimFatTree(4) // lines: Tier 1 on 9, its Radix_Up on 12; Tier 2 on 14, Radix_Down 16
	cases := []struct {
		name, old, new, want string
	}{
		{"core radix", "Radix_Down 4\nDownlink_Latency_ns 1000\n", "Radix_Down 3\nDownlink_Latency_ns 1000\n",
			"f.topo:16: Radix_Down: 16 aggregation uplinks are not a multiple of Tier 2 Radix_Down 3"},
		{"core count vs aggs per pod", "Radix_Down 4\nDownlink_Latency_ns 1000\n", "Radix_Down 16\nDownlink_Latency_ns 1000\n",
			"f.topo:16: Radix_Down: 1 core switches are not a multiple of the 2 Tier 1 switches per pod"},
		{"agg uplinks", "Radix_Up 2\nDownlink_Latency_ns 1000\nTier 2", "Radix_Up 1\nDownlink_Latency_ns 1000\nTier 2",
			"f.topo:12: Radix_Up: Tier 1 has Radix_Up 1, but 4 core switches x Bundle 1 over 2 Tier 1 switches per pod give each 2 uplinks"},
		{"core bundle", "Radix_Down 4\nDownlink_Latency_ns 1000\n", "Radix_Down 4\nBundle 3\nDownlink_Latency_ns 1000\n",
			"f.topo:12: Radix_Up: Tier 1 Radix_Up 2 is not a multiple of Tier 2 Bundle 3"},
		{"core speed", "Downlink_speed_Gbps 100\nRadix_Down 4\nDownlink_Latency_ns 1000\n", "Downlink_speed_Gbps 300\nRadix_Down 4\nDownlink_Latency_ns 1000\n",
			"f.topo:15: Downlink_speed_Gbps: 16 ToR uplinks x 100 Gb/s over 300 Gb/s core links at oversubscription 1 is not a whole number of uplinks"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(k4, tc.old) {
				t.Fatalf("test bug: %q not in the file", tc.old)
			}
			_, err := ParseHtsimTopo("f.topo", []byte(strings.Replace(k4, tc.old, tc.new, 1)))
			wantErr(t, err, tc.want)
		})
	}
}

func FuzzParseHtsimTopo(f *testing.F) {
	for _, name := range []string{"fattree_k8.topo", "leafspine_oversub.topo", "fattree_bundled.topo"} {
		f.Add(readTestdata(f, name))
	}
	f.Add([]byte(base))
	f.Add([]byte(htsimFatTree(4)))
	f.Add([]byte("Nodes 8\nTiers 2\nPodsize 8\nTier 0\nRadix_Down fast\n"))
	f.Add([]byte("Tier 0\nTier 1\n"))
	f.Add([]byte("Nodes 16\nTiers 3\nPodsize 4\nTier 2\nBundle 2\nTier 0\nQueue_Up 1\n"))
	f.Add([]byte("# only a comment\n\n\t\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The whole parser and sizing run on every input; only fabrics
		// of up to 4096 nodes are built, so that a mutation asking for
		// a million hosts does not stall the fuzzer for seconds.
		plan, err := parseHtsimPlan("fuzz.topo", data)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "fuzz.topo:") || strings.Contains(msg, "\n") {
				t.Fatalf("expected a one-line error starting with fuzz.topo:, got %q", msg)
			}
			return
		}
		if nodes, _, _ := plan.size(); nodes > 4096 {
			return
		}
		topo, err := ParseHtsimTopo("fuzz.topo", data)
		if err != nil {
			t.Fatalf("ParseHtsimTopo: expected the plan's success, got %v", err)
		}
		if err := topo.Validate(); err != nil {
			t.Fatalf("parsed topology: expected Validate nil, got %v", err)
		}
	})
}

// TestParseHtsimTopo_CountsAllocateNothingBeforeTheFileIsChecked: a
// header naming the largest fabric allowed, followed by a bad line,
// allocates little: the fabric is built only from a whole valid file.
func TestParseHtsimTopo_CountsAllocateNothingBeforeTheFileIsChecked(t *testing.T) {
	text := "Nodes 1048576\nTiers 3\nPodsize 1048576\n\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 1048576\nBogus_key 1\n"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ParseHtsimTopo("big.topo", []byte(text))
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("accepted")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("allocated %d KiB before refusing it (%v), want at most 1 MiB", got>>10, err)
	}
}
