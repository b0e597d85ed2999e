package fabric_test

import (
	"testing"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// The storm fabric: 4 leaves of 4 hosts, 2 spines, 100 Gb/s, 1us, one
// lossless class (XOFF 32 KiB, XON 16 KiB) and a control class. Host 0's
// receive pipeline stalls from 0 to 1ms (the storm source, on leaf0).
// Host 4 (leaf1) starts a flow to host 0 at 0, alone until 30us; then
// every other host of leaves 1-3 but hosts 5 and 9 sends to host 0 too,
// and the victim goes from host 5 (leaf1) to host 9 (leaf2): it never
// touches leaf0 or host 0.
const (
	stormUntil = sim.Millisecond
	victimSize = 2 << 20
	stormMTU   = 4096
)

func stormFlows() []hostsim.FlowSpec {
	flows := []hostsim.FlowSpec{{ID: 0, Src: 5, Dst: 9, Size: victimSize, Start: 30 * sim.Microsecond},
		{ID: 1, Src: 4, Dst: 0, Size: 256 << 10}}
	for h := 6; h < 16; h++ {
		if h != 9 {
			flows = append(flows, hostsim.FlowSpec{ID: int32(len(flows)), Src: h, Dst: 0, Size: 256 << 10, Start: 30 * sim.Microsecond})
		}
	}
	return flows
}

func stormSwitch(watchdog *switchsim.StormWatchdog) switchsim.Config {
	return switchsim.Config{Classes: []switchsim.Class{{Lossless: true, Alpha: 1}, {Alpha: 1}}, ControlClass: 1,
		PFC: switchsim.PFC{XOFF: 32 << 10, XON: 16 << 10, Storm: watchdog}}
}

// stormRun is a storm run, stopped at the times asked for.
type stormRun struct {
	f      *fabric.Fabric
	topo   *topologies.Topology
	victim []uint64 // the victim's bytes received at each stop
}

func runStorm(t *testing.T, storm bool, sw switchsim.Config, nicWatchdog sim.Time, stops ...sim.Time) *stormRun {
	t.Helper()
	topo := leafSpine(t, 4, 2, 4, 1<<20)
	cfg := hostsim.DefaultConfig()
	cfg.MTU = stormMTU
	cfg.CC.InitCwnd = 100 // the first flow sends at line rate
	cfg.RTO.Min = sim.Millisecond
	cfg.RTO.Initial = 2 * sim.Millisecond
	fc := fabric.Config{Topo: topo, Flows: stormFlows(), Transport: cfg, Seed: 1, Switch: sw}
	if storm {
		fc.Storms = []fabric.HostStorm{{Host: 0, Storm: hostsim.Storm{At: 0, Until: stormUntil, Watchdog: nicWatchdog}}}
	}
	f, err := fabric.New(fc)
	if err != nil {
		t.Fatal(err)
	}
	r := &stormRun{f: f, topo: topo}
	for _, at := range stops {
		f.RunUntil(at)
		r.victim = append(r.victim, f.Transport().Records[0].BytesReceived)
	}
	return r
}

// node is the topology node named name.
func (r *stormRun) node(t *testing.T, name string) int {
	t.Helper()
	for i, n := range r.topo.Nodes {
		if n.Name == name {
			return i
		}
	}
	t.Fatalf("no node %s", name)
	return -1
}

// port is switch a's port towards node b's class 0 counters.
func (r *stormRun) port(t *testing.T, a, b string) switchsim.ClassCounters {
	t.Helper()
	s, peer := r.f.Switch(r.node(t, a)), r.node(t, b)
	for i := range s.Ports {
		if int(s.Ports[i].Peer) == peer {
			return s.Ports[i].Class(0)
		}
	}
	t.Fatalf("%s has no port to %s", a, b)
	return switchsim.ClassCounters{}
}

// TestPFCStorm_SpreadsTierByTierAndStallsAVictim: host 0's stalled NIC
// pauses leaf0, leaf0 the spines, the spines the other leaves, and those
// leaves their hosts; the victim between two healthy hosts of leaves 1
// and 2 stops during the storm and finishes only after it. The first
// pauses of each tier are derived by hand from the line-rate flow from
// host 4 (T = 4096 B at 100 Gb/s = 327.68ns, d = 1us; packet k leaves
// host 4 at (k-1)T): XOFF 32 KiB is exceeded by the 9th packet held, and
// a hop that gets a PAUSE finishes the packet in service:
//
//   - host 0 gets packet k at kT + 4d + 3T; the 9th goes over XOFF: its
//     first PAUSE at 12T + 4d (T1 = 0 plus the buffer's filling).
//   - leaf0 gets packet k at a_k = kT + 3d + 2T and sends it at once until
//     the PAUSE arrives at 12T + 5d + 64B/r; packet 16 is then in service
//     (a_16 < 12T+5d+5.12ns < a_17), so packets 17.. pile up and the 9th
//     of them, packet 25, makes leaf0's first PAUSE to the spine: 27T+3d.
//   - the spine gets packet k at (k+1)T + 2d; the PAUSE arrives at
//     27T + 4d + 5.12ns, packet 32 is in service, 33..41 pile up: the
//     spine's first PAUSE to leaf1 at 42T + 2d.
//   - leaf1 gets packet k at kT + d; the PAUSE arrives at 42T + 3d +
//     5.12ns, packet 48 is in service, 49..57 pile up: leaf1's first
//     PAUSE to host 4 at 57T + d.
func TestPFCStorm_SpreadsTierByTierAndStallsAVictim(t *testing.T) {
	stops := []sim.Time{200 * sim.Microsecond, 900 * sim.Microsecond, 20 * sim.Millisecond}
	r := runStorm(t, true, stormSwitch(nil), 0, stops...)
	T, d := (100 * sim.GbitPerSecond).TxTime(stormMTU), sim.Microsecond
	p64 := (100 * sim.GbitPerSecond).TxTime(sim.PauseFrameSize) + d
	// Which spine carried host 4's flow: the one that paused leaf1 first.
	spine := "spine0"
	if a, b := r.port(t, "leaf1", "spine0").FirstPaused, r.port(t, "leaf1", "spine1").FirstPaused; b != 0 && (a == 0 || b < a) {
		spine = "spine1"
	}
	h0 := r.f.Host(0).PFC(0)
	for _, c := range []struct {
		what      string
		sent, got sim.Time
	}{
		{"host 0's first PAUSE", 12*T + 4*d, h0.FirstPauseSent},
		{"leaf0 paused towards host 0", 12*T + 4*d + p64, r.port(t, "leaf0", "h0").FirstPaused},
		{"leaf0's first PAUSE to " + spine, 27*T + 3*d, r.port(t, "leaf0", spine).FirstPauseSent},
		{spine + " paused towards leaf0", 27*T + 3*d + p64, r.port(t, spine, "leaf0").FirstPaused},
		{spine + "'s first PAUSE to leaf1", 42*T + 2*d, r.port(t, spine, "leaf1").FirstPauseSent},
		{"leaf1 paused towards " + spine, 42*T + 2*d + p64, r.port(t, "leaf1", spine).FirstPaused},
		{"leaf1's first PAUSE to host 4", 57*T + d, r.port(t, "leaf1", "h4").FirstPauseSent},
		{"host 4 paused", 57*T + d + p64, r.f.Host(4).PFC(0).FirstPaused},
	} {
		if c.got != c.sent {
			t.Errorf("%s: want %v (derived), got %v", c.what, c.sent, c.got)
		}
	}
	// Every tier: the other spine and leaves too, and the victim's
	// sender, though neither it nor its path touch leaf0.
	for _, pair := range [][2]string{{"leaf0", "spine0"}, {"leaf0", "spine1"}, {"spine0", "leaf1"}, {"spine1", "leaf1"},
		{"spine0", "leaf2"}, {"spine1", "leaf2"}, {"spine0", "leaf3"}, {"spine1", "leaf3"}, {"leaf1", "h5"}} {
		if k := r.port(t, pair[0], pair[1]); k.PausesSent == 0 {
			t.Errorf("%s sent %s no PAUSE frame", pair[0], pair[1])
		}
	}
	if r.f.Host(5).PFC(0).FirstPaused == 0 {
		t.Errorf("the victim's sender was never paused")
	}
	v := r.victim
	t.Logf("victim bytes received: %d by 200us, %d by 900us, %d by 20ms; host 0 sent %d PAUSE frames, dropped %d",
		v[0], v[1], v[2], h0.PausesSent, h0.RxDrops)
	if v[1] != v[0] || v[0] >= victimSize/2 {
		t.Errorf("want the victim stalled from 200us to 900us (storm until 1ms), got %d then %d bytes", v[0], v[1])
	}
	rec := r.f.Transport().Records[0]
	if !rec.Finished || rec.Finish < stormUntil {
		t.Errorf("want the victim done after the storm (%v), got finished %v at %v", stormUntil, rec.Finished, rec.Finish)
	}
	// Without the storm the same flows finish the victim at once.
	calm := runStorm(t, false, stormSwitch(nil), 0, 900*sim.Microsecond)
	if calm.victim[0] != victimSize {
		t.Errorf("without the storm: want the victim done by 900us, got %d bytes", calm.victim[0])
	}
	if c := r.f.Conservation(); c.Balance() != 0 {
		t.Errorf("conservation: %+v", c)
	}
}

// TestPFCStorm_WatchdogFreesTheVictim: with the switches' storm
// watchdog (detection 100us, restoration 200us), leaf0's port to host 0,
// paused without a break since host 0's first PAUSE arrived, is found in
// a storm 100us later; the drop action empties it, the pause recedes, and
// the victim finishes during the storm. Only that port triggers: the
// others were unpaused before their own 100us. The NIC's own watchdog
// frees the victim too: it stops host 0's PAUSE frames, the last one
// expires, and host 0's NIC drops what its ToR sends it.
func TestPFCStorm_WatchdogFreesTheVictim(t *testing.T) {
	T, d := (100 * sim.GbitPerSecond).TxTime(stormMTU), sim.Microsecond
	p64 := (100 * sim.GbitPerSecond).TxTime(sim.PauseFrameSize) + d
	for _, c := range []struct {
		name   string
		action switchsim.StormAction
		nic    sim.Time
	}{
		{"switch watchdog, drop", switchsim.StormDrop, 0},
		{"NIC watchdog", 0, 50 * sim.Microsecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			var wd *switchsim.StormWatchdog
			if c.action != 0 {
				wd = &switchsim.StormWatchdog{Detect: 100 * sim.Microsecond, Restore: 200 * sim.Microsecond, Action: c.action}
			}
			r := runStorm(t, true, stormSwitch(wd), c.nic, 900*sim.Microsecond, 50*sim.Millisecond)
			rec := r.f.Transport().Records[0]
			t.Logf("victim done at %v; host 0: %d PAUSE frames, %d dropped, NIC watchdog trips %d",
				rec.Finish, r.f.Host(0).PFC(0).PausesSent, r.f.Host(0).RxDrops(), r.f.Host(0).PFC(0).Trips)
			if !rec.Finished || rec.Finish >= stormUntil || r.victim[0] != victimSize {
				t.Fatalf("want the victim done during the storm (before %v), got finished %v at %v, %d bytes by 900us",
					stormUntil, rec.Finished, rec.Finish, r.victim[0])
			}
			for i, f := range r.f.Transport().Records {
				if !f.Finished {
					t.Errorf("flow %d unfinished by 50ms", i)
				}
			}
			if c.action == 0 {
				if k := r.f.Host(0).PFC(0); k.Trips != 1 || k.Restores != 1 || r.f.Host(0).RxDrops() == 0 {
					t.Errorf("NIC watchdog: want 1 trip, 1 restore and drops at host 0, got %d, %d, %d", k.Trips, k.Restores, r.f.Host(0).RxDrops())
				}
				return
			}
			tor := r.port(t, "leaf0", "h0")
			if at := 12*T + 4*d + p64 + 100*sim.Microsecond; tor.Storms != 1 || tor.Restores != 1 {
				t.Errorf("leaf0's port to host 0: want 1 storm (at %v) and 1 restore, got %d, %d", at, tor.Storms, tor.Restores)
			}
			if tor.StormDrops == 0 {
				t.Errorf("drop action: want packets dropped at leaf0's port to host 0")
			}
			var others uint64
			for n := 0; n < r.f.NumNodes(); n++ {
				if s := r.f.Switch(n); s != nil {
					for i := range s.Ports {
						others += s.Ports[i].Class(0).Storms
					}
				}
			}
			if others != 1 {
				t.Errorf("want the storm found at leaf0's port to host 0 only, got %d storms in all", others)
			}
			if c := r.f.Conservation(); c.Balance() != 0 {
				t.Errorf("conservation: %+v", c)
			}
		})
	}
}

// TestPFCStorm_ForwardSendsToTheDeadHost: with the forward action,
// leaf0's port to host 0 is found in a storm 100us after its pause began
// and sends to host 0 through its pauses, whose NIC drops what does not
// fit. The incast to host 0 keeps leaf0's other ports paused for the
// detection time too, so the watchdog also triggers upstream, those ports
// ignore the PAUSE frames, and lossless packets overflow the headroom
// there: a lossless class made lossy, whose losses wait for RTOs. Every
// flow still finishes.
func TestPFCStorm_ForwardSendsToTheDeadHost(t *testing.T) {
	wd := &switchsim.StormWatchdog{Detect: 100 * sim.Microsecond, Restore: 200 * sim.Microsecond, Action: switchsim.StormForward}
	r := runStorm(t, true, stormSwitch(wd), 0, 900*sim.Microsecond, 50*sim.Millisecond)
	tor := r.port(t, "leaf0", "h0")
	var storms, headroom uint64
	for n := 0; n < r.f.NumNodes(); n++ {
		if s := r.f.Switch(n); s != nil {
			for i := range s.Ports {
				storms += s.Ports[i].Class(0).Storms
				headroom += s.Ports[i].Class(0).HeadroomDrops
			}
		}
	}
	h0 := r.f.Host(0)
	t.Logf("leaf0 -> h0: %d storms, %d storm drops; %d storms and %d headroom drops in all; host 0 dropped %d; victim %d bytes by 900us, done at %v",
		tor.Storms, tor.StormDrops, storms, headroom, h0.RxDrops(), r.victim[0], r.f.Transport().Records[0].Finish)
	if tor.Storms == 0 || tor.StormDrops != 0 || h0.RxDrops() == 0 {
		t.Errorf("want a storm at leaf0's port to host 0, nothing dropped there by the watchdog, and drops at host 0's NIC; got %d, %d, %d",
			tor.Storms, tor.StormDrops, h0.RxDrops())
	}
	if storms <= tor.Storms || headroom == 0 {
		t.Errorf("want storms found upstream too and headroom drops, got %d storms in all, %d headroom drops", storms, headroom)
	}
	for i, f := range r.f.Transport().Records {
		if !f.Finished {
			t.Errorf("flow %d unfinished by 50ms", i)
		}
	}
	if c := r.f.Conservation(); c.Balance() != 0 {
		t.Errorf("conservation: %+v", c)
	}
}
