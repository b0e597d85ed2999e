package runner_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// TestOnePacket_INTBytesCountOnTheWire: HPCC §4.1, the INT header grows
// by 8 bytes per hop and the ACK carries the records back. Host 0 to host
// 127 of a k=8 fat-tree: 5 switches, 6 links of 100 Gb/s and 1 us, 100 ns
// per switch. The data packet leaves with 1000 + 64 + 2 bytes and gains 8
// at each switch: 1066, 1074, ..., 1106 bytes, 6516 bytes in all, 521.28
// ns of serialisation: FCT = 521.28 + 6000 + 500 ns. The ACK carries 64 +
// 2 + 5·8 = 106 bytes over 6 links (8.48 ns each) and 5 switches.
func TestOnePacket_INTBytesCountOnTheWire(t *testing.T) {
	r := runYAML(t, `
topology:
  type: fattree
  fattree:
    k: 8
    switch_latency: 100ns
    host: {rate: 100Gbps, delay: 1us}
    agg:  {rate: 100Gbps, delay: 1us}
    core: {rate: 100Gbps, delay: 1us}
transport: {cc: hpcc, mtu: 1064, header: 64}
workload:
  - type: flows
    flows: [{src: 0, dst: 127, size: 1000}]
`)
	rec := r.Fabric.Transport().Records[0]
	if got, want := rec.Finish, 7021280*sim.Picosecond; got != want {
		t.Errorf("one INT packet across the fat-tree: FCT %d ps, want %d ps", got, want)
	}
	if got, want := rec.AckedAt-rec.Finish, (6*(8480+1000000)+500000)*sim.Picosecond; got != want {
		t.Errorf("its ACK with 5 echoed records took %d ps, want %d ps", got, want)
	}
}

// dumbbellYAML is n long flows from n senders to n receivers over one
// 100 Gb/s bottleneck, every link 1 us, large buffers.
func dumbbellYAML(cc string, n int, size string, stop string) string {
	s := fmt.Sprintf(`
stop_at: %s
topology:
  type: dumbbell
  dumbbell:
    senders: %d
    receivers: %d
    host: {rate: 100Gbps, delay: 1us, buffer: 2MiB}
    bottleneck: {rate: 100Gbps, delay: 1us, buffer: 2MiB}
transport: {cc: %s, recovery: sack, rto: {mode: fixed, value: 1ms}}
output: {queues: {interval: 1us}}
workload:
  - type: flows
    flows:
`, stop, n, n, cc)
	for i := 0; i < n; i++ {
		s += fmt.Sprintf("      - {src: %d, dst: %d, size: %s, start: %dus}\n", i, n+i, size, 10*i)
	}
	return s
}

// bottleneck measures, between from and to, the bytes the receivers got
// per second of capacity, and the mean and peak occupancy of the
// bottleneck port (left's port towards right) from queue_depth samples.
func bottleneck(t *testing.T, cc string, n int, from, to sim.Time) (util, meanQ float64, peakQ int64) {
	t.Helper()
	got := func(stop sim.Time) (int64, []float64) {
		r := runYAML(t, dumbbellYAML(cc, n, "1GB", stop.String()))
		var b int64
		for _, rec := range r.Fabric.Transport().Records {
			b += int64(rec.BytesReceived)
		}
		var qs []float64
		sw := r.Fabric.Switch(2 * n) // left: hosts first, then left, right
		if sw == nil {
			t.Fatalf("node %d is not the left switch", 2*n)
		}
		for _, s := range sw.Samples {
			if s.Time >= from && s.Time < to && sw.Ports[s.Port].Peer == sim.ElemID(2*n+1) {
				qs = append(qs, float64(s.Bytes))
				peakQ = max(peakQ, s.Bytes)
			}
		}
		return b, qs
	}
	b0, _ := got(from)
	b1, qs := got(to)
	if len(qs) == 0 {
		t.Fatalf("no queue samples of the bottleneck between %v and %v", from, to)
	}
	for _, q := range qs {
		meanQ += q
	}
	meanQ /= float64(len(qs))
	capacity := float64(100*sim.GbitPerSecond) / 8 * float64(to-from) / float64(sim.Second)
	return float64(b1-b0) / capacity, meanQ, peakQ
}

// TestHPCC_DumbbellNearZeroQueueAtTargetUtilisation is HPCC's claim (§1,
// §3.3, Fig. 1): flows on a bottleneck converge to the target
// utilisation η = 95% with a queue near zero. Eight flows, measured from
// 1 ms (after the start-up burst of eight line-rate windows) to 3 ms.
func TestHPCC_DumbbellNearZeroQueueAtTargetUtilisation(t *testing.T) {
	util, meanQ, peakQ := bottleneck(t, "hpcc", 8, sim.Millisecond, 3*sim.Millisecond)
	t.Logf("hpcc, 8 flows: utilisation %.4f, bottleneck queue mean %.0f B, peak %d B", util, meanQ, peakQ)
	// Goodput counts payload only (1436 of 1500+2+24 bytes on the
	// bottleneck): η = 0.95 of the wire is 0.894 of payload.
	if util < 0.85 || util > 0.96 {
		t.Errorf("goodput %.4f of the bottleneck, want about η·1436/1526 = 0.894", util)
	}
	// Near zero: a few packets of 1.5 KB on average, never a BDP (~80 KB).
	if meanQ > 6000 || peakQ > 40000 {
		t.Errorf("bottleneck queue mean %.0f B, peak %d B; want a mean of a few packets and no standing BDP", meanQ, peakQ)
	}
}

// TestSwift_DumbbellHoldsDelayNearTarget: Swift's fabric window settles
// where the RTT is its target (§3.1, Fig. 7): on a dumbbell with three
// hops the target is 20 + 3·3.053 us plus the flow-scaling term of the
// flow's window, and the measured RTT oscillates around it while the
// bottleneck stays busy.
func TestSwift_DumbbellHoldsDelayNearTarget(t *testing.T) {
	r := runYAML(t, dumbbellYAML("swift", 4, "1GB", "3ms"))
	tr := r.Fabric.Transport()
	for i := 0; i < 4; i++ {
		sw, ok := tr.Sender(int32(i)).Endpoint().Controller().(*cc.Swift)
		if !ok {
			t.Fatalf("flow %d: controller %T, want *cc.Swift", i, tr.Sender(int32(i)).Endpoint().Controller())
		}
		srtt := tr.Sender(int32(i)).Endpoint().RTO().SRTT()
		target := sw.FabricTarget(sw.FabricCwnd())
		if d := math.Abs(float64(srtt-target)) / float64(target); d > 0.05 {
			t.Errorf("flow %d: smoothed RTT %v, fabric target %v: %.0f%% apart, want within 5%%", i, srtt, target, 100*d)
		}
		t.Logf("flow %d: srtt %v target %v fcwnd %.2f ecwnd %.2f", i, srtt, target, sw.FabricCwnd(), sw.EndpointCwnd())
	}
	util, meanQ, _ := bottleneck(t, "swift", 4, sim.Millisecond, 3*sim.Millisecond)
	t.Logf("swift, 4 flows: utilisation %.4f, queue mean %.0f B", util, meanQ)
	if util < 0.9 {
		t.Errorf("goodput %.4f of the bottleneck, want the link busy (>= 0.9 of payload)", util)
	}
}

// TestHPCC_NICScheduledSharesTheNIC: HPCC with nic_scheduled runs as an
// RDMA queue pair (the authors' ns-3 NIC, RdmaEgressQueue): the host's
// NIC serves its flows round robin. Two long flows from host 0 start at
// line rate (each paced at 100 Gb/s, W_init = B·T) and overfill the NIC;
// a one-packet flow from the same host at 2 us waits behind the FIFO's
// backlog without it (about 2 us: two flows at line rate into one line
// for 2 us), and behind at most one packet of each long flow with it.
func TestHPCC_NICScheduledSharesTheNIC(t *testing.T) {
	yaml := func(nic bool) string {
		return fmt.Sprintf(`
topology:
  type: dumbbell
  dumbbell:
    senders: 1
    receivers: 3
    host: {rate: 100Gbps, delay: 1us}
    bottleneck: {rate: 400Gbps, delay: 1us}
transport: {cc: hpcc, mtu: 1064, header: 64, options: {nic_scheduled: %v}}
workload:
  - type: flows
    flows:
      - {src: 0, dst: 1, size: 1MB}
      - {src: 0, dst: 2, size: 1MB}
      - {src: 0, dst: 3, size: 1000, start: 2us}
`, nic)
	}
	fifo := runYAML(t, yaml(false)).Fabric.Transport().Records[2]
	rr := runYAML(t, yaml(true)).Fabric.Transport().Records[2]
	// Alone: 3 links of 1 us, 85.12 ns at 100 Gb/s twice, 21.28 ns at 400.
	alone := 3*sim.Microsecond + 2*85120*sim.Picosecond + 21280*sim.Picosecond
	fctFIFO, fctRR := fifo.Finish-2*sim.Microsecond, rr.Finish-2*sim.Microsecond
	if fctFIFO < alone+1500*sim.Nanosecond {
		t.Errorf("FIFO NIC: the short flow took %v, want about 2 us more than alone (%v)", fctFIFO, alone)
	}
	if fctRR > alone+3*85120*sim.Picosecond {
		t.Errorf("NIC-scheduled: the short flow took %v, want at most 3 packet times more than alone (%v)", fctRR, alone)
	}
	t.Logf("one-packet flow behind two line-rate flows: FIFO %v, round robin %v, alone %v", fctFIFO, fctRR, alone)
}
