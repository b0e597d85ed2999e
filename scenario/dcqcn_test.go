package scenario

import (
	"errors"
	"testing"

	"github.com/lockstep-sim/lockstep/cc"
)

// TestTransport_DCQCN: dcqcn defaults to RoCE go-back-N, needs ECN, takes
// its parameters as options with units, and a bad value names its key.
func TestTransport_DCQCN(t *testing.T) {
	b, err := load(t, base+"transport: {cc: dcqcn, ecn: true, options: {profile: connectx, timer: 55us, rai: 40Mbps}}\n")
	if err != nil {
		t.Fatal(err)
	}
	c := b.Fabric.Transport.CC
	if c.Recovery != "gbn" {
		t.Fatalf("recovery %q, want gbn (DCQCN's default)", c.Recovery)
	}
	if caps := cc.Describe(c); !caps.CNP || !caps.NICScheduled || caps.Nak != cc.NakGoBackN {
		t.Fatalf("capabilities %+v, want CNPs, a NIC-scheduled flow and go-back-N NAKs", caps)
	}
	b, err = load(t, base+"transport: {cc: dcqcn, ecn: true, recovery: sr}\n")
	if err != nil || b.Fabric.Transport.CC.Recovery != "sr" {
		t.Fatalf("recovery sr: %v", err)
	}
	for _, c := range []struct{ transport, path string }{
		{"{cc: dcqcn}", "transport.cc"},
		{"{cc: dcqcn, ecn: true, options: {timer: 55}}", "transport.options.timer"},
		{"{cc: dcqcn, ecn: true, options: {rai: 40Mbit}}", "transport.options.rai"},
		{"{cc: dcqcn, ecn: true, options: {profile: cx7}}", "transport.options.profile"},
		{"{cc: dcqcn, ecn: true, options: {f: 0}}", "transport.options.f"},
		{"{cc: dcqcn, ecn: true, options: {kmin: 5KB}}", "transport.options.kmin"},
		{"{cc: dcqcn, ecn: true, recovery: gbm}", "transport.recovery"},
	} {
		_, err := load(t, base+"transport: "+c.transport+"\n")
		var se *Error
		if !errors.As(err, &se) || se.Path != c.path {
			t.Errorf("transport %s: error %v, want one at %s", c.transport, err, c.path)
		}
	}
}
