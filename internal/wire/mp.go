package wire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// This file holds the msgpack primitives the per-window messages use,
// written out by hand so that encoding appends to a caller's buffer and
// decoding reads a byte slice in place: neither allocates per value (a
// msgpack.Encoder writes through an io.Writer and a msgpack.Decoder reads
// through an io.Reader, one interface call per byte or value). The format
// is the msgpack specification's (github.com/msgpack/msgpack/blob/master/
// spec.md); integers take their shortest form, as msgpack.Encoder's with
// UseCompactInts(true) do (TestAppend_AgreesWithMsgpack checks the bytes),
// and the reader accepts every integer form, so any msgpack encoder's output
// decodes.

// msgpack format codes used here.
const (
	mpFixArrayMin = 0x90
	mpFixStrMin   = 0xa0
	mpNil         = 0xc0
	mpFalse       = 0xc2
	mpTrue        = 0xc3
	mpBin8        = 0xc4
	mpBin16       = 0xc5
	mpBin32       = 0xc6
	mpUint8       = 0xcc
	mpUint16      = 0xcd
	mpUint32      = 0xce
	mpUint64      = 0xcf
	mpInt8        = 0xd0
	mpInt16       = 0xd1
	mpInt32       = 0xd2
	mpInt64       = 0xd3
	mpStr8        = 0xd9
	mpStr16       = 0xda
	mpStr32       = 0xdb
	mpArray16     = 0xdc
	mpArray32     = 0xdd
	mpNegFixMin   = 0xe0
)

func appendArrayLen(dst []byte, n int) []byte {
	switch {
	case n < 16:
		return append(dst, mpFixArrayMin|byte(n))
	case n <= math.MaxUint16:
		return append(dst, mpArray16, byte(n>>8), byte(n))
	default:
		return binary.BigEndian.AppendUint32(append(dst, mpArray32), uint32(n))
	}
}

// appendUint appends v in msgpack's most compact form: a positive fixint
// here (inlined), the wider forms in appendUintWide.
func appendUint(dst []byte, v uint64) []byte {
	if v <= math.MaxInt8 {
		return append(dst, byte(v))
	}
	return appendUintWide(dst, v)
}

func appendUintWide(dst []byte, v uint64) []byte {
	switch {
	case v <= math.MaxUint8:
		return append(dst, mpUint8, byte(v))
	case v <= math.MaxUint16:
		return append(dst, mpUint16, byte(v>>8), byte(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, mpUint32), uint32(v))
	default:
		return binary.BigEndian.AppendUint64(append(dst, mpUint64), v)
	}
}

func appendInt(dst []byte, v int64) []byte {
	if v >= 0 && v <= math.MaxInt8 {
		return append(dst, byte(v))
	}
	return appendIntWide(dst, v)
}

func appendIntWide(dst []byte, v int64) []byte {
	switch {
	case v >= 0:
		return appendUintWide(dst, uint64(v))
	case v >= -32:
		return append(dst, byte(v))
	case v >= math.MinInt8:
		return append(dst, mpInt8, byte(v))
	case v >= math.MinInt16:
		return append(dst, mpInt16, byte(v>>8), byte(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, mpInt32), uint32(v))
	default:
		return binary.BigEndian.AppendUint64(append(dst, mpInt64), uint64(v))
	}
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, mpTrue)
	}
	return append(dst, mpFalse)
}

// appendStr appends s as a msgpack str.
func appendStr(dst []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		dst = append(dst, mpFixStrMin|byte(n))
	case n <= math.MaxUint8:
		dst = append(dst, mpStr8, byte(n))
	case n <= math.MaxUint16:
		dst = append(dst, mpStr16, byte(n>>8), byte(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, mpStr32), uint32(n))
	}
	return append(dst, s...)
}

// appendBin appends b as a msgpack bin.
func appendBin(dst []byte, b []byte) []byte {
	n := len(b)
	switch {
	case n <= math.MaxUint8:
		dst = append(dst, mpBin8, byte(n))
	case n <= math.MaxUint16:
		dst = append(dst, mpBin16, byte(n>>8), byte(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, mpBin32), uint32(n))
	}
	return append(dst, b...)
}

// reader reads msgpack values from a byte slice with a sticky error: after
// the first failure every read returns zero and the error stays the first.
type reader struct {
	b   []byte
	off int
	err error
}

func (d *reader) left() int { return len(d.b) - d.off }

func (d *reader) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
}

// need reports whether n more bytes are there, failing if not.
func (d *reader) need(what string, n int) bool {
	if d.err != nil {
		return false
	}
	if d.left() < n {
		d.fail("%s: truncated", what)
		return false
	}
	return true
}

func (d *reader) byte1(what string) byte {
	if !d.need(what, 1) {
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

// be reads an n-byte big-endian unsigned integer (n is 1, 2, 4 or 8).
func (d *reader) be(what string, n int) uint64 {
	if !d.need(what, n) {
		return 0
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	switch n {
	case 1:
		return uint64(p[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(p))
	case 4:
		return uint64(binary.BigEndian.Uint32(p))
	}
	return binary.BigEndian.Uint64(p)
}

// integer reads any msgpack integer: its value as an int64 when neg, else as
// a uint64 in u.
func (d *reader) integer(what string) (u uint64, s int64, neg bool) {
	c := d.byte1(what)
	if d.err != nil {
		return 0, 0, false
	}
	switch {
	case c <= 0x7f:
		return uint64(c), 0, false
	case c >= mpNegFixMin:
		return 0, int64(int8(c)), true
	}
	switch c {
	case mpUint8:
		return d.be(what, 1), 0, false
	case mpUint16:
		return d.be(what, 2), 0, false
	case mpUint32:
		return d.be(what, 4), 0, false
	case mpUint64:
		return d.be(what, 8), 0, false
	case mpInt8:
		s = int64(int8(d.be(what, 1)))
	case mpInt16:
		s = int64(int16(d.be(what, 2)))
	case mpInt32:
		s = int64(int32(d.be(what, 4)))
	case mpInt64:
		s = int64(d.be(what, 8))
	default:
		d.fail("%s: code 0x%02x is not an integer", what, c)
		return 0, 0, false
	}
	if s >= 0 {
		return uint64(s), 0, false
	}
	return 0, s, true
}

// u reads an unsigned integer of at most limit. A positive fixint (one
// byte, below 128: most of a packet's fields) is read here, inlined;
// anything else in uSlow.
func (d *reader) u(what string, limit uint64) uint64 {
	if d.off < len(d.b) && d.err == nil {
		if c := d.b[d.off]; c <= 0x7f && uint64(c) <= limit {
			d.off++
			return uint64(c)
		}
	}
	return d.uSlow(what, limit)
}

func (d *reader) uSlow(what string, limit uint64) uint64 {
	v, _, neg := d.integer(what)
	switch {
	case d.err != nil:
	case neg:
		d.fail("%s: negative", what)
	case v > limit:
		d.fail("%s: %d out of range (max %d)", what, v, limit)
	default:
		return v
	}
	return 0
}

// i reads a signed integer in [lo, hi]; a positive fixint inlined, as u.
func (d *reader) i(what string, lo, hi int64) int64 {
	if d.off < len(d.b) && d.err == nil {
		if c := d.b[d.off]; c <= 0x7f && int64(c) >= lo && int64(c) <= hi {
			d.off++
			return int64(c)
		}
	}
	return d.iSlow(what, lo, hi)
}

func (d *reader) iSlow(what string, lo, hi int64) int64 {
	u, s, neg := d.integer(what)
	if d.err != nil {
		return 0
	}
	if !neg {
		if u > math.MaxInt64 {
			d.fail("%s: %d out of range [%d, %d]", what, u, lo, hi)
			return 0
		}
		s = int64(u)
	}
	if s < lo || s > hi {
		d.fail("%s: %d out of range [%d, %d]", what, s, lo, hi)
		return 0
	}
	return s
}

func (d *reader) bool(what string) bool {
	switch c := d.byte1(what); {
	case d.err != nil:
	case c == mpTrue:
		return true
	case c == mpFalse:
	default:
		d.fail("%s: code 0x%02x is not a bool", what, c)
	}
	return false
}

// arrayLen reads an array header; each element needs at least minBytes
// bytes, so a length the bytes left cannot hold is refused before anything
// is allocated for it.
func (d *reader) arrayLen(what string, minBytes int) int {
	c := d.byte1(what)
	if d.err != nil {
		return 0
	}
	var n uint64
	switch {
	case c&0xf0 == mpFixArrayMin:
		n = uint64(c & 0x0f)
	case c == mpArray16:
		n = d.be(what, 2)
	case c == mpArray32:
		n = d.be(what, 4)
	default:
		d.fail("%s: code 0x%02x is not an array", what, c)
		return 0
	}
	if d.err == nil && n*uint64(minBytes) > uint64(d.left()) {
		d.fail("%s: length %d with %d bytes left", what, n, d.left())
		return 0
	}
	return int(n)
}

// blob reads a str or bin of at most limit bytes, returning a sub-slice of
// the input (the caller copies it if it keeps it).
func (d *reader) blob(what string, limit int) []byte {
	c := d.byte1(what)
	if d.err != nil {
		return nil
	}
	var n uint64
	switch {
	case c&0xe0 == mpFixStrMin:
		n = uint64(c & 0x1f)
	case c == mpStr8 || c == mpBin8:
		n = d.be(what, 1)
	case c == mpStr16 || c == mpBin16:
		n = d.be(what, 2)
	case c == mpStr32 || c == mpBin32:
		n = d.be(what, 4)
	case c == mpNil:
		d.fail("%s: nil", what)
		return nil
	default:
		d.fail("%s: code 0x%02x is not a str or bin", what, c)
		return nil
	}
	if d.err != nil {
		return nil
	}
	if n > uint64(limit) || n > uint64(d.left()) {
		d.fail("%s: length %d with %d bytes left (limit %d)", what, n, d.left(), limit)
		return nil
	}
	b := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return b
}
