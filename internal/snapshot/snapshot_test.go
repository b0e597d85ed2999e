package snapshot

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

type leaf struct {
	A int
	S string
	B []byte
}

type shape interface{ Area() int }

type square struct{ side int }

func (s *square) Area() int { return s.side * s.side }

type rect struct{ w, h int }

func (r rect) Area() int { return r.w * r.h }

type table struct {
	rows []int32
	name string
}

type graph struct {
	name     string
	next     *graph
	items    []leaf
	cur      *leaf // into items
	win      []leaf
	byName   map[string]*leaf
	sh       shape
	val      shape
	f        func() int
	shared   *leaf
	shared2  *leaf
	tab      *table // an anchor
	row      *int32 // into the anchor
	empty    []int
	nilS     []int
	z        *struct{}
	rng      *rand.Rand
	arr      [3]*leaf
	keys     map[[2]int32]uint64
	nilMap   map[int]int
	ifaceNil shape
	back     *graph
}

// build is what a constructor makes: the fresh state.
func build(tab *table) *graph {
	g := &graph{name: "g", items: make([]leaf, 4, 8), tab: tab, byName: map[string]*leaf{}, nilS: nil,
		rng: rand.New(rand.NewPCG(1, 2)), keys: map[[2]int32]uint64{{1, 2}: 3}}
	g.f = func() int { return len(g.items) }
	g.sh = &square{side: 1}
	g.back = g
	return g
}

// run changes the state as a run does.
func run(g *graph) {
	g.items = append(g.items, leaf{A: 7, S: "seven", B: []byte("x")})
	g.items[0] = leaf{A: 1, S: "one"}
	g.cur = &g.items[2]
	g.cur.A = 22
	g.win = g.items[1:3]
	g.byName["two"] = &g.items[2]
	g.byName["new"] = &leaf{A: 99}
	g.sh.(*square).side = 5
	g.val = rect{3, 4}
	g.shared = &leaf{A: 42, B: make([]byte, 0, 4)}
	g.shared2 = g.shared
	g.row = &g.tab.rows[3]
	g.empty = []int{}
	g.z = &struct{}{}
	for range 5 {
		g.rng.Uint64()
	}
	g.arr[1] = g.shared
	g.keys[[2]int32{5, 6}] = 7
	g.next = &graph{name: "second", next: g}
}

func newTable() *table { return &table{rows: []int32{1, 2, 3, 4, 5}, name: "t"} }

// newCodec knows rect, which only the run puts in an interface.
func newCodec() *Codec {
	c := NewCodec()
	c.Register(rect{})
	return c
}

func TestRoundTrip_RestoresInPlaceWithSharingAndAnchors(t *testing.T) {
	c := NewCodec()
	orig := build(newTable())
	run(orig)
	s, err := c.Encode([]any{orig}, []any{orig.tab})
	if err != nil {
		t.Fatal(err)
	}
	freshTab := newTable()
	fresh := build(freshTab)
	freshF := fresh.f
	freshSquare := fresh.sh
	if err := newCodec().Decode(s, []any{fresh}, []any{freshTab}); err != nil {
		t.Fatal(err)
	}
	// Encoding the restored graph gives the same bytes: nothing was missed.
	s2, err := c.Encode([]any{fresh}, []any{freshTab})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.Graph, s2.Graph) || !bytes.Equal(s.Types, s2.Types) {
		t.Fatalf("re-encoding the restored graph differs: %d/%d graph bytes, %d/%d type bytes", len(s.Graph), len(s2.Graph), len(s.Types), len(s2.Types))
	}
	switch {
	case fresh.cur != &fresh.items[2]:
		t.Errorf("cur does not point into items")
	case &fresh.win[0] != &fresh.items[1] || len(fresh.win) != 2 || cap(fresh.win) != cap(fresh.items)-1:
		t.Errorf("win is not items[1:3]: len %d cap %d", len(fresh.win), cap(fresh.win))
	case fresh.byName["two"] != fresh.cur:
		t.Errorf("the map's pointer is not cur")
	case fresh.shared != fresh.shared2 || fresh.arr[1] != fresh.shared:
		t.Errorf("shared pointers were not kept shared")
	case fresh.next.next != fresh || fresh.back != fresh:
		t.Errorf("cycle lost")
	case fresh.tab != freshTab || fresh.row != &freshTab.rows[3]:
		t.Errorf("references into the anchor do not point into the fresh anchor")
	case fresh.empty == nil || len(fresh.empty) != 0 || fresh.nilS != nil || fresh.nilMap != nil || fresh.ifaceNil != nil:
		t.Errorf("nil and empty not kept apart")
	case fresh.z == nil:
		t.Errorf("pointer to a zero-size value lost")
	case fresh.sh != freshSquare || fresh.sh.Area() != 25:
		t.Errorf("the interface's *square was not restored in place (area %d)", fresh.sh.Area())
	case fresh.val.Area() != 12:
		t.Errorf("value in an interface: area %d", fresh.val.Area())
	case fresh.keys[[2]int32{5, 6}] != 7 || len(fresh.keys) != 2:
		t.Errorf("map keys: %v", fresh.keys)
	case fresh.f() != 5 || freshF() != 5:
		t.Errorf("the fresh func does not see the restored state")
	case cap(fresh.shared.B) != 4 || fresh.shared.B == nil:
		t.Errorf("capacity of an empty slice lost")
	}
	for i := range 10 {
		if a, b := orig.rng.Uint64(), fresh.rng.Uint64(); a != b {
			t.Fatalf("random stream differs at draw %d: %d vs %d", i, a, b)
		}
	}
}

func TestDecode_FuncTheFreshBuildLacksIsAnError(t *testing.T) {
	orig := build(newTable())
	run(orig)
	c := NewCodec()
	s, err := c.Encode([]any{orig}, []any{orig.tab})
	if err != nil {
		t.Fatal(err)
	}
	tab := newTable()
	fresh := build(tab)
	fresh.f = nil
	err = newCodec().Decode(s, []any{fresh}, []any{tab})
	if err == nil || !strings.Contains(err.Error(), "graph.f") {
		t.Fatalf("got %v, want an error naming graph.f", err)
	}
}

func TestEncode_ChannelIsAnErrorNamingItsPath(t *testing.T) {
	type holder struct {
		inner struct{ ch chan int }
	}
	h := &holder{}
	h.inner.ch = make(chan int)
	_, err := NewCodec().Encode([]any{h}, nil)
	if err == nil || !strings.Contains(err.Error(), "inner.ch") {
		t.Fatalf("got %v, want an error naming inner.ch", err)
	}
}

func TestDecode_UnknownConcreteTypeIsRefused(t *testing.T) {
	type box struct{ v shape }
	orig := &box{v: rect{1, 2}}
	s, err := NewCodec().Encode([]any{orig}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = NewCodec().Decode(s, []any{&box{}}, nil)
	if err == nil || !strings.Contains(err.Error(), "rect") {
		t.Fatalf("got %v, want the unknown type named", err)
	}
	c := NewCodec()
	c.Register(rect{})
	got := &box{}
	if err := c.Decode(s, []any{got}, nil); err != nil || got.v.Area() != 2 {
		t.Fatalf("registered: %v, area %v", err, got.v)
	}
}

func TestDecode_CorruptOrTruncatedNeverPanics(t *testing.T) {
	orig := build(newTable())
	run(orig)
	s, err := NewCodec().Encode([]any{orig}, []any{orig.tab})
	if err != nil {
		t.Fatal(err)
	}
	for cut := 0; cut < len(s.Graph); cut += max(1, len(s.Graph)/97) {
		tab := newTable()
		err := newCodec().Decode(&Snapshot{Types: s.Types, Graph: s.Graph[:cut]}, []any{build(tab)}, []any{tab})
		if err == nil {
			t.Fatalf("graph cut at %d of %d bytes decoded", cut, len(s.Graph))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		g := bytes.Clone(s.Graph)
		g[rng.IntN(len(g))] ^= byte(1 + rng.IntN(255))
		tab := newTable()
		// A flipped byte may decode (a changed number); it must not panic.
		_ = newCodec().Decode(&Snapshot{Types: s.Types, Graph: g}, []any{build(tab)}, []any{tab})
	}
}

func TestDecode_AnotherFreshBuildIsRefused(t *testing.T) {
	orig := build(newTable())
	run(orig)
	s, err := NewCodec().Encode([]any{orig}, []any{orig.tab})
	if err != nil {
		t.Fatal(err)
	}
	tab := &table{rows: []int32{1, 2}}
	err = newCodec().Decode(s, []any{build(tab)}, []any{tab})
	if err == nil || !strings.Contains(err.Error(), "anchor") {
		t.Fatalf("got %v, want an anchor mismatch", err)
	}
}
