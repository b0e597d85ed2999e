package node

import (
	"bytes"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/results"
)

// resultAllocPerByte bounds what DecodeResult allocates per byte of its
// input: a msgpack nil (1 byte) may stand for a zero element of the
// largest slice element type in a PartResult (results.PortRow, ~240
// bytes). A result comes only from its node (signed, on its own subject),
// in at most MaxChunks chunks.
const (
	resultAllocPerByte = 512
	resultAllocConst   = 64 << 10
)

// allocatedCheap counts large allocations at once and small ones per span
// (runtime/metrics, no stop-the-world): enough to catch a bomb, fast
// enough to fuzz.
func allocatedCheap(f func()) uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	f()
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

// allocatedBy is exact (runtime.MemStats.TotalAlloc).
func allocatedBy(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// hostileResults are encoded results whose slices claim many elements.
func hostileResults() map[string][]byte {
	field := func(name string, value []byte) []byte {
		return append(append([]byte{0x81, 0xa0 | byte(len(name))}, name...), value...)
	}
	part := func(name string, value []byte) []byte {
		return field("Part", field(name, value))
	}
	nils := bytes.Repeat([]byte{0xc0}, 4096)
	m := map[string][]byte{}
	for _, f := range []string{"Flows", "Ports", "Cwnd", "Depths", "Pcaps"} {
		m[f+" array32"] = part(f, []byte{0xdd, 0xff, 0xff, 0xff, 0xf0})
		m[f+" of 4096 nils"] = part(f, append([]byte{0xdc, 0x10, 0x00}, nils...))
	}
	return m
}

func TestDecodeResult_AllocationBound(t *testing.T) {
	for name, data := range hostileResults() {
		got := allocatedBy(func() { _, _ = DecodeResult(data) })
		if bound := uint64(resultAllocPerByte*len(data) + resultAllocConst); got > bound {
			t.Errorf("%s (%d bytes): DecodeResult allocated %d bytes, want <= %d", name, len(data), got, bound)
		}
	}
}

// FuzzDecodeResult checks that no input makes DecodeResult panic or
// allocate beyond the bound.
func FuzzDecodeResult(f *testing.F) {
	r := &PartResult{Part: results.Part{Partition: 1, Digest: "d", Flows: make([]results.FlowPart, 2)},
		Final: barrier.Grant{Finished: true, Expect: []uint32{1}}}
	data, _ := EncodeResult(r)
	f.Add(data)
	for _, d := range hostileResults() {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		bound := uint64(resultAllocPerByte*len(data) + resultAllocConst)
		// The cheap count may include other goroutines' spans: confirm
		// with the exact one before failing.
		if got := allocatedCheap(func() { _, _ = DecodeResult(data) }); got <= bound {
			return
		}
		if got := allocatedBy(func() { _, _ = DecodeResult(data) }); got > bound {
			t.Fatalf("%d bytes: DecodeResult allocated %d, want <= %d", len(data), got, bound)
		}
	})
}
