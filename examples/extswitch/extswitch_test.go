package extswitch_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/elementproto"
	"github.com/lockstep-sim/lockstep/examples/extswitch"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// fatTree is a k=4 fat-tree with small buffers, ECN by a step on the
// ToR tier (on arrival) and the core tier (on dequeue), and a switch
// latency, so that runs have queues, drops, marks and ties.
func fatTree(t *testing.T) *topologies.Topology {
	t.Helper()
	tier := func(delay sim.Time, ecn topologies.ECNConfig) topologies.TierConfig {
		return topologies.TierConfig{Rate: 100 * sim.GbitPerSecond, Delay: delay, Queue: topologies.QueueConfig{Buffer: 64 << 10, ECN: ecn}}
	}
	topo, err := topologies.FatTree(topologies.FatTreeConfig{K: 4,
		Host:          tier(sim.Microsecond, topologies.ECNConfig{Mode: topologies.ECNStep, K: 20 << 10}),
		Agg:           tier(2*sim.Microsecond, topologies.ECNConfig{}),
		Core:          tier(sim.Microsecond, topologies.ECNConfig{Mode: topologies.ECNStep, K: 16 << 10, Dequeue: true}),
		SwitchLatency: 300 * sim.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// flows: an 8-to-1 incast and a permutation across pods.
func flows() []hostsim.FlowSpec {
	var fs []hostsim.FlowSpec
	for i := range 8 {
		fs = append(fs, hostsim.FlowSpec{ID: int32(len(fs)), Src: 8 + i, Dst: 0, Size: 300 << 10})
	}
	for i := range 16 {
		fs = append(fs, hostsim.FlowSpec{ID: int32(len(fs)), Src: i, Dst: (i + 5) % 16, Size: 200 << 10, Start: sim.Time(i) * 3 * sim.Microsecond})
	}
	return fs
}

// node is the topology node named name.
func node(t *testing.T, topo *topologies.Topology, name string) int {
	for i, n := range topo.Nodes {
		if n.Name == name {
			return i
		}
	}
	t.Fatalf("no node %s", name)
	return -1
}

type run struct {
	f       *fabric.Fabric
	records []hostsim.FlowRecord
	ports   map[int][]switchsim.PortCounters // by node
}

func runFabric(t *testing.T, ext map[int]fabric.ExternalPeer) *run {
	t.Helper()
	topo := fatTree(t)
	cfg := hostsim.DefaultConfig()
	cfg.MTU = 4096
	cfg.ECN = true
	cfg.RTO.Min = sim.Millisecond
	cfg.RTO.Initial = 2 * sim.Millisecond
	f, err := fabric.New(fabric.Config{Topo: topo, Flows: flows(), Transport: cfg, Seed: 7, External: ext})
	if err != nil {
		t.Fatal(err)
	}
	for f.RunUntilBatch(sim.Second, 1<<16) {
		if f.Done() {
			break
		}
	}
	if err := f.ExternalErr(); err != nil {
		t.Fatal(err)
	}
	if !f.Done() {
		t.Fatalf("the flows did not finish")
	}
	r := &run{f: f, records: f.Transport().Records, ports: map[int][]switchsim.PortCounters{}}
	for n := range topo.Nodes {
		if s := f.Switch(n); s != nil {
			for i := range s.Ports {
				r.ports[n] = append(r.ports[n], s.Ports[i].PortCounters)
			}
		}
	}
	if c := f.Conservation(); c.Balance() != 0 {
		t.Fatalf("packets not conserved: %+v", c)
	}
	return r
}

// TestExternalSwitch_SameAsTheBuiltIn: a fat-tree whose ToR, aggregation
// and core switches on the incast's path are replaced by the external
// example switch, stepped by windows through the element protocol's
// msgpack messages, gives every flow the same record (start, finish,
// retransmissions, marks ...) as with lockstep's own switches, every
// other switch the same counters, and the external ones report the same
// counters as the switches they replace.
func TestExternalSwitch_SameAsTheBuiltIn(t *testing.T) {
	topo := fatTree(t)
	replaced := []int{node(t, topo, "tor0"), node(t, topo, "agg1"), node(t, topo, "core0"), node(t, topo, "core3")}
	builtin := runFabric(t, nil)
	ext := map[int]fabric.ExternalPeer{}
	for _, n := range replaced {
		ext[n] = extswitch.New()
	}
	got := runFabric(t, ext)
	if !reflect.DeepEqual(builtin.records, got.records) {
		for i := range builtin.records {
			if builtin.records[i] != got.records[i] {
				t.Fatalf("flow %d: built-in %+v, external %+v", i, builtin.records[i], got.records[i])
			}
		}
	}
	var marked, dropped uint64
	for n, want := range builtin.ports {
		c := got.ports[n]
		if slices := got.f.ExternalCounters(n); slices != nil {
			c = nil
			for _, x := range slices {
				c = append(c, switchsim.PortCounters{Enqueued: x.Enqueued, Dropped: x.Dropped, Marked: x.Marked, Bytes: x.Bytes,
					PeakBytes: x.PeakBytes, TxPackets: x.TxPackets})
			}
		}
		if !reflect.DeepEqual(want, c) {
			t.Errorf("node %s: built-in counters %+v, external run %+v", topo.Nodes[n].Name, want, c)
		}
		for _, p := range want {
			marked += p.Marked
			dropped += p.Dropped
		}
	}
	for _, n := range replaced {
		if got.f.ExternalCounters(n) == nil {
			t.Errorf("node %s was not replaced", topo.Nodes[n].Name)
		}
	}
	if marked == 0 || dropped == 0 {
		t.Errorf("want marks and drops in the run (so that both are compared), got %d and %d", marked, dropped)
	}
}

// faulty wraps the example switch and breaks one rule of the protocol
// in the first window whose reply spoil can break (it reports whether it
// did; arrived gives the arrival times by handle), or fails in the first
// window with departures (a transport's error).
type faulty struct {
	*extswitch.Switch
	spoil   func(r *elementproto.Reply, arrived map[uint64]int64) bool
	fail    error
	broken  bool
	arrived map[uint64]int64
}

func (f *faulty) Step(msg []byte) ([]byte, error) {
	var w elementproto.Window
	if err := elementproto.Unmarshal(msg, &w); err != nil {
		return nil, err
	}
	if f.arrived == nil {
		f.arrived = map[uint64]int64{}
	}
	for _, a := range w.Arrivals {
		f.arrived[a.Handle] = a.At
	}
	out, err := f.Switch.Step(msg)
	if err != nil || f.broken {
		return out, err
	}
	var r elementproto.Reply
	if err := elementproto.Unmarshal(out, &r); err != nil {
		return nil, err
	}
	if len(r.Departures) < 2 {
		return out, nil
	}
	if f.fail != nil {
		f.broken = true
		return nil, f.fail
	}
	if f.broken = f.spoil(&r, f.arrived); !f.broken {
		return out, nil
	}
	return elementproto.Marshal(&r)
}

// backToBack sets back by 1 ps the start of a departure that waited
// behind an earlier one of the reply on its port: it then overlaps it.
func backToBack(r *elementproto.Reply, arrived map[uint64]int64) bool {
	for j := 1; j < len(r.Departures); j++ {
		d := &r.Departures[j]
		for i := 0; i < j; i++ {
			if r.Departures[i].Port == d.Port && arrived[d.Handle] < d.Start && d.Start-1 >= r.Departures[i].Start {
				d.Start--
				return true
			}
		}
	}
	return false
}

// TestExternalSwitch_MisbehavingElementFailsTheRun: an element that sends
// a packet before it arrived, sends one it does not hold, sends more than
// it holds, changes a header bit, reports a next event in the past, or
// whose peer fails (a transport's timeout), stops the run with an error
// naming the element and the window.
func TestExternalSwitch_MisbehavingElementFailsTheRun(t *testing.T) {
	type spoiler = func(r *elementproto.Reply, arrived map[uint64]int64) bool
	first := func(f func(d *elementproto.Departure)) spoiler {
		return func(r *elementproto.Reply, _ map[uint64]int64) bool { f(&r.Departures[0]); return true }
	}
	for _, c := range []struct {
		name  string
		spoil spoiler
		fail  error
		want  string
	}{
		{"a departure before its arrival", first(func(d *elementproto.Departure) { d.Start -= 1_000_000 }), nil, "outside [max(its arrival"},
		{"a packet it does not hold", first(func(d *elementproto.Departure) { d.Handle += 1 << 40 }), nil, "which it does not hold"},
		{"too many packets", func(r *elementproto.Reply, _ map[uint64]int64) bool {
			r.Departures = append(r.Departures, r.Departures...)
			return true
		}, nil, "packets out, but it holds"},
		{"overlapping departures", backToBack, nil, "before the previous departure ends"},
		{"a changed header", first(func(d *elementproto.Departure) { d.Flags ^= 1 }), nil, "only CE may change"},
		{"the next event in the past", func(r *elementproto.Reply, _ map[uint64]int64) bool { r.Next = 0; return true }, nil, "before the window's end"},
		{"a silent peer", nil, errors.New("no reply within the peer timeout (20s)"), "no reply within the peer timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			topo := fatTree(t)
			tor := node(t, topo, "tor0")
			cfg := hostsim.DefaultConfig()
			cfg.MTU = 4096
			f, err := fabric.New(fabric.Config{Topo: topo, Flows: flows(), Transport: cfg, Seed: 7,
				External: map[int]fabric.ExternalPeer{tor: &faulty{Switch: extswitch.New(), spoil: c.spoil, fail: c.fail}}})
			if err != nil {
				t.Fatal(err)
			}
			for f.RunUntilBatch(sim.Second, 1<<16) {
			}
			err = f.ExternalErr()
			var xe *fabric.ExternalError
			if !errors.As(err, &xe) || xe.Name != "tor0" || !strings.Contains(err.Error(), c.want) ||
				!strings.HasPrefix(err.Error(), "external element tor0 (node ") {
				t.Fatalf("want an error naming tor0 and containing %q, got %v", c.want, err)
			}
		})
	}
}
