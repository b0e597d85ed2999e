package hostsim

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// A NIC whose receive pipeline stalls: the source of a PFC storm
// (docs/decisions.md "PFC storms and the watchdog").
//
// Guo et al., "RDMA over Commodity Ethernet at Scale", SIGCOMM 2016, §4.3:
// a NIC's receive pipeline stopped (a bug), its receive buffer filled,
// and the NIC, being PFC-capable, kept sending PAUSE frames to its ToR;
// the ToR paused its other ports, the pause reached the spines and from
// there the other leaves and their servers, and flows that never touched
// the faulty server stalled. §4.4 (the "slow-receiver symptom") is the
// mild form: a receive pipeline slower than the link (MTT cache misses)
// fills the buffer and sends PAUSE frames too.
//
// The model: a host with a Storm has a receive buffer in front of its
// receive pipeline, accounted per class as a switch's ingress (802.1Qbb):
// above XOFF bytes of a lossless class the NIC sends its switch a PAUSE
// frame for the class (Quanta, refreshed at half its time while above
// XON), at or below XON a PAUSE with quanta 0. Outside [At, Until) the
// pipeline keeps up with anything (the buffer stays empty: every other
// host's model); inside it drains the buffer in arrival order at Drain
// (0: not at all). When the stall ends the buffered packets are processed
// at once, in order. A lossless class may hold XOFF + Headroom bytes, a
// lossy class XOFF; beyond that a packet is dropped (RxDrops). PAUSE
// frames go out before any queued packet at the next frame boundary.
// Optional NIC storm prevention (Watchdog; Guo et al. §4.3's NIC-side
// watchdog, NVIDIA's "PFC storm prevention", mlx5 pfc_prevention_tout):
// once the pipeline has delivered nothing for Watchdog while packets
// wait, the NIC stops sending PAUSE frames, until the pipeline delivers
// again. It is checked when the NIC would refresh a pause.

// Storm makes a host's receive pipeline stall from At to Until.
type Storm struct {
	At, Until sim.Time      // Until sim.Never: to the end of the run
	Drain     sim.Bandwidth // the pipeline's rate during the stall (0: stopped)
	// XOFF, XON and Headroom (bytes) per class, as a switch's PFC.
	XOFF, XON, Headroom int64
	Quanta              uint16 // of an XOFF, in 512-bit times of the link
	// Lossless is the classes under PFC on the host's link (bit c: class c).
	Lossless uint8
	// Watchdog, when positive, is the NIC's storm prevention timeout.
	Watchdog sim.Time
}

// Check validates a Storm.
func (s *Storm) Check() error {
	switch {
	case s.At < 0 || s.Until <= s.At:
		return fmt.Errorf("pfc storm: want 0 <= at < until, got at %v, until %v", s.At, s.Until)
	case s.Drain < 0:
		return fmt.Errorf("pfc storm: drain must not be negative, got %v", s.Drain)
	case s.XOFF <= 0 || s.XON < 0 || s.XON > s.XOFF || s.Headroom < 0:
		return fmt.Errorf("pfc storm: want 0 <= xon <= xoff, xoff > 0 and headroom >= 0, got xon %d, xoff %d, headroom %d", s.XON, s.XOFF, s.Headroom)
	case s.Quanta == 0:
		return fmt.Errorf("pfc storm: quanta must be positive")
	case s.Lossless == 0:
		return fmt.Errorf("pfc storm: no lossless class on the host's link")
	case s.Watchdog < 0:
		return fmt.Errorf("pfc storm: nic watchdog must not be negative, got %v", s.Watchdog)
	}
	return nil
}

// PFCClass is one class's PFC counters at a host (EnablePFC).
type PFCClass struct {
	// PausesSent counts the PAUSE frames the NIC sent for the class (XOFF,
	// refreshes, XON), PausesRecv those its switch sent it.
	PausesSent, PausesRecv uint64
	// FirstPauseSent is when the NIC first sent an XOFF, FirstPaused when
	// its switch first paused the class (0: never).
	FirstPauseSent, FirstPaused sim.Time
	// Trips counts the NIC watchdog's trips (detected on this class's
	// refresh), Restores the times the NIC could send PAUSE frames again
	// after one (the pipeline delivered).
	Trips, Restores uint64
	// RxDrops counts the class's packets the receive buffer dropped.
	RxDrops uint64

	pausedSince, pausedTime sim.Time // the current and the closed pauses
}

// hostPFC is a host's PFC state (EnablePFC).
type hostPFC struct {
	cls   [sim.MaxClasses]PFCClass
	pause sim.Ring[sim.PktRef] // PAUSE frames to send, before anything else
	rx    *rxPipe              // nil without a Storm
	// sent counts the PAUSE frames the NIC sent, drops the packets its
	// receive buffer dropped.
	sent, drops uint64
}

// queued is the packets the host holds for PFC: PAUSE frames to send and
// the receive buffer.
func (p *hostPFC) queued() int {
	n := p.pause.Len()
	if p.rx != nil {
		n += p.rx.q.Len()
	}
	return n
}

// PausesSent is the PAUSE frames the host's NIC sent (a Storm's).
func (h *Host) PausesSent() uint64 {
	if h.pfc == nil {
		return 0
	}
	return h.pfc.sent
}

// RxDrops is the packets the host's receive buffer dropped (a Storm's).
func (h *Host) RxDrops() uint64 {
	if h.pfc == nil {
		return 0
	}
	return h.pfc.drops
}

// rxPipe is the receive buffer and pipeline of a host with a Storm.
type rxPipe struct {
	cfg       Storm
	q         sim.Ring[sim.PktRef]
	bytes     [sim.MaxClasses]int64
	xoff      [sim.MaxClasses]bool
	refreshAt [sim.MaxClasses]sim.Time
	drainAt   sim.Time // when the head packet's processing ends (0: none)
	// progress is when the pipeline last delivered a packet or the buffer
	// last became non-empty; muted says the NIC watchdog stopped PAUSE
	// frames, on a refresh of class tripped.
	progress sim.Time
	muted    bool
	tripped  int
}

// EnablePFC makes the host keep per-class PFC counters (PFCClass).
func (h *Host) EnablePFC() {
	if h.pfc == nil {
		h.pfc = &hostPFC{}
	}
}

// PFC returns the host's counters of class c (zero without EnablePFC).
func (h *Host) PFC(c int) PFCClass {
	if h.pfc == nil {
		return PFCClass{}
	}
	return h.pfc.cls[c]
}

// PausedTime is how long the host's switch kept class c paused up to now
// (0 without EnablePFC).
func (h *Host) PausedTime(c int, now sim.Time) sim.Time {
	if h.pfc == nil {
		return 0
	}
	k := &h.pfc.cls[c]
	return k.pausedTime + max(0, min(h.pausedUntil[c], now)-k.pausedSince)
}

// SetStorm gives the host a receive pipeline that stalls as s says, and
// arms the end of the stall. It also enables the PFC counters.
func (h *Host) SetStorm(e *sim.Engine, s Storm) error {
	if err := s.Check(); err != nil {
		return err
	}
	h.EnablePFC()
	h.pfc.rx = &rxPipe{cfg: s}
	if s.Until != sim.Never {
		e.Schedule(h.ID, s.Until, timerArg(0, timerRxEnd), sim.NoPacket)
	}
	return nil
}

// Stalled reports whether the host's receive pipeline holds packets now
// or is stalled (with a Storm).
func (h *Host) stalled(now sim.Time) bool {
	r := h.pfc.rx
	return r.q.Len() > 0 || now >= r.cfg.At && now < r.cfg.Until
}

// rxAdmit puts packet p in the receive buffer, or drops it, and sends an
// XOFF when a lossless class goes over XOFF.
func (h *Host) rxAdmit(e *sim.Engine, p sim.PktRef, pkt *sim.Packet) {
	r := h.pfc.rx
	c := pkt.Class()
	size := int64(pkt.Size)
	lossless := r.cfg.Lossless&(1<<uint(c)) != 0
	limit := r.cfg.XOFF
	if lossless {
		limit += r.cfg.Headroom
	}
	if r.bytes[c]+size > limit {
		h.pfc.cls[c].RxDrops++
		h.pfc.drops++
		e.Pool.Free(p)
		return
	}
	now := e.Now()
	if r.q.Len() == 0 {
		r.progress = now
	}
	r.q.Push(p)
	r.bytes[c] += size
	if lossless && !r.xoff[c] && r.bytes[c] > r.cfg.XOFF {
		r.xoff[c] = true
		if !r.muted {
			h.sendPause(e, c, r.cfg.Quanta)
		}
	}
	h.rxNext(e)
}

// rxNext starts processing the head packet at the stall's drain rate,
// or every packet at once when the stall is over.
func (h *Host) rxNext(e *sim.Engine) {
	r := h.pfc.rx
	if r.q.Len() == 0 || r.drainAt != 0 {
		return
	}
	now := e.Now()
	if now >= r.cfg.Until {
		h.rxFlush(e)
		return
	}
	if r.cfg.Drain == 0 {
		return
	}
	size := int(e.Pool.Get(*r.q.Front()).Size)
	r.drainAt = now + max(1, r.cfg.Drain.TxTime(size))
	e.Schedule(h.ID, r.drainAt, timerArg(0, timerRxDrain), sim.NoPacket)
}

// onRxDrained ends the head packet's processing.
func (h *Host) onRxDrained(e *sim.Engine) {
	r := h.pfc.rx
	if r.drainAt != e.Now() {
		return
	}
	r.drainAt = 0
	h.rxDeliverHead(e)
	h.rxUnmute(e)
	h.rxNext(e)
}

// rxFlush processes every buffered packet at once (the stall is over).
func (h *Host) rxFlush(e *sim.Engine) {
	r := h.pfc.rx
	r.drainAt = 0
	for r.q.Len() > 0 {
		h.rxDeliverHead(e)
	}
	h.rxUnmute(e)
}

// rxDeliverHead takes the head packet out of the buffer (an XON when its
// class comes down to XON) and hands it to the host.
func (h *Host) rxDeliverHead(e *sim.Engine) {
	r := h.pfc.rx
	p := r.q.Pop()
	pkt := e.Pool.Get(p)
	c := pkt.Class()
	r.bytes[c] -= int64(pkt.Size)
	r.progress = e.Now()
	if r.xoff[c] && r.bytes[c] <= r.cfg.XON {
		r.xoff[c] = false
		if !r.muted {
			h.sendPause(e, c, 0)
		}
	}
	h.deliver(e, p, pkt)
}

// rxUnmute lets the NIC send PAUSE frames again after its watchdog
// stopped them, once the pipeline delivers: an XOFF for each class still
// over XON.
func (h *Host) rxUnmute(e *sim.Engine) {
	r := h.pfc.rx
	if !r.muted {
		return
	}
	r.muted = false
	h.pfc.cls[r.tripped].Restores++
	for c := range r.xoff {
		if r.xoff[c] {
			h.sendPause(e, c, r.cfg.Quanta)
		}
	}
}

// onRxRefresh re-sends class c's XOFF while the buffer holds it above XON,
// unless the NIC watchdog finds the pipeline stalled for its timeout.
func (h *Host) onRxRefresh(e *sim.Engine, c int) {
	r := h.pfc.rx
	now := e.Now()
	if !r.xoff[c] || r.refreshAt[c] != now || r.muted {
		return
	}
	if w := r.cfg.Watchdog; w > 0 && r.q.Len() > 0 && now-r.progress >= w {
		r.muted, r.tripped = true, c
		h.pfc.cls[c].Trips++
		return
	}
	h.sendPause(e, c, r.cfg.Quanta)
}

// sendPause sends the host's switch a PAUSE frame for class c with
// quanta q (0: resume), ahead of any queued packet.
func (h *Host) sendPause(e *sim.Engine, c int, q uint16) {
	p := e.Pool.Alloc()
	pkt := e.Pool.Get(p)
	pkt.ID = e.NewPacketID(h.ID)
	pkt.Flow, pkt.SrcHost, pkt.DstHost = -1, -1, -1
	pkt.Flags = sim.FlagPause
	pkt.Size = sim.PauseFrameSize
	pkt.SetPauseQuanta(c, q)
	h.pfc.sent++
	now := e.Now()
	k := &h.pfc.cls[c]
	k.PausesSent++
	r := h.pfc.rx
	if q > 0 {
		if k.FirstPauseSent == 0 {
			k.FirstPauseSent = now
		}
		pause := sim.Time(q) * e.Links[h.Link].Spec.Rate.TxTime(64)
		r.refreshAt[c] = now + max(1, pause/2)
		e.Schedule(h.ID, r.refreshAt[c], timerArg(int32(c), timerRxRefresh), sim.NoPacket)
	} else {
		r.refreshAt[c] = 0
	}
	if h.Tap != nil {
		h.Tap(now, pkt, true)
	}
	h.pfc.pause.Push(p)
	h.kick(e)
}
