package switchsim

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// recordAQM is a registered (not built-in) AQM that records what the
// core tells it on dequeue and drops every dropEvery-th packet there.
type recordAQM struct {
	sojourn   []sim.Time
	behind    []int64
	empties   int
	dropEvery int
	n         int
}

func (a *recordAQM) OnEnqueue(*Switch, *sim.Engine, *sim.Packet, int, int, int64) Verdict {
	return Pass
}

func (a *recordAQM) OnDequeue(_ *Switch, _ *sim.Engine, pkt *sim.Packet, _, _ int, sojourn sim.Time, behind int64) Verdict {
	if pkt == nil {
		a.empties++
		return Pass
	}
	a.sojourn = append(a.sojourn, sojourn)
	a.behind = append(a.behind, behind)
	a.n++
	if a.dropEvery > 0 && a.n%a.dropEvery == 0 {
		return Drop
	}
	return Pass
}

func (*recordAQM) NeedsSojourn()     {}
func (*recordAQM) DecidesOnDequeue() {}

// recordRegistry is the built-ins plus "record", which hands out a.
func recordRegistry(t *testing.T, a *recordAQM) *Registry {
	t.Helper()
	r := Builtins()
	if err := r.Register(Module{Stage: StageAQM, Name: "record", New: func(*Options, *Env) (any, error) { return a, nil }}); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestModules_SojournAndBacklogReachTheAQM: ten 1000-byte packets queued
// at once on an idle 10 Gb/s port leave 800 ns apart; the first starts at
// once (sojourn 0, nothing behind it yet), packet k waited k × 800 ns,
// and leaves (9 − k) × 1000 bytes behind it.
func TestModules_SojournAndBacklogReachTheAQM(t *testing.T) {
	a := &recordAQM{}
	cfg := Config{Registry: recordRegistry(t, a), Modules: Pipeline{AQM: ModuleRef{Name: "record"}}}
	s, e := multiSwitch(t, 1, topologies.QueueConfig{Buffer: 1 << 20}, cfg)
	for range 10 {
		put(s, e, 0, 1000, 0, -1)
	}
	out := drain(s, e, sim.Never)
	if len(out) != 10 || len(a.sojourn) != 10 {
		t.Fatalf("want 10 packets delivered and seen, got %d and %d", len(out), len(a.sojourn))
	}
	tx := (10 * sim.GbitPerSecond).TxTime(1000)
	for k := range 10 {
		if want := sim.Time(k) * tx; a.sojourn[k] != want {
			t.Errorf("packet %d: sojourn %v, want %v", k, a.sojourn[k], want)
		}
		want := int64(9-k) * 1000
		if k == 0 {
			want = 0
		}
		if a.behind[k] != want {
			t.Errorf("packet %d: behind %d bytes, want %d", k, a.behind[k], want)
		}
	}
}

// TestModules_DropOnDequeueFreesTheBuffer: a registered AQM that drops
// every third packet on dequeue: the others leave in order, the drops
// are counted, the buffer ends empty, and the core reports the class
// queue running empty after the last drop.
func TestModules_DropOnDequeueFreesTheBuffer(t *testing.T) {
	a := &recordAQM{dropEvery: 3}
	cfg := Config{Registry: recordRegistry(t, a), Modules: Pipeline{AQM: ModuleRef{Name: "record"}}}
	s, e := multiSwitch(t, 1, topologies.QueueConfig{Buffer: 1 << 20}, cfg)
	for i := range 9 {
		p := put(s, e, 0, 1000, 0, -1)
		e.Pool.Get(p).ID = uint64(i)
	}
	out := drain(s, e, sim.Never)
	var got []uint64
	for _, d := range out {
		got = append(got, d.pkt.ID)
	}
	want := []uint64{0, 1, 3, 4, 6, 7}
	if len(got) != len(want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delivered %v, want %v", got, want)
		}
	}
	pt := &s.Ports[0]
	if pt.Dropped != 3 || pt.Occupancy() != 0 || e.Pool.Live() != 0 {
		t.Fatalf("want 3 drops, an empty buffer and no live packet; got %d, %d bytes, %d live", pt.Dropped, pt.Occupancy(), e.Pool.Live())
	}
	if a.empties != 1 {
		t.Errorf("want the queue reported empty once (after dropping the last packet), got %d", a.empties)
	}
}

func TestModules_DrillAvoidsTheLoadedPort(t *testing.T) {
	s, e := multiSwitch(t, 4, topologies.QueueConfig{Buffer: 1 << 20}, Config{})
	for range 20 {
		put(s, e, 0, 1000, 0, -1) // port 0 holds 20 kB
	}
	d := newDrill(2, 1)
	next := []int32{0, 1, 2, 3}
	var n [4]int
	for range 200 {
		n[d.Forward(s, e, &sim.Packet{}, next)]++
	}
	if n[0] > 1 {
		t.Errorf("DRILL(2,1) sent %d of 200 packets to the loaded port (at most the first, before it remembers a port)", n[0])
	}
	for p := 1; p < 4; p++ {
		if n[p] == 0 {
			t.Errorf("port %d never chosen among equally idle ports: %v", p, n)
		}
	}
}

func TestModules_StrictIgnoresWeights(t *testing.T) {
	s, e := multiSwitch(t, 1, topologies.QueueConfig{Buffer: 1 << 30},
		Config{Classes: []Class{{Weight: 3}, {Weight: 1}}, Modules: Pipeline{Schedule: ModuleRef{Name: "strict"}}})
	for range 5 {
		put(s, e, 0, 1500, 0, -1)
		put(s, e, 0, 1500, 1, -1)
	}
	var got []int
	for _, d := range drain(s, e, sim.Never) {
		got = append(got, d.class)
	}
	// The first class-0 packet was in service before the others came.
	want := []int{0, 1, 1, 1, 1, 1, 0, 0, 0, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("departures %v, want %v (class 1 first, whatever the weights)", got, want)
		}
	}
}

func TestRegistry_Errors(t *testing.T) {
	r := Builtins()
	env := &Env{Classes: 1, Config: &Config{}}
	for _, tc := range []struct {
		st   Stage
		ref  ModuleRef
		want string
	}{
		{StageAQM, ModuleRef{Name: "pie"}, `unknown aqm module "pie" (known: ecn, droptail, step, red, codel)`},
		{StageAQM, ModuleRef{Name: "codel", Options: map[string]string{"target": "5"}}, `aqm module codel: unknown option "target"`},
		{StageAQM, ModuleRef{Name: "codel", Options: map[string]string{"target_us": "x"}}, `aqm module codel: option target_us: want a number in [0, 1e+09], got "x"`},
		{StageAQM, ModuleRef{Name: "step"}, `aqm module step: option k_bytes: required`},
		{StageBuffer, ModuleRef{Name: "dynamic"}, `buffer module dynamic: option size_bytes: required`},
		{StageForward, ModuleRef{Name: "drill", Options: map[string]string{"samples": "17"}}, `forward module drill: option samples: want a whole number in [1, 16], got "17"`},
	} {
		_, err := r.Build(tc.st, tc.ref, env)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s %+v: want error %q, got %v", tc.st, tc.ref, tc.want, err)
		}
	}
	var oe *OptionError
	if _, err := r.Build(StageAQM, ModuleRef{Name: "red", Options: map[string]string{"min_bytes": "10", "max_bytes": "5"}}, env); !errors.As(err, &oe) || oe.Key != "max_bytes" {
		t.Errorf("red with max < min: want an OptionError on max_bytes, got %v", err)
	}
	if err := r.Register(Module{Stage: StageAQM, Name: "codel", New: newCoDelAQM}); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("registering codel twice: want an error, got %v", err)
	}
	if err := r.Register(Module{Stage: StageAQM, Name: "bad", New: func(*Options, *Env) (any, error) { return ecmp{}, nil }}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Build(StageAQM, ModuleRef{Name: "bad"}, env); err == nil || !strings.Contains(err.Error(), "does not implement") {
		t.Errorf("a forwarder registered as an AQM: want an error, got %v", err)
	}
}

// TestRegistry_EveryBuiltinBuildsWithItsDocumentedOptions: the option
// keys `lockstep switch list` documents are exactly the keys each
// module reads (given a value, none is unknown), and every built-in
// builds for a switch with ports and classes.
func TestRegistry_EveryBuiltinBuildsWithItsDocumentedOptions(t *testing.T) {
	r := Builtins()
	sample := map[string]string{"gap_us": "10", "samples": "3", "memory": "2", "size_bytes": "1000000", "reserved_bytes": "1000",
		"k_bytes": "1000", "on": "dequeue", "min_bytes": "100", "max_bytes": "1000", "pmax": "0.5", "target_us": "5",
		"interval_us": "50", "mtu_bytes": "4096", "ecn": "true", "quantum_bytes": "3000", "header_bytes": "80", "queue_bytes": "8000"}
	env := &Env{Ports: make([]Port, 4), Classes: 2, Config: &Config{Classes: []Class{{Weight: 1}, {}}}}
	for _, st := range Stages {
		if len(r.Modules(st)) == 0 {
			t.Errorf("stage %s has no module", st)
		}
		for _, m := range r.Modules(st) {
			opts := map[string]string{}
			for _, o := range m.Options {
				v, ok := sample[o.Key]
				if !ok {
					t.Fatalf("%s %s: no sample value for option %s", st, m.Name, o.Key)
				}
				opts[o.Key] = v
			}
			if _, err := r.Build(st, ModuleRef{Name: m.Name, Options: opts}, env); err != nil {
				t.Errorf("%s %s with its documented options: %v", st, m.Name, err)
			}
		}
	}
}
