package runner_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/results"
)

// A flow alone on an empty fabric whose window never limits it (it fits
// in the initial window) runs at the ideal: its slowdown is exactly 1,
// whatever its size's remainder and wherever the bottleneck is. This pins
// results.IdealFCT to what the engine computes.
func TestSlowdown_AloneOnEmptyFabricIsOne(t *testing.T) {
	fabrics := map[string]string{
		"fattree": `
topology:
  type: fattree
  fattree:
    k: 4
    switch_latency: 100ns
    host: {rate: 100Gbps, delay: 1us}
    agg:  {rate: 40Gbps, delay: 500ns}
    core: {rate: 100Gbps, delay: 2us}`,
		"dumbbell": `
topology:
  type: dumbbell
  dumbbell:
    senders: 1
    receivers: 1
    host: {rate: 100Gbps, delay: 1us}
    bottleneck: {rate: 10Gbps, delay: 3us}`,
	}
	for name, topo := range fabrics {
		for _, size := range []string{"1", "1436", "1437", "5000", "14360", "14000"} {
			t.Run(name+"/"+size, func(t *testing.T) {
				dst := "1"
				if name == "fattree" {
					dst = "15"
				}
				r := runYAML(t, topo+`
transport: {mtu: 1500, header: 64, init_cwnd: 10}
workload:
  - type: flows
    flows: [{src: 0, dst: `+dst+`, size: `+size+`, start: 3us}]
`)
				var buf bytes.Buffer
				if err := r.WriteFCT(&buf); err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
				if lines[0] != results.FCTHeader || len(lines) != 2 {
					t.Fatalf("fct.csv = %q", buf.String())
				}
				col := strings.Split(lines[1], ",")
				fct, ideal, slow := col[6], col[12], col[13]
				if fct != ideal || slow != "1.000000" {
					t.Errorf("fct %s ns, ideal %s ns, slowdown %s; want fct == ideal and slowdown 1.000000", fct, ideal, slow)
				}
			})
		}
	}
}

// Four flows sharing a bottleneck are slower than the ideal; the summary
// carries the percentiles.
func TestSlowdown_SharedBottleneckAboveOne(t *testing.T) {
	r := runYAML(t, `
topology:
  type: dumbbell
  dumbbell:
    senders: 4
    receivers: 4
    host: {rate: 100Gbps, delay: 1us}
    bottleneck: {rate: 40Gbps, delay: 2us}
workload:
  - type: flows
    flows:
      - {src: 0, dst: 4, size: 1MB}
      - {src: 1, dst: 5, size: 1MB}
      - {src: 2, dst: 6, size: 1MB}
      - {src: 3, dst: 7, size: 1MB}
`)
	s := r.Summary()
	if s.FCT == nil || s.Slowdown == nil {
		t.Fatalf("summary has no percentiles: %+v", s)
	}
	if p50, _ := s.Slowdown.P50.Float64(); p50 <= 1.5 {
		t.Errorf("slowdown p50 = %v, want well above 1 for four flows on one link", p50)
	}
	if p50, p99 := num(t, s.FCT.P50), num(t, s.FCT.P99); p50 > p99 {
		t.Errorf("fct p50 %s > p99 %s", s.FCT.P50, s.FCT.P99)
	}
}

func num(t *testing.T, n json.Number) float64 {
	t.Helper()
	v, err := n.Float64()
	if err != nil {
		t.Fatalf("%q: %v", n, err)
	}
	return v
}
