package wire

import (
	"errors"
	"reflect"
	"testing"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/sim"
)

// fillDistinct sets every leaf field of v (a pointer to a struct) to a
// distinct non-zero value, so that a codec that drops or swaps a field
// fails a round trip. It walks the type by reflection, so a field added to
// sim.Packet later is covered without touching this test.
func fillDistinct(v reflect.Value, next *uint64) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fillDistinct(v.Field(i), next)
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fillDistinct(v.Index(i), next)
		}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		*next++
		v.SetInt(int64(*next))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		*next++
		v.SetUint(*next)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillDistinct(v.Elem(), next)
	default:
		panic("fillDistinct: unhandled kind " + v.Kind().String())
	}
}

func TestBatch_RoundTripCoversEveryPacketField(t *testing.T) {
	var rp sim.RemotePacket
	n := uint64(0)
	fillDistinct(reflect.ValueOf(&rp).Elem(), &n)
	rp.Pkt.NSack = sim.MaxSackBlocks // the decoder bounds it
	rp.Pkt.TSecr = -5                // times may be anything in a packet
	rp.Tel.NHops = sim.MaxINTHops    // the decoder bounds it
	big := rp
	big.At = sim.Never - 1
	big.Pkt.ID = 1<<64 - 1
	big.Pkt.Flow = -1 << 31
	big.Tel = nil // a packet without telemetry between two with
	third := rp
	third.Tel = &sim.Telemetry{NHops: 2, NICWait: 7, Hops: [sim.MaxINTHops]sim.INTHop{{TS: 1, TxBytes: 2, QLen: 3, Rate: 4}, {TS: 5}}}
	in := Batch{From: 3, To: 7, Window: 1 << 40, Seq: 2, Packets: []sim.RemotePacket{rp, big, third}, Epoch: 5}
	data := NewEncoder().Batch(&in)
	m, err := Decode(data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if m.Kind != KindBatch || !reflect.DeepEqual(*m.Batch, in) {
		t.Fatalf("round trip:\n got  %+v\n want %+v", m.Batch, in)
	}
}

func TestReportGrantResyncControl_RoundTrip(t *testing.T) {
	e := NewEncoder()
	r := barrier.Report{Node: 2, Window: 99, Term: 3, NextEvent: 5 * sim.Microsecond, MinSent: sim.Never,
		Sent: []uint32{0, 4, 1 << 31}, Done: true}
	m, err := Decode(e.Report(&r))
	if err != nil || !reflect.DeepEqual(*m.Report, r) {
		t.Errorf("report: got %+v, %v; want %+v", m.Report, err, r)
	}
	g := barrier.Grant{Window: 100, Term: 3, Start: 5 * sim.Microsecond, End: 6 * sim.Microsecond,
		Expect: []uint32{1, 0, 2}, Idle: 10, Finished: true, Reason: barrier.FinishStopTime}
	m, err = Decode(e.Grant(&g))
	if err != nil || !reflect.DeepEqual(*m.Grant, g) {
		t.Errorf("grant: got %+v, %v; want %+v", m.Grant, err, g)
	}
	m, err = Decode(AppendReport(nil, &r, 8, 4))
	if err != nil || !reflect.DeepEqual(*m.Report, r) || m.Busy != 8 || m.Epoch != 4 {
		t.Errorf("report in epoch 4: got %+v busy %d epoch %d, %v", m.Report, m.Busy, m.Epoch, err)
	}
	m, err = Decode(e.Resync(Resync{Term: 12, Epoch: 3}))
	if err != nil || m.Resync.Term != 12 || m.Resync.Epoch != 3 || m.Epoch != 3 {
		t.Errorf("resync: got %+v, %v; want term 12, epoch 3", m.Resync, err)
	}
	type body struct {
		A string
		B []int
	}
	data, err := e.Control("hello", body{"x", []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	m, err = Decode(data)
	if err != nil || m.Control.Type != "hello" {
		t.Fatalf("control: got %+v, %v", m.Control, err)
	}
	var got body
	if err := m.Control.UnmarshalBody(&got); err != nil || got.A != "x" || len(got.B) != 2 {
		t.Errorf("control body: got %+v, %v", got, err)
	}
}

func TestDecode_RejectsMalformed(t *testing.T) {
	e := NewEncoder()
	ok := e.Report(&barrier.Report{Node: 1, Window: 1, Sent: []uint32{0, 0}})
	cases := map[string][]byte{
		"empty":          {},
		"not an array":   {0x01},
		"unknown kind":   {0x92, 0x09, 0x00},
		"wrong arity":    {0x92, byte(KindReport), 0x00},
		"truncated":      ok[:len(ok)-1],
		"trailing bytes": append(append([]byte{}, ok...), 0x00),
		"negative node":  e.Report(&barrier.Report{Node: -1, Sent: []uint32{0}}),
		"negative time":  e.Report(&barrier.Report{Node: 1, NextEvent: -1, Sent: []uint32{0}}),
		"no counts":      e.Report(&barrier.Report{Node: 1}),
		"huge array":     {0x92, byte(KindResync), 0xdd, 0xff, 0xff, 0xff, 0xff},
	}
	for name, data := range cases {
		if _, err := Decode(data); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

// FuzzDecode checks that Decode never panics and that whatever it accepts
// re-encodes to a message that decodes to the same value.
func FuzzDecode(f *testing.F) {
	e := NewEncoder()
	var rp sim.RemotePacket
	n := uint64(0)
	fillDistinct(reflect.ValueOf(&rp).Elem(), &n)
	rp.Pkt.NSack = 1
	rp.Tel.NHops = 2
	f.Add(e.Batch(&Batch{From: 1, To: 0, Window: 4, Packets: []sim.RemotePacket{rp}}))
	f.Add(e.Batch(&Batch{From: 1, To: 0, Window: 4}))
	f.Add(e.Batch(wideBatch(8))) // long enough for the packets' fast path
	f.Add(e.Report(&barrier.Report{Node: 1, Window: 2, Term: 1, NextEvent: 10, MinSent: sim.Never, Sent: []uint32{1, 0}}))
	f.Add(e.Grant(&barrier.Grant{Window: 3, Term: 1, Start: 1, End: 2, Expect: []uint32{0, 1}}))
	f.Add(e.Resync(Resync{Term: 9}))
	c, _ := e.Control("setup", map[string]int{"a": 1})
	f.Add(c)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		var again []byte
		switch m.Kind {
		case KindBatch:
			again = e.Batch(m.Batch)
		case KindReport:
			again = AppendReport(nil, m.Report, m.Busy, m.Epoch)
		case KindGrant:
			again = e.Grant(m.Grant)
		case KindResync:
			again = e.Resync(*m.Resync)
		case KindControl:
			return // the body is opaque here
		default:
			t.Fatalf("decoded kind %v", m.Kind)
		}
		m2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded %v does not decode: %v", m.Kind, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-encoding changed the message:\n %+v\n %+v", m, m2)
		}
	})
}

// TestDecodeInto_ReusesTheReport: decoding reports one after another into
// one Message reuses the report and its Sent buffer (no allocation once it
// is large enough), and each decode gives exactly the report sent: nothing
// left over from the one before (Done, the pause, a longer Sent).
func TestDecodeInto_ReusesTheReport(t *testing.T) {
	a := barrier.Report{Node: 3, Window: 9, Term: 2, NextEvent: 5000, MinSent: 7000, Sent: []uint32{1, 2, 3, 4, 5, 6},
		Done: true, PausedAt: 4000, Paused: []sim.PausedPort{{Elem: 1, Peer: 2, Port: 3, Class: 4, Since: 10, Until: 20}}}
	b := barrier.Report{Node: 1, Window: 10, NextEvent: 6000, MinSent: sim.Never, Sent: []uint32{0, 7, 0, 0}}
	var m Message
	if err := DecodeInto(AppendReport(nil, &a, 11, 1), &m, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*m.Report, a) || m.Busy != 11 || m.Epoch != 1 {
		t.Fatalf("first report: %+v (busy %d, epoch %d), want %+v", *m.Report, m.Busy, m.Epoch, a)
	}
	first, sent := m.Report, &m.Report.Sent[0]
	data := AppendReport(nil, &b, 0, 2)
	if err := DecodeInto(data, &m, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*m.Report, b) || m.Busy != 0 || m.Epoch != 2 {
		t.Fatalf("second report: %+v (busy %d, epoch %d), want %+v", *m.Report, m.Busy, m.Epoch, b)
	}
	if m.Report != first || &m.Report.Sent[0] != sent {
		t.Errorf("the second report did not reuse the first's Report and Sent")
	}
	if n := testing.AllocsPerRun(100, func() { _ = DecodeInto(data, &m, nil) }); n != 0 {
		t.Errorf("decoding a report into a reused Message: %v allocations, want 0", n)
	}
	// Decode (a fresh Message each time) shares nothing.
	m1, _ := Decode(data)
	m2, _ := Decode(data)
	if m1.Report == m2.Report || &m1.Report.Sent[0] == &m2.Report.Sent[0] {
		t.Errorf("Decode returned shared reports")
	}
}
