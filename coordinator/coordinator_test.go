package coordinator_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
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

// loopbackNATS starts a NATS server on loopback for the test and gives a
// function that connects to it (closed at the test's end, before the
// server).
func loopbackNATS(t *testing.T) func() *nats.Conn {
	_, connect := benchNATSOpts(t, &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true}, nil)
	return connect
}

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
// follower takes over (its progress from the nodes' statuses).
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

	connect := loopbackNATS(t)
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

	col, err := deploy.NewCollector(connect(), run, pl.P, nil, nil)
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
			if err := node.Run(ctx, node.Config{Conn: nc, Run: run, Partition: i, StatusEvery: 5 * time.Millisecond}); err != nil {
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
		// What the first leader took from the nodes' statuses (it heard
		// no reports): every node joined, and a progress mark (the first
		// comes with the first progress; marks are proposed
		// asynchronously, so a later one may not be in before it was
		// stopped). The rest is TestLeader_FollowsTheNodesStatuses'.
		if slices.Contains(st.Joined, false) || !st.HasMark || st.Mark.Window == 0 {
			t.Errorf("replica %s: joined %v, mark %v %+v; want all joined and a mark", id, st.Joined, st.HasMark, st.Mark)
		}
	}
}

// TestLeader_FollowsTheNodesStatuses drives a lone coordinator with node
// statuses published by hand (the leader hears no reports: package doc):
// it proposes the joins once every node has spoken, a progress mark each
// time the slowest node's window passes a multiple of MarkEvery, reports
// the slowest node's window and start in its status, ignores a status
// published on another node's subject, asks the nodes to resend when the
// statuses show no progress for StallAfter, and commits the finish once
// every node says it finished.
func TestLeader_FollowsTheNodesStatuses(t *testing.T) {
	b, err := scenario.Load("s.yaml", []byte(scenarioYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, 3)
	if err != nil {
		t.Fatal(err)
	}
	connect := loopbackNATS(t)
	const run = "statuses"
	subj, _ := wire.NewSubjects(run)
	nc := connect()
	var mu sync.Mutex
	var last wire.Status
	resyncs := 0
	for _, s := range []string{subj.Status(), subj.Resync()} {
		if _, err := nc.Subscribe(s, func(msg *nats.Msg) {
			mu.Lock()
			defer mu.Unlock()
			if msg.Subject == subj.Resync() {
				resyncs++
				return
			}
			if m, err := wire.Decode(msg.Data); err == nil && m.Control != nil {
				_ = m.Control.UnmarshalBody(&last)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	port := freePorts(t, 1)[0]
	peer := coordinator.Peer{ID: "c1", Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	c, err := coordinator.Start(coordinator.Config{Conn: connect(), Run: run, Setup: deploy.NewSetup(b, pl), ID: peer.ID,
		Addr: peer.Addr, Peers: []coordinator.Peer{peer}, MarkEvery: 4, StatusEvery: 5 * time.Millisecond,
		StallAfter: 100 * time.Millisecond, PeerTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	until := func(what string, ok func(st coordinator.ControlState, last wire.Status, resyncs int) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			st := c.State()
			mu.Lock()
			l, r := last, resyncs
			mu.Unlock()
			if ok(st, l, r) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: state %+v, status %+v, %d resync requests", what, st, l, r)
			}
			<-time.After(2 * time.Millisecond)
		}
	}
	until("a leader", func(_ coordinator.ControlState, l wire.Status, _ int) bool { return l.Term > 0 })
	enc := wire.NewEncoder()
	status := func(on int, st wire.NodeStatus) {
		t.Helper()
		data, err := enc.Control(wire.TypeNodeStatus, st)
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish(subj.NodeStatus(on), data); err != nil {
			t.Fatal(err)
		}
	}
	status(0, wire.NodeStatus{Partition: 0, Window: 5, Start: 500})
	status(1, wire.NodeStatus{Partition: 1, Window: 9, Start: 900})
	// Not yet every node: no joins, no progress. (Nothing the leader
	// shows tells that it took the two statuses; once the server has them
	// it does within microseconds, so a wrong join or mark would mostly
	// show here. A wrong mark at 5 always shows at the next check: the
	// FSM keeps it over the later mark at 3.)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if st := c.State(); slices.Contains(st.Joined, true) || st.HasMark {
		t.Fatalf("two of three nodes heard: joined %v, mark %v", st.Joined, st.HasMark)
	}
	status(2, wire.NodeStatus{Partition: 2, Window: 3, Start: 300})
	until("joins and the first mark", func(st coordinator.ControlState, l wire.Status, _ int) bool {
		return !slices.Contains(st.Joined, false) && st.HasMark && st.Mark.Window == 3 && st.Mark.Start == 300 &&
			l.Window == 3 && l.Start == 300
	})
	// A status in node 2's name on node 1's subject is ignored: node 2's
	// own next one (window 4, a multiple of 4) is then the slowest's.
	status(1, wire.NodeStatus{Partition: 2, Window: 8, Start: 800})
	status(2, wire.NodeStatus{Partition: 2, Window: 4, Start: 400})
	until("the mark at window 4", func(st coordinator.ControlState, l wire.Status, _ int) bool {
		return st.Mark.Window == 4 && l.Window == 4 && l.Start == 400
	})
	// Node 2 moves on: the slowest is node 0 at 5, past no multiple of 4
	// since the last mark.
	status(2, wire.NodeStatus{Partition: 2, Window: 10, Start: 1000})
	until("window 5", func(_ coordinator.ControlState, l wire.Status, _ int) bool {
		return l.Window == 5 && l.Start == 500 && l.Grants == 5
	})
	status(0, wire.NodeStatus{Partition: 0, Window: 7, Start: 700})
	until("window 7", func(_ coordinator.ControlState, l wire.Status, _ int) bool { return l.Window == 7 })
	if st := c.State(); st.Mark.Window != 4 {
		t.Errorf("mark at %d after the slowest moved from 4 to 5 and 7, want still 4", st.Mark.Window)
	}
	// No progress from here on: the leader asks the nodes to resend.
	mu.Lock()
	before := resyncs
	mu.Unlock()
	until("a resync request", func(_ coordinator.ControlState, _ wire.Status, r int) bool { return r > before })
	for i, w := range []uint64{12, 12, 12} {
		status(i, wire.NodeStatus{Partition: i, Window: w, Start: 1200, Finished: true})
	}
	until("the finish", func(st coordinator.ControlState, l wire.Status, _ int) bool {
		return st.Phase == coordinator.PhaseFinished && st.FinishWindow == 12 && l.Phase == "finished"
	})
	if st := c.State(); st.Mark.Window != 12 {
		t.Errorf("mark at %d after every node reached window 12 (a multiple of 4), want 12", st.Mark.Window)
	}
}
