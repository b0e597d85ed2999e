package cc

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// Harness shared by the recovery tests (newreno, sack, rack): a fake host
// that sends what a Recovery offers, acknowledges with SACK blocks and
// advances virtual time.

const recMSS = 1000

// recHarness drives one Recovery.
type recHarness struct {
	t   *testing.T
	r   Recovery
	now sim.Time
	// rtt and tsecr are the sender's timing handed with every event
	// (RACK's inputs).
	rtt   RTTInfo
	tsecr sim.Time
}

func newRecHarness(t *testing.T, r Recovery) *recHarness {
	t.Helper()
	return &recHarness{t: t, r: r}
}

// blk is the SACK block covering segments [i, j).
func rblk(i, j uint64) sim.SackBlock { return sim.SackBlock{Start: i * recMSS, End: j * recMSS} }

// seq is the first byte of segment i.
func rseq(i uint64) uint64 { return i * recMSS }

// sendNew sends n segments of new data, each dt after the previous.
func (h *recHarness) sendNew(n int, dt sim.Time) []Segment {
	h.t.Helper()
	var out []Segment
	for k := 0; k < n; k++ {
		seg, ok := h.r.Next()
		if !ok || seg.Retx {
			h.t.Fatalf("sendNew: segment %d: want new data, got %+v ok=%v", k, seg, ok)
		}
		h.r.OnSent(h.now, seg, h.rtt)
		out = append(out, seg)
		h.now += dt
	}
	return out
}

// pump sends as the host does: while Next offers a segment that is forced
// or fits in cwnd - Pipe().
func (h *recHarness) pump(cwnd int64) []Segment {
	h.t.Helper()
	var out []Segment
	for k := 0; ; k++ {
		if k > 100000 {
			h.t.Fatal("pump: no end")
		}
		seg, ok := h.r.Next()
		if !ok || (!seg.Force && cwnd-h.r.State().Pipe < seg.Len) {
			return out
		}
		h.r.OnSent(h.now, seg, h.rtt)
		out = append(out, seg)
	}
}

// ack delivers an ACK with cumulative acknowledgment cum (bytes) and SACK
// blocks.
func (h *recHarness) ack(cum uint64, blocks ...sim.SackBlock) AckVerdict {
	h.t.Helper()
	ai := AckInfo{Now: h.now, Ack: cum, Sack: blocks, DupCandidate: true, RTTInfo: h.rtt, TSecr: h.tsecr}
	return h.r.OnAck(&ai)
}

// next returns what the Recovery would send now.
func (h *recHarness) next() (Segment, bool) { return h.r.Next() }

// wantSeg fails unless got is a segment starting at segment i with the
// given retx/force flags.
func wantSeg(t *testing.T, what string, got Segment, ok bool, i uint64, retx, force bool) {
	t.Helper()
	if !ok {
		t.Fatalf("%s: want segment %d (retx=%v force=%v), got nothing", what, i, retx, force)
	}
	if got.Seq != rseq(i) || got.Retx != retx || got.Force != force {
		t.Fatalf("%s: want segment %d (seq %d retx=%v force=%v), got %+v", what, i, rseq(i), retx, force, got)
	}
}

// --- Scoreboard unit tests ---

func TestScoreboard_RFC6675_3_UpdateMergesAndClipsBlocks(t *testing.T) {
	var s Scoreboard
	s.init(recMSS, 20*recMSS)
	for i := uint64(0); i < 10; i++ {
		s.onSend(i, 0, false, true)
	}
	s.advance(rseq(2))
	// Overlapping blocks merge; a block below SndUna (a D-SACK), one past
	// HighSent, a partial segment and an empty block mark nothing.
	blocks := []sim.SackBlock{
		{Start: rseq(0), End: rseq(1)}, // below SndUna: D-SACK
		rblk(3, 5), rblk(4, 6),         // overlap: segments 3, 4, 5
		{Start: rseq(7) + 10, End: rseq(8)}, // part of segment 7 only
		rblk(12, 14),                        // beyond HighSent
		{Start: rseq(9), End: rseq(9)},      // empty
		{Start: rseq(9), End: rseq(8)},      // inverted
	}
	newly := s.sack(blocks, rseq(2), rseq(10))
	if want := int64(3 * recMSS); newly != want {
		t.Errorf("newly SACKed bytes: want %d, got %d", want, newly)
	}
	for i := uint64(2); i < 10; i++ {
		want := i >= 3 && i <= 5
		if got := s.IsSacked(rseq(i)); got != want {
			t.Errorf("IsSacked(segment %d): want %v, got %v", i, want, got)
		}
	}
	if got, want := s.SackedSegments(), 3; got != want {
		t.Errorf("SackedSegments: want %d, got %d", want, got)
	}
	if got, want := s.HighSacked(), rseq(6); got != want {
		t.Errorf("HighSacked: want %d, got %d", want, got)
	}
	// The same blocks again SACK nothing new.
	if newly := s.sack(blocks, rseq(2), rseq(10)); newly != 0 {
		t.Errorf("repeated blocks: want 0 newly SACKed bytes, got %d", newly)
	}
	// A cumulative ACK over SACKed data reports those bytes as SACKed before.
	if was := s.advance(rseq(5)); was != 2*recMSS {
		t.Errorf("advance over segments 3, 4: want 2000 bytes SACKed before, got %d", was)
	}
}

func TestScoreboard_GrowsAndWrapsWithoutLosingState(t *testing.T) {
	var s Scoreboard
	s.init(recMSS, 5000*recMSS)
	// Slide a 300-segment window (bigger than the initial ring) 4000
	// segments, SACKing every third segment; check the bits survive growth
	// and wrap-around.
	const w = 300
	next := uint64(0)
	for base := uint64(0); base < 4000; base += 7 {
		for ; next < base+w; next++ {
			s.onSend(next, sim.Time(next), false, true)
		}
		s.advance(rseq(base))
		for i := base; i < next; i++ {
			if i%3 == 0 {
				s.sack([]sim.SackBlock{rblk(i, i+1)}, rseq(base), rseq(next))
			}
		}
		for i := base; i < next; i++ {
			want := i%3 == 0
			if got := s.IsSacked(rseq(i)); got != want {
				t.Fatalf("base %d: IsSacked(segment %d): want %v, got %v", base, i, want, got)
			}
			if got := s.xmitAt(i); got != sim.Time(i) {
				t.Fatalf("base %d: xmit of segment %d: want %d, got %d", base, i, i, got)
			}
		}
	}
}

// --- Brute-force reference for RFC 6675 ---

// refSack is a deliberately naive model of RFC 6675 §4 over a flow of
// byte-addressed segments: IsLost(), SetPipe() and NextSeg() evaluated
// octet by octet from their definitions. It reads the recovery's state
// variables (HighRxt, RescueRxt, RecoveryPoint, ...) but keeps its own
// per-segment record of SACKs, RTO lost marks and go-back-N resends.
type refSack struct {
	mss       int64
	end       uint64
	dupThresh int
	sacked    map[uint64]bool // per byte
	lostMark  map[uint64]bool // per segment (RTO)
	resent    map[uint64]bool // per segment, resent since the RTO
}

func newRefSack(mss int64, end uint64, dupThresh int) *refSack {
	return &refSack{mss: mss, end: end, dupThresh: dupThresh,
		sacked: map[uint64]bool{}, lostMark: map[uint64]bool{}, resent: map[uint64]bool{}}
}

func (m *refSack) segOf(b uint64) uint64    { return b / uint64(m.mss) }
func (m *refSack) segStart(i uint64) uint64 { return i * uint64(m.mss) }
func (m *refSack) segEnd(i uint64) uint64   { return min((i+1)*uint64(m.mss), m.end) }

// applySack marks the bytes of segments entirely covered by a block,
// clipped to [una, highSent).
func (m *refSack) applySack(blocks []sim.SackBlock, una, highSent uint64) {
	for _, b := range blocks {
		st, e := max(b.Start, una), min(b.End, highSent)
		for i := m.segOf(st); m.segStart(i) < e; i++ {
			if m.segStart(i) >= st && m.segEnd(i) <= e {
				for x := m.segStart(i); x < m.segEnd(i); x++ {
					m.sacked[x] = true
				}
				delete(m.lostMark, i)
				delete(m.resent, i)
			}
		}
	}
}

// isLost is RFC 6675 IsLost(SeqNum) read literally: DupThresh
// discontiguous SACKed sequences above SeqNum, or more than
// (DupThresh-1)*SMSS SACKed bytes above it.
func (m *refSack) isLost(s, highSent uint64) bool {
	runs, bytes := 0, int64(0)
	in := false
	for x := s + 1; x < highSent; x++ {
		if m.sacked[x] {
			bytes++
			if !in {
				runs++
			}
			in = true
		} else {
			in = false
		}
	}
	return runs >= m.dupThresh || bytes > int64(m.dupThresh-1)*m.mss
}

// segLost is IsLost for the first byte of segment i, or an RTO mark.
func (m *refSack) segLost(i, highSent uint64) bool {
	return m.lostMark[i] || m.isLost(m.segStart(i), highSent)
}

// pipe is SetPipe() octet by octet.
func (m *refSack) pipe(r *SackRecovery) int64 {
	var p int64
	for x := r.Una; x < r.HighSent; x++ {
		if m.sacked[x] {
			continue
		}
		i := m.segOf(x)
		if !m.segLost(i, r.HighSent) {
			p++
		}
		// (b): S1 <= HighRxt in recovery; after an RTO, the go-back-N resend.
		if (r.inRecovery && x < r.highRxt && !m.lostMark[i]) || m.resent[i] {
			p++
		}
	}
	return p
}

// next is the segment the RFC says to send next.
func (m *refSack) next(r *SackRecovery) (Segment, bool) {
	seg := func(i uint64, force bool) Segment {
		st := max(m.segStart(i), r.Una)
		return Segment{Seq: st, Len: int64(m.segEnd(i) - st), Retx: true, Force: force}
	}
	newData := func() (Segment, bool) {
		n := r.Nxt
		for n < r.HighSent && m.sacked[n] && n == m.segStart(m.segOf(n)) {
			n = m.segEnd(m.segOf(n))
		}
		if n >= r.End {
			return Segment{}, false
		}
		return Segment{Seq: n, Len: int64(m.segEnd(m.segOf(n)) - n), Retx: n < r.HighSent}, true
	}
	if r.fastRetx {
		return seg(m.segOf(r.Una), true), true
	}
	if !r.inRecovery {
		return newData()
	}
	var highSackedOctet uint64
	anySacked := false
	for x := r.Una; x < r.HighSent; x++ {
		if m.sacked[x] {
			highSackedOctet, anySacked = x, true
		}
	}
	// Rule (1), octet by octet: the smallest unSACKed S2 > HighRxt, below
	// the highest SACKed octet, IsLost(S2); the segment holding it.
	if anySacked {
		for x := max(r.Una, r.highRxt); x < highSackedOctet; x++ {
			if !m.sacked[x] && m.segLost(m.segOf(x), r.HighSent) {
				return seg(m.segOf(x), false), true
			}
		}
	}
	if s, ok := newData(); ok {
		return s, true
	}
	if anySacked {
		for x := max(r.Una, r.highRxt); x < highSackedOctet; x++ {
			if !m.sacked[x] {
				return seg(m.segOf(x), false), true
			}
		}
	}
	if !r.rescueSet || r.Una > r.rescueRxt {
		for x := r.HighSent; x > r.Una; x-- {
			if !m.sacked[x-1] {
				return seg(m.segOf(x-1), false), true
			}
		}
	}
	return Segment{}, false
}

// TestScoreboard_RFC6675_MatchesBruteForce drives a SackRecovery with
// random sends, cumulative ACKs, SACK blocks and RTOs, and after every
// step compares IsLost, Pipe and NextSeg with the naive reference.
func TestScoreboard_RFC6675_MatchesBruteForce(t *testing.T) {
	const mss = 10
	var inRec, rescues, rtos int
	defer func() {
		t.Logf("steps in recovery %d, rescue retransmissions %d, RTOs %d", inRec, rescues, rtos)
	}()
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0x5ac4))
		dupThresh := 1 + rng.IntN(4)
		size := uint64(30*mss + rng.IntN(2)*rng.IntN(mss)) // sometimes a short last segment
		r := NewSackRecovery(mss, size, dupThresh)
		ref := newRefSack(mss, size, dupThresh)
		var now sim.Time
		for step := 0; step < 400; step++ {
			now += sim.Microsecond
			switch op := rng.IntN(100); {
			case op < 40: // send what the window (random) allows
				for k := rng.IntN(4); k > 0; k-- {
					seg, ok := r.Next()
					if !ok {
						break
					}
					if seg.Seq < r.HighSent && len(ref.lostMark) > 0 && !r.inRecovery {
						ref.resent[ref.segOf(seg.Seq)] = true
					}
					r.OnSent(now, seg, RTTInfo{})
				}
			case op < 98: // an ACK
				cum := r.Una
				if r.HighSent > r.Una && rng.IntN(3) == 0 {
					cum = ref.segStart(ref.segOf(r.Una) + uint64(rng.IntN(3)))
					cum = min(cum, r.HighSent)
				}
				var blocks []sim.SackBlock
				hs := (r.HighSent + mss - 1) / mss
				for k := rng.IntN(sim.MaxSackBlocks + 1); k > 0 && hs > 0; k-- {
					a := uint64(rng.IntN(int(hs) + 1))
					b := a + uint64(rng.IntN(4))
					blocks = append(blocks, sim.SackBlock{Start: a * mss, End: min(b*mss, size)})
				}
				ref.applySack(blocks, max(cum, r.Una), r.HighSent)
				ai := AckInfo{Now: now, Ack: cum, Sack: blocks, DupCandidate: true}
				r.OnAck(&ai)
				for i := range ref.lostMark {
					if ref.segEnd(i) <= r.Una {
						delete(ref.lostMark, i)
						delete(ref.resent, i)
					}
				}
			default: // an RTO
				rtos++
				r.OnRTO(now, RTTInfo{})
				ref.sacked = map[uint64]bool{}
				ref.resent = map[uint64]bool{}
				for i := ref.segOf(r.Una); ref.segStart(i) < r.HighSent; i++ {
					if ref.segEnd(i) > r.Una {
						ref.lostMark[i] = true
					}
				}
			}
			where := fmt.Sprintf("seed %d step %d (una %d nxt %d high %d rec %v)", seed, step, r.Una, r.Nxt, r.HighSent, r.inRecovery)
			for i := ref.segOf(r.Una); ref.segStart(i) < r.HighSent && ref.segEnd(i) > r.Una; i++ {
				want := !ref.sacked[ref.segStart(i)] && ref.segLost(i, r.HighSent)
				if got := r.IsLost(ref.segStart(i)); got != want {
					t.Fatalf("%s: IsLost(segment %d): want %v, got %v", where, i, want, got)
				}
			}
			if want, got := ref.pipe(r), r.Pipe(); got != want {
				t.Fatalf("%s: Pipe: want %d, got %d", where, want, got)
			}
			if r.inRecovery {
				inRec++
			}
			wantSeg, wantOK := ref.next(r)
			gotSeg, gotOK := r.Next()
			if r.rescueNext {
				rescues++
			}
			if gotOK != wantOK || (wantOK && gotSeg != wantSeg) {
				t.Fatalf("%s: NextSeg: want %+v ok=%v, got %+v ok=%v", where, wantSeg, wantOK, gotSeg, gotOK)
			}
		}
	}
}

// TestRecoveries_RandomInvariants feeds NewReno, SACK and RACK-TLP random
// ACKs (including D-SACK, unaligned and out-of-range SACK blocks), RTOs
// and timer expiries, and checks the invariants every host relies on:
// SndUna <= SndNxt <= End, 0 <= Pipe (<= 2*(HighSent-SndUna) with a
// scoreboard), segments
// offered lie in [SndUna, End), and a forced segment is a retransmission
// or a probe.
func TestRecoveries_RandomInvariants(t *testing.T) {
	const mss = 100
	for seed := uint64(1); seed <= 60; seed++ {
		for kind := 0; kind < 3; kind++ {
			rng := rand.New(rand.NewPCG(seed, uint64(kind)))
			size := uint64(40*mss + rng.IntN(mss))
			var r Recovery
			var rack *RackRecovery
			var rt RTTInfo // RACK's timing, handed with every event
			switch kind {
			case 0:
				r = NewNewRenoRecovery(mss, size, 3)
			case 1:
				r = NewSackRecovery(mss, size, 1+rng.IntN(3))
			default:
				rack = NewRackRecovery(mss, size, DefaultRackConfig())
				rt = RTTInfo{SRTT: 50 * sim.Microsecond, MinRTT: 40 * sim.Microsecond}
				r = rack
			}
			var now sim.Time
			for step := 0; step < 500; step++ {
				now += sim.Time(rng.IntN(20)) * sim.Microsecond
				where := fmt.Sprintf("kind %d seed %d step %d", kind, seed, step)
				switch op := rng.IntN(100); {
				case op < 45:
					for k := rng.IntN(5); k > 0; k-- {
						seg, ok := r.Next()
						if !ok {
							break
						}
						if una := r.State().Una; seg.Seq < una || seg.Seq+uint64(seg.Len) > size || seg.Len <= 0 {
							t.Fatalf("%s: segment %+v outside [%d, %d)", where, seg, una, size)
						}
						r.OnSent(now, seg, rt)
					}
				case op < 95:
					hs := r.State().Nxt + uint64(rng.IntN(3*mss))
					cum := r.State().Una
					if rng.IntN(3) == 0 {
						cum += uint64(rng.IntN(4 * mss))
					}
					var blocks []sim.SackBlock
					for k := rng.IntN(sim.MaxSackBlocks + 1); k > 0; k-- {
						a := uint64(rng.IntN(int(hs) + 1))
						blocks = append(blocks, sim.SackBlock{Start: a, End: a + uint64(rng.IntN(5*mss))})
					}
					ai := AckInfo{Now: now, Ack: cum, Sack: blocks, DupCandidate: rng.IntN(4) > 0, RTTInfo: rt}
					r.OnAck(&ai)
				case op < 98:
					r.OnRTO(now, rt)
				default:
					if rack != nil && rack.Deadline() != sim.Never {
						now = max(now, rack.Deadline())
						rack.OnDeadlineVerdict(now)
					}
				}
				st := r.State()
				una, nxt := st.Una, st.Nxt
				if una > nxt || nxt > size {
					t.Fatalf("%s: want SndUna <= SndNxt <= End, got %d, %d, %d", where, una, nxt, size)
				}
				// NewReno's pipe may exceed FlightSize: RFC 6582's partial
				// deflation can take cwnd below ssthresh.
				high := uint64(1 << 62)
				switch x := r.(type) {
				case *SackRecovery:
					high = x.HighSent
				case *RackRecovery:
					high = x.HighSent
				}
				if p := st.Pipe; p < 0 || (high < 1<<62 && p > 2*int64(high-una)) {
					t.Fatalf("%s: pipe %d outside [0, 2*(HighSent-SndUna)]", where, p)
				}
				if seg, ok := r.Next(); ok && seg.Force && !seg.Retx && (rack == nil || !rack.probeNext) {
					t.Fatalf("%s: forced segment %+v is neither a retransmission nor a probe", where, seg)
				}
			}
		}
	}
}

// --- A closed loop: sender, a lossy path, a SACKing receiver ---

// loopSim runs one flow through a fixed-delay path that drops chosen
// transmissions. The sender is the real Endpoint (the one hostsim and
// cc trace drive) with a Reno controller and RFC 6298 RTO; the receiver
// acknowledges every segment at once with up to 4 SACK blocks, most
// recently changed first.
type loopSim struct {
	t    *testing.T
	ep   *Endpoint
	owd  sim.Time // one-way delay
	gap  sim.Time // serialisation time of a data packet
	drop func(seq uint64, nth int) bool

	now      sim.Time
	linkFree sim.Time
	sends    map[uint64]int // transmissions per segment start
	evs      []loopEv
	rtos     int
	done     sim.Time

	// receiver
	rcvNxt uint64
	ooo    [][3]uint64 // start, end, stamp
	stamp  uint64
}

type loopEv struct {
	at    sim.Time
	data  bool
	seq   uint64
	len   int64
	tsval sim.Time
	ack   uint64
	sack  []sim.SackBlock
}

func runLoop(t *testing.T, rec Recovery, size uint64, drop func(seq uint64, nth int) bool) *loopSim {
	t.Helper()
	ep, err := NewEndpoint(EndpointConfig{MSS: recMSS, Size: size, RTO: DefaultRTOConfig()}, NewReno(recMSS, 10), rec)
	if err != nil {
		t.Fatalf("NewEndpoint: %v", err)
	}
	s := &loopSim{t: t, ep: ep, owd: 10 * sim.Microsecond, gap: sim.Microsecond / 10, drop: drop,
		sends: map[uint64]int{}, done: sim.Never}
	s.trySend()
	for steps := 0; s.done == sim.Never; steps++ {
		if steps > 100000 {
			t.Fatal("loop: flow never finished")
		}
		// The earliest of: a packet, the RTO, the recovery timer.
		at, which := sim.Never, -1
		for i, e := range s.evs {
			if e.at < at {
				at, which = e.at, i
			}
		}
		rtoAt, recAt := ep.RTODeadline(), ep.RecoveryDeadline()
		var act Actions
		switch {
		case rtoAt <= at && rtoAt <= recAt:
			s.now = rtoAt
			act = ep.OnDeadline(s.now, TimerRTO)
			if act.RTO {
				s.rtos++
			}
		case recAt <= at:
			s.now = recAt
			act = ep.OnDeadline(s.now, TimerRecovery)
		default:
			e := s.evs[which]
			s.evs = append(s.evs[:which], s.evs[which+1:]...)
			s.now = e.at
			if e.data {
				s.onData(e)
				continue
			}
			act = ep.OnAck(s.now, &Ack{Ack: e.ack, Sack: e.sack, TSecr: e.tsval, HasTSecr: true})
			if act.Done {
				s.done = s.now
			}
		}
		if act.Send {
			s.trySend()
		}
	}
	return s
}

func (s *loopSim) trySend() {
	s.ep.BeginSend()
	for {
		seg, ok := s.ep.Next(s.now)
		if !ok {
			return
		}
		s.ep.OnSent(s.now, seg, nil)
		nth := s.sends[seg.Seq]
		s.sends[seg.Seq]++
		dep := max(s.now, s.linkFree) + s.gap
		s.linkFree = dep
		if !s.drop(seg.Seq, nth) {
			s.evs = append(s.evs, loopEv{at: dep + s.owd, data: true, seq: seg.Seq, len: seg.Len, tsval: s.now})
		}
	}
}

func (s *loopSim) onData(e loopEv) {
	st, end := e.seq, e.seq+uint64(e.len)
	s.stamp++
	if st <= s.rcvNxt {
		s.rcvNxt = max(s.rcvNxt, end)
		for changed := true; changed; {
			changed = false
			for i, iv := range s.ooo {
				if iv[0] <= s.rcvNxt {
					s.rcvNxt = max(s.rcvNxt, iv[1])
					s.ooo = append(s.ooo[:i], s.ooo[i+1:]...)
					changed = true
					break
				}
			}
		}
	} else {
		merged := [3]uint64{st, end, s.stamp}
		var keep [][3]uint64
		for _, iv := range s.ooo {
			if iv[1] < merged[0] || iv[0] > merged[1] {
				keep = append(keep, iv)
				continue
			}
			merged[0], merged[1] = min(merged[0], iv[0]), max(merged[1], iv[1])
		}
		s.ooo = append(keep, merged)
	}
	var sack []sim.SackBlock
	last := ^uint64(0)
	for len(sack) < sim.MaxSackBlocks {
		best := -1
		for i, iv := range s.ooo {
			if iv[2] < last && (best < 0 || iv[2] > s.ooo[best][2]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		sack = append(sack, sim.SackBlock{Start: s.ooo[best][0], End: s.ooo[best][1]})
		last = s.ooo[best][2]
	}
	s.evs = append(s.evs, loopEv{at: s.now + s.owd, ack: s.rcvNxt, sack: sack, tsval: e.tsval})
}

// dropFirst drops the first transmission of the given segments.
func dropFirst(segs ...uint64) func(uint64, int) bool {
	return func(sq uint64, nth int) bool {
		for _, i := range segs {
			if sq == rseq(i) && nth == 0 {
				return true
			}
		}
		return false
	}
}

func TestRecoveries_EndToEnd_TwoLossesInOneWindow(t *testing.T) {
	// A 10-segment flow in one initial window; segments 2 and 5 lost.
	// Reno needs a timeout; NewReno, SACK and RACK do not.
	const size = 10 * recMSS
	cases := []struct {
		name string
		rec  Recovery
		rtos int
	}{
		{"reno", NewRenoRecovery(recMSS, size, 3), 1},
		{"newreno", NewNewRenoRecovery(recMSS, size, 3), 0},
		{"sack", NewSackRecovery(recMSS, size, 3), 0},
		{"rack", NewRackRecovery(recMSS, size, DefaultRackConfig()), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := runLoop(t, c.rec, size, dropFirst(2, 5))
			if s.rtos != c.rtos {
				t.Errorf("timeouts: want %d, got %d (finished at %v)", c.rtos, s.rtos, s.done)
			}
		})
	}
}

func TestRecoveries_EndToEnd_TailLoss(t *testing.T) {
	// A 10-segment flow, the last two segments lost: no duplicate ACKs.
	// Only RACK-TLP repairs it without a timeout, its probe leaving
	// 2*SRTT after the last transmission.
	const size = 10 * recMSS
	cases := []struct {
		name string
		rec  Recovery
		rtos int
	}{
		{"newreno", NewNewRenoRecovery(recMSS, size, 3), 1},
		{"sack", NewSackRecovery(recMSS, size, 3), 1},
		{"rack", NewRackRecovery(recMSS, size, DefaultRackConfig()), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := runLoop(t, c.rec, size, dropFirst(8, 9))
			if s.rtos != c.rtos {
				t.Errorf("timeouts: want %d, got %d (finished at %v)", c.rtos, s.rtos, s.done)
			}
		})
	}
}

func TestRecoveries_EndToEnd_RandomLossCompletes(t *testing.T) {
	// 300 segments, 5% random loss of every transmission: every recovery
	// delivers the flow.
	for seed := uint64(1); seed <= 5; seed++ {
		for _, mk := range []func() Recovery{
			func() Recovery { return NewNewRenoRecovery(recMSS, 300*recMSS, 3) },
			func() Recovery { return NewSackRecovery(recMSS, 300*recMSS, 3) },
			func() Recovery { return NewRackRecovery(recMSS, 300*recMSS, DefaultRackConfig()) },
		} {
			rng := rand.New(rand.NewPCG(seed, 7))
			runLoop(t, mk(), 300*recMSS, func(uint64, int) bool { return rng.IntN(20) == 0 })
		}
	}
}
