package node

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// YieldEvents is how many events a node process's fabric runs between
// yields of the processor (NewPeerCore, fabric.YieldEvery): 25–75 µs of
// compute at a few million events a second, well under a NATS round trip,
// for a scheduler call each (docs/decisions.md, "A report stuck behind a
// window").
const YieldEvents = 256

// MaxBatchPackets bounds the packets in one batch message, so that a batch
// stays well under NATS's default 1 MiB payload limit (a packet encodes in
// at most about 200 bytes).
const MaxBatchPackets = 2048

// ErrBadBatch marks a batch message that cannot be delivered here: wrong
// destination, unknown link, a packet for an element of another partition,
// or one that would arrive before the window that injects it.
var ErrBadBatch = errors.New("node: bad batch")

// Core is one partition of a run: its fabric (only the partition's
// elements), the node's side of the barrier, and the batches received but
// not yet injected. It is the pure part of a node (docs/design.md §3, docs/style.md §3c):
// no I/O, no goroutines, no clock. A shell feeds it grants and batches and
// sends what it returns.
//
// The loop a shell runs: Setup once (window 0) and send its Output; then
// for every grant Accept it, Deliver batches as they come, and whenever
// Runnable, Run the window and send its Output. Over says the run ended.
//
// It is not safe for concurrent use.
type Core struct {
	part  int
	p     int
	F     *fabric.Fabric
	fol   *barrier.Follower
	limit sim.Time
	// dest[l] is the partition of link direction l's far end, or -1 when
	// the far end is local. Past the links, dest[NumLinks+e] is element
	// e's, for signals (sim.Engine.Signal) to it.
	dest []int32
	// inbox holds batches delivered and not yet injected; owned says the
	// core recycles the batch once injected (BatchBuffer).
	inbox []inBatch
	// free holds batches to decode into (BatchBuffer), freeOut packet
	// buffers for the batches Run sends: a window's are recycled when the
	// window two later has run (see Sent), so a run allocates no packet
	// buffers once warm.
	free    []*wire.Batch
	freeOut [][]sim.RemotePacket
	// bar is the node's replica of the barrier in a peer run (NewPeerCore;
	// coordinator/barrier package doc, "Peers"), nil when grants come from
	// a leader; w0 is the node's window-0 report, published again by the
	// republish rule; copies counts reports dropped as copies.
	bar    *barrier.Barrier
	w0     barrier.Report
	copies uint64
	// out collects the outbox by destination partition (scratch).
	out   [][]sim.RemotePacket
	stats CoreStats
	grant barrier.Grant // the last finishing grant (Over)
	// watch: the run searches for PFC deadlocks (reports carry the
	// partition's paused ports).
	watch bool
	// rec gathers the partition's part of the outputs.
	rec *results.Recorder
	// sent holds the batches of the last two windows run, oldest first,
	// for Sent (a resend after messages were lost in a NATS outage); seen
	// the batches delivered whose window is >= keepFrom, to drop
	// duplicates.
	sent     [2][]wire.Batch
	seen     map[batchKey]struct{}
	keepFrom uint64
	dups     uint64
	// end is the end of the last window run.
	end sim.Time
	// look is the lookahead; twoPhase says RunAhead may run the interior
	// elements' events between windows (EnableTwoPhase), aheadTo the time
	// it ran them to (0: not since the last window), aheadBy counts them
	// by element.
	look     sim.Time
	twoPhase bool
	aheadTo  sim.Time
	aheadN   uint64
	aheadBy  []uint64
	// done: the last report said the partition is done (barrier.Report
	// Done; no first phase after it).
	done bool
}

type inBatch struct {
	b     *wire.Batch
	owned bool
}

type batchKey struct {
	from   int32
	window uint64
	seq    uint32
}

// CoreStats count what a core did; all of it is a function of the run, not
// of the machine.
type CoreStats struct {
	Windows      uint64   // windows run
	EmptyWindows uint64   // windows in which no event ran
	Covered      sim.Time // summed window lengths
	Skipped      sim.Time // idle time the grants skipped
	BatchesOut   uint64
	BatchesIn    uint64
	PacketsOut   uint64
	PacketsIn    uint64
}

// Output is what a core hands its shell after a window: the batches to
// send (in this order) and the report for the barrier.
type Output struct {
	Batches []wire.Batch
	Report  barrier.Report
}

// NewCore builds partition part of the scenario b placed by pl, for a node
// that has seen raft term term.
func NewCore(b *scenario.Built, pl *partition.Placement, part int, term uint64) (*Core, error) {
	if part < 0 || part >= pl.P {
		return nil, fmt.Errorf("node: partition %d out of range 0..%d", part, pl.P-1)
	}
	if len(pl.Part) != len(b.Topo.Nodes) {
		return nil, fmt.Errorf("node: placement of %d nodes for a fabric of %d", len(pl.Part), len(b.Topo.Nodes))
	}
	cfg := b.Fabric
	cfg.Local = pl.Local(part)
	f, err := fabric.New(cfg)
	if err != nil {
		return nil, err
	}
	if l := f.ExternalLookahead(); l < pl.Lookahead {
		// A window longer than an external element's links allow would
		// let a packet it sends arrive inside the window it was sent in
		// (partition.WithExternal keeps the lookahead within it).
		return nil, fmt.Errorf("node: partition %d: lookahead %v, longer than the smallest delay %v of its external elements' links",
			part, pl.Lookahead, l)
	}
	c := &Core{part: part, p: pl.P, F: f, fol: barrier.NewFollower(part, term), limit: b.Limit(),
		dest: make([]int32, f.Engine().NumLinks()+f.Engine().NumElements()), out: make([][]sim.RemotePacket, pl.P), rec: results.NewRecorder(b, f),
		seen: make(map[batchKey]struct{}), watch: cfg.Watchdog() > 0, look: pl.Lookahead}
	for i := range f.Engine().NumLinks() {
		to := int(f.Engine().LinkTo(sim.LinkID(i)))
		c.dest[i] = -1
		if pl.Part[to] != part {
			c.dest[i] = int32(pl.Part[to])
		}
	}
	for el := range f.Engine().NumElements() {
		i := f.Engine().NumLinks() + el
		c.dest[i] = -1
		if pl.Part[el] != part {
			c.dest[i] = int32(pl.Part[el])
		}
	}
	return c, nil
}

// NewPeerCore is NewCore for a peer run: the core keeps a replica of the
// barrier, fed with every node's reports (Step, and its own as it makes
// them), and accepts the grants it issues itself. Terms stay 0. It is
// TwoPhase when the scenario and the partition allow (EnableTwoPhase).
// A peer core runs in a node process beside the goroutines of its NATS
// connection (and, when the node serves, its NATS server): its fabric
// yields the processor every YieldEvents events (fabric.YieldEvery), so
// that a report it published leaves while it computes.
func NewPeerCore(b *scenario.Built, pl *partition.Placement, part int) (*Core, error) {
	c, err := NewCore(b, pl, part, 0)
	if err != nil {
		return nil, err
	}
	c.F.YieldEvery(YieldEvents)
	cfg := BarrierConfig(b, pl)
	cfg.Peer = true
	if c.bar, err = barrier.New(cfg); err != nil {
		return nil, err
	}
	if _, err := c.EnableTwoPhase(b, pl); err != nil {
		return nil, err
	}
	return c, nil
}

// BarrierConfig is the barrier configuration of scenario b cut by pl.
func BarrierConfig(b *scenario.Built, pl *partition.Placement) barrier.Config {
	return barrier.Config{Nodes: pl.P, Lookahead: pl.Lookahead, StopAt: b.Limit(),
		DeadlockThreshold: b.Fabric.Watchdog(), DeadlockEvery: DeadlockEvery(b)}
}

// DeadlockEvery is the PFC deadlock search's grid period for b (0: no
// search): what the barrier and a single process use.
func DeadlockEvery(b *scenario.Built) sim.Time {
	if w := b.Fabric.Watchdog(); w > 0 {
		return fabric.DeadlockGrid(w)
	}
	return 0
}

// Partition is the core's partition index.
func (c *Core) Partition() int { return c.part }

// Stats returns the core's counters.
func (c *Core) Stats() CoreStats { return c.stats }

// Setup finishes the setup window 0 (barrier package doc): it reports the
// first event time. Building the fabric sends nothing.
func (c *Core) Setup() (Output, error) {
	r, err := c.fol.Finish(barrier.Report{NextEvent: c.F.NextEventTime(), MinSent: sim.Never,
		Sent: make([]uint32, c.p)})
	if err != nil {
		return Output{}, err
	}
	c.w0 = r
	if err := c.stepOwn(r); err != nil {
		return Output{}, err
	}
	return Output{Report: r}, nil
}

// stepOwn steps the node's own report into its replica (peer runs).
func (c *Core) stepOwn(r barrier.Report) error {
	if c.bar == nil {
		return nil
	}
	if err := c.bar.Step(r); err != nil {
		return fmt.Errorf("node %d: own report for window %d: %w", c.part, r.Window, err)
	}
	return c.takeGrants()
}

// Step feeds another node's report to the replica (peer runs) and accepts
// the grants it issues. A copy (a report resent or republished, or one for
// a window the replica has collected) changes nothing and is counted
// (Copies); any other report the barrier refuses is an error naming its
// node.
func (c *Core) Step(r barrier.Report) error {
	if c.bar == nil {
		return fmt.Errorf("node %d: a report of node %d, but grants come from the leader", c.part, r.Node)
	}
	if r.Node == c.part {
		return fmt.Errorf("node %d: a report in its own name", c.part)
	}
	if err := c.bar.Step(r); err != nil {
		if errors.Is(err, barrier.ErrDuplicate) || errors.Is(err, barrier.ErrFinished) ||
			errors.Is(err, barrier.ErrWrongWindow) && r.Window < c.bar.Window() {
			c.copies++
			return nil
		}
		return fmt.Errorf("node %d: report of node %d for window %d: %w", c.part, r.Node, r.Window, err)
	}
	return c.takeGrants()
}

func (c *Core) takeGrants() error {
	for {
		g, ok := c.bar.Ready()
		if !ok {
			return nil
		}
		c.bar.Advance()
		if ok, why := c.Accept(g); !ok {
			return fmt.Errorf("node %d: grant of window %d from its own replica refused: %s", c.part, g.Window, why)
		}
	}
}

// Copies counts the reports Step dropped as copies.
func (c *Core) Copies() uint64 { return c.copies }

// SetupReport is the node's window-0 report (valid after Setup): a peer
// publishes it again when it first hears another node's (barrier package
// doc, "Peers").
func (c *Core) SetupReport() barrier.Report { return c.w0 }

// LastReports are the node's last two reports as sent, for a resend
// request in a peer run.
func (c *Core) LastReports() []barrier.Report { return c.fol.Last() }

// BatchBuffer returns a batch to decode a message into and pass to
// DeliverOwned; the core recycles it once its packets are injected.
func (c *Core) BatchBuffer() *wire.Batch {
	if n := len(c.free); n > 0 {
		b := c.free[n-1]
		c.free = c.free[:n-1]
		return b
	}
	return &wire.Batch{}
}

func (c *Core) recycle(b *wire.Batch) { c.free = append(c.free, b) }

// Accept takes grant g if the follower does (barrier.Follower.Accept).
func (c *Core) Accept(g barrier.Grant) (bool, string) {
	ok, why := c.fol.Accept(g)
	if ok && g.Finished {
		c.grant = g
	}
	return ok, why
}

// Deliver records a batch received from another node. Its packets are
// checked now and injected when the window that needs them starts. A
// batch delivered twice (resent after an outage) is dropped and counted
// (Duplicates): it changes nothing.
func (c *Core) Deliver(b *wire.Batch) error { return c.deliver(b, false) }

// DeliverOwned is Deliver for a batch from BatchBuffer, which the core
// takes back (also on error).
func (c *Core) DeliverOwned(b *wire.Batch) error { return c.deliver(b, true) }

func (c *Core) deliver(b *wire.Batch, owned bool) (err error) {
	kept := false
	if owned {
		defer func() {
			if !kept {
				c.recycle(b)
			}
		}()
	}
	if int(b.To) != c.part || b.From < 0 || int(b.From) >= c.p || int(b.From) == c.part {
		return fmt.Errorf("%w: batch %d -> %d delivered to node %d of %d", ErrBadBatch, b.From, b.To, c.part, c.p)
	}
	k := batchKey{from: b.From, window: b.Window, seq: b.Seq}
	if _, dup := c.seen[k]; dup || b.Window < c.keepFrom {
		// Below keepFrom the window that needed it has run, with every
		// batch it expected: this is a copy.
		c.dups++
		return nil
	}
	e := c.F.Engine()
	for i := range b.Packets {
		rp := &b.Packets[i]
		if e.IsSignal(rp) {
			if int(rp.Link) >= len(c.dest) || c.dest[rp.Link] != -1 || rp.Pkt.SrcHost < 0 ||
				int(rp.Pkt.SrcHost) >= e.NumElements() || e.Local(sim.ElemID(rp.Pkt.SrcHost)) {
				return fmt.Errorf("%w: node %d window %d: signal on pseudo link %d does not cross into partition %d",
					ErrBadBatch, b.From, b.Window, rp.Link, c.part)
			}
			continue
		}
		if rp.Link < 0 || int(rp.Link) >= len(c.dest) || c.dest[rp.Link] != -1 ||
			!e.Local(e.LinkTo(rp.Link)) || e.Local(e.LinkFrom(rp.Link)) {
			return fmt.Errorf("%w: node %d window %d: packet on link %d does not cross into partition %d",
				ErrBadBatch, b.From, b.Window, rp.Link, c.part)
		}
	}
	if err := c.fol.Receive(b.Window); err != nil {
		return err
	}
	c.seen[k] = struct{}{}
	c.inbox = append(c.inbox, inBatch{b, owned})
	kept = true
	c.stats.BatchesIn++
	return nil
}

// Runnable says the accepted grant's window may run now: every batch it
// needs has arrived.
func (c *Core) Runnable() bool {
	g, ok := c.fol.Grant()
	return ok && c.fol.ReadyToRun(g)
}

// Over says the core accepted the finishing grant, and Final returns it.
func (c *Core) Over() bool { return c.fol.Over() }

// Final is the finishing grant (valid once Over).
func (c *Core) Final() barrier.Grant { return c.grant }

// Resend answers a new leader of term term (barrier.Follower.Resend).
func (c *Core) Resend(term uint64) []barrier.Report { return c.fol.Resend(term) }

// Window is the last accepted window and whether it has run.
func (c *Core) Window() (uint64, bool) { return c.fol.Window() }

// Start is the start of the last accepted window (0 before any).
func (c *Core) Start() sim.Time { return c.fol.Start() }

// Run runs the accepted window. Precondition: Runnable.
//
// It first injects, in a partition-independent order, every batch sent
// before this window: sorted by (window, sender, seq), so the packets of
// each link go in in the order they were sent, as sim.Engine.Inject
// requires. Batches sent during this window by nodes that are ahead stay
// in the inbox.
func (c *Core) Run() (Output, error) {
	g, ok := c.fol.Grant()
	if !ok || !c.fol.ReadyToRun(g) {
		return Output{}, fmt.Errorf("node %d: window not runnable", c.part)
	}
	slices.SortFunc(c.inbox, func(x, y inBatch) int {
		a, b := x.b, y.b
		return cmp.Or(cmp.Compare(a.Window, b.Window), cmp.Compare(a.From, b.From), cmp.Compare(a.Seq, b.Seq))
	})
	e := c.F.Engine()
	k := 0
	for ; k < len(c.inbox) && c.inbox[k].b.Window < g.Window; k++ {
		b := c.inbox[k].b
		for i := range b.Packets {
			rp := &b.Packets[i]
			if rp.At < g.Start {
				return Output{}, fmt.Errorf("%w: node %d window %d: packet on link %d arrives at %v, before window %d starts at %v",
					ErrBadBatch, b.From, b.Window, rp.Link, rp.At, g.Window, g.Start)
			}
			if e.IsSignal(rp) {
				e.InjectSignal(rp)
				continue
			}
			e.Inject(rp)
		}
		c.stats.PacketsIn += uint64(len(b.Packets))
		if c.inbox[k].owned {
			c.recycle(b)
		}
		c.inbox[k] = inBatch{}
	}
	c.inbox = c.inbox[:copy(c.inbox, c.inbox[k:])]

	// Keep the keys of batches that windows g.Window-1 and later need.
	if g.Window >= 2 {
		c.keepFrom = g.Window - 2
		for k := range c.seen {
			if k.window < c.keepFrom {
				delete(c.seen, k)
			}
		}
	}

	// The window's events, then the external elements' step (their
	// departures are in the outbox or the engine by its end).
	if c.aheadTo > g.End {
		// RunAhead's bound holds whatever the grant (E_{k+1} >= E_k + L),
		// unless the barrier or the core is broken.
		panic(fmt.Sprintf("node %d: window %d [%v, %v) ends before the events run ahead of it, to %v",
			c.part, g.Window, g.Start, g.End, c.aheadTo))
	}
	n, err := c.F.RunWindow(g.Start, g.End)
	if err != nil {
		return Output{}, err // the shell names the partition
	}
	n += c.aheadN // the window's events, wherever they ran
	c.end, c.aheadTo, c.aheadN = g.End, 0, 0
	c.stats.Windows++
	c.stats.Covered += g.Len()
	c.stats.Skipped += g.Idle
	if n == 0 {
		c.stats.EmptyWindows++
	}

	var out Output
	sent := make([]uint32, c.p)
	minSent := sim.Never
	for j := range c.out {
		c.out[j] = c.out[j][:0]
	}
	for _, rp := range e.Outbox() {
		j := c.dest[rp.Link]
		c.out[j] = append(c.out[j], rp)
		minSent = min(minSent, rp.At)
	}
	e.ResetOutbox()
	for j, pkts := range c.out {
		for seq := uint32(0); len(pkts) > 0; seq++ {
			m := min(len(pkts), MaxBatchPackets)
			var buf []sim.RemotePacket
			if n := len(c.freeOut); n > 0 {
				buf, c.freeOut = c.freeOut[n-1], c.freeOut[:n-1]
			}
			out.Batches = append(out.Batches, wire.Batch{From: int32(c.part), To: int32(j), Window: g.Window, Seq: seq,
				Packets: append(buf[:0], pkts[:m]...)})
			pkts = pkts[m:]
			sent[j]++
			c.stats.BatchesOut++
			c.stats.PacketsOut += uint64(m)
		}
	}
	rep := barrier.Report{NextEvent: c.F.NextEventTime(), MinSent: minSent, Sent: sent}
	if c.watch {
		rep.PausedAt, rep.Paused = g.End, c.F.PausedPorts(g.End)
	}
	r, err := c.fol.Finish(rep)
	if err != nil {
		return Output{}, err
	}
	out.Report = r
	c.done = r.Done
	// The batches of window g.Window-2 are injected everywhere by now
	// (see Sent): their buffers can go round again.
	for _, b := range c.sent[0] {
		c.freeOut = append(c.freeOut, b.Packets)
	}
	c.sent[0], c.sent[1] = c.sent[1], out.Batches
	if err := c.stepOwn(r); err != nil {
		return Output{}, err
	}
	return out, nil
}

// EnableTwoPhase lets RunAhead run, between windows, the events of the
// partition's interior elements that no packet of the window just ended
// can reach (docs/decisions.md, "Two-phase windows"): the engine's queue
// is split by partition.Border. It reports whether it did: not when the
// scenario turns it off (placement.two_phase: false), nothing is cut,
// every element is a border one, the PFC deadlock search reads the whole
// partition's state at window ends, or external elements are local (they
// are stepped at window ends). Call it before Setup.
func (c *Core) EnableTwoPhase(b *scenario.Built, pl *partition.Placement) (bool, error) {
	if !b.Scenario.Placement.TwoPhaseOrDefault() || pl.P < 2 || c.watch || c.F.HasExternal() || c.look <= 0 || c.look == sim.Never {
		return false, nil
	}
	border, err := partition.Border(b.Topo, b.Fabric.Impairments, b.Fabric.Flows, b.Fabric.Tasks, pl, c.part)
	if err != nil || border == nil {
		return false, err
	}
	interior := 0
	for el, in := range pl.Part {
		if in == c.part && !border[el] {
			interior++
		}
	}
	if interior == 0 {
		return false, nil
	}
	c.F.Engine().SplitQueue(border)
	c.twoPhase = true
	c.aheadBy = make([]uint64, len(border))
	return true, nil
}

// TwoPhase says EnableTwoPhase split the partition.
func (c *Core) TwoPhase() bool { return c.twoPhase }

// AheadBy counts, by element, the events RunAhead ran (nil unless
// TwoPhase).
func (c *Core) AheadBy() []uint64 { return c.aheadBy }

// RunAhead is the first phase of the next window, run while the node
// waits for its grant: the events of the interior elements before the
// last window's end plus the lookahead (and before the run's limit). A
// packet of the window that ended reaches a border element at or after
// its end E, and an interior element no earlier than E + L; the next
// window ends at or after E + L. So these events are the next window's,
// as they would run in it: the window (Run) goes on with the rest. The
// report of the window that ended is already made. It returns the events
// it ran (0 when the core is not TwoPhase, its last report said it is
// done, or the run is over). Calling it
// again before the next window does nothing more.
func (c *Core) RunAhead() uint64 {
	if !c.twoPhase || c.fol.Over() || c.done {
		return 0
	}
	// c.end is the end of the last window run (0 before the first: no
	// packet is in flight then).
	h := c.limit
	if c.end <= sim.Never-c.look {
		h = min(c.end+c.look, c.limit)
	}
	if h <= c.aheadTo {
		return 0
	}
	c.aheadTo = h
	n := c.F.RunInterior(h, c.aheadBy)
	c.aheadN += n
	return n
}

// Sent returns the batches of the last two windows run, oldest first: the
// only ones another node may still be waiting for (window w+2 is granted
// only after every node ran w+1, for which it needed the batches of w).
// Resending them is harmless: Deliver drops copies.
func (c *Core) Sent() []wire.Batch {
	return append(slices.Clip(c.sent[0]), c.sent[1]...)
}

// Duplicates counts the batches Deliver dropped as copies.
func (c *Core) Duplicates() uint64 { return c.dups }
