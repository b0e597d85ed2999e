package natspeer

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

func conns(t *testing.T) (ns *server.Server, a, b *nats.Conn) {
	t.Helper()
	var err error
	ns, err = server.NewServer(&server.Options{DontListen: true, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	conn := func() *nats.Conn {
		nc, err := nats.Connect(ns.ClientURL(), nats.InProcessServer(ns))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	return ns, conn(), conn()
}

type echo struct{ setups int }

func (e *echo) Setup([]byte) error            { e.setups++; return nil }
func (e *echo) Step(m []byte) ([]byte, error) { return m, nil }

// TestPeer_WaitsForTheElementWithinTheTimeout: a request that finds no
// element subscribed is asked again until one is (an element started
// after the run, or reconnecting), and fails at the timeout naming the
// subjects when none comes.
func TestPeer_WaitsForTheElementWithinTheTimeout(t *testing.T) {
	ns, lc, ec := conns(t)
	subj := Subject("r1", "tor0")
	if subj != "lockstep.r1.element.tor0" {
		t.Fatalf("subject %s", subj)
	}
	p := NewPeer(lc, subj, 5*time.Second)
	el := &echo{}
	done := make(chan error, 1)
	go func() { done <- p.Setup([]byte{1}) }()
	// The element subscribes once the setup has been asked for (and
	// found nobody).
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := ns.Varz(nil)
		if err == nil && v.InMsgs >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no request seen")
		}
		time.Sleep(time.Millisecond) // polling the server against the deadline
	}
	if _, err := Serve(ec, subj, el); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || el.setups != 1 {
		t.Fatalf("setup: %v, %d setups", err, el.setups)
	}
	if out, err := p.Step([]byte{2}); err != nil || len(out) != 1 || out[0] != 2 {
		t.Fatalf("step: %v %v", out, err)
	}
	start := time.Now()
	_, err := NewPeer(lc, Subject("r1", "nobody"), 300*time.Millisecond).Step([]byte{3})
	if err == nil || !strings.Contains(err.Error(), "no reply within the peer timeout (300ms): no element subscribed to lockstep.r1.element.nobody.*") {
		t.Fatalf("want the timeout naming the subjects, got %v", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 2*time.Second {
		t.Fatalf("gave up after %v, want about the timeout", d)
	}
}
