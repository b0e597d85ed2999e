package yamlx

import (
	"errors"
	"strings"
	"testing"
)

// FuzzDecode checks that no input makes Decode panic and that every error is
// an *Error whose message is one line starting with the file name.
//
//	go test -run '^$' -fuzz FuzzDecode -fuzztime 60s ./internal/yamlx/
func FuzzDecode(f *testing.F) {
	seeds := []string{
		"",
		"seed: 1\nname: run\n",
		"topology:\n  type: dumbbell\n  dumbbell:\n    senders: 2\n    host: {nic: 100Gbps, delay: 1us}\n    bottleneck: 40 Gb/s\n",
		"workload:\n  - &f {src: a, size: 1KB, start: 1us, loss: 5%}\n  - <<: *f\n    src: b\n    path: [{node: s1, queues: [{weight: 3}]}]\n",
		"links: {s1: 100G, s2: 0Gbps}\ngroups: {a: [x, y]}\nnested: {p: {q: 1}}\n",
		"params: {k: 3, list: [a, 1.5], on: true, none: null}\n",
		"ratio: .inf\ngain: 1e39\nsmall: -129\nport: 0x1F90\ncount: -1\npair: [1, 1e6]\n",
		"matrix: &m [[{weight: 1}], *m]\n",
		"nested: &n {a: {x: 1}, <<: *n}\n",
		"timeout: 2.5us\ndebug: ~\nlevel: high\nboth: x\n",
		"seed: 1\ntopology:\n  type: x\n  dumbbell:\n    senders: 2\n   receivers: 3\n",
		"seed: 1\n---\nseed: 2\n",
		"? [a]\n: 1\n",
		"- a\n",
		"name: \"a\\u2028b\"\nseed: \"x\\ny\"\n",
		"\"a\\nb\": 1\n",
		"seed: 1\nname: \xff\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s testScenario
		err := Decode("fuzz.yaml", data, &s)
		if err == nil {
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("Decode(%q) error %v is %T, want *Error", data, err, err)
		}
		msg := err.Error()
		if strings.ContainsAny(msg, "\n\r") {
			t.Fatalf("Decode(%q) error is not one line: %q", data, msg)
		}
		if !strings.HasPrefix(msg, "fuzz.yaml:") {
			t.Fatalf("Decode(%q) error does not start with the file name: %q", data, msg)
		}
		// Decoding is deterministic: the same input gives the same error.
		var again testScenario
		if err2 := Decode("fuzz.yaml", data, &again); err2 == nil || err2.Error() != msg {
			t.Fatalf("Decode(%q) is not deterministic: %q, then %v", data, msg, err2)
		}
	})
}
