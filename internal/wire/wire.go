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
	"errors"
	"fmt"
	"io"
	"math"

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
}

// Resync is a new leader's request that every node resend its last
// reports (barrier.Follower.Resend).
type Resync struct {
	Term uint64
}

// fieldCount is the number of fields after the kind, by kind.
var fieldCount = [...]int{KindBatch: 5, KindReport: 9, KindGrant: 10, KindResync: 1, KindControl: 2}

// packetFields is the number of msgpack values per RemotePacket: the last
// is its telemetry, an empty array when it has none.
const packetFields = 3 + 18 + 2*sim.MaxSackBlocks + 1

// telFields is the number of values of a telemetry array with n INT hops.
func telFields(n int) int { return 3 + 4*n }

// Encoder encodes messages into a reusable buffer. It is not safe for
// concurrent use.
type Encoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

// NewEncoder returns an encoder.
func NewEncoder() *Encoder {
	e := &Encoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	e.enc.UseCompactInts(true)
	return e
}

func (e *Encoder) start(k Kind, n int) {
	e.buf.Reset()
	// Writes to a bytes.Buffer cannot fail.
	_ = e.enc.EncodeArrayLen(n + 1)
	_ = e.enc.EncodeUint(uint64(k))
}

func (e *Encoder) u(v uint64) { _ = e.enc.EncodeUint(v) }
func (e *Encoder) i(v int64)  { _ = e.enc.EncodeInt(v) }

// bytes returns a copy of the encoded message.
func (e *Encoder) bytes() []byte { return bytes.Clone(e.buf.Bytes()) }

// Batch encodes b. The result is a fresh slice.
func (e *Encoder) Batch(b *Batch) []byte {
	e.start(KindBatch, 5)
	e.i(int64(b.From))
	e.i(int64(b.To))
	e.u(b.Window)
	e.u(uint64(b.Seq))
	_ = e.enc.EncodeArrayLen(len(b.Packets))
	for k := range b.Packets {
		rp := &b.Packets[k]
		p := &rp.Pkt
		_ = e.enc.EncodeArrayLen(packetFields)
		e.i(int64(rp.Link))
		e.i(int64(rp.At))
		e.u(rp.Seq)
		e.u(p.ID)
		e.i(int64(p.Flow))
		e.i(int64(p.SrcHost))
		e.i(int64(p.DstHost))
		e.u(uint64(p.SrcPort))
		e.u(uint64(p.DstPort))
		e.u(uint64(p.Proto))
		e.u(uint64(p.NSack))
		e.u(uint64(p.Hops))
		e.u(uint64(p.Flags))
		e.u(uint64(p.Entropy))
		e.i(int64(p.Size))
		e.i(int64(p.Payload))
		e.u(p.Seq)
		e.u(p.Ack)
		e.u(p.Bitmap)
		e.i(int64(p.TSval))
		e.i(int64(p.TSecr))
		for _, s := range p.Sack {
			e.u(s.Start)
			e.u(s.End)
		}
		e.telemetry(rp.Tel)
	}
	return e.bytes()
}

// telemetry encodes a packet's telemetry (sim.Telemetry): an empty array
// for none.
func (e *Encoder) telemetry(t *sim.Telemetry) {
	if t == nil {
		_ = e.enc.EncodeArrayLen(0)
		return
	}
	n := int(t.NHops)
	_ = e.enc.EncodeArrayLen(telFields(n))
	e.u(uint64(n))
	e.i(int64(t.NICWait))
	e.i(int64(t.EndpointDelay))
	for _, h := range t.Hops[:n] {
		e.i(int64(h.TS))
		e.u(h.TxBytes)
		e.i(h.QLen)
		e.i(int64(h.Rate))
	}
}

// Report encodes r.
func (e *Encoder) Report(r *barrier.Report) []byte {
	e.start(KindReport, 9)
	e.i(int64(r.Node))
	e.u(r.Window)
	e.u(r.Term)
	e.i(int64(r.NextEvent))
	e.i(int64(r.MinSent))
	_ = e.enc.EncodeArrayLen(len(r.Sent))
	for _, n := range r.Sent {
		e.u(uint64(n))
	}
	_ = e.enc.EncodeBool(r.Done)
	e.i(int64(r.PausedAt))
	e.pausedPorts(r.Paused)
	return e.bytes()
}

// pausedPortFields is the number of msgpack values per sim.PausedPort.
const pausedPortFields = 6

func (e *Encoder) pausedPorts(ps []sim.PausedPort) {
	_ = e.enc.EncodeArrayLen(len(ps))
	for _, p := range ps {
		_ = e.enc.EncodeArrayLen(pausedPortFields)
		e.i(int64(p.Elem))
		e.i(int64(p.Peer))
		e.i(int64(p.Port))
		e.i(int64(p.Class))
		e.i(int64(p.Since))
		e.i(int64(p.Until))
	}
}

// Grant encodes g.
func (e *Encoder) Grant(g *barrier.Grant) []byte {
	e.start(KindGrant, 10)
	e.u(g.Window)
	e.u(g.Term)
	e.i(int64(g.Start))
	e.i(int64(g.End))
	_ = e.enc.EncodeArrayLen(len(g.Expect))
	for _, n := range g.Expect {
		e.u(uint64(n))
	}
	e.i(int64(g.Idle))
	_ = e.enc.EncodeBool(g.Finished)
	e.u(uint64(g.Reason))
	e.pausedPorts(g.Cycle)
	return e.bytes()
}

// Resync encodes r.
func (e *Encoder) Resync(r Resync) []byte {
	e.start(KindResync, 1)
	e.u(r.Term)
	return e.bytes()
}

// Control encodes a control message: its type and a msgpack-encoded body.
func (e *Encoder) Control(typ string, body any) ([]byte, error) {
	data, err := msgpack.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("wire: control %s: %w", typ, err)
	}
	e.start(KindControl, 2)
	_ = e.enc.EncodeString(typ)
	_ = e.enc.EncodeBytes(data)
	return e.bytes(), nil
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
	Kind    Kind
	Batch   *Batch
	Report  *barrier.Report
	Grant   *barrier.Grant
	Resync  *Resync
	Control *Control
}

// decoder reads one message with a sticky error.
type decoder struct {
	r   *bytes.Reader
	d   *msgpack.Decoder
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
}

// arrayLen reads an array header; each element needs at least minBytes bytes.
func (d *decoder) arrayLen(what string, minBytes int) int {
	if d.err != nil {
		return 0
	}
	n, err := d.d.DecodeArrayLen()
	if err != nil {
		d.fail("%s: %v", what, err)
		return 0
	}
	if n < 0 || n*minBytes > d.r.Len() {
		d.fail("%s: length %d with %d bytes left", what, n, d.r.Len())
		return 0
	}
	return n
}

func (d *decoder) u(what string, limit uint64) uint64 {
	if d.err != nil {
		return 0
	}
	c, err := d.d.PeekCode()
	if err == nil && c >= 0xe0 { // negative fixnum
		d.fail("%s: negative", what)
		return 0
	}
	v, err := d.d.DecodeUint64()
	switch {
	case err != nil:
		d.fail("%s: %v", what, err)
	case v > limit:
		d.fail("%s: %d out of range (max %d)", what, v, limit)
	default:
		return v
	}
	return 0
}

func (d *decoder) i(what string, lo, hi int64) int64 {
	if d.err != nil {
		return 0
	}
	v, err := d.d.DecodeInt64()
	switch {
	case err != nil:
		d.fail("%s: %v", what, err)
	case v < lo || v > hi:
		d.fail("%s: %d out of range [%d, %d]", what, v, lo, hi)
	default:
		return v
	}
	return 0
}

func (d *decoder) bool(what string) bool {
	if d.err != nil {
		return false
	}
	v, err := d.d.DecodeBool()
	if err != nil {
		d.fail("%s: %v", what, err)
	}
	return v
}

func (d *decoder) time(what string) sim.Time {
	return sim.Time(d.i(what, 0, math.MaxInt64))
}

// MaxControlType bounds a control message's type string.
const MaxControlType = 64

// blob reads a str or bin value of at most limit bytes. Its length is checked
// against limit and the bytes left before anything is allocated.
func (d *decoder) blob(what string, limit int) []byte {
	if d.err != nil {
		return nil
	}
	n, err := d.d.DecodeBytesLen()
	switch {
	case err != nil:
		d.fail("%s: %v", what, err)
		return nil
	case n < 0:
		d.fail("%s: nil", what)
		return nil
	case n > limit || n > d.r.Len():
		d.fail("%s: length %d with %d bytes left (limit %d)", what, n, d.r.Len(), limit)
		return nil
	}
	b := make([]byte, n)
	// The msgpack decoder reads d.r directly (a bytes.Reader is a
	// ByteScanner: no buffering), so the value's bytes come next.
	if _, err := io.ReadFull(d.r, b); err != nil {
		d.fail("%s: %v", what, err)
		return nil
	}
	return b
}

// Decode decodes one message. It allocates at most a small constant times
// len(data) (the bound TestDecode_AllocationBound checks), and refuses
// messages longer than MaxMessageBytes.
func Decode(data []byte) (Message, error) {
	if len(data) > MaxMessageBytes {
		return Message{}, fmt.Errorf("%w: %d bytes (max %d)", ErrMalformed, len(data), MaxMessageBytes)
	}
	r := bytes.NewReader(data)
	d := &decoder{r: r, d: msgpack.NewDecoder(r)}
	n := d.arrayLen("message", 1)
	if d.err == nil && n < 1 {
		d.fail("empty message")
	}
	k := Kind(d.u("kind", 255))
	var m Message
	m.Kind = k
	if d.err == nil && (int(k) >= len(fieldCount) || fieldCount[k] == 0 || n-1 != fieldCount[k]) {
		d.fail("kind %v with %d fields", k, n-1)
	}
	if d.err != nil {
		return Message{}, d.err
	}
	switch k {
	case KindBatch:
		m.Batch = d.batch()
	case KindReport:
		m.Report = d.report()
	case KindGrant:
		m.Grant = d.grant()
	case KindResync:
		m.Resync = &Resync{Term: d.u("term", math.MaxUint64)}
	case KindControl:
		c := &Control{}
		c.Type = string(d.blob("control type", MaxControlType))
		c.Body = d.blob("control body", MaxMessageBytes)
		m.Control = c
	}
	if d.err == nil && r.Len() != 0 {
		d.fail("%d trailing bytes", r.Len())
	}
	if d.err != nil {
		return Message{}, d.err
	}
	return m, nil
}

func (d *decoder) batch() *Batch {
	b := &Batch{}
	b.From = int32(d.i("from", 0, MaxNodes-1))
	b.To = int32(d.i("to", 0, MaxNodes-1))
	b.Window = d.u("window", math.MaxUint64)
	b.Seq = uint32(d.u("seq", math.MaxUint32))
	n := d.arrayLen("packets", packetFields+1)
	if n > 0 {
		b.Packets = make([]sim.RemotePacket, n)
	}
	var tels []sim.Telemetry // allocated at the first packet with telemetry
	for k := 0; k < n && d.err == nil; k++ {
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
		}
	}
	return b
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

func (d *decoder) counts(what string) []uint32 {
	n := d.arrayLen(what, 1)
	if d.err == nil && (n < 1 || n > MaxNodes) {
		d.fail("%s: %d nodes", what, n)
	}
	if d.err != nil {
		return nil
	}
	c := make([]uint32, n)
	for j := range c {
		c[j] = uint32(d.u(what, math.MaxUint32))
	}
	return c
}

func (d *decoder) report() *barrier.Report {
	r := &barrier.Report{}
	r.Node = int(d.i("node", 0, MaxNodes-1))
	r.Window = d.u("window", math.MaxUint64)
	r.Term = d.u("term", math.MaxUint64)
	r.NextEvent = d.time("next event")
	r.MinSent = d.time("min sent")
	r.Sent = d.counts("sent")
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
