package scenario

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/lockstep-sim/lockstep/internal/yamlx"
)

// WithField is the edit that sets one scenario field by its path: the
// YAML keys from the top level joined by dots ("transport.cc",
// "topology.fattree.k", "topology.dumbbell.bottleneck.buffer"), with list
// indices as numbers ("workload.0.load") and a map key as the last
// segment ("transport.options.variant"). value is YAML text, decoded
// strictly with the field's own units ("64KiB", "10us", "{mode: step, k:
// 64KiB}"). Sections on the way that the scenario leaves out are created
// empty.
//
// The path is checked against the Scenario type and the value decoded
// here, so a misspelt path or a bad value is an error before any
// scenario is loaded; an index past the end of a list in the scenario
// the edit is applied to makes Load fail, naming the path.
func WithField(path, value string) (Edit, error) {
	steps, leaf, err := fieldPath(path)
	if err != nil {
		return nil, err
	}
	if _, err := decodeValue(leaf, value); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return func(s *Scenario) {
		// Decoded afresh for every scenario, so that no two share a
		// pointer, map or slice.
		v, _ := decodeValue(leaf, value)
		if err := setField(reflect.ValueOf(s).Elem(), steps, v); err != nil {
			s.editErrs = append(s.editErrs, fmt.Errorf("%s: %w", path, err))
		}
	}, nil
}

// step is one segment of a field path.
type step struct {
	name  string // as written
	field []int  // struct field index, or nil
	index int    // list index (kind Slice)
	key   string // map key (kind Map)
}

// fieldPath resolves path against the Scenario type: the steps to walk and
// the type of the field at the end.
func fieldPath(path string) ([]step, reflect.Type, error) {
	if path == "" {
		return nil, nil, errors.New("empty field path")
	}
	t := reflect.TypeFor[Scenario]()
	var steps []step
	where := "the top level"
	for seg := range strings.SplitSeq(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		st := step{name: seg}
		switch t.Kind() {
		case reflect.Struct:
			idx, ok := yamlField(t, seg)
			if !ok {
				return nil, nil, fmt.Errorf("%s: no field %q in %s (it has %s)", path, seg, where,
					strings.Join(yamlx.Known(t), ", "))
			}
			st.field = idx
			t = t.FieldByIndex(idx).Type
		case reflect.Slice:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 {
				return nil, nil, fmt.Errorf("%s: %s is a list: want an index (0, 1, ...), got %q", path, where, seg)
			}
			st.index = i
			t = t.Elem()
		case reflect.Map:
			st.key = seg
			t = t.Elem()
		default:
			return nil, nil, fmt.Errorf("%s: %s is a value, it has no field %q", path, where, seg)
		}
		steps = append(steps, st)
		where = strings.Join(names(steps), ".")
	}
	return steps, t, nil
}

func names(steps []step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.name
	}
	return out
}

// yamlField finds the field of struct type t whose yaml tag is name.
func yamlField(t reflect.Type, name string) ([]int, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == name && f.IsExported() {
			return []int{i}, true
		}
	}
	return nil, false
}

// decodeValue decodes YAML text into a new value of type t, strictly and
// with the scenario's units, by decoding "v: text" into a one-field struct.
func decodeValue(t reflect.Type, text string) (reflect.Value, error) {
	wrap := reflect.StructOf([]reflect.StructField{{Name: "V", Type: t, Tag: `yaml:"v"`}})
	w := reflect.New(wrap)
	doc := "v: " + text
	if strings.Contains(text, "\n") {
		doc = "v:\n  " + strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", "\n  ")
	}
	if err := yamlx.Decode("", []byte(doc), w.Interface()); err != nil {
		var ye *yamlx.Error
		if errors.As(err, &ye) {
			return reflect.Value{}, fmt.Errorf("%q: %s", text, ye.Msg)
		}
		return reflect.Value{}, err
	}
	return w.Elem().Field(0), nil
}

// setField walks v along steps, creating absent sections, and sets the
// field at the end to a copy of x.
func setField(v reflect.Value, steps []step, x reflect.Value) error {
	for i, st := range steps {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		last := i == len(steps)-1
		switch v.Kind() {
		case reflect.Struct:
			v = v.FieldByIndex(st.field)
		case reflect.Slice:
			if st.index >= v.Len() {
				return fmt.Errorf("index %d: the scenario's %s has %d entries", st.index,
					strings.Join(names(steps[:i]), "."), v.Len())
			}
			v = v.Index(st.index)
		case reflect.Map:
			if v.IsNil() {
				v.Set(reflect.MakeMap(v.Type()))
			}
			if !last {
				return fmt.Errorf("%s: cannot reach inside a map value", st.name)
			}
			v.SetMapIndex(reflect.ValueOf(st.key), x)
			return nil
		default:
			return fmt.Errorf("%s: not a section", st.name)
		}
	}
	v.Set(x)
	return nil
}
