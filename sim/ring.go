package sim

// Ring is a growable FIFO ring buffer. Push and Pop do not allocate once the
// ring has grown to its working size.
type Ring[T any] struct {
	buf  []T
	head int32
	n    int32
}

// Len is the number of items in the ring.
func (r *Ring[T]) Len() int { return int(r.n) }

// Push appends v at the tail.
func (r *Ring[T]) Push(v T) {
	if int(r.n) == len(r.buf) {
		r.grow()
	}
	r.buf[int(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

// Front returns the head item. Precondition: Len() > 0.
func (r *Ring[T]) Front() *T { return &r.buf[r.head] }

// At returns the i-th item from the head. Precondition: 0 <= i < Len().
func (r *Ring[T]) At(i int) *T { return &r.buf[(int(r.head)+i)&(len(r.buf)-1)] }

// SnapshotLive declares the ring's items to a checkpoint
// (internal/snapshot.Sparse): the n cells from head, wrapping around the
// end. The others are zero (Pop clears a cell), and a restore leaves them
// so.
func (r *Ring[T]) SnapshotLive(live func(slice any, from, to int)) {
	c, end := len(r.buf), int(r.head)+int(r.n)
	if end <= c {
		live(&r.buf, int(r.head), end)
		return
	}
	live(&r.buf, 0, end-c)
	live(&r.buf, int(r.head), c)
}

// Pop removes and returns the head item. Precondition: Len() > 0.
func (r *Ring[T]) Pop() T {
	v := r.buf[r.head]
	var zero T
	r.buf[r.head] = zero
	r.head = (r.head + 1) & int32(len(r.buf)-1)
	r.n--
	return v
}

func (r *Ring[T]) grow() {
	size := 2 * len(r.buf)
	if size == 0 {
		size = 16
	}
	nb := make([]T, size)
	for i := 0; i < int(r.n); i++ {
		nb[i] = r.buf[(int(r.head)+i)&(len(r.buf)-1)]
	}
	r.buf = nb
	r.head = 0
}

// PktQueue is a FIFO of packets with their sizes and a byte count: a NIC's
// transmit queue or a switch port's output queue. The sizes beside the
// refs let the owner dequeue and transmit a packet without reading it
// (Engine.TransmitSize): it has often left the cache while it waited.
type PktQueue struct {
	Ring[Queued]
	Bytes int64
}

// Queued is a packet in a PktQueue and its size on the wire.
type Queued struct {
	P    PktRef
	Size int32
}

// Add appends packet p of size bytes.
func (q *PktQueue) Add(p PktRef, size int32) {
	q.Push(Queued{p, size})
	q.Bytes += int64(size)
}

// Take removes the head packet and returns it with its size.
// Precondition: Len() > 0.
func (q *PktQueue) Take() (PktRef, int32) {
	h := q.Pop()
	q.Bytes -= int64(h.Size)
	return h.P, h.Size
}
