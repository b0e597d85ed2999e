package cc

import (
	"fmt"
	"math/rand/v2"

	"github.com/lockstep-sim/lockstep/sim"
)

// PathMode selects how an STrack sender picks the entropy of each packet.
type PathMode uint8

// The zero PathMode is invalid.
const (
	// PathSkip cycles through the entropies and passes over an entropy
	// whose ACK came back marked, for about cwnd/N packets (htsim
	// strack.cpp ECMP_FIB_ECN with the skip count of the published code).
	PathSkip PathMode = 1 + iota
	// PathReuse sends on the entropy of the last unmarked ACK and picks
	// one at random after a marked ACK; the first window cycles (htsim
	// ECMP_RANDOM_ECN).
	PathReuse
	// UET's load-balancing policies (uet-htsim uec_mp.cpp; cc/uetpaths.go):
	// PathOblivious sprays over the entropies in a shuffled round robin
	// (UecMpOblivious); PathBitmap does too but skips entropies penalised
	// by marks, trims and timeouts (UecMpBitmap); PathREPS recycles the
	// entropies of unmarked ACKs (UecMpReps, the REPS paper); PathMixed
	// recycles good entropies first and falls back on the bitmap
	// (UecMpMixed, htsim main_uec's default).
	PathOblivious
	PathBitmap
	PathREPS
	PathMixed
)

// ParsePathMode maps a scenario name to a PathMode.
func ParsePathMode(s string) (PathMode, error) {
	switch s {
	case "skip", "":
		return PathSkip, nil
	case "reuse":
		return PathReuse, nil
	case "oblivious":
		return PathOblivious, nil
	case "bitmap":
		return PathBitmap, nil
	case "reps":
		return PathREPS, nil
	case "mixed":
		return PathMixed, nil
	}
	return 0, fmt.Errorf("unknown path selection %q (known: skip, reuse, oblivious, bitmap, reps, mixed)", s)
}

// String is the mode's scenario name.
func (m PathMode) String() string {
	switch m {
	case PathSkip:
		return "skip"
	case PathReuse:
		return "reuse"
	case PathOblivious:
		return "oblivious"
	case PathBitmap:
		return "bitmap"
	case PathREPS:
		return "reps"
	case PathMixed:
		return "mixed"
	}
	return "invalid"
}

// UET reports whether m is one of UET's load-balancing policies, which
// spread over a power-of-two number of entropies.
func (m PathMode) UET() bool { return m >= PathOblivious && m <= PathMixed }

// PathConfig configures STrack's path manager: how a sender picks the
// entropy of each data packet from the echoes of per-packet ACKs.
type PathConfig struct {
	Mode      PathMode
	Entropies int // N, the entropies a sender cycles through (e.g. 256)
	// SkipRounds, when positive, is how many turns PathSkip passes a marked
	// entropy over, fixed (htsim PR #4: max(1, initial window in packets /
	// N)); 0: ⌈cwnd/N⌉ turns of the current window.
	SkipRounds int
	// NoShuffle: PathOblivious and PathBitmap cycle in plain order instead
	// of XOR-ing the index with a random mask drawn per cycle (a testing
	// knob: traces derive their expectations by hand).
	NoShuffle bool
	// REPSBuffer is the number of recycled entropies PathREPS keeps (0: 8,
	// the REPS paper's and htsim's CircularBufferREPS default).
	REPSBuffer int
	// REPSFreeze: after a timeout PathREPS stops exploring and cycles
	// through its cached entropies for this long (REPS freezing mode; 0:
	// off; htsim's is REPSDefaultFreeze, on when switches trim).
	REPSFreeze sim.Time
}

// PathManager chooses entropies for one STrack sender. It is a pure state
// machine: the sender calls Pick for every data packet and OnAck for every
// ACK.
type PathManager struct {
	mode   PathMode
	n      int
	base   uint16 // the flow's entropies are base, base+1, ..., base+n-1
	cursor int
	skip   []int32   // PathSkip: packets to pass over per entropy
	next   int       // PathReuse: -1 = pick at random
	rounds int32     // PathSkip: fixed skip turns (0: by cwnd)
	uet    *uetPaths // UET's policies
	// Skips counts entropies passed over.
	Skips uint64
}

// NewPathManager returns a path manager for a flow whose entropies start at
// base.
func NewPathManager(cfg PathConfig, base uint16) *PathManager {
	p := &PathManager{mode: cfg.Mode, n: cfg.Entropies, base: base, next: -1, rounds: int32(cfg.SkipRounds)}
	switch cfg.Mode {
	case PathSkip:
		p.skip = make([]int32, cfg.Entropies)
	case PathReuse:
		// Reuse keeps no per-entropy state.
	default:
		p.uet = newUETPaths(cfg, base)
	}
	p.cursor = -1
	return p
}

func (p *PathManager) advance() int {
	p.cursor++
	if p.cursor == p.n {
		p.cursor = 0
	}
	return p.cursor
}

// Pick returns the entropy for the next data packet. firstWindow reports
// whether the sender is still in its first window (PathReuse cycles then).
func (p *PathManager) Pick(now sim.Time, rng *rand.Rand, firstWindow bool) uint16 {
	if p.uet != nil {
		return p.uet.pick(now, rng)
	}
	if p.mode == PathReuse {
		if firstWindow {
			return p.base + uint16(p.advance())
		}
		if p.next < 0 {
			return p.base + uint16(rng.IntN(p.n))
		}
		return p.base + uint16(p.next)
	}
	for tries := 0; ; tries++ { // PathSkip
		i := p.advance()
		if p.skip[i] > 0 && tries < p.n {
			p.skip[i]--
			p.Skips++
			continue
		}
		return p.base + uint16(i)
	}
}

// OnAck takes the entropy an ACK echoes and whether it was marked. cwndPkts
// is the sender's window in packets: PathSkip passes a marked entropy over
// for ⌈cwnd/N⌉ turns, or for SkipRounds turns when that is set.
func (p *PathManager) OnAck(now sim.Time, entropy uint16, marked bool, cwndPkts int64) {
	if p.uet != nil {
		fb := pathGood
		if marked {
			fb = pathECN
		}
		p.uet.feedback(now, entropy, fb)
		return
	}
	i := int(entropy - p.base)
	if i < 0 || i >= p.n {
		return
	}
	switch p.mode {
	case PathSkip:
		if marked {
			if p.rounds > 0 {
				p.skip[i] = p.rounds
			} else {
				p.skip[i] = int32(max(1, (cwndPkts+int64(p.n)-1)/int64(p.n)))
			}
		}
	case PathReuse:
		if marked {
			p.next = -1
		} else {
			p.next = i
		}
	case PathOblivious, PathBitmap, PathREPS, PathMixed:
		// UET's policies took the feedback above (p.uet).
	}
}

// OnNack takes the entropy of a packet a switch trimmed in the fabric
// (UET's policies penalise it; STrack's modes learn of trims from their
// bitmaps and do nothing here).
func (p *PathManager) OnNack(now sim.Time, entropy uint16) {
	if p.uet != nil {
		p.uet.feedback(now, entropy, pathNack)
	}
}

// OnTimeout takes the entropy of a packet whose timer expired.
func (p *PathManager) OnTimeout(now sim.Time, entropy uint16) {
	if p.uet != nil {
		p.uet.feedback(now, entropy, pathTimeout)
	}
}
