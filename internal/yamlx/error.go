package yamlx

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Error is a decoding error tied to a place in a YAML file. Line and Col are
// 1-based; zero means unknown (Col is zero for errors that concern a whole
// mapping, such as a missing required field, and for syntax errors). Path is
// the dotted path of the value, e.g. "workload[2].size", and is empty at the
// top level.
type Error struct {
	File string
	Line int
	Col  int
	Path string
	Msg  string

	err error // the error returned by a custom unmarshaler, if any
}

// Error formats e as a single line: "FILE:LINE:COL: path: message", leaving
// out the parts that are unknown or empty.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File == "" {
		b.WriteString("<input>")
	} else {
		b.WriteString(e.File)
	}
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
		if e.Col > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Col))
		}
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the error reported by a custom unmarshaler (a
// ScalarUnmarshaler or a yaml.Unmarshaler), or nil.
func (e *Error) Unwrap() error { return e.err }

// oneLine folds any line breaks in msg into single spaces, so that an error
// from a custom unmarshaler (yaml.TypeError is multi-line) stays on one line.
func oneLine(msg string) string {
	if !strings.ContainsAny(msg, "\r\n\u0085\u2028\u2029") {
		return msg
	}
	return strings.Join(strings.FieldsFunc(msg, func(r rune) bool {
		switch r {
		case '\r', '\n', '\u0085', '\u2028', '\u2029':
			return true
		}
		return false
	}), " ")
}

// maxQuoted is how many runes of a bad value an error message repeats.
const maxQuoted = 60

// quote renders a scalar for an error message: Go-quoted (so it is one line
// and control characters are visible) and shortened if long.
func quote(s string) string {
	if utf8.RuneCountInString(s) > maxQuoted {
		r := []rune(s)
		s = string(r[:maxQuoted]) + "…"
	}
	return strconv.Quote(s)
}

// describe says what a node is, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return quote(n.Value)
	case yaml.AliasNode:
		return "alias *" + n.Value
	}
	return "an empty document"
}

// syntaxError turns an error from the YAML parser into an *Error. yaml.v3
// prints the line of the construct that encloses a problem (a block mapping
// that started lines earlier), 0-based for parser errors and 1-based for
// scanner errors, and no line at all for some; so the line is recomputed by
// finding the shortest prefix of the input that fails the same way.
func syntaxError(file string, data []byte, err error) *Error {
	msg := problem(err)
	return &Error{File: file, Line: locate(data, msg), Msg: oneLine(msg), err: err}
}

// problem strips the "yaml: " and "line N: " prefixes from a parser error.
func problem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if _, err := strconv.Atoi(rest[:i]); err == nil {
				msg = rest[i+2:]
			}
		}
	}
	return msg
}

// locate returns the 1-based line of the first line break-terminated prefix
// of data whose parse fails with msg, or 0 if even the whole input does not.
// It bisects, which assumes that once a prefix contains the problem every
// longer prefix fails the same way; that holds because the parser stops at
// the problem.
func locate(data []byte, msg string) int {
	fails := func(end int) bool {
		_, err := parse(data[:end])
		return err != nil && problem(err) == msg
	}
	// ends[k] is the offset just past line k+1.
	var ends []int
	for off := 0; off < len(data); {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			off = len(data)
		} else {
			off += i + 1
		}
		ends = append(ends, off)
	}
	if len(ends) == 0 || !fails(len(data)) {
		return 0
	}
	lo, hi := 0, len(ends)-1 // the answer is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(ends[mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo + 1
}
