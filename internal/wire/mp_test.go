package wire

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
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

// TestPacketFast_AgreesWithTheGeneralPath decodes batches whose packets'
// values sit at and around every field's bounds and in every integer
// form, with packetFast and without it: the same packets, the same
// error (or none), whatever the fast path took or left.
func TestPacketFast_AgreesWithTheGeneralPath(t *testing.T) {
	edges := []int64{0, 1, 4, 5, 127, 128, 255, 256, 65535, 65536, math.MaxInt32, math.MaxInt32 + 1,
		math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64, -1, -32, -33, math.MinInt32, math.MinInt64}
	rng := rand.New(rand.NewPCG(1, 2))
	// raw encodes a batch of packets given as 29 raw values each, in any
	// integer form the general path reads (signed forms for non-negative
	// values too), and telemetry for some.
	raw := func(pkts [][packetFields - 1]int64, signed []bool, tel []bool) []byte {
		dst := appendHeader(nil, KindBatch)
		dst = appendInt(dst, 1)
		dst = appendInt(dst, 0)
		dst = appendUint(dst, 9)
		dst = appendUint(dst, 0)
		dst = appendArrayLen(dst, len(pkts))
		for k, vs := range pkts {
			dst = appendArrayLen(dst, packetFields)
			for _, v := range vs {
				if signed[k] && v >= 0 && v <= math.MaxInt16 {
					dst = binary.BigEndian.AppendUint16(append(dst, mpInt16), uint16(v))
					continue
				}
				dst = appendInt(dst, v)
			}
			if tel[k] {
				dst = appendArrayLen(dst, telFields(0))
				dst = appendUint(dst, 0)
				dst = appendInt(dst, 7)
				dst = appendInt(dst, 8)
			} else {
				dst = appendArrayLen(dst, 0)
			}
		}
		return appendUint(dst, 3)
	}
	decode := func(data []byte, fast bool) (*Batch, error) {
		defer func(f bool) { fastPackets = f }(fastPackets)
		fastPackets = fast
		var m Message
		into := &Batch{}
		err := DecodeInto(data, &m, into)
		return into, err
	}
	tookFast := 0 // batches whose first packet the fast path takes
	for trial := 0; trial < 3000; trial++ {
		// Enough packets that the first ones have maxPacketBytes after
		// them (the fast path's condition) and the last ones do not.
		n := 1 + rng.IntN(16)
		pkts := make([][packetFields - 1]int64, n)
		signed, tel := make([]bool, n), make([]bool, n)
		for k := range pkts {
			for f := range pkts[k] {
				// Mostly values every field takes, an edge now and then.
				pkts[k][f] = int64(rng.IntN(100))
				if rng.IntN(12) == 0 {
					pkts[k][f] = edges[rng.IntN(len(edges))]
				}
			}
			pkts[k][10] = int64(rng.IntN(sim.MaxSackBlocks + 1)) // nsack
			if rng.IntN(40) == 0 {
				pkts[k][10] = sim.MaxSackBlocks + 1
			}
			signed[k] = rng.IntN(30) == 0
			tel[k] = rng.IntN(30) == 0
		}
		data := raw(pkts, signed, tel)
		// Truncated copies too: the fast path must not read past the end.
		for _, d := range [][]byte{data, data[:len(data)-1-rng.IntN(len(data)/2)]} {
			fb, ferr := decode(d, true)
			gb, gerr := decode(d, false)
			if (ferr == nil) != (gerr == nil) || ferr != nil && ferr.Error() != gerr.Error() {
				t.Fatalf("trial %d: fast path error %v, general path error %v", trial, ferr, gerr)
			}
			if ferr == nil && !reflect.DeepEqual(fb, gb) {
				t.Fatalf("trial %d: fast path gives %+v, general path %+v", trial, fb.Packets, gb.Packets)
			}
			if fastTaken(d) {
				tookFast++
			}
		}
	}
	// And what our encoder writes, with values of a real run.
	in := wideBatch(300)
	fb, ferr := decode(AppendBatch(nil, in), true)
	if ferr != nil || !reflect.DeepEqual(fb.Packets, in.Packets) {
		t.Fatalf("round trip of wide packets: %v", ferr)
	}
	// The fast path itself takes every packet it has room for (a fast
	// path that declined them would pass the comparisons above).
	d := atPackets(AppendBatch(nil, in))
	for k := 0; d.left() >= maxPacketBytes; k++ {
		var rp sim.RemotePacket
		if !d.packetFast(&rp) || !reflect.DeepEqual(rp, in.Packets[k]) {
			t.Fatalf("packet %d of a wide batch: the fast path gives %+v, want %+v", k, rp, in.Packets[k])
		}
	}
	if tookFast < 500 {
		t.Fatalf("the fast path took the first packet of %d batches: the trials test too little", tookFast)
	}
}

// atPackets is a decoder of batch message data at its first packet, or
// nil when the header does not decode or there is none.
func atPackets(data []byte) *decoder {
	d := &decoder{reader{b: data}}
	d.arrayLen("message", 1)
	d.u("kind", 255)
	if d.batchHead(&Batch{}) == 0 || d.err != nil {
		return nil
	}
	return d
}

// fastTaken says packetFast decodes the first packet of batch message data.
func fastTaken(data []byte) bool {
	var rp sim.RemotePacket
	d := atPackets(data)
	return d != nil && d.packetFast(&rp)
}

// wideBatch is a batch of n packets with the values of a fabric's run:
// link ids and hosts past 127, times in picoseconds, byte offsets, 64-bit
// packet ids: most fields are wider than a fixint.
func wideBatch(n int) *Batch {
	b := &Batch{From: 1, To: 0, Window: 123}
	for k := 0; k < n; k++ {
		b.Packets = append(b.Packets, sim.RemotePacket{Link: sim.LinkID(3000 + k%584), At: sim.Time(150e6 + k*1000), Seq: uint64(400000 + k),
			Pkt: sim.Packet{ID: uint64(900)<<32 | uint64(k*7), Flow: int32(k % 1024), SrcHost: int32(k % 1024), DstHost: int32((k * 7) % 1024),
				SrcPort: 1000, DstPort: 80, Size: 4160, Payload: 4096, Seq: uint64(k) * 4096 % 2000000, Ack: uint64(k) * 4096 % 2000000,
				TSval: sim.Time(149e6 + k*900), TSecr: sim.Time(148e6 + k*800), Flags: 3, Hops: 3, Entropy: uint16(k * 31)}})
	}
	return b
}

// BenchmarkBatchDecodeWide decodes a batch of 1,800 packets with a real
// run's values (perm1024 sends about that many a window and node).
func BenchmarkBatchDecodeWide(b *testing.B) {
	in := wideBatch(1800)
	buf := AppendBatch(nil, in)
	var m Message
	into := &Batch{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := DecodeInto(buf, &m, into); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(in.Packets)), "ns/packet")
	b.ReportMetric(float64(len(buf))/float64(len(in.Packets)), "wire-B/packet")
}
