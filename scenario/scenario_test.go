package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/sim"
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
		return b.Digest()
	}
	d1 := write("Nodes 2\nConnections 1\n0->1 id 1 start 0 size 100\n")
	d2 := write("Nodes 2\nConnections 1\n0->1 id 1 start 0 size 200\n")
	if d1 == d2 {
		t.Fatal("changing the .cm file did not change the scenario digest")
	}
}

func TestSeed_DefaultAndOverride(t *testing.T) {
	b, err := load(t, base)
	if err != nil || b.Seed() != DefaultSeed {
		t.Fatalf("seed %d (%v), want the default %d", b.Seed(), err, DefaultSeed)
	}
	b, _ = load(t, "seed: 42\n"+base)
	if b.Seed() != 42 || b.Fabric.Seed != 42 {
		t.Fatalf("seed %d / fabric %d, want 42", b.Seed(), b.Fabric.Seed)
	}
	b, _ = Load("s.yaml", []byte("seed: 42\n"+base), nil, WithSeed(7))
	if b.Seed() != 7 || b.Fabric.Seed != 7 || *b.Scenario.Seed != 7 {
		t.Fatalf("WithSeed(7): seed %d / fabric %d, want 7", b.Seed(), b.Fabric.Seed)
	}
}

// docs/style.md §14 "effective state travels": the digest is the effective
// scenario's, after every edit.
func TestDigest_CoversEditsNotSpelling(t *testing.T) {
	digest := func(text string, edits ...Edit) string {
		t.Helper()
		b, err := Load("s.yaml", []byte(text), nil, edits...)
		if err != nil {
			t.Fatal(err)
		}
		return b.Digest()
	}
	d := digest(base)
	for name, e := range map[string]Edit{"seed": WithSeed(9), "cwnd": WithCwnd(), "queues": WithQueues(10 * sim.Microsecond)} {
		if digest(base, e) == d {
			t.Errorf("edit %s did not change the digest", name)
		}
	}
	if got := digest(base, WithSeed(9)); got != digest("seed: 9\n"+base) {
		t.Errorf("WithSeed(9) and seed: 9 in the file give different digests")
	}
	// Comments, key order and spelling of the file do not matter: only
	// the scenario they say.
	respelled := "# a comment\nworkload:\n  - {type: flows, flows: [{src: 0, dst: 1, size: 1000B}]}\n" +
		"topology: {type: dumbbell, dumbbell: {senders: 1, receivers: 1, host: {rate: 10Gbps}, bottleneck: {rate: 10Gbps}}}\n"
	if digest(respelled) != d {
		t.Errorf("the same scenario spelled differently has another digest")
	}
	if digest(base, func(*Scenario) {}) != d {
		t.Errorf("an edit that changes nothing changed the digest")
	}
}

func TestRebuild_SameRunAndRefusesAnotherDigest(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.cm"), []byte("Nodes 2\nConnections 1\n0->1 id 1 start 0 size 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Load("s.yaml", []byte(base+"  - {type: cm, file: x.cm}\n"), Dir(dir), WithSeed(5), WithCwnd())
	if err != nil {
		t.Fatal(err)
	}
	r, err := Rebuild(b.File, b.Effective(), b.Files(), b.Digest())
	if err != nil {
		t.Fatal(err)
	}
	if r.Seed() != 5 || r.Digest() != b.Digest() || !r.Fabric.Transport.Trace.All || len(r.Fabric.Flows) != 2 {
		t.Errorf("rebuilt: seed %d, trace %+v, %d flows; want seed 5, cwnd traced, 2 flows", r.Seed(),
			r.Fabric.Transport.Trace, len(r.Fabric.Flows))
	}
	if _, err := Rebuild(b.File, b.Effective(), b.Files(), "0000"); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("Rebuild with another digest: %v, want a digest error", err)
	}
	files := b.Files()
	files["x.cm"] = []byte("Nodes 2\nConnections 1\n0->1 id 1 start 0 size 200\n")
	if _, err := Rebuild(b.File, b.Effective(), files, b.Digest()); err == nil {
		t.Errorf("Rebuild with a changed .cm file: no error")
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

// A Poisson entry without a duration is refused naming the scenario's
// field, not the generator's Go fields.
func TestPoisson_NeedsDuration(t *testing.T) {
	fsys := exampleFiles(t)
	const topo = "topology: {type: dumbbell, dumbbell: {senders: 2, receivers: 2, host: {rate: 10Gbps}, bottleneck: {rate: 10Gbps}}}\n"
	for _, w := range []string{
		"workload: [{type: permutation, size: 1KB}, {type: poisson, load: 0.3, cdf: workloads/websearch.cdf}]\n",
		"workload: [{type: permutation, size: 1KB}, {type: poisson, load: 0.3, cdf: workloads/websearch.cdf, duration: 0s}]\n",
	} {
		_, err := Load("s.yaml", []byte(topo+w), fsys)
		if err == nil || !strings.Contains(err.Error(), "s.yaml: workload[1].duration: ") ||
			strings.Contains(err.Error(), "End (") {
			t.Errorf("%s: want an error naming workload[1].duration, got %v", w, err)
		}
	}
}
