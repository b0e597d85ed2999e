package snapshot

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// A region is memory the graph reaches: the target of a pointer (one
// element) or the backing array of a slice (cap elements). Regions that
// overlap are merged into the outermost, so that a pointer into the middle
// of an array or a struct keeps pointing there after a restore.
type region struct {
	start, end uintptr
	ptr        unsafe.Pointer // start, as a pointer that keeps the memory alive
	elem       *typeInfo
	n          int
	id         int32 // assigned at first reference when encoding; -1 before
	order      int32 // discovery order (the smallest of merged regions')
	// next is the next region found at the same start (another type or
	// count), an index into discovery.found; -1 for none.
	next int32
	// live is the declaration (discovery.live) of which cells are live
	// when a Sparse value declared them for exactly this memory; -1 when
	// every cell is.
	live int32
	// logFrom and logTo are the region's block of discovery.log: where
	// the references its walk met went, when logged.
	logFrom, logTo int32
	logged         bool
	anchor         bool
	// exact, in a merged region, is the region found that spans exactly
	// it (its walk met what its encoding meets), -1 if none.
	exact int32
}

// regionList holds the regions a walk finds, in chunks: it grows by a
// chunk, never copying (a big fabric has hundreds of thousands).
type regionList struct {
	chunks [][]region
	n      int
}

const regionChunk = 1 << 13

func (l *regionList) len() int { return l.n }

func (l *regionList) at(i int32) *region {
	return &l.chunks[i/regionChunk][i%regionChunk]
}

func (l *regionList) add(r region) {
	c := l.n / regionChunk
	if c == len(l.chunks) {
		l.chunks = append(l.chunks, make([]region, regionChunk))
	}
	l.chunks[c][l.n%regionChunk] = r
	l.n++
}

// sliceHeader is the runtime's slice layout.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// pathSeg is one step of the path to the value being walked, for errors.
type pathSeg struct {
	name string
	idx  int // -1: a field name; else an index
}

// discovery walks a graph and collects its regions, maps and the
// concrete types its interfaces hold.
type discovery struct {
	ts *types
	// seen maps a start address to the first region found there (the
	// others at that address chain by region.next): a region is walked
	// once.
	seen    *addrTable
	found   *regionList
	maps    map[unsafe.Pointer]struct{}
	ifaces  map[reflect.Type]struct{}
	anchors []region // sorted, merged; nil while discovering the anchors
	path    []pathSeg
	// live are the declarations of live cells that Sparse values made,
	// ranges their [from, to) pairs.
	live      []liveDecl
	ranges    []int
	liveFirst int // the first declaration of the SnapshotLive call going on
	liveErr   error
	liveFn    func(slice any, from, to int)
	liveT     unsafe.Pointer // the type word of the last slice declared
	liveTI    *typeInfo      // its element type
	// log is what each reference a walk met refers to, in walk order, so
	// that encoding a region meets its references in its block without
	// looking them up: a found region i as i<<1 (|1 when found there, its
	// own block following), an anchor region k as -(k+2), and -1, t: skip
	// to t (past a map's entries, which are encoded elsewhere). noLog
	// counts the maps being walked.
	log   []int32
	noLog int
	// keepFuncs: funcs in interfaces are refused while encoding (the
	// decoder cannot keep one), allowed while collecting types.
	collecting bool
}

func newDiscovery(ts *types, anchors []region) *discovery {
	return &discovery{ts: ts, seen: newAddrTable(0), found: &regionList{}, maps: map[unsafe.Pointer]struct{}{},
		ifaces: map[reflect.Type]struct{}{}, anchors: anchors}
}

func (d *discovery) pathString() string { return renderPath(d.path) }

func renderPath(path []pathSeg) string {
	var sb strings.Builder
	for i, s := range path {
		if s.idx >= 0 {
			sb.WriteString("[" + strconv.Itoa(s.idx) + "]")
			continue
		}
		if i > 0 && !strings.HasPrefix(s.name, "[") {
			sb.WriteByte('.')
		}
		sb.WriteString(s.name)
	}
	return sb.String()
}

func (d *discovery) errorf(format string, args ...any) error {
	return fmt.Errorf("snapshot: %s: %s", d.pathString(), fmt.Sprintf(format, args...))
}

// inAnchor reports whether [a, a+size) lies in an anchor region, and an
// error when it straddles one's edge.
func inAnchor(anchors []region, a, size uintptr) (int, error) {
	if len(anchors) == 0 {
		return -1, nil
	}
	i, _ := slices.BinarySearchFunc(anchors, a, func(r region, a uintptr) int {
		switch {
		case r.end <= a:
			return -1
		case r.start > a:
			return 1
		}
		return 0
	})
	if i < len(anchors) && anchors[i].start <= a && a < anchors[i].end {
		if a+size > anchors[i].end {
			return -1, fmt.Errorf("memory at %#x straddles the end of an anchor", a)
		}
		return i, nil
	}
	if i < len(anchors) && a+size > anchors[i].start && size > 0 {
		return -1, fmt.Errorf("memory at %#x overlaps an anchor it does not lie in", a)
	}
	return -1, nil
}

// add records a region and returns it (its index in found, or -(k+2)
// for anchor region k, or -1 for no memory) and whether it is new (to be
// walked).
func (d *discovery) add(p unsafe.Pointer, elem *typeInfo, n int) (int32, bool, error) {
	if elem.size == 0 || n == 0 {
		return -1, false, nil
	}
	a := uintptr(p)
	i := int32(d.found.len())
	next := int32(-1)
	j, ok := d.seen.get(a)
	if !ok {
		// Not met yet: in an anchor (the table then says which, for the
		// next time), or a new region.
		k, err := inAnchor(d.anchors, a, elem.size*uintptr(n))
		if err != nil {
			return -1, false, d.errorf("%v", err)
		}
		if k >= 0 {
			d.seen.put(a, -int32(k)-2)
			return -int32(k) - 2, false, nil
		}
	}
	if ok && j < 0 {
		return j, false, nil // an anchor's
	}
	if ok {
		for k := j; k >= 0; k = d.found.at(k).next {
			if r := d.found.at(k); r.elem == elem && r.n == n {
				return k, false, nil
			}
		}
		// Chain after the first region at a (the table keeps pointing
		// at it).
		first := d.found.at(j)
		next, first.next = first.next, i
	} else {
		d.seen.put(a, i)
	}
	d.found.add(region{start: a, end: a + elem.size*uintptr(n), ptr: p, elem: elem, n: n, id: -1,
		order: i, next: next, live: -1, exact: -1})
	return i, true, nil
}

// logRef logs a reference to what add returned, and says whether to walk
// it.
func (d *discovery) logRef(i int32, isNew bool) bool {
	if i != -1 && d.noLog == 0 && !d.collecting {
		if i >= 0 {
			i <<= 1
			if isNew {
				i |= 1
			}
		}
		d.log = append(d.log, i)
	}
	return isNew
}

// walkRegion walks found region i, which holds n elems at p, logging the
// references it meets into its block.
func (d *discovery) walkRegion(i int32, p unsafe.Pointer, elem *typeInfo, n int) error {
	saved := d.noLog
	d.noLog = 0
	from := int32(len(d.log))
	err := d.walkArray(p, elem, n)
	r := d.found.at(i)
	r.logFrom, r.logTo, r.logged = from, int32(len(d.log)), !d.collecting
	d.noLog = saved
	return err
}

// walk visits the value of type ti at p.
func (d *discovery) walk(p unsafe.Pointer, ti *typeInfo) error {
	if ti.raw {
		return nil
	}
	switch ti.kind {
	case reflect.Struct:
		if ti.sparse && !d.collecting {
			if err := d.declareLive(p, ti); err != nil {
				return err
			}
		}
		for _, o := range ti.ops {
			if o.ti == nil {
				continue
			}
			d.path = append(d.path, pathSeg{name: o.name, idx: -1})
			err := d.walk(unsafe.Add(p, o.off), o.ti)
			d.path = d.path[:len(d.path)-1]
			if err != nil {
				return err
			}
		}
	case reflect.Array:
		return d.walkArray(p, ti.elem, ti.n)
	case reflect.Pointer:
		q := *(*unsafe.Pointer)(p)
		if q == nil {
			return nil
		}
		i, isNew, err := d.add(q, ti.elem, 1)
		if err != nil || !d.logRef(i, isNew) {
			return err
		}
		d.path = append(d.path, pathSeg{name: "*", idx: -1})
		err = d.walkRegion(i, q, ti.elem, 1)
		d.path = d.path[:len(d.path)-1]
		return err
	case reflect.Slice:
		h := (*sliceHeader)(p)
		if h.data == nil || h.cap == 0 {
			return nil
		}
		i, isNew, err := d.add(h.data, ti.elem, h.cap)
		if err != nil || !d.logRef(i, isNew) {
			return err
		}
		return d.walkRegion(i, h.data, ti.elem, h.cap)
	case reflect.String:
	case reflect.Map:
		return d.walkMap(p, ti)
	case reflect.Interface:
		v := reflect.NewAt(ti.t, p).Elem()
		if v.IsNil() {
			return nil
		}
		dv := v.Elem()
		dt := dv.Type()
		d.ifaces[dt] = struct{}{}
		dti := d.ts.info(dt)
		switch dt.Kind() {
		case reflect.Pointer:
			q := dv.UnsafePointer()
			i, isNew, err := d.add(q, dti.elem, 1)
			if err != nil || !d.logRef(i, isNew) {
				return err
			}
			d.path = append(d.path, pathSeg{name: "(" + dt.String() + ")", idx: -1})
			err = d.walkRegion(i, q, dti.elem, 1)
			d.path = d.path[:len(d.path)-1]
			return err
		case reflect.Func, reflect.Chan, reflect.UnsafePointer:
			if !d.collecting {
				return d.errorf("an interface holds a %v, which a snapshot cannot keep", dt)
			}
			return nil
		default:
			tmp := reflect.New(dt).Elem()
			tmp.Set(dv)
			d.path = append(d.path, pathSeg{name: "(" + dt.String() + ")", idx: -1})
			err := d.walk(tmp.Addr().UnsafePointer(), dti)
			d.path = d.path[:len(d.path)-1]
			return err
		}
	case reflect.Func:
	case reflect.Chan:
		if *(*unsafe.Pointer)(p) != nil && !d.collecting {
			return d.errorf("a channel (%v): a snapshot cannot keep one", ti.t)
		}
	case reflect.UnsafePointer:
		if *(*unsafe.Pointer)(p) != nil && !d.collecting {
			return d.errorf("an unsafe.Pointer: a snapshot cannot keep one")
		}
	default:
		return d.errorf("unexpected kind %v", ti.kind)
	}
	return nil
}

// Sparse is implemented by types that keep slices of which only some
// cells are live (a ring's cells between its head and tail, a pool's
// slots in use): SnapshotLive calls live for each such slice (a pointer
// to it) with each run [from, to) of live cells, in increasing order; a
// call with from == to declares a slice with nothing live. A snapshot
// encodes only the live cells of a declared slice's backing array (when
// nothing else makes the array's region bigger), and a restore leaves
// the others zero: only for cells no one reads before writing them again.
// The declarations must be the same for the same state (a restored value
// declares what the original did).
type Sparse interface {
	SnapshotLive(live func(slice any, from, to int))
}

// liveDecl is one slice's live cells: ranges[from:to] (pairs).
type liveDecl struct {
	data     uintptr
	elem     *typeInfo
	n        int
	from, to int
	last     int // the end of the last range
}

// declareLive asks the Sparse value of type ti at p for its live cells.
func (d *discovery) declareLive(p unsafe.Pointer, ti *typeInfo) error {
	if d.liveFn == nil {
		d.liveFn = d.declare
	}
	d.liveFirst = len(d.live)
	// The value as a Sparse: the type's template with p for its data
	// word (an interface is a type word and a data word), which saves
	// reflect's work per value; a ring per link is many values.
	v := ti.sparseAt
	(*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1] = p
	v.SnapshotLive(d.liveFn)
	if d.liveErr != nil {
		return d.errorf("%v.SnapshotLive: %v", ti.t, d.liveErr)
	}
	return nil
}

// declare records live cells [from, to) of *slice.
func (d *discovery) declare(slice any, from, to int) {
	if d.liveErr != nil {
		return
	}
	// slice is a *[]T: its type word says which (the last one is kept),
	// its data word points at the slice's header.
	words := (*[2]unsafe.Pointer)(unsafe.Pointer(&slice))
	if words[0] != d.liveT {
		t := reflect.TypeOf(slice)
		if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Slice {
			d.liveErr = fmt.Errorf("declared a %T, not a pointer to a slice", slice)
			return
		}
		d.liveT, d.liveTI = words[0], d.ts.info(t.Elem().Elem())
	}
	if words[1] == nil {
		d.liveErr = fmt.Errorf("declared a nil %T", slice)
		return
	}
	h := (*sliceHeader)(words[1])
	c := h.cap
	if from < 0 || to < from || to > c {
		d.liveErr = fmt.Errorf("live cells [%d, %d) of a slice of capacity %d", from, to, c)
		return
	}
	if c == 0 {
		return
	}
	a := uintptr(h.data)
	if k := len(d.live); k > d.liveFirst && d.live[k-1].data == a {
		l := &d.live[k-1]
		if from < l.last {
			d.liveErr = fmt.Errorf("live cells [%d, %d) after cells up to %d: declare them in order", from, to, l.last)
			return
		}
		if to > from {
			d.ranges = append(d.ranges, from, to)
			l.to, l.last = len(d.ranges), to
		}
		return
	}
	l := liveDecl{data: a, elem: d.liveTI, n: c, from: len(d.ranges)}
	if to > from {
		d.ranges = append(d.ranges, from, to)
		l.last = to
	}
	l.to = len(d.ranges)
	d.live = append(d.live, l)
}

// attachLive points each declaration's region (the slice's backing array
// as found) at it.
func (d *discovery) attachLive() {
	for i := range d.live {
		l := &d.live[i]
		j, ok := d.seen.get(l.data)
		for k := j; ok && k >= 0; k = d.found.at(k).next {
			if r := d.found.at(k); r.elem == l.elem && r.n == l.n {
				if r.live < 0 { // the first declaration
					r.live = int32(i)
				}
				break
			}
		}
	}
}

// walkMap walks the entries of the map of type ti at p.
func (d *discovery) walkMap(p unsafe.Pointer, ti *typeInfo) error {
	m := reflect.NewAt(ti.t, p).Elem()
	if m.IsNil() {
		return nil
	}
	mp := m.UnsafePointer()
	if _, ok := d.maps[mp]; ok {
		return nil
	}
	d.maps[mp] = struct{}{}
	if !ti.key.refFree {
		return d.errorf("map %v: only keys of plain data and strings can be ordered", ti.t)
	}
	if ti.elem.raw {
		return nil
	}
	// The entries' references are not the region's (the map's content is
	// encoded on its own): the region's block skips them.
	mark := -1
	if !d.collecting && d.noLog == 0 {
		mark = len(d.log)
		d.log = append(d.log, -1, 0)
	}
	d.noLog++
	err := d.walkEntries(m, ti)
	d.noLog--
	if mark >= 0 {
		d.log[mark+1] = int32(len(d.log))
	}
	return err
}

func (d *discovery) walkEntries(m reflect.Value, ti *typeInfo) error {
	it := m.MapRange()
	tmp := reflect.New(ti.elem.t).Elem()
	for it.Next() {
		tmp.Set(it.Value())
		d.path = append(d.path, pathSeg{name: "[" + fmt.Sprint(it.Key().Interface()) + "]", idx: -1})
		err := d.walk(tmp.Addr().UnsafePointer(), ti.elem)
		d.path = d.path[:len(d.path)-1]
		if err != nil {
			return err
		}
		// tmp is reused: what it points to is referenced by the map.
		tmp = reflect.New(ti.elem.t).Elem()
	}
	return nil
}

func (d *discovery) walkArray(p unsafe.Pointer, elem *typeInfo, n int) error {
	if elem.raw {
		return nil
	}
	for i := range n {
		if n > 1 {
			d.path = append(d.path, pathSeg{idx: i})
		}
		err := d.walk(unsafe.Add(p, uintptr(i)*elem.size), elem)
		if n > 1 {
			d.path = d.path[:len(d.path)-1]
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// merge sorts regions by address and merges those that overlap into the
// outermost (or, for two slices of one array, their union), into out
// (reused). owner[i] is the index in the result of the region holding
// rs[i].
func merge(rs *regionList, sc *mergeScratch) (out []region, owner []int32, err error) {
	order := sc.sortRegions(rs)
	out = make([]region, 0, rs.len()) // holds pointers: not kept
	if cap(sc.owner) < rs.len() {
		sc.owner = make([]int32, rs.len())
	}
	owner = sc.owner[:rs.len()]
	for _, k := range order {
		r := rs.at(k.i)
		if n := len(out); n > 0 && r.start < out[n-1].end {
			o := &out[n-1]
			owner[k.i] = int32(n - 1)
			o.order = min(o.order, r.order)
			if r.end <= o.end {
				if o.live < 0 && r.live >= 0 && r.start == o.start && r.end == o.end && r.elem == o.elem {
					o.live = r.live // the same array, declared
				}
				continue // inside o
			}
			o.live, o.exact = -1, -1 // a union of two views: every cell
			// Partial overlap: only two views of one array can be joined.
			if o.elem != r.elem || (r.start-o.start)%o.elem.size != 0 {
				return nil, nil, fmt.Errorf("snapshot: a %v at %#x overlaps a %v at %#x", r.elem.t, r.start, o.elem.t, o.start)
			}
			o.end = r.end
			o.n = int((o.end - o.start) / o.elem.size)
			continue
		}
		owner[k.i] = int32(len(out))
		out = append(out, *r)
		out[len(out)-1].next, out[len(out)-1].exact = -1, k.i
	}
	return out, owner, nil
}

// mergeScratch is merge's memory, kept from one Encode to the next.
type mergeScratch struct {
	keys, tmp []sortKey
	owner     []int32
}

type sortKey struct {
	start uintptr
	i     int32
}

// sortRegions returns rs's indices ordered by start, the larger first at
// one start, an array before one element of the same size: a radix sort
// by start (addresses differ in few of their bits, and most regions are
// alone at their start), then each run of one start by the rest.
func (sc *mergeScratch) sortRegions(rs *regionList) []sortKey {
	n := rs.len()
	if cap(sc.keys) < n {
		sc.keys, sc.tmp = make([]sortKey, n), make([]sortKey, n)
	}
	ks, tmp := sc.keys[:n], sc.tmp[:n]
	for i := range n {
		ks[i] = sortKey{rs.at(int32(i)).start, int32(i)}
	}
	const bits = 11
	var count [1 << bits]int
	for shift := uint(0); shift < 64; shift += bits {
		clear(count[:])
		for _, k := range ks {
			count[(k.start>>shift)&(1<<bits-1)]++
		}
		if n == 0 || count[(ks[0].start>>shift)&(1<<bits-1)] == n {
			continue // every key has this digit
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, k := range ks {
			d := (k.start >> shift) & (1<<bits - 1)
			tmp[count[d]] = k
			count[d]++
		}
		ks, tmp = tmp, ks
	}
	sc.keys, sc.tmp = ks[:cap(ks)], tmp[:cap(tmp)]
	for i := 0; i < n; {
		j := i + 1
		for j < n && ks[j].start == ks[i].start {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(ks[i:j], func(a, b sortKey) int {
				ra, rb := rs.at(a.i), rs.at(b.i)
				switch {
				case ra.end != rb.end:
					if ra.end > rb.end {
						return -1
					}
					return 1
				case ra.n != rb.n:
					if ra.n > rb.n {
						return -1
					}
					return 1
				}
				return int(a.i - b.i)
			})
		}
		i = j
	}
	return ks
}

// addrTable maps addresses (never 0) to int32s: open addressing with
// linear probing, a key beside its value (one cache miss a lookup),
// cheaper than a Go map for the hundreds of thousands of regions of a big
// fabric.
type addrTable struct {
	slots []addrSlot
	n     int
	shift uint
}

type addrSlot struct {
	key uintptr // 0: empty
	val int32
}

func newAddrTable(hint int) *addrTable {
	t := &addrTable{}
	t.reset(hint)
	return t
}

// reset empties t, sized for hint keys.
func (t *addrTable) reset(hint int) {
	size, shift := 1024, uint(64-10)
	for size < 2*hint {
		size, shift = size*2, shift-1
	}
	if len(t.slots) == size {
		clear(t.slots)
	} else {
		t.slots = make([]addrSlot, size)
	}
	t.n, t.shift = 0, shift
}

func (t *addrTable) slot(a uintptr) int {
	return int((uint64(a) * 0x9E3779B97F4A7C15) >> t.shift)
}

func (t *addrTable) get(a uintptr) (int32, bool) {
	mask := len(t.slots) - 1
	for i := t.slot(a); ; i = (i + 1) & mask {
		switch s := &t.slots[i]; s.key {
		case a:
			return s.val, true
		case 0:
			return 0, false
		}
	}
}

// put adds a, which t does not hold.
func (t *addrTable) put(a uintptr, v int32) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]addrSlot, 2*len(old))
		t.n, t.shift = 0, t.shift-1
		for _, s := range old {
			if s.key != 0 {
				t.put(s.key, s.val)
			}
		}
	}
	mask := len(t.slots) - 1
	i := t.slot(a)
	for t.slots[i].key != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = addrSlot{a, v}
	t.n++
}

// find returns the index of the region of rs (sorted, disjoint) holding a.
func find(rs []region, a uintptr) int {
	i, ok := slices.BinarySearchFunc(rs, a, func(r region, a uintptr) int {
		switch {
		case r.end <= a:
			return -1
		case r.start > a:
			return 1
		}
		return 0
	})
	if !ok {
		return -1
	}
	return i
}
