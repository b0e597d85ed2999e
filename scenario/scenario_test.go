package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/fabric"
)

const base = `topology:
  type: dumbbell
  dumbbell:
    senders: 1
    receivers: 1
    host: {rate: 10Gbps}
    bottleneck: {rate: 10Gbps}
workload:
  - type: flows
    flows: [{src: 0, dst: 1, size: 1KB}]
`

func load(t *testing.T, text string) (*Built, error) {
	t.Helper()
	return Load("s.yaml", []byte(text), Dir(t.TempDir()))
}

func TestImpairment_DirectionsMapToLinkEnds(t *testing.T) {
	// The dumbbell's bottleneck link is left (A) -> right (B).
	for _, c := range []struct {
		link       string
		dir        string
		aToB, bToA bool
	}{
		{"[left, right]", "forward", true, false},
		{"[left, right]", "reverse", false, true},
		{"[right, left]", "forward", false, true},
		{"[right, left]", "both", true, true},
	} {
		b, err := load(t, base+"impairments:\n  - {link: "+c.link+", direction: "+c.dir+", loss: 1%}\n")
		if err != nil {
			t.Fatal(err)
		}
		im := b.Fabric.Impairments[0]
		topo := b.Topo
		if topo.Nodes[topo.Links[im.Link].A].Name != "left" {
			t.Fatalf("link %d does not start at left", im.Link)
		}
		if im.AtoB != c.aToB || im.BtoA != c.bToA {
			t.Errorf("link %s direction %s: AtoB=%v BtoA=%v, want %v %v", c.link, c.dir, im.AtoB, im.BtoA, c.aToB, c.bToA)
		}
	}
}

func TestTopology_OnlyTheNamedSection(t *testing.T) {
	_, err := load(t, strings.Replace(base, "  type: dumbbell\n", "  type: dumbbell\n  fattree: {k: 4}\n", 1))
	var se *Error
	if !errors.As(err, &se) || se.Path != "topology.fattree" {
		t.Fatalf("got %v, want an error on topology.fattree", err)
	}
}

func TestDigest_CoversReferencedFiles(t *testing.T) {
	dir := t.TempDir()
	text := base + "  - {type: cm, file: x.cm}\n"
	write := func(cm string) string {
		if err := os.WriteFile(filepath.Join(dir, "x.cm"), []byte(cm), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := Load("s.yaml", []byte(text), Dir(dir))
		if err != nil {
			t.Fatal(err)
		}
		return b.Digest
	}
	d1 := write("Nodes 2\nConnections 1\n0->1 id 1 start 0 size 100\n")
	d2 := write("Nodes 2\nConnections 1\n0->1 id 1 start 0 size 200\n")
	if d1 == d2 {
		t.Fatal("changing the .cm file did not change the scenario digest")
	}
}

func TestSeed_DefaultAndOverride(t *testing.T) {
	b, err := load(t, base)
	if err != nil || b.Seed != DefaultSeed {
		t.Fatalf("seed %d (%v), want the default %d", b.Seed, err, DefaultSeed)
	}
	b, _ = load(t, "seed: 42\n"+base)
	if b.Seed != 42 || b.Fabric.Seed != 42 {
		t.Fatalf("seed %d / fabric %d, want 42", b.Seed, b.Fabric.Seed)
	}
}

func TestSTrack_NeedsItsRecoveryAndItsCC(t *testing.T) {
	if _, err := load(t, base+"transport: {cc: strack, recovery: reno}\n"); err == nil || !strings.Contains(err.Error(), "transport.recovery") {
		t.Errorf("strack with reno recovery: got %v, want an error on transport.recovery", err)
	}
	if _, err := load(t, base+"transport: {cc: reno, strack: {entropies: 8}}\n"); err == nil || !strings.Contains(err.Error(), "transport.strack") {
		t.Errorf("strack section with reno: got %v, want an error on transport.strack", err)
	}
	b, err := load(t, base+"transport: {cc: strack}\n")
	if err != nil || b.Fabric.Transport.CC.Recovery != "strack" || b.Fabric.Transport.STrack == nil {
		t.Errorf("cc strack alone: %v; want recovery strack and STrack endpoints by default", err)
	}
}

var _ = fabric.DirID
