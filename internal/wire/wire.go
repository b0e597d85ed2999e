// Package wire encodes the messages that node processes and coordinators
// exchange over NATS (docs/design.md §3): window batches of packets that cross a
// cut, barrier reports and grants, resynchronisation requests, and the
// control messages that set a run up and collect its results.
//
// Every message is one msgpack array whose first element is its Kind. The
// per-window messages (Batch, Report, Grant) are encoded field by field, in
// a fixed order, with compact integers; the rare control messages carry a
// msgpack-encoded struct. Decoding never panics and never allocates more
// than the input can describe: every length is checked against the bytes
// left, every integer against its field's range.
package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/sim"
)

// ErrMalformed marks input that is not a valid message.
var ErrMalformed = errors.New("wire: malformed message")

// Kind says what a message is.
type Kind uint8

// Message kinds. The zero value is invalid.
const (
	// KindBatch: packets for one destination node, sent in one window.
	KindBatch Kind = 1 + iota
	// KindReport: a node's barrier report after a window.
	KindReport
	// KindGrant: the barrier's grant of the next window (or the end).
	KindGrant
	// KindResync: a new leader asks the nodes to resend their reports.
	KindResync
	// KindControl: a control message (Control.Type says which).
	KindControl
)

func (k Kind) String() string {
	switch k {
	case KindBatch:
		return "batch"
	case KindReport:
		return "report"
	case KindGrant:
		return "grant"
	case KindResync:
		return "resync"
	case KindControl:
		return "control"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// MaxNodes bounds the node counts in reports and grants.
const MaxNodes = 1 << 20

// Batch is the packets one node sends another during one window, in the
// order they were sent. A window's packets for one destination may be split
// over several batches, numbered by Seq from 0.
type Batch struct {
	From, To int32
	Window   uint64 // the window they were sent in
	Seq      uint32
	Packets  []sim.RemotePacket
	// Epoch is the run's epoch the batch was sent in (docs/decisions.md,
	// "Distributed checkpoints"): a rollback to a checkpoint starts a new
	// one, and receivers drop messages of any other. The core never
	// looks at it; the shell stamps it.
	Epoch uint64
}

// Resync is a new leader's request that every node resend its last
// reports (barrier.Follower.Resend).
type Resync struct {
	Term uint64
	// Epoch is the run's epoch (Batch.Epoch): a node answers only a
	// request of its own epoch.
	Epoch uint64
}

// fieldCount is the number of fields after the kind, by kind.
var fieldCount = [...]int{KindBatch: 6, KindReport: 11, KindGrant: 10, KindResync: 2, KindControl: 2}

// packetFields is the number of msgpack values per RemotePacket: the last
// is its telemetry, an empty array when it has none.
const packetFields = 3 + 18 + 2*sim.MaxSackBlocks + 1

// telFields is the number of values of a telemetry array with n INT hops.
func telFields(n int) int { return 3 + 4*n }

// Encoder encodes messages into a reusable buffer and returns a fresh copy
// of each: for senders that keep what they send. The Append functions
// encode into a caller's buffer without allocating. It is not safe for
// concurrent use.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an encoder.
func NewEncoder() *Encoder { return &Encoder{} }

func appendHeader(dst []byte, k Kind) []byte {
	dst = appendArrayLen(dst, fieldCount[k]+1)
	return appendUint(dst, uint64(k))
}

// Batch encodes b. The result is a fresh slice.
func (e *Encoder) Batch(b *Batch) []byte {
	e.buf = AppendBatch(e.buf[:0], b)
	return bytes.Clone(e.buf)
}

// AppendBatch appends b's encoding to dst. Each packet is one fixed-layout
// array of packetFields compact integers.
func AppendBatch(dst []byte, b *Batch) []byte {
	dst = appendHeader(dst, KindBatch)
	dst = appendInt(dst, int64(b.From))
	dst = appendInt(dst, int64(b.To))
	dst = appendUint(dst, b.Window)
	dst = appendUint(dst, uint64(b.Seq))
	dst = appendArrayLen(dst, len(b.Packets))
	for k := range b.Packets {
		dst = appendPacket(dst, &b.Packets[k])
	}
	return appendUint(dst, b.Epoch)
}

func appendPacket(dst []byte, rp *sim.RemotePacket) []byte {
	p := &rp.Pkt
	dst = appendArrayLen(dst, packetFields)
	dst = appendInt(dst, int64(rp.Link))
	dst = appendInt(dst, int64(rp.At))
	dst = appendUint(dst, rp.Seq)
	dst = appendUint(dst, p.ID)
	dst = appendInt(dst, int64(p.Flow))
	dst = appendInt(dst, int64(p.SrcHost))
	dst = appendInt(dst, int64(p.DstHost))
	dst = appendUint(dst, uint64(p.SrcPort))
	dst = appendUint(dst, uint64(p.DstPort))
	dst = appendUint(dst, uint64(p.Proto))
	dst = appendUint(dst, uint64(p.NSack))
	dst = appendUint(dst, uint64(p.Hops))
	dst = appendUint(dst, uint64(p.Flags))
	dst = appendUint(dst, uint64(p.Entropy))
	dst = appendInt(dst, int64(p.Size))
	dst = appendInt(dst, int64(p.Payload))
	dst = appendUint(dst, p.Seq)
	dst = appendUint(dst, p.Ack)
	dst = appendUint(dst, p.Bitmap)
	dst = appendInt(dst, int64(p.TSval))
	dst = appendInt(dst, int64(p.TSecr))
	for _, s := range p.Sack {
		dst = appendUint(dst, s.Start)
		dst = appendUint(dst, s.End)
	}
	return appendTelemetry(dst, rp.Tel)
}

// appendTelemetry encodes a packet's telemetry (sim.Telemetry): an empty
// array for none.
func appendTelemetry(dst []byte, t *sim.Telemetry) []byte {
	if t == nil {
		return appendArrayLen(dst, 0)
	}
	n := int(t.NHops)
	dst = appendArrayLen(dst, telFields(n))
	dst = appendUint(dst, uint64(n))
	dst = appendInt(dst, int64(t.NICWait))
	dst = appendInt(dst, int64(t.EndpointDelay))
	for _, h := range t.Hops[:n] {
		dst = appendInt(dst, int64(h.TS))
		dst = appendUint(dst, h.TxBytes)
		dst = appendInt(dst, h.QLen)
		dst = appendInt(dst, int64(h.Rate))
	}
	return dst
}

// Report encodes r (with no busy time, in epoch 0). The result is a fresh
// slice.
func (e *Encoder) Report(r *barrier.Report) []byte {
	e.buf = AppendReport(e.buf[:0], r, 0, 0)
	return bytes.Clone(e.buf)
}

// AppendReport appends r's encoding to dst. busy is the wall-clock time,
// ns, the node spent on the window it reports (Message.Busy): peers use it
// to tell load imbalance from network wait. It is statistics only; nothing
// the run computes depends on it. epoch is the run's epoch the report is
// sent in (Batch.Epoch, Message.Epoch).
func AppendReport(dst []byte, r *barrier.Report, busy, epoch uint64) []byte {
	dst = appendHeader(dst, KindReport)
	dst = appendInt(dst, int64(r.Node))
	dst = appendUint(dst, r.Window)
	dst = appendUint(dst, r.Term)
	dst = appendInt(dst, int64(r.NextEvent))
	dst = appendInt(dst, int64(r.MinSent))
	dst = appendArrayLen(dst, len(r.Sent))
	for _, n := range r.Sent {
		dst = appendUint(dst, uint64(n))
	}
	dst = appendBool(dst, r.Done)
	dst = appendInt(dst, int64(r.PausedAt))
	dst = appendPausedPorts(dst, r.Paused)
	dst = appendUint(dst, busy)
	return appendUint(dst, epoch)
}

// pausedPortFields is the number of msgpack values per sim.PausedPort.
const pausedPortFields = 6

func appendPausedPorts(dst []byte, ps []sim.PausedPort) []byte {
	dst = appendArrayLen(dst, len(ps))
	for _, p := range ps {
		dst = appendArrayLen(dst, pausedPortFields)
		dst = appendInt(dst, int64(p.Elem))
		dst = appendInt(dst, int64(p.Peer))
		dst = appendInt(dst, int64(p.Port))
		dst = appendInt(dst, int64(p.Class))
		dst = appendInt(dst, int64(p.Since))
		dst = appendInt(dst, int64(p.Until))
	}
	return dst
}

// Grant encodes g. The result is a fresh slice.
func (e *Encoder) Grant(g *barrier.Grant) []byte {
	e.buf = AppendGrant(e.buf[:0], g)
	return bytes.Clone(e.buf)
}

// AppendGrant appends g's encoding to dst.
func AppendGrant(dst []byte, g *barrier.Grant) []byte {
	dst = appendHeader(dst, KindGrant)
	dst = appendUint(dst, g.Window)
	dst = appendUint(dst, g.Term)
	dst = appendInt(dst, int64(g.Start))
	dst = appendInt(dst, int64(g.End))
	dst = appendArrayLen(dst, len(g.Expect))
	for _, n := range g.Expect {
		dst = appendUint(dst, uint64(n))
	}
	dst = appendInt(dst, int64(g.Idle))
	dst = appendBool(dst, g.Finished)
	dst = appendUint(dst, uint64(g.Reason))
	return appendPausedPorts(dst, g.Cycle)
}

// Resync encodes r.
func (e *Encoder) Resync(r Resync) []byte {
	e.buf = appendHeader(e.buf[:0], KindResync)
	e.buf = appendUint(e.buf, r.Term)
	e.buf = appendUint(e.buf, r.Epoch)
	return bytes.Clone(e.buf)
}

// Control encodes a control message: its type and a msgpack-encoded body.
func (e *Encoder) Control(typ string, body any) ([]byte, error) {
	data, err := msgpack.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("wire: control %s: %w", typ, err)
	}
	e.buf = appendHeader(e.buf[:0], KindControl)
	e.buf = appendStr(e.buf, typ)
	e.buf = appendBin(e.buf, data)
	return bytes.Clone(e.buf), nil
}

// Control is a decoded control message; Body is the encoded struct, for
// UnmarshalBody.
type Control struct {
	Type string
	Body []byte
}

// UnmarshalBody decodes the control message's body into v. The body's
// lengths are checked first (Bounded), so that decoding allocates at most
// a constant times the body's size.
func (c *Control) UnmarshalBody(v any) error {
	if err := Bounded(c.Body); err != nil {
		return fmt.Errorf("control %s: %w", c.Type, err)
	}
	if err := msgpack.Unmarshal(c.Body, v); err != nil {
		return fmt.Errorf("%w: control %s: %v", ErrMalformed, c.Type, err)
	}
	return nil
}

// Message is a decoded message: exactly one field is set, as Kind says.
type Message struct {
	Kind  Kind
	Batch *Batch
	// Busy is a report's busy time, ns (AppendReport).
	Busy uint64
	// Epoch is a report's, batch's or resync request's epoch
	// (Batch.Epoch).
	Epoch   uint64
	Report  *barrier.Report
	Grant   *barrier.Grant
	Resync  *Resync
	Control *Control
}

// decoder reads one message.
type decoder struct {
	reader
}

func (d *decoder) time(what string) sim.Time {
	return sim.Time(d.i(what, 0, math.MaxInt64))
}

// MaxControlType bounds a control message's type string.
const MaxControlType = 64

// Decode decodes one message. It allocates at most a small constant times
// len(data) (the bound TestDecode_AllocationBound checks), and refuses
// messages longer than MaxMessageBytes.
func Decode(data []byte) (Message, error) {
	var m Message
	err := DecodeInto(data, &m, nil)
	return m, err
}

// DecodeInto decodes one message into m. A batch is decoded into into when
// into is not nil, reusing its Packets' capacity, so that a receiver that
// recycles its batches decodes without allocating (but for packets that
// carry telemetry); m.Batch is then into. A report is decoded into the
// m.Report an earlier call left, reusing its Sent capacity, so that a
// receiver that decodes every peer's report into one Message allocates
// nothing per report: the caller must not keep m.Report, or its slices,
// past the next call (barrier.Barrier.Step copies what it keeps). On error
// m is zeroed.
func DecodeInto(data []byte, m *Message, into *Batch) error {
	prev := m.Report
	*m = Message{}
	if len(data) > MaxMessageBytes {
		return fmt.Errorf("%w: %d bytes (max %d)", ErrMalformed, len(data), MaxMessageBytes)
	}
	d := &decoder{reader{b: data}}
	n := d.arrayLen("message", 1)
	if d.err == nil && n < 1 {
		d.fail("empty message")
	}
	k := Kind(d.u("kind", 255))
	if d.err == nil && (int(k) >= len(fieldCount) || fieldCount[k] == 0 || n-1 != fieldCount[k]) {
		d.fail("kind %v with %d fields", k, n-1)
	}
	if d.err != nil {
		return d.err
	}
	m.Kind = k
	switch k {
	case KindBatch:
		if into == nil {
			into = &Batch{}
		}
		d.batch(into)
		into.Epoch = d.u("epoch", math.MaxUint64)
		m.Batch, m.Epoch = into, into.Epoch
	case KindReport:
		m.Report = d.report(prev)
		m.Busy = d.u("busy", math.MaxUint64)
		m.Epoch = d.u("epoch", math.MaxUint64)
	case KindGrant:
		m.Grant = d.grant()
	case KindResync:
		m.Resync = &Resync{Term: d.u("term", math.MaxUint64)}
		m.Resync.Epoch = d.u("epoch", math.MaxUint64)
		m.Epoch = m.Resync.Epoch
	case KindControl:
		c := &Control{}
		c.Type = string(d.blob("control type", MaxControlType))
		c.Body = bytes.Clone(d.blob("control body", MaxMessageBytes))
		m.Control = c
	}
	if d.err == nil && d.left() != 0 {
		d.fail("%d trailing bytes", d.left())
	}
	if d.err != nil {
		*m = Message{}
		return d.err
	}
	return nil
}

func (d *decoder) batch(b *Batch) {
	n := d.batchHead(b)
	b.Packets = slices.Grow(b.Packets[:0], n)[:n]
	var tels []sim.Telemetry // allocated at the first packet with telemetry
	for k := 0; k < n && d.err == nil; k++ {
		if fastPackets && d.packetFast(&b.Packets[k]) {
			continue
		}
		if f := d.arrayLen("packet", 1); d.err == nil && f != packetFields {
			d.fail("packet %d has %d fields, want %d", k, f, packetFields)
		}
		rp := &b.Packets[k]
		p := &rp.Pkt
		rp.Link = sim.LinkID(d.i("link", 0, math.MaxInt32))
		rp.At = d.time("at")
		rp.Seq = d.u("seq", math.MaxUint64)
		p.ID = d.u("id", math.MaxUint64)
		p.Flow = int32(d.i("flow", math.MinInt32, math.MaxInt32))
		p.SrcHost = int32(d.i("src host", math.MinInt32, math.MaxInt32))
		p.DstHost = int32(d.i("dst host", math.MinInt32, math.MaxInt32))
		p.SrcPort = uint16(d.u("src port", math.MaxUint16))
		p.DstPort = uint16(d.u("dst port", math.MaxUint16))
		p.Proto = uint8(d.u("proto", math.MaxUint8))
		p.NSack = uint8(d.u("nsack", sim.MaxSackBlocks))
		p.Hops = uint8(d.u("hops", math.MaxUint8))
		p.Flags = sim.Flags(d.u("flags", math.MaxUint16))
		p.Entropy = uint16(d.u("entropy", math.MaxUint16))
		p.Size = int32(d.i("size", math.MinInt32, math.MaxInt32))
		p.Payload = int32(d.i("payload", math.MinInt32, math.MaxInt32))
		p.Seq = d.u("pkt seq", math.MaxUint64)
		p.Ack = d.u("ack", math.MaxUint64)
		p.Bitmap = d.u("bitmap", math.MaxUint64)
		p.TSval = sim.Time(d.i("tsval", math.MinInt64, math.MaxInt64))
		p.TSecr = sim.Time(d.i("tsecr", math.MinInt64, math.MaxInt64))
		for s := range p.Sack {
			p.Sack[s].Start = d.u("sack start", math.MaxUint64)
			p.Sack[s].End = d.u("sack end", math.MaxUint64)
		}
		if f := d.arrayLen("telemetry", 1); f > 0 {
			if tels == nil {
				tels = make([]sim.Telemetry, n)
			}
			rp.Tel = d.telemetry(&tels[k], f)
		} else {
			rp.Tel = nil
		}
	}
}

// batchHead reads a batch's values before its packets into b and returns
// the number of packets that follow.
func (d *decoder) batchHead(b *Batch) int {
	b.From = int32(d.i("from", 0, MaxNodes-1))
	b.To = int32(d.i("to", 0, MaxNodes-1))
	b.Window = d.u("window", math.MaxUint64)
	b.Seq = uint32(d.u("seq", math.MaxUint32))
	return d.arrayLen("packets", packetFields+1)
}

// fastPackets lets batch try packetFast first (tests turn it off to
// compare the two paths).
var fastPackets = true

// maxPacketBytes bounds an encoded packet without telemetry: the array
// header, 29 integers of at most 9 bytes and the empty telemetry array.
const maxPacketBytes = 3 + 9*(packetFields-1) + 1

// packetFast decodes the next packet into rp when it has the form our
// encoder gives almost every packet: the 30-value array header, every
// value a non-negative integer within its field's range, no telemetry;
// and when maxPacketBytes are left, so that no value needs its own
// bounds check. Otherwise it consumes nothing and returns false: the
// general path decodes the packet, or says what is wrong with it. Both
// give the same packet (TestPacketFast_AgreesWithTheGeneralPath).
func (d *decoder) packetFast(rp *sim.RemotePacket) bool {
	b, off := d.b, d.off
	if d.err != nil || len(b)-off < maxPacketBytes || b[off] != mpArray16 || b[off+1] != 0 || b[off+2] != packetFields {
		return false
	}
	off += 3
	var v [packetFields - 1]uint64
	bad := false
	for f := range v {
		if c := b[off]; c <= 0x7f {
			v[f], off = uint64(c), off+1
		} else {
			v[f], off = readWide(b, off, &bad)
		}
	}
	// The general path's bounds, the fields ORed by bound (link, flow,
	// hosts, size, payload; ports, flags, entropy; proto, hops; nsack;
	// at, tsval, tsecr).
	if bad || (v[0]|v[4]|v[5]|v[6]|v[14]|v[15]) > math.MaxInt32 || (v[7]|v[8]|v[12]|v[13]) > math.MaxUint16 ||
		(v[9]|v[11]) > math.MaxUint8 || v[10] > sim.MaxSackBlocks || (v[1]|v[19]|v[20]) > math.MaxInt64 || b[off] != mpFixArrayMin {
		return false
	}
	d.off = off + 1
	p := &rp.Pkt
	rp.Link, rp.At, rp.Seq = sim.LinkID(v[0]), sim.Time(v[1]), v[2]
	p.ID, p.Flow, p.SrcHost, p.DstHost = v[3], int32(v[4]), int32(v[5]), int32(v[6])
	p.SrcPort, p.DstPort, p.Proto, p.NSack = uint16(v[7]), uint16(v[8]), uint8(v[9]), uint8(v[10])
	p.Hops, p.Flags, p.Entropy = uint8(v[11]), sim.Flags(v[12]), uint16(v[13])
	p.Size, p.Payload = int32(v[14]), int32(v[15])
	p.Seq, p.Ack, p.Bitmap, p.TSval, p.TSecr = v[16], v[17], v[18], sim.Time(v[19]), sim.Time(v[20])
	for s := range p.Sack {
		p.Sack[s] = sim.SackBlock{Start: v[21+2*s], End: v[22+2*s]}
	}
	rp.Tel = nil
	return true
}

// readWide reads a non-negative msgpack integer wider than a positive
// fixint (uint 8, 16, 32, 64) at b[off:], which holds at least 9 bytes,
// and returns it and the offset after it; any other form sets *bad.
// packetFast reads the fixints itself; kept out of line, this keeps its
// loop small.
//
//go:noinline
func readWide(b []byte, off int, bad *bool) (uint64, int) {
	switch b[off] {
	case mpUint8:
		return uint64(b[off+1]), off + 2
	case mpUint16:
		return uint64(binary.BigEndian.Uint16(b[off+1 : off+3])), off + 3
	case mpUint32:
		return uint64(binary.BigEndian.Uint32(b[off+1 : off+5])), off + 5
	case mpUint64:
		return binary.BigEndian.Uint64(b[off+1 : off+9]), off + 9
	}
	*bad = true
	return 0, off + 1
}

// telemetry decodes a non-empty telemetry array of f values into t.
func (d *decoder) telemetry(t *sim.Telemetry, f int) *sim.Telemetry {
	nh := int(d.u("int hops", sim.MaxINTHops))
	if d.err == nil && f != telFields(nh) {
		d.fail("telemetry has %d values for %d hops, want %d", f, nh, telFields(nh))
	}
	t.NHops = uint8(nh)
	t.NICWait = sim.Time(d.i("nic wait", math.MinInt64, math.MaxInt64))
	t.EndpointDelay = sim.Time(d.i("endpoint delay", math.MinInt64, math.MaxInt64))
	for i := 0; i < nh && d.err == nil; i++ {
		h := &t.Hops[i]
		h.TS = sim.Time(d.i("int ts", math.MinInt64, math.MaxInt64))
		h.TxBytes = d.u("int tx bytes", math.MaxUint64)
		h.QLen = d.i("int qlen", math.MinInt64, math.MaxInt64)
		h.Rate = sim.Bandwidth(d.i("int rate", 0, math.MaxInt64))
	}
	return t
}

func (d *decoder) counts(what string) []uint32 { return d.countsInto(what, nil) }

// countsInto decodes a count per node into dst's capacity (dst's contents
// are overwritten).
func (d *decoder) countsInto(what string, dst []uint32) []uint32 {
	n := d.arrayLen(what, 1)
	if d.err == nil && (n < 1 || n > MaxNodes) {
		d.fail("%s: %d nodes", what, n)
	}
	if d.err != nil {
		return nil
	}
	c := slices.Grow(dst[:0], n)[:n]
	for j := range c {
		c[j] = uint32(d.u(what, math.MaxUint32))
	}
	return c
}

// report decodes a report into r (nil: a new one), reusing its Sent
// capacity.
func (d *decoder) report(r *barrier.Report) *barrier.Report {
	var sent []uint32
	if r == nil {
		r = &barrier.Report{}
	} else {
		sent = r.Sent
		*r = barrier.Report{}
	}
	r.Node = int(d.i("node", 0, MaxNodes-1))
	r.Window = d.u("window", math.MaxUint64)
	r.Term = d.u("term", math.MaxUint64)
	r.NextEvent = d.time("next event")
	r.MinSent = d.time("min sent")
	r.Sent = d.countsInto("sent", sent)
	r.Done = d.bool("done")
	r.PausedAt = d.time("paused at")
	r.Paused = d.pausedPorts("paused")
	return r
}

func (d *decoder) pausedPorts(what string) []sim.PausedPort {
	n := d.arrayLen(what, pausedPortFields+1)
	if d.err != nil || n == 0 {
		return nil
	}
	ps := make([]sim.PausedPort, n)
	for k := range ps {
		if m := d.arrayLen(what, 1); d.err == nil && m != pausedPortFields {
			d.fail("%s: %d fields, want %d", what, m, pausedPortFields)
		}
		p := &ps[k]
		p.Elem = sim.ElemID(d.i(what, 0, math.MaxInt32))
		p.Peer = sim.ElemID(d.i(what, 0, math.MaxInt32))
		p.Port = int32(d.i(what, 0, math.MaxInt32))
		p.Class = int32(d.i(what, 0, sim.MaxClasses-1))
		p.Since = d.time(what)
		p.Until = d.time(what)
	}
	if d.err != nil {
		return nil
	}
	return ps
}

func (d *decoder) grant() *barrier.Grant {
	g := &barrier.Grant{}
	g.Window = d.u("window", math.MaxUint64)
	g.Term = d.u("term", math.MaxUint64)
	g.Start = d.time("start")
	g.End = d.time("end")
	g.Expect = d.counts("expect")
	g.Idle = d.time("idle")
	g.Finished = d.bool("finished")
	g.Reason = barrier.FinishReason(d.u("reason", math.MaxUint8))
	g.Cycle = d.pausedPorts("cycle")
	return g
}
