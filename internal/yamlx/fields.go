package yamlx

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// field is one decodable struct field, possibly reached through inline
// (embedded) structs.
type field struct {
	name     string
	index    []int // for reflect.Value.FieldByIndex
	required bool  // tagged lockstep:"required"
}

// structInfo describes how a struct type is decoded.
type structInfo struct {
	fields []field // in declaration order, inline fields in place
	byName map[string]int
	names  []string // fields[i].name, for the unknown-field message
	// inlineMap is the index of a `yaml:",inline"` map that collects the
	// keys that match no field, or nil.
	inlineMap []int
}

// Known returns the YAML field names of a struct type (or pointer to one) in
// declaration order, with the fields of inline structs in place of the
// inline field. It returns nil for other types.
func Known(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	info, _ := fieldsOf(t)
	return slices.Clone(info.names)
}

// fieldsOf computes the decoding plan for struct type t. On error (a mistake
// in the Go type, not in the YAML) it still returns the fields it found.
func fieldsOf(t reflect.Type) (*structInfo, error) {
	info := &structInfo{byName: make(map[string]int)}
	err := info.collect(t, nil, []reflect.Type{t})
	return info, err
}

func (info *structInfo) collect(t reflect.Type, prefix []int, outer []reflect.Type) error {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("yaml")
		if !ok || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		index := append(slices.Clone(prefix), i)
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := sf.Type
			switch {
			case ft.Kind() == reflect.Struct:
				if !sf.IsExported() && !sf.Anonymous {
					return fmt.Errorf("yamlx: %s.%s: an inline struct field must be exported or embedded", t, sf.Name)
				}
				if slices.Contains(outer, ft) {
					return fmt.Errorf("yamlx: %s.%s: inline struct %s contains itself", t, sf.Name, ft)
				}
				if err := info.collect(ft, index, append(outer, ft)); err != nil {
					return err
				}
			case ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String && sf.IsExported():
				if info.inlineMap != nil {
					return fmt.Errorf("yamlx: %s.%s: a struct can have only one inline map", t, sf.Name)
				}
				info.inlineMap = index
			default:
				return fmt.Errorf("yamlx: %s.%s: an inline field must be a struct or an exported map with string keys, not %s", t, sf.Name, ft)
			}
			continue
		}
		if !sf.IsExported() {
			return fmt.Errorf("yamlx: %s.%s: field has a yaml tag but is unexported", t, sf.Name)
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		if _, dup := info.byName[name]; dup {
			return fmt.Errorf("yamlx: %s.%s: duplicate yaml field name %q", t, sf.Name, name)
		}
		required := slices.Contains(strings.Split(sf.Tag.Get("lockstep"), ","), "required")
		info.byName[name] = len(info.fields)
		info.fields = append(info.fields, field{name: name, index: index, required: required})
		info.names = append(info.names, name)
	}
	return nil
}
