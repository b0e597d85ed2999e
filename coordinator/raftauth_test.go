package coordinator

import (
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep-sim/lockstep/internal/member"
)

// Only the run's coordinators can open a raft connection: another
// replica's key passes; node 0's key claiming to be c2, a coordinator of
// another run, and bytes without a handshake are closed and counted.
func TestAuthStream_Issue10_OnlyCoordinatorsConnect(t *testing.T) {
	set, err := member.NewSet("r1", []string{"c1", "c2"}, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	other, err := member.NewSet("r1", []string{"c2"}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := newAuthStream("127.0.0.1:0", "c1", set.Coordinators["c1"])
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	addr := c1.Addr().String()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := c1.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()

	good := &authStream{creds: set.Coordinators["c2"], id: "c2"}
	c, err := good.Dial(rAddr(addr), time.Second)
	if err != nil {
		t.Fatalf("c2 dials c1: %v", err)
	}
	defer c.Close()
	select {
	case a := <-accepted:
		a.Close()
	case <-time.After(5 * time.Second):
		t.Fatalf("c1 did not accept c2's connection")
	}

	bad := []*authStream{
		{creds: set.Nodes[0], id: "c2"},             // a node's stolen key
		{creds: other.Coordinators["c2"], id: "c2"}, // another run's c2
	}
	for _, s := range bad {
		if c, err := s.Dial(rAddr(addr), time.Second); err == nil {
			// The dialer's side completes; the acceptor closes it.
			buf := make([]byte, 1)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(buf); err == nil {
				t.Errorf("%s's connection stayed open", s.creds.Name)
			}
			c.Close()
		}
	}
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = raw.Write([]byte("\x01garbage that is not a handshake, followed by more bytes than a signature needs......."))
	raw.Close()
	deadline := time.Now().Add(5 * time.Second)
	for c1.rejected.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling a counter with a deadline
	}
	if got := c1.rejected.Load(); got != 3 {
		t.Errorf("c1 rejected %d connections, want 3", got)
	}
	select {
	case a := <-accepted:
		a.Close()
		t.Errorf("c1 accepted a connection that is not a coordinator's")
	default:
	}
}

func rAddr(s string) raft.ServerAddress { return raft.ServerAddress(s) }
