package snapshot

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime/metrics"
	"slices"
	"unsafe"
)

// Reference tags.
const (
	tagNil   = 0
	tagNew   = 1 // a region first referenced here: type, count, then offset
	tagRef   = 2 // a region referenced before: id, then offset
	tagEmpty = 3 // a non-nil pointer or slice to no memory (size 0)
)

// Codec encodes and restores object graphs. It caches per-type plans and
// the anchors' regions, so one Codec serves a run's every checkpoint.
// A Codec is not safe for concurrent use.
type Codec struct {
	ts *types
	// anchorsFor caches the anchors' regions by their first pointer.
	anchorKey []uintptr
	anchorRs  []region
	// registered are types Decode may meet that a fresh build lacks.
	registered []reflect.Type
	// Scratch kept from one Encode to the next (a run checkpoints the same
	// graph again and again), only what holds no pointers (the collector
	// need not scan it, nor the graph through it): the graph buffer,
	// which a Snapshot's Graph aliases until the next Encode, the table
	// of addresses seen, the sort keys and owners, the live ranges and
	// the log. lastFound is how many regions the last Encode found.
	buf       []byte
	seen      *addrTable
	merge     mergeScratch
	rngs      []int
	log       []int32
	lastFound int
	// lookups counts the references Encode looked up, not met in a
	// region's log (tests).
	lookups int
}

// NewCodec returns a Codec.
func NewCodec() *Codec { return &Codec{ts: newTypes()} }

// Snapshot is an encoded graph: its type table and its values. From
// Encode, Graph is valid until the Codec's next Encode.
type Snapshot struct {
	Types []byte
	Graph []byte
}

// encoder is one Encode call's state.
type encoder struct {
	c      *Codec
	rs     []region // the state's maximal regions, sorted
	ars    []region // the anchors', sorted (ids fixed by anchorRegions)
	seen   *addrTable
	owner  []int32 // found region i lies in rs[owner[i]]
	live   []liveDecl
	ranges []int
	found  *regionList
	// log is discovery's; [logAt, logEnd) is the block of the region
	// being encoded that is left to meet.
	log           []int32
	logAt, logEnd int
	maps          map[unsafe.Pointer]int32
	nextID        int32
	queue         []int32 // regions (index into rs) and maps (-1-index into mapq) to encode
	mapq          []queuedMap
	buf           []byte
	typeIDs       map[*typeInfo]uint32
	tlist         []*typeInfo
}

// queuedMap is a map whose content is to be encoded.
type queuedMap struct {
	m   reflect.Value
	mti *typeInfo
}

func pointerOf(v any) (unsafe.Pointer, reflect.Type, error) {
	rv := reflect.ValueOf(v)
	switch {
	case !rv.IsValid():
		return nil, nil, fmt.Errorf("snapshot: a nil root or anchor")
	case rv.Kind() == reflect.Pointer:
		if rv.IsNil() {
			return nil, nil, fmt.Errorf("snapshot: a nil %v root or anchor", rv.Type())
		}
		return rv.UnsafePointer(), rv.Type().Elem(), nil
	}
	return nil, nil, fmt.Errorf("snapshot: a root or anchor must be a pointer, got %v", rv.Type())
}

// anchorOf is an anchor's memory: a pointer's target (n 1) or a slice's
// backing array (n its capacity).
func anchorOf(v any) (unsafe.Pointer, reflect.Type, int, error) {
	rv := reflect.ValueOf(v)
	if rv.IsValid() && rv.Kind() == reflect.Slice {
		if rv.Cap() == 0 {
			return nil, rv.Type().Elem(), 0, nil
		}
		return rv.UnsafePointer(), rv.Type().Elem(), rv.Cap(), nil
	}
	p, t, err := pointerOf(v)
	return p, t, 1, err
}

// anchorRegions walks the anchors (pointers to immutable structure that
// a fresh build recreates identically) and returns their maximal
// regions, in address order.
func (c *Codec) anchorRegions(anchors []any) ([]region, error) {
	key := make([]uintptr, 0, len(anchors))
	for _, a := range anchors {
		p, _, _, err := anchorOf(a)
		if err != nil {
			return nil, err
		}
		key = append(key, uintptr(p))
	}
	if c.anchorRs != nil && slices.Equal(key, c.anchorKey) {
		return c.anchorRs, nil
	}
	d := newDiscovery(c.ts, nil)
	d.collecting = true
	for i, a := range anchors {
		p, t, n, _ := anchorOf(a)
		if n == 0 {
			continue
		}
		ti := c.ts.info(t)
		d.path = []pathSeg{{name: fmt.Sprintf("anchor%d(%v)", i, t), idx: -1}}
		i, isNew, err := d.add(p, ti, n)
		if err != nil {
			return nil, err
		}
		if !isNew {
			continue
		}
		if err := d.walkRegion(i, p, ti, n); err != nil {
			return nil, err
		}
	}
	rs, _, err := merge(d.found, &mergeScratch{})
	if err != nil {
		return nil, err
	}
	for i := range rs {
		rs[i].anchor = true
	}
	// Anchors take the first ids, in their discovery order; Decode walks
	// the fresh anchors into the same list.
	for i, r := range inOrder(rs) {
		rs[find(rs, r.start)].id = int32(i)
	}
	c.anchorKey, c.anchorRs = key, rs
	return rs, nil
}

// inOrder is anchor regions in discovery order, which two builds share
// (their addresses differ).
func inOrder(rs []region) []region {
	o := slices.Clone(rs)
	slices.SortFunc(o, func(a, b region) int { return int(a.order - b.order) })
	return o
}

// Encode snapshots the graph reachable from roots, each a non-nil pointer
// (restored in place by Decode). Memory reachable from anchors is not
// encoded: references into it are, by position, and Decode points them
// into the fresh build's anchors.
func (c *Codec) Encode(roots, anchors []any) (*Snapshot, error) {
	ars, err := c.anchorRegions(anchors)
	if err != nil {
		return nil, err
	}
	d := newDiscovery(c.ts, ars)
	if c.seen == nil {
		// The first Encode: size the table for about as many regions as
		// the heap has objects (1.6 regions an object at k=32, pointers
		// into arrays counted), not growing it a dozen times.
		c.seen = newAddrTable(0)
		c.lastFound = heapObjects() * 3 / 2
	}
	c.seen.reset(c.lastFound)
	d.seen = c.seen
	d.ranges, d.log = c.rngs[:0], c.log[:0]
	rootTI := make([]*typeInfo, len(roots))
	rootP := make([]unsafe.Pointer, len(roots))
	for i, r := range roots {
		p, t, err := pointerOf(r)
		if err != nil {
			return nil, err
		}
		ti := c.ts.info(t)
		rootTI[i], rootP[i] = ti, p
		if k, _ := inAnchor(ars, uintptr(p), ti.size); k >= 0 {
			return nil, fmt.Errorf("snapshot: root %d (%v) lies in an anchor", i, t)
		}
		d.path = []pathSeg{{name: t.Name(), idx: -1}}
		k, isNew, err := d.add(p, ti, 1)
		if err != nil {
			return nil, err
		}
		if !isNew {
			continue // given twice: refused below
		}
		if err := d.walkRegion(k, p, ti, 1); err != nil {
			return nil, err
		}
	}
	c.seen, c.rngs, c.log, c.lastFound = d.seen, d.ranges, d.log, d.found.len()
	d.attachLive()
	state, owner, err := merge(d.found, &c.merge)
	if err != nil {
		return nil, err
	}
	// The graph takes about its regions' bytes: size the buffer once (a
	// run's first checkpoint would otherwise copy it as it doubles).
	size := 1 << 16
	for i := range state {
		r := &state[i]
		if r.live < 0 {
			size += int(r.end-r.start) + 8
			continue
		}
		l := &d.live[r.live]
		for k := l.from; k < l.to; k += 2 {
			size += (d.ranges[k+1]-d.ranges[k])*int(r.elem.size) + 4
		}
	}
	if size += size / 8; cap(c.buf) < size {
		c.buf = make([]byte, 0, size)
	}
	e := &encoder{c: c, rs: state, ars: ars, seen: d.seen, owner: owner, live: d.live, ranges: d.ranges, found: d.found, log: d.log, maps: map[unsafe.Pointer]int32{},
		typeIDs: map[*typeInfo]uint32{}, buf: c.buf[:0], queue: make([]int32, 0, len(state)+len(roots))}
	e.nextID = int32(len(ars))
	e.buf = binary.AppendUvarint(e.buf, uint64(len(ars)))
	for _, r := range inOrder(ars) {
		e.buf = binary.AppendUvarint(e.buf, uint64(e.typeID(r.elem)))
		e.buf = binary.AppendUvarint(e.buf, uint64(r.n))
	}
	// Then the roots, which must be whole regions.
	e.buf = binary.AppendUvarint(e.buf, uint64(len(roots)))
	for i, p := range rootP {
		k := e.lookup(uintptr(p))
		if k < 0 || e.rs[k].start != uintptr(p) || e.rs[k].elem != rootTI[i] || e.rs[k].n != 1 {
			return nil, fmt.Errorf("snapshot: root %d (%v) lies inside another object of the graph", i, rootTI[i].t)
		}
		if e.rs[k].id >= 0 {
			return nil, fmt.Errorf("snapshot: root %d (%v) given twice", i, rootTI[i].t)
		}
		e.rs[k].id = e.nextID
		e.rs[k].live = -1 // a root's cells are all written
		e.nextID++
		e.buf = binary.AppendUvarint(e.buf, uint64(e.typeID(rootTI[i])))
		e.queue = append(e.queue, int32(k))
	}
	for h := 0; h < len(e.queue); h++ {
		if q := e.queue[h]; q >= 0 {
			r := &e.rs[q]
			e.logAt, e.logEnd = 0, 0
			if r.exact >= 0 {
				if f := e.found.at(r.exact); f.logged {
					e.logAt, e.logEnd = int(f.logFrom), int(f.logTo)
				}
			}
			var err error
			if r.live >= 0 {
				err = e.sparse(r)
			} else {
				err = e.array(r.ptr, r.elem, r.n)
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		e.logAt, e.logEnd = 0, 0
		m := e.mapq[-e.queue[h]-1]
		if err := e.mapContent(m.m, m.mti); err != nil {
			return nil, err
		}
	}
	var tb []byte
	for i := 0; i < len(e.tlist); i++ { // typeID may append while this runs
		ti := e.tlist[i]
		tb = appendString(tb, typeKey(ti.t))
		tb = binary.AppendUvarint(tb, uint64(ti.kind))
		tb = append(tb, ti.layout[:]...)
		switch ti.kind {
		case reflect.Pointer, reflect.Slice:
			tb = binary.AppendUvarint(tb, uint64(e.typeID(ti.elem)))
		case reflect.Array:
			tb = binary.AppendUvarint(tb, uint64(e.typeID(ti.elem)))
			tb = binary.AppendUvarint(tb, uint64(ti.n))
		case reflect.Map:
			tb = binary.AppendUvarint(tb, uint64(e.typeID(ti.key)))
			tb = binary.AppendUvarint(tb, uint64(e.typeID(ti.elem)))
		default:
		}
	}
	tb = append(binary.AppendUvarint(nil, uint64(len(e.tlist))), tb...)
	c.buf = e.buf
	return &Snapshot{Types: tb, Graph: e.buf}, nil
}

// replay returns the region discovery logged for the next reference of
// the region being encoded (its index in rs, or -(k+2) for anchor region
// k), if it holds a (else -1, and the rest of the
// block is not used: a cell discovery walked and the encoding skips, a
// dead one, put it out of step).
func (e *encoder) replay(a uintptr) int {
	for e.logAt < e.logEnd {
		v := e.log[e.logAt]
		e.logAt++
		var k int
		var r *region
		switch {
		case v == -1:
			e.logAt = int(e.log[e.logAt])
			continue
		case v < -1:
			k = int(v)
			r = &e.ars[-v-2]
		default:
			if v&1 == 1 {
				e.logAt = int(e.found.at(v >> 1).logTo) // past its own block
			}
			k = int(e.owner[v>>1])
			r = &e.rs[k]
		}
		if r.start <= a && a < r.end {
			return k
		}
		e.logAt = e.logEnd
	}
	return -1
}

// heapObjects is the number of objects on the heap.
func heapObjects() int {
	s := []metrics.Sample{{Name: "/gc/heap/objects:objects"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int(min(s[0].Value.Uint64(), 1<<28))
}

// lookup returns the index of the state region holding a, or -1: found
// by the table of the addresses discovery met (every pointer's and
// slice's), else by a binary search.
func (e *encoder) lookup(a uintptr) int {
	if i, ok := e.seen.get(a); ok {
		return int(e.owner[i])
	}
	return find(e.rs, a)
}

// typeID numbers the types the graph names (regions, interfaces).
func (e *encoder) typeID(ti *typeInfo) uint32 {
	if id, ok := e.typeIDs[ti]; ok {
		return id
	}
	id := uint32(len(e.tlist))
	e.typeIDs[ti] = id
	e.tlist = append(e.tlist, ti)
	return id
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// ref writes a reference to the memory at q, of element type elem: the
// region holding it and the offset.
func (e *encoder) ref(q unsafe.Pointer) error {
	k := e.replay(uintptr(q))
	if k == -1 {
		e.c.lookups++
		if k = e.lookup(uintptr(q)); k < 0 {
			if a := find(e.ars, uintptr(q)); a >= 0 {
				k = -a - 2
			} else {
				return fmt.Errorf("snapshot: internal: no region holds %#x", uintptr(q))
			}
		}
	}
	var r *region
	if k >= 0 {
		r = &e.rs[k]
	} else {
		r = &e.ars[-k-2] // an anchor's id is set
	}
	if r.id < 0 {
		r.id = e.nextID
		e.nextID++
		e.buf = append(e.buf, tagNew)
		e.buf = binary.AppendUvarint(e.buf, uint64(e.typeID(r.elem)))
		// The count, doubled, and 1 if only the live cells follow.
		c := uint64(r.n) << 1
		if r.live >= 0 {
			c |= 1
		}
		e.buf = binary.AppendUvarint(e.buf, c)
		e.queue = append(e.queue, int32(k))
	} else {
		e.buf = append(e.buf, tagRef)
		e.buf = binary.AppendUvarint(e.buf, uint64(r.id))
	}
	e.buf = binary.AppendUvarint(e.buf, uint64(uintptr(q)-r.start))
	return nil
}

func (e *encoder) array(p unsafe.Pointer, elem *typeInfo, n int) error {
	if elem.raw {
		e.buf = append(e.buf, unsafe.Slice((*byte)(p), uintptr(n)*elem.size)...)
		return nil
	}
	for i := range n {
		if err := e.value(unsafe.Add(p, uintptr(i)*elem.size), elem); err != nil {
			return err
		}
	}
	return nil
}

// sparse writes a region's live cells: the number of runs, then for each
// the cells skipped since the last, its length and its cells.
func (e *encoder) sparse(r *region) error {
	l := &e.live[r.live]
	rs := e.ranges[l.from:l.to]
	e.buf = binary.AppendUvarint(e.buf, uint64(len(rs)/2))
	at := 0
	for i := 0; i < len(rs); i += 2 {
		from, to := rs[i], rs[i+1]
		e.buf = binary.AppendUvarint(e.buf, uint64(from-at))
		e.buf = binary.AppendUvarint(e.buf, uint64(to-from))
		if err := e.array(unsafe.Add(r.ptr, uintptr(from)*r.elem.size), r.elem, to-from); err != nil {
			return err
		}
		at = to
	}
	return nil
}

// value writes the value of type ti at p.
func (e *encoder) value(p unsafe.Pointer, ti *typeInfo) error {
	if ti.raw {
		e.buf = append(e.buf, unsafe.Slice((*byte)(p), ti.size)...)
		return nil
	}
	switch ti.kind {
	case reflect.Struct:
		for _, o := range ti.ops {
			if o.ti == nil {
				e.buf = append(e.buf, unsafe.Slice((*byte)(unsafe.Add(p, o.off)), o.size)...)
				continue
			}
			if err := e.value(unsafe.Add(p, o.off), o.ti); err != nil {
				return err
			}
		}
	case reflect.Array:
		return e.array(p, ti.elem, ti.n)
	case reflect.Pointer:
		q := *(*unsafe.Pointer)(p)
		switch {
		case q == nil:
			e.buf = append(e.buf, tagNil)
		case ti.elem.size == 0:
			e.buf = append(e.buf, tagEmpty)
		default:
			return e.ref(q)
		}
	case reflect.Slice:
		h := (*sliceHeader)(p)
		switch {
		case h.data == nil:
			e.buf = append(e.buf, tagNil)
		case h.cap == 0 || ti.elem.size == 0:
			e.buf = append(e.buf, tagEmpty)
			e.buf = binary.AppendUvarint(e.buf, uint64(h.len))
			e.buf = binary.AppendUvarint(e.buf, uint64(h.cap))
		default:
			if err := e.ref(h.data); err != nil {
				return err
			}
			e.buf = binary.AppendUvarint(e.buf, uint64(h.len))
			e.buf = binary.AppendUvarint(e.buf, uint64(h.cap))
		}
	case reflect.String:
		e.buf = appendString(e.buf, *(*string)(p))
	case reflect.Map:
		m := reflect.NewAt(ti.t, p).Elem()
		if m.IsNil() {
			e.buf = append(e.buf, tagNil)
			return nil
		}
		mp := m.UnsafePointer()
		if id, ok := e.maps[mp]; ok {
			e.buf = append(e.buf, tagRef)
			e.buf = binary.AppendUvarint(e.buf, uint64(id))
			return nil
		}
		e.maps[mp] = e.nextID
		e.nextID++
		e.buf = append(e.buf, tagNew)
		e.mapq = append(e.mapq, queuedMap{m, ti})
		e.queue = append(e.queue, -int32(len(e.mapq)))
	case reflect.Interface:
		v := reflect.NewAt(ti.t, p).Elem()
		if v.IsNil() {
			e.buf = append(e.buf, tagNil)
			return nil
		}
		dv := v.Elem()
		dti := e.c.ts.info(dv.Type())
		e.buf = binary.AppendUvarint(e.buf, uint64(e.typeID(dti))+1)
		if dti.kind == reflect.Pointer {
			q := dv.UnsafePointer()
			if dti.elem.size == 0 {
				e.buf = append(e.buf, tagEmpty)
				return nil
			}
			return e.ref(q)
		}
		tmp := reflect.New(dti.t).Elem()
		tmp.Set(dv)
		return e.value(tmp.Addr().UnsafePointer(), dti)
	case reflect.Func:
		if *(*unsafe.Pointer)(p) == nil {
			e.buf = append(e.buf, 0)
		} else {
			e.buf = append(e.buf, 1)
		}
	case reflect.Chan, reflect.UnsafePointer:
		e.buf = append(e.buf, tagNil) // discovery refused non-nil ones
	default:
		return fmt.Errorf("snapshot: unexpected kind %v", ti.kind)
	}
	return nil
}

// mapContent writes a map's entries in the order of their keys' encoding
// (keys are plain data and strings).
func (e *encoder) mapContent(m reflect.Value, ti *typeInfo) error {
	type entry struct {
		key []byte
		v   reflect.Value
	}
	entries := make([]entry, 0, m.Len())
	it := m.MapRange()
	kt := reflect.New(ti.key.t).Elem()
	for it.Next() {
		kt.Set(it.Key())
		var kb []byte
		saved := e.buf
		e.buf = nil
		if err := e.value(kt.Addr().UnsafePointer(), ti.key); err != nil {
			return err
		}
		kb, e.buf = e.buf, saved
		entries = append(entries, entry{kb, it.Value()})
	}
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
	e.buf = binary.AppendUvarint(e.buf, uint64(len(entries)))
	vt := reflect.New(ti.elem.t).Elem()
	for _, en := range entries {
		e.buf = append(e.buf, en.key...)
		vt.Set(en.v)
		if err := e.value(vt.Addr().UnsafePointer(), ti.elem); err != nil {
			return err
		}
	}
	return nil
}
