package wire

import (
	"encoding/binary"
	"fmt"
)

// MaxMessageBytes is the largest message any decoder here accepts. It is
// the embedded NATS server's payload limit (deploy), and every length
// field is checked against it and against the bytes actually left.
const MaxMessageBytes = 8 << 20

// maxDepth bounds the nesting of a msgpack body (our structs nest a few
// levels; the bound keeps a hostile body from exhausting the stack).
const maxDepth = 32

// Bounded checks, without allocating, that data is exactly one msgpack
// value whose every length is honest: each str, bin and ext length fits
// in the bytes left, and each array or map length too (every element
// takes at least one byte), so that a decoder that allocates by those
// lengths allocates at most a constant times len(data). It is run before
// any msgpack.Unmarshal of bytes from the network; it does not bound
// len(data) itself (Decode does, for one message).
func Bounded(data []byte) error {
	end, err := skip(data, 0, 0)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if end != len(data) {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(data)-end)
	}
	return nil
}

// skip returns the offset just after the msgpack value at data[off:].
func skip(data []byte, off, depth int) (int, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	if off >= len(data) {
		return 0, fmt.Errorf("truncated at byte %d", off)
	}
	c := data[off]
	off++
	// n is a length read from a header of size bytes.
	length := func(size int) (int, error) {
		if len(data)-off < size {
			return 0, fmt.Errorf("truncated header at byte %d", off)
		}
		var n uint64
		switch size {
		case 1:
			n = uint64(data[off])
		case 2:
			n = uint64(binary.BigEndian.Uint16(data[off:]))
		case 4:
			n = uint64(binary.BigEndian.Uint32(data[off:]))
		}
		off += size
		if n > uint64(len(data)-off) {
			return 0, fmt.Errorf("length %d with %d bytes left", n, len(data)-off)
		}
		return int(n), nil
	}
	fixed := func(n int) (int, error) {
		if len(data)-off < n {
			return 0, fmt.Errorf("truncated at byte %d", off)
		}
		return off + n, nil
	}
	elems := func(n int) (int, error) {
		var err error
		for k := 0; k < n; k++ {
			if off, err = skip(data, off, depth+1); err != nil {
				return 0, err
			}
		}
		return off, nil
	}
	switch {
	case c <= 0x7f || c >= 0xe0: // fixints
		return off, nil
	case c <= 0x8f: // fixmap
		n := int(c & 0x0f)
		if 2*n > len(data)-off {
			return 0, fmt.Errorf("map of %d with %d bytes left", n, len(data)-off)
		}
		return elems(2 * n)
	case c <= 0x9f: // fixarray
		return elems(int(c & 0x0f)) // elems checks each element's bytes
	case c <= 0xbf: // fixstr
		return fixed(int(c & 0x1f))
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return off, nil
	case 0xc4, 0xd9: // bin8, str8
		n, err := length(1)
		return off + n, err
	case 0xc5, 0xda: // bin16, str16
		n, err := length(2)
		return off + n, err
	case 0xc6, 0xdb: // bin32, str32
		n, err := length(4)
		return off + n, err
	case 0xc7, 0xc8, 0xc9: // ext8/16/32: length, type, data
		size := 1
		switch c {
		case 0xc8:
			size = 2
		case 0xc9:
			size = 4
		}
		n, err := length(size)
		if err != nil {
			return 0, err
		}
		return fixed(1 + n)
	case 0xca:
		return fixed(4)
	case 0xcb:
		return fixed(8)
	case 0xcc, 0xd0:
		return fixed(1)
	case 0xcd, 0xd1:
		return fixed(2)
	case 0xce, 0xd2:
		return fixed(4)
	case 0xcf, 0xd3:
		return fixed(8)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16 (+ type)
		return fixed(1 + 1<<(c-0xd4))
	case 0xdc, 0xdd: // array16/32
		n, err := arrayHeader(data, &off, c == 0xdd, 1)
		if err != nil {
			return 0, err
		}
		return elems(n)
	case 0xde, 0xdf: // map16/32
		n, err := arrayHeader(data, &off, c == 0xdf, 2)
		if err != nil {
			return 0, err
		}
		return elems(2 * n)
	}
	return 0, fmt.Errorf("invalid code 0x%02x", c)
}

// arrayHeader reads an array or map length (16 or 32 bits) and checks
// that per values of one byte each fit in the bytes left.
func arrayHeader(data []byte, off *int, wide bool, per int) (int, error) {
	size := 2
	if wide {
		size = 4
	}
	if len(data)-*off < size {
		return 0, fmt.Errorf("truncated header at byte %d", *off)
	}
	var n uint64
	if wide {
		n = uint64(binary.BigEndian.Uint32(data[*off:]))
	} else {
		n = uint64(binary.BigEndian.Uint16(data[*off:]))
	}
	*off += size
	if n*uint64(per) > uint64(len(data)-*off) {
		return 0, fmt.Errorf("%d elements with %d bytes left", n, len(data)-*off)
	}
	return int(n), nil
}
