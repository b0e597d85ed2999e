package snapshot

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// liveArr keeps its live cells in cells[lo:n], as a queue does.
type liveArr struct {
	cells []uint64
	lo, n int
}

func (a *liveArr) SnapshotLive(live func(slice any, from, to int)) { live(&a.cells, a.lo, a.n) }

// dead is what liveArr's dead cells hold: no snapshot may contain it.
const dead = 0xdeadbeefcafef00d

func newLiveArr() *liveArr {
	a := &liveArr{cells: make([]uint64, 64), lo: 2, n: 5}
	for i := range a.cells {
		a.cells[i] = dead
	}
	for i := a.lo; i < a.n; i++ {
		a.cells[i] = uint64(i + 1)
	}
	return a
}

// TestSparse_EncodingSkipsDeadCells: the 61 dead cells of a 64-cell
// array (before and after the live ones) are not in the snapshot, and a
// restore in place zeroes them.
func TestSparse_EncodingSkipsDeadCells(t *testing.T) {
	a := newLiveArr()
	s, err := NewCodec().Encode([]any{a}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(s.Graph, binary.LittleEndian.AppendUint64(nil, dead)) {
		t.Fatalf("a dead cell is in the snapshot")
	}
	if len(s.Graph) > 3*8+32 {
		t.Fatalf("%d graph bytes for 3 live cells of 8 bytes", len(s.Graph))
	}
	fresh := newLiveArr() // its dead cells hold garbage
	fresh.lo, fresh.n = 0, 9
	if err := NewCodec().Decode(s, []any{fresh}, nil); err != nil {
		t.Fatal(err)
	}
	if fresh.lo != 2 || fresh.n != 5 || len(fresh.cells) != 64 {
		t.Fatalf("restored cells [%d, %d) of %d", fresh.lo, fresh.n, len(fresh.cells))
	}
	for i, v := range fresh.cells {
		if want := map[bool]uint64{true: uint64(i + 1), false: 0}[2 <= i && i < 5]; v != want {
			t.Fatalf("cell %d is %#x after the restore, want %#x", i, v, want)
		}
	}
	// A value whose declarations are wrong is refused, naming it.
	bad := &badLive{cells: make([]int, 4)}
	if _, err := NewCodec().Encode([]any{bad}, nil); err == nil || !strings.Contains(err.Error(), "badLive.SnapshotLive") ||
		!strings.Contains(err.Error(), "in order") {
		t.Fatalf("out-of-order live cells: %v", err)
	}
}

type badLive struct{ cells []int }

func (b *badLive) SnapshotLive(live func(slice any, from, to int)) {
	live(&b.cells, 2, 3)
	live(&b.cells, 0, 1)
}

// rings holds sim rings: one wrapped around its end, one empty that has
// grown, and a packet queue (which embeds a ring).
type rings struct {
	wrapped sim.Ring[int64]
	empty   sim.Ring[int64]
	q       sim.PktQueue
}

func TestSparse_RingWithEmptyCellsRoundTrips(t *testing.T) {
	var r rings
	for i := range 30 {
		r.wrapped.Push(int64(i))
		r.empty.Push(int64(i))
		r.q.Add(sim.PktRef(i), int32(100+i))
	}
	for range 25 {
		r.wrapped.Pop()
		r.q.Take()
	}
	for i := range 30 {
		r.empty.Pop()
		r.wrapped.Push(int64(100 + i)) // past the end of its 32 cells
	}
	if r.wrapped.Len() != 35 {
		t.Fatalf("wrapped ring holds %d", r.wrapped.Len())
	}
	s, err := NewCodec().Encode([]any{&r}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 35 + 5 live cells of 8 bytes, not the 64 + 32 + 32 cells the rings
	// have grown to.
	if len(s.Graph) > 40*8+64 {
		t.Fatalf("%d graph bytes for 40 live cells", len(s.Graph))
	}
	var fresh rings
	if err := NewCodec().Decode(s, []any{&fresh}, nil); err != nil {
		t.Fatal(err)
	}
	again, err := NewCodec().Encode([]any{&fresh}, nil)
	if err != nil || !bytes.Equal(again.Graph, s.Graph) {
		t.Fatalf("the restored rings encode differently (%v)", err)
	}
	for r.wrapped.Len() > 0 {
		if a, b := r.wrapped.Pop(), fresh.wrapped.Pop(); a != b {
			t.Fatalf("wrapped ring: %d, restored %d", a, b)
		}
	}
	if fresh.wrapped.Len() != 0 || fresh.empty.Len() != 0 || fresh.q.Len() != 5 || fresh.q.Bytes != r.q.Bytes {
		t.Fatalf("restored lengths %d %d %d", fresh.wrapped.Len(), fresh.empty.Len(), fresh.q.Len())
	}
	for r.q.Len() > 0 {
		p, n := r.q.Take()
		fp, fn := fresh.q.Take()
		if p != fp || n != fn {
			t.Fatalf("queue: %d/%d, restored %d/%d", p, n, fp, fn)
		}
	}
}

func TestSparse_PoolWithFreeSlotsRoundTrips(t *testing.T) {
	for _, tel := range []bool{false, true} {
		var p sim.Pool
		if tel {
			p.EnableTelemetry()
		}
		var refs []sim.PktRef
		for i := range 10 {
			r := p.Alloc()
			pk := p.Get(r)
			pk.ID, pk.Seq = dead, uint64(i)
			refs = append(refs, r)
		}
		for _, i := range []int{1, 4, 7} {
			p.Free(refs[i])
		}
		s, err := NewCodec().Encode([]any{&p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(s.Graph, binary.LittleEndian.AppendUint64(nil, dead)); n != 7 {
			t.Fatalf("telemetry %v: %d packets in the snapshot, want the 7 live ones", tel, n)
		}
		var fresh sim.Pool
		if tel {
			fresh.EnableTelemetry()
		}
		if err := NewCodec().Decode(s, []any{&fresh}, nil); err != nil {
			t.Fatal(err)
		}
		if fresh.Live() != 7 || fresh.Capacity() != p.Capacity() {
			t.Fatalf("restored pool: %d live of %d", fresh.Live(), fresh.Capacity())
		}
		for i, r := range refs {
			if i == 1 || i == 4 || i == 7 {
				if *fresh.Get(r) != (sim.Packet{}) {
					t.Fatalf("free slot %d not zero after the restore", r)
				}
				continue
			}
			if *fresh.Get(r) != *p.Get(r) {
				t.Fatalf("packet %d differs after the restore", r)
			}
		}
		// The free list is restored: the same slots come back, zeroed.
		for range 4 {
			a, b := p.Alloc(), fresh.Alloc()
			if a != b || *fresh.Get(b) != (sim.Packet{}) {
				t.Fatalf("alloc after the restore: %d, want %d", b, a)
			}
		}
	}
}

type lnode struct {
	next *lnode
	vals []int
	peer *lnode
}

type linked struct {
	a    *lnode
	all  []lnode
	m    map[string]*lnode
	ptrs []*lnode
	b    *lnode
	sh   shape
}

// TestEncode_MeetsReferencesThroughTheLog: encoding a region meets its
// references in the order its discovery logged them, so none is looked
// up but those of a map's entries (encoded apart from their region) —
// even past a map field, pointers into an array found first element by
// element, and an interface. The restore is exact.
func TestEncode_MeetsReferencesThroughTheLog(t *testing.T) {
	build := func() *linked {
		g := &linked{all: make([]lnode, 50), m: map[string]*lnode{}, sh: &square{side: 3}}
		for i := range g.all {
			n := &g.all[i]
			n.vals = make([]int, i%4)
			if i+1 < len(g.all) {
				n.next = &g.all[i+1]
			}
			n.peer = &g.all[(i*7)%len(g.all)]
			g.ptrs = append(g.ptrs, n)
		}
		g.a, g.b = &g.all[10], &lnode{peer: &g.all[3]}
		g.m["x"], g.m["y"] = &g.all[5], g.b
		return g
	}
	g := build()
	c := NewCodec()
	s, err := c.Encode([]any{g}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.lookups != len(g.m) {
		t.Fatalf("%d references looked up, want only the map's %d", c.lookups, len(g.m))
	}
	fresh := &linked{}
	dc := NewCodec()
	dc.Register(&square{})
	if err := dc.Decode(s, []any{fresh}, nil); err != nil {
		t.Fatal(err)
	}
	again, err := NewCodec().Encode([]any{fresh}, nil)
	if err != nil || !bytes.Equal(again.Graph, s.Graph) {
		t.Fatalf("the restored graph encodes differently (%v)", err)
	}
	if fresh.a != &fresh.all[10] || fresh.all[48].next != &fresh.all[49] || fresh.ptrs[7] != &fresh.all[7] ||
		fresh.m["x"] != &fresh.all[5] || fresh.m["y"] != fresh.b || fresh.b.peer != &fresh.all[3] || fresh.sh.Area() != 9 {
		t.Fatalf("references not restored")
	}
}
