package runner_test

import (
	"testing"

	"github.com/lockstep-sim/lockstep/runner"
)

// incastRoCE is an 8-to-1 incast of DCQCN flows on a leaf-spine with the
// paper's RED thresholds (Kmin 5 KB, Kmax 200 KB, Pmax 1%), buffers of
// buffer bytes per port, recovery rec, and extra switch settings.
func incastRoCE(buffer, rec, sw string) string {
	return `
topology:
  type: leafspine
  leafspine:
    leaves: 3
    spines: 2
    hosts_per_leaf: 4
    host: {rate: 40Gbps, delay: 1us, buffer: ` + buffer + `, ecn: {mode: red, min: 5KB, max: 200KB, pmax: 1%}}
    fabric: {rate: 40Gbps, delay: 1us, buffer: ` + buffer + `, ecn: {mode: red, min: 5KB, max: 200KB, pmax: 1%}}
transport:
  cc: dcqcn
  recovery: ` + rec + `
  ecn: true
  mtu: 1064
  rto: {mode: fixed, value: 500us}
` + sw + `
workload:
  - type: incast
    dst: 0
    n: 8
    size: 500KB
`
}

func checkDelivered(t *testing.T, r *runner.Result) (retx uint64) {
	t.Helper()
	tr := r.Fabric.Transport()
	for i, rec := range tr.Records {
		if !rec.Finished || rec.BytesReceived != uint64(tr.Flows[i].Size) {
			t.Fatalf("flow %d: finished %v with %d of %d bytes", i, rec.Finished, rec.BytesReceived, tr.Flows[i].Size)
		}
		retx += rec.Retransmits
	}
	checkConservation(t, r)
	return retx
}

// TestDCQCN_LosslessPFCDropsNothing: on a PFC-lossless class (IEEE
// 802.1Qbb) the incast pauses senders instead of dropping; DCQCN's CNPs
// still cut the rates (Zhu et al. 2015 run DCQCN with PFC).
func TestDCQCN_LosslessPFCDropsNothing(t *testing.T) {
	r := runYAML(t, incastRoCE("96KiB", "gbn", `switch:
  classes: [{lossless: true}, {}]
  pfc: {xoff: 48KiB, xon: 24KiB, watchdog: 10ms}`))
	s := r.Summary()
	if s.Drops != 0 {
		t.Fatalf("%d drops on a lossless class, want 0", s.Drops)
	}
	if retx := checkDelivered(t, r); retx != 0 {
		t.Fatalf("%d retransmissions without loss, want 0", retx)
	}
	tr := r.Fabric.Transport()
	if tr.Rate.CNPs == 0 {
		t.Fatalf("no CNP sent: the incast queue must reach the RED ramp")
	}
	var pauses uint64
	for _, h := range []int{1, 2, 3, 4, 5, 6, 7, 8} {
		pauses += r.Fabric.Host(h).PausesRecv
	}
	if pauses == 0 {
		t.Fatalf("no PAUSE reached a sender: the test does not exercise PFC")
	}
}

// TestDCQCN_LossyRecoversEveryLoss: without PFC the same incast drops
// packets; go-back-N (one NAK per gap, resend from the gap) and selective
// repeat (IRN) both deliver every byte, selective repeat with fewer
// retransmissions.
func TestDCQCN_LossyRecoversEveryLoss(t *testing.T) {
	var retx [2]uint64
	for i, rec := range []string{"gbn", "sr"} {
		r := runYAML(t, incastRoCE("48KiB", rec, ""))
		if d := r.Summary().Drops; d == 0 {
			t.Fatalf("%s: no drop: the test does not exercise recovery", rec)
		}
		retx[i] = checkDelivered(t, r)
		t.Logf("%s: %d drops, %d retransmissions, %d NAKs, %d timeouts", rec, r.Summary().Drops, retx[i], r.Fabric.Transport().Rate.NAKs, timeouts(r))
		if retx[i] == 0 || r.Fabric.Transport().Rate.NAKs == 0 {
			t.Fatalf("%s: %d retransmissions and %d NAKs after drops", rec, retx[i], r.Fabric.Transport().Rate.NAKs)
		}
	}
	if retx[1] >= retx[0] {
		t.Fatalf("selective repeat resent %d packets, go-back-N %d: want fewer", retx[1], retx[0])
	}
}

func timeouts(r *runner.Result) (n uint64) {
	for _, rec := range r.Fabric.Transport().Records {
		n += rec.Timeouts
	}
	return n
}
