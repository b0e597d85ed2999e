package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func spQuickEnv(t *testing.T) *Env {
	t.Helper()
	return &Env{Examples: examplesDir, Out: t.TempDir(), Quick: true}
}

// TestSpraying_QuickPipeline runs the whole experiment on the small
// fabrics and checks that the report, its data and every figure it links
// to were written.
func TestSpraying_QuickPipeline(t *testing.T) {
	env := spQuickEnv(t)
	x, err := Find("spraying")
	if err != nil {
		t.Fatalf("Find(spraying): %v", err)
	}
	if err := x.Run(env); err != nil {
		t.Fatalf("spraying (quick): %v", err)
	}
	md, err := os.ReadFile(filepath.Join(env.Out, "spraying.md"))
	if err != nil {
		t.Fatalf("want spraying.md, got %v", err)
	}
	text := string(md)
	for _, want := range []string{"STrack, paths skip", "STrack, paths reuse", "DCTCP over ECMP", "Reno over ECMP",
		"| STrack as htsim PR #4 runs it (spray) |", "| STrack as htsim PR #4 runs it, CC on (spray) |",
		"degraded to 25%", "leaf-spine", "fat-tree", "seeds 1-2"} {
		if !strings.Contains(text, want) {
			t.Errorf("spraying.md lacks %q", want)
		}
	}
	links := 0
	for _, line := range strings.Split(text, "\n") {
		i := strings.Index(line, "](spraying/")
		if i < 0 {
			continue
		}
		name := strings.TrimSuffix(line[i+2:], ")")
		links++
		if st, err := os.Stat(filepath.Join(env.Out, name)); err != nil || st.Size() == 0 {
			t.Errorf("figure %s: want a non-empty file, got %v", name, err)
		}
	}
	// Per topology: 3 figures for the permutation, 2 for the incast, 3 for
	// the failure.
	if want := 2 * (3 + 2 + 3); links != want {
		t.Errorf("figures linked from spraying.md: want %d, got %d", want, links)
	}
	for _, name := range []string{"fct.csv", "utilisation.csv"} {
		if st, err := os.Stat(filepath.Join(env.Out, "spraying", name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: want a non-empty file, got %v", name, err)
		}
	}
}

// spFailureShares runs the failure case of the small leaf-spine (4 leaves x
// 8 hosts, 4 spines) for tr with the given seed and returns the degraded
// leaf0->spine0 link's share of leaf0's uplink bytes before and after the
// degradation.
func spFailureShares(t *testing.T, tr spTransport, seed uint64) (before, after float64) {
	t.Helper()
	env := spQuickEnv(t)
	x, err := spFailure(env, spTopos[0], tr, spSizesFor(env), seed)
	if err != nil {
		t.Fatalf("%s seed %d: %v", tr.short, seed, err)
	}
	if x.run.unfinished > 0 {
		t.Fatalf("%s seed %d: want every flow finished, got %d unfinished", tr.short, seed, x.run.unfinished)
	}
	b0, b1 := x.before()
	a0, a1 := x.after()
	return x.share(x.up, b0, b1), x.share(x.up, a0, a1)
}

func spTransportNamed(t *testing.T, short string) spTransport {
	t.Helper()
	for _, tr := range spTransports {
		if tr.short == short {
			return tr
		}
	}
	t.Fatalf("no transport %q", short)
	return spTransport{}
}

// spTestSeeds are the permutations the failure tests average over.
const spTestSeeds = 4

// TestSpraying_STrackSkipBelowECMPOnDegradedLink is the experiment's key
// property in a small setting: once leaf0-spine0 runs at 25% of its rate,
// STrack (paths skip) puts a smaller share of leaf0's uplink bytes on it
// than Reno, whose flows ECMP pins to their hashed path, on average over
// seeds 1-4 (ECMP's share depends on which flows hash to the link, so one
// permutation alone decides little).
func TestSpraying_STrackSkipBelowECMPOnDegradedLink(t *testing.T) {
	skip, reno := spTransportNamed(t, "STrack skip"), spTransportNamed(t, "Reno")
	var sum [2]float64
	for seed := uint64(1); seed <= spTestSeeds; seed++ {
		sb, sa := spFailureShares(t, skip, seed)
		rb, ra := spFailureShares(t, reno, seed)
		// Precondition: before the degradation both use the link, so the
		// comparison is not vacuous (4 spines: a balanced share is 25%).
		if sb < 0.10 || rb < 0.10 {
			t.Fatalf("seed %d: want both STrack skip and Reno to send >= 10%% of leaf0's uplink bytes via spine0 before the degradation, got %.1f%% and %.1f%%", seed, 100*sb, 100*rb)
		}
		sum[0] += sa
		sum[1] += ra
		t.Logf("seed %d: leaf0->spine0 share before/after: STrack skip %.1f%%/%.1f%%, Reno %.1f%%/%.1f%%", seed, 100*sb, 100*sa, 100*rb, 100*ra)
	}
	if s, r := sum[0]/spTestSeeds, sum[1]/spTestSeeds; s >= r {
		t.Errorf("mean share of leaf0's uplink bytes on the degraded leaf0->spine0 after the degradation: want STrack skip (%.1f%%) < Reno over ECMP (%.1f%%)", 100*s, 100*r)
	}
}

// TestSpraying_STrackReuseMovesOffDegradedLink checks that the path
// manager steers: in reuse mode each unmarked ACK makes its entropy the next one and
// a marked ACK a random one, so paths whose ACKs return late or marked
// lose traffic, and after the degradation
// the degraded link's share of leaf0's uplink bytes falls to at most 60%
// of its share before, for every seed.
func TestSpraying_STrackReuseMovesOffDegradedLink(t *testing.T) {
	tr := spTransportNamed(t, "STrack reuse")
	for seed := uint64(1); seed <= spTestSeeds; seed++ {
		before, after := spFailureShares(t, tr, seed)
		if before < 0.10 {
			t.Fatalf("seed %d: precondition: want >= 10%% of leaf0's uplink bytes via spine0 before the degradation, got %.1f%%", seed, 100*before)
		}
		if after > 0.6*before {
			t.Errorf("seed %d: STrack reuse on leaf0->spine0: want the share after the degradation <= 60%% of the share before (%.1f%%), got %.1f%%",
				seed, 100*before, 100*after)
		}
	}
}
