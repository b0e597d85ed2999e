package scenario

import (
	"strings"
	"testing"
)

// compatBase is examples/multi_loss_stracksim.yaml, reduced.
const compatBase = `compat: stracksim
topology:
  type: dumbbell
  dumbbell:
    senders: 3
    receivers: 3
    host: {rate: 100Gbps, delay: 500ns, buffer: 10240, ecn: {mode: step, k: 5120}}
    bottleneck: {rate: 40Gbps, delay: 500ns, buffer: 10240, ecn: {mode: step, k: 5120}}
transport:
  cc: simpletcp
  mtu: 1024
  ack_size: 64
  init_cwnd: 16
  rto: {mode: fixed, value: 100us}
workload:
  - type: flows
    flows:
      - {src: 0, dst: 3, size: 256KiB, start: 1us}
      - {src: 1, dst: 4, size: 64KiB, start: 1us}
`

// TestCompat_BadInput: under compat stracksim, a setting the profile does
// not honour or a value out of its range is refused with one line naming
// the field.
func TestCompat_BadInput(t *testing.T) {
	if _, err := load(t, compatBase); err != nil {
		t.Fatalf("the base scenario: %v", err)
	}
	for _, c := range []struct{ from, to, want string }{
		{"compat: stracksim", "compat: strack-sim", `compat: unknown profile "strack-sim"`},
		{"cc: simpletcp", "cc: cubic", `transport.cc: unknown protocol "cubic"`},
		{"init_cwnd: 16", "init_cwnd: 1000", "transport.init_cwnd: the stracksim profile needs min_cwnd <= init_cwnd <= max_cwnd (packets), got 1 <= 1000 <= 256"},
		{"init_cwnd: 16", "init_cwnd: 16\n  options: {max_cwnd: 0}", "transport.options.max_cwnd: expected a window in packets between 1 and"},
		{"init_cwnd: 16", "init_cwnd: 16\n  options: {alpha: 2}", "transport.options.alpha: the stracksim profile takes max_cwnd, min_cwnd and ssthresh"},
		{"value: 100us", "value: 100500ps", "transport.rto.value: must be a positive whole number of nanoseconds"},
		{"mode: fixed", "mode: rfc6298", `transport.rto.mode: the stracksim profile's timeout is fixed, not "rfc6298"`},
		{"mtu: 1024", "mtu: 70000", "transport.mtu: mtu and ack_size must be at most 65535 bytes"},
		{"ack_size: 64", "ack_size: 64\n  ecn: true", "transport.ecn: not part of the stracksim profile"},
		{"start: 1us}\n      - {src: 1", "start: 1500ps}\n      - {src: 1", "workload: flow 0 starts at 1.5ns: the stracksim profile needs whole nanoseconds"},
		{"delay: 500ns, buffer: 10240, ecn: {mode: step, k: 5120}}\n    bottleneck", "delay: 500ns, buffer: 10240, ecn: {mode: step, k: 5120, on: dequeue}}\n    bottleneck",
			"topology: the stracksim profile marks by a step threshold on arrival"},
		{"workload:", "switch: {trim: {}}\nworkload:", "switch.trim: not part of the stracksim profile"},
	} {
		text := strings.Replace(compatBase, c.from, c.to, 1)
		if text == compatBase {
			t.Fatalf("%q does not occur in the base scenario", c.from)
		}
		_, err := load(t, text)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q -> %q: want one line with %q, got %v", c.from, c.to, c.want, err)
		}
	}
}
