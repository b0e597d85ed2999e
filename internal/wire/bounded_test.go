package wire

import (
	"bytes"
	"errors"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// issue10Crasher is the control message the fuzzer found (issue 10): its
// body's str32 header claims 3.7 GB.
var issue10Crasher = []byte{0x93, 0x05, 0xa5, 0xee, 0xff, 0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 0xff, 0x2f, 0x30}

// control wraps body as a control message of type typ without checking it.
func control(typ string, body []byte) []byte {
	b := appendHeader(nil, KindControl)
	b = appendStr(b, typ)
	return appendBin(b, body)
}

// hostile are messages whose length fields claim far more than they hold.
func hostile() map[string][]byte {
	huge32 := []byte{0xff, 0xff, 0xff, 0xf0}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	// A Setup body (a msgpack map of its fields) whose one field lies.
	setupField := func(name string, value []byte) []byte {
		return cat([]byte{0x81, 0xa0 | byte(len(name))}, []byte(name), value)
	}
	nils := make([]byte, 4096)
	for i := range nils {
		nils[i] = 0xc0
	}
	return map[string][]byte{
		"issue 10 crasher":          issue10Crasher,
		"control body bin32":        cat([]byte{0x93, 0x05, 0xa3}, []byte("ack"), []byte{0xc6}, huge32, []byte("x")),
		"control type str32":        cat([]byte{0x93, 0x05, 0xdb}, huge32, []byte("ack")),
		"batch of 2^32 packets":     cat([]byte{0x96, 0x01, 0x00, 0x01, 0x00, 0x00, 0xdd}, huge32),
		"report of 2^32 counts":     cat([]byte{0x98, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0xdd}, huge32),
		"message array32":           cat([]byte{0xdd}, huge32, []byte{0x05}),
		"setup Part array32":        control(TypeSetup, setupField("Part", cat([]byte{0xdd}, huge32))),
		"setup Files map32":         control(TypeSetup, setupField("Files", cat([]byte{0xdf}, huge32))),
		"setup Scenario bin32":      control(TypeSetup, setupField("Scenario", cat([]byte{0xc6}, huge32))),
		"setup File str32":          control(TypeSetup, setupField("File", cat([]byte{0xdb}, huge32))),
		"setup Part of 4096 nils":   control(TypeSetup, setupField("Part", cat([]byte{0xdc, 0x10, 0x00}, nils))),
		"chunk Data bin32":          control(TypeResultChunk, setupField("Data", cat([]byte{0xc6}, huge32))),
		"deep nesting":              control(TypeSetup, cat(make([]byte, 0), bytesOf(0x91, 200), []byte{0xc0})),
		"setup Files of 2048 pairs": control(TypeSetup, setupField("Files", cat([]byte{0xde, 0x08, 0x00}, nils))),
		// Every occurrence of a repeated struct key decodes a new map.
		"setup Files repeated": control(TypeSetup, cat([]byte{0xde, 0x01, 0x00}, bytes.Repeat([]byte("\xa5Files\x81\xc0\xc0"), 256))),
	}
}

func bytesOf(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// decodeAll decodes a message as its receivers do: Decode, then the
// control body into the struct its type names.
func decodeAll(data []byte) error {
	m, err := Decode(data)
	if err != nil || m.Kind != KindControl {
		return err
	}
	switch m.Control.Type {
	case TypeResultChunk:
		var ch ResultChunk
		return m.Control.UnmarshalBody(&ch)
	default:
		var su Setup
		return m.Control.UnmarshalBody(&su)
	}
}

// allocated returns the bytes f allocates (runtime.MemStats.TotalAlloc,
// exact: ReadMemStats flushes every cache).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// allocatedCheap is allocated for the fuzzer: runtime/metrics does not
// stop the world, and counts small objects only when their span is
// refilled (so it may miss up to a few KiB), but every large one at once:
// what a decoder bomb allocates.
func allocatedCheap(f func()) uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	f()
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

// Allocation bound: decoding a message of n bytes (Decode, then
// UnmarshalBody) allocates at most allocPerByte*n + allocConst bytes.
const (
	allocPerByte = 64
	allocConst   = 64 << 10
)

func TestDecode_AllocationBound(t *testing.T) {
	for name, data := range hostile() {
		var err error
		got := allocated(func() { err = decodeAll(data) })
		t.Logf("%s: %d bytes in, %d bytes allocated (err %v)", name, len(data), got, err)
		if bound := uint64(allocPerByte*len(data) + allocConst); got > bound {
			t.Errorf("%s (%d bytes): decoding allocated %d bytes, want <= %d (%d*len + %d); err %v",
				name, len(data), got, bound, allocPerByte, allocConst, err)
		}
		if !strings.Contains(name, "nils") && !strings.Contains(name, "Files of") && !strings.Contains(name, "repeated") && !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestBounded_AcceptsWhatMsgpackEncodes(t *testing.T) {
	su := Setup{File: "s.yaml", Scenario: []byte("seed: 1"), Files: []File{{"a.cdf", []byte{1, 2}}},
		Seed: 1 << 60, Digest: "d", P: 2, Part: []int{0, 1, -1}, Lookahead: 1e6, StopAt: -1, Term: 3,
		Sig: []byte{9}}
	data, err := msgpack.Marshal(&su)
	if err != nil {
		t.Fatal(err)
	}
	if err := Bounded(data); err != nil {
		t.Fatalf("Bounded(an encoded Setup) = %v, want nil", err)
	}
	for _, v := range []any{nil, 1.5, float32(2), int64(-1 << 40), "x", []any{map[string]any{"k": []byte{}}}} {
		b, _ := msgpack.Marshal(v)
		if err := Bounded(b); err != nil {
			t.Errorf("Bounded(%v) = %v, want nil", v, err)
		}
	}
	if err := Bounded(append(data, 0)); err == nil {
		t.Errorf("Bounded accepted a trailing byte")
	}
}

// FuzzControlBody checks that no control body makes the decoders panic or
// allocate beyond the bound.
func FuzzControlBody(f *testing.F) {
	e := NewEncoder()
	for _, v := range []any{Setup{File: "f", Files: []File{{"a", []byte{1}}}, Part: []int{0, 1}},
		ResultChunk{Partition: 1, Index: 0, Total: 2, Data: []byte("abc")}, Abort{Reason: "x"}} {
		data, _ := e.Control(TypeSetup, v)
		f.Add(data)
	}
	for _, data := range hostile() {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var err error
		bound := uint64(allocPerByte*len(data) + allocConst)
		// The cheap count may include other goroutines' spans: confirm
		// with the exact one before failing.
		got := allocatedCheap(func() { err = decodeAll(data) })
		if got > bound {
			got = allocated(func() { err = decodeAll(data) })
		}
		if got > bound {
			t.Fatalf("%d bytes: decoding allocated %d, want <= %d (err %v)", len(data), got, bound, err)
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
	})
}

func TestSubjects_SenderIsTheLastToken(t *testing.T) {
	s, _ := NewSubjects("r1")
	for subject, want := range map[string]int{s.Report(3): 3, s.Batch(0, 7): 7, s.Result(12): 12, s.NodeStatus(0): 0} {
		if got, ok := s.Sender(subject); !ok || got != want {
			t.Errorf("Sender(%q) = %d, %v; want %d, true", subject, got, ok, want)
		}
	}
	other, _ := NewSubjects("r2")
	for _, subject := range []string{s.Resync(), s.Prefix() + "report.03", s.Prefix() + "report.-1", s.Prefix() + "report.x",
		other.Report(1), s.Prefix() + "report.99999999999999999999"} {
		if n, ok := s.Sender(subject); ok {
			t.Errorf("Sender(%q) = %d, true; want false", subject, n)
		}
	}
}
