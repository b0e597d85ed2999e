package results

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
)

// encodeAs encodes v as node.EncodeResult does (structs as arrays, compact
// integers), or as msgpack's default (maps) with maps.
func encodeAs(t *testing.T, v any, maps bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	if !maps {
		e.UseArrayEncodedStructs(true)
		e.UseCompactInts(true)
	}
	if err := e.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// randomRows are rows with values at and around the integer forms' bounds
// and strings of every string form.
func randomRows(rng *rand.Rand, n int) ([]PortRow, []FlowPart) {
	ints := []int64{0, 1, -1, 31, 127, 128, -32, -33, 255, 256, 65535, 65536, -1 << 15, 1<<31 - 1, -1 << 31, 1 << 40, math.MaxInt64, math.MinInt64}
	i64 := func() int64 {
		if rng.IntN(2) == 0 {
			return ints[rng.IntN(len(ints))]
		}
		return rng.Int64() >> rng.IntN(64)
	}
	u64 := func() uint64 {
		if rng.IntN(2) == 0 {
			return uint64(ints[rng.IntN(len(ints))])
		}
		return rng.Uint64() >> rng.IntN(64)
	}
	str := func() string { return strings.Repeat("s", []int{0, 5, 31, 32, 255, 256, 70000}[rng.IntN(7)]) }
	ports := make([]PortRow, n)
	flows := make([]FlowPart, n)
	for k := range ports {
		ports[k] = PortRow{Node: int(i64()), Row: QueueRow{Switch: str(), Port: int(i64()), Peer: str(), Tier: int(i64()),
			RateBps: sim.Bandwidth(i64()), Enqueued: u64(), Dropped: u64(), Marked: u64(), PeakBytes: i64(), Bytes: u64(),
			TxPackets: u64(), LinkLost: u64()}}
		flows[k] = FlowPart{ID: int32(i64()), Sender: rng.IntN(2) == 0, Receiver: rng.IntN(2) == 0,
			Rec: hostsim.FlowRecord{Started: rng.IntN(2) == 0, StartAt: sim.Time(i64()), Finished: rng.IntN(2) == 0,
				Finish: sim.Time(i64()), AckedAt: sim.Time(i64()), PacketsSent: u64(), Retransmits: u64(), Timeouts: u64(),
				ECNMarkedAcks: u64(), BytesReceived: u64()}}
	}
	return ports, flows
}

// TestCodec_SameBytesAsReflection: PortRow's and FlowPart's own encoders
// write exactly what msgpack's reflection writes for the same types
// without them (so a field added to QueueRow, hostsim.FlowRecord or the
// rows themselves without its line in codec.go fails here), their
// decoders read it back, and they read the map form of older results.
func TestCodec_SameBytesAsReflection(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 21))
	for round := 0; round < 20; round++ {
		ports, flows := randomRows(rng, 50)
		plainPorts := make([]portRowPlain, len(ports))
		plainFlows := make([]flowPartPlain, len(flows))
		for k := range ports {
			plainPorts[k], plainFlows[k] = portRowPlain(ports[k]), flowPartPlain(flows[k])
		}
		for _, c := range []struct {
			name         string
			own, plain   any
			into, intoMs any
		}{
			{"ports", ports, plainPorts, &[]PortRow{}, &[]PortRow{}},
			{"flows", flows, plainFlows, &[]FlowPart{}, &[]FlowPart{}},
		} {
			got, want := encodeAs(t, c.own, false), encodeAs(t, c.plain, false)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: own encoder %d bytes, reflection %d: not the same bytes", c.name, len(got), len(want))
			}
			if err := msgpack.Unmarshal(got, c.into); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if !reflect.DeepEqual(reflect.ValueOf(c.into).Elem().Interface(), c.own) {
				t.Fatalf("%s: decoded rows differ from the encoded ones", c.name)
			}
			if err := msgpack.Unmarshal(encodeAs(t, c.plain, true), c.intoMs); err != nil {
				t.Fatalf("%s, map form: %v", c.name, err)
			}
			if !reflect.DeepEqual(reflect.ValueOf(c.intoMs).Elem().Interface(), c.own) {
				t.Fatalf("%s: rows decoded from the map form differ", c.name)
			}
		}
	}
	// A row of another shape (one field more) is refused, not misread.
	type widerRow struct {
		Node  int
		Row   QueueRow
		Extra int
	}
	var pr PortRow
	if err := msgpack.Unmarshal(encodeAs(t, widerRow{Node: 1}, false), &pr); err == nil || !strings.Contains(err.Error(), "another build") {
		t.Errorf("a PortRow of three fields: err %v, want it refused", err)
	}
	// Truncated input is an error, never a panic.
	data := encodeAs(t, []FlowPart{{ID: 3, Rec: hostsim.FlowRecord{Started: true, PacketsSent: 1 << 40}}}, false)
	for n := 0; n < len(data); n++ {
		var fs []FlowPart
		if err := msgpack.Unmarshal(data[:n], &fs); err == nil {
			t.Errorf("%d of %d bytes decoded without an error", n, len(data))
		}
	}
}
