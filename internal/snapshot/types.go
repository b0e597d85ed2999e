package snapshot

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"reflect"
	"sync"
)

// typeInfo is how the codec walks values of one type: raw types (no
// pointers of any kind) are copied as bytes; the others have a plan.
type typeInfo struct {
	t    reflect.Type
	kind reflect.Kind
	size uintptr
	// raw: the type holds no pointer, string, slice, map, interface, func
	// or chan, so its memory is its value.
	raw bool
	// refFree: the type holds nothing but raw data and strings (a map key
	// the codec can order).
	refFree bool
	ops     []op      // struct: raw spans and fields that are not raw
	elem    *typeInfo // array, slice, pointer elements; map values
	key     *typeInfo // map keys
	n       int       // array length
	// sparse: a pointer to the type is Sparse (not by a field it embeds):
	// discovery asks a value which cells of its slices are live.
	sparse bool
	// sparseAt is a *t as a Sparse, whose data word declareLive points
	// at the value it asks.
	sparseAt Sparse
	// layout digests the type's memory layout and what it holds by value
	// (fields, offsets, element types' names), so that a snapshot is
	// refused by a build whose types differ.
	layout [16]byte
}

// op is one step of a struct's plan: a raw span [off, off+size) when ti
// is nil, else the field at off.
type op struct {
	off  uintptr
	size uintptr
	ti   *typeInfo
	name string
}

// types caches the plans: a plan is a pure function of its type.
type types struct {
	mu sync.Mutex
	m  map[reflect.Type]*typeInfo
}

func newTypes() *types { return &types{m: map[reflect.Type]*typeInfo{}} }

// info is t's plan.
func (ts *types) info(t reflect.Type) *typeInfo {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.infoLocked(t)
}

func (ts *types) infoLocked(t reflect.Type) *typeInfo {
	if ti, ok := ts.m[t]; ok {
		return ti
	}
	ti := &typeInfo{t: t, kind: t.Kind(), size: t.Size()}
	ts.m[t] = ti // before the elements: types may refer to themselves
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		ti.raw, ti.refFree = true, true
	case reflect.String:
		ti.refFree = true
	case reflect.Array:
		ti.elem = ts.infoLocked(t.Elem())
		ti.n = t.Len()
		ti.raw, ti.refFree = ti.elem.raw || ti.n == 0, ti.elem.refFree || ti.n == 0
	case reflect.Struct:
		ti.raw, ti.refFree = true, true
		for i := range t.NumField() {
			f := t.Field(i)
			fi := ts.infoLocked(f.Type)
			if f.Type.Size() == 0 {
				continue
			}
			ti.refFree = ti.refFree && fi.refFree
			if fi.raw {
				// Extend the last raw span when contiguous (padding
				// between fields is copied with them).
				if k := len(ti.ops); k > 0 && ti.ops[k-1].ti == nil {
					ti.ops[k-1].size = f.Offset + f.Type.Size() - ti.ops[k-1].off
					continue
				}
				ti.ops = append(ti.ops, op{off: f.Offset, size: f.Type.Size(), name: f.Name})
				continue
			}
			ti.raw = false
			ti.ops = append(ti.ops, op{off: f.Offset, ti: fi, name: f.Name})
		}
		if ti.sparse = isSparse(t); ti.sparse {
			ti.sparseAt = reflect.New(t).Interface().(Sparse)
		}
	case reflect.Pointer, reflect.Slice:
		ti.elem = ts.infoLocked(t.Elem())
	case reflect.Map:
		ti.key = ts.infoLocked(t.Key())
		ti.elem = ts.infoLocked(t.Elem())
	case reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
	default:
		panic(fmt.Sprintf("snapshot: type %v of kind %v", t, t.Kind()))
	}
	ti.layout = layoutOf(t)
	return ti
}

// sparseType is Sparse's.
var sparseType = reflect.TypeFor[Sparse]()

// isSparse says whether struct type t declares its live cells itself: a
// pointer to it is Sparse, and not by a field it embeds (whose own plan
// asks it).
func isSparse(t reflect.Type) bool {
	if !reflect.PointerTo(t).Implements(sparseType) {
		return false
	}
	for i := range t.NumField() {
		if f := t.Field(i); f.Anonymous && (f.Type.Implements(sparseType) || reflect.PointerTo(f.Type).Implements(sparseType)) {
			return false
		}
	}
	return true
}

// layoutOf digests what a snapshot of t depends on: its kind and size,
// and for values held inline (struct fields, array elements) their names,
// offsets and layouts; referenced types (pointer, slice, map elements)
// by name only (they have their own entries when a snapshot holds them).
func layoutOf(t reflect.Type) [16]byte {
	h := sha256.New()
	var walk func(t reflect.Type, depth int)
	walk = func(t reflect.Type, depth int) {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], uint64(t.Kind()))
		binary.LittleEndian.PutUint64(b[8:], uint64(t.Size()))
		h.Write(b[:])
		h.Write([]byte(typeKey(t)))
		if depth > 64 {
			return
		}
		switch t.Kind() {
		case reflect.Array:
			binary.LittleEndian.PutUint64(b[:], uint64(t.Len()))
			h.Write(b[:8])
			walk(t.Elem(), depth+1)
		case reflect.Struct:
			for i := range t.NumField() {
				f := t.Field(i)
				binary.LittleEndian.PutUint64(b[:], uint64(f.Offset))
				h.Write(b[:8])
				h.Write([]byte(f.Name))
				walk(f.Type, depth+1)
			}
		case reflect.Pointer, reflect.Slice:
			h.Write([]byte(typeKey(t.Elem())))
		case reflect.Map:
			h.Write([]byte(typeKey(t.Key())))
			h.Write([]byte(typeKey(t.Elem())))
		default:
		}
	}
	walk(t, 0)
	var out [16]byte
	copy(out[:], h.Sum(nil))
	return out
}

// typeKey names t across builds: package path and name for a named type,
// its text otherwise.
func typeKey(t reflect.Type) string {
	if t.Name() != "" && t.PkgPath() != "" {
		return t.PkgPath() + "." + t.Name()
	}
	return t.String()
}
