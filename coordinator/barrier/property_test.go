package barrier

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstep-sim/lockstep/sim"
)

// TestCausality_Property runs random tiny fabrics through the barrier and
// Followers under random message orders, duplicated grants, stale reports
// and leader failovers (restoring msgpack-encoded snapshots of random age),
// and checks that:
//
//   - no node ever receives a packet stamped before the End of a window it
//     has already run (causality), nor runs an event outside its window;
//   - every node processes exactly the events, in exactly the order, that a
//     sequential simulator of the same model processes (determinism);
//   - every node is eventually told the run is finished (liveness);
//   - grants for one window are identical whichever leader issued them,
//     windows follow each other, and none is longer than L or ends after
//     the stop time.
func TestCausality_Property(t *testing.T) {
	seeds, first := *propertySeeds, *propertyFirst
	if testing.Short() {
		seeds = min(seeds, 100)
	}
	for seed := first; seed < first+seeds; seed++ {
		m := newModel(seed)
		if err := runLockstep(m); err != nil {
			t.Fatalf("seed %d (%s): %v", seed, m, err)
		}
	}
}

// Longer sweeps: go test -run TestCausality -barrier.seeds=100000
var (
	propertySeeds = flag.Uint64("barrier.seeds", 600, "seeds for TestCausality_Property")
	propertyFirst = flag.Uint64("barrier.first-seed", 0, "first seed for TestCausality_Property")
)

// mEvent is an event of the fake model. Events at one node are ordered by
// (t, src, seq), as docs/design.md §2 orders them.
type mEvent struct {
	t   sim.Time
	src int // creating node; samplerSrc for sampler ticks
	seq uint64
	ttl int // how many more generations it may spawn
}

const samplerSrc = -1

func cmpEvent(a, b mEvent) int {
	return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.src, b.src), cmp.Compare(a.seq, b.seq))
}

func (e mEvent) String() string { return fmt.Sprintf("%d/%d/%d", e.t, e.src, e.seq) }

// model is a tiny fabric: each node starts with a sorted list of event
// times; processing an event spawns up to two children, local ones after a
// delay in [0, 3L) and remote ones after a delay in [L, 3L], decided by a
// random stream seeded from the event's identity, so any correct simulator
// produces the same events. Optional sampler ticks (a periodic timer that
// affects nothing) keep NextEvent finite; nodes then report Done.
type model struct {
	seed      uint64
	nodes     int
	l, stop   sim.Time
	samplers  bool
	period    sim.Time
	initial   [][]mEvent
	failovers int
}

func newModel(seed uint64) *model {
	r := rand.New(rand.NewPCG(seed, 0x6c6f636b73746570))
	m := &model{
		seed:      seed,
		nodes:     1 + r.IntN(5),
		l:         sim.Time(1 + r.Int64N(int64(2*sim.Microsecond))),
		stop:      sim.Never,
		samplers:  r.IntN(3) == 0,
		failovers: r.IntN(4),
	}
	m.period = 20*m.l + sim.Time(r.Int64N(int64(20*m.l)))
	if r.IntN(3) == 0 {
		m.stop = 1 + sim.Time(r.Int64N(int64(40*m.l)))
	}
	m.initial = make([][]mEvent, m.nodes)
	for n := range m.initial {
		var base sim.Time
		for i := range r.IntN(6) {
			base += sim.Time(r.Int64N(int64(10 * m.l)))
			if r.IntN(4) == 0 {
				// An idle gap to skip. Sampler ticks fill it: keep it short.
				base += sim.Millisecond
				if m.samplers {
					base += 10*m.period - sim.Millisecond
				}
			}
			m.initial[n] = append(m.initial[n],
				mEvent{t: base, src: n, seq: uint64(i), ttl: r.IntN(5)})
		}
	}
	return m
}

func (m *model) String() string {
	return fmt.Sprintf("nodes=%d L=%dps stop=%v samplers=%t failovers=%d",
		m.nodes, m.l, m.stop, m.samplers, m.failovers)
}

// firstSeq is the first sequence number a node gives the events it spawns.
func (m *model) firstSeq(n int) uint64 { return uint64(len(m.initial[n])) }

// spawn returns the children of event e processed at node n; seq numbers
// the events n creates. A child with to == n is local.
func (m *model) spawn(n int, e mEvent, seq *uint64) (to []int, evs []mEvent) {
	if e.src == samplerSrc {
		return []int{n}, []mEvent{{t: e.t + m.period, src: samplerSrc, seq: e.seq + 1}}
	}
	r := rand.New(rand.NewPCG(m.seed^uint64(n)<<32^uint64(e.src+1)<<48, e.seq^uint64(e.t)))
	if e.ttl == 0 {
		return nil, nil
	}
	for range r.IntN(3) {
		c := mEvent{src: n, seq: *seq, ttl: e.ttl - 1}
		*seq++
		dst := n
		if m.nodes > 1 && r.IntN(2) == 0 {
			dst = (n + 1 + r.IntN(m.nodes-1)) % m.nodes
			c.t = e.t + m.l + sim.Time(r.Int64N(int64(2*m.l)+1))
		} else {
			c.t = e.t + sim.Time(r.Int64N(int64(3*m.l)))
		}
		to, evs = append(to, dst), append(evs, c)
	}
	return to, evs
}

func (m *model) samplerStart(n int) mEvent {
	return mEvent{t: sim.Time(n) * m.l / 3, src: samplerSrc}
}

// reference runs the model sequentially and returns each node's processed
// (non-sampler) events in order.
func (m *model) reference() [][]mEvent {
	type item struct {
		dst int
		e   mEvent
	}
	cmpItem := func(a, b item) int {
		return cmp.Or(cmp.Compare(a.e.t, b.e.t), cmp.Compare(a.dst, b.dst),
			cmp.Compare(a.e.src, b.e.src), cmp.Compare(a.e.seq, b.e.seq))
	}
	var q []item
	live := 0
	push := func(it item) {
		i, _ := slices.BinarySearchFunc(q, it, cmpItem)
		q = slices.Insert(q, i, it)
		if it.e.src != samplerSrc {
			live++
		}
	}
	seqs := make([]uint64, m.nodes)
	for n := range m.nodes {
		seqs[n] = m.firstSeq(n)
		for _, e := range m.initial[n] {
			push(item{n, e})
		}
		if m.samplers {
			push(item{n, m.samplerStart(n)})
		}
	}
	out := make([][]mEvent, m.nodes)
	for len(q) > 0 && live > 0 && q[0].e.t < m.stop {
		it := q[0]
		q = q[1:]
		if it.e.src != samplerSrc {
			live--
			out[it.dst] = append(out[it.dst], it.e)
		}
		to, evs := m.spawn(it.dst, it.e, &seqs[it.dst])
		for i, e := range evs {
			push(item{to[i], e})
		}
	}
	return out
}

// lnode is one node of the lockstep run.
type lnode struct {
	id      int
	f       *Follower
	q       []mEvent
	seq     uint64
	setup   bool
	ranTo   sim.Time // End of the last window run
	done    []mEvent // processed non-sampler events
	nextWin uint64   // the window it runs next, for checks
}

func (n *lnode) push(e mEvent) {
	i, _ := slices.BinarySearchFunc(n.q, e, cmpEvent)
	n.q = slices.Insert(n.q, i, e)
}

func (n *lnode) hasReal() bool {
	return slices.ContainsFunc(n.q, func(e mEvent) bool { return e.src != samplerSrc })
}

type dataMsg struct {
	to     int
	sentIn uint64
	evs    []mEvent
}

type addressed[T any] struct {
	to int
	v  T
}

// lockstep is the state of one randomized lockstep run.
type lockstep struct {
	m         *model
	r         *rand.Rand
	cfg       Config
	b         *Barrier
	nodes     []*lnode
	data      []dataMsg
	ctrl      []Report
	grants    []addressed[Grant]
	queries   []addressed[uint64]
	snaps     []State
	term      uint64
	failovers int
	// seen[w] is the first grant published for window w.
	seen map[uint64]Grant
	// log records what happened, for failure messages.
	log []string
}

func (ls *lockstep) logf(format string, args ...any) {
	ls.log = append(ls.log, fmt.Sprintf(format, args...))
}

func runLockstep(m *model) error {
	ls := &lockstep{
		m:    m,
		r:    rand.New(rand.NewPCG(m.seed, 0x7363686564)),
		cfg:  Config{Nodes: m.nodes, Lookahead: m.l, StopAt: m.stop, Term: 1},
		term: 1,
		seen: map[uint64]Grant{},
	}
	var err error
	if ls.b, err = New(ls.cfg); err != nil {
		return err
	}
	for n := range m.nodes {
		ls.nodes = append(ls.nodes, &lnode{
			id: n, f: NewFollower(n, 1), seq: m.firstSeq(n), nextWin: 1,
		})
	}
	for step := 0; ; step++ {
		if step > 1_000_000 {
			return fmt.Errorf("no progress after %d steps", step)
		}
		acted, err := ls.act()
		if err != nil {
			return fmt.Errorf("step %d: %w\n%s", step, err, ls.dump())
		}
		if !acted {
			break
		}
	}
	for _, n := range ls.nodes {
		if !n.f.Over() {
			return fmt.Errorf("stuck: node %d never got the finishing grant\n%s", n.id, ls.dump())
		}
	}
	var final Grant
	for _, g := range ls.seen {
		if g.Finished {
			final = g
		}
	}
	switch {
	case !m.samplers && m.stop == sim.Never && final.Reason != FinishIdle,
		m.samplers && m.stop == sim.Never && final.Reason != FinishAllDone,
		final.Reason == FinishStopTime && final.Start != m.stop:
		return fmt.Errorf("run finished with %+v", final)
	}
	want := m.reference()
	for i, n := range ls.nodes {
		if !slices.Equal(n.done, want[i]) {
			return fmt.Errorf("node %d processed\n%v\nwant (sequential reference)\n%v",
				i, n.done, want[i])
		}
	}
	return nil
}

func (ls *lockstep) dump() string {
	var b strings.Builder
	s := ls.b.State()
	const tail = 100
	fmt.Fprintf(&b, "last %d of %d actions:\n", min(tail, len(ls.log)), len(ls.log))
	for _, l := range ls.log[max(0, len(ls.log)-tail):] {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "barrier: term=%d phase=%v window=%d granted=%d have=%v pending=%t\n",
		s.Term, s.Phase, s.Window, s.Granted, s.Have, s.HasPending)
	for _, n := range ls.nodes {
		w, fin := n.f.Window()
		fmt.Fprintf(&b, "node %d: term=%d window=%d finished=%t over=%t\n",
			n.id, n.f.Term(), w, fin, n.f.Over())
	}
	return b.String()
}

// pick removes and returns a random element of *s.
func pick[T any](r *rand.Rand, s *[]T) T {
	i := r.IntN(len(*s))
	v := (*s)[i]
	*s = slices.Delete(*s, i, i+1)
	return v
}

// act performs one random enabled action; false when none is left.
func (ls *lockstep) act() (bool, error) {
	type action func() error
	var acts []action
	for _, n := range ls.nodes {
		if !n.setup {
			acts = append(acts, func() error { return ls.setup(n) })
		}
		if g, ok := n.f.Grant(); ok && n.f.ReadyToRun(g) {
			acts = append(acts, func() error { return ls.runWindow(n, g) })
		}
	}
	if _, ok := ls.b.Ready(); ok {
		acts = append(acts, ls.publish)
	}
	if len(ls.grants) > 0 {
		acts = append(acts, ls.deliverGrant)
	}
	if len(ls.data) > 0 {
		acts = append(acts, ls.deliverData)
	}
	if len(ls.ctrl) > 0 {
		acts = append(acts, ls.deliverReport)
	}
	if len(ls.queries) > 0 {
		acts = append(acts, ls.deliverQuery)
	}
	if len(acts) == 0 {
		return false, nil
	}
	switch {
	case ls.r.IntN(30) == 0:
		return true, ls.snapshot()
	case ls.failovers < ls.m.failovers && ls.r.IntN(60) == 0:
		return true, ls.failover()
	}
	return true, acts[ls.r.IntN(len(acts))]()
}

func (ls *lockstep) setup(n *lnode) error {
	n.setup = true
	for _, e := range ls.m.initial[n.id] {
		n.push(e)
	}
	if ls.m.samplers {
		n.push(ls.m.samplerStart(n.id))
	}
	next := sim.Never
	if len(n.q) > 0 {
		next = n.q[0].t
	}
	r, err := n.f.Finish(Report{NextEvent: next, MinSent: sim.Never,
		Sent: make([]uint32, ls.m.nodes), Done: !n.hasReal()})
	if err != nil {
		return err
	}
	ls.ctrl = append(ls.ctrl, r)
	ls.logf("node %d set up: %s", n.id, fmtReport(r))
	return nil
}

func (ls *lockstep) runWindow(n *lnode, g Grant) error {
	if g.Window != n.nextWin {
		return fmt.Errorf("node %d runs window %d, want %d", n.id, g.Window, n.nextWin)
	}
	n.nextWin++
	out := make([][]mEvent, ls.m.nodes)
	minSent := sim.Never
	for len(n.q) > 0 && n.q[0].t < g.End {
		e := n.q[0]
		n.q = n.q[1:]
		if e.t < g.Start {
			return fmt.Errorf("node %d window %d [%d,%d) holds event %v before its start",
				n.id, g.Window, g.Start, g.End, e)
		}
		if e.src != samplerSrc {
			n.done = append(n.done, e)
		}
		to, evs := ls.m.spawn(n.id, e, &n.seq)
		for i, c := range evs {
			if to[i] == n.id {
				n.push(c)
				continue
			}
			out[to[i]] = append(out[to[i]], c)
			minSent = min(minSent, c.t)
		}
	}
	n.ranTo = g.End
	sent := make([]uint32, ls.m.nodes)
	for to, evs := range out {
		// Split a batch in two now and then, to exercise the counts.
		for len(evs) > 0 {
			k := len(evs)
			if k > 1 && ls.r.IntN(2) == 0 {
				k = 1 + ls.r.IntN(k-1)
			}
			ls.data = append(ls.data, dataMsg{to: to, sentIn: g.Window, evs: evs[:k]})
			evs = evs[k:]
			sent[to]++
		}
	}
	next := sim.Never
	if len(n.q) > 0 {
		next = n.q[0].t
	}
	r, err := n.f.Finish(Report{NextEvent: next, MinSent: minSent, Sent: sent, Done: !n.hasReal()})
	if err != nil {
		return err
	}
	ls.ctrl = append(ls.ctrl, r)
	ls.logf("node %d ran window %d: %s", n.id, g.Window, fmtReport(r))
	return nil
}

func (ls *lockstep) publish() error {
	g, _ := ls.b.Ready()
	ls.b.Advance()
	ls.logf("publish %s", fmtGrant(g))
	if err := ls.checkGrant(g); err != nil {
		return err
	}
	for to := range ls.nodes {
		ls.grants = append(ls.grants, addressed[Grant]{to, g})
		if ls.r.IntN(10) == 0 {
			ls.grants = append(ls.grants, addressed[Grant]{to, g}) // duplicate
		}
	}
	return nil
}

// checkGrant checks a published grant against the others.
func (ls *lockstep) checkGrant(g Grant) error {
	same := func(a, b Grant) bool {
		return a.Window == b.Window && a.Start == b.Start && a.End == b.End &&
			slices.Equal(a.Expect, b.Expect) && a.Finished == b.Finished && a.Reason == b.Reason
	}
	if old, ok := ls.seen[g.Window]; ok {
		if !same(old, g) {
			return fmt.Errorf("grant %+v re-issued as %+v", old, g)
		}
		return nil
	}
	ls.seen[g.Window] = g
	if !g.Finished && (g.End <= g.Start || g.End-g.Start > ls.m.l || g.End > ls.m.stop) {
		return fmt.Errorf("bad window %+v (L=%d stop=%v)", g, ls.m.l, ls.m.stop)
	}
	if prev, ok := ls.seen[g.Window-1]; ok && g.Start < prev.End {
		return fmt.Errorf("window %+v starts before the previous end %d", g, prev.End)
	}
	return nil
}

func (ls *lockstep) deliverGrant() error {
	a := pick(ls.r, &ls.grants)
	ok, why := ls.nodes[a.to].f.Accept(a.v)
	ls.logf("node %d accept w=%d term=%d: %t %s", a.to, a.v.Window, a.v.Term, ok, why)
	return nil
}

func (ls *lockstep) deliverData() error {
	d := pick(ls.r, &ls.data)
	n := ls.nodes[d.to]
	if err := n.f.Receive(d.sentIn); err != nil {
		return err
	}
	for _, e := range d.evs {
		if e.t < n.ranTo {
			return fmt.Errorf("causality: node %d receives %v sent in window %d after running to %d",
				n.id, e, d.sentIn, n.ranTo)
		}
		n.push(e)
	}
	return nil
}

func (ls *lockstep) deliverReport() error {
	r := pick(ls.r, &ls.ctrl)
	err := ls.b.Step(r)
	ls.logf("step %s: %v", fmtReport(r), err)
	switch {
	case err == nil:
		return nil
	case ls.failovers > 0 && (errors.Is(err, ErrStale) || errors.Is(err, ErrDuplicate) ||
		errors.Is(err, ErrWrongWindow) || errors.Is(err, ErrFinished)):
		return nil // leftovers of a failover
	}
	return err
}

func (ls *lockstep) deliverQuery() error {
	q := pick(ls.r, &ls.queries)
	rs := ls.nodes[q.to].f.Resend(q.v)
	ls.ctrl = append(ls.ctrl, rs...)
	ls.logf("node %d resends %d reports in term %d", q.to, len(rs), q.v)
	return nil
}

// snapshot stores the barrier's state as raft would: msgpack-encoded.
func (ls *lockstep) snapshot() error {
	buf, err := msgpack.Marshal(ls.b.State())
	if err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	var s State
	if err := msgpack.Unmarshal(buf, &s); err != nil {
		return fmt.Errorf("decode snapshot: %w", err)
	}
	ls.snaps = append(ls.snaps, s)
	ls.logf("snapshot %d: phase=%v window=%d", len(ls.snaps)-1, s.Phase, s.Window)
	return nil
}

// failover replaces the barrier with a new leader's: restored from a random
// earlier snapshot (or none), in a new term. Its pending grant is lost;
// reports and grants in flight stay in flight.
func (ls *lockstep) failover() error {
	ls.failovers++
	b, err := New(ls.cfg)
	if err != nil {
		return err
	}
	if len(ls.snaps) > 0 && ls.r.IntN(4) != 0 {
		i := ls.r.IntN(len(ls.snaps))
		if err := b.Restore(ls.snaps[i]); err != nil {
			return err
		}
		ls.logf("failover: restore snapshot %d", i)
	}
	ls.term++
	b.SetTerm(ls.term)
	ls.b = b
	ls.logf("failover: term %d", ls.term)
	for to := range ls.nodes {
		ls.queries = append(ls.queries, addressed[uint64]{to, ls.term})
	}
	return nil
}
