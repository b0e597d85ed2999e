package node

import (
	"fmt"
	"testing"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/sim"
)

// BenchmarkResultCodec encodes and decodes a result the size of a k=32
// fat-tree node's of two (21,536 switch ports, 4,240 flows), with the
// kind of values a run gives.
func BenchmarkResultCodec(b *testing.B) {
	r := &PartResult{Part: results.Part{Partition: 0, Digest: "digest"}}
	for i := 0; i < 21536; i++ {
		r.Part.Ports = append(r.Part.Ports, results.PortRow{Node: 8192 + i/32, Row: results.QueueRow{
			Switch: fmt.Sprintf("agg%d", i/32), Port: i % 32, Peer: fmt.Sprintf("core%d", i%512), Tier: 2, RateBps: 100e9,
			Enqueued: uint64(i % 900), Dropped: uint64(i % 3), PeakBytes: int64(i%40) * 1500, Bytes: uint64(i%900) * 1500,
			TxPackets: uint64(i % 900)}})
	}
	for i := 0; i < 4240; i++ {
		r.Part.Flows = append(r.Part.Flows, results.FlowPart{ID: int32(2 * i), Sender: true, Receiver: i%2 == 0,
			Rec: hostsim.FlowRecord{Started: true, StartAt: sim.Time(i) * 1000, Finished: true, Finish: sim.Time(i)*1000 + 40e6,
				AckedAt: sim.Time(i)*1000 + 41e6, PacketsSent: 11, BytesReceived: 16384}})
	}
	data, err := EncodeResult(r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := EncodeResult(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeResult(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
