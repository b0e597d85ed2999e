package cc

import (
	"errors"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// The conversions of include/linux/jiffies.h (2.6.3x), worked by hand:
// msecs_to_jiffies(m) = (m + 1000/HZ - 1) / (1000/HZ) when HZ divides 1000,
// (m*HZ + 999)/1000 otherwise; usecs_to_jiffies likewise with 10^6;
// jiffies_to_usecs(j) = (10^6/HZ)*j, or j*10^6/HZ truncated (HZ = 300).
func TestJiffies_ConversionsRoundAsJiffiesH(t *testing.T) {
	for _, c := range []struct {
		what      string
		got, want uint32
	}{
		{"msecs_to_jiffies(2) HZ=100: (2+9)/10", msecsToJiffiesHZ(2, 100), 1},
		{"msecs_to_jiffies(2) HZ=250: (2+3)/4", msecsToJiffiesHZ(2, 250), 1},
		{"msecs_to_jiffies(2) HZ=300: (600+999)/1000", msecsToJiffiesHZ(2, 300), 1},
		{"msecs_to_jiffies(2) HZ=1000", msecsToJiffiesHZ(2, 1000), 2},
		{"msecs_to_jiffies(11) HZ=250: (11+3)/4", msecsToJiffiesHZ(11, 250), 3},
		{"usecs_to_jiffies(8000) HZ=250: (8000+3999)/4000", usecsToJiffiesHZ(8000, 250), 2},
		{"usecs_to_jiffies(8001) HZ=250: rounds up", usecsToJiffiesHZ(8001, 250), 3},
		{"usecs_to_jiffies(11300) HZ=1000", usecsToJiffiesHZ(11300, 1000), 12},
		{"usecs_to_jiffies(3333) HZ=300: (3333*300+999999)/10^6", usecsToJiffiesHZ(3333, 300), 1},
		{"jiffies_to_usecs(3) HZ=250", jiffiesToUsecsHZ(3, 250), 12000},
		{"jiffies_to_usecs(1) HZ=300: 10^6/300 truncated", jiffiesToUsecsHZ(1, 300), 3333},
		{"jiffies at 11.999 ms, HZ=250", jiffiesHZ(11999*sim.Microsecond, 250), 2},
		{"jiffies at 12 ms, HZ=250", jiffiesHZ(12*sim.Millisecond, 250), 3},
		{"jiffies at 9999 s, HZ=1000", jiffiesHZ(9999*sim.Second, 1000), 9_999_000},
	} {
		if c.got != c.want {
			t.Errorf("%s: want %d, got %d", c.what, c.want, c.got)
		}
	}
}

// tcp_clean_rtx_queue of 2.6.29-2.6.38 gave CUBIC rtt_us =
// jiffies_to_usecs(now - when) and no sample when now - when was 0 jiffies;
// bictcp_acked made it delay = usecs_to_jiffies(rtt_us) << 3. An 11.3 ms
// RTT at HZ = 250 (4 ms ticks) crosses 2 or 3 ticks by its phase.
func TestJiffies_RTTSampleIsADifferenceOfJiffies(t *testing.T) {
	ms := func(f float64) sim.Time { return sim.Time(f * float64(sim.Millisecond)) }
	for _, c := range []struct {
		what      string
		now, rtt  sim.Time
		hz        uint32
		want      uint32
		wantValid bool
	}{
		{"sent 0.5 ms, ACK 11.8 ms: jiffies 0 -> 2", ms(11.8), ms(11.3), 250, 2 << 3, true},
		{"sent 3.9 ms, ACK 15.2 ms: jiffies 0 -> 3", ms(15.2), ms(11.3), 250, 3 << 3, true},
		{"sent 0.5 ms, ACK 3.5 ms: the same tick, no sample", ms(3.5), ms(3), 250, 0, false},
		{"sent 3.5 ms, ACK 4.5 ms: one tick crossed", ms(4.5), ms(1), 250, 1 << 3, true},
		{"HZ=100, 11.3 ms from 1 ms: jiffies 0 -> 1", ms(12.3), ms(11.3), 100, 1 << 3, true},
		{"HZ=100, 11.3 ms from 9 ms: jiffies 0 -> 2", ms(20.3), ms(11.3), 100, 2 << 3, true},
		{"HZ=1000, 11.3 ms from 0.5 ms: 11 ticks", ms(11.8), ms(11.3), 1000, 11 << 3, true},
		{"HZ=1000, 11.3 ms from 0.9 ms: 12 ticks", ms(12.2), ms(11.3), 1000, 12 << 3, true},
	} {
		got, ok := jiffiesDelaySample(c.now, c.rtt, c.hz)
		if got != c.want || ok != c.wantValid {
			t.Errorf("%s: want delay %d (sample %v), got %d (%v)", c.what, c.want, c.wantValid, got, ok)
		}
	}
}

// hzDriver runs a 2.6.29 HyStart on jiffies: slow-start rounds of cwnd
// ACKs spaced gap apart, one RTT apart, the round restarting on the first
// ACK past the previous round's SndNxt (OnSlowStartAck).
type hzDriver struct {
	h        HyStart
	now      sim.Time
	una, nxt uint64
}

// round delivers one round of n ACKs at cwnd and returns the index of the
// ACK that exited (and the event), or -1.
func (d *hzDriver) round(n int, cwnd int64, rtt, gap sim.Time) (int, HyStartEvent) {
	end := d.nxt + uint64(n)
	for i := range n {
		d.una = d.nxt + uint64(i) + 1
		a := HyStartAck{Now: d.now, RTT: rtt, SndUna: d.una, SndNxt: end, Cwnd: cwnd, InSlowStart: true}
		ev := d.h.OnAck(&a)
		d.h.OnSlowStartAck(d.now, d.una, end)
		if ev != HyStartNone {
			return i, ev
		}
		d.now += gap
	}
	d.nxt = end
	return -1, HyStartNone
}

// The mechanism behind the report's exits below 20: at HZ = 100 an 11.3 ms
// RTT is 1 jiffy whenever it crosses a single 10-ms tick (87% of phases),
// so delay_min = 1<<3 and the train threshold delay_min>>4 is 0 jiffies:
// "curr_jiffies - round_start >= 0" always holds, and the first ACK
// HyStart looks at (cwnd = hystart_low_window = 16) that comes within
// msecs_to_jiffies(2) = 1 jiffy of the last one ends slow start. At HZ =
// 1000 the same path gives delay_min = 11<<3 or 12<<3 and a threshold of
// 5 jiffies, which a 16-packet round (16 ACKs 24 us apart) never reaches.
func TestHyStart_Jiffies_HZ100ExitsAtTheLowWindow(t *testing.T) {
	rtt := 11300 * sim.Microsecond
	for _, c := range []struct {
		hz       int
		wantExit bool
	}{{100, true}, {1000, false}} {
		h, err := NewHyStartHZ(HyStartLinux2008, c.hz)
		if err != nil {
			t.Fatal(err)
		}
		// Start 1 ms past a tick: the 11.3 ms RTTs of the first ACKs
		// span 1 tick at HZ = 100; the rounds below cwnd 16 set delay_min.
		d := &hzDriver{h: h, now: sim.Second + sim.Millisecond}
		for cwnd := int64(4); cwnd < 16; cwnd *= 2 {
			if i, ev := d.round(int(cwnd), cwnd, rtt, 24*sim.Microsecond); i >= 0 {
				t.Fatalf("HZ=%d: below hystart_low_window want no exit, got %v", c.hz, ev)
			}
			d.now += rtt
		}
		i, ev := d.round(16, 16, rtt, 24*sim.Microsecond)
		switch {
		case c.wantExit && (i != 0 || ev != HyStartExitAckTrain):
			t.Errorf("HZ=%d: want an ACK-train exit on the first ACK at cwnd 16, got ACK %d, %v (delay_min %d)", c.hz, i, ev, d.h.delayMin)
		case !c.wantExit && i >= 0:
			t.Errorf("HZ=%d: a 16-ACK round 384 us long: want no exit, got ACK %d, %v", c.hz, i, ev)
		}
	}
}

// At HZ = 250 (4 ms ticks) delay_min is 2<<3 or 3<<3 and the train
// threshold 1 jiffy: a round exits iff its ACKs cross a tick boundary after
// its first ACK.
func TestHyStart_Jiffies_HZ250ExitsWhenARoundCrossesATick(t *testing.T) {
	rtt := 11300 * sim.Microsecond
	for _, c := range []struct {
		start    sim.Time // of the 16-ACK round
		wantExit int      // the ACK that exits, -1 none
	}{
		// ACKs at start + i*100 us: 1 s + 4.0 ms + 15*0.1 ms stays in one
		// tick.
		{sim.Second + 4*sim.Millisecond, -1},
		// From 1 s + 7.05 ms the 10th ACK (7.95 ms) is still in the tick
		// the round began in, the 11th (8.05 ms) in the next.
		{sim.Second + 7050*sim.Microsecond, 10},
	} {
		h, _ := NewHyStartHZ(HyStartLinux2008, 250)
		d := &hzDriver{h: h, now: c.start - 50*sim.Millisecond}
		// One round below the low window sets delay_min (2 or 3 jiffies).
		d.round(8, 8, rtt, 100*sim.Microsecond)
		d.now = c.start
		i, ev := d.round(16, 16, rtt, 100*sim.Microsecond)
		if i != c.wantExit || (i >= 0 && ev != HyStartExitAckTrain) {
			t.Errorf("round from %v: want an exit at ACK %d, got %d (%v), delay_min %d", c.start, c.wantExit, i, ev, d.h.delayMin)
		}
	}
}

// The train's spacing bound is msecs_to_jiffies(2): 1 jiffy at HZ = 250
// (4 ms ticks, rounded up), 2 jiffies at HZ = 1000. With delay_min set by
// an 11.3 ms RTT (HZ = 250: 2 or 3 jiffies, threshold delay_min>>4 = 1;
// HZ = 1000: 11 or 12 jiffies, threshold 5), a round whose ACKs come gap
// apart from 0.5 ms past a tick extends the train only when consecutive
// ACKs are at most that bound apart in jiffies, worked by hand:
//   - HZ = 250, gap 4 ms: ACK 1 is 1 jiffy after ACK 0 (<= 1), and 1 >= 1:
//     exit at ACK 1;
//   - HZ = 250, gap 8 ms: every ACK is 2 jiffies after the last (> 1): the
//     train never extends, no exit (a bound of 2 would exit at ACK 1);
//   - HZ = 1000, gap 2 ms: ACK i is 2i jiffies after the round start,
//     2 <= 2 each time, exit at the first 2i >= 5: ACK 3;
//   - HZ = 1000, gap 3 ms: 3 > 2, no exit.
func TestHyStart_Jiffies_TrainSpacingIsMsecsToJiffies2(t *testing.T) {
	rtt := 11300 * sim.Microsecond
	for _, c := range []struct {
		hz       int
		gap      sim.Time
		wantExit int
	}{
		{250, 4 * sim.Millisecond, 1},
		{250, 8 * sim.Millisecond, -1},
		{1000, 2 * sim.Millisecond, 3},
		{1000, 3 * sim.Millisecond, -1},
	} {
		h, err := NewHyStartHZ(HyStartLinux2008, c.hz)
		if err != nil {
			t.Fatal(err)
		}
		start := sim.Second + 500*sim.Microsecond
		d := &hzDriver{h: h, now: start - 200*sim.Millisecond}
		d.round(8, 8, rtt, 100*sim.Microsecond) // delay_min, below the low window
		d.now = start
		i, ev := d.round(16, 16, rtt, c.gap)
		if i != c.wantExit || (i >= 0 && ev != HyStartExitAckTrain) {
			t.Errorf("HZ=%d, ACKs %v apart: want an exit at ACK %d, got %d (%v), delay_min %d",
				c.hz, c.gap, c.wantExit, i, ev, d.h.delayMin)
		}
	}
}

// HyStart's HZ is an option of linux-2008 only, from HZ_100, HZ_250,
// HZ_300, HZ_1000; the error names the option.
func TestHyStart_HZOption(t *testing.T) {
	for _, c := range []struct {
		v  HyStartVariant
		hz int
		ok bool
	}{{HyStartLinux2008, 100, true}, {HyStartLinux2008, 250, true}, {HyStartLinux2008, 300, true},
		{HyStartLinux2008, 1000, true}, {HyStartLinux2008, 500, false}, {HyStartLinux2008, 0, false},
		{HyStartLinux2011, 250, false}, {HyStartLinux, 1000, false}} {
		_, err := NewHyStartHZ(c.v, c.hz)
		var ve *OptionValueError
		switch {
		case c.ok && err != nil:
			t.Errorf("%v HZ=%d: want ok, got %v", c.v, c.hz, err)
		case !c.ok && (!errors.As(err, &ve) || ve.Key != "hystart_hz"):
			t.Errorf("%v HZ=%d: want an OptionValueError for hystart_hz, got %v", c.v, c.hz, err)
		}
	}
	cfg := DefaultCubicConfig()
	cfg.HyStart, cfg.HyStartHZ = "linux-2008", 250
	if err := cfg.Validate(); err != nil {
		t.Fatalf("cubic linux-2008 HZ=250: want valid, got %v", err)
	}
	if c := NewCubic(cfg, 1000, 10); c.hy.HZ() != 250 {
		t.Fatalf("NewCubic: want HyStart on HZ 250, got %d", c.hy.HZ())
	}
}

// 2.6.x tcp_slow_start with tcp_abc = 0 grows one packet per ACK whatever
// the ACK acknowledges: a round of 5 ACKs of 2 packets grows a 10-packet
// window to 15 (today's kernel: to 20).
func TestCubic_TcpCong2008_SlowStartPerAck(t *testing.T) {
	for _, c := range []struct {
		slowStart string
		want      int64
	}{{"per-ack", 15}, {"linux", 20}} {
		cfg := DefaultCubicConfig()
		cfg.HyStart, cfg.SlowStart = "off", c.slowStart
		cu := NewCubic(cfg, 1000, 10)
		var una uint64
		for range 5 {
			una += 2000
			cu.OnAck(&AckEvent{Now: sim.Second, Acked: 2000, MSS: 1000, SndUna: una, SndNxt: una + 10000, CwndLimited: true})
		}
		if got := cu.Cwnd() / 1000; got != c.want {
			t.Errorf("slow_start %s: 5 ACKs of 2 packets from cwnd 10: want %d, got %d", c.slowStart, c.want, got)
		}
	}
	cfg := DefaultCubicConfig()
	cfg.HyStart, cfg.SlowStart = "hystart++", "per-ack"
	if err := cfg.Validate(); err == nil {
		t.Error("slow_start per-ack with hystart++: want an error, got nil")
	}
	cfg.HyStart, cfg.SlowStart = "linux", "exponential"
	if err := cfg.Validate(); err == nil {
		t.Error("slow_start exponential: want an error, got nil")
	}
}
