package node_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/deploy"
	"github.com/lockstep-sim/lockstep/internal/member"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/scenario"
)

// setupFor loads examples/dumbbell.yaml with --cwnd and a seed, cut in 2.
func setupFor(t *testing.T) (*scenario.Built, *wire.Setup) {
	t.Helper()
	b, err := scenario.LoadFile("../examples/dumbbell.yaml", scenario.WithCwnd(), scenario.WithSeed(3))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, 2)
	if err != nil {
		t.Fatal(err)
	}
	return b, deploy.NewSetup(b, pl)
}

// docs/style.md §14 "effective state travels": a node builds the effective
// scenario (after the edits), not the file.
func TestFromSetup_BuildsTheEffectiveScenario(t *testing.T) {
	b, su := setupFor(t)
	got, _, err := node.FromSetup(su)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest() != b.Digest() || got.Seed() != 3 || !got.Fabric.Transport.Trace.All {
		t.Errorf("node built seed %d, cwnd trace %+v, digest %s; want seed 3, every flow traced, %s",
			got.Seed(), got.Fabric.Transport.Trace, got.Digest(), b.Digest())
	}
}

func TestFromSetup_RefusesAnotherDigest(t *testing.T) {
	for name, spoil := range map[string]func(su *wire.Setup){
		"digest": func(su *wire.Setup) { su.Digest = strings.Repeat("0", 64) },
		"scenario": func(su *wire.Setup) {
			su.Scenario = []byte(strings.Replace(string(su.Scenario), `"Seed":3`, `"Seed":4`, 1))
		},
		"seed": func(su *wire.Setup) { su.Seed = 4 },
	} {
		_, su := setupFor(t)
		before := string(su.Scenario)
		spoil(su)
		if name == "scenario" && string(su.Scenario) == before {
			t.Fatalf("the test did not change the scenario: %s", before)
		}
		if _, _, err := node.FromSetup(su); err == nil {
			t.Errorf("%s changed: the node accepted the setup", name)
		}
	}
}

// A node process fetches its setup over NATS and refuses to run one whose
// digest does not match.
func TestRun_RefusesSetupWithWrongDigest(t *testing.T) {
	ns, err := server.NewServer(&server.Options{DontListen: true, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS did not start")
	}
	defer ns.Shutdown()
	connect := func() *nats.Conn {
		nc, err := nats.Connect(ns.ClientURL(), nats.InProcessServer(ns))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	_, su := setupFor(t)
	su.Digest = strings.Repeat("0", 64)
	subj, _ := wire.NewSubjects("bad-digest")
	reply, err := wire.NewEncoder().Control(wire.TypeSetup, su)
	if err != nil {
		t.Fatal(err)
	}
	fake := connect()
	if _, err := fake.Subscribe(subj.Setup(), func(m *nats.Msg) { _ = m.Respond(reply) }); err != nil {
		t.Fatal(err)
	}
	if err := fake.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = node.Run(ctx, node.Config{Conn: connect(), Run: "bad-digest", Partition: 0})
	if err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("node.Run with a wrong digest: %v; want an error about the digest", err)
	}
}

// With member credentials, a node takes only a setup the run's launcher
// signed: a setup whose digest matches its own scenario but which anyone
// else sent (here: signed by node 1's key, and unsigned) is refused and
// retried until the setup timeout, and the node builds nothing.
func TestRun_Issue10_RefusesSetupNotSignedByLauncher(t *testing.T) {
	ns, err := server.NewServer(&server.Options{DontListen: true, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS did not start")
	}
	defer ns.Shutdown()
	connect := func() *nats.Conn {
		nc, err := nats.Connect(ns.ClientURL(), nats.InProcessServer(ns))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	const run = "unsigned-setup"
	set, err := member.NewSet(run, []string{"c0"}, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	for name, sign := range map[string]*member.Creds{"unsigned": nil, "signed by node 1": set.Nodes[1]} {
		_, su := setupFor(t)
		if sign != nil {
			su.Sig = sign.Sign(wire.SetupMessage(run, su))
		}
		if _, _, err := node.FromSetup(su); err != nil {
			t.Fatalf("%s: the setup itself is fine: %v", name, err)
		}
		subj, _ := wire.NewSubjects(run)
		reply, err := wire.NewEncoder().Control(wire.TypeSetup, su)
		if err != nil {
			t.Fatal(err)
		}
		fake := connect()
		var asked atomic.Int64
		sub, err := fake.Subscribe(subj.Setup(), func(m *nats.Msg) { asked.Add(1); _ = m.Respond(reply) })
		if err != nil {
			t.Fatal(err)
		}
		_ = fake.Flush()
		err = node.Run(context.Background(), node.Config{Conn: connect(), Run: run, Partition: 0, Creds: set.Nodes[0],
			SetupTimeout: time.Second})
		if !errors.Is(err, node.ErrSetupNotSigned) {
			t.Errorf("%s: node.Run = %v, want ErrSetupNotSigned", name, err)
		}
		if asked.Load() < 2 {
			t.Errorf("%s: the node asked %d times; it should retry after a refused setup", name, asked.Load())
		}
		_ = sub.Unsubscribe()
		// The launcher's signature is accepted.
		su.Sig = set.Launcher.Sign(wire.SetupMessage(run, su))
		if !member.Verify(set.Launcher.Public(), wire.SetupMessage(run, su), su.Sig) {
			t.Errorf("the launcher's signature does not verify")
		}
	}
}
