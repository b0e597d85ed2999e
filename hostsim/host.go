package hostsim

import (
	"fmt"
	"unsafe"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/internal/prefetch"
	"github.com/lockstep-sim/lockstep/sim"
)

// Timer kinds, in the low byte of an EvTimer's Arg; the flow id is above.
const (
	timerStart = 1 + iota
	timerRTO
	timerDelAck
	timerPace
	timerRecovery
	timerPause // a PFC pause may have expired (no flow)
	// timerTrigger is an activation of a flow that waits on others (a
	// signal from the element where they completed).
	timerTrigger
	// timerCC is the controller's own timer (DCQCN's rate increase);
	// timerCNP a notification point's deferred CNP (paced.go, roce.go).
	timerCC
	timerCNP
	// timerTask is an activation of a compute task (TaskSpec; the task
	// index is above the kind); timerTaskStart a task's own start.
	timerTask
	timerTaskStart
	// The receive pipeline of a host with a Storm (pfcstorm.go): its
	// stall ends, its head packet is processed, an XOFF is refreshed (the
	// class is above the kind).
	timerRxEnd
	timerRxDrain
	timerRxRefresh
)

func timerArg(flow int32, kind int) int64 { return int64(flow)<<8 | int64(kind) }

// Transport is the transport state of one partition: the flows' specs, the
// endpoints that live here, and the records. Hosts share it.
type Transport struct {
	Cfg Config
	// Caps is what the configured modules declare (cc.Describe), read
	// once: per-packet ACKs, SACK, path steering.
	Caps      cc.Capabilities
	Flows     []FlowSpec
	Records   []FlowRecord
	senders   []*Sender   // by flow id; nil unless the source is local
	receivers []*Receiver // by flow id; nil unless the destination is local

	// Done counts flows whose local parts are all finished: the receiver
	// has every byte (if local) and the sender has every ACK (if local).
	Done int
	// Local is the number of flows with at least one local endpoint.
	Local int
	// CwndLog is the cwnd time series of the traced local senders, in the
	// order the samples were taken.
	CwndLog []CwndRow
	// HostElem is every host's element id, by host index, for the
	// activations of dependent flows (set by the fabric; nil when no flow
	// activates another).
	HostElem []sim.ElemID
	// got counts the activations each waiting flow has received (nil when
	// none waits).
	got []int32
	// Tasks are the compute tasks (SetTasks); gotTask counts each one's
	// activations, and TaskFired is when each local task fired
	// (sim.Never: not, or not here).
	Tasks     []TaskSpec
	TaskFired []sim.Time
	gotTask   []int32
	// Rate counts what rate-based transports added (paced.go).
	Rate RateStats
	// cnpInterval is the notification points' CNP interval when the
	// controller takes CNPs (Caps.CNP).
	cnpInterval sim.Time
}

// SetTasks gives the transport the compute tasks that flows and tasks
// activate (TaskRef). hosts is the number of hosts.
func (t *Transport) SetTasks(tasks []TaskSpec, hosts int) error {
	for k := range tasks {
		tk := &tasks[k]
		if tk.Host < 0 || tk.Host >= hosts {
			return fmt.Errorf("task %d: host %d does not exist", k, tk.Host)
		}
		if tk.Need < 0 || tk.Delay < 0 || tk.Start < 0 {
			return fmt.Errorf("task %d: need %d, delay %v and start %v must not be negative", k, tk.Need, tk.Delay, tk.Start)
		}
	}
	t.Tasks, t.gotTask, t.TaskFired = tasks, make([]int32, len(tasks)), make([]sim.Time, len(tasks))
	for k := range t.TaskFired {
		t.TaskFired[k] = sim.Never
	}
	return nil
}

// CwndRow is one sample of a sender's congestion state (cwnd.csv).
type CwndRow struct {
	Time     sim.Time
	Flow     int32
	Cwnd     int64
	Ssthresh int64
	SRTT     sim.Time
	MinRTT   sim.Time
	State    string
	Event    string
	// Rate and TargetRate (bits per second) and Alpha are a rate-based
	// controller's (DCQCN's Rc, Rt, α): rate.csv. Rate is 0 for window
	// controllers.
	Rate, TargetRate int64
	Alpha            float64
}

// NewTransport prepares the flows. isLocal reports whether a host index
// belongs to this partition. Flow ids must be 0..len(flows)-1.
func NewTransport(cfg Config, flows []FlowSpec, isLocal func(host int) bool) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Transport{Cfg: cfg, Caps: cc.Describe(cfg.CC), Flows: flows, Records: make([]FlowRecord, len(flows)),
		senders: make([]*Sender, len(flows)), receivers: make([]*Receiver, len(flows))}
	if t.Caps.CNP {
		ctl, err := cc.NewController(cfg.CC)
		if err != nil {
			return nil, err
		}
		if c, ok := ctl.(cc.CNPReactor); ok {
			t.cnpInterval = c.CNPInterval()
		}
	}
	// The local senders and receivers, each kind in one array.
	nsnd, nrcv := 0, 0
	for i := range flows {
		if isLocal(flows[i].Src) {
			nsnd++
		}
		if isLocal(flows[i].Dst) {
			nrcv++
		}
	}
	sslab := make([]Sender, nsnd)
	rslab := make([]Receiver, nrcv)
	for i := range flows {
		f := &flows[i]
		if int(f.ID) != i {
			return nil, fmt.Errorf("flow %d has id %d: ids must be 0..n-1 in order", i, f.ID)
		}
		if f.Size <= 0 {
			return nil, fmt.Errorf("flow %d: size must be positive, got %d", i, f.Size)
		}
		local := false
		if isLocal(f.Src) {
			local = true
			s := &sslab[0]
			sslab = sslab[1:]
			if err := initSender(s, &cfg, t.Caps, f); err != nil {
				return nil, fmt.Errorf("flow %d: %w", i, err)
			}
			t.senders[i] = s
		}
		if isLocal(f.Dst) {
			local = true
			r := &rslab[0]
			rslab = rslab[1:]
			*r = Receiver{flow: f.ID, size: uint64(f.Size), quick: cfg.DelAck.QuickAcks,
				delackAt: sim.Never, delackTimerAt: sim.Never}
			if t.Caps.Nak != 0 || t.Caps.CNP {
				r.rx = &roceRx{cnpTimerAt: sim.Never}
			}
			t.receivers[i] = r
		}
		if local {
			t.Local++
		}
		if f.Need > 0 && t.got == nil {
			t.got = make([]int32, len(flows))
		}
	}
	return t, nil
}

// activate sends an activation to every flow or task in targets, from
// host h at now (plus each target's Delay), to the host that sends the
// flow or runs the task.
func (t *Transport) activate(h *Host, e *sim.Engine, targets []int32) {
	now := e.Now()
	for _, g := range targets {
		if g < 0 {
			k := TaskIndex(g)
			tk := &t.Tasks[k]
			e.Signal(h.ID, t.HostElem[tk.Host], now+tk.Delay, timerArg(k, timerTask))
			continue
		}
		f := &t.Flows[g]
		e.Signal(h.ID, t.HostElem[f.Src], now+f.Delay, timerArg(g, timerTrigger))
	}
}

// Sender returns the sender of flow id, or nil when it is not local.
func (t *Transport) Sender(id int32) *Sender { return t.senders[id] }

// flowDone re-counts flow id once its local parts are finished.
func (t *Transport) flowDone(id int32) {
	s, r := t.senders[id], t.receivers[id]
	if (s == nil || s.done()) && (r == nil || r.done) {
		t.Done++
	}
}

// Host is one host element: a NIC with a transmit queue onto its link.
type Host struct {
	ID    sim.ElemID
	Index int32 // host index in the topology
	Link  sim.LinkID
	// busy: the NIC is serialising; stamp: T.Cfg.EndpointDelay, record NIC
	// waits; lazy: the packet being serialised has no transmit-done event
	// (sim.Engine.TransmitLazy): settle applies its completion once it is
	// past, and a packet queued behind it materialises the event. Placed
	// here, they fill what was padding.
	busy, stamp, lazy bool
	T                 *Transport

	nic sim.PktQueue
	// ready holds the rate-based flows waiting for the NIC (paced.go);
	// nil unless the transport is rate-based.
	ready *sim.Ring[int32]
	// ctl: UET hosts' control queue (uet_nic.go), unless PDS.FIFONIC; nil
	// for the others.
	ctl *pdsNIC
	// pfc is the host's PFC counters, the PAUSE frames its NIC sends and
	// the receive pipeline of a host with a Storm (pfcstorm.go); nil
	// unless EnablePFC.
	pfc *hostPFC
	// Misrouted counts packets that arrived for another host (dropped).
	Misrouted uint64
	// Created counts packets this host put on its NIC; Consumed those it
	// received and used.
	Created, Consumed uint64
	// PausesRecv counts the PFC PAUSE frames the host's switch sent it;
	// Trimmed the trimmed data packets it received.
	PausesRecv, Trimmed uint64
	// PaceEvents counts the pacing timer events the host handled (the
	// events pacing adds: Linux pacing, HPCC's W/T, Swift below one
	// packet).
	PaceEvents uint64
	// TrimNacks counts the trim NACKs the host's receivers sent;
	// LastHopNacks those of UET receivers marked last-hop (uet.go).
	TrimNacks    uint64
	LastHopNacks uint64
	pausedUntil  [sim.MaxClasses]sim.Time // by class, for data packets
	// pausedMax is at least every pausedUntil: while it is past, held
	// need not read the packet.
	pausedMax sim.Time
	// Tap, when set, sees every packet the host sends (tx) and receives,
	// at the time it happens (pcap capture). Nil costs nothing.
	Tap func(now sim.Time, pkt *sim.Packet, tx bool)
}

// NewHost returns host `index` whose NIC transmits on link.
func NewHost(id sim.ElemID, index int32, link sim.LinkID, t *Transport) *Host {
	h := &Host{ID: id, Index: index, Link: link, T: t, stamp: t.Cfg.EndpointDelay}
	if t.Caps.NICScheduled {
		h.ready = &sim.Ring[int32]{}
	}
	if t.Caps.PDSAcks && !t.Cfg.PDS.FIFONIC {
		h.ctl = &pdsNIC{}
	}
	return h
}

// ScheduleStarts arms a start timer for every flow this host sends. It
// scans every flow: a fabric of many hosts uses ScheduleStart instead.
func (h *Host) ScheduleStarts(e *sim.Engine) {
	for i := range h.T.Flows {
		f := &h.T.Flows[i]
		if f.Src == int(h.Index) {
			h.ScheduleStart(e, f)
		}
	}
}

// ScheduleStart arms the start timer of flow f, which this host sends.
// The fabric calls it once per flow, in flow order (one pass over the
// flows, not one per host).
func (h *Host) ScheduleStart(e *sim.Engine, f *FlowSpec) {
	if f.Need > 0 {
		return // it starts when activated (timerTrigger)
	}
	e.Schedule(h.ID, f.Start, timerArg(f.ID, timerStart), sim.NoPacket)
}

// ScheduleTask arms the start of task k, which runs on this host, when it
// waits on nothing (Need 0): it fires at its Start.
func (h *Host) ScheduleTask(e *sim.Engine, k int32) {
	if h.T.Tasks[k].Need == 0 {
		e.Schedule(h.ID, h.T.Tasks[k].Start, timerArg(k, timerTaskStart), sim.NoPacket)
	}
}

// Queued is the number of packets waiting in the NIC queue.
func (h *Host) Queued() int {
	n := h.nic.Len()
	if h.ctl != nil {
		n += h.ctl.q.Len()
	}
	if h.pfc != nil {
		n += h.pfc.queued()
	}
	return n
}

// OnTimer handles an EvTimer event.
func (h *Host) OnTimer(e *sim.Engine, ev *sim.Event) {
	flow := int32(ev.Arg >> 8)
	kind := ev.Arg & 0xff
	switch kind {
	case timerPause:
		h.kick(e)
		return
	case timerRxEnd:
		h.rxNext(e)
		return
	case timerRxDrain:
		h.onRxDrained(e)
		return
	case timerRxRefresh:
		h.onRxRefresh(e, int(flow))
		return
	case timerTask:
		h.T.gotTask[flow]++
		if h.T.gotTask[flow] != h.T.Tasks[flow].Need {
			return
		}
		fallthrough
	case timerTaskStart:
		// A task carries no bytes: firing is activating what waits on it.
		h.T.TaskFired[flow] = e.Now()
		if next := h.T.Tasks[flow].Next; len(next) > 0 {
			h.T.activate(h, e, next)
		}
		return
	}
	s := h.T.senders[flow]
	switch kind {
	case timerStart:
		h.T.Records[flow].Started = true
		h.T.Records[flow].StartAt = e.Now()
		s.trySend(h, e)
	case timerTrigger:
		h.T.got[flow]++
		if h.T.got[flow] == h.T.Flows[flow].Need {
			h.T.Records[flow].Started = true
			h.T.Records[flow].StartAt = e.Now()
			s.trySend(h, e)
		}
	case timerRTO:
		s.onRTOTimer(h, e)
	case timerPace:
		h.PaceEvents++
		s.onPaceTimer(h, e)
	case timerRecovery:
		s.onRecoveryTimer(h, e)
	case timerDelAck:
		h.T.receivers[flow].onDelAckTimer(h, e)
	case timerCC:
		s.onCCTimer(h, e)
	case timerCNP:
		h.T.receivers[flow].onCNPTimer(h, e)
	default:
		panic(fmt.Sprintf("hostsim: host %d got timer %#x", h.Index, ev.Arg))
	}
}

// OnTxDone starts the next queued packet.
func (h *Host) OnTxDone(e *sim.Engine) {
	h.busy = false
	h.kick(e)
}

// kick starts the NIC's head packet unless the NIC is busy or the head is
// a data packet of a class its switch paused (IEEE 802.1Qbb; the NIC has
// one FIFO, so a paused head holds the packets behind it).
func (h *Host) kick(e *sim.Engine) {
	if h.lazy {
		h.settle(e)
		if h.lazy {
			// Still serialising: what is queued waits for the completion,
			// which needs its event.
			h.lazy = false
			e.Materialize(h.Link)
			return
		}
	}
	if h.busy {
		return
	}
	if h.pfc != nil && h.pfc.pause.Len() > 0 {
		h.busy = true
		e.Transmit(h.Link, h.pfc.pause.Pop())
		return
	}
	if h.ctl != nil && h.ctl.q.Len() > 0 && h.controlTurn(e) {
		h.transmitFrom(e, &h.ctl.q)
		return
	}
	if h.nic.Len() == 0 {
		if h.ready != nil && h.ready.Len() > 0 {
			h.serveReady(e) // rate-based flows pull (paced.go)
		}
		return
	}
	if h.held(e, h.nic.Front().P) {
		return
	}
	h.transmitFrom(e, &h.nic)
}

// transmitFrom starts the head packet of q.
func (h *Host) transmitFrom(e *sim.Engine, q *sim.PktQueue) {
	p, size := q.Take()
	h.busy = true
	h.stampNIC(e, p)
	if pkt := e.Pool.Get(p); h.ctl != nil && pkt.Flags&sim.FlagData != 0 {
		// Sent when it starts serialising (uet_nic.go): its send time and
		// the start of its per-packet timer.
		pkt.TSval = e.Now()
		if s := h.T.senders[pkt.Flow]; s != nil {
			s.ep.OnSerialise(e.Now(), pkt.Seq)
		}
	}
	lazy := q == &h.nic && q.Len() == 0 && h.plainNIC()
	h.lazy = lazy
	e.TransmitSize(h.Link, p, e.Now(), size, lazy)
}

// plainNIC reports whether the NIC's transmit-done does nothing but make
// it idle when its queue is empty: no PFC, no UET control queue, no
// rate-based flows that the completion lets send.
func (h *Host) plainNIC() bool { return h.pfc == nil && h.ctl == nil && h.ready == nil }

// transmitLazy starts packet p, with an empty queue behind it, with no
// transmit-done event (plainNIC).
func (h *Host) transmitLazy(e *sim.Engine, p sim.PktRef) {
	h.lazy = true
	e.TransmitLazy(h.Link, p, e.Now())
}

// settle applies the elided transmit-done of the packet being serialised
// if it is past: the NIC is idle.
func (h *Host) settle(e *sim.Engine) {
	if e.TxPassed(h.Link) {
		h.lazy, h.busy = false, false
	}
}

// LazyDone applies the elided transmit-done the engine passed at the end
// of a window (sim.Engine.OnLazyDone).
func (h *Host) LazyDone() { h.lazy, h.busy = false, false }

// held reports whether packet p must wait for a pause to end. ACKs and
// NACKs are never held.
func (h *Host) held(e *sim.Engine, p sim.PktRef) bool {
	if h.pausedMax <= e.Now() {
		return false
	}
	pkt := e.Pool.Get(p)
	return pkt.Flags&sim.FlagData != 0 && h.pausedUntil[pkt.Class()] > e.Now()
}

// onPause applies a PFC PAUSE frame from the host's switch.
func (h *Host) onPause(e *sim.Engine, pkt *sim.Packet) {
	h.PausesRecv++
	now := e.Now()
	rate := e.Links[h.Link].Spec.Rate
	wake := sim.Never
	for c := 0; c < sim.MaxClasses; c++ {
		if pkt.Bitmap&(1<<uint(c)) == 0 {
			continue
		}
		q := pkt.PauseQuanta(c)
		until := now + sim.Time(q)*rate.TxTime(64)
		if h.pfc != nil {
			k := &h.pfc.cls
			k[c].PausesRecv++
			if h.pausedUntil[c] <= now && q > 0 {
				k[c].pausedTime += h.pausedUntil[c] - k[c].pausedSince
				k[c].pausedSince = now
				if k[c].FirstPaused == 0 {
					k[c].FirstPaused = now
				}
			}
		}
		h.pausedUntil[c] = until
		h.pausedMax = max(h.pausedMax, until)
		if until > now {
			wake = min(wake, until)
		}
	}
	if wake != sim.Never {
		e.Schedule(h.ID, wake, timerArg(0, timerPause), sim.NoPacket)
	}
	h.kick(e)
}

// stampNIC records, for Swift's endpoint delay, how long packet p waited
// in the NIC since its transport built it (TSval).
func (h *Host) stampNIC(e *sim.Engine, p sim.PktRef) {
	if h.stamp {
		e.Pool.Telemetry(p).NICWait = e.Now() - e.Pool.Get(p).TSval
	}
}

// send hands packet p to the NIC.
func (h *Host) send(e *sim.Engine, p sim.PktRef) {
	h.Created++
	if h.Tap != nil {
		h.Tap(e.Now(), e.Pool.Get(p), true)
	}
	if h.ctl != nil {
		h.sendPDS(e, p)
		return
	}
	if h.lazy {
		h.settle(e)
	}
	if !h.busy && h.nic.Len() == 0 && !h.held(e, p) {
		h.busy = true
		h.stampNIC(e, p)
		if h.plainNIC() {
			h.transmitLazy(e, p)
			return
		}
		e.Transmit(h.Link, p)
		return
	}
	h.nic.Add(p, e.Pool.Get(p).Size)
	h.kick(e)
}

// OnArrive consumes a packet that arrived at the host.
func (h *Host) OnArrive(e *sim.Engine, p sim.PktRef) {
	pkt := e.Pool.Get(p)
	if pkt.Flags&sim.FlagPause != 0 {
		if h.Tap != nil {
			h.Tap(e.Now(), pkt, false)
		}
		h.onPause(e, pkt)
		e.Pool.Free(p)
		return
	}
	if h.pfc != nil && h.pfc.rx != nil && h.stalled(e.Now()) {
		h.rxAdmit(e, p, pkt)
		return
	}
	h.deliver(e, p, pkt)
}

// Prefetch asks for the first lines of the flow state a packet arriving
// now would go to (its receiver for data, its sender for an ACK or a
// CNP), for a packet a few events ahead (fabric's loop, Engine.Ahead).
func (h *Host) Prefetch(e *sim.Engine, p sim.PktRef) {
	pkt := e.Pool.Get(p)
	f := int(pkt.Flow)
	var a uintptr
	switch {
	case pkt.Flags&sim.FlagPause != 0 || f < 0:
		return
	case pkt.Flags&sim.FlagData != 0:
		if f < len(h.T.receivers) {
			a = uintptr(unsafe.Pointer(h.T.receivers[f]))
		}
	case f < len(h.T.senders):
		a = uintptr(unsafe.Pointer(h.T.senders[f]))
	}
	if a != 0 {
		prefetch.Two(a, a+64)
	}
}

// deliver hands packet p, which the NIC received, to its receiver or
// sender.
func (h *Host) deliver(e *sim.Engine, p sim.PktRef, pkt *sim.Packet) {
	if pkt.DstHost != h.Index {
		h.Misrouted++
		e.Pool.Free(p)
		return
	}
	h.Consumed++
	if h.Tap != nil {
		h.Tap(e.Now(), pkt, false)
	}
	switch {
	case pkt.Flags&sim.FlagData != 0:
		r := h.T.receivers[pkt.Flow]
		r.onData(h, e, p, pkt)
	case pkt.Flags&sim.FlagCNP != 0:
		h.T.senders[pkt.Flow].onCNP(h, e)
	case pkt.Flags&sim.FlagAck != 0:
		s := h.T.senders[pkt.Flow]
		var tel *sim.Telemetry
		if e.Pool.HasTelemetry() {
			tel = e.Pool.Telemetry(p)
		}
		s.onAck(h, e, pkt, tel)
	}
	e.Pool.Free(p)
}

// NewRecordTransport is a Transport that holds the flows and their records
// but no endpoints: a compatibility profile's element sends and receives
// for every flow and fills the records (package stracksim). Every flow is
// local.
func NewRecordTransport(cfg Config, flows []FlowSpec) *Transport {
	return &Transport{Cfg: cfg, Flows: flows, Records: make([]FlowRecord, len(flows)),
		senders: make([]*Sender, len(flows)), receivers: make([]*Receiver, len(flows)), Local: len(flows)}
}
