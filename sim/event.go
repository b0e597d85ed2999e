package sim

import "math/bits"

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
// time slot and before (a slot is 2^slotShift ps, 4.1 ns by default)
// are in a 4-ary min-heap, near; those of the next ringSlots slots wait
// unsorted in one bucket per slot, and later ones (timers, mostly) in a
// second heap, far. When near is empty, the next non-empty bucket becomes
// near (heapified), and far's events that the ring's window now covers
// move into it. A fabric of 10^5 hosts keeps a few 10^5 events pending
// over a few microseconds: one heap of them all was 15 MB, sifted through
// ten levels at every pop; near holds one slot's events and stays in the
// caches, and the buckets are written in order. The order of events is
// the key's, as with one heap: a slot's events all come after the
// earlier slots' and before the later ones'.
//
// Buckets are lists of fixed chunks of events from one free list, so the
// ring's memory follows the events it holds (not the largest slot times
// the slots), and taking a bucket copies its events into near's one
// array. A 4-ary heap does fewer cache misses than a binary one for the
// same number of comparisons. The zero value is ready to use.
type eventQueue struct {
	near []Event // a heap: every event of a slot before cur
	far  []Event // a heap: every event of a slot at or after cur + slots
	// head and tail are the first and last chunk of slot s's bucket at
	// s & (slots-1), for s in [cur, cur + slots); -1: empty. full has
	// bit b set when bucket b is not empty.
	head, tail []int32
	full       []uint64
	chunks     []*eventChunk
	freeChunks []int32
	inRing     int
	cur        int64 // the first slot not in near
	shift      uint  // slot width: 2^shift ps
	slots      int64 // a power of two, a multiple of 64
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
// events per chunk. Slots of 65 ns (64 of them) held 20 k events each at
// k=74; 4 ns slots do fewer misses and instructions (k=48: LL misses per
// event 13.4 -> 12.9, 4 MB LL in cachegrind; k=8: instructions -5%).
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

func (q *eventQueue) Len() int { return len(q.near) + q.inRing + len(q.far) }

func (q *eventQueue) slot(t Time) int64 { return int64(t) >> q.shift }

func (q *eventQueue) push(ev Event) {
	if q.head == nil {
		q.init()
	}
	switch s := q.slot(ev.At); {
	case s < q.cur:
		heapPush(&q.near, ev)
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

// settle makes near hold the earliest event, if there is any: it takes
// the next non-empty bucket, or, with the ring empty, moves the window
// to far's earliest event.
func (q *eventQueue) settle() {
	for len(q.near) == 0 {
		if q.inRing == 0 {
			if len(q.far) == 0 {
				return
			}
			q.cur = q.slot(q.far[0].At)
			q.pullFar()
		}
		s := q.nextFull()
		b := s & (q.slots - 1)
		for c := q.head[b]; c >= 0; {
			k := q.chunks[c]
			q.near = append(q.near, k.ev[:k.n]...)
			q.freeChunks = append(q.freeChunks, c)
			c = k.next
		}
		q.head[b], q.tail[b] = -1, -1
		q.full[b>>6] &^= 1 << uint(b&63)
		q.inRing -= len(q.near)
		heapify(q.near)
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

// peek returns the earliest event. Precondition: Len() > 0.
func (q *eventQueue) peek() *Event {
	q.settle()
	return &q.near[0]
}

func (q *eventQueue) pop() Event {
	q.settle()
	return heapPop(&q.near)
}

// replaceTop removes the earliest event and adds ev: one sift instead of
// a pop's and a push's when ev belongs to near. Precondition: Len() > 0.
func (q *eventQueue) replaceTop(ev Event) {
	q.settle()
	if q.slot(ev.At) < q.cur {
		fillRoot(q.near, ev)
		return
	}
	heapPop(&q.near)
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

// heapify makes h a heap (Floyd's: sift down every parent, last first).
func heapify(h []Event) {
	if len(h) < 2 {
		return
	}
	for i := (len(h) - 2) / 4; i >= 0; i-- {
		x := h[i]
		j := i
		for {
			c := 4*j + 1
			if c >= len(h) {
				break
			}
			m := c
			for k := c + 1; k < c+4 && k < len(h); k++ {
				if h[k].Before(&h[m]) {
					m = k
				}
			}
			if !h[m].Before(&x) {
				break
			}
			h[j] = h[m]
			j = m
		}
		h[j] = x
	}
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
