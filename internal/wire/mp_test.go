package wire

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/sim"
)

// edgeInts are the boundaries of every msgpack integer form.
var edgeInts = []int64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
	-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64}

// TestAppend_AgreesWithMsgpack checks that the hand-written appenders give
// the bytes msgpack.Encoder gives with compact integers, so the wire format
// is unchanged, and that the reader reads what msgpack.Encoder writes in
// every integer form, compact or not.
func TestAppend_AgreesWithMsgpack(t *testing.T) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	for _, v := range edgeInts {
		buf.Reset()
		_ = enc.EncodeInt(v)
		if got := appendInt(nil, v); !bytes.Equal(got, buf.Bytes()) {
			t.Errorf("appendInt(%d) = % x, msgpack % x", v, got, buf.Bytes())
		}
		if v >= 0 {
			buf.Reset()
			_ = enc.EncodeUint(uint64(v))
			if got := appendUint(nil, uint64(v)); !bytes.Equal(got, buf.Bytes()) {
				t.Errorf("appendUint(%d) = % x, msgpack % x", v, got, buf.Bytes())
			}
		}
	}
	for _, n := range []int{0, 15, 16, 65535, 65536} {
		buf.Reset()
		_ = enc.EncodeArrayLen(n)
		if got := appendArrayLen(nil, n); !bytes.Equal(got, buf.Bytes()) {
			t.Errorf("appendArrayLen(%d) = % x, msgpack % x", n, got, buf.Bytes())
		}
		s := string(bytes.Repeat([]byte{'x'}, n))
		buf.Reset()
		_ = enc.EncodeString(s)
		if got := appendStr(nil, s); !bytes.Equal(got, buf.Bytes()) {
			t.Errorf("appendStr(len %d) differs from msgpack", n)
		}
		buf.Reset()
		_ = enc.EncodeBytes([]byte(s))
		if got := appendBin(nil, []byte(s)); !bytes.Equal(got, buf.Bytes()) {
			t.Errorf("appendBin(len %d) differs from msgpack", n)
		}
	}
	for _, v := range []bool{false, true} {
		buf.Reset()
		_ = enc.EncodeBool(v)
		if got := appendBool(nil, v); !bytes.Equal(got, buf.Bytes()) {
			t.Errorf("appendBool(%v) = % x, msgpack % x", v, got, buf.Bytes())
		}
	}

	// Every fixed-width form msgpack can write, read back.
	var wide bytes.Buffer
	we := msgpack.NewEncoder(&wide)
	for _, v := range edgeInts {
		forms := []func() error{func() error { return we.EncodeInt(v) }, func() error { return we.EncodeInt64(v) }}
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			forms = append(forms, func() error { return we.EncodeInt32(int32(v)) })
		}
		if v >= math.MinInt16 && v <= math.MaxInt16 {
			forms = append(forms, func() error { return we.EncodeInt16(int16(v)) })
		}
		if v >= math.MinInt8 && v <= math.MaxInt8 {
			forms = append(forms, func() error { return we.EncodeInt8(int8(v)) })
		}
		if v >= 0 {
			forms = append(forms, func() error { return we.EncodeUint64(uint64(v)) })
			if v <= math.MaxUint32 {
				forms = append(forms, func() error { return we.EncodeUint32(uint32(v)) })
			}
			if v <= math.MaxUint16 {
				forms = append(forms, func() error { return we.EncodeUint16(uint16(v)) })
			}
			if v <= math.MaxUint8 {
				forms = append(forms, func() error { return we.EncodeUint8(uint8(v)) })
			}
		}
		for k, f := range forms {
			wide.Reset()
			if err := f(); err != nil {
				t.Fatal(err)
			}
			r := reader{b: wide.Bytes()}
			if got := r.i("v", math.MinInt64, math.MaxInt64); r.err != nil || got != v || r.left() != 0 {
				t.Errorf("form %d of %d (% x): read %d, %v", k, v, wide.Bytes(), got, r.err)
			}
		}
	}
	r := reader{b: appendUint(nil, math.MaxUint64)}
	if got := r.u("v", math.MaxUint64); r.err != nil || got != math.MaxUint64 {
		t.Errorf("MaxUint64: read %d, %v", got, r.err)
	}
	r = reader{b: appendUint(nil, math.MaxUint64)}
	if r.i("v", math.MinInt64, math.MaxInt64); r.err == nil {
		t.Errorf("MaxUint64 read as an int64 without error")
	}
}

// TestBatch_MsgpackDecodesOurBytes checks the other direction: a generic
// msgpack decoder reads a batch as the arrays of integers it is documented
// to be (so a switch node in another language can read it).
func TestBatch_MsgpackDecodesOurBytes(t *testing.T) {
	b := Batch{From: 1, To: 2, Window: 300, Seq: 4, Packets: []sim.RemotePacket{{Link: 9, At: 1 << 40, Pkt: sim.Packet{ID: 5, Flow: -3, Size: 4096}}}}
	var v []any
	if err := msgpack.Unmarshal(AppendBatch(nil, &b), &v); err != nil {
		t.Fatal(err)
	}
	if len(v) != 7 || reflect.ValueOf(v[3]).Convert(reflect.TypeOf(uint64(0))).Uint() != 300 {
		t.Fatalf("decoded %v", v)
	}
	pkts := v[5].([]any)
	if len(pkts) != 1 || len(pkts[0].([]any)) != packetFields {
		t.Fatalf("packets %v", pkts)
	}
}

// batchOf returns a batch of n distinct full-size data packets.
func batchOf(n int) *Batch {
	b := &Batch{From: 1, To: 0, Window: 12345}
	for k := 0; k < n; k++ {
		b.Packets = append(b.Packets, sim.RemotePacket{Link: sim.LinkID(k % 7), At: sim.Time(k) * 3 * sim.Microsecond, Seq: uint64(k),
			Pkt: sim.Packet{ID: uint64(1e6 + k), Flow: int32(k), SrcHost: 3, DstHost: 900, SrcPort: 1000, DstPort: 80,
				Size: 4160, Payload: 4096, Seq: uint64(k) * 4096, TSval: sim.Time(k) * 1000}})
	}
	return b
}

// TestBatch_ZeroAllocs checks that encoding into a reused buffer and
// decoding into a reused batch allocate nothing per packet.
func TestBatch_ZeroAllocs(t *testing.T) {
	in := batchOf(64)
	buf := AppendBatch(nil, in)
	var m Message
	into := &Batch{}
	if err := DecodeInto(buf, &m, into); err != nil || !reflect.DeepEqual(*m.Batch, *in) {
		t.Fatalf("round trip: %v", err)
	}
	allocs := testing.AllocsPerRun(50, func() {
		buf = AppendBatch(buf[:0], in)
		if err := DecodeInto(buf, &m, into); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("encode+decode of a 64-packet batch: %v allocations, want 0", allocs)
	}
	rep := &barrier.Report{Node: 1, Window: 9, Sent: []uint32{1, 2, 3}}
	rb := AppendReport(nil, rep, 7, 3)
	if allocs := testing.AllocsPerRun(50, func() { rb = AppendReport(rb[:0], rep, 7, 3) }); allocs != 0 {
		t.Errorf("AppendReport: %v allocations, want 0", allocs)
	}
	if m, err := Decode(rb); err != nil || m.Busy != 7 || !reflect.DeepEqual(*m.Report, *rep) {
		t.Errorf("report round trip: %+v busy %d, %v", m.Report, m.Busy, err)
	}
}

// BenchmarkBatchEncodeDecode measures a cross-partition packet's codec cost:
// ns and bytes per packet for a 64-packet batch.
func BenchmarkBatchEncodeDecode(b *testing.B) {
	in := batchOf(64)
	buf := AppendBatch(nil, in)
	var m Message
	into := &Batch{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = AppendBatch(buf[:0], in)
		if err := DecodeInto(buf, &m, into); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(in.Packets)), "ns/packet")
	b.ReportMetric(float64(len(buf))/float64(len(in.Packets)), "wire-B/packet")
}

// reader.u and reader.i read a positive fixint themselves and leave every
// other form to uSlow and iSlow: the two paths must agree on the value,
// the bytes consumed and the error for every encoding and bound.
func TestReader_FixintFastPathAgrees(t *testing.T) {
	vals := []int64{0, 1, 5, 31, 100, 127, 128, 255, 256, 65535, 1 << 20, math.MaxInt64, -1, -32, -33, -200, math.MinInt64}
	bounds := [][2]int64{{0, math.MaxInt64}, {0, 100}, {5, 127}, {-40, 40}, {math.MinInt64, math.MaxInt64}, {0, 0}}
	for _, v := range vals {
		enc := appendInt(nil, v)
		for _, b := range bounds {
			for _, pre := range []bool{false, true} {
				r1, r2 := reader{b: enc}, reader{b: enc}
				if pre {
					r1.fail("earlier")
					r2.fail("earlier")
				}
				g1, g2 := r1.i("x", b[0], b[1]), r2.iSlow("x", b[0], b[1])
				if g1 != g2 || r1.off != r2.off || (r1.err == nil) != (r2.err == nil) {
					t.Errorf("i(%d in %v, failed before %v) = %d, off %d, err %v; slow path %d, off %d, err %v", v, b, pre, g1, r1.off, r1.err, g2, r2.off, r2.err)
				}
				if b[0] < 0 {
					continue
				}
				r1, r2 = reader{b: enc}, reader{b: enc}
				if pre {
					r1.fail("earlier")
					r2.fail("earlier")
				}
				u1, u2 := r1.u("x", uint64(b[1])), r2.uSlow("x", uint64(b[1]))
				if u1 != u2 || r1.off != r2.off || (r1.err == nil) != (r2.err == nil) {
					t.Errorf("u(%d max %d, failed before %v) = %d, off %d, err %v; slow path %d, off %d, err %v", v, b[1], pre, u1, r1.off, r1.err, u2, r2.off, r2.err)
				}
			}
		}
	}
	var r reader // empty: truncated on both paths
	if r.u("x", 10); r.err == nil {
		t.Error("u on no bytes: no error")
	}
}
