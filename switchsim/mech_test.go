package switchsim

import (
	"math"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// multiSwitch is switch element 0 with n ports, port i on link i towards
// element 1 (a sink). Tests enqueue on a port directly (no routes).
func multiSwitch(t *testing.T, n int, q topologies.QueueConfig, cfg Config) (*Switch, *sim.Engine) {
	t.Helper()
	specs := make([]sim.LinkSpec, n)
	ports := make([]Port, n)
	for i := range specs {
		specs[i] = sim.LinkSpec{From: 0, FromPort: i, To: 1, Rate: 10 * sim.GbitPerSecond, Delay: sim.Microsecond}
		ports[i] = Port{Link: sim.LinkID(i), Peer: 1, Queue: q}
	}
	e, err := sim.NewEngine(1, 2, specs, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := New(0, 0, ports, nil, ECMP)
	if err := s.Configure(e, &cfg); err != nil {
		t.Fatal(err)
	}
	return s, e
}

// put hands port `port` a packet of the given size and class that entered
// by port in (-1: unknown).
func put(s *Switch, e *sim.Engine, port int, size int32, class int, in int) sim.PktRef {
	p := e.Pool.Alloc()
	pk := e.Pool.Get(p)
	pk.Size, pk.Payload, pk.Flags = size, size-64, sim.FlagData
	pk.SetClass(class)
	s.enqueue(e, &s.Ports[port], port, p, pk, in)
	return p
}

// delivered is what reached the sink, in order.
type delivered struct {
	port  int
	class int
	pkt   sim.Packet
}

// drain runs the engine until horizon, recording arrivals at the sink.
func drain(s *Switch, e *sim.Engine, horizon sim.Time) []delivered {
	var out []delivered
	for {
		ev, ok := e.Next(horizon)
		if !ok {
			return out
		}
		switch ev.Kind {
		case sim.EvTxDone:
			s.OnTxDone(e, int(ev.Arg))
		case sim.EvArrive:
			pk := e.Pool.Get(ev.Pkt)
			out = append(out, delivered{port: int(ev.Arg), class: pk.Class(), pkt: *pk})
			e.Pool.Free(ev.Pkt)
		case sim.EvTimer:
			s.OnTimer(e, ev.Arg)
		}
	}
}

func TestSwitch_StrictPriorityServesTheHighClassFirst(t *testing.T) {
	s, e := multiSwitch(t, 1, topologies.QueueConfig{Buffer: 1 << 20}, Config{Classes: []Class{{}, {}}})
	for i := 0; i < 3; i++ {
		put(s, e, 0, 1000, 0, -1)
	}
	for i := 0; i < 3; i++ {
		put(s, e, 0, 1000, 1, -1)
	}
	var got []int
	for _, d := range drain(s, e, sim.Never) {
		got = append(got, d.class)
	}
	// The first class-0 packet was already in service.
	want := []int{0, 1, 1, 1, 0, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("departure classes %v, want %v", got, want)
		}
	}
}

func TestSwitch_DWRRSharesByWeight(t *testing.T) {
	s, e := multiSwitch(t, 1, topologies.QueueConfig{Buffer: 1 << 30}, Config{Classes: []Class{{Weight: 1}, {Weight: 3}, {}}, ControlClass: 2})
	for i := 0; i < 400; i++ {
		put(s, e, 0, 1500, 0, -1)
		put(s, e, 0, 1500, 1, -1)
	}
	var n [2]int
	for i, d := range drain(s, e, sim.Never) {
		if i >= 400 {
			break
		}
		n[d.class]++
	}
	t.Logf("first 400 departures: class 0 (weight 1) %d, class 1 (weight 3) %d", n[0], n[1])
	if n[1] < 295 || n[1] > 305 {
		t.Errorf("expected class 1 to take 3/4 of the first 400 departures (300), got %d", n[1])
	}
}

func TestSwitch_ControlPacketsInTheControlClass(t *testing.T) {
	s, e := multiSwitch(t, 1, topologies.QueueConfig{Buffer: 1 << 20}, Config{Classes: []Class{{Weight: 1}, {Weight: 1}, {}}, ControlClass: 2})
	for i := 0; i < 4; i++ {
		put(s, e, 0, 1500, 0, -1)
	}
	p := e.Pool.Alloc()
	ack := e.Pool.Get(p)
	ack.Size, ack.Flags = 64, sim.FlagAck
	s.enqueue(e, &s.Ports[0], 0, p, ack, -1)
	out := drain(s, e, sim.Never)
	if out[1].pkt.Flags&sim.FlagAck == 0 {
		t.Fatalf("expected the ACK to leave right after the packet in service, got order %+v", out)
	}
	if c := s.Ports[0].Class(2); c.Enqueued != 1 {
		t.Errorf("expected the ACK counted in control class 2, got %+v", c)
	}
}

// fill pushes 1000-byte packets into the given ports round-robin until
// each drops, and returns the ports' occupancies.
func fill(s *Switch, e *sim.Engine, ports ...int) []int64 {
	done := make([]bool, len(ports))
	for left := len(ports); left > 0; {
		for i, pt := range ports {
			if done[i] {
				continue
			}
			before := s.Ports[pt].Dropped
			put(s, e, pt, 1000, 0, -1)
			if s.Ports[pt].Dropped > before {
				done[i] = true
				left--
			}
		}
	}
	occ := make([]int64, len(ports))
	for i, pt := range ports {
		occ[i] = s.Ports[pt].Occupancy()
	}
	return occ
}

func TestSharedBuffer_DynamicThresholdShares(t *testing.T) {
	const size = 1 << 20
	for _, alpha := range []float64{1, 2, 0.5} {
		cfg := Config{Classes: []Class{{Alpha: alpha}}, Shared: Shared{Size: size}}
		s, e := multiSwitch(t, 4, topologies.QueueConfig{Buffer: 1}, cfg)
		one := fill(s, e, 0)[0]
		want := alpha / (1 + alpha) * size
		t.Logf("alpha %.1f: one hot port holds %d bytes (alpha/(1+alpha) of %d: %.0f)", alpha, one, size, want)
		if math.Abs(float64(one)-want) > 2000 {
			t.Errorf("alpha %.1f: expected one hot port to hold %.0f bytes, got %d", alpha, want, one)
		}
		s, e = multiSwitch(t, 4, topologies.QueueConfig{Buffer: 1}, cfg)
		two := fill(s, e, 0, 1)
		want2 := alpha / (1 + 2*alpha) * size
		t.Logf("alpha %.1f: two hot ports hold %d and %d bytes (alpha/(1+2 alpha) each: %.0f)", alpha, two[0], two[1], want2)
		for _, o := range two {
			if math.Abs(float64(o)-want2) > 2000 {
				t.Errorf("alpha %.1f: expected each of two hot ports to hold %.0f bytes, got %v", alpha, want2, two)
			}
		}
	}
}

func TestSharedBuffer_AbsorbsABurstPerPortBuffersDrop(t *testing.T) {
	// 8 ports, 1 MiB in all: a 512 KiB burst into one port.
	const total, burst = 1 << 20, 512 << 10
	shared, e1 := multiSwitch(t, 8, topologies.QueueConfig{Buffer: 1}, Config{Shared: Shared{Size: total - 8*8192, Reserved: 8192}, Classes: []Class{{Alpha: 4}}})
	perPort, e2 := multiSwitch(t, 8, topologies.QueueConfig{Buffer: total / 8}, Config{})
	for i := 0; i < burst/1000; i++ {
		put(shared, e1, 3, 1000, 0, -1)
		put(perPort, e2, 3, 1000, 0, -1)
	}
	t.Logf("512 KiB burst: shared pool dropped %d, per-port buffers (128 KiB each) dropped %d", shared.Ports[3].Dropped, perPort.Ports[3].Dropped)
	if shared.Ports[3].Dropped != 0 || perPort.Ports[3].Dropped == 0 {
		t.Errorf("expected the shared pool to absorb the burst and per-port buffers to drop: %d, %d", shared.Ports[3].Dropped, perPort.Ports[3].Dropped)
	}
	drain(shared, e1, sim.Never)
	if shared.SharedUsed() != 0 {
		t.Errorf("expected the shared pool empty after draining, %d bytes in use", shared.SharedUsed())
	}
}

func TestSwitch_ECNOnDequeueMarksByTheBacklogBehind(t *testing.T) {
	q := topologies.QueueConfig{Buffer: 1 << 20, ECN: topologies.ECNConfig{Mode: topologies.ECNStep, K: 5 * 1024, Dequeue: true}}
	s, e := multiSwitch(t, 1, q, Config{})
	for i := 0; i < 10; i++ {
		p := put(s, e, 0, 1024, 0, -1)
		e.Pool.Get(p).Flags |= sim.FlagECT
	}
	var marks []bool
	for _, d := range drain(s, e, sim.Never) {
		marks = append(marks, d.pkt.Flags&sim.FlagCE != 0)
	}
	// Packet 0 left at once (no backlog, and it was not yet ECT when it
	// started); packet k (k >= 1) leaves with 9-k packets behind it:
	// marked while (9-k)*1024 > 5120, so for k = 1..3.
	for k, m := range marks {
		if m != (k >= 1 && k <= 3) {
			t.Fatalf("dequeue marks %v: want packets 1-3 marked (backlog behind > 5 KiB)", marks)
		}
	}
}

func TestTrim_CutsToTheHeaderInTheControlClass(t *testing.T) {
	s, e := multiSwitch(t, 1, topologies.QueueConfig{Buffer: 10 * 1024},
		Config{Classes: []Class{{}, {}}, ControlClass: 1, Trim: Trim{Enabled: true, Header: 64}})
	for i := 0; i < 12; i++ {
		put(s, e, 0, 1024, 0, -1)
	}
	out := drain(s, e, sim.Never)
	c := s.Ports[0].Totals()
	if c.Trimmed != 2 || c.TrimBytes != 128 || s.Ports[0].Dropped != 0 || len(out) != 12 {
		t.Fatalf("trimmed %d (%d bytes), dropped %d, delivered %d: want 2 trimmed of 64 bytes, 0 dropped, 12 delivered",
			c.Trimmed, c.TrimBytes, s.Ports[0].Dropped, len(out))
	}
	// The headers overtake the queued data: they leave 2nd and 3rd.
	for i, d := range out {
		trimmed := d.pkt.Flags&sim.FlagTrimmed != 0
		if trimmed != (i == 1 || i == 2) || (trimmed && (d.pkt.Size != 64 || d.pkt.Payload != 960)) {
			t.Fatalf("departure %d: trimmed %v size %d payload %d", i, trimmed, d.pkt.Size, d.pkt.Payload)
		}
	}
}

func TestPFC_PauseFramesOnTheWire(t *testing.T) {
	cfg := Config{Classes: []Class{{Lossless: true}}, PFC: PFC{XOFF: 4000, XON: 1000, Headroom: 100000}}
	s, e := multiSwitch(t, 2, topologies.QueueConfig{Buffer: 1000}, cfg)
	// Six 1000-byte packets enter by port 1 for port 0: over XOFF at the
	// 5th; lossless, so none is dropped though port 0's buffer is 1000.
	for i := 0; i < 6; i++ {
		put(s, e, 0, 1000, 0, 1)
	}
	out := drain(s, e, sim.Never)
	var pauses []delivered
	for _, d := range out {
		if d.pkt.Flags&sim.FlagPause != 0 {
			pauses = append(pauses, d)
		}
	}
	if s.Ports[0].Dropped != 0 || len(pauses) != 2 {
		t.Fatalf("dropped %d, pauses %d: want 0 and 2 (XOFF then XON)", s.Ports[0].Dropped, len(pauses))
	}
	if p := pauses[0]; p.port != 1 || p.pkt.PauseQuanta(0) != 0xffff || p.pkt.Bitmap != 1 || p.pkt.Size != sim.PauseFrameSize {
		t.Errorf("XOFF: port %d quanta %d vector %b size %d; want port 1, 65535, 1, 64", p.port, p.pkt.PauseQuanta(0), p.pkt.Bitmap, p.pkt.Size)
	}
	if p := pauses[1]; p.pkt.PauseQuanta(0) != 0 {
		t.Errorf("XON: quanta %d, want 0", p.pkt.PauseQuanta(0))
	}
	if c := s.Ports[1].Class(0); c.PausesSent != 2 {
		t.Errorf("port 1 class 0 sent %d pauses, want 2", c.PausesSent)
	}
}

func TestPFC_ReceivedPauseStopsTheClass(t *testing.T) {
	cfg := Config{Classes: []Class{{Lossless: true}, {}}, ControlClass: 1, PFC: PFC{XOFF: 1 << 20, XON: 1 << 19, Headroom: 1}}
	s, e := multiSwitch(t, 1, topologies.QueueConfig{Buffer: 1 << 20}, cfg)
	// A PAUSE of 1000 quanta for class 0 arrives by port 0.
	p := e.Pool.Alloc()
	pk := e.Pool.Get(p)
	pk.Flags, pk.Size = sim.FlagPause, sim.PauseFrameSize
	pk.SetPauseQuanta(0, 1000)
	s.OnArrive(e, p, 0)
	quantum := (10 * sim.GbitPerSecond).TxTime(64)
	put(s, e, 0, 1000, 0, -1)
	put(s, e, 0, 1000, 1, -1)
	out := drain(s, e, sim.Never)
	// Class 1 goes at once; class 0 waits for 1000 quanta (51.2us at 10G).
	tx := (10 * sim.GbitPerSecond).TxTime(1000)
	if out[0].class != 1 || out[1].class != 0 {
		t.Fatalf("classes %d, %d: want 1 then 0", out[0].class, out[1].class)
	}
	if pt := s.Ports[0].PausedTime(0, e.Now()); pt != 1000*quantum {
		t.Errorf("paused time %v, want %v", pt, 1000*quantum)
	}
	_ = tx
	if c := s.Ports[0].Class(0); c.PausesRecv != 1 {
		t.Errorf("pauses received %d, want 1", c.PausesRecv)
	}
}

// Per-class queue samples (queue_depth_class.csv) split the port's samples
// (queue_depth.csv): at every sample time the classes' bytes add up to the
// port's, each class is sampled while it holds bytes, and a shared buffer's
// SharedPeak is the class's peak beyond its reserve.
func TestSwitch_ClassSamplesAddUpToThePortAndSharedPeak(t *testing.T) {
	const reserved = 4000
	cfg := Config{Classes: []Class{{Weight: 1, Alpha: 1}, {Weight: 1, Alpha: 1}}, Shared: Shared{Size: 1 << 20, Reserved: reserved}}
	s, e := multiSwitch(t, 2, topologies.QueueConfig{Buffer: 1}, cfg)
	s.SampleEvery = sim.Microsecond
	// Port 0: 10 packets of 1000 B in class 0, 4 of 500 B in class 1;
	// port 1: 3 of 1000 B in class 1. At 10 Gb/s a 1000 B packet takes
	// 800 ns, so both classes of port 0 still hold bytes at 1 us.
	for range 10 {
		put(s, e, 0, 1000, 0, -1)
	}
	for range 4 {
		put(s, e, 0, 500, 1, -1)
	}
	for range 3 {
		put(s, e, 1, 1000, 1, -1)
	}
	if k := s.Ports[0].cc[0]; k.PeakBytes != 10000 || k.SharedPeak != 10000-reserved {
		t.Fatalf("port 0 class 0: want peak 10000 B and shared peak 10000 - %d, got %d and %d", reserved, k.PeakBytes, k.SharedPeak)
	}
	if k := s.Ports[0].cc[1]; k.PeakBytes != 2000 || k.SharedPeak != 0 {
		t.Fatalf("port 0 class 1: want peak 2000 B, within its reserve (shared peak <= 0), got %d and %d", k.PeakBytes, k.SharedPeak)
	}
	drain(s, e, sim.Never)
	type key struct {
		at   sim.Time
		port int32
	}
	port := map[key]int64{}
	for _, q := range s.Samples {
		port[key{q.Time, q.Port}] = q.Bytes
	}
	classes := map[key]int64{}
	seen := map[int8]bool{}
	for _, q := range s.ClassSamples {
		classes[key{q.Time, q.Port}] += q.Bytes
		if q.Time == sim.Microsecond && q.Port == 0 && q.Bytes > 0 {
			seen[q.Class] = true
		}
	}
	if len(port) == 0 || !seen[0] || !seen[1] {
		t.Fatalf("want port samples and both classes of port 0 sampled at 1us, got %d port samples, classes %v", len(port), seen)
	}
	for k, d := range port {
		if classes[k] != d {
			t.Errorf("port %d at %v: the classes hold %d bytes, the port %d", k.port, k.at, classes[k], d)
		}
	}
	for k, c := range classes {
		if _, ok := port[k]; !ok && c != 0 {
			t.Errorf("port %d at %v: class samples (%d bytes) without a port sample", k.port, k.at, c)
		}
	}
}
