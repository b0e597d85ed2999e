package sim

import (
	"fmt"
	"math/rand/v2"
	"unsafe"

	"github.com/lockstep-sim/lockstep/internal/prefetch"
)

// Stats count what an engine did.
type Stats struct {
	Events    uint64 // every event handed to an element
	Arrivals  uint64 // packet arrivals at an element
	Timers    uint64 // timers, including transmit completions
	Sent      uint64 // packets put on a wire (Transmit calls)
	LinkLost  uint64 // packets lost on a wire (impairments, link down)
	Injected  uint64 // packets received from other partitions
	Exported  uint64 // packets sent to other partitions
	PeakQueue int    // largest event queue length seen
}

// RemotePacket is a packet that crosses a cut link: it arrives at the far
// end of Link at At, with the sender's event sequence number Seq.
type RemotePacket struct {
	Link LinkID
	At   Time
	Seq  uint64
	Pkt  Packet
	// Tel is the packet's telemetry when the pool keeps it (nil otherwise).
	Tel *Telemetry
}

type elemState struct {
	rng   *rand.Rand
	local bool
	// border: the element's events go to the border queue (SplitQueue).
	border bool
}

// Engine owns the event queue, the packet pool and the links of one
// partition. It is single-threaded and does no I/O.
type Engine struct {
	now  Time
	q    eventQueue
	Pool Pool
	// Links holds every link direction by LinkID: the state of a direction
	// with an end in this partition, nil for the others (a partition holds
	// only its share of the links).
	Links []*Link
	// dense is the links' storage indexed by id when this partition
	// holds every direction (one process): the engine reads a link
	// without the pointer of Links (at k=74 a 4.8 MB array). Nil
	// otherwise.
	dense []Link
	// slots holds the first wireSlots packets of each held link's wire,
	// from Link.slot on: a wire's packets are apart from its Link, and
	// beside other wires', in one slab.
	slots []inflight
	ends  []linkEnds // every direction's ends, local or not
	elems []elemState
	// seq is every element's event counter, apart from elemState: every
	// transmission takes two numbers, and 8 bytes per element stay in the
	// caches better than 24.
	seq    []uint64
	outbox []RemotePacket
	direct int // per-packet arrival events in the queue
	// signalsOut counts the signals in the outbox (they are not packets).
	signalsOut int
	Stats      Stats
	tels       telArena // telemetry of exported packets
	// inPort is the current arrival's port at its element (ArrivalPort).
	inPort int32
	// cur is the ordering key of the event being processed (At is now):
	// TxPassed compares an elided transmit-done with it.
	cur Event
	// lazy counts the links with an elided transmit-done pending.
	lazy int
	// OnLazyDone, when set, is called when Next passes a window's end with
	// an elided transmit-done of link id before it (TransmitLazy): the
	// owner applies its completion, as if TxPassed had returned true.
	OnLazyDone func(id LinkID)
	// split: the events of border elements wait in qb, the others' in q
	// (SplitQueue); ahead is the latest time StepInterior reached, which
	// Now returns to when a window ends.
	split bool
	qb    eventQueue
	ahead Time
}

// NewEngine builds an engine for a fabric of numElems elements and the given
// link directions. local reports whether an element belongs to this
// partition (nil: all do). Elements and links draw from streams seeded from
// (seed, id).
func NewEngine(seed uint64, numElems int, links []LinkSpec, local func(ElemID) bool) (*Engine, error) {
	e := &Engine{elems: make([]elemState, numElems), seq: make([]uint64, numElems), Links: make([]*Link, len(links)), ends: make([]linkEnds, len(links))}
	for i := range e.elems {
		id := ElemID(i)
		e.elems[i].local = local == nil || local(id)
		if e.elems[i].local {
			e.elems[i].rng = NewRand(seed, StreamElement+uint64(i))
		}
	}
	held := 0
	for i, s := range links {
		if s.From < 0 || int(s.From) >= numElems || s.To < 0 || int(s.To) >= numElems {
			return nil, fmt.Errorf("link %d: element out of range (%d -> %d of %d)", i, s.From, s.To, numElems)
		}
		e.ends[i] = linkEnds{from: s.From, to: s.To}
		if e.elems[s.From].local || e.elems[s.To].local {
			held++
		}
	}
	store := make([]Link, held)
	if held == len(links) {
		e.dense = store // every direction is held, in id order
	}
	e.slots = make([]inflight, held*wireSlots)
	slot := int32(0)
	for i, s := range links {
		if !e.elems[s.From].local && !e.elems[s.To].local {
			continue
		}
		if s.Rate <= 0 {
			return nil, fmt.Errorf("link %d: rate must be positive, got %d bit/s", i, s.Rate)
		}
		if s.Delay < 0 {
			return nil, fmt.Errorf("link %d: delay must not be negative, got %v", i, s.Delay)
		}
		l := &store[0]
		store = store[1:]
		e.Links[i] = l
		l.slot = slot
		slot += wireSlots
		l.Spec = s
		l.from, l.to = s.From, s.To
		l.toPort = int32(s.ToPort)
		l.rate = s.Rate
		l.psPerByte = exactPsPerByte(s.Rate)
		l.delay = s.Delay
		l.remote = !e.elems[s.To].local
		if im := s.Impair; im != nil {
			l.impaired = true
			l.rng = NewRand(seed, StreamLink+uint64(i))
			l.loss = im.Loss
			l.perPacket = im.Jitter > 0 || im.ReorderProb > 0
			for _, c := range im.Schedule {
				// A shorter delay lets a later packet overtake an earlier
				// one, so the wire is no longer FIFO.
				if c.Kind == ChangeDelay {
					l.perPacket = true
				}
			}
		}
	}
	return e, nil
}

// prefetch asks for what the events a few places ahead of q's front (in
// the current slot, which is sorted) will read first in the engine. Eight
// ahead: the arriving packet and its link; four ahead, the wire slot of
// the packet behind it on the link, whose line came in four events
// earlier. (The fabric asks for the elements' state: Ahead.) A fabric
// that has left the caches misses on each of these (docs/decisions.md,
// "Prefetching the next events"); a prefetch overlaps the miss with the
// events in between. It reads nothing the program sees and never
// faults, so a guess that turns out wrong (the link moved on) costs only
// a line.
func (e *Engine) prefetch(q *eventQueue) {
	if n := q.ahead(8); n != nil && n.Kind == EvArrive {
		prefetch.Two(uintptr(unsafe.Pointer(e.Pool.Get(n.Pkt))), uintptr(unsafe.Pointer(e.link(LinkID(n.Arg)))))
	}
	if n := q.ahead(4); n != nil && n.Kind == EvArrive && n.ring {
		if l := e.link(LinkID(n.Arg)); l.wn > 1 {
			s := uintptr(unsafe.Pointer(&e.slots[l.slot+int32((l.wh+1)&(wireSlots-1))]))
			prefetch.Two(s, s)
		}
	}
}

// Ahead is the event k places behind the next one in the current time
// slot, or nil when the slot holds fewer: for prefetching only (the
// events before it may still push earlier ones). With the queue split
// (SplitQueue) it looks in the interior elements' queue only, a guess:
// Step takes from both.
func (e *Engine) Ahead(k int) *Event { return e.q.ahead(k) }

// link is the state of link direction id (held here).
func (e *Engine) link(id LinkID) *Link {
	if e.dense != nil {
		return &e.dense[id]
	}
	return e.Links[id]
}

// linkEnds are a link direction's two elements.
type linkEnds struct{ from, to ElemID }

// NumLinks is the number of link directions of the whole fabric.
func (e *Engine) NumLinks() int { return len(e.ends) }

// LinkFrom is the element link direction id leaves, whether or not this
// partition holds the direction's state.
func (e *Engine) LinkFrom(id LinkID) ElemID { return e.ends[id].from }

// LinkTo is the element link direction id reaches, whether or not this
// partition holds the direction's state.
func (e *Engine) LinkTo(id LinkID) ElemID { return e.ends[id].to }

// Now is the time of the event being processed.
func (e *Engine) Now() Time { return e.now }

// Local reports whether element id lives in this partition.
func (e *Engine) Local(id ElemID) bool { return e.elems[id].local }

// NumElements is the number of elements of the whole fabric.
func (e *Engine) NumElements() int { return len(e.elems) }

// Rand is element id's own random stream.
func (e *Engine) Rand(id ElemID) *rand.Rand { return e.elems[id].rng }

// NewPacketID returns a run-unique packet id created by element id.
func (e *Engine) NewPacketID(id ElemID) uint64 {
	e.seq[id]++
	return uint64(id)<<40 | e.seq[id]&(1<<40-1)
}

func (e *Engine) nextSeq(id ElemID) uint64 {
	e.seq[id]++
	return e.seq[id]
}

func (e *Engine) push(ev Event) {
	if e.split {
		e.pushSplit(ev)
		return
	}
	e.q.push(ev)
	if n := e.q.Len(); n > e.Stats.PeakQueue {
		e.Stats.PeakQueue = n
	}
}

// pushSplit is push with the queue split (SplitQueue).
func (e *Engine) pushSplit(ev Event) {
	e.queueOf(ev.Dst).push(ev)
	if n := e.q.Len() + e.qb.Len(); n > e.Stats.PeakQueue {
		e.Stats.PeakQueue = n
	}
}

// queueOf is the queue of element id's events.
func (e *Engine) queueOf(id ElemID) *eventQueue {
	if e.split && e.elems[id].border {
		return &e.qb
	}
	return &e.q
}

// Schedule arms a timer: element id receives an EvTimer event at `at` with
// arg and pkt. Precondition: at >= Now().
func (e *Engine) Schedule(id ElemID, at Time, arg int64, pkt PktRef) {
	if at < e.now {
		panic(fmt.Sprintf("sim: element %d schedules a timer at %v, before now %v", id, at, e.now))
	}
	e.push(Event{At: at, Dst: id, Src: id, Seq: e.nextSeq(id), Kind: EvTimer, Arg: arg, Pkt: pkt})
}

// Transmit starts serialising packet p onto link id at Now(). The owner gets
// EvTxDone when the transmitter is idle again; the far end gets EvArrive when
// the last bit has arrived, unless an impairment loses the packet (then it
// is freed here). Precondition: the link is idle (BusyUntil() <= Now()).
// It returns the time serialisation ends.
func (e *Engine) Transmit(id LinkID, p PktRef) Time {
	return e.TransmitFrom(id, p, e.now)
}

// TransmitFrom is Transmit with serialisation that began at start <= Now():
// a cut-through switch that decides, when a packet's last bit arrives, that
// its transmission began when the header arrived. Preconditions: the link
// was idle at start (BusyUntil() <= start), and serialisation ends no
// earlier than Now(), so no event lands in the past and a packet sent to
// another partition still arrives at least the link's delay after Now()
// (the lookahead holds).
func (e *Engine) TransmitFrom(id LinkID, p PktRef, start Time) Time {
	return e.transmit(id, p, start, e.Pool.Get(p).Size, false)
}

// TransmitLazy is TransmitFrom with no EvTxDone event (a "lazy" transmit
// done), for an owner whose queue is empty when the packet starts: most
// completions then have nothing to start, and cost no event. The
// completion keeps its place in the order of events, the key (end,
// owner, owner, sequence number) it would have had: before the owner
// looks at the transmitter again it calls TxPassed, which reports
// whether that key is before the current event's (then the owner applies
// the completion itself), and if it must wait for the completion (it
// queues a packet), Materialize pushes the event with its original key.
// An elided completion counts in Stats as the event it stands for when it
// passes (TxPassed, or the end of a window in Next, which calls
// OnLazyDone). Preconditions: those of TransmitFrom, and the owner
// applies nothing at the completion but what it can apply later.
func (e *Engine) TransmitLazy(id LinkID, p PktRef, start Time) Time {
	return e.transmit(id, p, start, e.Pool.Get(p).Size, true)
}

// TransmitSize is TransmitFrom (lazy false) or TransmitLazy (lazy true)
// of a packet whose size the owner knows (it keeps the sizes beside its
// queue): the engine then does not read the packet, which has often left
// the cache while it waited. Precondition: size is the packet's Size.
func (e *Engine) TransmitSize(id LinkID, p PktRef, start Time, size int32, lazy bool) Time {
	return e.transmit(id, p, start, size, lazy)
}

// TxPassed reports whether the elided transmit-done of link id
// (TransmitLazy) is past: ordered before the event being processed (it
// then counts it and forgets it), or already passed at the end of a
// window (Next). The owner then applies the completion. It returns false
// while the completion is ahead. Precondition: the owner's last transmit
// on id was lazy, and it has not materialised its completion.
func (e *Engine) TxPassed(id LinkID) bool {
	l := e.link(id)
	if l.lazySeq == 0 {
		return true
	}
	if l.busyUntil > e.now {
		return false
	}
	if l.busyUntil == e.now {
		from := l.from
		done := Event{At: l.busyUntil, Dst: from, Src: from, Seq: l.lazySeq}
		if !done.Before(&e.cur) {
			return false
		}
	}
	l.lazySeq = 0
	e.lazy--
	e.Stats.Events++
	e.Stats.Timers++
	return true
}

// Materialize pushes the EvTxDone event of link id's elided transmit-done,
// if one is pending, with the key it would have had. The owner calls it
// when it queues a packet behind the transmitter (after TxPassed returned
// false).
func (e *Engine) Materialize(id LinkID) {
	l := e.link(id)
	if l.lazySeq == 0 {
		return
	}
	from := l.from
	e.push(Event{At: l.busyUntil, Dst: from, Src: from, Seq: l.lazySeq, Kind: EvTxDone, Arg: int64(id)})
	l.lazySeq = 0
	e.lazy--
}

// passLazy passes the elided transmit-dones before horizon, when no event
// before it is left: counts them, moves the clock to the last of them (as
// their events would have) and tells the owners (OnLazyDone).
func (e *Engine) passLazy(horizon Time, interior bool) {
	for i, l := range e.Links {
		if l == nil || l.lazySeq == 0 || l.busyUntil >= horizon || interior && e.elems[l.from].border {
			continue
		}
		l.lazySeq = 0
		e.lazy--
		e.Stats.Events++
		e.Stats.Timers++
		if l.busyUntil > e.now {
			e.now = l.busyUntil
		}
		if e.OnLazyDone != nil {
			e.OnLazyDone(LinkID(i))
		}
		if e.lazy == 0 {
			break
		}
	}
	e.cur = afterAll
}

// afterAll is a current-event key after every event at its time (between
// events: after Next returned false, or SetNow).
var afterAll = Event{Dst: 1<<31 - 1, Src: 1<<31 - 1, Seq: 1<<64 - 1}

func (e *Engine) transmit(id LinkID, p PktRef, start Time, size int32, lazy bool) Time {
	l := e.link(id)
	if l.busyUntil > start || start > e.now {
		panic(fmt.Sprintf("sim: link %d transmits from %v at %v while busy until %v", id, start, e.now, l.busyUntil))
	}
	if l.impaired {
		l.advance(start)
	}
	end := start + l.txTime(size)
	if end < e.now {
		panic(fmt.Sprintf("sim: link %d: a transmission from %v ends at %v, before now %v", id, start, end, e.now))
	}
	l.busyUntil = end
	l.TxBytes += uint64(size)
	e.Stats.Sent++
	from := l.from
	if lazy {
		l.lazySeq = e.nextSeq(from)
		e.lazy++
	} else {
		e.push(Event{At: end, Dst: from, Src: from, Seq: e.nextSeq(from), Kind: EvTxDone, Arg: int64(id)})
	}

	arrive := end + l.delay
	lost := false
	if l.impaired {
		if l.lose() {
			lost = true
			l.LostRandom++
		}
		arrive += l.extraDelay()
		if !lost && (l.down || l.goesDownBy(arrive)) {
			lost = true
			l.LostDown++
		}
	}
	seq := e.nextSeq(from)
	if lost {
		e.Stats.LinkLost++
		e.Pool.Free(p)
		return end
	}
	// The packet's Hops counts this link when it arrives (Next), so that
	// a packet that waited in a queue is not read here.
	switch {
	case l.remote:
		e.export(id, arrive, seq, p, e.Pool.Get(p))
	case l.perPacket:
		e.direct++
		e.push(Event{At: arrive, Dst: l.to, Src: from, Seq: seq, Kind: EvArrive, Arg: int64(id), Pkt: p})
	default:
		e.enqueueWire(id, l, inflight{at: arrive, seq: seq, pkt: p})
	}
	return end
}

// export puts packet p, bound for another partition, in the outbox with
// its telemetry, and frees its slot.
func (e *Engine) export(id LinkID, arrive Time, seq uint64, p PktRef, pkt *Packet) {
	e.outbox = append(e.outbox, RemotePacket{Link: id, At: arrive, Seq: seq, Pkt: *pkt})
	if e.Pool.tel != nil {
		e.outbox[len(e.outbox)-1].Tel = e.tels.clone(e.Pool.Telemetry(p))
	}
	e.Stats.Exported++
	e.Pool.Free(p)
}

// enqueueWire puts a packet on a FIFO wire; only the head has an event.
func (e *Engine) enqueueWire(id LinkID, l *Link, f inflight) {
	if l.wn < wireSlots {
		// The spill is empty: it holds packets only while the slots are
		// full.
		e.slots[l.slot+int32((l.wh+l.wn)&(wireSlots-1))] = f
		l.wn++
	} else {
		if l.spill == nil {
			l.spill = &Ring[inflight]{}
		}
		l.spill.Push(f)
	}
	if l.wn == 1 {
		e.push(Event{At: f.at, Dst: l.to, Src: l.from, Seq: f.seq, Kind: EvArrive, Arg: int64(id), Pkt: f.pkt, ring: true})
	}
}

// Next pops the next event with At < horizon and makes it current. It
// returns false when there is none.
func (e *Engine) Next(horizon Time) (Event, bool) {
	ev := e.Step(horizon)
	if ev == nil {
		return Event{}, false
	}
	return *ev, true
}

// Step is Next without the copy: it returns the current event, which
// stays valid (and unchanged) until the next Step, Next or SetNow, or nil
// when no event is before horizon. The fabric's loop takes every event
// this way.
func (e *Engine) Step(horizon Time) *Event {
	if e.split {
		return e.stepSplit(horizon)
	}
	top := e.q.first()
	if top == nil || top.At >= horizon {
		if e.lazy > 0 {
			e.passLazy(horizon, false)
		}
		return nil
	}
	e.cur = *top
	e.q.popFirst()
	return e.take(&e.q)
}

// stepSplit is Step with the queue split: the earlier of the two queues'
// first events (SplitQueue).
func (e *Engine) stepSplit(horizon Time) *Event {
	q := &e.q
	top := e.q.first()
	if b := e.qb.first(); b != nil && (top == nil || b.Before(top)) {
		q, top = &e.qb, b
	}
	if top == nil || top.At >= horizon {
		if e.lazy > 0 {
			e.passLazy(horizon, false)
		}
		// The window ended: the clock is where the events before it,
		// those StepInterior ran included, left it.
		if e.ahead > e.now {
			e.now = e.ahead
		}
		e.ahead = 0
		return nil
	}
	e.cur = *top
	q.popFirst()
	return e.take(q)
}

// SplitQueue divides the events by their element: those of the elements
// border says are border elements (border[id], indexed by ElemID) wait in
// a queue of their own, which StepInterior leaves alone; Step takes from
// both in key order, so nothing else changes. The events pending move
// to their queue. A nil border joins the queues again.
func (e *Engine) SplitQueue(border []bool) {
	var pending []Event
	for e.q.Len() > 0 {
		pending = append(pending, e.q.pop())
	}
	for e.qb.Len() > 0 {
		pending = append(pending, e.qb.pop())
	}
	// Fresh queues: one whose slots moved past the pending events would
	// keep them all in its side heap.
	e.q = eventQueue{shift: e.q.shift, slots: e.q.slots}
	e.qb = eventQueue{shift: e.q.shift, slots: e.q.slots}
	for i := range e.elems {
		e.elems[i].border = i < len(border) && border[i]
	}
	e.split = border != nil
	for _, ev := range pending {
		e.queueOf(ev.Dst).push(ev)
	}
}

// StepInterior is Step for the interior elements only (SplitQueue): the
// next event before horizon of an element that is not a border element,
// or nil when there is none; then it passes the interior elements' elided
// transmit-dones before horizon, as the end of a window does. Between a
// window and the next, a node runs what no packet of the window it ended
// can reach yet (node.Core.RunAhead). Precondition: SplitQueue.
func (e *Engine) StepInterior(horizon Time) *Event {
	if !e.split {
		panic("sim: StepInterior without SplitQueue")
	}
	top := e.q.first()
	if top == nil || top.At >= horizon {
		if e.lazy > 0 {
			e.passLazy(horizon, true)
		}
		e.ahead = max(e.ahead, e.now)
		return nil
	}
	e.cur = *top
	e.q.popFirst()
	return e.take(&e.q)
}

// take makes the event popped from q current: every event's path (Step,
// stepSplit, StepInterior). A call of its own costs 0.9% of a k=8 run's
// instructions over Step writing it out, which no alternating run could
// tell from noise (docs/decisions.md, "Prefetching the next events").
func (e *Engine) take(q *eventQueue) *Event {
	e.prefetch(q)
	ev := &e.cur
	e.now = ev.At
	e.Stats.Events++
	switch ev.Kind {
	case EvArrive:
		e.Stats.Arrivals++
		e.Pool.Get(ev.Pkt).Hops++
		if ev.ring {
			l := e.link(LinkID(ev.Arg))
			e.inPort = l.toPort
			// This event holds the head's fields: drop it, and move the
			// spill's first packet, if any, into the freed slot (the
			// spill holds packets only while the slots are full, and
			// is in the Link's second line: not read otherwise).
			full := l.wn == wireSlots
			l.wh = (l.wh + 1) & (wireSlots - 1)
			l.wn--
			if full && l.spill != nil && l.spill.Len() > 0 {
				e.slots[l.slot+int32((l.wh+l.wn)&(wireSlots-1))] = l.spill.Pop()
				l.wn++
			}
			if l.wn > 0 {
				// The next packet on the wire takes the place of this
				// one's event, in the queue this one came from (the
				// queue's length does not change: not counted in
				// PeakQueue, as before).
				f := &e.slots[l.slot+int32(l.wh)]
				q.push(Event{At: f.at, Dst: ev.Dst, Src: ev.Src, Seq: f.seq, Kind: EvArrive, Arg: ev.Arg, Pkt: f.pkt, ring: true})
			}
		} else {
			e.direct--
			e.inPort = e.link(LinkID(ev.Arg)).toPort
		}
	case EvTimer, EvTxDone:
		e.Stats.Timers++
	default:
		panic(fmt.Sprintf("sim: event of kind %d at %v", ev.Kind, ev.At))
	}
	return ev
}

// ArrivalPort is the port at which the current event, an arrival over
// link l (Event.Arg), reached its element: l's LinkSpec.ToPort. Next reads
// it beside the wire it pops, so the owner need not look it up.
// Precondition: the current event is an EvArrive.
func (e *Engine) ArrivalPort() int { return int(e.inPort) }

// NextEventTime is the time of the earliest pending event, or Never. An
// elided transmit-done (TransmitLazy) counts as the event it stands for,
// so that a partition reports, and a run stops, as with the events: it
// is exact after Next returned false (the end of a window), which passed
// those before the horizon.
func (e *Engine) NextEventTime() Time {
	t := Never
	if e.q.Len() > 0 {
		t = e.q.peek().At
	}
	if e.split && e.qb.Len() > 0 {
		t = min(t, e.qb.peek().At)
	}
	if e.lazy > 0 {
		for _, l := range e.Links {
			if l != nil && l.lazySeq != 0 && l.busyUntil < t {
				t = l.busyUntil
			}
		}
	}
	return t
}

// SetNow moves the clock forward to t when no event is due before it (the
// end of a window). Precondition: t >= Now() and t <= NextEventTime().
func (e *Engine) SetNow(t Time) {
	if t < e.now || t > e.NextEventTime() {
		panic(fmt.Sprintf("sim: SetNow(%v) with now %v and next event %v", t, e.now, e.NextEventTime()))
	}
	e.now = t
	e.cur = afterAll
}

// Outbox returns the packets sent to other partitions since the last
// ResetOutbox, in the order they were sent.
func (e *Engine) Outbox() []RemotePacket { return e.outbox }

// ResetOutbox empties the outbox, keeping its storage.
func (e *Engine) ResetOutbox() { e.outbox, e.signalsOut = e.outbox[:0], 0 }

// Export puts a packet that an element outside the engine sends on link
// rp.Link, whose far end is in another partition, in the outbox, as a
// transmission there would (an external element's departure,
// fabric/external.go).
func (e *Engine) Export(rp *RemotePacket) {
	if l := e.Links[rp.Link]; l == nil || e.elems[l.Spec.To].local {
		panic(fmt.Sprintf("sim: packet exported on link %d, which does not leave this partition", rp.Link))
	}
	e.outbox = append(e.outbox, *rp)
	e.Stats.Exported++
}

// Inject delivers a packet from another partition onto the wire of its link.
// Packets of one link must be injected in the order they were sent.
func (e *Engine) Inject(rp *RemotePacket) {
	l := e.Links[rp.Link]
	if l == nil || !e.elems[l.Spec.To].local {
		panic(fmt.Sprintf("sim: packet injected on link %d whose far end %d is not local", rp.Link, l.Spec.To))
	}
	p := e.Pool.Alloc()
	*e.Pool.Get(p) = rp.Pkt
	if e.Pool.tel != nil && rp.Tel != nil {
		*e.Pool.Telemetry(p) = *rp.Tel
	}
	e.Stats.Injected++
	if l.perPacket {
		e.direct++
		e.push(Event{At: rp.At, Dst: l.Spec.To, Src: l.Spec.From, Seq: rp.Seq, Kind: EvArrive, Arg: int64(rp.Link), Pkt: p})
		return
	}
	e.enqueueWire(rp.Link, l, inflight{at: rp.At, seq: rp.Seq, pkt: p})
}

// OnWire is the number of packets propagating on this partition's wires
// (including those sent to other partitions and not yet handed over).
func (e *Engine) OnWire() int {
	n := e.direct + len(e.outbox) - e.signalsOut
	for _, l := range e.Links {
		if l != nil {
			n += l.wireLen()
		}
	}
	return n
}

// QueueLen is the number of pending events.
func (e *Engine) QueueLen() int { return e.q.Len() + e.qb.Len() }

// Signals are per-flow dependency events between elements (docs/design.md
// §11): element `from` tells element `to` that something happened, and
// `to` receives an EvTimer event at `at` with arg. They are not packets and
// use no link: a signal to a local element is an event like a timer (keyed
// by its source and the source's sequence number, so the order does not
// depend on the cut); one to another partition leaves through the outbox
// as a RemotePacket on the pseudo link SignalLink(to), which the receiving
// partition hands to InjectSignal.

// SignalLink is the pseudo link id that carries signals to element to.
// Ids at or above NumLinks are signals.
func (e *Engine) SignalLink(to ElemID) LinkID { return LinkID(len(e.ends) + int(to)) }

// IsSignal reports whether rp is a signal (its link is a pseudo link).
func (e *Engine) IsSignal(rp *RemotePacket) bool { return int(rp.Link) >= len(e.ends) }

// SignalTo is the element a signal is for. Precondition: IsSignal(rp).
func (e *Engine) SignalTo(rp *RemotePacket) ElemID { return ElemID(int(rp.Link) - len(e.ends)) }

// Signal sends arg from element from to element to, arriving at at.
// Precondition: at >= Now(), and when to is in another partition, at is at
// least a lookahead later (the placement checks the dependency delays).
func (e *Engine) Signal(from, to ElemID, at Time, arg int64) {
	if at < e.now {
		panic(fmt.Sprintf("sim: element %d signals %d at %v, before now %v", from, to, at, e.now))
	}
	seq := e.nextSeq(from)
	if e.elems[to].local {
		e.push(Event{At: at, Dst: to, Src: from, Seq: seq, Kind: EvTimer, Arg: arg, Pkt: NoPacket})
		return
	}
	e.outbox = append(e.outbox, RemotePacket{Link: e.SignalLink(to), At: at, Seq: seq,
		Pkt: Packet{ID: uint64(arg), SrcHost: int32(from)}})
	e.signalsOut++
}

// InjectSignal delivers a signal from another partition. Precondition:
// IsSignal(rp) and its element is local.
func (e *Engine) InjectSignal(rp *RemotePacket) {
	to := e.SignalTo(rp)
	if int(to) >= len(e.elems) || !e.elems[to].local {
		panic(fmt.Sprintf("sim: signal for element %d, which is not local", to))
	}
	e.push(Event{At: rp.At, Dst: to, Src: ElemID(rp.Pkt.SrcHost), Seq: rp.Seq, Kind: EvTimer,
		Arg: int64(rp.Pkt.ID), Pkt: NoPacket})
}
