package cc

import (
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

func TestPathManager_SimSkips50usAndSignalsAllSkipped(t *testing.T) {
	p := NewPathManager(PathConfig{Mode: PathSimRR, Entropies: 3, SkipTime: 50 * sim.Microsecond}, 0)
	rng := sim.NewRand(1, 1)
	if all := p.OnAck(0, 1, true, 10); all {
		t.Fatal("one marked path reported all skipped")
	}
	for i := 0; i < 6; i++ {
		if e := p.Pick(10*sim.Microsecond, rng, false); e == 1 {
			t.Fatalf("path 1 picked %v after its mark, within 50us", 10*sim.Microsecond)
		}
	}
	if e := func() uint16 {
		for i := 0; i < 3; i++ {
			if e := p.Pick(51*sim.Microsecond, rng, false); e == 1 {
				return e
			}
		}
		return 99
	}(); e != 1 {
		t.Fatal("path 1 not used again after 50us")
	}
	p.OnAck(60*sim.Microsecond, 0, true, 10)
	p.OnAck(60*sim.Microsecond, 1, true, 10)
	if all := p.OnAck(60*sim.Microsecond, 2, true, 10); !all {
		t.Fatal("three marked paths of three: want the all-skipped signal")
	}
}
