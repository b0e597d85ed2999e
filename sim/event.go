package sim

import (
	"math/bits"
	"slices"
)

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

// eventQueue holds the pending events in key order. Those of the current
// time slot (a slot is 2^slotShift ps, 4.1 ns by default) are in near,
// sorted, and taken from its front, with the ones pushed into the slot
// after it was sorted in a small 4-ary heap, side; those of the next
// ringSlots slots wait unsorted in one bucket per slot, and later ones
// (timers, mostly) in a 4-ary heap, far. When near and side are empty,
// the next non-empty bucket becomes near (sorted as packed integer keys,
// sortNear), and far's events that the ring's window now covers move into
// the ring. The order of events is the key's, as with one heap: a slot's
// events all come after the earlier slots' and before the later ones'.
//
// Why: a fabric of 10^5 hosts keeps a few 10^5 events pending over a few
// microseconds; one heap of them all was 15 MB, sifted through ten levels
// at every pop. In a fabric of equal links many events fall on the same
// picosecond, so even one slot's heap was thousands of events deep and
// its sift was a quarter of every event's instructions (perm1024); a
// slot sorted once is read in order.
//
// Buckets are lists of fixed chunks of events from one free list, so the
// ring's memory follows the events it holds (not the largest slot times
// the slots). The zero value is ready to use.
type eventQueue struct {
	near   []Event // the current slot's events, sorted; near[nearAt:] are pending
	nearAt int
	// firstNear: the event first returned is near's front, not side's.
	firstNear bool
	side      []Event // a heap: events of slots before cur pushed after near was sorted
	far       []Event // a heap: every event of a slot at or after cur + slots
	// head and tail are the first and last chunk of slot s's bucket at
	// s & (slots-1), for s in [cur, cur + slots); -1: empty. full has
	// bit b set when bucket b is not empty.
	head, tail []int32
	full       []uint64
	chunks     []*eventChunk
	freeChunks []int32
	inRing     int
	cur        int64 // the first slot not in near or side
	shift      uint  // slot width: 2^shift ps
	slots      int64 // a power of two, a multiple of 64
	// Scratch of the sort: packed keys, and the sorted events before
	// they become near.
	keys   []uint64
	sorted []Event
}

// eventChunk is a piece of a bucket: n events, then the chunk at next
// (-1: none).
type eventChunk struct {
	ev   [chunkEvents]Event
	n    int32
	next int32
}

// The default slot width and ring length, 2^12 ps (4.1 ns) and 1024
// slots (4.2 us: a few hops' delays; later events go to far), and the
// events per chunk.
const (
	slotShift   = 12
	ringSlots   = 1024
	chunkEvents = 32
)

// init sizes the ring (a queue made with shift and slots keeps them).
func (q *eventQueue) init() {
	if q.slots == 0 {
		q.shift, q.slots = slotShift, ringSlots
	}
	q.head = make([]int32, q.slots)
	q.tail = make([]int32, q.slots)
	for i := range q.head {
		q.head[i], q.tail[i] = -1, -1
	}
	q.full = make([]uint64, q.slots/64)
}

// ahead is the event k places behind the front of the current slot
// (sorted), or nil when the slot holds fewer: what prefetching looks at.
func (q *eventQueue) ahead(k int) *Event {
	if i := q.nearAt + k; i < len(q.near) {
		return &q.near[i]
	}
	return nil
}

func (q *eventQueue) Len() int { return len(q.near) - q.nearAt + len(q.side) + q.inRing + len(q.far) }

func (q *eventQueue) slot(t Time) int64 { return int64(t) >> q.shift }

func (q *eventQueue) push(ev Event) {
	if q.head == nil {
		q.init()
	}
	switch s := q.slot(ev.At); {
	case s < q.cur:
		heapPush(&q.side, ev)
	case s < q.cur+q.slots:
		q.bucketAdd(s&(q.slots-1), ev)
	default:
		heapPush(&q.far, ev)
	}
}

// bucketAdd appends ev to bucket b.
func (q *eventQueue) bucketAdd(b int64, ev Event) {
	t := q.tail[b]
	if t < 0 || q.chunks[t].n == chunkEvents {
		c := q.newChunk()
		if t < 0 {
			q.head[b] = c
			q.full[b>>6] |= 1 << uint(b&63)
		} else {
			q.chunks[t].next = c
		}
		q.tail[b] = c
		t = c
	}
	k := q.chunks[t]
	k.ev[k.n] = ev
	k.n++
	q.inRing++
}

// newChunk takes an empty chunk from the free list (or makes one).
func (q *eventQueue) newChunk() int32 {
	var c int32
	if n := len(q.freeChunks); n > 0 {
		c = q.freeChunks[n-1]
		q.freeChunks = q.freeChunks[:n-1]
	} else {
		c = int32(len(q.chunks))
		q.chunks = append(q.chunks, &eventChunk{})
	}
	k := q.chunks[c]
	k.n, k.next = 0, -1
	return c
}

// settle makes near or side hold the earliest event, if there is any
// (refill).
func (q *eventQueue) settle() {
	if q.nearAt == len(q.near) && len(q.side) == 0 {
		q.refill()
	}
}

// refill takes the next non-empty bucket into near, or, with the ring
// empty, moves the window to far's earliest event first.
func (q *eventQueue) refill() {
	for q.nearAt == len(q.near) && len(q.side) == 0 {
		if q.inRing == 0 {
			if len(q.far) == 0 {
				return
			}
			q.cur = q.slot(q.far[0].At)
			q.pullFar()
		}
		s := q.nextFull()
		b := s & (q.slots - 1)
		q.near, q.nearAt = q.near[:0], 0
		for c := q.head[b]; c >= 0; {
			k := q.chunks[c]
			q.near = append(q.near, k.ev[:k.n]...)
			q.freeChunks = append(q.freeChunks, c)
			c = k.next
		}
		q.head[b], q.tail[b] = -1, -1
		q.full[b>>6] &^= 1 << uint(b&63)
		q.inRing -= len(q.near)
		q.sortNear(Time(s << q.shift))
		q.cur = s + 1
		q.pullFar()
	}
}

// nextFull is the first slot at or after cur whose bucket is not empty.
// Precondition: inRing > 0.
func (q *eventQueue) nextFull() int64 {
	mask := q.slots - 1
	start := q.cur & mask
	w := start >> 6
	word := q.full[w] &^ (1<<uint(start&63) - 1) // bits before start are slots a turn later
	for i := 0; ; i++ {
		if word != 0 {
			b := w<<6 | int64(bits.TrailingZeros64(word))
			return q.cur + (b-start)&mask
		}
		if i > len(q.full) {
			panic("sim: event queue: the ring counts events but no bucket holds one")
		}
		w = (w + 1) % int64(len(q.full))
		word = q.full[w]
	}
}

// pullFar moves far's events that the ring's window covers into the ring.
func (q *eventQueue) pullFar() {
	for len(q.far) > 0 && q.slot(q.far[0].At) < q.cur+q.slots {
		ev := heapPop(&q.far)
		q.bucketAdd(q.slot(ev.At)&(q.slots-1), ev)
	}
}

// sortNear sorts near, one slot's events from start on, by key: each
// event's (time within the slot, destination, source, index in near)
// packed into one word and sorted as integers, then the events of equal
// (time, destination, source) by sequence number. Few events take an
// insertion sort, and ids too wide to pack the standard sort.
func (q *eventQueue) sortNear(start Time) {
	ev := q.near
	n := len(ev)
	if n <= 16 {
		insertionSort(ev)
		return
	}
	var maxDst, maxSrc uint64
	for i := range ev {
		maxDst = max(maxDst, uint64(uint32(ev[i].Dst)))
		maxSrc = max(maxSrc, uint64(uint32(ev[i].Src)))
	}
	bi := uint(bits.Len(uint(n - 1)))
	bs, bd := uint(bits.Len64(maxSrc)), uint(bits.Len64(maxDst))
	if q.shift+bd+bs+bi > 64 {
		slices.SortFunc(ev, compareEvents)
		return
	}
	keys := slices.Grow(q.keys[:0], n)[:n]
	for i := range ev {
		keys[i] = (uint64(ev[i].At-start)<<(bd+bs)|uint64(uint32(ev[i].Dst))<<bs|uint64(uint32(ev[i].Src)))<<bi | uint64(i)
	}
	slices.Sort(keys)
	sorted := slices.Grow(q.sorted[:0], n)[:n]
	mask := uint64(1)<<bi - 1
	for i, k := range keys {
		sorted[i] = ev[k&mask]
	}
	// Equal (time, destination, source), one source's events for one
	// destination at one time, go by sequence number.
	for i := 1; i < n; {
		if keys[i]>>bi != keys[i-1]>>bi {
			i++
			continue
		}
		j := i + 1
		for j < n && keys[j]>>bi == keys[i]>>bi {
			j++
		}
		insertionSort(sorted[i-1 : j])
		i = j
	}
	q.near, q.sorted, q.keys = sorted, ev, keys
}

// insertionSort sorts a few events by key.
func insertionSort(ev []Event) {
	for i := 1; i < len(ev); i++ {
		x := ev[i]
		j := i
		for j > 0 && x.Before(&ev[j-1]) {
			ev[j] = ev[j-1]
			j--
		}
		ev[j] = x
	}
}

// top is the earliest event: near's front or side's root. Precondition:
// settled and Len() > 0.
func (q *eventQueue) top() (*Event, bool) {
	if q.nearAt < len(q.near) {
		if len(q.side) == 0 || q.near[q.nearAt].Before(&q.side[0]) {
			return &q.near[q.nearAt], true
		}
	}
	return &q.side[0], false
}

// peek returns the earliest event. Precondition: Len() > 0.
func (q *eventQueue) peek() *Event {
	q.settle()
	ev, _ := q.top()
	return ev
}

// first returns the earliest event, or nil when there is none, and
// remembers where it is for popFirst.
func (q *eventQueue) first() *Event {
	q.settle()
	if q.nearAt < len(q.near) {
		if len(q.side) == 0 || q.near[q.nearAt].Before(&q.side[0]) {
			q.firstNear = true
			return &q.near[q.nearAt]
		}
	} else if len(q.side) == 0 {
		return nil
	}
	q.firstNear = false
	return &q.side[0]
}

// popFirst removes the event first returned. Precondition: first
// returned it and nothing was pushed since.
func (q *eventQueue) popFirst() {
	if q.firstNear {
		q.nearAt++
		return
	}
	heapPop(&q.side)
}

func (q *eventQueue) pop() Event {
	q.settle()
	ev, inNear := q.top()
	if inNear {
		q.nearAt++
		return *ev
	}
	return heapPop(&q.side)
}

// replaceTop removes the earliest event and adds ev: one sift instead of
// a pop's and a push's when both are side's. Precondition: Len() > 0.
func (q *eventQueue) replaceTop(ev Event) {
	q.settle()
	if _, inNear := q.top(); !inNear && q.slot(ev.At) < q.cur {
		fillRoot(q.side, ev)
		return
	}
	q.pop()
	q.push(ev)
}

// heapPush adds ev to the heap *h.
func heapPush(h *[]Event, ev Event) {
	*h = append(*h, ev)
	q := *h
	// Sift up with a hole: parents move down, ev is written once.
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !ev.Before(&q[p]) {
			break
		}
		q[i] = q[p]
		i = p
	}
	q[i] = ev
}

// heapPop removes and returns the earliest event of the heap *h.
// Precondition: len(*h) > 0.
func heapPop(h *[]Event) Event {
	q := *h
	top := q[0]
	n := len(q) - 1
	last := q[n]
	*h = q[:n]
	if n > 0 {
		fillRoot(q[:n], last)
	}
	return top
}

// fillRoot puts x in the heap h, whose root is a hole, by Floyd's
// bottom-up method: the hole moves down to a leaf along the smallest
// children (no comparison with x on the way: x is the last leaf or a
// new event, which usually belongs near the bottom), then x sifts up
// from there.
func fillRoot(h []Event, x Event) {
	n := len(h)
	i := 0
	for {
		c := 4*i + 1
		if c+3 < n {
			// The four children as one slice, so that the compiler
			// drops the bounds checks.
			ch := h[c : c+4 : c+4]
			best, m := &ch[0], 0
			if ch[1].Before(best) {
				best, m = &ch[1], 1
			}
			if ch[2].Before(best) {
				best, m = &ch[2], 2
			}
			if ch[3].Before(best) {
				best, m = &ch[3], 3
			}
			h[i] = *best
			i = c + m
			continue
		}
		if c < n {
			m := c
			for j := c + 1; j < n; j++ {
				if h[j].Before(&h[m]) {
					m = j
				}
			}
			h[i] = h[m]
			i = m
		}
		// A node with fewer than 4 children has no grandchildren.
		break
	}
	for i > 0 {
		p := (i - 1) / 4
		if !x.Before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

// compareEvents orders two events by their key (Before), as
// slices.SortFunc wants.
func compareEvents(a, b Event) int {
	switch {
	case a.Before(&b):
		return -1
	case b.Before(&a):
		return 1
	}
	return 0
}
