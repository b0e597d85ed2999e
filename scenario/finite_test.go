package scenario

import (
	"strings"
	"testing"
)

// TestBuild_RefusesInfinityNamingTheField: YAML's .inf decodes, no field
// takes it, and the digest's JSON cannot hold it: the error names the
// field (it said "(scenario): cannot encode" before).
func TestBuild_RefusesInfinityNamingTheField(t *testing.T) {
	for _, c := range []struct{ text, field string }{
		{strings.Replace(base, "size: 1KB}]", "size: 1KB}]\n  - {type: poisson, load: .inf, cdf: x.cdf, duration: 1ms}", 1), "workload[1].load"},
		{base + "transport: {cc: nscc, ecn: true, nscc: {max_cwnd_bdp: -.inf}}\n", "transport.nscc.max_cwnd_bdp"},
	} {
		_, err := load(t, c.text)
		if err == nil || !strings.Contains(err.Error(), c.field+": must be a finite number") {
			t.Errorf("want an error naming %s, got %v", c.field, err)
		}
	}
}
