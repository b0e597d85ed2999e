package coordinator_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/coordinator"
	"github.com/lockstep-sim/lockstep/deploy"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
)

const scenarioYAML = `seed: 11
topology:
  type: leafspine
  leafspine:
    leaves: 2
    spines: 2
    hosts_per_leaf: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 20KiB, ecn: {mode: red, min: 4KB, max: 16KB, pmax: 0.2}}
    fabric: {rate: 100Gbps, delay: 1us, buffer: 20KiB, ecn: {mode: red, min: 4KB, max: 16KB, pmax: 0.2}}
transport: {ecn: true, rto: {min: 500us}}
switch: {forwarding: spray}
impairments:
  - {link: [leaf0, spine0], loss: 0.5%, jitter: 200ns}
workload:
  - type: permutation
    size: 1MB
`

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// TestCoordinator_Design3_LeaderStopsMidRun runs three raft replicas with
// BoltDB stores in this process, the nodes as goroutines, and stops the
// leader mid-run: the nodes run the barrier among themselves, so the run
// goes on without it, its fct.csv equals the in-memory run's, and a
// follower takes over (its observer resynchronised from the nodes' reports).
func TestCoordinator_Design3_LeaderStopsMidRun(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(file, []byte(scenarioYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := scenario.Load(file, []byte(scenarioYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, 3)
	if err != nil {
		t.Fatal(err)
	}
	lr, err := node.RunLocal(b, pl, node.LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := lr.Outputs.WriteFCT(&want); err != nil {
		t.Fatal(err)
	}
	su := deploy.NewSetup(b, pl)

	ns, err := server.NewServer(&server.Options{DontListen: true, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS did not start")
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	connect := func() *nats.Conn {
		nc, err := nats.Connect("", nats.InProcessServer(ns))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	const run = "failover"
	ports := freePorts(t, 3)
	var peers []coordinator.Peer
	for i, p := range ports {
		peers = append(peers, coordinator.Peer{ID: fmt.Sprintf("c%d", i+1), Addr: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	coords := map[string]*coordinator.Coordinator{}
	for _, p := range peers {
		c, err := coordinator.Start(coordinator.Config{Conn: connect(), Run: run, Setup: su, ID: p.ID, Addr: p.Addr,
			Peers: peers, Dir: filepath.Join(dir, p.ID), MarkEvery: 50, StatusEvery: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		coords[p.ID] = c
		defer c.Close()
	}

	col, err := deploy.NewCollector(connect(), run, pl.P, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	stopped := ""
	var leaders []wire.Status
	obs := connect()
	subj, _ := wire.NewSubjects(run)
	_, err = obs.Subscribe(subj.Status(), func(msg *nats.Msg) {
		m, err := wire.Decode(msg.Data)
		if err != nil || m.Control == nil {
			return
		}
		var st wire.Status
		if m.Control.UnmarshalBody(&st) != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if len(leaders) == 0 || leaders[len(leaders)-1].Term < st.Term {
			leaders = append(leaders, st)
		}
		if stopped == "" && st.Window >= 100 {
			stopped = st.ID
			go coords[st.ID].Close()
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := make(chan error, pl.P)
	for i := 0; i < pl.P; i++ {
		nc := connect()
		go func() {
			if err := node.Run(ctx, node.Config{Conn: nc, Run: run, Partition: i}); err != nil {
				errs <- fmt.Errorf("partition %d: %w", i, err)
			}
		}()
	}
	select {
	case <-col.Done():
	case err := <-errs:
		t.Fatalf("a node failed: %v", err)
	case <-ctx.Done():
		t.Fatalf("the run did not finish: leaders %+v, stopped %q", leaders, stopped)
	}
	// The run may end before the successor is elected: wait for it.
	for deadline := time.Now().Add(20 * time.Second); ; {
		mu.Lock()
		n := len(leaders)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	mu.Lock()
	t.Logf("stopped leader %q; leaders %+v", stopped, leaders)
	if stopped == "" || len(leaders) < 2 {
		t.Errorf("stopped %q with leaders %+v: want a leader stopped mid-run and a successor", stopped, leaders)
	}
	mu.Unlock()
	parts, err := node.Parts(col.Results())
	if err != nil {
		t.Fatal(err)
	}
	m, err := results.Merge(b, parts)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := m.WriteFCT(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("fct.csv after a failover differs from the undisturbed run")
	}
	for id, c := range coords {
		if id == stopped {
			continue
		}
		st := c.State()
		// A follower applies the successor's term when raft replicates it.
		for deadline := time.Now().Add(10 * time.Second); len(st.Leaders) < 2 && time.Now().Before(deadline); st = c.State() {
			<-time.After(10 * time.Millisecond)
		}
		if st.Config.Digest != su.Digest || len(st.Leaders) < 2 {
			t.Errorf("replica %s: raft state digest %q leaders %v; want %q and two leaders", id, st.Config.Digest, st.Leaders, su.Digest)
		}
	}
}
