package extswitch_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/elementproto/natspeer"
	"github.com/lockstep-sim/lockstep/examples/extswitch"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
)

// inProcessNATS starts an embedded NATS server without sockets and
// returns two connections to it: lockstep's and the elements'.
func inProcessNATS(t *testing.T) (lockstep, elements *nats.Conn) {
	t.Helper()
	ns, err := server.NewServer(&server.Options{DontListen: true, NoLog: true, NoSigs: true})
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
	return conn(), conn()
}

// TestExternalSwitch_OverNATSSameAsTheBuiltIn is
// TestExternalSwitch_SameAsTheBuiltIn with the elements served over NATS
// (natspeer): the same records and counters.
func TestExternalSwitch_OverNATSSameAsTheBuiltIn(t *testing.T) {
	lc, ec := inProcessNATS(t)
	topo := fatTree(t)
	ext := map[int]fabric.ExternalPeer{}
	for _, name := range []string{"tor0", "agg1", "core0", "core3"} {
		n := node(t, topo, name)
		prefix := natspeer.Subject("r1", name)
		if _, err := natspeer.Serve(ec, prefix, extswitch.New()); err != nil {
			t.Fatal(err)
		}
		ext[n] = natspeer.NewPeer(lc, prefix, 20*time.Second)
	}
	builtin := runFabric(t, nil)
	got := runFabric(t, ext)
	if !reflect.DeepEqual(builtin.records, got.records) {
		t.Fatalf("flow records differ over NATS")
	}
	for n, want := range builtin.ports {
		if c := got.f.ExternalCounters(n); c != nil {
			for i, x := range c {
				if w := want[i]; x.Enqueued != w.Enqueued || x.Dropped != w.Dropped || x.Marked != w.Marked || x.TxPackets != w.TxPackets {
					t.Errorf("node %d port %d: built-in %+v, external %+v", n, i, w, x)
				}
			}
		} else if !reflect.DeepEqual(want, got.ports[n]) {
			t.Errorf("node %d: counters differ", n)
		}
	}
}

// TestExternalSwitch_SilentPeerFailsWithinTheTimeout: an element that
// takes its setup but never answers a window fails the run within the
// peer timeout, with an error naming it; one that fails answers with its
// error.
func TestExternalSwitch_SilentPeerFailsWithinTheTimeout(t *testing.T) {
	lc, ec := inProcessNATS(t)
	topo := fatTree(t)
	tor := node(t, topo, "tor0")
	prefix := natspeer.Subject("r2", "tor0")
	sw := extswitch.New()
	if _, err := ec.Subscribe(prefix+".*", func(m *nats.Msg) {
		if strings.HasSuffix(m.Subject, ".setup") {
			_ = m.Respond(nil)
			_ = sw.Setup(m.Data)
		} // silence on every window
	}); err != nil {
		t.Fatal(err)
	}
	if err := ec.Flush(); err != nil {
		t.Fatal(err)
	}
	const timeout = 300 * time.Millisecond
	cfg := hostsim.DefaultConfig()
	f, err := fabric.New(fabric.Config{Topo: topo, Flows: flows(), Transport: cfg, Seed: 7,
		External: map[int]fabric.ExternalPeer{tor: natspeer.NewPeer(lc, prefix, timeout)}})
	if err != nil {
		t.Fatal(err)
	}
	for f.RunUntilBatch(sim.Second, 1<<16) {
	}
	var xe *fabric.ExternalError
	if err := f.ExternalErr(); !errors.As(err, &xe) || xe.Name != "tor0" || !strings.Contains(err.Error(), "no reply within the peer timeout (300ms)") {
		t.Fatalf("want tor0 named with the peer timeout, got %v", err)
	}

	// An element that fails: its error, named.
	bad := natspeer.Subject("r2", "elsewhere")
	if _, err := natspeer.Serve(ec, bad, extswitch.New()); err != nil {
		t.Fatal(err)
	}
	if _, err := natspeer.NewPeer(lc, bad, timeout).Step([]byte{0xc1}); err == nil || !strings.Contains(err.Error(), "the element failed: extswitch: a window before the setup") {
		t.Fatalf("want the element's error, got %v", err)
	}
}
