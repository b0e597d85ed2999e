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

// eventQueue is a 4-ary min-heap of events. A 4-ary heap does fewer cache
// misses than a binary one for the same number of comparisons.
type eventQueue struct {
	h []Event
}

func (q *eventQueue) Len() int { return len(q.h) }

func (q *eventQueue) push(ev Event) {
	q.h = append(q.h, ev)
	// Sift up with a hole: parents move down, ev is written once.
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !ev.Before(&q.h[p]) {
			break
		}
		q.h[i] = q.h[p]
		i = p
	}
	q.h[i] = ev
}

// peek returns the earliest event. Precondition: Len() > 0.
func (q *eventQueue) peek() *Event { return &q.h[0] }

func (q *eventQueue) pop() Event {
	top := q.h[0]
	n := len(q.h) - 1
	last := q.h[n]
	q.h = q.h[:n]
	if n > 0 {
		q.fillRoot(last)
	}
	return top
}

// replaceTop removes the earliest event and adds ev: one sift instead of
// a pop's and a push's. Precondition: Len() > 0.
func (q *eventQueue) replaceTop(ev Event) { q.fillRoot(ev) }

// fillRoot puts x in the heap, whose root is a hole, by Floyd's
// bottom-up method: the hole moves down to a leaf along the smallest
// children (no comparison with x on the way: x is the last leaf or a
// new event, which usually belongs near the bottom), then x sifts up
// from there.
func (q *eventQueue) fillRoot(x Event) {
	h := q.h
	n := len(h)
	i := 0
	for {
		c := 4*i + 1
		if c+3 < n {
			m := c
			if h[c+1].Before(&h[m]) {
				m = c + 1
			}
			if h[c+2].Before(&h[m]) {
				m = c + 2
			}
			if h[c+3].Before(&h[m]) {
				m = c + 3
			}
			h[i] = h[m]
			i = m
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
