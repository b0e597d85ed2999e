package runner_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
)

func TestSTrack_BitmapCoversBurstLossWithoutRTO(t *testing.T) {
	// The bottleneck goes down for 1 us mid-flow: a burst of consecutive
	// packets is lost while later ones arrive, so NACK bitmaps name every
	// hole and the RTO never fires.
	r := runYAML(t, `
topology:
  type: dumbbell
  dumbbell:
    senders: 1
    receivers: 1
    host: {rate: 100Gbps, delay: 500ns, buffer: 1MiB}
    bottleneck: {rate: 40Gbps, delay: 500ns, buffer: 1MiB}
switch: {forwarding: spray}
transport:
  cc: strack
  mtu: 1024
  header: 0
  init_cwnd: 16
  rto: {mode: fixed, value: 100us}
impairments:
  - {link: [left, right], direction: forward, schedule: [{at: 20us, down: 1us}]}
workload:
  - type: flows
    flows: [{src: 0, dst: 1, size: 512KiB}]
`)
	rec := r.Fabric.Transport().Records[0]
	lost := r.Ports
	var down uint64
	for _, q := range lost {
		if q.Switch == "left" && q.Peer == "right" {
			down = q.LinkLost
		}
	}
	if down == 0 {
		t.Fatal("the flap lost nothing; the test needs losses")
	}
	if !rec.Finished || rec.Timeouts != 0 || rec.Retransmits != down {
		t.Fatalf("finished %v, %d timeouts, %d retransmissions; want finished, 0 timeouts and exactly the %d lost packets resent",
			rec.Finished, rec.Timeouts, rec.Retransmits, down)
	}
}

// variant loads examples/multi_loss.yaml with another transport.
func variant(t *testing.T, cc, recovery string, ecn bool) *runner.Result {
	t.Helper()
	b, err := scenario.LoadFile("../examples/multi_loss.yaml", func(s *scenario.Scenario) {
		s.Transport.CC, s.Transport.Recovery, s.Transport.ECN = cc, recovery, ecn
		if !strings.HasPrefix(cc, "strack") {
			s.Transport.STrack = nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.Run(b, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func maxFCT(t *testing.T, r *runner.Result) float64 {
	var f []float64
	for i, rec := range r.Fabric.Transport().Records {
		if !rec.Finished {
			t.Fatalf("flow %d did not finish", i)
		}
		f = append(f, (rec.Finish - r.Built.Fabric.Flows[i].Start).Nanoseconds())
	}
	return slices.Max(f) // with four flows, the P99 is the largest
}

func TestMultiLoss_STrackP99BelowCumulativeAckReno(t *testing.T) {
	st := maxFCT(t, variant(t, "strack", "strack", true))
	reno := maxFCT(t, variant(t, "reno", "reno", false))
	if st >= reno {
		t.Fatalf("P99 FCT: STrack %.1f us, cumulative-ACK Reno %.1f us; want STrack below", st/1e3, reno/1e3)
	}
}
