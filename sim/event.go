package sim

// ElemID names an element (host or switch) of the whole fabric. IDs are
// assigned by the topology and do not depend on partitioning.
type ElemID int32

// EventKind says what an event means to the element that receives it.
type EventKind uint8

const (
	// EvArrive: packet Pkt has fully arrived over link Arg (store and
	// forward). Kinds start at 1, so that a forgotten kind (0) shows.
	EvArrive EventKind = 1 + iota
	// EvTxDone: link Arg finished serialising; its transmitter is idle.
	EvTxDone
	// EvTimer: a timer the element armed itself; Arg and Pkt are its own.
	EvTimer
)

// Event is one entry of the event queue. It is a small value with no
// pointers, so the queue costs the garbage collector nothing.
type Event struct {
	At  Time
	Seq uint64 // the source element's own sequence number
	Arg int64  // link id for EvArrive/EvTxDone; element-defined for EvTimer
	Dst ElemID
	Src ElemID
	Pkt PktRef // the packet for EvArrive; element-defined for EvTimer
	// Kind of event. ring marks an arrival that heads a link's FIFO ring.
	Kind EventKind
	ring bool
}

// Before reports whether a is ordered before b by the partition-independent
// key (time, destination, source, source sequence number) of docs/design.md §2.
func (a *Event) Before(b *Event) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	if a.Dst != b.Dst {
		return a.Dst < b.Dst
	}
	if a.Src != b.Src {
		return a.Src < b.Src
	}
	return a.Seq < b.Seq
}

// qEvent is an Event as the queue holds it: 32 bytes (two per cache
// line, against 40 for an Event), with the ordering key in three words so
// that before is at most three comparisons.
type qEvent struct {
	at  Time
	key uint64 // Dst<<32 | Src: both are non-negative, so this orders as (Dst, Src)
	seq uint64 // Seq<<3 | ring<<2 | Kind: Seq is unique per Src, so the flags never decide
	arg uint64 // EvArrive: link | Pkt<<32; EvTxDone, EvTimer: Arg
}

const (
	qKindMask = 3
	qRing     = 4
	qSeqShift = 3
)

// pack turns ev into its queue form. An EvTimer's Pkt must be NoPacket
// (Engine.Schedule checks) and an EvArrive's Arg a link id.
func pack(ev *Event) qEvent {
	q := qEvent{at: ev.At, key: uint64(ev.Dst)<<32 | uint64(uint32(ev.Src)), seq: ev.Seq<<qSeqShift | uint64(ev.Kind)}
	if ev.ring {
		q.seq |= qRing
	}
	if ev.Kind == EvArrive {
		q.arg = uint64(uint32(ev.Arg)) | uint64(uint32(ev.Pkt))<<32
	} else {
		q.arg = uint64(ev.Arg)
	}
	return q
}

// unpack is the Event q holds.
func (q *qEvent) unpack() Event {
	ev := Event{At: q.at, Dst: ElemID(q.key >> 32), Src: ElemID(uint32(q.key)), Seq: q.seq >> qSeqShift,
		Kind: EventKind(q.seq & qKindMask), ring: q.seq&qRing != 0, Pkt: NoPacket}
	if ev.Kind == EvArrive {
		ev.Arg = int64(uint32(q.arg))
		ev.Pkt = PktRef(int32(uint32(q.arg >> 32)))
	} else {
		ev.Arg = int64(q.arg)
	}
	return ev
}

// before is Event.Before on the packed key.
func (a *qEvent) before(b *qEvent) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.key != b.key {
		return a.key < b.key
	}
	return a.seq < b.seq
}

// eventQueue is a 4-ary min-heap of events. A 4-ary heap does fewer cache
// misses than a binary one for the same number of comparisons. The root
// sits at h[heapBase], so that the four children of a node (at
// heapBase + 4i+1 .. 4i+4 for node i) start at a multiple of four slots:
// 128 bytes, two cache lines of a large (page-aligned) slice.
type eventQueue struct {
	h []qEvent
}

const heapBase = 3

func (q *eventQueue) Len() int { return max(len(q.h)-heapBase, 0) }

func (q *eventQueue) push(ev Event) {
	if q.h == nil {
		q.h = make([]qEvent, heapBase, 64)
	}
	e := pack(&ev)
	q.h = append(q.h, e)
	h := q.h[heapBase:]
	// Sift up with a hole: parents move down, e is written once.
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) >> 2
		if !e.before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

// peekAt is the time of the earliest event. Precondition: Len() > 0.
func (q *eventQueue) peekAt() Time { return q.h[heapBase].at }

func (q *eventQueue) pop() Event {
	h := q.h[heapBase:]
	top := h[0].unpack()
	n := len(h) - 1
	last := h[n]
	q.h = q.h[:heapBase+n]
	if n == 0 {
		return top
	}
	h = h[:n]
	// Sift down with a hole at the root: the smallest child moves up until
	// last fits, then last is written once.
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		if c+3 < n {
			// All four children: a fixed tournament, no bounds loop.
			a, b := c, c+2
			if h[c+1].before(&h[c]) {
				a = c + 1
			}
			if h[c+3].before(&h[c+2]) {
				b = c + 3
			}
			m = a
			if h[b].before(&h[a]) {
				m = b
			}
		} else {
			for j := c + 1; j < n; j++ {
				if h[j].before(&h[m]) {
					m = j
				}
			}
		}
		if !h[m].before(&last) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = last
	return top
}
