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
		{"workload:", "switch: {int: {}}\nworkload:", "switch.int: not part of the stracksim profile"},
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

// strackBase runs STrack as htsim PR #4 does on a small leaf-spine.
const strackBase = `topology:
  type: leafspine
  leafspine: {leaves: 2, spines: 2, hosts_per_leaf: 2, host: {rate: 100Gbps, delay: 1us}, fabric: {rate: 100Gbps, delay: 1us}}
switch: {forwarding: spray}
transport:
  cc: strack
  recovery: strack
  ecn: true
  strack: {variant: htsim-pr4, paths: skip}
workload:
  - type: flows
    flows: [{src: 0, dst: 3, size: 100KB}]
`

// TestStrackVariant_BadInput: transport.strack.variant and what it does
// not take are refused with one line naming the field.
func TestStrackVariant_BadInput(t *testing.T) {
	if _, err := load(t, strackBase); err != nil {
		t.Fatalf("the base scenario: %v", err)
	}
	for _, c := range []struct{ from, to, want string }{
		{"variant: htsim-pr4", "variant: htsim-pr5", `transport.strack.variant: unknown variant "htsim-pr5"`},
		{"variant: htsim-pr4, paths: skip", "paths: skip, cc_enabled: true", "transport.strack.cc_enabled: only for variant htsim-pr4"},
		{"paths: skip}", "paths: skip, alpha: 2}", "transport.strack.alpha: not used by variant htsim-pr4"},
		{"paths: skip}", "paths: skip, max_cwnd: 64KB}", "transport.strack.max_cwnd: not used by variant htsim-pr4"},
		{"paths: skip}", "paths: reuse}", "transport.strack.paths: variant htsim-pr4 skips marked paths"},
	} {
		text := strings.Replace(strackBase, c.from, c.to, 1)
		if text == strackBase {
			t.Fatalf("%q does not occur in the base scenario", c.from)
		}
		_, err := load(t, text)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q -> %q: want one line with %q, got %v", c.from, c.to, c.want, err)
		}
	}
}

// The removed strack-sim controller and paths point to their replacement.
func TestCompat_RemovedStrackSimNamesTheProfile(t *testing.T) {
	for _, c := range []struct{ transport, want string }{
		{"transport: {cc: strack-sim}", "transport.cc: strack-sim is gone"},
		{"transport: {cc: strack, strack: {paths: strack-sim}}", "transport.strack.paths: strack-sim is gone"},
	} {
		_, err := load(t, strings.Replace(strackBase, "transport:\n  cc: strack\n  recovery: strack\n  ecn: true\n  strack: {variant: htsim-pr4, paths: skip}", c.transport, 1))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "compat: stracksim") {
			t.Errorf("%s: want an error with %q naming compat: stracksim, got %v", c.transport, c.want, err)
		}
	}
}
