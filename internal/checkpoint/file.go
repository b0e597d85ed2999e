// Package checkpoint is the on-disk form of a checkpoint (docs/decisions.md,
// "Checkpoints"): a file is a header (magic, format version, what the
// checkpoint is of: scenario digest, partition, window, virtual time) and
// named sections, each with its length and SHA-256; a checkpoint is a
// directory of such files and a manifest that lists them with their
// digests, written atomically (a temporary directory renamed into place).
// A file or directory that fails any check is refused with a one-line
// error naming it, never used. What the sections hold (internal/snapshot's
// type table and graph) is the caller's.
package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/klauspost/compress/s2"
	"github.com/vmihailenco/msgpack/v5"
)

// Magic opens every checkpoint file.
const Magic = "LSCKPT\r\n"

// Format is the version of the file format and of the graph encoding; a
// reader refuses any other.
const Format = 2

// maxHeader bounds a header's encoded size.
const maxHeader = 1 << 20

// ErrCorrupt marks a checkpoint that fails a check (truncated, a digest
// that does not match, not a checkpoint at all).
var ErrCorrupt = errors.New("checkpoint: corrupt")

// Header says what a checkpoint file holds.
type Header struct {
	Format int `msgpack:"format"`
	// Build is the version of the binary that wrote it, Arch its GOARCH:
	// the graph is in that build's memory layout (a reader also checks
	// every type's layout).
	Build string `msgpack:"build"`
	Arch  string `msgpack:"arch"`
	// Digest is the effective scenario's (scenario.Built.Digest).
	Digest string `msgpack:"digest"`
	// Partition is the partition whose state the file holds, or -1 for
	// every partition of a run in this process.
	Partition  int `msgpack:"partition"`
	Partitions int `msgpack:"partitions"`
	// Window is the last window run (0 for a run in one partition), Time
	// the virtual time (ps) of the boundary.
	Window uint64 `msgpack:"window"`
	Time   int64  `msgpack:"time_ps"`
	// Compression is how the sections are compressed: "s2" (Snappy's
	// successor, klauspost/compress/s2, block format) or "" (none). The
	// digests are of the bytes as stored.
	Compression string    `msgpack:"compression"`
	Sections    []Section `msgpack:"sections"`
}

// Section is one named part of a file, in file order.
type Section struct {
	Name   string `msgpack:"name"`
	Length uint64 `msgpack:"length"`
	SHA256 []byte `msgpack:"sha256"`
}

// Named is a section's name and bytes, to write.
type Named struct {
	Name string
	Data []byte
}

// Write writes a checkpoint file: h (its Format, Arch and Sections filled
// in here) and the sections.
func Write(w io.Writer, h Header, sections []Named) error {
	h.Format, h.Arch = Format, runtime.GOARCH
	h.Sections = h.Sections[:0]
	for _, s := range sections {
		sum := sha256.Sum256(s.Data)
		h.Sections = append(h.Sections, Section{Name: s.Name, Length: uint64(len(s.Data)), SHA256: sum[:]})
	}
	hb, err := msgpack.Marshal(&h)
	if err != nil {
		return err
	}
	var pre [16]byte
	copy(pre[:8], Magic)
	binary.LittleEndian.PutUint32(pre[8:], Format)
	binary.LittleEndian.PutUint32(pre[12:], uint32(len(hb)))
	hsum := sha256.Sum256(hb)
	for _, b := range [][]byte{pre[:], hb, hsum[:]} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	for _, s := range sections {
		if _, err := w.Write(s.Data); err != nil {
			return err
		}
	}
	return nil
}

// HeaderDigest is the SHA-256 of a checkpoint file's header, as the file
// holds it (hex): since the header holds every section's SHA-256, it
// stands for the whole file (a manifest lists it). "" when data is too
// short to hold one.
func HeaderDigest(data []byte) string {
	if len(data) < 16 {
		return ""
	}
	hl := uint64(binary.LittleEndian.Uint32(data[12:]))
	if uint64(len(data)) < 16+hl+32 {
		return ""
	}
	return hex.EncodeToString(data[16+hl : 16+hl+32])
}

// File is a checkpoint file read and checked.
type File struct {
	Header
	sections map[string][]byte
}

// CompressionS2 is the one compression a file may use.
const CompressionS2 = "s2"

// maxSection bounds a section's decompressed size (1 TiB): a corrupt
// length cannot make Section allocate more.
const maxSection = 1 << 40

// Section returns the bytes of the section called name, decompressed
// (nil if none).
func (f *File) Section(name string) ([]byte, error) {
	b, ok := f.sections[name]
	if !ok || f.Compression == "" {
		return b, nil
	}
	n, err := s2.DecodedLen(b)
	if err != nil || n > maxSection {
		return nil, fmt.Errorf("%w: section %s: %d bytes compressed to a bad length (%v)", ErrCorrupt, name, len(b), err)
	}
	out, err := s2.Decode(make([]byte, n), b)
	if err != nil {
		return nil, fmt.Errorf("%w: section %s: %v", ErrCorrupt, name, err)
	}
	return out, nil
}

// Decode checks and splits a checkpoint file's bytes; name is what errors
// call it (its path).
func Decode(name string, data []byte) (*File, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
	if len(data) < 16 || !bytes.Equal(data[:8], []byte(Magic)) {
		return nil, bad("not a lockstep checkpoint (no %q magic)", Magic)
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != Format {
		return nil, bad("format version %d; this build reads version %d", v, Format)
	}
	hl := uint64(binary.LittleEndian.Uint32(data[12:]))
	if hl > maxHeader {
		return nil, bad("header of %d bytes (at most %d)", hl, maxHeader)
	}
	if uint64(len(data)-16) < hl+32 {
		return nil, bad("truncated in the header (%d bytes, the header needs %d)", len(data), 16+hl+32)
	}
	hb := data[16 : 16+hl]
	if sum := sha256.Sum256(hb); !bytes.Equal(sum[:], data[16+hl:16+hl+32]) {
		return nil, bad("header: SHA-256 mismatch (the file is corrupted)")
	}
	f := &File{sections: map[string][]byte{}}
	if err := msgpack.Unmarshal(hb, &f.Header); err != nil {
		return nil, bad("header: %v", err)
	}
	if f.Format != Format {
		return nil, bad("header says format %d", f.Format)
	}
	if f.Arch != runtime.GOARCH {
		return nil, bad("written on %s, this is %s", f.Arch, runtime.GOARCH)
	}
	if f.Compression != "" && f.Compression != CompressionS2 {
		return nil, bad("compression %q; this build reads %q", f.Compression, CompressionS2)
	}
	rest := data[16+hl+32:]
	for _, s := range f.Sections {
		if s.Length > uint64(len(rest)) {
			return nil, bad("truncated: section %s needs %d bytes, %d left", s.Name, s.Length, len(rest))
		}
		b := rest[:s.Length]
		rest = rest[s.Length:]
		if sum := sha256.Sum256(b); !bytes.Equal(sum[:], s.SHA256) {
			return nil, bad("section %s: SHA-256 mismatch (the file is corrupted)", s.Name)
		}
		if _, dup := f.sections[s.Name]; dup {
			return nil, bad("section %s twice", s.Name)
		}
		f.sections[s.Name] = b
	}
	if len(rest) != 0 {
		return nil, bad("%d bytes after the last section", len(rest))
	}
	return f, nil
}
