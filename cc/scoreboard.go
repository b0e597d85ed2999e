package cc

import (
	"math/bits"

	"github.com/lockstep-sim/lockstep/sim"
)

// Scoreboard is the SACK scoreboard of RFC 6675 §3 ("Keeping Track of SACK
// Information"), shared by SackRecovery and RackRecovery.
//
// A flow's bytes [0, End) are cut into fixed segments: segment i is
// [i*MSS, min((i+1)*MSS, End)). Every Recovery in this package sends whole
// segments on that grid, so the receiver's cumulative ACK always falls on a
// segment boundary and a segment is either SACKed as a whole or not at all.
// The scoreboard therefore keeps one bit per segment instead of byte
// ranges: bitmaps in a ring of 64-bit words indexed by the absolute segment
// number, covering the outstanding segments [base, top). The ring grows by
// doubling when the window outgrows it and never shrinks, so steady-state
// ACK processing does not allocate.
//
// Per segment it records:
//   - sacked: covered entirely by a SACK block (RFC 6675 Update()).
//     A block that covers only part of a segment marks nothing: SACK
//     blocks from our receiver are always segment-aligned, and a partial
//     mark could only ever make the pipe estimate larger.
//   - lost: marked lost by a timer (an RTO, or RACK's time-based rule).
//     The duplicate-threshold rule of RFC 6675's IsLost() is not stored but
//     computed from the SACKed bits (see dupThreshBound).
//   - retx: a retransmission of the segment is in flight (sent after the
//     segment was last deemed lost, or in the current recovery episode).
//   - ever: the segment has been retransmitted at least once (RFC 8985's
//     Segment.retransmitted).
//
// and the time of its most recent transmission (RFC 8985's Segment.xmit_ts).
//
// Invariant: every bit outside [base, top) is zero; a SACKed segment has
// neither a lost nor a retx bit (a SACK clears them).
type Scoreboard struct {
	mss  int64
	end  uint64 // flow length in bytes
	nseg uint64 // number of segments in the flow
	base uint64 // lowest segment not cumulatively acknowledged
	top  uint64 // one past the highest segment ever sent

	wmask  uint64 // len(sacked)-1; the ring holds (wmask+1)*64 segments
	sacked []uint64
	lost   []uint64
	retx   []uint64
	ever   []uint64
	xmit   []sim.Time // indexed by segment & (64*(wmask+1)-1)

	nSacked  int    // SACKed segments in [base, top)
	highSack uint64 // one past the highest SACKed segment; <= base if none

	// newly collects the segments newly SACKed by the last sack call, when
	// collect is set (RACK needs them one by one). Reused across ACKs.
	newly   []uint64
	collect bool
}

// scoreboardInitWords is the ring's initial size in 64-segment words.
const scoreboardInitWords = 1

// init prepares an empty scoreboard for a flow of size bytes.
func (s *Scoreboard) init(mss int64, size uint64) {
	*s = Scoreboard{mss: mss, end: size, wmask: scoreboardInitWords - 1}
	if mss > 0 {
		s.nseg = (size + uint64(mss) - 1) / uint64(mss)
	}
	s.sacked = make([]uint64, scoreboardInitWords)
	s.lost = make([]uint64, scoreboardInitWords)
	s.retx = make([]uint64, scoreboardInitWords)
	s.ever = make([]uint64, scoreboardInitWords)
	s.xmit = make([]sim.Time, scoreboardInitWords*64)
}

// segStart is the first byte of segment i.
func (s *Scoreboard) segStart(i uint64) uint64 { return i * uint64(s.mss) }

// segEnd is one past the last byte of segment i.
func (s *Scoreboard) segEnd(i uint64) uint64 { return min((i+1)*uint64(s.mss), s.end) }

// segOf is the segment holding byte seq.
func (s *Scoreboard) segOf(seq uint64) uint64 { return seq / uint64(s.mss) }

// segAfter is the number of segments that lie entirely below byte seq: the
// first segment not fully covered by a cumulative ACK of seq.
func (s *Scoreboard) segAfter(seq uint64) uint64 {
	if seq >= s.end {
		return s.nseg
	}
	return seq / uint64(s.mss)
}

// segCeil is the first segment that starts at or after byte seq.
func (s *Scoreboard) segCeil(seq uint64) uint64 {
	if seq >= s.end {
		return s.nseg
	}
	return (seq + uint64(s.mss) - 1) / uint64(s.mss)
}

func (s *Scoreboard) wordOf(i uint64) uint64 { return (i >> 6) & s.wmask }

func (s *Scoreboard) bit(bm []uint64, i uint64) bool {
	return bm[s.wordOf(i)]&(1<<(i&63)) != 0
}

func (s *Scoreboard) setBit(bm []uint64, i uint64) { bm[s.wordOf(i)] |= 1 << (i & 63) }

func (s *Scoreboard) clearBit(bm []uint64, i uint64) { bm[s.wordOf(i)] &^= 1 << (i & 63) }

// spanMask is the mask of bits [lo, lo+n) of a word, 0 < n <= 64-lo.
func spanMask(lo, n uint64) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return ((1 << n) - 1) << lo
}

// belowMask is the mask, within the word holding segments [w*64, w*64+64),
// of the segments below l.
func belowMask(w, l uint64) uint64 {
	first := w * 64
	switch {
	case l <= first:
		return 0
	case l >= first+64:
		return ^uint64(0)
	}
	return (1 << (l - first)) - 1
}

// ensure grows the ring so that segments [base, i] fit.
func (s *Scoreboard) ensure(i uint64) {
	words := s.wmask + 1
	if (i>>6)-(s.base>>6) < words {
		return
	}
	n := words
	for (i>>6)-(s.base>>6) >= n {
		n *= 2
	}
	grow := func(old []uint64) []uint64 {
		nw := make([]uint64, n)
		if s.top > s.base {
			for w := s.base >> 6; w <= (s.top-1)>>6; w++ {
				nw[w&(n-1)] = old[w&s.wmask]
			}
		}
		return nw
	}
	s.sacked, s.lost, s.retx, s.ever = grow(s.sacked), grow(s.lost), grow(s.retx), grow(s.ever)
	nx := make([]sim.Time, n*64)
	for j := s.base; j < s.top; j++ {
		nx[j&(n*64-1)] = s.xmit[j&(words*64-1)]
	}
	s.xmit = nx
	s.wmask = n - 1
}

// xmitAt is the last transmission time of segment i.
func (s *Scoreboard) xmitAt(i uint64) sim.Time { return s.xmit[i&(64*(s.wmask+1)-1)] }

// onSend records a transmission of segment i at now. retx says it is a
// retransmission; inFlight says whether to count the copy in the pipe
// (RFC 6675's rescue retransmission is not counted, see SackRecovery).
func (s *Scoreboard) onSend(i uint64, now sim.Time, retx, inFlight bool) {
	if i < s.base || i >= s.nseg {
		return
	}
	s.ensure(i)
	if i >= s.top {
		s.top = i + 1
	}
	s.xmit[i&(64*(s.wmask+1)-1)] = now
	if retx {
		s.setBit(s.ever, i)
		if inFlight && !s.bit(s.sacked, i) {
			s.setBit(s.retx, i)
		}
	}
}

// countRange counts the set bits of bm in segments [a, b).
func (s *Scoreboard) countRange(bm []uint64, a, b uint64) int {
	n := 0
	for a < b {
		lo := a & 63
		k := min(64-lo, b-a)
		n += bits.OnesCount64(bm[s.wordOf(a)] & spanMask(lo, k))
		a += k
	}
	return n
}

// clearRange clears the bits of bm in segments [a, b).
func (s *Scoreboard) clearRange(bm []uint64, a, b uint64) {
	for a < b {
		lo := a & 63
		k := min(64-lo, b-a)
		bm[s.wordOf(a)] &^= spanMask(lo, k)
		a += k
	}
}

// segBytes is the payload of segment i still unacknowledged when the
// cumulative ACK is una.
func (s *Scoreboard) segBytes(i, una uint64) int64 {
	st := max(s.segStart(i), una)
	e := s.segEnd(i)
	if e <= st {
		return 0
	}
	return int64(e - st)
}

// advance moves the cumulative ACK point to una (RFC 6675 Update(): data
// cumulatively acknowledged leaves the scoreboard). It returns the bytes
// of the segments it dropped that had been SACKed before, so the caller
// does not count them as newly acknowledged twice.
func (s *Scoreboard) advance(una uint64) (wasSacked int64) {
	nb := s.segAfter(una)
	if nb <= s.base {
		return 0
	}
	hi := min(nb, s.top)
	if hi > s.base {
		n := s.countRange(s.sacked, s.base, hi)
		wasSacked = int64(n) * s.mss
		if last := s.nseg - 1; s.nseg > 0 && last >= s.base && last < hi && s.bit(s.sacked, last) {
			wasSacked -= s.mss - int64(s.segEnd(last)-s.segStart(last))
		}
		s.nSacked -= n
		s.clearRange(s.sacked, s.base, hi)
		s.clearRange(s.lost, s.base, hi)
		s.clearRange(s.retx, s.base, hi)
		s.clearRange(s.ever, s.base, hi)
	}
	s.base = nb
	if s.top < nb {
		s.top = nb
	}
	if s.highSack < nb {
		s.highSack = nb
	}
	return wasSacked
}

// sack records SACK blocks (RFC 6675 Update()). Blocks are clipped to
// [una, highSent): a block wholly below the cumulative ACK (a D-SACK,
// RFC 2883) or beyond what was sent is ignored. It returns the bytes newly
// SACKed; with collect set, s.newly lists the newly SACKed segments.
func (s *Scoreboard) sack(blocks []sim.SackBlock, una, highSent uint64) (newly int64) {
	if s.collect {
		s.newly = s.newly[:0]
	}
	for _, b := range blocks {
		st, e := max(b.Start, una), min(b.End, highSent)
		if st >= e {
			continue
		}
		a := max(s.segCeil(st), s.base)
		z := s.segAfter(e)
		z = min(z, s.top)
		if a >= z {
			continue
		}
		for i := a; i < z; {
			lo := i & 63
			k := min(64-lo, z-i)
			w := s.wordOf(i)
			m := spanMask(lo, k)
			fresh := m &^ s.sacked[w]
			if fresh != 0 {
				s.sacked[w] |= fresh
				s.lost[w] &^= fresh
				s.retx[w] &^= fresh
				c := bits.OnesCount64(fresh)
				s.nSacked += c
				newly += int64(c) * s.mss
				if last := s.nseg - 1; last >= i && last < i+k && fresh&(1<<(last&63)) != 0 {
					newly -= s.mss - int64(s.segEnd(last)-s.segStart(last))
				}
				if s.collect {
					for f := fresh; f != 0; f &= f - 1 {
						s.newly = append(s.newly, i-lo+uint64(bits.TrailingZeros64(f)))
					}
				}
			}
			i += k
		}
		if z > s.highSack {
			s.highSack = z
		}
	}
	return newly
}

// expunge forgets all SACK information (RFC 2018 §8 / RFC 6675 §5.1 after
// an RTO).
func (s *Scoreboard) expunge() {
	s.clearRange(s.sacked, s.base, s.top)
	s.nSacked = 0
	s.highSack = s.base
}

// markAllLost marks every outstanding segment that is not SACKed lost and
// forgets retransmissions in flight (go-back-N after an RTO).
func (s *Scoreboard) markAllLost() {
	for a := s.base; a < s.top; {
		lo := a & 63
		k := min(64-lo, s.top-a)
		w := s.wordOf(a)
		s.lost[w] |= spanMask(lo, k) &^ s.sacked[w]
		s.retx[w] &^= spanMask(lo, k)
		a += k
	}
}

// clearRetx forgets which segments have a retransmission in flight (a new
// recovery episode starts with HighRxt = HighACK, RFC 6675 §5 (3.1)).
func (s *Scoreboard) clearRetx() { s.clearRange(s.retx, s.base, s.top) }

// dupThreshBound returns L such that, for every segment i in [base, top),
// at least d SACKed segments lie above i exactly when i < L: L is the d-th
// highest SACKed segment (base when fewer than d are SACKed).
//
// RFC 6675 §4 IsLost(SeqNum) is true when "either DupThresh discontiguous
// SACKed sequences have arrived above 'SeqNum' or more than
// (DupThresh - 1) * SMSS bytes with sequence numbers greater than 'SeqNum'
// have been SACKed". On our grid every segment but the flow's last holds
// exactly SMSS bytes and a SACKed segment is SACKed whole, so
//   - k SACKed segments above i hold more than (k-1)*SMSS bytes (at most one
//     of them, the last, is short and it holds at least one byte), and
//   - more than (d-1)*SMSS SACKed bytes above i need at least d segments,
//     since none holds more than SMSS.
//
// Hence "more than (d-1)*SMSS bytes SACKed above" holds exactly when "at
// least d SACKed segments above" does; and since d discontiguous SACKed
// runs contain at least d segments, the first clause never adds a case.
// IsLost(i) is thus "at least d SACKed segments above i", which is i < L.
// The brute-force reference in scoreboard_test.go checks this equivalence
// byte by byte.
func (s *Scoreboard) dupThreshBound(d int) uint64 {
	if d <= 0 || s.nSacked < d || s.top <= s.base {
		return s.base
	}
	need := d
	for w := (s.top - 1) >> 6; ; w-- {
		word := s.sacked[w&s.wmask]
		if c := bits.OnesCount64(word); c < need {
			need -= c
		} else {
			// The need-th highest set bit of word.
			for ; need > 1; need-- {
				word &^= 1 << (63 - bits.LeadingZeros64(word))
			}
			return w*64 + uint64(63-bits.LeadingZeros64(word))
		}
		if w == s.base>>6 {
			return s.base
		}
	}
}

// pipe is RFC 6675 §4 SetPipe() in bytes: for every outstanding segment
// not SACKed, its bytes count once if it is not lost and once more if a
// retransmission of it is in flight. A segment is lost when it carries a
// lost mark or lies below lostBelow (the IsLost() boundary).
func (s *Scoreboard) pipe(una, lostBelow uint64) int64 {
	var units int64
	for a := s.base; a < s.top; {
		lo := a & 63
		k := min(64-lo, s.top-a)
		w := s.wordOf(a)
		uns := spanMask(lo, k) &^ s.sacked[w]
		lostw := (s.lost[w] | belowMask(a>>6, lostBelow)) & uns
		units += int64(bits.OnesCount64(uns&^lostw) + bits.OnesCount64(s.retx[w]&uns))
		a += k
	}
	bytes := units * s.mss
	// Correct the two segments that may hold less than MSS unacknowledged
	// bytes: the flow's last and a partially acknowledged first.
	fix := func(i uint64) {
		if i < s.base || i >= s.top || s.bit(s.sacked, i) {
			return
		}
		m := int64(0)
		if !s.bit(s.lost, i) && i >= lostBelow {
			m++
		}
		if s.bit(s.retx, i) {
			m++
		}
		bytes -= m * (s.mss - s.segBytes(i, una))
	}
	if s.nseg > 0 {
		fix(s.nseg - 1)
	}
	if s.base != s.nseg-1 {
		fix(s.base)
	}
	return bytes
}

// Segment-scan kinds for next.
const (
	scanUnsacked    = 1 + iota // not SACKed
	scanLost                   // not SACKed, and lost (mark or below the IsLost bound)
	scanLostPending            // not SACKed, lost mark, no retransmission in flight
	scanFresh                  // not SACKed, never retransmitted, not lost
	scanRetxLive               // not SACKed, retransmitted, and not awaiting another
)

// scanWord is the candidate mask of kind in ring word w (absolute word aw).
func (s *Scoreboard) scanWord(kind int, w, aw, lostBelow uint64) uint64 {
	sk := s.sacked[w]
	switch kind {
	case scanLost:
		return (s.lost[w] | belowMask(aw, lostBelow)) &^ sk
	case scanLostPending:
		return s.lost[w] &^ s.retx[w] &^ sk
	case scanFresh:
		return ^(sk | s.ever[w] | s.lost[w])
	case scanRetxLive:
		return s.ever[w] &^ sk &^ (s.lost[w] &^ s.retx[w])
	}
	return ^sk
}

// next returns the first segment in [a, b) of the given kind, or b.
func (s *Scoreboard) next(kind int, a, b, lostBelow uint64) uint64 {
	a = max(a, s.base)
	b = min(b, s.top)
	for a < b {
		lo := a & 63
		k := min(64-lo, b-a)
		m := s.scanWord(kind, s.wordOf(a), a>>6, lostBelow) & spanMask(lo, k)
		if m != 0 {
			return a - lo + uint64(bits.TrailingZeros64(m))
		}
		a += k
	}
	return b
}

// prevUnsacked returns the highest segment in [a, b) not SACKed, and
// whether there is one.
func (s *Scoreboard) prevUnsacked(a, b uint64) (uint64, bool) {
	a = max(a, s.base)
	b = min(b, s.top)
	for b > a {
		hi := (b - 1) & 63
		k := min(hi+1, b-a)
		m := ^s.sacked[s.wordOf(b-1)] & spanMask(hi+1-k, k)
		if m != 0 {
			return (b - 1) - hi + uint64(63-bits.LeadingZeros64(m)), true
		}
		b -= k
	}
	return 0, false
}

// IsSacked reports whether the segment holding byte seq has been SACKed.
func (s *Scoreboard) IsSacked(seq uint64) bool {
	i := s.segOf(seq)
	return i >= s.base && i < s.top && s.bit(s.sacked, i)
}

// IsLost is RFC 6675 §4 IsLost(SeqNum) for the segment holding byte seq:
// at least dupThresh SACKed segments lie above it (equivalently, more than
// (dupThresh-1)*SMSS SACKed bytes; see dupThreshBound).
func (s *Scoreboard) IsLost(seq uint64, dupThresh int) bool {
	i := s.segOf(seq)
	return i >= s.base && i < s.top && i < s.dupThreshBound(dupThresh)
}

// SackedSegments is the number of SACKed segments above the cumulative ACK.
func (s *Scoreboard) SackedSegments() int { return s.nSacked }

// HighSacked is one past the highest SACKed byte, or the first
// unacknowledged byte when nothing above it is SACKed.
func (s *Scoreboard) HighSacked() uint64 {
	if s.highSack <= s.base {
		return min(s.segStart(s.base), s.end)
	}
	return s.segEnd(s.highSack - 1)
}

// newSegment returns the segment starting at sp.Nxt, cut at the segment
// grid, if there is data left to send.
func (s *Scoreboard) newSegment(sp *SeqSpace) (Segment, bool) {
	if sp.Nxt >= sp.End {
		return Segment{}, false
	}
	e := s.segEnd(s.segOf(sp.Nxt))
	return Segment{Seq: sp.Nxt, Len: int64(e - sp.Nxt), Retx: sp.Nxt < sp.HighSent}, true
}

// retxSegment returns segment i as a retransmission, without any bytes
// below the cumulative ACK una.
func (s *Scoreboard) retxSegment(i, una uint64, force bool) Segment {
	st := max(s.segStart(i), una)
	return Segment{Seq: st, Len: int64(s.segEnd(i) - st), Retx: true, Force: force}
}

// skipSacked moves sp.Nxt past segments the receiver has SACKed: after
// go-back-N (an RTO), data SACKed since is not sent again (RFC 6675 §5.1:
// use the SACK information that arrives during the recovery after an RTO).
func (s *Scoreboard) skipSacked(sp *SeqSpace) {
	if sp.Nxt >= sp.HighSent {
		return
	}
	i := s.segOf(sp.Nxt)
	if sp.Nxt != s.segStart(i) || i < s.base || i >= s.top || !s.bit(s.sacked, i) {
		return
	}
	j := s.next(scanUnsacked, i, s.top, 0)
	sp.Nxt = min(s.segStart(j), sp.HighSent)
}
