package cc

import (
	"math/rand/v2"

	"github.com/lockstep-sim/lockstep/sim"
)

// UET's load-balancing policies: how a UET sender picks the entropy value
// (EV) of each packet from what its ACKs, trim NACKs and timeouts said
// about earlier ones (UEC 1.0 packet spraying; the reference is uet-htsim
// htsim/sim/src/protocols/uec_mp.cpp, each policy naming its class
// there). They live in the PathManager beside STrack's modes: the endpoint
// picks through PathManager.Pick and feeds back through OnAck, OnNack and
// OnTimeout.
//
// A flow's EVs are its upper bits (from the flow's path base, htsim's
// _path_random) with an index in [0, N) below, N a power of two; feedback
// is attributed by the index, EV & (N-1).

// pathFeedback is what an EV's packet came back with (htsim UecMultipath
// PathFeedback).
type pathFeedback uint8

const (
	pathGood    pathFeedback = 1 + iota // ACKed without a mark
	pathECN                             // ACKed with a CE mark
	pathNack                            // trimmed in the fabric
	pathTimeout                         // timed out
)

// Penalties of UecMpBitmap::processEv: an EV with a penalty is skipped,
// and each skip takes one off.
const (
	bitmapPenaltyECN  = 1
	bitmapPenaltyNack = 4
	bitmapMaxPenalty  = 15 // also a timeout's
)

// Defaults of htsim's REPS: CircularBufferREPS holds 8 entropies, and
// after a freezing period ends it explores 16 random EVs first.
const (
	repsDefaultBuffer = 8
	repsExplore       = 16
)

// REPSDefaultFreeze is how long REPS stays frozen after a timeout by
// default: htsim's CircularBufferREPS statics freeze (repsUseFreezing
// true) for exit_freeze_after = 10^10 ps, and UecMpReps freezes only when
// the switches trim (main_uec.cpp passes !disable_trim; without trimming
// a timeout aborts its run). The scenario applies it when switches trim.
const REPSDefaultFreeze = 10 * sim.Millisecond

// uetPaths is the state of one flow's UET policy.
type uetPaths struct {
	mode    PathMode
	n       int
	mask    uint16
	upper   uint16 // the flow's EV bits above the index
	shuffle bool
	cur     int // _current_ev_index
	xor     int // _path_xor, drawn per cycle; -1 before the first
	pen     []uint8
	recycle sim.Ring[uint16] // PathMixed: UecMpRepsLegacy's _next_pathid
	reps    repsBuf
	// Recycled counts EVs reused from good ACKs, Random those drawn at
	// random (REPS with nothing to recycle), Skipped the EVs passed over
	// for a penalty (bitmap).
	Recycled, Random, Skipped uint64
}

func newUETPaths(cfg PathConfig, base uint16) *uetPaths {
	u := &uetPaths{mode: cfg.Mode, n: cfg.Entropies, mask: uint16(cfg.Entropies - 1), shuffle: !cfg.NoShuffle, xor: -1}
	u.upper = base &^ u.mask
	if cfg.Mode == PathBitmap || cfg.Mode == PathMixed {
		u.pen = make([]uint8, cfg.Entropies)
	}
	if cfg.Mode == PathREPS {
		b := cfg.REPSBuffer
		if b <= 0 {
			b = repsDefaultBuffer
		}
		u.reps = repsBuf{ev: make([]uint16, b), valid: make([]bool, b), freeze: cfg.REPSFreeze}
	}
	return u
}

// draw is a new XOR mask for a cycle (htsim rand() & mask), 0 without
// shuffling.
func (u *uetPaths) draw(rng *rand.Rand) int {
	if !u.shuffle {
		return 0
	}
	return rng.IntN(u.n)
}

// index is the EV index the round robin is at.
func (u *uetPaths) index(rng *rand.Rand) uint16 {
	if u.xor < 0 {
		u.xor = u.draw(rng)
	}
	return uint16(u.cur^u.xor) & u.mask
}

// step moves the round robin on; a new cycle draws a new mask.
func (u *uetPaths) step(rng *rand.Rand) {
	u.cur++
	if u.cur == u.n {
		u.cur = 0
		u.xor = u.draw(rng)
	}
}

// oblivious is UecMpOblivious::nextEntropy: every index once per cycle,
// in an order shuffled by the cycle's mask.
func (u *uetPaths) oblivious(rng *rand.Rand) uint16 {
	e := u.index(rng)
	u.step(rng)
	return e
}

// bitmap is UecMpBitmap::nextEntropy: the round robin passes over
// penalised indices (at most one cycle), and only the first one it meets
// loses a point of penalty.
func (u *uetPaths) bitmap(rng *rand.Rand) uint16 {
	e := u.index(rng)
	first := true
	for tries := 0; u.pen[e] > 0; {
		if first {
			u.pen[e]--
			first = false
		}
		tries++
		if tries > u.n {
			break
		}
		u.Skipped++
		u.step(rng)
		e = u.index(rng)
	}
	u.step(rng)
	return e
}

// pick returns the next packet's EV.
func (u *uetPaths) pick(now sim.Time, rng *rand.Rand) uint16 {
	switch u.mode {
	case PathOblivious:
		return u.upper | u.oblivious(rng)
	case PathBitmap:
		return u.upper | u.bitmap(rng)
	case PathREPS:
		if ev, ok := u.reps.next(); ok {
			u.Recycled++
			return ev
		}
		u.Random++
		return u.upper | uint16(rng.IntN(u.n))
	default: // PathMixed: UecMpMixed::nextEntropy
		if u.recycle.Len() > 0 {
			u.Recycled++
			return u.recycle.Pop()
		}
		return u.upper | u.bitmap(rng)
	}
}

// feedback takes what a packet sent on ev came back with.
func (u *uetPaths) feedback(now sim.Time, ev uint16, fb pathFeedback) {
	if ev&^u.mask != u.upper {
		return // not one of this flow's EVs
	}
	switch u.mode {
	case PathOblivious:
		// UecMpOblivious::processEv ignores feedback.
	case PathBitmap:
		u.penalise(ev, fb)
	case PathREPS:
		u.reps.feedback(now, ev, fb)
	default: // PathMixed: both halves hear everything.
		u.penalise(ev, fb)
		if fb == pathGood {
			u.recycle.Push(ev)
		}
	}
}

// penalise is UecMpBitmap::processEv.
func (u *uetPaths) penalise(ev uint16, fb pathFeedback) {
	var p uint8
	switch fb {
	case pathECN:
		p = bitmapPenaltyECN
	case pathNack:
		p = bitmapPenaltyNack
	case pathTimeout:
		p = bitmapMaxPenalty
	default:
		return
	}
	i := ev & u.mask
	u.pen[i] = min(u.pen[i]+p, bitmapMaxPenalty)
}

// repsBuf is REPS's circular buffer of recycled EVs (htsim
// CircularBufferREPS, UecMpReps without its MQL extension): EVs of
// unmarked ACKs are added; a send takes the oldest fresh one, or a random
// EV when none is fresh. A full buffer overwrites its oldest entry.
type repsBuf struct {
	ev          []uint16
	valid       []bool // fresh: added and not taken yet
	head        int    // next slot to write
	count       int    // slots ever written, up to len(ev)
	fresh       int    // valid slots, the run just before head
	explore     int    // random EVs to send first (after freezing)
	freeze      sim.Time
	frozen      bool
	frozenUntil sim.Time
	frozenHead  int
}

// add is CircularBufferREPS::add.
func (r *repsBuf) add(ev uint16) {
	b := len(r.ev)
	if !r.valid[r.head] {
		r.fresh++
	}
	r.ev[r.head], r.valid[r.head] = ev, true
	r.head = (r.head + 1) % b
	r.fresh = min(r.fresh, b)
	r.count = min(r.count+1, b)
}

// next is UecMpReps::nextEntropy without MQL: explore, cycle the cache
// while frozen, else take the earliest fresh EV (ok false: draw one at
// random).
func (r *repsBuf) next() (uint16, bool) {
	if r.explore > 0 {
		r.explore--
		return 0, false
	}
	if r.frozen {
		if r.count == 0 {
			return 0, false
		}
		ev := r.ev[r.frozenHead]
		r.frozenHead = (r.frozenHead + 1) % r.count
		return ev, true
	}
	if r.fresh == 0 {
		return 0, false
	}
	b := len(r.ev)
	off := (r.head - r.fresh + b) % b
	r.valid[off] = false
	r.fresh--
	return r.ev[off], true
}

// feedback is UecMpReps::processEv: a timeout freezes the cache (when
// freezing is on); the first feedback after the freeze ends resets it and
// explores; unmarked ACKs are cached, frozen or not.
func (r *repsBuf) feedback(now sim.Time, ev uint16, fb pathFeedback) {
	if fb == pathTimeout && !r.frozen && r.explore == 0 && r.freeze > 0 {
		r.frozen, r.frozenUntil, r.frozenHead = true, now+r.freeze, 0
	}
	if r.frozen && now > r.frozenUntil {
		r.frozen = false
		clear(r.valid)
		r.head, r.count, r.fresh = 0, 0, 0
		r.explore = repsExplore
	}
	if fb == pathGood {
		r.add(ev)
	}
}
