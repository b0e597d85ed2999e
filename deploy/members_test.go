package deploy

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/member"
)

// TestServerUsers_ElementsAnswerOnlyTheirNode: on the embedded server an
// external element's key hears only its own subjects, and only the node
// whose partition steps an element may call it: node 0 reaches tor0, not
// core0 (node 1's); core0's key cannot hear tor0's requests.
func TestServerUsers_ElementsAnswerOnlyTheirNode(t *testing.T) {
	set, err := member.NewSet("r1", []string{"c0"}, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.AddElements([][]string{{"tor0"}, {"core0"}}); err != nil {
		t.Fatal(err)
	}
	opts, err := ServerOptions("r1", set)
	if err != nil {
		t.Fatal(err)
	}
	opts.Port = server.RANDOM_PORT
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	errs := make(chan error, 16)
	connect := func(c *member.Creds) *nats.Conn {
		mo, err := c.Options()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(ns.ClientURL(), append(mo, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			errs <- err
		}))...)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	serve := func(nc *nats.Conn, el string) {
		if _, err := nc.Subscribe("lockstep.r1.element."+el+".*", func(m *nats.Msg) { _ = m.Respond([]byte(el)) }); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	tor, core := connect(set.Elements["tor0"]), connect(set.Elements["core0"])
	serve(tor, "tor0")
	serve(core, "core0")
	node0 := connect(set.Nodes[0])
	if r, err := node0.Request("lockstep.r1.element.tor0.step", nil, 5*time.Second); err != nil || string(r.Data) != "tor0" {
		t.Fatalf("node 0 calls tor0: %v", err)
	}
	// core0 is node 1's: node 0's request is refused by the server.
	if _, err := node0.Request("lockstep.r1.element.core0.step", nil, 500*time.Millisecond); err == nil {
		t.Fatal("node 0 reached core0")
	}
	// core0's key cannot hear tor0's requests.
	_, _ = core.Subscribe("lockstep.r1.element.tor0.*", func(*nats.Msg) {})
	_ = core.Flush()
	var got []string
	deadline := time.After(10 * time.Second)
	for len(got) < 2 {
		select {
		case err := <-errs:
			got = append(got, err.Error())
		case <-deadline:
			t.Fatalf("violations seen: %q", got)
		}
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{`Publish to "lockstep.r1.element.core0.step"`, `Subscription to "lockstep.r1.element.tor0.*"`} {
		if !strings.Contains(all, want) {
			t.Errorf("no permissions violation %s in:\n%s", want, all)
		}
	}
}
