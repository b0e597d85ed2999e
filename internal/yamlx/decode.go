package yamlx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ScalarUnmarshaler is implemented by types that decode themselves from the
// text of a YAML scalar, such as Size and Rate. Decode prefers it to
// yaml.Unmarshaler, and adds the file, line and path to its error.
type ScalarUnmarshaler interface {
	UnmarshalYAMLScalar(value string) error
}

var (
	scalarUnmarshalerType = reflect.TypeFor[ScalarUnmarshaler]()
	yamlUnmarshalerType   = reflect.TypeFor[yaml.Unmarshaler]()
)

// maxExpansion bounds how many nodes a document may expand to through
// aliases and merge keys, on top of the nodes it actually contains, so that
// a "billion laughs" file fails quickly instead of eating memory.
const maxExpansion = 1 << 18

// Decode decodes the YAML document in data into out, which must be a
// non-nil pointer to a struct (or to a map with string keys). file is the
// name used in error messages. Keys already set in *out are overwritten only
// where the document sets them, so callers can fill in defaults first; on
// error *out may be partly written.
//
// Errors about the document are *Error; an unusable out is a plain error.
func Decode(file string, data []byte, out any) error {
	_, err := DecodePresent(file, data, out)
	return err
}

// Present is the set of struct fields a document sets, by path as errors
// spell it ("transport.mtu", "workload[1].load"): a field the document
// writes, even as 0, is present; one it leaves out is not. It lets a caller
// tell "absent, use the default" from "set to zero". The value says whether
// the field decoded to its Go type's zero value (a pointer field is zero
// only when the document writes null).
type Present map[string]bool

// Has reports whether the document sets the field at path.
func (p Present) Has(path string) bool {
	_, ok := p[path]
	return ok
}

// Zero reports whether the document sets the field at path to its type's
// zero value (0, "", false, an empty list, null).
func (p Present) Zero(path string) bool { return p[path] }

// DecodePresent is Decode that also returns the fields the document sets
// (Present); on error the set is nil.
func DecodePresent(file string, data []byte, out any) (Present, error) {
	d, err := decodeDoc(file, data, out)
	if err != nil {
		return nil, err
	}
	return d.present, nil
}

func decodeDoc(file string, data []byte, out any) (*decoder, error) {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, fmt.Errorf("yamlx: Decode needs a non-nil pointer to a struct or map, got %T", out)
	}
	if k := rv.Elem().Kind(); k != reflect.Struct && k != reflect.Map {
		return nil, fmt.Errorf("yamlx: Decode needs a non-nil pointer to a struct or map, got %T", out)
	}

	docs, err := parse(data)
	if err != nil {
		return nil, syntaxError(file, data, err)
	}
	for _, doc := range docs[min(1, len(docs)):] {
		// A trailing "---" makes an empty document; that is harmless.
		if len(doc.Content) > 0 && !isNull(doc.Content[0]) {
			return nil, &Error{File: file, Line: doc.Line, Msg: "expected a single YAML document, found a second one"}
		}
	}
	if len(docs) == 0 || len(docs[0].Content) == 0 || isNull(docs[0].Content[0]) {
		return nil, &Error{File: file, Msg: "empty scenario"}
	}
	root := docs[0].Content[0]
	d := &decoder{
		file:     file,
		maxSteps: countNodes(root) + maxExpansion,
		active:   make(map[*yaml.Node]bool),
		merging:  make(map[*yaml.Node]bool),
		structs:  make(map[reflect.Type]*structInfo),
		present:  make(Present),
	}
	if root.Kind != yaml.MappingNode {
		return nil, d.errorf(root, "", "expected a mapping at the top level, got %s", describe(root))
	}
	if err := d.decode(rv.Elem(), root, ""); err != nil {
		return nil, err
	}
	return d, nil
}

// parse reads every document in data. yaml.v3 reports malformed input as an
// error, but it is third-party code fed with untrusted bytes, so a panic is
// turned into an error too.
func parse(data []byte) (docs []*yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, fmt.Errorf("yaml: internal parser error: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, err
		}
		docs = append(docs, &doc)
	}
}

// countNodes counts the nodes of a tree without following aliases.
func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

// isNull reports whether n is a null scalar: empty, ~, null, Null or NULL
// (but not a quoted "null", which is a string).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// decoder holds the state of one Decode call.
type decoder struct {
	file     string
	steps    int // nodes visited, counting each alias expansion again
	maxSteps int
	// active holds the mappings and lists being decoded, to catch an alias
	// inside the value it refers to.
	active map[*yaml.Node]bool
	// merging holds the mappings whose merge keys are being resolved.
	merging map[*yaml.Node]bool
	structs map[reflect.Type]*structInfo
	present Present // struct fields set, by path
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) *Error {
	return &Error{File: d.file, Line: n.Line, Col: n.Column, Path: path, Msg: oneLine(fmt.Sprintf(format, args...))}
}

// wrap attributes an error from a custom unmarshaler to node n.
func (d *decoder) wrap(n *yaml.Node, path string, err error) *Error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msg = strings.Join(te.Errors, "; ")
	}
	return &Error{File: d.file, Line: n.Line, Col: n.Column, Path: path, Msg: oneLine(msg), err: err}
}

// step counts a visited node against the expansion budget.
func (d *decoder) step(n *yaml.Node, path string) error {
	d.steps++
	if d.steps > d.maxSteps {
		return d.errorf(n, path, "too many nodes after expanding aliases (limit %d)", d.maxSteps)
	}
	return nil
}

// join appends a mapping key to a path: "a.b" for plain keys, `a["x y"]`
// for keys that would make the dotted form ambiguous.
func join(path, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return path + "[" + quote(key) + "]"
	case path == "":
		return key
	default:
		return path + "." + key
	}
}

// decode stores node n into v, which is addressable.
func (d *decoder) decode(v reflect.Value, n *yaml.Node, path string) error {
	if err := d.step(n, path); err != nil {
		return err
	}
	if n.Kind == yaml.AliasNode {
		target := n.Alias
		if target == nil {
			return d.errorf(n, path, "unknown alias *%s", n.Value)
		}
		if d.active[target] {
			return d.errorf(n, path, "alias *%s refers to a value that contains it", n.Value)
		}
		n = target
	}
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		d.active[n] = true
		defer delete(d.active, n)
	}

	t := v.Type()
	if t.Kind() == reflect.Pointer {
		if isNull(n) {
			v.SetZero()
			return nil
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return d.decode(v.Elem(), n, path)
	}

	if v.CanAddr() {
		pt := reflect.PointerTo(t)
		if pt.Implements(scalarUnmarshalerType) {
			if n.Kind != yaml.ScalarNode {
				return d.errorf(n, path, "expected a single value, got %s", describe(n))
			}
			if err := v.Addr().Interface().(ScalarUnmarshaler).UnmarshalYAMLScalar(n.Value); err != nil {
				return d.wrap(n, path, err)
			}
			return nil
		}
		if pt.Implements(yamlUnmarshalerType) {
			if err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
				return d.wrap(n, path, err)
			}
			return nil
		}
	}

	switch t.Kind() {
	case reflect.Struct:
		return d.decodeStruct(v, n, path)
	case reflect.Map:
		return d.decodeMap(v, n, path)
	case reflect.Slice:
		return d.decodeSlice(v, n, path)
	case reflect.Array:
		return d.decodeArray(v, n, path)
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return d.decodeAny(v, n, path)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode || isNull(n) {
			return d.errorf(n, path, "expected a string, got %s", describe(n))
		}
		v.SetString(n.Value)
		return nil
	case reflect.Bool:
		if n.Kind == yaml.ScalarNode {
			switch n.Value {
			case "true", "True", "TRUE":
				v.SetBool(true)
				return nil
			case "false", "False", "FALSE":
				v.SetBool(false)
				return nil
			}
		}
		return d.errorf(n, path, "expected true or false, got %s", describe(n))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return d.decodeInt(v, n, path)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return d.decodeUint(v, n, path)
	case reflect.Float32, reflect.Float64:
		return d.decodeFloat(v, n, path)
	}
	return d.errorf(n, path, "cannot decode into Go type %s", t)
}

// entry is one key/value pair of a mapping, after merge keys are resolved.
type entry struct {
	key *yaml.Node // a scalar
	val *yaml.Node
}

// entries lists the pairs of mapping m: its own keys in order, then the keys
// brought in by merge keys (<<) that m does not set itself, earlier merge
// sources taking precedence. A key that appears twice in m is an error.
func (d *decoder) entries(m *yaml.Node, path string) ([]entry, error) {
	if d.merging[m] {
		return nil, d.errorf(m, path, "merge key refers to a mapping that contains it")
	}
	d.merging[m] = true
	defer delete(d.merging, m)

	var out []entry
	firstLine := make(map[string]int) // key -> line where it was first set
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, val := m.Content[i], m.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, val)
			continue
		}
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			return nil, d.errorf(k, path, "a mapping key must be a single value, got %s", describe(k))
		}
		if line, dup := firstLine[k.Value]; dup {
			return nil, d.errorf(k, join(path, k.Value), "duplicate key (first set on line %d)", line)
		}
		firstLine[k.Value] = k.Line
		out = append(out, entry{key: k, val: val})
	}

	add := func(src *yaml.Node) error {
		if err := d.step(src, path); err != nil {
			return err
		}
		if src.Kind == yaml.AliasNode && src.Alias != nil {
			src = src.Alias
		}
		if src.Kind != yaml.MappingNode {
			return d.errorf(src, path, "a merge key (<<) needs a mapping or a list of mappings, got %s", describe(src))
		}
		sub, err := d.entries(src, path)
		if err != nil {
			return err
		}
		for _, e := range sub {
			if err := d.step(e.key, path); err != nil {
				return err
			}
			if _, set := firstLine[e.key.Value]; !set {
				firstLine[e.key.Value] = e.key.Line
				out = append(out, e)
			}
		}
		return nil
	}
	for _, src := range merges {
		seq := src
		if seq.Kind == yaml.AliasNode && seq.Alias != nil {
			seq = seq.Alias
		}
		if seq.Kind != yaml.SequenceNode {
			if err := add(src); err != nil {
				return nil, err
			}
			continue
		}
		for _, item := range seq.Content {
			if err := add(item); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (d *decoder) structInfo(t reflect.Type) (*structInfo, error) {
	if info, ok := d.structs[t]; ok {
		return info, nil
	}
	info, err := fieldsOf(t)
	if err != nil {
		return nil, err
	}
	d.structs[t] = info
	return info, nil
}

func (d *decoder) decodeStruct(v reflect.Value, n *yaml.Node, path string) error {
	if n.Kind != yaml.MappingNode {
		return d.errorf(n, path, "expected a mapping, got %s", describe(n))
	}
	info, err := d.structInfo(v.Type())
	if err != nil {
		return d.errorf(n, path, "%v", err)
	}
	es, err := d.entries(n, path)
	if err != nil {
		return err
	}
	seen := make([]bool, len(info.fields))
	for _, e := range es {
		name := e.key.Value
		fpath := join(path, name)
		i, ok := info.byName[name]
		if !ok {
			if info.inlineMap != nil {
				if err := d.mapEntry(v.FieldByIndex(info.inlineMap), e, fpath); err != nil {
					return err
				}
				continue
			}
			if len(info.names) == 0 {
				return d.errorf(e.key, fpath, "unknown field (no fields are allowed here)")
			}
			return d.errorf(e.key, fpath, "unknown field (known: %s)", strings.Join(info.names, ", "))
		}
		f := info.fields[i]
		seen[i] = true
		if f.required {
			val := e.val
			if val.Kind == yaml.AliasNode && val.Alias != nil {
				val = val.Alias
			}
			if isNull(val) {
				return d.errorf(e.val, fpath, "required field has no value")
			}
		}
		fv := v.FieldByIndex(f.index)
		if err := d.decode(fv, e.val, fpath); err != nil {
			return err
		}
		d.present[fpath] = fv.IsZero()
	}
	for i, f := range info.fields {
		if f.required && !seen[i] {
			return &Error{File: d.file, Line: n.Line, Path: path, Msg: fmt.Sprintf("missing required field %q", f.name)}
		}
	}
	return nil
}

func (d *decoder) decodeMap(v reflect.Value, n *yaml.Node, path string) error {
	if isNull(n) {
		v.SetZero()
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return d.errorf(n, path, "expected a mapping, got %s", describe(n))
	}
	if v.Type().Key().Kind() != reflect.String {
		return d.errorf(n, path, "cannot decode into Go type %s (map keys must be strings)", v.Type())
	}
	es, err := d.entries(n, path)
	if err != nil {
		return err
	}
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(v.Type(), len(es)))
	}
	for _, e := range es {
		if err := d.mapEntry(v, e, join(path, e.key.Value)); err != nil {
			return err
		}
	}
	return nil
}

// mapEntry decodes one entry into map v (a map with string keys),
// allocating the map if needed.
func (d *decoder) mapEntry(v reflect.Value, e entry, path string) error {
	t := v.Type()
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	key := reflect.New(t.Key()).Elem()
	key.SetString(e.key.Value)
	val := reflect.New(t.Elem()).Elem()
	if err := d.decode(val, e.val, path); err != nil {
		return err
	}
	v.SetMapIndex(key, val)
	return nil
}

func (d *decoder) decodeSlice(v reflect.Value, n *yaml.Node, path string) error {
	if isNull(n) {
		v.SetZero()
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return d.errorf(n, path, "expected a list, got %s", describe(n))
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		if err := d.decode(s.Index(i), item, path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

func (d *decoder) decodeArray(v reflect.Value, n *yaml.Node, path string) error {
	if n.Kind != yaml.SequenceNode || len(n.Content) != v.Len() {
		got := describe(n)
		if n.Kind == yaml.SequenceNode {
			got = fmt.Sprintf("%d", len(n.Content))
		}
		return d.errorf(n, path, "expected a list of %d items, got %s", v.Len(), got)
	}
	for i, item := range n.Content {
		if err := d.decode(v.Index(i), item, path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	return nil
}

// decodeAny decodes a free-form value (an `any` field): a mapping becomes
// map[string]any (keys as written, duplicates rejected, merge keys applied),
// a list []any, and a scalar what yaml.v3 resolves it to (string, int,
// float64, bool or nil).
func (d *decoder) decodeAny(v reflect.Value, n *yaml.Node, path string) error {
	x, err := d.anyValue(n, path)
	if err != nil {
		return err
	}
	if x == nil {
		v.SetZero()
		return nil
	}
	v.Set(reflect.ValueOf(x))
	return nil
}

// anyValue builds the value of n for decodeAny. n has been counted by step
// and is not an alias.
func (d *decoder) anyValue(n *yaml.Node, path string) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		es, err := d.entries(n, path)
		if err != nil {
			return nil, err
		}
		m := make(map[string]any, len(es))
		for _, e := range es {
			var x any
			if err := d.decode(reflect.ValueOf(&x).Elem(), e.val, join(path, e.key.Value)); err != nil {
				return nil, err
			}
			m[e.key.Value] = x
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, item := range n.Content {
			if err := d.decode(reflect.ValueOf(&l[i]).Elem(), item, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return nil, err
			}
		}
		return l, nil
	}
	var x any
	if err := n.Decode(&x); err != nil {
		e := d.wrap(n, path, err)
		e.Msg = strings.TrimPrefix(e.Msg, "yaml: ")
		return nil, e
	}
	return x, nil
}

func (d *decoder) decodeInt(v reflect.Value, n *yaml.Node, path string) error {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return d.errorf(n, path, "expected an integer, got %s", describe(n))
	}
	bits := v.Type().Bits()
	lo, hi := int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1)
	rangeErr := func() error {
		return d.errorf(n, path, "expected an integer from %d to %d, got %s", lo, hi, quote(n.Value))
	}
	neg, mag, ok, overflow := parseInteger(n.Value)
	if !ok {
		f, whole, fok, foverflow := parseWholeFloat(n.Value)
		switch {
		case foverflow:
			return rangeErr()
		case !fok || !whole:
			return d.errorf(n, path, "expected an integer, got %s", quote(n.Value))
		case f < float64(lo) || f >= -float64(lo): // -lo is 2^(bits-1), exact
			return rangeErr()
		}
		v.SetInt(int64(f))
		return nil
	}
	limit := uint64(1) << (bits - 1) // |lo|
	if overflow || (neg && mag > limit) || (!neg && mag >= limit) {
		return rangeErr()
	}
	if neg {
		v.SetInt(-int64(mag)) // for mag == 1<<63 this wraps to MinInt64, as wanted
	} else {
		v.SetInt(int64(mag))
	}
	return nil
}

func (d *decoder) decodeUint(v reflect.Value, n *yaml.Node, path string) error {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return d.errorf(n, path, "expected an integer, got %s", describe(n))
	}
	bits := v.Type().Bits()
	hi := uint64(math.MaxUint64) >> (64 - bits)
	rangeErr := func() error {
		return d.errorf(n, path, "expected an integer from 0 to %d, got %s", hi, quote(n.Value))
	}
	neg, mag, ok, overflow := parseInteger(n.Value)
	if !ok {
		f, whole, fok, foverflow := parseWholeFloat(n.Value)
		switch {
		case foverflow:
			return rangeErr()
		case !fok || !whole:
			return d.errorf(n, path, "expected an integer, got %s", quote(n.Value))
		case f < 0 || f >= math.Ldexp(1, bits):
			return rangeErr()
		}
		v.SetUint(uint64(f))
		return nil
	}
	if overflow || (neg && mag != 0) || mag > hi {
		return rangeErr()
	}
	v.SetUint(mag)
	return nil
}

func (d *decoder) decodeFloat(v reflect.Value, n *yaml.Node, path string) error {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return d.errorf(n, path, "expected a number, got %s", describe(n))
	}
	bits := v.Type().Bits()
	switch n.Value {
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		v.SetFloat(math.Inf(1))
		return nil
	case "-.inf", "-.Inf", "-.INF":
		v.SetFloat(math.Inf(-1))
		return nil
	}
	f, err := strconv.ParseFloat(n.Value, bits)
	if errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0) {
		return d.errorf(n, path, "expected a number that fits in float%d, got %s", bits, quote(n.Value))
	}
	// ParseFloat also accepts "inf", "Infinity" and "NaN"; YAML spells
	// infinity .inf, and NaN is never a useful setting.
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return d.errorf(n, path, "expected a number, got %s", quote(n.Value))
	}
	v.SetFloat(f)
	return nil
}

// parseInteger parses an integer as YAML writes it: an optional sign, then
// decimal digits or a 0x, 0o or 0b prefix, with _ allowed between digits.
// A leading zero does not make the number octal. ok reports the syntax;
// overflow reports a magnitude above MaxUint64.
func parseInteger(s string) (neg bool, mag uint64, ok, overflow bool) {
	t := s
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	base := 10
	if len(t) > 2 && t[0] == '0' {
		switch t[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 10 {
			t = t[2:]
		}
	}
	if strings.Contains(t, "_") {
		if t[0] == '_' || t[len(t)-1] == '_' || strings.Contains(t, "__") {
			return false, 0, false, false
		}
		t = strings.ReplaceAll(t, "_", "")
	}
	mag, err := strconv.ParseUint(t, base, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return neg, 0, true, true
		}
		return false, 0, false, false
	}
	return neg, mag, true, false
}

// parseWholeFloat parses s as a finite float (so that 1e6 can set an
// integer) and says whether it is a whole number. overflow reports a number
// too large for a float64.
func parseWholeFloat(s string) (f float64, whole, ok, overflow bool) {
	f, err := strconv.ParseFloat(s, 64)
	if errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0) {
		return 0, false, true, true
	}
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false, false, false
	}
	return f, f == math.Trunc(f), true, false
}
