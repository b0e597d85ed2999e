package runner_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/internal/simtest"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// runYAML builds and runs a scenario given as text.
func runYAML(t *testing.T, text string) *runner.Result {
	t.Helper()
	b, err := scenario.Load("test.yaml", []byte(text), scenario.Dir("../examples"))
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	r, err := runner.Run(b, runner.Options{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return r
}

func checkConservation(t *testing.T, r *runner.Result) {
	t.Helper()
	c := r.Fabric.Conservation()
	if c.Balance() != 0 {
		t.Errorf("packets not conserved: %+v (balance %d)", c, c.Balance())
	}
	if c.PoolLive != c.InQueues+c.OnWire {
		t.Errorf("pool holds %d live packets, but %d are queued and %d on wires", c.PoolLive, c.InQueues, c.OnWire)
	}
}

func TestExamples_RunAndConservePackets(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.yaml")
	if len(files) < 4 {
		t.Fatalf("found %d examples, want at least 4", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b, err := scenario.Load(f, data, scenario.Dir(filepath.Dir(f)))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			r, err := runner.Run(b, runner.Options{})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			checkConservation(t, r)
			s := r.Summary()
			if s.FlowsFinished == 0 && s.StoppedBy != "stop_at" {
				t.Errorf("no flow finished (stopped by %s at %s)", s.StoppedBy, s.EndNs)
			}
		})
	}
}

func TestConservation_MidRunWithLoss(t *testing.T) {
	// Stop while packets are queued and on the wire, with random loss.
	r := runYAML(t, `
topology:
  type: dumbbell
  dumbbell:
    senders: 4
    receivers: 4
    host: {rate: 100Gbps, delay: 1us}
    bottleneck: {rate: 10Gbps, delay: 5us, buffer: 64KiB}
stop_at: 300us
transport: {rto: {min: 1ms}}
impairments:
  - {link: [left, right], loss: 1%}
workload:
  - type: permutation
    size: 10MB
`)
	c := r.Fabric.Conservation()
	if c.InQueues == 0 || c.OnWire == 0 || c.LinkLost == 0 || c.QueueDrops == 0 {
		t.Fatalf("want a run stopped with packets queued, on wires, lost and dropped; got %+v", c)
	}
	checkConservation(t, r)
}

func TestOnePacket_FCTIsAnalytic(t *testing.T) {
	// 1000 B payload + 64 B header = 1064 B = 8512 bits.
	// host link 100 Gb/s: 85.12 ns; bottleneck 40 Gb/s: 212.8 ns.
	// FCT = 85.12 + 1000 + 212.8 + 2000 + 85.12 + 1000 ns = 4383.04 ns.
	r := runYAML(t, `
topology:
  type: dumbbell
  dumbbell:
    senders: 1
    receivers: 1
    host: {rate: 100Gbps, delay: 1us}
    bottleneck: {rate: 40Gbps, delay: 2us}
workload:
  - type: flows
    flows: [{src: 0, dst: 1, size: 1000, start: 5us}]
`)
	rec := r.Fabric.Transport().Records[0]
	if got, want := rec.Finish-5*sim.Microsecond, 4383040*sim.Picosecond; got != want {
		t.Fatalf("one-packet FCT = %d ps, want %d ps", got, want)
	}
}

func TestOnePacket_FatTreeWithSwitchLatency(t *testing.T) {
	// Host 0 to host 127 of a k=8 fat-tree crosses 6 links and 5 switches.
	// 4096 B at 100 Gb/s: 327.68 ns per hop; 1 us per link; 100 ns per switch.
	// FCT = 6*(327.68 + 1000) + 5*100 = 8466.08 ns.
	r := runYAML(t, `
topology:
  type: fattree
  fattree:
    k: 8
    switch_latency: 100ns
    host: {rate: 100Gbps, delay: 1us}
    agg:  {rate: 100Gbps, delay: 1us}
    core: {rate: 100Gbps, delay: 1us}
transport: {mtu: 4096, header: 0}
workload:
  - type: flows
    flows: [{src: 0, dst: 127, size: 4096}]
`)
	if got, want := r.Fabric.Transport().Records[0].Finish, 8466080*sim.Picosecond; got != want {
		t.Fatalf("one-packet FCT across the fat-tree = %d ps, want %d ps", got, want)
	}
}

func TestLongFlow_IdlePathReachesLineRate(t *testing.T) {
	r := runYAML(t, `
topology:
  type: dumbbell
  dumbbell:
    senders: 1
    receivers: 1
    host: {rate: 100Gbps, delay: 1us, buffer: 4MiB}
    bottleneck: {rate: 100Gbps, delay: 1us, buffer: 4MiB}
workload:
  - type: flows
    flows: [{src: 0, dst: 1, size: 50MB}]
`)
	rec := r.Fabric.Transport().Records[0]
	if !rec.Finished {
		t.Fatal("flow did not finish")
	}
	// Payload line rate: 100 Gb/s * 1436/1500.
	goodput := 50e6 * 8 / rec.Finish.Seconds()
	line := 100e9 * 1436 / 1500
	if goodput < 0.99*line {
		t.Fatalf("goodput %.3f Gb/s, want >= 99%% of the payload line rate %.3f Gb/s", goodput/1e9, line/1e9)
	}
	if rec.Retransmits != 0 {
		t.Fatalf("%d retransmissions on an idle path", rec.Retransmits)
	}
}

func sharedBottleneck(ecn bool) string {
	ecnLine := ""
	if ecn {
		ecnLine = ", ecn: {mode: step, k: 100KB}"
	}
	return `
topology:
  type: dumbbell
  dumbbell:
    senders: 8
    receivers: 8
    host: {rate: 100Gbps, delay: 1us, buffer: 1MiB}
    bottleneck: {rate: 40Gbps, delay: 4us, buffer: 400KB` + ecnLine + `}
transport: {ecn: ` + map[bool]string{true: "true", false: "false"}[ecn] + `, rto: {min: 1ms}}
workload:
  - type: flows
    flows:
      - {src: 0, dst: 8, size: 8MB}
      - {src: 1, dst: 9, size: 8MB}
      - {src: 2, dst: 10, size: 8MB}
      - {src: 3, dst: 11, size: 8MB}
      - {src: 4, dst: 12, size: 8MB}
      - {src: 5, dst: 13, size: 8MB}
      - {src: 6, dst: 14, size: 8MB}
      - {src: 7, dst: 15, size: 8MB}
`
}

func TestSharedBottleneck_RenoUsesItAndDropsOnlyThere(t *testing.T) {
	for _, ecn := range []bool{false, true} {
		name := map[bool]string{false: "droptail", true: "ecn"}[ecn]
		t.Run(name, func(t *testing.T) {
			r := runYAML(t, sharedBottleneck(ecn))
			checkConservation(t, r)
			first := sim.Never
			for _, rec := range r.Fabric.Transport().Records {
				if !rec.Finished {
					t.Fatal("a flow did not finish")
				}
				first = min(first, rec.Finish)
			}
			// Utilisation while all 8 flows are active: bytes the
			// bottleneck carried by the first finish, against 40 Gb/s.
			// The whole run is simpler and stricter at the tail, so use
			// the run: total bytes on the wire / (end * rate).
			var bnBytes, otherDrops, bnDrops, bnMarks, otherMarks uint64
			for _, q := range r.Ports {
				if q.Switch == "left" && q.Peer == "right" {
					bnBytes, bnDrops, bnMarks = q.Bytes, q.Dropped, q.Marked
				} else {
					otherDrops += q.Dropped
					otherMarks += q.Marked
				}
			}
			util := float64(bnBytes) * 8 / (r.End.Seconds() * 40e9)
			if util < 0.90 {
				t.Errorf("bottleneck utilisation %.3f, want >= 0.90", util)
			}
			if otherDrops != 0 || otherMarks != 0 {
				t.Errorf("%d drops and %d marks away from the bottleneck, want none", otherDrops, otherMarks)
			}
			if ecn {
				if bnMarks == 0 || bnDrops != 0 {
					t.Errorf("ECN: %d marks and %d drops at the bottleneck, want marks and no drops", bnMarks, bnDrops)
				}
			} else if bnDrops == 0 {
				t.Errorf("drop-tail: no drops at the bottleneck, want some (Reno probes until loss)")
			}
		})
	}
}

func TestECMP_SpreadsFlowsOverAllSpines(t *testing.T) {
	for _, mode := range []string{"ecmp", "spray"} {
		t.Run(mode, func(t *testing.T) {
			flows := ""
			n := 16
			if mode == "spray" {
				n = 1 // one sprayed flow alone must use every spine
			}
			for i := 0; i < n; i++ {
				flows += "      - {src: " + itoa(i) + ", dst: " + itoa(16+i) + ", size: 2MB}\n"
			}
			r := runYAML(t, `
topology:
  type: leafspine
  leafspine:
    leaves: 2
    spines: 4
    hosts_per_leaf: 16
    host: {rate: 100Gbps, delay: 1us}
    fabric: {rate: 400Gbps, delay: 1us}
switch: {forwarding: `+mode+`}
workload:
  - type: flows
    flows:
`+flows)
			used := 0
			for _, q := range r.Ports {
				if q.Switch == "leaf0" && strings.HasPrefix(q.Peer, "spine") && q.TxPackets > 0 {
					used++
				}
			}
			if used != 4 {
				t.Fatalf("%s: leaf0 sent over %d of 4 spines, want all 4", mode, used)
			}
		})
	}
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}

func outputs(t *testing.T, r *runner.Result) (fct, queues, summary []byte) {
	t.Helper()
	dir := t.TempDir()
	if err := r.WriteDir(dir, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	read := func(n string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return read("fct.csv"), read("queues.csv"), read("summary.json")
}

func TestDeterminism_SameSeedSameBytes(t *testing.T) {
	a1, a2, a3 := outputs(t, runYAML(t, "seed: 7\n"+simtest.RandomScenario))
	b1, b2, b3 := outputs(t, runYAML(t, "seed: 7\n"+simtest.RandomScenario))
	if !bytes.Equal(a1, b1) || !bytes.Equal(a2, b2) || !bytes.Equal(a3, b3) {
		t.Fatal("two runs with seed 7 wrote different outputs")
	}
	c1, c2, _ := outputs(t, runYAML(t, "seed: 8\n"+simtest.RandomScenario))
	if bytes.Equal(a1, c1) || bytes.Equal(a2, c2) {
		t.Fatal("seeds 7 and 8 wrote identical fct.csv or queues.csv despite random loss, RED and spraying")
	}
}

// TestRail_NVLink_CrossRailFlowCrossesSourceNVSwitch: on separate rails
// with NVLink, a flow from GPU 0 of server 0 (rail 0) to GPU 1 of server
// 1 (rail 1) finishes, and every one of its data packets crossed server
// 0's NVSwitch towards NIC 1 (PXN) and none server 1's NVLink; the ACKs
// come back the mirrored way (server 1's NVSwitch to NIC 0 of server 1,
// rail 0), never through server 0's NVLink.
func TestRail_NVLink_CrossRailFlowCrossesSourceNVSwitch(t *testing.T) {
	r := runYAML(t, `
topology:
  type: rail
  rail:
    servers: 2
    gpus_per_server: 2
    servers_per_leaf: 2
    spines: 1
    joined: false
    host:   {rate: 100Gbps, delay: 500ns}
    fabric: {rate: 100Gbps, delay: 1us}
    nvlink: {rate: 900Gbps, delay: 100ns}
workload:
  - type: flows
    flows: [{src: 0, dst: 3, size: 150000}]
`)
	if rec := r.Fabric.Transport().Records[0]; !rec.Finished {
		t.Fatal("the cross-rail flow did not finish")
	}
	topo := r.Fabric.Topology()
	tx := map[string]uint64{} // switch>peer -> packets sent
	for n := range topo.Nodes {
		sw := r.Fabric.Switch(n)
		if sw == nil {
			continue
		}
		for _, p := range sw.Ports {
			tx[topo.Nodes[n].Name+">"+topo.Nodes[p.Peer].Name] = p.TxPackets
		}
	}
	data := uint64(100) // 150000 B in 1436-byte segments: 105 packets
	for _, c := range []struct {
		port string
		min  uint64
		max  uint64
	}{
		{"server0-nvswitch>h1-nic", data, 1 << 30}, // data, PXN
		{"h1-nic>rail1-leaf0", data, 1 << 30},      // out of NIC 1 on rail 1
		{"server1-nvswitch>h3-nic", 0, 0},          // never the far end's NVLink
		{"h0-nic>rail0-leaf0", 0, 0},               // nor rail 0
		{"server1-nvswitch>h2-nic", 1, data + 10},  // ACKs, PXN at server 1
		{"server0-nvswitch>h0-nic", 0, 0},
	} {
		if got := tx[c.port]; got < c.min || got > c.max {
			t.Errorf("%s sent %d packets, want %d..%d", c.port, got, c.min, c.max)
		}
	}
}
