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
	anchor     bool
	id         int32 // assigned at first reference when encoding; -1 before
	order      int   // discovery order (the smallest of merged regions')
}

// sliceHeader is the runtime's slice layout.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// rkey identifies a region as found (before merging).
type rkey struct {
	addr uintptr
	t    *typeInfo
	n    int
}

// pathSeg is one step of the path to the value being walked, for errors.
type pathSeg struct {
	name string
	idx  int // -1: a field name; else an index
}

// discovery walks a graph and collects its regions, maps and the
// concrete types its interfaces hold.
type discovery struct {
	ts      *types
	seen    map[rkey]struct{}
	found   []region
	maps    map[unsafe.Pointer]struct{}
	ifaces  map[reflect.Type]struct{}
	anchors []region // sorted, merged; nil while discovering the anchors
	path    []pathSeg
	// keepFuncs: funcs in interfaces are refused while encoding (the
	// decoder cannot keep one), allowed while collecting types.
	collecting bool
}

func newDiscovery(ts *types, anchors []region) *discovery {
	return &discovery{ts: ts, seen: map[rkey]struct{}{}, maps: map[unsafe.Pointer]struct{}{},
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
func inAnchor(anchors []region, a, size uintptr) (bool, error) {
	if len(anchors) == 0 {
		return false, nil
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
			return false, fmt.Errorf("memory at %#x straddles the end of an anchor", a)
		}
		return true, nil
	}
	if i < len(anchors) && a+size > anchors[i].start && size > 0 {
		return false, fmt.Errorf("memory at %#x overlaps an anchor it does not lie in", a)
	}
	return false, nil
}

// add records a region and reports whether it is new (to be walked).
func (d *discovery) add(p unsafe.Pointer, elem *typeInfo, n int) (bool, error) {
	if elem.size == 0 || n == 0 {
		return false, nil
	}
	a := uintptr(p)
	if in, err := inAnchor(d.anchors, a, elem.size*uintptr(n)); err != nil || in {
		if err != nil {
			return false, d.errorf("%v", err)
		}
		return false, nil
	}
	k := rkey{a, elem, n}
	if _, ok := d.seen[k]; ok {
		return false, nil
	}
	d.seen[k] = struct{}{}
	d.found = append(d.found, region{start: a, end: a + elem.size*uintptr(n), ptr: p, elem: elem, n: n, id: -1, order: len(d.found)})
	return true, nil
}

// walk visits the value of type ti at p.
func (d *discovery) walk(p unsafe.Pointer, ti *typeInfo) error {
	if ti.raw {
		return nil
	}
	switch ti.kind {
	case reflect.Struct:
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
		if isNew, err := d.add(q, ti.elem, 1); err != nil || !isNew {
			return err
		}
		d.path = append(d.path, pathSeg{name: "*", idx: -1})
		err := d.walk(q, ti.elem)
		d.path = d.path[:len(d.path)-1]
		return err
	case reflect.Slice:
		h := (*sliceHeader)(p)
		if h.data == nil || h.cap == 0 {
			return nil
		}
		if isNew, err := d.add(h.data, ti.elem, h.cap); err != nil || !isNew {
			return err
		}
		return d.walkArray(h.data, ti.elem, h.cap)
	case reflect.String:
	case reflect.Map:
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
			if isNew, err := d.add(q, dti.elem, 1); err != nil || !isNew {
				return err
			}
			d.path = append(d.path, pathSeg{name: "(" + dt.String() + ")", idx: -1})
			err := d.walk(q, dti.elem)
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
// outermost (or, for two slices of one array, their union).
func merge(rs []region) ([]region, error) {
	sortRegions(rs)
	out := rs[:0]
	for _, r := range rs {
		if k := len(out); k > 0 && r.start < out[k-1].end {
			o := &out[k-1]
			o.order = min(o.order, r.order)
			if r.end <= o.end {
				continue // inside o
			}
			// Partial overlap: only two views of one array can be joined.
			if o.elem != r.elem || (r.start-o.start)%o.elem.size != 0 {
				return nil, fmt.Errorf("snapshot: a %v at %#x overlaps a %v at %#x", r.elem.t, r.start, o.elem.t, o.start)
			}
			o.end = r.end
			o.n = int((o.end - o.start) / o.elem.size)
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// sortRegions orders regions by start, the larger first at one start, an
// array before one element of the same size. Most regions are alone at
// their start: sorting small keys and permuting once is cheaper than
// moving regions around.
func sortRegions(rs []region) {
	type key struct {
		start, end uintptr
		n          int
		i          int32
	}
	ks := make([]key, len(rs))
	for i := range rs {
		ks[i] = key{rs[i].start, rs[i].end, rs[i].n, int32(i)}
	}
	slices.SortFunc(ks, func(a, b key) int {
		switch {
		case a.start != b.start:
			if a.start < b.start {
				return -1
			}
			return 1
		case a.end != b.end:
			if a.end > b.end {
				return -1
			}
			return 1
		case a.n != b.n:
			if a.n > b.n {
				return -1
			}
			return 1
		}
		return 0
	})
	sorted := make([]region, len(rs))
	for i, k := range ks {
		sorted[i] = rs[k.i]
	}
	copy(rs, sorted)
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
