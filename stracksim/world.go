package stracksim

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/switchsim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// Event kinds, in the low bits of an EvTimer's Arg (SimRunner::dispatch's
// FlowStart, TxTick, PacketArrive and PacketDepart).
const (
	evStart  = 1 + iota // a = flow
	evTick              // a = host index
	evArrive            // a = node; Pkt the packet
	evDepart            // a = switch node, b = port
)

func arg(kind, a, b int) int64 { return int64(kind) | int64(a)<<3 | int64(b)<<35 }

func unarg(x int64) (kind, a, b int) {
	return int(x & 7), int(x>>3) & (1<<32 - 1), int(x >> 35)
}

// link is one direction of a link as the world uses it.
type link struct {
	rate  sim.Bandwidth
	delay sim.Time
	to    int // node
}

// host is a host: its uplink (whose end of transmission, busy, is what
// STrack-Sim's link_busy_until holds: the NIC queue is unbounded and
// implicit) and its protocol instance (one per host, as the Rust Protocol).
type host struct {
	index   int32
	up      link
	busy    sim.Time
	p       proto
	pending int // flows of this host that have not started yet
}

// port is a switch output port (network/switch.rs SwitchPort plus the
// runner's egress state).
type port struct {
	out     link
	q       sim.Ring[sim.PktRef]
	bytes   int64    // queue_bytes: waiting packets only, not the one in service
	busy    sim.Time // busy_until
	pending bool     // egress_pending: a PacketDepart is scheduled
	buffer  int64
	k       int64 // ECN threshold (marks when bytes + size > k); -1: never
	c       *switchsim.Port
}

// Fabric is what the world needs of the assembled fabric.
type Fabric struct {
	Topo   *topologies.Topology
	Ports  func(node int) []topologies.Port
	Routes *topologies.Routes
	// Dir is the link direction node transmits on by its port p.
	Dir func(node int, p topologies.Port) sim.LinkID
	// Links are the link directions' specs, by LinkID.
	Links []sim.LinkSpec
	// Switches are the switch elements, by node (nil for hosts), whose port
	// counters the world keeps (queues.csv).
	Switches []*switchsim.Switch
}

// World is the whole fabric under the STrack-Sim profile, as one element.
type World struct {
	cfg    Config
	elem   sim.ElemID
	tr     *hostsim.Transport
	rt     *topologies.Routes
	hosts  []host
	hostOf []int32   // node -> host index, -1 for switches
	ports  [][]port  // by node (nil for hosts)
	tx     []*txFlow // by flow, once started
	rx     []rxFlow  // by flow
	trace  []bool    // by flow: cwnd.csv rows
	keys   []uint64  // by flow: send_times' hash key
	out    []sim.PktRef
	scr    scratch

	// Created counts packets put on host links, Consumed packets that
	// arrived at hosts, Dropped packets switches dropped; onWire is the
	// arrivals scheduled and not yet run.
	Created, Consumed, Dropped uint64
	onWire                     int
}

// New builds the world for fabric fb with the flows of tr, as element
// elem of e, and schedules the flows' starts. Hash-map orders are drawn
// from elem's random stream.
func New(e *sim.Engine, elem sim.ElemID, fb *Fabric, cfg Config, tr *hostsim.Transport) (*World, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := fb.Topo
	w := &World{cfg: cfg, elem: elem, tr: tr, rt: fb.Routes, hosts: make([]host, len(t.Hosts)),
		hostOf: make([]int32, len(t.Nodes)), ports: make([][]port, len(t.Nodes)), rx: make([]rxFlow, len(tr.Flows)), tx: make([]*txFlow, len(tr.Flows)),
		trace: make([]bool, len(tr.Flows))}
	rng := e.Rand(elem)
	for i := range w.hostOf {
		w.hostOf[i] = -1
	}
	mkLink := func(node int, p topologies.Port) (link, error) {
		s := fb.Links[fb.Dir(node, p)]
		if s.Delay%sim.Nanosecond != 0 {
			return link{}, fmt.Errorf("link %s-%s: delay %v is not a whole number of nanoseconds (STrack-Sim's clock)",
				t.Nodes[node].Name, t.Nodes[p.Peer].Name, s.Delay)
		}
		return link{rate: s.Rate, delay: s.Delay, to: int(s.To)}, nil
	}
	for hi, node := range t.Hosts {
		w.hostOf[node] = int32(hi)
		ps := fb.Ports(node)
		if len(ps) != 1 {
			return nil, fmt.Errorf("host %s has %d links; STrack-Sim hosts have one", t.Nodes[node].Name, len(ps))
		}
		l, err := mkLink(node, ps[0])
		if err != nil {
			return nil, err
		}
		w.hosts[hi] = host{index: int32(hi), up: l, p: proto{flows: newRustMap(rng.Uint64(), len(tr.Flows))}}
	}
	for node := range t.Nodes {
		if t.Nodes[node].Kind != topologies.Switch {
			continue
		}
		ps := fb.Ports(node)
		w.ports[node] = make([]port, len(ps))
		for pi, p := range ps {
			l, err := mkLink(node, p)
			if err != nil {
				return nil, err
			}
			q := t.Links[p.Link].Queue
			k := int64(-1)
			switch q.ECN.Mode {
			case topologies.ECNOff:
			case topologies.ECNStep:
				if q.ECN.Dequeue {
					return nil, fmt.Errorf("switch %s: STrack-Sim marks on arrival, not on dequeue", t.Nodes[node].Name)
				}
				k = q.ECN.K
			default:
				return nil, fmt.Errorf("switch %s: STrack-Sim marks by a step threshold, not %d", t.Nodes[node].Name, q.ECN.Mode)
			}
			w.ports[node][pi] = port{out: l, buffer: q.Buffer, k: k, c: &fb.Switches[node].Ports[pi]}
		}
		// One path: STrack-Sim's STrack computes its path count from the
		// edge switch's routes, and the profile models the single-path
		// case only (the multi_loss dumbbell's).
		for h := range t.Hosts {
			if n := len(fb.Routes.Next(node, h)); n > 1 {
				return nil, fmt.Errorf("switch %s has %d equal-cost ports towards host %d; the STrack-Sim profile models single-path fabrics",
					t.Nodes[node].Name, n, h)
			}
		}
	}
	for i := range tr.Flows {
		f := &tr.Flows[i]
		if f.Need > 0 || f.Next != nil {
			return nil, fmt.Errorf("flow %d: dependencies between flows are not part of the STrack-Sim profile", f.ID)
		}
		if f.Start%sim.Nanosecond != 0 || f.Start < 0 {
			return nil, fmt.Errorf("flow %d: start %v is not a whole number of nanoseconds", f.ID, f.Start)
		}
		n := int32((f.Size + int64(cfg.DataSize) - 1) / int64(cfg.DataSize))
		w.rx[i] = rxFlow{total: n}
		if cfg.Protocol == SimpleTCP {
			w.rx[i].ooo = make([]bool, n)
		}
		w.hosts[f.Src].pending++
		w.keys = append(w.keys, rng.Uint64())
		w.trace[i] = tr.Cfg.Trace.All
	}
	for _, id := range tr.Cfg.Trace.Flows {
		w.trace[id] = true
	}
	// SimRunner::inject_flows: one FlowStart per flow, in the list's order.
	for i := range tr.Flows {
		e.Schedule(elem, tr.Flows[i].Start, arg(evStart, i, 0), sim.NoPacket)
	}
	return w, nil
}

// schedule queues an event of the world. Every event has the world as
// destination and source, so the engine orders equal times by the world's
// own sequence: creation order, as STrack-Sim's global EVENT_SEQ.
func (w *World) schedule(e *sim.Engine, at sim.Time, kind, a, b int, p sim.PktRef) {
	e.Schedule(w.elem, at, arg(kind, a, b), p)
}

// OnEvent handles one of the world's events.
func (w *World) OnEvent(e *sim.Engine, ev *sim.Event) {
	now := e.Now()
	kind, a, b := unarg(ev.Arg)
	switch kind {
	case evStart:
		w.startFlow(e, int32(a), now)
	case evTick:
		w.tick(e, &w.hosts[a], now)
	case evArrive:
		w.onWire--
		if h := w.hostOf[a]; h >= 0 {
			w.arriveHost(e, &w.hosts[h], ev.Pkt, now)
		} else {
			w.arriveSwitch(e, a, ev.Pkt, now)
		}
	case evDepart:
		pt := &w.ports[a][b]
		pt.pending = false
		if pt.bytes > 0 {
			w.egress(e, a, b, now)
		}
	default:
		panic(fmt.Sprintf("stracksim: event %#x", ev.Arg))
	}
}

// startFlow is FlowStart: the protocol registers the flow, and a send tick
// follows at once.
func (w *World) startFlow(e *sim.Engine, id int32, now sim.Time) {
	f := &w.tr.Flows[id]
	h := &w.hosts[f.Src]
	h.pending--
	rec := &w.tr.Records[id]
	rec.Started, rec.StartAt = true, now
	n := w.rx[id].total
	w.tx[id] = &txFlow{id: id, dst: int32(f.Dst), total: n, cwnd: w.cfg.InitCwnd, ssth: w.cfg.Ssthresh,
		sent: newSendTimes(n), times: newRustMap(w.keys[id], int(n)), rec: rec}
	h.p.flows.insert(id)
	w.schedule(e, now, evTick, int(h.index), 0, sim.NoPacket)
}

// tick is handle_tx_tick: the protocol emits what it sends now; the
// packets go onto the uplink back to back after what it already holds.
// The next tick comes TickSent later if it sent, TickIdle later if not
// while the host has flows to finish (with none at all, STrack-Sim keeps
// ticking until its stop time without effect; we keep ticking only while
// a flow of the host is yet to start, the only case where it matters).
func (w *World) tick(e *sim.Engine, h *host, now sim.Time) {
	w.out = w.out[:0]
	w.sendTick(e, h, now)
	if len(w.out) == 0 {
		if w.active(h) || h.p.flows.items == 0 && h.pending > 0 {
			w.schedule(e, now+w.cfg.TickIdle, evTick, int(h.index), 0, sim.NoPacket)
		}
		return
	}
	w.transmit(e, h, now)
	w.schedule(e, now+w.cfg.TickSent, evTick, int(h.index), 0, sim.NoPacket)
}

// transmit puts w.out on h's uplink: each packet starts when the link is
// free (max(busy, now)) and arrives at the edge switch a serialisation and
// a propagation delay later.
func (w *World) transmit(e *sim.Engine, h *host, now sim.Time) {
	for _, p := range w.out {
		size := e.Pool.Get(p).Size
		start := max(h.busy, now)
		done := start + Serialization(size, h.up.rate)
		h.busy = done
		w.Created++
		w.onWire++
		w.schedule(e, done+h.up.delay, evArrive, h.up.to, 0, p)
	}
	w.out = w.out[:0]
}

// arriveHost is handle_arrive_at_host: data is answered at once (its ACK,
// and a NACK, leave on the uplink), a control packet goes to the sender;
// then a send tick follows at once, in both cases.
func (w *World) arriveHost(e *sim.Engine, h *host, p sim.PktRef, now sim.Time) {
	w.Consumed++
	pkt := e.Pool.Get(p)
	if pkt.Flags&sim.FlagData != 0 {
		w.out = w.out[:0]
		w.onData(e, h, pkt, now)
		w.transmit(e, h, now)
	} else {
		w.onControl(h, pkt, now)
	}
	e.Pool.Free(p)
	w.schedule(e, now, evTick, int(h.index), 0, sim.NoPacket)
}

// arriveSwitch is handle_arrive_at_switch and Switch::ingress: the one
// port towards the destination; drop when the waiting bytes plus this
// packet exceed the buffer (the packet in service is no longer counted);
// else mark any packet (there is no ECN-capable bit) when they exceed the
// ECN threshold; queue it and try to transmit.
func (w *World) arriveSwitch(e *sim.Engine, node int, p sim.PktRef, now sim.Time) {
	pkt := e.Pool.Get(p)
	next := w.rt.Next(node, int(pkt.DstHost))
	if len(next) == 0 {
		w.Dropped++
		e.Pool.Free(p)
		return
	}
	pi := int(next[0])
	pt := &w.ports[node][pi]
	if !pt.admit(pkt) {
		w.Dropped++
		e.Pool.Free(p)
		return
	}
	pt.q.Push(p)
	w.egress(e, node, pi, now)
}

// admit is Switch::ingress's admission and marking rule for pkt, with the
// port's counters; it adds the packet's bytes when it is admitted.
func (pt *port) admit(pkt *sim.Packet) bool {
	size := int64(pkt.Size)
	if pt.bytes+size > pt.buffer {
		pt.c.Dropped++
		return false
	}
	if pt.k >= 0 && pt.bytes+size > pt.k {
		pkt.Flags |= sim.FlagCE
		pt.c.Marked++
	}
	pt.bytes += size
	pt.c.Enqueued++
	pt.c.Bytes += uint64(size)
	pt.c.PeakBytes = max(pt.c.PeakBytes, pt.bytes)
	return true
}

// egress is try_egress: an idle port (busy_until <= now) sends its head
// packet and, if more wait, schedules a PacketDepart for when it is done;
// a busy one schedules that PacketDepart unless one is pending.
func (w *World) egress(e *sim.Engine, node, pi int, now sim.Time) {
	pt := &w.ports[node][pi]
	if pt.busy > now {
		if !pt.pending {
			pt.pending = true
			w.schedule(e, pt.busy, evDepart, node, pi, sim.NoPacket)
		}
		return
	}
	if pt.q.Len() == 0 {
		return
	}
	p := pt.q.Pop()
	size := e.Pool.Get(p).Size
	pt.bytes -= int64(size)
	done := now + Serialization(size, pt.out.rate)
	pt.busy = done
	pt.c.TxPackets++
	w.onWire++
	w.schedule(e, done+pt.out.delay, evArrive, pt.out.to, 0, p)
	if pt.bytes > 0 && !pt.pending {
		pt.pending = true
		w.schedule(e, done, evDepart, node, pi, sim.NoPacket)
	}
}

// Conservation is what the world holds: packets waiting in switch queues
// and arrivals not yet run.
func (w *World) Conservation() (inQueues, onWire int) {
	for _, ps := range w.ports {
		for i := range ps {
			inQueues += ps[i].q.Len()
		}
	}
	return inQueues, w.onWire
}

// cwndRow records flow f's window in cwnd.csv when it is traced and the
// window or threshold changed.
func (w *World) cwndRow(f *txFlow, now sim.Time, event string) {
	if !w.trace[f.id] || f.cwnd == f.lastCwnd && f.ssth == f.lastSsth && event == "" {
		return
	}
	f.lastCwnd, f.lastSsth = f.cwnd, f.ssth
	ssth := int64(0)
	if w.cfg.Protocol == SimpleTCP {
		ssth = int64(f.ssth) * int64(w.cfg.DataSize)
	}
	w.tr.CwndLog = append(w.tr.CwndLog, hostsim.CwndRow{Time: now, Flow: f.id, Cwnd: int64(f.cwnd) * int64(w.cfg.DataSize),
		Ssthresh: ssth, State: w.cfg.Protocol.String(), Event: event})
}
