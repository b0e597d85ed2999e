package switchsim

import (
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// stormRig is multiSwitch with 2 ports, one lossless class and a control
// class, and the storm watchdog: detection 100us, restoration 200us.
func stormRig(t *testing.T, action StormAction) (*Switch, *sim.Engine) {
	t.Helper()
	cfg := Config{Classes: []Class{{Lossless: true}, {}}, ControlClass: 1,
		PFC: PFC{XOFF: 1 << 20, XON: 1 << 19, Headroom: 1 << 20,
			Storm: &StormWatchdog{Detect: 100 * sim.Microsecond, Restore: 200 * sim.Microsecond, Action: action}}}
	return multiSwitch(t, 2, topologies.QueueConfig{Buffer: 1 << 20}, cfg)
}

// pauseAt runs the rig to time at (collecting what reached the sink into
// out) and delivers a PAUSE of q quanta for class 0 by port 0 then.
func pauseAt(s *Switch, e *sim.Engine, at sim.Time, q uint16, out *[]delivered) {
	*out = append(*out, drain(s, e, at)...)
	e.SetNow(at)
	p := e.Pool.Alloc()
	pk := e.Pool.Get(p)
	pk.Flags, pk.Size = sim.FlagPause, sim.PauseFrameSize
	pk.SetPauseQuanta(0, q)
	s.OnArrive(e, p, 0)
}

// count is the class-0 data packets of out that left by port.
func count(out []delivered, port int) int {
	n := 0
	for _, d := range out {
		if d.port == port && d.class == 0 && d.pkt.Flags&sim.FlagData != 0 {
			n++
		}
	}
	return n
}

// TestStormWatchdog_DropDetectsMitigatesRestores: port 0's peer pauses
// class 0 at 10us with the largest quanta and refreshes it every 100us
// until 410us, while 4 packets wait. At 10us + 100us the queue has been
// paused without a break and holds packets: a storm. The drop action
// discards the 4 packets, a packet routed to port 0 and one arriving by
// port 0 (both class 0), but not class 1's; the refreshes are counted and
// ignored. The last PAUSE came at 410us, so the port honours PAUSE frames
// again at 610us, not before.
func TestStormWatchdog_DropDetectsMitigatesRestores(t *testing.T) {
	s, e := stormRig(t, StormDrop)
	var out []delivered
	pauseAt(s, e, 10*sim.Microsecond, 0xffff, &out)
	for range 4 {
		put(s, e, 0, 1000, 0, 1)
	}
	k := s.Ports[0].Class(0)
	if k.FirstPaused != 10*sim.Microsecond || k.Storms != 0 {
		t.Fatalf("want first paused at 10us and no storm yet, got %v, %d", k.FirstPaused, k.Storms)
	}
	out = append(out, drain(s, e, 110*sim.Microsecond)...)
	if k := s.Ports[0].Class(0); k.Storms != 0 || s.Ports[0].class(0).q.Len() != 4 {
		t.Fatalf("before 110us: want no storm and 4 packets queued, got %d storms, %d queued", k.Storms, s.Ports[0].class(0).q.Len())
	}
	out = append(out, drain(s, e, 110*sim.Microsecond+1)...)
	k = s.Ports[0].Class(0)
	if k.Storms != 1 || k.StormDrops != 4 || s.Ports[0].class(0).q.Len() != 0 || s.Ports[0].Occupancy() != 0 {
		t.Fatalf("at 110us: want a storm and the 4 queued packets dropped, got %d storms, %d storm drops, %d queued, %d bytes",
			k.Storms, k.StormDrops, s.Ports[0].class(0).q.Len(), s.Ports[0].Occupancy())
	}
	if pt := s.Ports[0].PausedTime(0, 300*sim.Microsecond); pt != 100*sim.Microsecond {
		t.Errorf("paused time: want the 100us until the storm, got %v", pt)
	}
	for _, at := range []sim.Time{150 * sim.Microsecond, 250 * sim.Microsecond, 350 * sim.Microsecond, 410 * sim.Microsecond} {
		pauseAt(s, e, at, 0xffff, &out)
		if s.paused(e, &s.Ports[0], 0) {
			t.Fatalf("at %v: the refresh was applied during the storm", at)
		}
	}
	put(s, e, 0, 1000, 0, 1)  // to the stormy port: dropped
	put(s, e, 1, 1000, 0, 0)  // from it: dropped
	put(s, e, 1, 1000, 0, -1) // elsewhere: goes
	put(s, e, 0, 1000, 1, 1)  // class 1 to it: goes
	out = append(out, drain(s, e, 610*sim.Microsecond)...)
	k = s.Ports[0].Class(0)
	if k.StormDrops != 6 || s.Ports[0].Dropped != 6 || k.Restores != 0 || k.PausesRecv != 5 {
		t.Fatalf("before 610us: want 6 storm drops on port 0's class 0 (4 queued, 1 to it, 1 from it), no restore, 5 PAUSE frames counted; got %d, %d, %d, %d",
			k.StormDrops, s.Ports[0].Dropped, k.Restores, k.PausesRecv)
	}
	if n0, n1 := count(out, 0), count(out, 1); n0 != 0 || n1 != 1 {
		t.Fatalf("class 0 sent by port 0: %d (want 0), by port 1: %d (want 1)", n0, n1)
	}
	out = append(out, drain(s, e, 610*sim.Microsecond+1)...)
	if k := s.Ports[0].Class(0); k.Restores != 1 || s.storming != 0 {
		t.Fatalf("at 610us: want the port restored, got %d restores, %d storming", k.Restores, s.storming)
	}
	// Restored: a PAUSE stops the class again, and packets are queued.
	pauseAt(s, e, 700*sim.Microsecond, 1000, &out)
	put(s, e, 0, 1000, 0, 1)
	if !s.paused(e, &s.Ports[0], 0) || s.Ports[0].class(0).q.Len() != 1 {
		t.Fatalf("after the restore: want class 0 paused and its packet queued")
	}
	// Every dropped packet went back to the pool: the one queued is the
	// only packet left.
	if n := e.Pool.Live(); n != 1 {
		t.Errorf("want 1 live packet (the one queued), got %d", n)
	}
}

// TestStormWatchdog_ForwardSendsThroughThePause: with the forward action
// the 3 queued packets leave at the storm (110us) although the peer's
// pause would last 3.4ms, and later ones go too; nothing is dropped.
func TestStormWatchdog_ForwardSendsThroughThePause(t *testing.T) {
	s, e := stormRig(t, StormForward)
	var out []delivered
	pauseAt(s, e, 10*sim.Microsecond, 0xffff, &out)
	for range 3 {
		put(s, e, 0, 1000, 0, 1)
	}
	out = append(out, drain(s, e, 110*sim.Microsecond)...)
	if count(out, 0) != 0 {
		t.Fatalf("a packet left during the pause")
	}
	// The first leaves at 110us and arrives a serialisation and the link's
	// 1us later; the others follow back to back.
	tx := (10 * sim.GbitPerSecond).TxTime(1000)
	first := 110*sim.Microsecond + tx + sim.Microsecond
	out = append(out, drain(s, e, first)...)
	if count(out, 0) != 0 {
		t.Fatalf("a packet arrived before %v", first)
	}
	out = append(out, drain(s, e, first+1)...)
	if count(out, 0) != 1 {
		t.Fatalf("want the first packet at %v", first)
	}
	out = append(out, drain(s, e, 200*sim.Microsecond)...)
	if n := count(out, 0); n != 3 || s.Ports[0].Dropped != 0 || s.Ports[0].Class(0).Storms != 1 {
		t.Fatalf("want 1 storm, the 3 packets sent and none dropped, got %d storms, %d sent, %d dropped",
			s.Ports[0].Class(0).Storms, n, s.Ports[0].Dropped)
	}
	pauseAt(s, e, 250*sim.Microsecond, 0xffff, &out) // ignored
	put(s, e, 0, 1000, 0, 1)
	out = append(out, drain(s, e, 300*sim.Microsecond)...)
	if n := count(out, 0); n != 4 {
		t.Fatalf("want the 4th packet sent through the ignored pause, got %d sent", n)
	}
}

// TestStormWatchdog_NoStormWithoutAWaitingPacketOrWithABreak: a pause of
// an empty queue is no storm (checked again a detection time later, it is
// one once a packet waits); a pause that lapses and starts again restarts
// the detection time.
func TestStormWatchdog_NoStormWithoutAWaitingPacketOrWithABreak(t *testing.T) {
	s, e := stormRig(t, StormDrop)
	var out []delivered
	pauseAt(s, e, 10*sim.Microsecond, 0xffff, &out)
	out = append(out, drain(s, e, 150*sim.Microsecond)...)
	if k := s.Ports[0].Class(0); k.Storms != 0 {
		t.Fatalf("an empty paused queue was taken for a storm")
	}
	put(s, e, 0, 1000, 0, 1) // at 110us+: checked again at 210us
	out = append(out, drain(s, e, 210*sim.Microsecond)...)
	if k := s.Ports[0].Class(0); k.Storms != 0 {
		t.Fatalf("storm before 210us")
	}
	out = append(out, drain(s, e, 210*sim.Microsecond+1)...)
	if k := s.Ports[0].Class(0); k.Storms != 1 {
		t.Fatalf("want a storm at 210us, got %d", k.Storms)
	}

	s, e = stormRig(t, StormDrop)
	out = nil
	q := uint16(1000) // 51.2us at 10 Gb/s
	pauseAt(s, e, 10*sim.Microsecond, q, &out)
	put(s, e, 0, 1000, 0, 1)
	// Lapses at 61.2us; paused again at 70us: the check is at 170us.
	pauseAt(s, e, 70*sim.Microsecond, 0xffff, &out)
	out = append(out, drain(s, e, 170*sim.Microsecond)...)
	if k := s.Ports[0].Class(0); k.Storms != 0 || count(out, 0) != 1 {
		t.Fatalf("want the packet sent in the lapse and no storm by 170us, got %d sent, %d storms", count(out, 0), k.Storms)
	}
	put(s, e, 0, 1000, 0, 1)
	out = append(out, drain(s, e, 170*sim.Microsecond+1)...)
	if k := s.Ports[0].Class(0); k.Storms != 1 {
		t.Fatalf("want a storm at 170us, got %d", k.Storms)
	}
}
