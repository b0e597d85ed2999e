// Package fabric assembles a runnable network from a topology, a transport
// configuration and a workload: it creates the engine, one switch or host
// element per topology node, the link directions, and runs the event loop
// that hands each event to its element. A fabric may hold the whole network
// or one partition of it (Config.Local).
package fabric

import (
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"unsafe"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/internal/prefetch"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/stracksim"
	"github.com/lockstep-sim/lockstep/switchsim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// LinkImpairment attaches impairments to one direction of a topology link.
type LinkImpairment struct {
	Link int  // index into Topology.Links
	AtoB bool // the direction from Links[Link].A to .B
	BtoA bool
	Imp  *sim.Impairments
}

// Config is the requested state of a fabric.
type Config struct {
	Topo  *topologies.Topology
	Flows []hostsim.FlowSpec
	// Tasks are the compute tasks that flows wait on (jobs with
	// tensor/pipeline parallelism); activation lists name them by
	// hostsim.TaskRef.
	Tasks       []hostsim.TaskSpec
	Transport   hostsim.Config
	Forwarding  switchsim.Forwarding
	Seed        uint64
	Impairments []LinkImpairment
	// Local reports whether a topology node belongs to this partition
	// (nil: all do).
	Local func(node int) bool
	// QueueSample, when positive, records switch port occupancy on a grid
	// of this period while a switch holds packets.
	QueueSample sim.Time
	// Switch is every switch's optional mechanisms (classes, PFC, shared
	// buffer, trimming, cut-through); the zero value is the plain switch.
	Switch switchsim.Config
	// Compat, when set, runs the STrack-Sim compatibility profile instead
	// of hosts and switches (compat.go): one element, one partition.
	Compat *stracksim.Config
	// SwitchTiers, when it has an entry for a switch's tier
	// (topologies.Node.Tier), gives that switch's mechanisms instead.
	SwitchTiers map[int]switchsim.Config
	// Storms are hosts whose receive pipeline stalls (a PFC storm source;
	// hostsim.Storm).
	Storms []HostStorm
	// External replaces the switches of these topology nodes by elements
	// that run outside the fabric (external.go, elementproto).
	External map[int]ExternalPeer
}

// HostStorm makes host Host's receive pipeline stall. Zero XOFF, XON (when
// XOFF is zero too), Headroom and Quanta take the host's switch's PFC
// values (the headroom derived from the host's link as a switch derives
// its own), and Lossless that switch's lossless classes.
type HostStorm struct {
	Host int
	hostsim.Storm
}

// PFCReport reports whether the run reports PFC per port and host
// (pfc.csv): with a storm source or a storm watchdog.
func (c *Config) PFCReport() bool {
	if len(c.Storms) > 0 || c.Switch.PFC.Storm != nil {
		return true
	}
	for _, k := range sortedTiers(c.SwitchTiers) {
		if c.SwitchTiers[k].PFC.Storm != nil {
			return true
		}
	}
	return false
}

// LosslessClasses is the classes some switch runs lossless (bit c: class
// c), the classes a PAUSE frame may name.
func (c *Config) LosslessClasses() uint8 {
	m := losslessMask(&c.Switch)
	for _, k := range sortedTiers(c.SwitchTiers) {
		sc := c.SwitchTiers[k]
		m |= losslessMask(&sc)
	}
	return m
}

// losslessMask is the classes sc runs lossless (bit c: class c).
func losslessMask(sc *switchsim.Config) uint8 {
	var m uint8
	for i, cl := range sc.Classes {
		if cl.Lossless {
			m |= 1 << uint(i)
		}
	}
	return m
}

// Watchdog is the run's PFC deadlock threshold: the one any switch
// configuration sets (the scenario makes them agree), 0 for none.
func (c *Config) Watchdog() sim.Time {
	w := c.Switch.PFC.Watchdog
	for _, k := range sortedTiers(c.SwitchTiers) {
		w = max(w, c.SwitchTiers[k].PFC.Watchdog)
	}
	return w
}

// sortedTiers is the tiers of m in increasing order.
func sortedTiers(m map[int]switchsim.Config) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// switchConfigs resolves the configuration of each tier's switches: a
// tier's own or the fabric-wide one, with HonourPause set everywhere when
// any switch may send PAUSE frames.
func (c *Config) switchConfigs() (def switchsim.Config, tiers map[int]switchsim.Config) {
	lossless := false
	all := append([]switchsim.Config{c.Switch}, make([]switchsim.Config, 0, len(c.SwitchTiers))...)
	for _, k := range sortedTiers(c.SwitchTiers) {
		all = append(all, c.SwitchTiers[k])
	}
	for i := range all {
		for _, k := range all[i].Classes {
			lossless = lossless || k.Lossless
		}
	}
	def = c.Switch
	def.HonourPause = def.HonourPause || lossless
	tiers = make(map[int]switchsim.Config, len(c.SwitchTiers))
	for k, v := range c.SwitchTiers {
		v.HonourPause = v.HonourPause || lossless
		tiers[k] = v
	}
	return def, tiers
}

const (
	kindHost uint8 = iota + 1
	kindSwitch
	kindCompat   // a compatibility profile's one element (compat.go)
	kindExternal // an element outside the fabric (external.go)
)

// Fabric is a built network, ready to run.
type Fabric struct {
	eng      *sim.Engine
	topo     *topologies.Topology
	tr       *hostsim.Transport
	hosts    []*hostsim.Host     // by host index; nil when not local
	switches []*switchsim.Switch // by node index; nil for hosts and non-local

	routes   *topologies.Routes // the local switches' rows (the Index is dropped after New)
	allLocal bool               // no Config.Local: every node is here
	kind     []uint8            // by element
	hostOf   []int32            // element -> host index, -1 for switches
	linkPort []int32            // link direction -> port index at its From element
	// The PFC deadlock search of a run in one process (RunUntilBatch):
	// the grid period and threshold (0: no search), the end of the current
	// stretch (a grid time; 0 before the first), the deadlock found.
	every, threshold sim.Time
	gridEnd          sim.Time
	deadlock         *Deadlock
	compat           *stracksim.World // the compatibility profile's element, or nil
	// pfcReport and lossless: Config.PFCReport and LosslessClasses.
	pfcReport bool
	lossless  uint8
	// External elements (external.go): the local proxies in node order
	// and by node, the window length (the smallest delay of their links),
	// the current window of a run in one process [winStart, winEnd)
	// (winEnd 0: between windows), and the error that stopped the run.
	ext                    []*external
	extOf                  []*external
	extL, winStart, winEnd sim.Time
	extErr                 error
	// yieldMask: RunUntil and RunInterior yield the processor after
	// every yieldMask+1 events (YieldEvery; 0: never).
	yieldMask uint32
}

// YieldEvery makes RunUntil, RunWindow and RunInterior yield the processor
// (runtime.Gosched) after every n events, n rounded up to a power of two
// (at least 2); 0 (the default) never. A node process computes on one thread
// (GOMAXPROCS=1) beside the goroutines of its NATS connection and server,
// and the server writes a published report to its routes from a goroutine
// of its own: without a yield, a report published just before a long
// window could wait for the whole window before it leaves, and the peers
// with it (docs/decisions.md, "A report stuck behind a window"). Yielding
// changes no result; its cost is a scheduler call every n events.
func (f *Fabric) YieldEvery(n uint32) {
	f.yieldMask = 0
	if n > 0 {
		f.yieldMask = 1<<bits.Len32(max(n, 2)-1) - 1
	}
}

// Yields is how many events the fabric runs between yields (YieldEvery,
// rounded), 0 if it never yields.
func (f *Fabric) Yields() uint32 {
	if f.yieldMask == 0 {
		return 0
	}
	return f.yieldMask + 1
}

// PFCReport reports whether the fabric keeps the PFC report's counters
// (Config.PFCReport): hosts keep per-class PFC counters.
func (f *Fabric) PFCReport() bool { return f.pfcReport }

// LosslessClasses is Config.LosslessClasses.
func (f *Fabric) LosslessClasses() uint8 { return f.lossless }

// Deadlock is a PFC deadlock: at At, the ports of Cycle were each paused
// by the next for at least Threshold while holding packets.
type Deadlock struct {
	At, Threshold sim.Time
	Cycle         []sim.PausedPort
}

// Report is the deadlock's one-line report, naming the topology's nodes.
func (d *Deadlock) Report(t *topologies.Topology) string {
	return sim.DeadlockReport(d.At, d.Threshold, d.Cycle, func(id sim.ElemID) string {
		if int(id) < len(t.Nodes) {
			return t.Nodes[id].Name
		}
		return fmt.Sprintf("element %d", id)
	})
}

// DeadlockGrid is the period of the PFC deadlock search's grid for a
// watchdog threshold: half the threshold (at least 1 ps), so a deadlock
// is found within 1.5 thresholds of its forming.
func DeadlockGrid(threshold sim.Time) sim.Time { return max(1, threshold/2) }

// DirID is the sim link id of topology link i in the direction from its A
// end (aToB) or its B end.
func DirID(i int, aToB bool) sim.LinkID {
	if aToB {
		return sim.LinkID(2 * i)
	}
	return sim.LinkID(2*i + 1)
}

// New builds a fabric. It compiles cfg.Topo (topologies.Compile), which
// must not change afterwards.
func New(cfg Config) (*Fabric, error) {
	if cfg.Compat != nil {
		return newCompat(cfg)
	}
	t := cfg.Topo
	local := func(node int) bool { return cfg.Local == nil || cfg.Local(node) }
	// Hop counts for the flows sent here (STrack's target scales with
	// them), from the searches that build the routes.
	nh := len(t.Hosts)
	var pairs []topologies.HostPair
	var pairFlow []int32
	for i := range cfg.Flows {
		f := &cfg.Flows[i]
		if f.Src >= 0 && f.Src < nh && f.Dst >= 0 && f.Dst < nh && t.Hosts[f.Src] >= 0 && t.Hosts[f.Src] < len(t.Nodes) && local(t.Hosts[f.Src]) {
			pairs = append(pairs, topologies.HostPair{Src: int32(f.Src), Dst: int32(f.Dst)})
			pairFlow = append(pairFlow, int32(i))
		}
	}
	ix, err := topologies.CompileWith(t, topologies.CompileOptions{Rows: local, Pairs: pairs})
	if err != nil {
		return nil, err
	}
	for i, h := range ix.PairHops() {
		fl := &cfg.Flows[pairFlow[i]]
		fl.Hops = int(h)
		fl.LineRate, fl.BaseRTT = baseRTT(t, ix, fl.Src, int(h), &cfg.Transport)
	}
	if cfg.Forwarding == 0 {
		cfg.Forwarding = switchsim.ECMP
	}
	n := len(t.Nodes)

	// Ports and link directions.
	portIdx := make([][2]int, len(t.Links)) // port index of the link at A and at B
	for node := 0; node < n; node++ {
		for pi, p := range ix.Ports(node) {
			l := t.Links[p.Link]
			if l.A == node {
				portIdx[p.Link][0] = pi
			} else {
				portIdx[p.Link][1] = pi
			}
		}
	}
	specs := make([]sim.LinkSpec, 2*len(t.Links))
	linkPort := make([]int32, 2*len(t.Links))
	for i, l := range t.Links {
		for _, dir := range []bool{true, false} {
			from, to, fp, tp := l.A, l.B, portIdx[i][0], portIdx[i][1]
			if !dir {
				from, to, fp, tp = l.B, l.A, portIdx[i][1], portIdx[i][0]
			}
			id := DirID(i, dir)
			specs[id] = sim.LinkSpec{From: sim.ElemID(from), FromPort: fp, To: sim.ElemID(to), ToPort: tp,
				Rate: l.Rate, Delay: l.Delay + t.Nodes[from].Latency}
			linkPort[id] = int32(fp)
		}
	}
	for _, im := range cfg.Impairments {
		if im.Link < 0 || im.Link >= len(t.Links) {
			return nil, fmt.Errorf("impairment on link %d: the fabric has %d links", im.Link, len(t.Links))
		}
		if im.AtoB {
			specs[DirID(im.Link, true)].Impair = im.Imp
		}
		if im.BtoA {
			specs[DirID(im.Link, false)].Impair = im.Imp
		}
	}
	eng, err := sim.NewEngine(cfg.Seed, n, specs, func(id sim.ElemID) bool { return local(int(id)) })
	if err != nil {
		return nil, err
	}

	hostOf := make([]int32, n)
	for i := range hostOf {
		hostOf[i] = -1
	}
	for hi, node := range t.Hosts {
		hostOf[node] = int32(hi)
	}
	tr, err := hostsim.NewTransport(cfg.Transport, cfg.Flows, func(h int) bool { return local(t.Hosts[h]) })
	if err != nil {
		return nil, err
	}
	if err := tr.SetTasks(cfg.Tasks, len(t.Hosts)); err != nil {
		return nil, err
	}
	if c := &tr.Cfg; c.INT.Enabled || c.EndpointDelay {
		eng.Pool.EnableTelemetry()
	}
	// Every switch, whatever its tier, appends what the hosts' INT header
	// expects.
	intCfg := switchsim.INT{Enabled: tr.Cfg.INT.Enabled, HopBytes: int32(tr.Cfg.INT.HopBytes)}
	deps, err := checkDeps(cfg.Flows, cfg.Tasks)
	if err != nil {
		return nil, err
	}
	if deps {
		tr.HostElem = make([]sim.ElemID, len(t.Hosts))
		for hi, node := range t.Hosts {
			tr.HostElem[hi] = sim.ElemID(node)
		}
	}
	for i := range cfg.Flows {
		f := &cfg.Flows[i]
		if f.Src < 0 || f.Src >= len(t.Hosts) || f.Dst < 0 || f.Dst >= len(t.Hosts) || f.Src == f.Dst {
			return nil, fmt.Errorf("flow %d: %d -> %d is not a pair of distinct hosts of the %d", f.ID, f.Src, f.Dst, len(t.Hosts))
		}
	}

	swDef, swTiers := cfg.switchConfigs()
	f := &Fabric{eng: eng, topo: t, tr: tr, hosts: make([]*hostsim.Host, len(t.Hosts)),
		switches: make([]*switchsim.Switch, n),
		kind:     make([]uint8, n), hostOf: hostOf, linkPort: linkPort, routes: ix.Routes(), allLocal: cfg.Local == nil}
	// The switches' ports, from one slab that starts a cache line
	// (switchsim.PortSlab): each port then starts one.
	nports := 0
	for node := 0; node < n; node++ {
		if t.Nodes[node].Kind == topologies.Switch && local(node) {
			nports += len(ix.Ports(node))
		}
	}
	slab := switchsim.PortSlab(nports)
	for node := 0; node < n; node++ {
		id := sim.ElemID(node)
		ports := ix.Ports(node)
		switch t.Nodes[node].Kind {
		case topologies.Host:
			f.kind[node] = kindHost
			if !local(node) {
				continue
			}
			if len(ports) != 1 {
				return nil, fmt.Errorf("host %s has %d links; hosts with several NICs are not supported", t.Nodes[node].Name, len(ports))
			}
			p := ports[0]
			h := hostsim.NewHost(id, hostOf[node], DirID(p.Link, t.Links[p.Link].A == node), tr)
			f.hosts[hostOf[node]] = h
		case topologies.Switch:
			f.kind[node] = kindSwitch
			if !local(node) {
				continue
			}
			sp := slab[:len(ports):len(ports)]
			slab = slab[len(ports):]
			for pi, p := range ports {
				sp[pi] = switchsim.Port{Link: DirID(p.Link, t.Links[p.Link].A == node), In: DirID(p.Link, t.Links[p.Link].A != node), Peer: sim.ElemID(p.Peer),
					Queue: t.Links[p.Link].Queue}
			}
			sw := switchsim.New(id, node, sp, ix.Routes(), cfg.Forwarding)
			sc := swDef
			if c, ok := swTiers[t.Nodes[node].Tier]; ok {
				sc = c
			}
			sc.INT = intCfg
			if err := sw.Configure(eng, &sc); err != nil {
				return nil, fmt.Errorf("switch %s: %v", t.Nodes[node].Name, err)
			}
			sw.SampleEvery = cfg.QueueSample
			f.switches[node] = sw
		default:
			return nil, fmt.Errorf("node %d (%s) has no kind", node, t.Nodes[node].Name)
		}
	}
	f.pfcReport, f.lossless = cfg.PFCReport(), cfg.LosslessClasses()
	if f.pfcReport {
		for _, h := range f.hosts {
			if h != nil {
				h.EnablePFC()
			}
		}
	}
	if err := f.setStorms(cfg.Storms, swDef, swTiers); err != nil {
		return nil, err
	}
	if f.threshold = cfg.Watchdog(); f.threshold > 0 {
		f.every = DeadlockGrid(f.threshold)
	}
	f.extOf = make([]*external, n)
	if err := f.newExternals(&cfg); err != nil {
		return nil, err
	}
	eng.OnLazyDone = f.lazyDone
	for i := range cfg.Flows {
		fl := &cfg.Flows[i]
		if h := f.hosts[fl.Src]; h != nil {
			h.ScheduleStart(eng, fl)
		}
	}
	for k := range cfg.Tasks {
		if h := f.hosts[cfg.Tasks[k].Host]; h != nil {
			h.ScheduleTask(eng, int32(k))
		}
	}
	return f, nil
}

// setStorms gives the storm hosts their stalling receive pipelines, with
// the defaults of their switches' PFC.
func (f *Fabric) setStorms(storms []HostStorm, def switchsim.Config, tiers map[int]switchsim.Config) error {
	t := f.topo
	seen := map[int]bool{}
	for _, st := range storms {
		if st.Host < 0 || st.Host >= len(t.Hosts) {
			return fmt.Errorf("pfc storm on host %d: the fabric has %d hosts", st.Host, len(t.Hosts))
		}
		if seen[st.Host] {
			return fmt.Errorf("pfc storm on host %d: one per host", st.Host)
		}
		seen[st.Host] = true
		h := f.hosts[st.Host]
		if h == nil {
			continue
		}
		sw := f.eng.LinkTo(h.Link)
		sc := def
		if c, ok := tiers[t.Nodes[sw].Tier]; ok {
			sc = c
		}
		s := st.Storm
		s.Lossless |= losslessMask(&sc)
		if s.Lossless == 0 {
			return fmt.Errorf("pfc storm on %s: its switch %s has no lossless class", t.Nodes[t.Hosts[st.Host]].Name, t.Nodes[sw].Name)
		}
		p := sc.PFC.WithDefaults()
		if s.XOFF == 0 {
			s.XOFF, s.XON = p.XOFF, p.XON
		}
		if s.Quanta == 0 {
			s.Quanta = p.Quanta
		}
		if s.Headroom == 0 {
			s.Headroom = p.Headroom
		}
		if s.Headroom == 0 {
			s.Headroom = switchsim.DerivedHeadroom(f.eng.Links[h.Link], p.MTU)
		}
		if err := h.SetStorm(f.eng, s); err != nil {
			return fmt.Errorf("pfc storm on %s: %v", t.Nodes[t.Hosts[st.Host]].Name, err)
		}
	}
	return nil
}

// Deadlock is the PFC deadlock RunUntilBatch found, or nil. The fabric
// stands as it was at the deadlock's time (every event before it ran, none
// after).
func (f *Fabric) Deadlock() *Deadlock { return f.deadlock }

// DeadlockThreshold is the PFC deadlock search's threshold (0: none).
func (f *Fabric) DeadlockThreshold() sim.Time { return f.threshold }

// PausedPorts lists the local switches' class queues that their peers
// keep paused at at while they hold packets (sim.FindDeadlock).
// Precondition: no local event is due before at.
func (f *Fabric) PausedPorts(at sim.Time) []sim.PausedPort {
	var ps []sim.PausedPort
	for _, s := range f.switches {
		if s != nil {
			ps = s.PausedPorts(at, ps)
		}
	}
	return ps
}

// baseRTT is the line rate of host src's link and an estimate of a flow's
// unloaded round trip over hops links (HPCC's B and T): every link of the
// path taken to be like the host's link (its delay, its rate for one full
// data packet and one ACK), and every switch on it like the host's switch
// (its latency, both ways). Exact on uniform fabrics; a scenario with
// other links sets HPCC's base_rtt_us (docs/decisions.md).
func baseRTT(t *topologies.Topology, ix *topologies.Index, src, hops int, tc *hostsim.Config) (sim.Bandwidth, sim.Time) {
	ports := ix.Ports(t.Hosts[src])
	if len(ports) == 0 || hops <= 0 {
		return 0, 0
	}
	l := t.Links[ports[0].Link]
	if l.Rate <= 0 {
		return 0, 0
	}
	n := sim.Time(hops)
	lat := t.Nodes[ports[0].Peer].Latency
	rtt := n*(2*l.Delay+l.Rate.TxTime(int(tc.MTU))+l.Rate.TxTime(int(tc.AckSize))) + 2*(n-1)*lat
	return l.Rate, rtt
}

// Engine is the fabric's event engine: its clock, packet pool, links and
// counters.
func (f *Fabric) Engine() *sim.Engine { return f.eng }

// Topology is the topology the fabric was built from (read-only).
func (f *Fabric) Topology() *topologies.Topology { return f.topo }

// Transport is the hosts' shared transport state: flows, their records
// and the cwnd log.
func (f *Fabric) Transport() *hostsim.Transport { return f.tr }

// Host is host i (topology host index), or nil when it is not local.
func (f *Fabric) Host(i int) *hostsim.Host { return f.hosts[i] }

// NumHosts is the number of hosts of the topology, local or not.
func (f *Fabric) NumHosts() int { return len(f.hosts) }

// Switch is the switch at topology node n, or nil when n is a host or not
// local.
func (f *Fabric) Switch(n int) *switchsim.Switch { return f.switches[n] }

// NumNodes is the number of topology nodes (hosts and switches).
func (f *Fabric) NumNodes() int { return len(f.switches) }

// Routes is the compiled forwarding state (rows for the local switches).
func (f *Fabric) Routes() *topologies.Routes { return f.routes }

// AllLocal says the fabric holds every node (no Config.Local), so Routes
// has every switch's row.
func (f *Fabric) AllLocal() bool { return f.allLocal }

// Done reports whether every flow with a local endpoint has finished.
func (f *Fabric) Done() bool { return f.tr.Done == f.tr.Local }

// RunUntil processes every event before horizon and returns the number of
// events processed. A run does not stop when the flows finish: it drains
// the events that remain (stray packets, timers), so that where it stops
// does not depend on how the fabric is partitioned.
func (f *Fabric) RunUntil(horizon sim.Time) uint64 {
	e := f.eng
	start := e.Stats.Events
	mask := f.yieldMask
	for i := uint32(1); ; i++ {
		ev := e.Step(horizon)
		if ev == nil {
			break
		}
		f.dispatch(ev)
		if mask != 0 && i&mask == 0 {
			runtime.Gosched()
		}
	}
	return e.Stats.Events - start
}

// RunUntilBatch is RunUntil with at most n events, so callers can report
// progress. It returns false when nothing is left before horizon, or when
// the PFC deadlock search found one (Deadlock).
//
// With a PFC watchdog it searches for a deadlock as a partitioned run's
// barrier does (coordinator/barrier), so the same one is found at the same
// time: it runs in stretches that end at grid times (multiples of
// DeadlockGrid), and at the end h of each, with every event before h run,
// searches the grid times from h to the next event (sim.FindDeadlock).
func (f *Fabric) RunUntilBatch(horizon sim.Time, n int) bool {
	return f.RunBatch(horizon, horizon, n) == BatchMore
}

// BatchResult says why RunBatch returned.
type BatchResult uint8

const (
	// BatchMore: n events ran; there may be more.
	BatchMore BatchResult = 1 + iota
	// BatchPaused: every event before the pause ran and the run is not
	// over: RunBatch with a later pause goes on exactly as if it had not
	// paused (a checkpoint's boundary).
	BatchPaused
	// BatchOver: nothing is left before the limit, or a PFC deadlock was
	// found.
	BatchOver
)

// RunBatch is RunUntilBatch with the run's limit and a pause <= limit:
// it runs at most n events before pause, and the PFC deadlock search
// (which looks ahead to the limit) does not depend on where it pauses.
func (f *Fabric) RunBatch(limit, pause sim.Time, n int) BatchResult {
	e := f.eng
	pause = min(pause, limit)
	if f.every == 0 && f.ext == nil {
		for i := 0; i < n; i++ {
			ev := e.Step(pause)
			if ev == nil {
				if pause < limit && e.NextEventTime() < limit {
					return BatchPaused
				}
				return BatchOver
			}
			f.dispatch(ev)
		}
		return BatchMore
	}
	if f.ext != nil {
		// An external element's state is not the fabric's to checkpoint
		// (runner refuses checkpoints with external elements), so a run
		// with one never pauses before its limit.
		if f.runExternalBatch(limit, n) {
			return BatchMore
		}
		return BatchOver
	}
	for i := 0; i < n; {
		if f.deadlock != nil {
			return BatchOver
		}
		if f.gridEnd == 0 {
			if f.gridEnd = f.checkDeadlock(0, limit); f.gridEnd == 0 {
				return BatchOver
			}
		}
		h := min(limit, f.gridEnd)
		if h > pause {
			// The stretch goes on past the pause: run to the pause only.
			if ev := e.Step(pause); ev != nil {
				f.dispatch(ev)
				i++
				continue
			}
			return BatchPaused
		}
		if ev := e.Step(h); ev != nil {
			f.dispatch(ev)
			i++
			continue
		}
		if h >= limit {
			return BatchOver
		}
		if f.gridEnd = f.checkDeadlock(h, limit); f.gridEnd == 0 {
			return BatchOver
		}
	}
	return BatchMore
}

// SnapshotAnchors are the parts of the fabric that a build from the same
// configuration makes identically and a run never changes (the topology,
// the routes, the flows and tasks): a checkpoint refers to them instead
// of copying them (internal/snapshot).
func (f *Fabric) SnapshotAnchors() []any {
	as := []any{f.topo}
	if f.routes != nil {
		as = append(as, f.routes)
	}
	if len(f.tr.Flows) > 0 {
		as = append(as, f.tr.Flows)
	}
	if len(f.tr.Tasks) > 0 {
		as = append(as, f.tr.Tasks)
	}
	return as
}

// checkDeadlock searches the grid times from h (every event before it
// ran) up to the next event, and returns the end of the next stretch: the
// first grid time after the next event, or 0 when the run stops (a
// deadlock, or no event before the limit).
func (f *Fabric) checkDeadlock(h, limit sim.Time) sim.Time {
	m := f.eng.NextEventTime()
	if at, cyc, ok := sim.FindDeadlock(f.PausedPorts(h), h, min(m, limit-1), f.every, f.threshold); ok {
		f.deadlock = &Deadlock{At: at, Threshold: f.threshold, Cycle: cyc}
		return 0
	}
	if m >= limit {
		return 0
	}
	return sim.NextGrid(m, f.every)
}

// LastCompletion is the latest time a local flow finished, at the receiver
// (last byte) or the sender (last ACK): the run's virtual end when every
// flow finished. It is 0 when none did.
func (f *Fabric) LastCompletion() sim.Time {
	var t sim.Time
	for i := range f.tr.Records {
		r := &f.tr.Records[i]
		if r.Finished {
			t = max(t, r.Finish)
		}
		t = max(t, r.AckedAt)
	}
	return t
}

// lazyDone applies the elided transmit-done of link id, which the engine
// passed at the end of a window (sim.Engine.TransmitLazy), at its owner.
func (f *Fabric) lazyDone(id sim.LinkID) {
	from := f.eng.LinkFrom(id)
	switch f.kind[from] {
	case kindHost:
		f.hosts[f.hostOf[from]].LazyDone()
	case kindSwitch:
		f.switches[from].LazyDone(f.eng, int(f.linkPort[id]))
	}
}

func (f *Fabric) dispatch(ev *sim.Event) {
	e := f.eng
	f.prefetch()
	switch f.kind[ev.Dst] {
	case kindHost:
		h := f.hosts[f.hostOf[ev.Dst]]
		switch ev.Kind {
		case sim.EvArrive:
			h.OnArrive(e, ev.Pkt)
		case sim.EvTxDone:
			h.OnTxDone(e)
		case sim.EvTimer:
			h.OnTimer(e, ev)
		}
	case kindSwitch:
		s := f.switches[ev.Dst]
		switch ev.Kind {
		case sim.EvArrive:
			// The port the arrival came in by (the one its link's reverse
			// leaves by), which the engine read beside the wire.
			s.OnArrive(e, ev.Pkt, e.ArrivalPort())
		case sim.EvTxDone:
			s.OnTxDone(e, int(f.linkPort[ev.Arg]))
		case sim.EvTimer:
			s.OnTimer(e, ev.Arg)
		}
	case kindCompat:
		f.compat.OnEvent(e, ev)
	default:
		f.dispatchExternal(ev)
	}
}

// prefetch asks for what the events ahead will read in the elements
// (the engine's Step asks for their packets and links, eight events
// ahead): eight ahead, the first two lines of the element's state; four
// ahead, when its line is in, the egress port a switch arrival will take
// (Switch.Prefetch) or the flow state a host arrival goes to
// (Host.Prefetch). docs/decisions.md, "Prefetching the next events".
func (f *Fabric) prefetch() {
	e := f.eng
	if n := e.Ahead(8); n != nil {
		var a uintptr
		switch f.kind[n.Dst] {
		case kindSwitch:
			a = uintptr(unsafe.Pointer(f.switches[n.Dst]))
		case kindHost:
			a = uintptr(unsafe.Pointer(f.hosts[f.hostOf[n.Dst]]))
		}
		if a != 0 {
			prefetch.Two(a, a+64)
		}
	}
	n := e.Ahead(4)
	if n == nil || n.Kind != sim.EvArrive {
		return
	}
	switch f.kind[n.Dst] {
	case kindSwitch:
		if s := f.switches[n.Dst]; s != nil {
			s.Prefetch(e, n.Pkt)
		}
	case kindHost:
		if h := f.hosts[f.hostOf[n.Dst]]; h != nil {
			h.Prefetch(e, n.Pkt)
		}
	}
}

// dispatchExternal hands an event to an external element's proxy (out of
// dispatch's switch, whose three cases stay a short chain of compares).
func (f *Fabric) dispatchExternal(ev *sim.Event) {
	if f.kind[ev.Dst] == kindExternal && ev.Kind == sim.EvArrive {
		f.extOf[ev.Dst].onArrive(f.eng, ev.Pkt, int(f.linkPort[ev.Arg^1]))
	}
}

// Conservation counts packets for the conservation check: every packet a
// host created is consumed by a host, dropped, or still in the network.
type Conservation struct {
	Created, Consumed                        uint64
	QueueDrops, LinkLost, NoRoute, Misrouted uint64
	InQueues, OnWire                         int
	PoolLive                                 int
	// CtlCreated counts the PFC PAUSE frames switches and hosts made,
	// CtlConsumed those they received. QueueDrops includes the packets
	// hosts' receive buffers dropped (hostsim.Storm).
	CtlCreated, CtlConsumed uint64
}

// Balance is Created - (Consumed + drops + in flight); 0 when conserved.
func (c Conservation) Balance() int64 {
	return int64(c.Created+c.CtlCreated) - int64(c.Consumed+c.CtlConsumed+c.QueueDrops+c.LinkLost+c.NoRoute+c.Misrouted) -
		int64(c.InQueues+c.OnWire)
}

// Conservation gathers the counts of the local elements.
func (f *Fabric) Conservation() Conservation {
	var c Conservation
	if w := f.compat; w != nil {
		c.Created, c.Consumed, c.QueueDrops = w.Created, w.Consumed, w.Dropped
		c.InQueues, c.OnWire = w.Conservation()
		c.PoolLive = f.eng.Pool.Live()
		return c
	}
	for _, h := range f.hosts {
		if h == nil {
			continue
		}
		c.Created += h.Created
		c.Consumed += h.Consumed
		c.Misrouted += h.Misrouted
		c.CtlConsumed += h.PausesRecv
		c.CtlCreated += h.PausesSent()
		c.QueueDrops += h.RxDrops()
		c.InQueues += h.Queued()
	}
	for _, s := range f.switches {
		if s == nil {
			continue
		}
		c.NoRoute += s.NoRoute
		c.CtlCreated += s.CtlCreated
		c.CtlConsumed += s.CtlConsumed
		c.InQueues += s.Queued()
		for i := range s.Ports {
			c.QueueDrops += s.Ports[i].Dropped
		}
	}
	for _, x := range f.ext {
		c.InQueues += len(x.pending)
		c.QueueDrops += x.drops
	}
	c.LinkLost = f.eng.Stats.LinkLost
	c.OnWire = f.eng.OnWire()
	c.PoolLive = f.eng.Pool.Live()
	return c
}

// checkDeps checks the flows' and tasks' dependencies (targets are flows
// or tasks of the lists, delays are not negative) and reports whether
// there are any.
func checkDeps(flows []hostsim.FlowSpec, tasks []hostsim.TaskSpec) (bool, error) {
	check := func(what string, id int, list []int32) error {
		for _, g := range list {
			if g >= 0 && int(g) >= len(flows) {
				return fmt.Errorf("%s %d activates flow %d, which does not exist", what, id, g)
			}
			if k := hostsim.TaskIndex(g); g < 0 && int(k) >= len(tasks) {
				return fmt.Errorf("%s %d activates task %d, which does not exist", what, id, k)
			}
		}
		return nil
	}
	has := len(tasks) > 0
	for i := range flows {
		f := &flows[i]
		if f.Need < 0 || f.Delay < 0 {
			return false, fmt.Errorf("flow %d: need %d and delay %v must not be negative", f.ID, f.Need, f.Delay)
		}
		if f.Next == nil {
			continue
		}
		has = true
		for _, list := range [2][]int32{f.OnRecvDone(), f.OnSendDone()} {
			if err := check("flow", int(f.ID), list); err != nil {
				return false, err
			}
		}
	}
	for k := range tasks {
		if err := check("task", k, tasks[k].Next); err != nil {
			return false, err
		}
	}
	return has, nil
}
