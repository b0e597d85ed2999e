package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"unsafe"
)

// ErrMismatch marks a snapshot that does not fit the graph it is decoded
// into: another build's types, or a fresh build that is not the one the
// snapshot was taken from.
var ErrMismatch = errors.New("snapshot: does not match this build")

// corrupt is panicked by the reader and recovered by Decode.
type corrupt struct{ msg string }

type reader struct {
	b   []byte
	off int
}

func (r *reader) fail(format string, args ...any) {
	panic(corrupt{fmt.Sprintf(format, args...)})
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad varint at byte %d", r.off)
	}
	r.off += n
	return v
}

// count reads a count that needs at least min bytes per unit from what
// is left.
func (r *reader) count(perUnit uint64) int {
	v := r.uvarint()
	if perUnit == 0 {
		perUnit = 1
	}
	if v > uint64(len(r.b)-r.off)/perUnit+1 {
		r.fail("count %d at byte %d exceeds the %d bytes left", v, r.off, len(r.b)-r.off)
	}
	return int(v)
}

func (r *reader) byte1() byte {
	if r.off >= len(r.b) {
		r.fail("truncated at byte %d", r.off)
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) bytes(n uintptr) []byte {
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.fail("%d bytes wanted at byte %d, %d left", n, r.off, len(r.b)-r.off)
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

func (r *reader) str() string {
	n := r.count(1)
	return string(r.bytes(uintptr(n)))
}

// dreg is a region or map as restored.
type dreg struct {
	base   unsafe.Pointer
	elem   *typeInfo
	n      int
	fresh  bool // base is the fresh build's memory, decoded in place
	sparse bool // only its live cells are encoded
	isMap  bool
	m      reflect.Value
	mti    *typeInfo
	origin string
}

type decoder struct {
	c       *Codec
	r       reader
	types   []*typeInfo
	regs    []dreg
	queue   []int32
	claimed map[unsafe.Pointer]struct{}
	path    []pathSeg
}

// Decode restores s into the graph reachable from roots, which a fresh
// build made exactly as the encoded graph's was made (same types, same
// anchors): each root is overwritten in place, and what the snapshot's
// graph reaches is restored into the fresh build's objects where they
// correspond (same place, same type and size), into new memory otherwise.
// A func the snapshot holds is kept from the fresh build; one the fresh
// build does not set is an error naming its path.
func (c *Codec) Decode(s *Snapshot, roots, anchors []any) (err error) {
	defer func() {
		if v := recover(); v != nil {
			cr, ok := v.(corrupt)
			if !ok {
				panic(v)
			}
			err = fmt.Errorf("snapshot: corrupt: %s", cr.msg)
		}
	}()
	dict, err := c.dictionary(roots, anchors)
	if err != nil {
		return err
	}
	d := &decoder{c: c, claimed: map[unsafe.Pointer]struct{}{}}
	if err := d.readTypes(s.Types, dict); err != nil {
		return err
	}
	d.r = reader{b: s.Graph}
	ars, err := c.anchorRegions(anchors)
	if err != nil {
		return err
	}
	ars = inOrder(ars)
	na := d.r.count(2)
	if na != len(ars) {
		return fmt.Errorf("%w: %d anchor regions, the fresh build has %d", ErrMismatch, na, len(ars))
	}
	for i := range na {
		ti := d.typ()
		n := d.r.count(0)
		if ti != ars[i].elem || n != ars[i].n {
			return fmt.Errorf("%w: anchor region %d is %d of %v, the fresh build's %d of %v", ErrMismatch, i, n, ti.t, ars[i].n, ars[i].elem.t)
		}
		d.regs = append(d.regs, dreg{base: ars[i].ptr, elem: ti, n: n, origin: fmt.Sprintf("anchor region %d", i)})
		d.claimed[ars[i].ptr] = struct{}{}
	}
	nr := d.r.count(1)
	if nr != len(roots) {
		return fmt.Errorf("%w: %d roots, %d given", ErrMismatch, nr, len(roots))
	}
	for i, root := range roots {
		p, t, err := pointerOf(root)
		if err != nil {
			return err
		}
		ti := d.typ()
		if ti.t != t {
			return fmt.Errorf("%w: root %d is a %v, %v given", ErrMismatch, i, ti.t, t)
		}
		d.queue = append(d.queue, int32(len(d.regs)))
		d.regs = append(d.regs, dreg{base: p, elem: ti, n: 1, fresh: true, origin: t.Name()})
		d.claimed[p] = struct{}{}
	}
	for len(d.queue) > 0 {
		id := d.queue[0]
		d.queue = d.queue[1:]
		g := &d.regs[id]
		d.path = append(d.path[:0], pathSeg{name: g.origin, idx: -1})
		if g.isMap {
			if err := d.mapContent(g); err != nil {
				return err
			}
			continue
		}
		var err error
		if g.sparse {
			err = d.sparse(g.base, g.elem, g.n, g.fresh)
		} else {
			err = d.array(g.base, g.elem, g.n, g.fresh)
		}
		if err != nil {
			return err
		}
	}
	if d.r.off != len(d.r.b) {
		return fmt.Errorf("snapshot: corrupt: %d bytes left over", len(d.r.b)-d.r.off)
	}
	return nil
}

// dictionary maps type keys to the types a restore may meet: every type
// the roots' and anchors' types name, the concrete types of the fresh
// graph's interfaces, and the registered types.
func (c *Codec) dictionary(roots, anchors []any) (map[string]reflect.Type, error) {
	dict := map[string]reflect.Type{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		k := typeKey(t)
		if _, ok := dict[k]; ok {
			return
		}
		dict[k] = t
		switch t.Kind() {
		case reflect.Array, reflect.Slice, reflect.Pointer, reflect.Chan:
			add(t.Elem())
		case reflect.Map:
			add(t.Key())
			add(t.Elem())
		case reflect.Struct:
			for i := range t.NumField() {
				add(t.Field(i).Type)
			}
		default:
		}
	}
	d := newDiscovery(c.ts, nil)
	d.collecting = true
	for _, v := range append(append([]any{}, roots...), anchors...) {
		p, t, n, err := anchorOf(v)
		if err != nil {
			return nil, err
		}
		add(t)
		ti := c.ts.info(t)
		_, isNew, err := d.add(p, ti, n)
		if err != nil {
			return nil, err
		}
		if !isNew {
			continue
		}
		if err := d.walkArray(p, ti, n); err != nil {
			return nil, err
		}
	}
	for t := range d.ifaces {
		add(t)
	}
	for _, t := range c.registered {
		add(t)
	}
	return dict, nil
}

// Register makes types known to Decode: concrete types that interfaces of
// a snapshot may hold and a fresh build does not hold yet. Give values or
// nil pointers of them.
func (c *Codec) Register(vs ...any) {
	for _, v := range vs {
		c.registered = append(c.registered, reflect.TypeOf(v))
	}
}

func (d *decoder) readTypes(b []byte, dict map[string]reflect.Type) error {
	r := reader{b: b}
	n := r.count(18)
	type entry struct {
		key        string
		kind       reflect.Kind
		layout     []byte
		elem, keyT int
		n          int
	}
	es := make([]entry, n)
	for i := range es {
		e := &es[i]
		e.key = r.str()
		e.kind = reflect.Kind(r.uvarint())
		e.layout = r.bytes(16)
		e.elem, e.keyT = -1, -1
		switch e.kind {
		case reflect.Pointer, reflect.Slice:
			e.elem = r.count(0)
		case reflect.Array:
			e.elem = r.count(0)
			e.n = int(r.uvarint())
		case reflect.Map:
			e.keyT = r.count(0)
			e.elem = r.count(0)
		default:
		}
	}
	if r.off != len(b) {
		return fmt.Errorf("snapshot: corrupt type table: %d bytes left over", len(b)-r.off)
	}
	ts := make([]reflect.Type, n)
	var resolve func(i, depth int) (reflect.Type, error)
	resolve = func(i, depth int) (reflect.Type, error) {
		if i < 0 || i >= n || depth > 64 {
			return nil, fmt.Errorf("snapshot: corrupt type table: entry %d", i)
		}
		if ts[i] != nil {
			return ts[i], nil
		}
		e := &es[i]
		t, ok := dict[e.key]
		if !ok {
			var err error
			var el, k reflect.Type
			switch e.kind {
			case reflect.Pointer, reflect.Slice, reflect.Array:
				if el, err = resolve(e.elem, depth+1); err != nil {
					return nil, err
				}
			case reflect.Map:
				if k, err = resolve(e.keyT, depth+1); err != nil {
					return nil, err
				}
				if el, err = resolve(e.elem, depth+1); err != nil {
					return nil, err
				}
			default:
			}
			switch e.kind {
			case reflect.Pointer:
				t = reflect.PointerTo(el)
			case reflect.Slice:
				t = reflect.SliceOf(el)
			case reflect.Array:
				t = reflect.ArrayOf(e.n, el)
			case reflect.Map:
				t = reflect.MapOf(k, el)
			default:
				return nil, fmt.Errorf("%w: type %s is not known to this build (register it)", ErrMismatch, e.key)
			}
		}
		ti := d.c.ts.info(t)
		if ti.kind != e.kind || string(ti.layout[:]) != string(e.layout) {
			return nil, fmt.Errorf("%w: type %s has another layout in this build", ErrMismatch, e.key)
		}
		ts[i] = t
		return t, nil
	}
	d.types = make([]*typeInfo, n)
	for i := range n {
		t, err := resolve(i, 0)
		if err != nil {
			return err
		}
		d.types[i] = d.c.ts.info(t)
	}
	return nil
}

func (d *decoder) typ() *typeInfo {
	i := d.r.uvarint()
	if i >= uint64(len(d.types)) {
		d.r.fail("type %d of %d", i, len(d.types))
	}
	return d.types[i]
}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("snapshot: %s: "+format, append([]any{renderPath(d.path)}, args...)...)
}

func (d *decoder) array(p unsafe.Pointer, elem *typeInfo, n int, fresh bool) error {
	if elem.raw {
		copy(unsafe.Slice((*byte)(p), uintptr(n)*elem.size), d.r.bytes(uintptr(n)*elem.size))
		return nil
	}
	for i := range n {
		if n > 1 {
			d.path = append(d.path, pathSeg{idx: i})
		}
		err := d.value(unsafe.Add(p, uintptr(i)*elem.size), elem, fresh)
		if n > 1 {
			d.path = d.path[:len(d.path)-1]
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sparse restores a region of which only the live cells are encoded
// (encoder.sparse); the others are zeroed (new memory is zero already).
func (d *decoder) sparse(p unsafe.Pointer, elem *typeInfo, n int, fresh bool) error {
	runs := d.r.count(2)
	at := 0
	for range runs {
		gap, ln := d.r.uvarint(), d.r.uvarint()
		if gap > uint64(n-at) || ln > uint64(n-at)-gap {
			d.r.fail("live cells beyond a region of %d", n)
		}
		from := at + int(gap)
		if fresh {
			zeroCells(p, elem, at, from)
		}
		if err := d.array(unsafe.Add(p, uintptr(from)*elem.size), elem, int(ln), fresh); err != nil {
			return err
		}
		at = from + int(ln)
	}
	if fresh {
		zeroCells(p, elem, at, n)
	}
	return nil
}

// zeroCells zeroes cells [from, to) of the array of elem at p.
func zeroCells(p unsafe.Pointer, elem *typeInfo, from, to int) {
	if from >= to {
		return
	}
	if elem.raw {
		clear(unsafe.Slice((*byte)(unsafe.Add(p, uintptr(from)*elem.size)), uintptr(to-from)*elem.size))
		return
	}
	for i := from; i < to; i++ {
		reflect.NewAt(elem.t, unsafe.Add(p, uintptr(i)*elem.size)).Elem().SetZero()
	}
}

// ref reads a reference (after its tag) to memory holding a want, and
// returns its address. cand is what the fresh build holds at this place
// (nil when nothing), candN the number of elements there.
func (d *decoder) ref(tag byte, want *typeInfo, cand unsafe.Pointer, candN int) (unsafe.Pointer, int) {
	switch tag {
	case tagNew:
		elem := d.typ()
		c := d.r.uvarint()
		n, sparse := c>>1, c&1 == 1
		// A region's cells take bytes (at least one each unless raw and
		// empty), so n is bounded by what is left; a sparse region's dead
		// cells take none, bounded by the graph's size.
		left := uint64(len(d.r.b) - d.r.off)
		switch {
		case n < 1:
			d.r.fail("empty region")
		case !sparse && elem.raw && n > left/max(uint64(elem.size), 1)+1,
			!sparse && !elem.raw && n > left+1,
			sparse && n*max(uint64(elem.size), 1) > 1<<20+256*uint64(len(d.r.b)):
			d.r.fail("region of %d cells at byte %d exceeds the %d bytes left", n, d.r.off, left)
		}
		off := uintptr(d.r.uvarint())
		reg := dreg{elem: elem, n: int(n), sparse: sparse, origin: renderPath(d.path)}
		if _, taken := d.claimed[cand]; cand != nil && !taken && off == 0 && elem == want && int(n) == candN {
			reg.base, reg.fresh = cand, true
		} else if n == 1 {
			reg.base = reflect.New(elem.t).UnsafePointer()
		} else {
			reg.base = reflect.MakeSlice(reflect.SliceOf(elem.t), int(n), int(n)).UnsafePointer()
		}
		d.claimed[reg.base] = struct{}{}
		gi := len(d.regs)
		d.queue = append(d.queue, int32(gi))
		d.regs = append(d.regs, reg)
		return d.at(&d.regs[gi], off, want), gi
	case tagRef:
		id := d.r.uvarint()
		if id >= uint64(len(d.regs)) || d.regs[id].isMap {
			d.r.fail("reference to region %d of %d", id, len(d.regs))
		}
		return d.at(&d.regs[id], uintptr(d.r.uvarint()), want), int(id)
	}
	d.r.fail("bad reference tag %d", tag)
	return nil, -1
}

func (d *decoder) at(g *dreg, off uintptr, want *typeInfo) unsafe.Pointer {
	if off+want.size > uintptr(g.n)*g.elem.size {
		d.r.fail("offset %d of a %d-byte region", off, uintptr(g.n)*g.elem.size)
	}
	return unsafe.Add(g.base, off)
}

// value restores the value of type ti at p; fresh says p holds the fresh
// build's value (a candidate for what references point to).
func (d *decoder) value(p unsafe.Pointer, ti *typeInfo, fresh bool) error {
	if ti.raw {
		copy(unsafe.Slice((*byte)(p), ti.size), d.r.bytes(ti.size))
		return nil
	}
	switch ti.kind {
	case reflect.Struct:
		for _, o := range ti.ops {
			q := unsafe.Add(p, o.off)
			if o.ti == nil {
				copy(unsafe.Slice((*byte)(q), o.size), d.r.bytes(o.size))
				continue
			}
			d.path = append(d.path, pathSeg{name: o.name, idx: -1})
			err := d.value(q, o.ti, fresh)
			d.path = d.path[:len(d.path)-1]
			if err != nil {
				return err
			}
		}
	case reflect.Array:
		return d.array(p, ti.elem, ti.n, fresh)
	case reflect.Pointer:
		var cand unsafe.Pointer
		if fresh {
			cand = *(*unsafe.Pointer)(p)
		}
		switch tag := d.r.byte1(); tag {
		case tagNil:
			*(*unsafe.Pointer)(p) = nil
		case tagEmpty:
			*(*unsafe.Pointer)(p) = reflect.New(ti.elem.t).UnsafePointer()
		default:
			*(*unsafe.Pointer)(p), _ = d.ref(tag, ti.elem, cand, 1)
		}
	case reflect.Slice:
		h := (*sliceHeader)(p)
		var cand unsafe.Pointer
		candN := 0
		if fresh {
			cand, candN = h.data, h.cap
		}
		switch tag := d.r.byte1(); tag {
		case tagNil:
			*h = sliceHeader{}
		case tagEmpty:
			n, c := int(d.r.uvarint()), int(d.r.uvarint())
			if n > c || ti.elem.size != 0 && c != 0 || c > 1<<30 {
				d.r.fail("empty slice of %d/%d", n, c)
			}
			reflect.NewAt(ti.t, p).Elem().Set(reflect.MakeSlice(ti.t, n, c))
		default:
			q, gi := d.ref(tag, ti.elem, cand, candN)
			// The capacity is bounded by the region (checked below), not
			// by the bytes left: a sparse region's dead cells take none.
			n64, c64 := d.r.uvarint(), d.r.uvarint()
			if n64 > c64 || c64 > 1<<40/uint64(max(ti.elem.size, 1)) {
				d.r.fail("slice of length %d and capacity %d", n64, c64)
			}
			n, c := int(n64), int(c64)
			// The region must hold c elements from q.
			g := &d.regs[gi]
			if uintptr(q)-uintptr(g.base)+uintptr(c)*ti.elem.size > uintptr(g.n)*g.elem.size {
				d.r.fail("slice of capacity %d beyond its region", c)
			}
			*h = sliceHeader{data: q, len: n, cap: c}
		}
	case reflect.String:
		*(*string)(p) = d.r.str()
	case reflect.Map:
		mv := reflect.NewAt(ti.t, p).Elem()
		switch tag := d.r.byte1(); tag {
		case tagNil:
			mv.SetZero()
		case tagNew:
			reg := dreg{isMap: true, mti: ti, origin: renderPath(d.path)}
			if fresh && !mv.IsNil() {
				if _, taken := d.claimed[mv.UnsafePointer()]; !taken {
					reg.m, reg.fresh = mv, true
				}
			}
			if !reg.fresh {
				reg.m = reflect.MakeMap(ti.t)
			}
			d.claimed[reg.m.UnsafePointer()] = struct{}{}
			d.queue = append(d.queue, int32(len(d.regs)))
			d.regs = append(d.regs, reg)
			mv.Set(reg.m)
		case tagRef:
			id := d.r.uvarint()
			if id >= uint64(len(d.regs)) || !d.regs[id].isMap || d.regs[id].mti != ti {
				d.r.fail("reference to map %d", id)
			}
			mv.Set(d.regs[id].m)
		default:
			d.r.fail("bad map tag %d", tag)
		}
	case reflect.Interface:
		iv := reflect.NewAt(ti.t, p).Elem()
		k := d.r.uvarint()
		if k == 0 {
			iv.SetZero()
			return nil
		}
		if k-1 >= uint64(len(d.types)) {
			d.r.fail("type %d of %d", k-1, len(d.types))
		}
		dti := d.types[k-1]
		if !dti.t.Implements(ti.t) {
			return d.errorf("%w: %v does not implement %v", ErrMismatch, dti.t, ti.t)
		}
		var cur reflect.Value
		if fresh && !iv.IsNil() && iv.Elem().Type() == dti.t {
			cur = iv.Elem()
		}
		if dti.kind == reflect.Pointer {
			var cand unsafe.Pointer
			if cur.IsValid() {
				cand = cur.UnsafePointer()
			}
			var q unsafe.Pointer
			switch tag := d.r.byte1(); tag {
			case tagEmpty:
				q = reflect.New(dti.elem.t).UnsafePointer()
			case tagNil:
				q = nil
			default:
				q, _ = d.ref(tag, dti.elem, cand, 1)
			}
			iv.Set(reflect.NewAt(dti.elem.t, q))
			return nil
		}
		tmp := reflect.New(dti.t).Elem()
		if cur.IsValid() {
			tmp.Set(cur)
		}
		if err := d.value(tmp.Addr().UnsafePointer(), dti, cur.IsValid()); err != nil {
			return err
		}
		iv.Set(tmp)
	case reflect.Func:
		fv := reflect.NewAt(ti.t, p).Elem()
		switch d.r.byte1() {
		case 0:
			fv.SetZero()
		case 1:
			if !fresh || fv.IsNil() {
				return d.errorf("a func (%v) that the fresh build does not set: a snapshot cannot restore it", ti.t)
			}
		default:
			d.r.fail("bad func tag")
		}
	case reflect.Chan, reflect.UnsafePointer:
		if d.r.byte1() != tagNil {
			d.r.fail("non-nil %v", ti.t)
		}
		reflect.NewAt(ti.t, p).Elem().SetZero()
	default:
		return d.errorf("unexpected kind %v", ti.kind)
	}
	return nil
}

// mapContent restores a map's entries. A fresh map keeps, for each key,
// its value as the candidate for what that value references; keys the
// snapshot lacks are deleted.
func (d *decoder) mapContent(g *dreg) error {
	ti := g.mti
	n := d.r.count(1)
	keys := make([]reflect.Value, 0, n)
	for range n {
		k := reflect.New(ti.key.t).Elem()
		if err := d.value(k.Addr().UnsafePointer(), ti.key, false); err != nil {
			return err
		}
		v := reflect.New(ti.elem.t).Elem()
		fresh := false
		if g.fresh {
			if cur := g.m.MapIndex(k); cur.IsValid() {
				v.Set(cur)
				fresh = true
			}
		}
		d.path = append(d.path, pathSeg{name: "[" + fmt.Sprint(k.Interface()) + "]", idx: -1})
		err := d.value(v.Addr().UnsafePointer(), ti.elem, fresh)
		d.path = d.path[:len(d.path)-1]
		if err != nil {
			return err
		}
		g.m.SetMapIndex(k, v)
		keys = append(keys, k)
	}
	if g.fresh && g.m.Len() != n {
		keep := reflect.MakeMapWithSize(reflect.MapOf(ti.key.t, reflect.TypeFor[struct{}]()), n)
		for _, k := range keys {
			keep.SetMapIndex(k, reflect.ValueOf(struct{}{}))
		}
		var drop []reflect.Value
		it := g.m.MapRange()
		for it.Next() {
			if !keep.MapIndex(it.Key()).IsValid() {
				drop = append(drop, it.Key())
			}
		}
		for _, k := range drop {
			g.m.SetMapIndex(k, reflect.Value{})
		}
	}
	return nil
}
