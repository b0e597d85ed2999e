package pcap

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/lockstep-sim/lockstep/sim"
)

// The classic pcap file format (draft-ietf-opsawg-pcap §4, §5), written in
// little-endian byte order.
const (
	// MagicNanos marks a file whose record timestamps have a nanosecond
	// fraction (draft-ietf-opsawg-pcap §4).
	MagicNanos = 0xa1b23c4d
	// LinkTypeEthernet is LINKTYPE_ETHERNET (IEEE 802.3 frames).
	LinkTypeEthernet = 1
	// FileHeaderLen and RecordHeaderLen are the fixed header sizes.
	FileHeaderLen   = 24
	RecordHeaderLen = 16
	versionMajor    = 2
	versionMinor    = 4
)

// Writer writes a pcap file. It allocates nothing per packet: each record
// is built in a scratch array and handed to the io.Writer in one Write.
type Writer struct {
	w       io.Writer
	err     error // first write error; later writes are skipped
	packets uint64
	buf     [RecordHeaderLen + MaxHeaderLen]byte
}

// NewWriter writes the file header to w and returns a Writer for the
// records.
func NewWriter(w io.Writer) (*Writer, error) {
	pw := &Writer{}
	return pw, pw.init(w)
}

func (pw *Writer) init(w io.Writer) error {
	pw.w = w
	var h [FileHeaderLen]byte
	binary.LittleEndian.PutUint32(h[0:4], MagicNanos)
	binary.LittleEndian.PutUint16(h[4:6], versionMajor)
	binary.LittleEndian.PutUint16(h[6:8], versionMinor)
	// h[8:16]: reserved (formerly thiszone and sigfigs), zero.
	binary.LittleEndian.PutUint32(h[16:20], MaxHeaderLen) // snaplen
	binary.LittleEndian.PutUint32(h[20:24], LinkTypeEthernet)
	_, pw.err = w.Write(h[:])
	return pw.err
}

// WritePacket appends p as seen at virtual time now. The timestamp is now
// truncated to nanoseconds, counted from the Unix epoch (virtual time 0 is
// 1970-01-01 00:00:00 UTC). It returns the first error the underlying
// writer reported, now or before.
func (pw *Writer) WritePacket(now sim.Time, p *sim.Packet) error {
	if pw.err != nil {
		return pw.err
	}
	capLen, origLen := Encode(pw.buf[RecordHeaderLen:], p)
	ns := uint64(max(now, 0) / sim.Nanosecond)
	r := pw.buf[:RecordHeaderLen]
	binary.LittleEndian.PutUint32(r[0:4], uint32(ns/1e9))
	binary.LittleEndian.PutUint32(r[4:8], uint32(ns%1e9))
	binary.LittleEndian.PutUint32(r[8:12], uint32(capLen))
	binary.LittleEndian.PutUint32(r[12:16], uint32(origLen))
	_, pw.err = pw.w.Write(pw.buf[:RecordHeaderLen+capLen])
	if pw.err == nil {
		pw.packets++
	}
	return pw.err
}

// Packets is the number of records written.
func (pw *Writer) Packets() uint64 { return pw.packets }

// Capture is one host's capture, held in memory until the run ends. Its Tap
// method fits hostsim.Host.Tap.
type Capture struct {
	buf bytes.Buffer
	w   Writer
}

// NewCapture returns an empty capture (the file header written).
func NewCapture() *Capture {
	c := &Capture{}
	_ = c.w.init(&c.buf) // a bytes.Buffer never fails
	return c
}

// Tap records a packet the host sent (tx) or received. Classic pcap has no
// direction field: the addresses tell.
func (c *Capture) Tap(now sim.Time, p *sim.Packet, tx bool) {
	_ = c.w.WritePacket(now, p) // a bytes.Buffer never fails
}

// Packets is the number of packets captured.
func (c *Capture) Packets() uint64 { return c.w.Packets() }

// Bytes returns the pcap file so far. It aliases the capture's buffer.
func (c *Capture) Bytes() []byte { return c.buf.Bytes() }

// WriteTo writes the pcap file to w.
func (c *Capture) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(c.buf.Bytes())
	return int64(n), err
}
