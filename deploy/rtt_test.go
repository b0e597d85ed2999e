package deploy

import (
	"net"
	"testing"

	"github.com/lockstep-sim/lockstep/internal/member"
)

// TestRTTConn_OverTheNetwork: with the embedded server, the launcher's own
// connections are in process (a pipe), but the one its NATS round trip is
// sampled on goes over TCP, the path of the node processes: an in-process
// PING measures two goroutine hand-offs, not the nodes' network, and
// understated the round trip that summary.json's nats_rtt_us sets the
// barrier wait against.
func TestRTTConn_OverTheNetwork(t *testing.T) {
	creds, err := member.NewSet("rtt-test", []string{"c0"}, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	l := &launch{o: Options{RunID: "rtt-test"}, creds: creds}
	if err := l.startNATS(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, nc := range l.conns {
			nc.Close()
		}
		l.srv.Shutdown()
		l.srv.WaitForShutdown()
	}()
	in, err := l.connect("launcher", l.member(member.Launcher))
	if err != nil {
		t.Fatal(err)
	}
	if a := in.ConnectedAddr(); a != "pipe" {
		t.Errorf("the launcher's connection: remote %q, want an in-process pipe", a)
	}
	rc, err := l.rttConn()
	if err != nil {
		t.Fatal(err)
	}
	a, err := net.ResolveTCPAddr("tcp", rc.ConnectedAddr())
	if err != nil || !a.IP.IsLoopback() || a.Port != l.srv.Addr().(*net.TCPAddr).Port {
		t.Errorf("the round trip's connection: remote %q (%v), want the embedded server's TCP address %v", rc.ConnectedAddr(), err, l.srv.Addr())
	}
	if err := rc.Flush(); err != nil {
		t.Errorf("a PING over it: %v", err)
	}
}
