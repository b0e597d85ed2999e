package barrier

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstep-sim/lockstep/sim"
)

// TestCausality_PeerProperty runs the random fabrics of
// TestCausality_Property the peer way (package doc, "Peers"): every node
// steps every node's reports into a replica of its own and accepts the
// grants it issues; there is no grant message. Reports travel FIFO per
// sender and receiver (as NATS delivers one publisher's messages to one
// subscriber), batches in any order. A node subscribes only when it sets
// up, so the window-0 reports published before that are lost to it, and
// the republish rule recovers them: a node that hears a peer's window-0
// report for the first time publishes its own again. An observer (the
// coordinator leader) follows the run from the reports too, loses some,
// and is replaced now and then by one restored from an old snapshot, which
// resynchronises and asks the nodes to resend their last reports (to
// everyone, as on NATS). It checks what TestCausality_Property checks,
// that every replica issues the same grant for a window, and that the
// observer's grants are the nodes' and it sees the finish.
func TestCausality_PeerProperty(t *testing.T) {
	seeds, first := *propertySeeds, *propertyFirst
	if testing.Short() {
		seeds = min(seeds, 100)
	}
	for seed := first; seed < first+seeds; seed++ {
		m := newModel(seed)
		if err := runPeers(m); err != nil {
			t.Fatalf("seed %d (%s): %v", seed, m, err)
		}
	}
}

type pnode struct {
	lnode
	bar        *Barrier
	subscribed bool
	heard0     []bool // heard a window-0 report from each peer
}

type peers struct {
	m   *model
	r   *rand.Rand
	cfg Config
	ns  []*pnode
	obs *Barrier
	// reports[from][to] is the FIFO of reports from node from to receiver
	// to (0..P-1 the nodes, P the observer).
	reports [][][]Report
	data    []dataMsg
	snaps   []State
	seen    map[uint64]Grant
	obsFin  bool
	stalls  int
	log     []string
}

func (ps *peers) logf(format string, args ...any) {
	ps.log = append(ps.log, fmt.Sprintf(format, args...))
}

func runPeers(m *model) error {
	ps := &peers{m: m, r: rand.New(rand.NewPCG(m.seed, 0x7065657273)),
		cfg: Config{Nodes: m.nodes, Lookahead: m.l, StopAt: m.stop, Peer: true}, seen: map[uint64]Grant{}}
	var err error
	if ps.obs, err = New(ps.cfg); err != nil {
		return err
	}
	ps.reports = make([][][]Report, m.nodes)
	for n := range m.nodes {
		b, err := New(ps.cfg)
		if err != nil {
			return err
		}
		ps.ns = append(ps.ns, &pnode{lnode: lnode{id: n, f: NewFollower(n, 0), seq: m.firstSeq(n), nextWin: 1},
			bar: b, heard0: make([]bool, m.nodes)})
		ps.reports[n] = make([][]Report, m.nodes+1)
	}
	for step := 0; ; step++ {
		if step > 1_000_000 {
			return fmt.Errorf("no progress after %d steps", step)
		}
		acted, err := ps.act()
		if err != nil {
			return fmt.Errorf("step %d: %w\n%s", step, err, ps.dump())
		}
		if !acted {
			break
		}
	}
	for _, n := range ps.ns {
		if !n.f.Over() {
			return fmt.Errorf("stuck: node %d never finished\n%s", n.id, ps.dump())
		}
	}
	if !ps.obsFin {
		return fmt.Errorf("the observer never saw the finish\n%s", ps.dump())
	}
	want := m.reference()
	for i, n := range ps.ns {
		if !slices.Equal(n.done, want[i]) {
			return fmt.Errorf("node %d processed\n%v\nwant (sequential reference)\n%v", i, n.done, want[i])
		}
	}
	return nil
}

func (ps *peers) dump() string {
	s := fmt.Sprintf("observer: phase=%v window=%d\n", ps.obs.Phase(), ps.obs.Window())
	for _, n := range ps.ns {
		w, fin := n.f.Window()
		s += fmt.Sprintf("node %d: window=%d finished=%t over=%t replica=%v/%d\n", n.id, w, fin, n.f.Over(), n.bar.Phase(), n.bar.Window())
	}
	for _, l := range ps.log[max(0, len(ps.log)-60):] {
		s += "  " + l + "\n"
	}
	return s
}

func (ps *peers) act() (bool, error) {
	var acts []func() error
	for _, n := range ps.ns {
		if !n.setup {
			acts = append(acts, func() error { return ps.setup(n) })
		}
		if g, ok := n.f.Grant(); ok && n.f.ReadyToRun(g) {
			acts = append(acts, func() error { return ps.run(n, g) })
		}
	}
	for from := range ps.reports {
		for to := range ps.reports[from] {
			if len(ps.reports[from][to]) > 0 {
				acts = append(acts, func() error { return ps.deliverReport(from, to) })
			}
		}
	}
	if len(ps.data) > 0 {
		acts = append(acts, ps.deliverData)
	}
	if len(acts) == 0 {
		if ps.obsFin || ps.stalls > 3 {
			return false, nil
		}
		// The leader's stall check: ask for the last reports again.
		ps.stalls++
		ps.logf("observer stalled: resend request")
		return true, ps.query(false)
	}
	switch {
	case ps.r.IntN(30) == 0:
		return true, ps.snapshot()
	case ps.r.IntN(80) == 0:
		return true, ps.replaceObserver()
	}
	return true, acts[ps.r.IntN(len(acts))]()
}

// broadcast publishes node from's report: its own replica steps it at
// once, everyone subscribed gets a copy (the observer always is).
func (ps *peers) broadcast(n *pnode, r Report) error {
	if err := ps.step(n, r); err != nil {
		return err
	}
	for to := range ps.m.nodes + 1 {
		if to < ps.m.nodes && (to == n.id || !ps.ns[to].subscribed) {
			continue
		}
		ps.reports[n.id][to] = append(ps.reports[n.id][to], r.clone())
	}
	return nil
}

// step feeds r to n's replica and accepts the grants it issues.
func (ps *peers) step(n *pnode, r Report) error {
	err := n.bar.Step(r)
	ps.logf("node %d steps %s: %v", n.id, fmtReport(r), err)
	if err != nil {
		if ignorable(n.bar, r, err) {
			return nil
		}
		return fmt.Errorf("node %d: %w", n.id, err)
	}
	for {
		g, ok := n.bar.Ready()
		if !ok {
			return nil
		}
		n.bar.Advance()
		if err := ps.checkGrant(g); err != nil {
			return err
		}
		if ok, why := n.f.Accept(g); !ok {
			return fmt.Errorf("node %d rejects its replica's grant %s: %s", n.id, fmtGrant(g), why)
		}
	}
}

// ignorable says a replica's error is a harmless copy: a duplicate, or a
// report for a window it has finished collecting.
func ignorable(b *Barrier, r Report, err error) bool {
	return errors.Is(err, ErrDuplicate) || errors.Is(err, ErrFinished) ||
		errors.Is(err, ErrWrongWindow) && r.Window < b.Window()
}

func (ps *peers) checkGrant(g Grant) error {
	if old, ok := ps.seen[g.Window]; ok {
		if old.Start != g.Start || old.End != g.End || !slices.Equal(old.Expect, g.Expect) || old.Finished != g.Finished || old.Reason != g.Reason {
			return fmt.Errorf("grant %s issued elsewhere as %s", fmtGrant(g), fmtGrant(old))
		}
		return nil
	}
	if prev, ok := ps.seen[g.Window-1]; g.Window > 1 && !ok {
		return fmt.Errorf("grant %s before any grant of window %d", fmtGrant(g), g.Window-1)
	} else if ok && g.Start < prev.End {
		return fmt.Errorf("window %s starts before the previous end %d", fmtGrant(g), prev.End)
	}
	if !g.Finished && (g.End <= g.Start || g.End-g.Start > ps.m.l || g.End > ps.m.stop) {
		return fmt.Errorf("bad window %s", fmtGrant(g))
	}
	ps.seen[g.Window] = g
	return nil
}

func (ps *peers) setup(n *pnode) error {
	n.setup, n.subscribed = true, true
	for _, e := range ps.m.initial[n.id] {
		n.push(e)
	}
	if ps.m.samplers {
		n.push(ps.m.samplerStart(n.id))
	}
	next := sim.Never
	if len(n.q) > 0 {
		next = n.q[0].t
	}
	r, err := n.f.Finish(Report{NextEvent: next, MinSent: sim.Never, Sent: make([]uint32, ps.m.nodes), Done: !n.hasReal()})
	if err != nil {
		return err
	}
	return ps.broadcast(n, r)
}

func (ps *peers) run(n *pnode, g Grant) error {
	// The lockstep harness's window runner, on the embedded lnode.
	ls := &lockstep{m: ps.m, r: ps.r}
	ls.nodes = []*lnode{&n.lnode}
	if err := ls.runWindow(&n.lnode, g); err != nil {
		return err
	}
	ps.data = append(ps.data, ls.data...)
	return ps.broadcast(n, ls.ctrl[0])
}

func (ps *peers) deliverData() error {
	d := pick(ps.r, &ps.data)
	n := ps.ns[d.to]
	if err := n.f.Receive(d.sentIn); err != nil {
		return err
	}
	for _, e := range d.evs {
		if e.t < n.ranTo {
			return fmt.Errorf("causality: node %d receives %v sent in window %d after running to %d", n.id, e, d.sentIn, n.ranTo)
		}
		n.push(e)
	}
	return nil
}

func (ps *peers) deliverReport(from, to int) error {
	q := &ps.reports[from][to]
	r := (*q)[0]
	*q = (*q)[1:]
	if to == ps.m.nodes {
		return ps.observe(r)
	}
	n := ps.ns[to]
	if r.Window == 0 && !n.heard0[from] {
		// The republish rule: from may have published before n
		// subscribed, so n may have missed its window-0 report; and n
		// may have published before from subscribed.
		n.heard0[from] = true
		if own := n.f.Last(); len(own) > 0 && own[0].Window == 0 {
			if err := ps.broadcast(n, own[0]); err != nil {
				return err
			}
		}
	}
	return ps.step(n, r)
}

// observe feeds the observer, which loses a report now and then (an
// outage) and resynchronises when a report shows it has fallen behind.
func (ps *peers) observe(r Report) error {
	if ps.r.IntN(25) == 0 {
		ps.logf("observer loses %s", fmtReport(r))
		return nil
	}
	b := ps.obs
	err := b.Step(r)
	if errors.Is(err, ErrWrongWindow) && b.Phase() == PhaseCollecting && r.Window > b.Window()+1 {
		ps.logf("observer at %d behind %s: resync", b.Window(), fmtReport(r))
		b.Resync()
		err = b.Step(r)
		if qerr := ps.query(true); qerr != nil {
			return qerr
		}
	}
	ps.logf("observer steps %s: %v", fmtReport(r), err)
	if err != nil && !ignorable(b, r, err) && !errors.Is(err, ErrStale) {
		if b.Phase() == PhaseResyncing || errors.Is(err, ErrWrongWindow) {
			return nil // leftovers around a resync
		}
		return fmt.Errorf("observer: %w", err)
	}
	for {
		g, ok := b.Ready()
		if !ok {
			return nil
		}
		b.Advance()
		if err := ps.checkGrant(g); err != nil {
			return fmt.Errorf("observer: %w", err)
		}
		if g.Finished {
			ps.obsFin = true
		}
	}
}

// query is the leader's resend request: every node that is set up
// publishes its last reports again (with its batches: none are lost here).
func (ps *peers) query(fromResync bool) error {
	if !fromResync && ps.obs.Phase() == PhaseCollecting {
		ps.obs.Resync()
	}
	for _, n := range ps.ns {
		if !n.setup {
			continue
		}
		for _, r := range n.f.Last() {
			for to := range ps.m.nodes + 1 {
				if to != n.id && (to == ps.m.nodes || ps.ns[to].subscribed) {
					ps.reports[n.id][to] = append(ps.reports[n.id][to], r.clone())
				}
			}
		}
	}
	return nil
}

func (ps *peers) snapshot() error {
	buf, err := msgpack.Marshal(ps.obs.State())
	if err != nil {
		return err
	}
	var s State
	if err := msgpack.Unmarshal(buf, &s); err != nil {
		return err
	}
	ps.snaps = append(ps.snaps, s)
	return nil
}

// replaceObserver is a leader failover: the new leader's observer starts
// from a random old snapshot (or from scratch), resynchronises and asks the
// nodes to resend.
func (ps *peers) replaceObserver() error {
	if ps.obsFin {
		return nil
	}
	b, err := New(ps.cfg)
	if err != nil {
		return err
	}
	if len(ps.snaps) > 0 && ps.r.IntN(4) != 0 {
		if err := b.Restore(ps.snaps[ps.r.IntN(len(ps.snaps))]); err != nil {
			return err
		}
	}
	b.Resync()
	ps.obs = b
	ps.logf("observer replaced at window %d", b.Window())
	return ps.query(true)
}
