package scenario

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// nonFinite finds a float field of v that holds ±Inf or NaN (yamlx decodes
// YAML's .inf; no field takes it, and the digest's JSON cannot hold it),
// and returns its path as the file writes it (yaml names, list indices),
// or "" if there is none. The path is built only for the field found.
func nonFinite(v reflect.Value) string {
	var trail []string
	if !findNonFinite(v, &trail) {
		return ""
	}
	var b strings.Builder
	for i := len(trail) - 1; i >= 0; i-- {
		if b.Len() > 0 && trail[i][0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(trail[i])
	}
	return b.String()
}

// findNonFinite reports whether v holds a non-finite float, appending the
// path's steps to trail innermost first.
func findNonFinite(v reflect.Value, trail *[]string) bool {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		return math.IsInf(f, 0) || math.IsNaN(f)
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && findNonFinite(v.Elem(), trail)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if findNonFinite(v.Index(i), trail) {
				*trail = append(*trail, fmt.Sprintf("[%d]", i))
				return true
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if findNonFinite(it.Value(), trail) {
				*trail = append(*trail, fmt.Sprint(it.Key()))
				return true
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if findNonFinite(v.Field(i), trail) {
				if name == "" {
					name = strings.ToLower(f.Name)
				}
				*trail = append(*trail, name)
				return true
			}
		}
	}
	return false
}
