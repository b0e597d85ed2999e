package node

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/sim"
)

// sampleResult is a result with rows of the kinds that make a node's
// result large (ports, flows, queue samples).
func sampleResult() *PartResult {
	r := &PartResult{Part: results.Part{Partition: 1, Digest: "scenario-digest", FlowsDone: true, HostPackets: 7},
		Final: barrier.Grant{Window: 9, Start: 5, End: 5, Finished: true, Expect: []uint32{0, 3}},
		Perf:  NodePerf{WallSeconds: 1.5, Windows: 9}, Core: CoreStats{}}
	for i := 0; i < 200; i++ {
		r.Part.Ports = append(r.Part.Ports, results.PortRow{Node: i / 4, Row: results.QueueRow{Switch: "agg3", Port: i % 4,
			Peer: "core7", Tier: 2, RateBps: 100e9, Enqueued: uint64(1000 + i), Dropped: uint64(i % 3), PeakBytes: int64(9000 * i),
			Bytes: uint64(1500 * i), TxPackets: uint64(i)}})
		r.Part.Flows = append(r.Part.Flows, results.FlowPart{ID: int32(i), Sender: i%2 == 0, Receiver: true,
			Rec: hostsim.FlowRecord{Started: true, StartAt: 1000, Finished: true, Finish: sim.Time(90000 + i), PacketsSent: 700}})
		r.Part.Depths = append(r.Part.Depths, results.DepthPart{Node: i % 7})
	}
	return r
}

// TestEncodeResult_StructsAsArrays: a result's structs go as arrays of
// their fields (no field names on the wire), its integers in their
// smallest forms; it decodes to the value encoded, as the map form
// (which DecodeResult still reads) does, and a result whose structs have
// another number of fields (another build's) is refused.
func TestEncodeResult_StructsAsArrays(t *testing.T) {
	r := sampleResult()
	data, err := EncodeResult(r)
	if err != nil {
		t.Fatal(err)
	}
	if c := data[0]; c&0xf0 != 0x90 && c != 0xdc {
		t.Fatalf("result starts with %#x, want an array header (structs as arrays)", c)
	}
	for _, name := range []string{"PeakBytes", "Retransmits", "WallSeconds", "Expect", "Partition"} {
		if bytes.Contains(data, []byte(name)) {
			t.Fatalf("the encoded result carries the field name %s", name)
		}
	}
	// Integers in their smallest forms: msgpack's default writes every
	// int64 and uint64 field in 9 bytes (results.PortRow and FlowPart
	// write themselves, always compact; the other structs go by
	// reflection).
	var wide bytes.Buffer
	enc := msgpack.NewEncoder(&wide)
	enc.UseArrayEncodedStructs(true)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	if len(data) >= wide.Len() {
		t.Errorf("%d bytes, %d with 9-byte integers: want fewer", len(data), wide.Len())
	}
	got, err := DecodeResult(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("decoded result differs from the encoded one:\n%+v\n%+v", got, r)
	}
	// The map form (of a result before structs went as arrays) still
	// decodes to the same value.
	mapForm, err := msgpack.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if fromMap, err := DecodeResult(mapForm); err != nil || !reflect.DeepEqual(fromMap, r) {
		t.Fatalf("the map form: %v, or another value", err)
	}

	// Another build's PartResult: one field more.
	type otherResult struct {
		Part   results.Part
		Core   CoreStats
		Final  barrier.Grant
		Perf   NodePerf
		Reason string
		Extra  int
	}
	var buf bytes.Buffer
	enc = msgpack.NewEncoder(&buf)
	enc.UseArrayEncodedStructs(true)
	if err := enc.Encode(otherResult{Part: r.Part, Final: r.Final, Extra: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeResult(buf.Bytes()); err == nil || !strings.Contains(err.Error(), "another version of lockstep") {
		t.Fatalf("a result with another number of fields: err %v, want it refused", err)
	}
}
