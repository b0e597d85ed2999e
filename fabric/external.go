package fabric

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"

	"github.com/lockstep-sim/lockstep/elementproto"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// External elements (elementproto, docs/external-elements.md): a switch
// node of the topology whose behaviour runs outside the fabric. Its
// element here is a proxy: it keeps the packets that arrive in a window
// and, at the window's end, sends them to the peer and applies its reply
// (the departures, serialised on the proxy's links as the fabric's own
// switches' are, and the drops), after checking it.
//
// A fabric steps the external elements it holds (Config.Local) at the end
// of every window: RunUntilBatch's own windows in one process, the
// barrier's in a partition (RunWindow, node.Core). Either way a window is
// at most as long as the smallest delay of the elements' links
// (ExternalLookahead), which a partitioned run's lookahead honours
// (partition.WithExternal).

// ExternalPeer is the far side of an external element: the element
// program, in this process or across a transport. Both calls exchange
// msgpack messages (elementproto): Setup once, then one Step per window;
// an error (a transport's timeout included) fails the run.
type ExternalPeer interface {
	Setup(msg []byte) error
	Step(msg []byte) ([]byte, error)
}

// external is one external element's proxy.
type external struct {
	node int
	name string
	peer ExternalPeer
	// setup is the Setup message, sent before the first window (nil once
	// sent): building a fabric contacts nobody (lockstep validate).
	setup []byte
	// steps counts the windows sent (the protocol's Seq): a window in
	// which the element has nothing to do (no arrival, its next event at
	// or after the end) is not sent.
	steps uint64
	// pending are the packets the element holds, by handle: their headers
	// (the pool's slots are freed on arrival) and arrival times.
	pending    map[uint64]extPacket
	nextHandle uint64
	win        elementproto.Window // the current window's arrivals
	next       sim.Time            // the element's next event (sim.Never: none)
	seq        uint64              // the proxy's own event sequence numbers
	portFree   []sim.Time          // end of the last departure by port
	links      []sim.LinkID        // by port: the direction leaving it
	remote     []bool              // by port: its peer is in another partition
	rates      []int64             // by port, bits per second
	counters   []elementproto.Counters
	drops      uint64
	err        error
}

type extPacket struct {
	pkt sim.Packet
	at  sim.Time
}

// ExternalError is an external element that broke the protocol or whose
// peer failed: the run stops with it.
type ExternalError struct {
	Node   int
	Name   string
	Window uint64
	Err    error
}

func (e *ExternalError) Error() string {
	return fmt.Sprintf("external element %s (node %d): window %d: %v", e.Name, e.Node, e.Window, e.Err)
}

func (e *ExternalError) Unwrap() error { return e.Err }

// newExternals builds the proxies of the local nodes of cfg.External
// and their Setup messages. They need a plain switch: no PFC, INT, nor
// impairments on their links.
func (f *Fabric) newExternals(cfg *Config) error {
	if len(cfg.External) == 0 {
		return nil
	}
	if f.lossless != 0 || f.tr.Cfg.INT.Enabled || f.every != 0 {
		return fmt.Errorf("external elements: PFC and INT are not part of the element protocol")
	}
	t := f.topo
	nodes := make([]int, 0, len(cfg.External))
	for n := range cfg.External {
		nodes = append(nodes, n)
	}
	sortInts(nodes)
	f.extL = sim.Never
	for _, n := range nodes {
		if n < 0 || n >= len(t.Nodes) || t.Nodes[n].Kind != topologies.Switch {
			return fmt.Errorf("external element: node %d is not a switch", n)
		}
		sw := f.switches[n]
		if sw == nil {
			continue // in another partition
		}
		x := &external{node: n, name: t.Nodes[n].Name, peer: cfg.External[n], pending: map[uint64]extPacket{},
			next: sim.Never}
		s := elementproto.Setup{Version: elementproto.Version, Element: int32(n), Name: x.name, Seed: cfg.Seed}
		for i := range sw.Ports {
			pt := &sw.Ports[i]
			l := f.eng.Links[pt.Link]
			if l.Spec.Impair != nil {
				return fmt.Errorf("external element %s: impaired links are not part of the element protocol", x.name)
			}
			if l.Spec.Delay <= 0 {
				return fmt.Errorf("external element %s: port %d's link has no delay, which a window needs", x.name, i)
			}
			f.extL = min(f.extL, l.Spec.Delay)
			q := pt.Queue
			s.Ports = append(s.Ports, elementproto.Port{Peer: int32(pt.Peer), RateBps: int64(l.Spec.Rate), Buffer: q.Buffer,
				ECN: elementproto.ECN{Mode: uint8(q.ECN.Mode), K: q.ECN.K, Min: q.ECN.Min, Max: q.ECN.Max, PMax: q.ECN.PMax, Dequeue: q.ECN.Dequeue}})
			x.links = append(x.links, pt.Link)
			x.remote = append(x.remote, !f.eng.Local(pt.Peer))
			x.rates = append(x.rates, int64(l.Spec.Rate))
		}
		x.portFree = make([]sim.Time, len(sw.Ports))
		s.Routes = make([][]int32, len(t.Hosts))
		for h := range t.Hosts {
			s.Routes[h] = append([]int32(nil), f.routes.Next(n, h)...)
		}
		msg, err := elementproto.Marshal(&s)
		if err != nil {
			return fmt.Errorf("external element %s: %v", x.name, err)
		}
		x.setup = msg
		f.switches[n] = nil
		f.kind[n] = kindExternal
		f.ext = append(f.ext, x)
		f.extOf[n] = x
	}
	return nil
}

// ExternalLookahead is the longest window that external elements at
// nodes allow in topology t: the smallest delay the engine applies on a
// link leaving one of them (propagation plus the element's latency), so
// that whatever one starts in a window reaches its peer after the window.
// It is sim.Never without external elements; link is the topology link
// that sets it (the first in link order, -1 for none).
func ExternalLookahead(t *topologies.Topology, nodes []int) (l sim.Time, link int) {
	l, link = sim.Never, -1
	for i := range t.Links {
		lk := &t.Links[i]
		for _, n := range nodes {
			if (lk.A == n || lk.B == n) && lk.Delay+t.Nodes[n].Latency < l {
				l, link = lk.Delay+t.Nodes[n].Latency, i
			}
		}
	}
	return l, link
}

// ExternalLookahead is the longest window the local external elements
// allow (sim.Never: none here).
func (f *Fabric) ExternalLookahead() sim.Time {
	if len(f.ext) == 0 {
		return sim.Never
	}
	return f.extL
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// onArrive keeps packet p, which arrived by link direction in, for the
// window's message.
func (x *external) onArrive(e *sim.Engine, p sim.PktRef, port int) {
	pkt := e.Pool.Get(p)
	h := x.nextHandle
	x.nextHandle++
	x.pending[h] = extPacket{pkt: *pkt, at: e.Now()}
	x.win.Arrivals = append(x.win.Arrivals, elementproto.Arrival{Handle: h, At: int64(e.Now()), Port: int32(port),
		Pkt: elementproto.Header{ID: pkt.ID, Flow: pkt.Flow, SrcHost: pkt.SrcHost, DstHost: pkt.DstHost,
			SrcPort: pkt.SrcPort, DstPort: pkt.DstPort, Proto: pkt.Proto, Hops: pkt.Hops, Flags: uint16(pkt.Flags),
			Entropy: pkt.Entropy, Size: pkt.Size, Payload: pkt.Payload, Seq: pkt.Seq}})
	e.Pool.Free(p)
}

// step ends the window [start, end) of the element: it sends the
// arrivals, checks the reply and applies it. A departure to a peer in
// this partition is injected on the port's link, one to another
// partition goes in the outbox.
func (x *external) step(e *sim.Engine, start, end sim.Time) error {
	seq := x.steps
	x.steps++
	x.win.Seq, x.win.Start, x.win.End = seq, int64(start), int64(end)
	fail := func(format string, args ...any) error {
		x.err = &ExternalError{Node: x.node, Name: x.name, Window: seq, Err: fmt.Errorf(format, args...)}
		return x.err
	}
	msg, err := elementproto.Marshal(&x.win)
	if err != nil {
		return fail("%v", err)
	}
	x.win.Arrivals = x.win.Arrivals[:0]
	out, err := x.peer.Step(msg)
	if err != nil {
		return fail("%v", err)
	}
	var r elementproto.Reply
	if err := elementproto.Unmarshal(out, &r); err != nil {
		return fail("cannot decode the reply: %v", err)
	}
	if r.Seq != seq {
		return fail("the reply is for window %d", r.Seq)
	}
	if n := len(r.Departures) + len(r.Drops); n > len(x.pending) {
		return fail("%d packets out, but it holds %d", n, len(x.pending))
	}
	// In the order of their starts (by port at one time): the proxy's
	// sequence numbers then do not depend on how the run is cut into
	// windows.
	slices.SortStableFunc(r.Departures, func(a, b elementproto.Departure) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Port, b.Port))
	})
	for _, d := range r.Departures {
		p, ok := x.pending[d.Handle]
		if !ok {
			return fail("departure of packet %d, which it does not hold", d.Handle)
		}
		at := sim.Time(d.Start)
		switch {
		case d.Port < 0 || int(d.Port) >= len(x.links):
			return fail("packet %d leaves by port %d of %d", d.Handle, d.Port, len(x.links))
		case at < p.at || at < start || at >= end:
			return fail("packet %d (arrived at %v) starts at %v, outside [max(its arrival, %v), %v)", d.Handle, p.at, at, start, end)
		case at < x.portFree[d.Port]:
			return fail("packet %d starts on port %d at %v, before the previous departure ends at %v", d.Handle, d.Port, at, x.portFree[d.Port])
		case sim.Flags(d.Flags)&^sim.FlagCE != p.pkt.Flags&^sim.FlagCE:
			return fail("packet %d leaves with flags %#x: only CE may change (arrived with %#x)", d.Handle, d.Flags, uint16(p.pkt.Flags))
		}
		delete(x.pending, d.Handle)
		l := e.Links[x.links[d.Port]]
		tx := sim.Time(elementproto.TxTime(p.pkt.Size, x.rates[d.Port]))
		x.portFree[d.Port] = at + tx
		p.pkt.Flags = sim.Flags(d.Flags)
		x.seq++
		// Serialised by the element from at: the packet reaches the peer
		// after its last bit and the link's delay, as from a switch.
		rp := &sim.RemotePacket{Link: x.links[d.Port], At: at + tx + l.Spec.Delay, Seq: x.seq, Pkt: p.pkt}
		if x.remote[d.Port] {
			e.Export(rp)
		} else {
			e.Inject(rp)
		}
	}
	for _, h := range r.Drops {
		if _, ok := x.pending[h]; !ok {
			return fail("drop of packet %d, which it does not hold", h)
		}
		delete(x.pending, h)
		x.drops++
	}
	switch {
	case r.Next == -1 && len(x.pending) > 0:
		return fail("no next event, but it holds %d packets", len(x.pending))
	case r.Next == -1:
		x.next = sim.Never
	case sim.Time(r.Next) < end:
		return fail("next event at %v, before the window's end %v", sim.Time(r.Next), end)
	default:
		x.next = sim.Time(r.Next)
	}
	if r.Counters != nil {
		if len(r.Counters) != len(x.links) {
			return fail("counters for %d ports, it has %d", len(r.Counters), len(x.links))
		}
		x.counters = r.Counters
	}
	return nil
}

// stepExternals ends the window [start, end) of every local external
// element, in node order: the first window sends each its Setup; a
// window in which one has nothing to do (no arrival, its next event at
// or after end) is not sent to it. The first error stops the run.
func (f *Fabric) stepExternals(start, end sim.Time) error {
	if f.extErr != nil {
		return f.extErr
	}
	for _, x := range f.ext {
		if x.setup != nil {
			msg := x.setup
			x.setup = nil
			if err := x.peer.Setup(msg); err != nil {
				f.extErr = &ExternalError{Node: x.node, Name: x.name, Err: fmt.Errorf("setup: %w", err)}
				return f.extErr
			}
		}
		if len(x.win.Arrivals) == 0 && x.next >= end {
			continue
		}
		if err := x.step(f.eng, start, end); err != nil {
			f.extErr = err
			return err
		}
	}
	return nil
}

// NextEventTime is the time of the partition's next event: the engine's
// or a local external element's (sim.Never: none).
func (f *Fabric) NextEventTime() sim.Time {
	m := f.eng.NextEventTime()
	for _, x := range f.ext {
		m = min(m, x.next)
	}
	return m
}

// RunWindow runs the window [start, end) a barrier granted: every event
// before end, then the local external elements' step (stepExternals). An
// external element's error (an ExternalError) stops the run.
func (f *Fabric) RunWindow(start, end sim.Time) (uint64, error) {
	n := f.RunUntil(end)
	if len(f.ext) == 0 {
		return n, nil
	}
	return n, f.stepExternals(start, end)
}

// RunInterior runs, before horizon, the events of the elements that are
// not border elements (sim.Engine.SplitQueue, StepInterior) and returns
// how many ran; count, if not nil, counts them by element. A node runs
// them while it waits for the next window's grant (node.Core.RunAhead).
// Precondition: the engine's queue is split and the fabric has no
// external elements.
func (f *Fabric) RunInterior(horizon sim.Time, count []uint64) uint64 {
	e := f.eng
	start := e.Stats.Events
	mask := f.yieldMask
	for i := uint32(1); ; i++ {
		ev := e.StepInterior(horizon)
		if ev == nil {
			break
		}
		if count != nil {
			count[ev.Dst]++
		}
		f.dispatch(ev)
		if mask != 0 && i&mask == 0 {
			runtime.Gosched()
		}
	}
	return e.Stats.Events - start
}

// ExternalCounters are the port counters external element node last
// reported: zeros if it was never stepped (no packet reached it), nil if
// it was but reported none (or node is not a local external element).
func (f *Fabric) ExternalCounters(node int) []elementproto.Counters {
	if node < len(f.extOf) && f.extOf[node] != nil {
		x := f.extOf[node]
		if x.steps == 0 {
			return make([]elementproto.Counters, len(x.links))
		}
		return x.counters
	}
	return nil
}

// ExternalLinks are the link directions leaving the ports of external
// element node, by port (nil: node is not a local external element).
func (f *Fabric) ExternalLinks(node int) []sim.LinkID {
	if node < len(f.extOf) && f.extOf[node] != nil {
		x := f.extOf[node]
		return x.links
	}
	return nil
}

// runExternalBatch is RunUntilBatch with external elements: windows of
// the smallest delay of their links, L, as a partitioned run's barrier
// grants them (docs/design.md §3): a window that starts at the next
// event m (the engine's or an element's) ends at m + L, so whatever an
// element sends in it reaches its peer after the window. At a window's
// end the elements are stepped (stepExternals).
func (f *Fabric) runExternalBatch(horizon sim.Time, n int) bool {
	e := f.eng
	for i := 0; i < n; {
		if f.extErr != nil {
			return false
		}
		if f.winEnd == 0 {
			m := f.NextEventTime()
			if m >= horizon || m == sim.Never {
				return false
			}
			f.winStart, f.winEnd = m, min(m+f.extL, horizon)
		}
		if ev := e.Step(f.winEnd); ev != nil {
			f.dispatch(ev)
			i++
			continue
		}
		if f.stepExternals(f.winStart, f.winEnd) != nil {
			return false
		}
		f.winEnd = 0
	}
	return true
}

// HasExternal reports whether elements of this fabric run outside it
// (their state is theirs, so such a run cannot be checkpointed).
func (f *Fabric) HasExternal() bool { return len(f.ext) > 0 }

// ExternalErr is the error that stopped a run with external elements, or
// nil.
func (f *Fabric) ExternalErr() error { return f.extErr }
