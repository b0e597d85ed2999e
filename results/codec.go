package results

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/lockstep-sim/lockstep/sim"
)

// A node's result (node.EncodeResult) is mostly PortRows and FlowParts,
// one per local switch port and per local flow: tens of thousands on a
// large fabric. msgpack's reflection spends some 300 ns encoding and 550
// decoding each (a type-cache lookup and a reflected field per value), so
// these two write and read themselves, field by field, in exactly the
// form EncodeResult gives any struct: an array of its fields in order,
// integers in their smallest forms (TestCodec_SameBytesAsReflection
// compares the bytes, so a field added to one of these types without its
// line here fails it). A map (a result encoded before structs went as
// arrays) is read the reflective way.

// portRowPlain and flowPartPlain are the same types without the methods,
// for msgpack's reflection.
type (
	portRowPlain  PortRow
	flowPartPlain FlowPart
)

// queueRowFields and flowRecordFields are the number of fields of
// QueueRow and hostsim.FlowRecord.
const (
	queueRowFields   = 12
	flowRecordFields = 10
)

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r *PortRow) EncodeMsgpack(e *msgpack.Encoder) error {
	q := &r.Row
	return firstErr(e.EncodeArrayLen(2), e.EncodeInt(int64(r.Node)), e.EncodeArrayLen(queueRowFields),
		e.EncodeString(q.Switch), e.EncodeInt(int64(q.Port)), e.EncodeString(q.Peer), e.EncodeInt(int64(q.Tier)),
		e.EncodeInt(int64(q.RateBps)), e.EncodeUint(q.Enqueued), e.EncodeUint(q.Dropped), e.EncodeUint(q.Marked),
		e.EncodeInt(q.PeakBytes), e.EncodeUint(q.Bytes), e.EncodeUint(q.TxPackets), e.EncodeUint(q.LinkLost))
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (r *PortRow) DecodeMsgpack(d *msgpack.Decoder) error {
	if plain, err := isPlain(d); plain || err != nil {
		if err != nil {
			return err
		}
		return d.Decode((*portRowPlain)(r))
	}
	fs := fields{d: d}
	fs.array(2, "PortRow")
	r.Node = int(fs.int())
	fs.array(queueRowFields, "QueueRow")
	q := &r.Row
	q.Switch = fs.str()
	q.Port = int(fs.int())
	q.Peer = fs.str()
	q.Tier = int(fs.int())
	q.RateBps = sim.Bandwidth(fs.int())
	q.Enqueued, q.Dropped, q.Marked = fs.uint(), fs.uint(), fs.uint()
	q.PeakBytes = fs.int()
	q.Bytes, q.TxPackets, q.LinkLost = fs.uint(), fs.uint(), fs.uint()
	return fs.err
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (f *FlowPart) EncodeMsgpack(e *msgpack.Encoder) error {
	r := &f.Rec
	return firstErr(e.EncodeArrayLen(4), e.EncodeInt(int64(f.ID)), e.EncodeBool(f.Sender), e.EncodeBool(f.Receiver),
		e.EncodeArrayLen(flowRecordFields), e.EncodeBool(r.Started), e.EncodeInt(int64(r.StartAt)), e.EncodeBool(r.Finished),
		e.EncodeInt(int64(r.Finish)), e.EncodeInt(int64(r.AckedAt)), e.EncodeUint(r.PacketsSent), e.EncodeUint(r.Retransmits),
		e.EncodeUint(r.Timeouts), e.EncodeUint(r.ECNMarkedAcks), e.EncodeUint(r.BytesReceived))
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (f *FlowPart) DecodeMsgpack(d *msgpack.Decoder) error {
	if plain, err := isPlain(d); plain || err != nil {
		if err != nil {
			return err
		}
		return d.Decode((*flowPartPlain)(f))
	}
	fs := fields{d: d}
	fs.array(4, "FlowPart")
	id := fs.int()
	if fs.err == nil && (id < -1<<31 || id >= 1<<31) {
		return fmt.Errorf("msgpack: flow id %d overflows int32", id)
	}
	f.ID = int32(id)
	f.Sender, f.Receiver = fs.bool(), fs.bool()
	fs.array(flowRecordFields, "FlowRecord")
	r := &f.Rec
	r.Started = fs.bool()
	r.StartAt = sim.Time(fs.int())
	r.Finished = fs.bool()
	r.Finish, r.AckedAt = sim.Time(fs.int()), sim.Time(fs.int())
	r.PacketsSent, r.Retransmits, r.Timeouts, r.ECNMarkedAcks, r.BytesReceived = fs.uint(), fs.uint(), fs.uint(), fs.uint(), fs.uint()
	return fs.err
}

// fields reads a row's values in order (the operands of an assignment are
// read left to right); after the first error it reads nothing more and
// keeps that error.
type fields struct {
	d   *msgpack.Decoder
	err error
}

func (fs *fields) array(n int, what string) {
	if fs.err == nil {
		fs.err = arrayOf(fs.d, n, what)
	}
}

func (fs *fields) int() (v int64) {
	if fs.err == nil {
		v, fs.err = fs.d.DecodeInt64()
	}
	return v
}

func (fs *fields) uint() (v uint64) {
	if fs.err == nil {
		v, fs.err = fs.d.DecodeUint64()
	}
	return v
}

func (fs *fields) str() (v string) {
	if fs.err == nil {
		v, fs.err = fs.d.DecodeString()
	}
	return v
}

func (fs *fields) bool() (v bool) {
	if fs.err == nil {
		v, fs.err = fs.d.DecodeBool()
	}
	return v
}

// isPlain says the next value is not an array (a map, or nil): one for
// msgpack's reflection.
func isPlain(d *msgpack.Decoder) (bool, error) {
	c, err := d.PeekCode()
	if err != nil {
		return false, err
	}
	return !msgpcode.IsFixedArray(c) && c != msgpcode.Array16 && c != msgpcode.Array32, nil
}

// arrayOf reads an array header of n elements (the fields of what).
func arrayOf(d *msgpack.Decoder, n int, what string) error {
	got, err := d.DecodeArrayLen()
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("msgpack: %s with %d fields, want %d (another build's?)", what, got, n)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
