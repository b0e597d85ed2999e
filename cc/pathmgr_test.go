package cc

import (
	"slices"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func TestPathManager_SkipModeAvoidsMarkedEntropy(t *testing.T) {
	p := NewPathManager(PathConfig{Mode: PathSkip, Entropies: 4}, 100)
	rng := sim.NewRand(1, 1)
	var first []uint16
	for i := 0; i < 4; i++ {
		first = append(first, p.Pick(0, rng, false))
	}
	if first[0] != 100 || first[3] != 103 {
		t.Fatalf("round robin picked %v, want 100..103", first)
	}
	// A marked ACK on 101 with cwnd 8 packets and N=4: skip it for
	// ceil(8/4) = 2 of its turns.
	p.OnAck(0, 101, true, 8)
	var got []uint16
	for i := 0; i < 9; i++ {
		got = append(got, p.Pick(0, rng, false))
	}
	for i, e := range got[:6] {
		if e == 101 {
			t.Fatalf("picks %v: 101 used at %d while it should be skipped twice", got, i)
		}
	}
	n := 0
	for _, e := range got {
		if e == 101 {
			n++
		}
	}
	if n == 0 {
		t.Fatalf("picks %v: 101 never came back after its skips", got)
	}
}

func TestPathManager_ReuseModeFollowsLastUnmarkedAck(t *testing.T) {
	p := NewPathManager(PathConfig{Mode: PathReuse, Entropies: 8}, 0)
	rng := sim.NewRand(1, 1)
	p.OnAck(0, 5, false, 10)
	for i := 0; i < 3; i++ {
		if e := p.Pick(0, rng, false); e != 5 {
			t.Fatalf("after an unmarked ACK on 5, picked %d", e)
		}
	}
	p.OnAck(0, 5, true, 10)
	seen := map[uint16]bool{}
	for i := 0; i < 50; i++ {
		seen[p.Pick(0, rng, false)] = true
	}
	if len(seen) < 4 {
		t.Fatalf("after a marked ACK, random picks covered only %d entropies", len(seen))
	}
}

// TestPathManager_FixedSkipRounds: with SkipRounds (htsim PR #4: from
// the initial window, not the current one), a marked entropy is passed
// over that many turns whatever cwnd the ACK reports.
func TestPathManager_FixedSkipRounds(t *testing.T) {
	p := NewPathManager(PathConfig{Mode: PathSkip, Entropies: 4, SkipRounds: 2}, 0)
	rng := sim.NewRand(1, 1)
	p.OnAck(0, 1, true, 400) // ⌈400/4⌉ = 100 turns by cwnd; 2 fixed
	var got []uint16
	for i := 0; i < 12; i++ {
		got = append(got, p.Pick(0, rng, false))
	}
	want := []uint16{0, 2, 3, 0, 2, 3, 0, 1, 2, 3, 0, 1}
	if !slices.Equal(got, want) {
		t.Fatalf("picks %v, want %v (entropy 1 skipped twice)", got, want)
	}
}
