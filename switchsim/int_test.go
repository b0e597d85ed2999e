package switchsim

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// TestSwitch_HPCC_INTRecordsAtDequeue: HPCC §3.2 (ns-3 SwitchNode::
// SwitchNotifyDequeue): as a data packet leaves the egress queue the
// switch appends the dequeue time, the port's transmitted bytes before
// this packet (ns-3 pushes the record, then counts the packet), the bytes
// still queued and the link rate; the record's 8 bytes count on the wire.
// ACKs get none, nor a packet that holds MaxINTHops.
func TestSwitch_HPCC_INTRecordsAtDequeue(t *testing.T) {
	s, e := oneSwitch(t, topologies.QueueConfig{Buffer: 1 << 20})
	if err := s.Configure(e, &Config{INT: INT{Enabled: true, HopBytes: 8}}); err != nil {
		t.Fatal(err)
	}
	e.Pool.EnableTelemetry()
	data := func(size int32) sim.PktRef {
		p := e.Pool.Alloc()
		pk := e.Pool.Get(p)
		pk.Size, pk.Payload, pk.DstHost, pk.Flags = size, size-64, 1, sim.FlagData
		s.OnArrive(e, p, -1)
		return p
	}
	p1, p2, p3 := data(1000), data(1000), data(1000)
	ack := e.Pool.Alloc()
	e.Pool.Get(ack).Size, e.Pool.Get(ack).DstHost, e.Pool.Get(ack).Flags = 64, 1, sim.FlagAck
	s.OnArrive(e, ack, -1)
	full := e.Pool.Alloc()
	*e.Pool.Get(full) = sim.Packet{Size: 1000, Payload: 936, DstHost: 1, Flags: sim.FlagData}
	e.Pool.Telemetry(full).NHops = sim.MaxINTHops
	s.OnArrive(e, full, -1)
	port := 0
	for i := range s.Ports {
		if s.Ports[i].Enqueued > 0 {
			port = i
		}
	}
	for {
		ev, ok := e.Next(sim.Never)
		if !ok {
			break
		}
		if ev.Kind == sim.EvTxDone {
			s.OnTxDone(e, port)
		}
	}
	// 10 Gb/s: 1008 bytes take 806.4 ns. Before packet 2 the port sent
	// packet 1 (1008 bytes with its record), before packet 3 both. Behind
	// packet 2 wait packet 3, the ACK and the full packet (1000 + 64 +
	// 1000); behind packet 3 the last two.
	want := []struct {
		p sim.PktRef
		h sim.INTHop
	}{
		{p1, sim.INTHop{TS: 0, TxBytes: 0, QLen: 0, Rate: 10 * sim.GbitPerSecond}},
		{p2, sim.INTHop{TS: 806400, TxBytes: 1008, QLen: 2064, Rate: 10 * sim.GbitPerSecond}},
		{p3, sim.INTHop{TS: 1612800, TxBytes: 2016, QLen: 1064, Rate: 10 * sim.GbitPerSecond}},
	}
	for i, w := range want {
		tel := e.Pool.Telemetry(w.p)
		if tel.NHops != 1 || tel.Hops[0] != w.h || e.Pool.Get(w.p).Size != 1008 {
			t.Errorf("packet %d: %d records, first %+v, size %d; want 1 record %+v and size 1008",
				i+1, tel.NHops, tel.Hops[0], e.Pool.Get(w.p).Size, w.h)
		}
	}
	if n := e.Pool.Telemetry(ack).NHops; n != 0 || e.Pool.Get(ack).Size != 64 {
		t.Errorf("ACK: %d records, size %d; want none and 64", n, e.Pool.Get(ack).Size)
	}
	if n := e.Pool.Telemetry(full).NHops; n != sim.MaxINTHops || e.Pool.Get(full).Size != 1000 {
		t.Errorf("full packet: %d records, size %d; want %d and 1000", n, e.Pool.Get(full).Size, sim.MaxINTHops)
	}
}
