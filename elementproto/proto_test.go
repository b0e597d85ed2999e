package elementproto

import (
	"reflect"
	"strings"
	"testing"
)

func TestMessages_RoundTrip(t *testing.T) {
	w := Window{Seq: 3, Start: 10, End: 20, Arrivals: []Arrival{{Handle: 7, At: 12, Port: 2,
		Pkt: Header{ID: 9, Flow: 1, SrcHost: 4, DstHost: 5, SrcPort: 6, DstPort: 7, Proto: 6, Hops: 2, Flags: FlagECT | 1, Entropy: 11, Size: 4096, Payload: 4032, Seq: 8192}}}}
	r := Reply{Seq: 3, Departures: []Departure{{Handle: 7, Port: 1, Start: 12, Flags: FlagECT | FlagCE | 1}}, Drops: []uint64{8}, Next: -1,
		Counters: []Counters{{Enqueued: 1, Dropped: 1, Marked: 1, Bytes: 4096, PeakBytes: 4096, TxPackets: 1}}}
	s := Setup{Version: Version, Element: 16, Name: "tor0", Seed: 1, Ports: []Port{{Peer: 0, RateBps: 100e9, Buffer: 1 << 20,
		ECN: ECN{Mode: 1, K: 20000, Dequeue: true}}}, Routes: [][]int32{{0}, {1, 2}}}
	for _, v := range []any{&w, &r, &s} {
		b, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if err := Unmarshal(b, got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v, got) {
			t.Errorf("%T: sent %+v, got %+v", v, v, got)
		}
	}
	if err := Unmarshal(make([]byte, MaxMessage+1), &w); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a message over MaxMessage: want an error, got %v", err)
	}
}

// TestTxTime_RoundsUp: 1500 bytes at 100 Gb/s is 120 ns exactly; 1 byte
// at 3 b/s is 8/3 s, rounded up to the picosecond.
func TestTxTime_RoundsUp(t *testing.T) {
	if got := TxTime(1500, 100e9); got != 120_000 {
		t.Errorf("1500 B at 100 Gb/s: want 120000 ps, got %d", got)
	}
	if got := TxTime(1, 3); got != 2_666_666_666_667 {
		t.Errorf("1 B at 3 b/s: want 2666666666667 ps, got %d", got)
	}
}
