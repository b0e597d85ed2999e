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
	if err := arrayOf(d, 2, "PortRow"); err != nil {
		return err
	}
	q := &r.Row
	var node, port, tier, rate int64
	var err error
	if node, err = d.DecodeInt64(); err != nil {
		return err
	}
	if err := arrayOf(d, queueRowFields, "QueueRow"); err != nil {
		return err
	}
	if q.Switch, err = d.DecodeString(); err != nil {
		return err
	}
	if port, err = d.DecodeInt64(); err != nil {
		return err
	}
	if q.Peer, err = d.DecodeString(); err != nil {
		return err
	}
	if tier, err = d.DecodeInt64(); err != nil {
		return err
	}
	if rate, err = d.DecodeInt64(); err != nil {
		return err
	}
	r.Node, q.Port, q.Tier, q.RateBps = int(node), int(port), int(tier), sim.Bandwidth(rate)
	for _, u := range []*uint64{&q.Enqueued, &q.Dropped, &q.Marked} {
		if *u, err = d.DecodeUint64(); err != nil {
			return err
		}
	}
	if q.PeakBytes, err = d.DecodeInt64(); err != nil {
		return err
	}
	for _, u := range []*uint64{&q.Bytes, &q.TxPackets, &q.LinkLost} {
		if *u, err = d.DecodeUint64(); err != nil {
			return err
		}
	}
	return nil
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
	if err := arrayOf(d, 4, "FlowPart"); err != nil {
		return err
	}
	r := &f.Rec
	id, err := d.DecodeInt64()
	if err != nil {
		return err
	}
	if id < -1<<31 || id >= 1<<31 {
		return fmt.Errorf("msgpack: flow id %d overflows int32", id)
	}
	f.ID = int32(id)
	if f.Sender, err = d.DecodeBool(); err != nil {
		return err
	}
	if f.Receiver, err = d.DecodeBool(); err != nil {
		return err
	}
	if err := arrayOf(d, flowRecordFields, "FlowRecord"); err != nil {
		return err
	}
	var start, finish, acked int64
	if r.Started, err = d.DecodeBool(); err != nil {
		return err
	}
	if start, err = d.DecodeInt64(); err != nil {
		return err
	}
	if r.Finished, err = d.DecodeBool(); err != nil {
		return err
	}
	if finish, err = d.DecodeInt64(); err != nil {
		return err
	}
	if acked, err = d.DecodeInt64(); err != nil {
		return err
	}
	r.StartAt, r.Finish, r.AckedAt = sim.Time(start), sim.Time(finish), sim.Time(acked)
	for _, u := range []*uint64{&r.PacketsSent, &r.Retransmits, &r.Timeouts, &r.ECNMarkedAcks, &r.BytesReceived} {
		if *u, err = d.DecodeUint64(); err != nil {
			return err
		}
	}
	return nil
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
