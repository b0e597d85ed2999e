package scenario

import (
	"math"
	"slices"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/internal/yamlx"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// NSCC holds the parameters of `cc: nscc` (Ultra Ethernet's NSCC over the
// UET transport: PDS receivers, packet spraying with a load-balancing
// policy). docs/scenario.md gives each default and its source; those
// derived from the fabric are computed as uet-htsim's main_uec.cpp does.
type NSCC struct {
	// Load balancing (cc/uetpaths.go).
	LB         string          `yaml:"lb"`          // oblivious, bitmap, reps, mixed (default)
	Entropies  int             `yaml:"entropies"`   // default 64, a power of two
	Shuffle    *bool           `yaml:"shuffle"`     // default true
	REPSBuffer int             `yaml:"reps_buffer"` // default 8
	REPSFreeze *yamlx.Duration `yaml:"reps_freeze"` // default 10ms with trimming, else off
	// Receivers (hostsim/uet.go) and the hosts' NIC (hostsim/uet_nic.go).
	AckBytes yamlx.Size `yaml:"ack_bytes"` // default 16384
	NIC      string     `yaml:"nic"`       // uec (default) or fifo
	// The window (cc/nscc.go).
	LinkRate          yamlx.Rate      `yaml:"link_rate"`
	NetworkRTT        yamlx.Duration  `yaml:"network_rtt"`
	BaseRTT           yamlx.Duration  `yaml:"base_rtt"`
	TargetQDelay      yamlx.Duration  `yaml:"target_qdelay"`
	QuickAdapt        *bool           `yaml:"quick_adapt"`
	QAGate            *int            `yaml:"qa_gate"`
	QAThreshold       *float64        `yaml:"qa_threshold"`
	Gamma             *float64        `yaml:"gamma"`
	MaxMD             *float64        `yaml:"max_md"`
	FI                *float64        `yaml:"fi"`
	FIScale           *float64        `yaml:"fi_scale"`
	Eta               *float64        `yaml:"eta"`
	Alpha             *float64        `yaml:"alpha"`
	DelayAlpha        *float64        `yaml:"delay_alpha"`
	FastIncreaseDelay *yamlx.Duration `yaml:"fast_increase_delay"`
	MaxCwndBDP        float64         `yaml:"max_cwnd_bdp"`
	AdjustBytes       int             `yaml:"adjust_bytes"`
	AdjustPeriod      yamlx.Duration  `yaml:"adjust_period"`
	BaseRTTOnNack     *bool           `yaml:"base_rtt_on_nack"`
}

// nscc configures cc nscc's transport after the fabric is built: the
// recovery (uet), the load-balancing policy, the receivers, and the
// controller's parameters, those not given derived from the fabric as
// htsim's main_uec.cpp derives them (calculate_rtt, the queue size and
// trimming). Other controllers refuse the section.
func (l *loader) nscc(t *Transport, sw *Switch, topo *topologies.Topology, c *hostsim.Config) error {
	if c.CC.CC != "nscc" {
		if t.NSCC != nil {
			return l.errf("transport.nscc", "only for cc nscc, not %q", c.CC.CC)
		}
		return nil
	}
	if len(t.Options) > 0 {
		return l.errf("transport.options", "cc nscc takes its settings in transport.nscc")
	}
	n := t.NSCC
	if n == nil {
		n = &NSCC{}
	}
	switch t.Recovery {
	case "", "uet":
		c.CC.Recovery = "uet"
	default:
		return l.errf("transport.recovery", "cc nscc needs recovery uet, got %q", t.Recovery)
	}
	if !c.ECN {
		return l.errf("transport.cc", "nscc reacts to ECN marks, which it never sees without transport.ecn: true")
	}
	// Load balancing.
	lb := n.LB
	if lb == "" {
		lb = cc.NSCCDefaultLB
	}
	mode, err := cc.ParsePathMode(lb)
	if err != nil || !mode.UET() {
		return l.errf("transport.nscc.lb", "unknown policy %q (known: oblivious, bitmap, reps, mixed)", lb)
	}
	pc := cc.PathConfig{Mode: mode, Entropies: 64, REPSBuffer: n.REPSBuffer}
	if n.Entropies != 0 {
		pc.Entropies = n.Entropies
	}
	if pc.Entropies < 1 || pc.Entropies > 1<<15 || pc.Entropies&(pc.Entropies-1) != 0 {
		return l.errf("transport.nscc.entropies", "must be a power of two in [1, 32768], got %d", pc.Entropies)
	}
	if n.REPSBuffer < 0 || n.REPSBuffer > 1<<15 {
		return l.errf("transport.nscc.reps_buffer", "must be between 1 and %d, got %d", 1<<15, n.REPSBuffer)
	}
	// REPS freezes after a timeout by default when switches trim (htsim's
	// UecMpReps freezes only with trimming; without it, it aborts).
	if sw.Trim != nil {
		pc.REPSFreeze = cc.REPSDefaultFreeze
	}
	if f := n.REPSFreeze; f != nil {
		if *f < 0 || *f > MaxNSCCDelay {
			return l.errf("transport.nscc.reps_freeze", "must be between 0 (off) and %v, got %v", sim.Time(MaxNSCCDelay), sim.Time(*f))
		}
		pc.REPSFreeze = sim.Time(*f)
	}
	if n.Shuffle != nil {
		pc.NoShuffle = !*n.Shuffle
	}
	c.STrack = &pc
	// The receiver counts bytes towards the next ACK in an int32.
	if n.AckBytes < 0 || n.AckBytes > MaxPDSAckBytes {
		return l.errf("transport.nscc.ack_bytes", "must be between 1 and %d, got %d", MaxPDSAckBytes, int64(n.AckBytes))
	}
	c.PDS.AckBytes = int64(n.AckBytes)
	switch n.NIC {
	case "", "uec":
	case "fifo":
		c.PDS.FIFONIC = true
	default:
		return l.errf("transport.nscc.nic", "unknown NIC %q (known: uec, fifo)", n.NIC)
	}

	// The window: htsim's defaults, then the fabric's numbers.
	nc := cc.DefaultNSCCConfig()
	nc.Header = c.Header
	nc.Trimming = sw.Trim != nil
	nc.LinkRate = hostRate(topo)
	if n.LinkRate != 0 {
		nc.LinkRate = sim.Bandwidth(n.LinkRate)
	}
	if nc.LinkRate <= 0 {
		return l.errf("transport.nscc.link_rate", "the fabric has no host link: give the NIC's rate")
	}
	hops, lat := diameter(topo)
	// calculate_rtt: 2 × diameter latency + a data packet and an ACK
	// serialised at the host rate on each hop of the diameter.
	nc.NetworkRTT = 2*lat + sim.Time(hops)*(nc.LinkRate.TxTime(int(c.MTU))+nc.LinkRate.TxTime(int(c.AckSize)))
	if n.NetworkRTT != 0 {
		nc.NetworkRTT = sim.Time(n.NetworkRTT)
	}
	durs := []struct {
		path string
		v    yamlx.Duration
		p    *sim.Time
	}{{"base_rtt", n.BaseRTT, &nc.BaseRTT}, {"target_qdelay", n.TargetQDelay, &nc.TargetQDelay},
		{"adjust_period", n.AdjustPeriod, &nc.AdjustPeriod}}
	for _, d := range durs {
		if d.v < 0 || d.v > MaxNSCCDelay {
			return l.errf("transport.nscc."+d.path, "must be between 0 and %v, got %v", sim.Time(MaxNSCCDelay), sim.Time(d.v))
		}
		*d.p = sim.Time(d.v)
	}
	if n.NetworkRTT > MaxNSCCDelay {
		return l.errf("transport.nscc.network_rtt", "must be at most %v, got %v", sim.Time(MaxNSCCDelay), sim.Time(n.NetworkRTT))
	}
	if n.FastIncreaseDelay != nil {
		if *n.FastIncreaseDelay < 0 || *n.FastIncreaseDelay > MaxNSCCDelay {
			return l.errf("transport.nscc.fast_increase_delay", "must be between 0 and %v, got %v",
				sim.Time(MaxNSCCDelay), sim.Time(*n.FastIncreaseDelay))
		}
		nc.FastIncreaseDelay = sim.Time(*n.FastIncreaseDelay)
	}
	// Each number in its range; open means the bound itself is refused.
	floats := []struct {
		path           string
		v              *float64
		p              *float64
		lo, hi         float64
		loOpen, hiOpen bool
	}{{"qa_threshold", n.QAThreshold, &nc.QAThreshold, 0, MaxNSCCGain, false, false},
		{"gamma", n.Gamma, &nc.Gamma, 0, 1, true, false}, {"max_md", n.MaxMD, &nc.MaxMD, 0, 1, true, true},
		{"fi", n.FI, &nc.FI, 0, MaxNSCCGain, false, false}, {"fi_scale", n.FIScale, &nc.FIScale, 0, MaxNSCCGain, false, false},
		{"eta", n.Eta, &nc.Eta, 0, MaxNSCCGain, false, false}, {"alpha", n.Alpha, &nc.Alpha, 0, MaxNSCCGain, false, false},
		{"delay_alpha", n.DelayAlpha, &nc.DelayAlpha, 0, 1, true, false}}
	for _, f := range floats {
		if f.v == nil {
			continue
		}
		v := *f.v
		if math.IsNaN(v) || v < f.lo || v > f.hi || f.loOpen && v == f.lo || f.hiOpen && v == f.hi {
			lo, hi := "[", "]"
			if f.loOpen {
				lo = "("
			}
			if f.hiOpen {
				hi = ")"
			}
			return l.errf("transport.nscc."+f.path, "must be in %s%g, %g%s, got %g", lo, f.lo, f.hi, hi, v)
		}
		*f.p = v
	}
	if n.MaxCwndBDP != 0 {
		if math.IsNaN(n.MaxCwndBDP) || n.MaxCwndBDP < 0 || n.MaxCwndBDP > MaxNSCCGain {
			return l.errf("transport.nscc.max_cwnd_bdp", "must be in (0, %g], got %g", float64(MaxNSCCGain), n.MaxCwndBDP)
		}
		nc.MaxWndBDP = n.MaxCwndBDP
	}
	if n.AdjustBytes != 0 {
		if n.AdjustBytes < 1 || n.AdjustBytes > MaxCount {
			return l.errf("transport.nscc.adjust_bytes", "must be between 1 and %d MTUs, got %d", MaxCount, n.AdjustBytes)
		}
		nc.AdjustBytes = int64(n.AdjustBytes)
	}
	if n.QAGate != nil {
		if *n.QAGate < 0 || *n.QAGate > 30 {
			return l.errf("transport.nscc.qa_gate", "must be between 0 and 30, got %d", *n.QAGate)
		}
		nc.QAGate = uint(*n.QAGate)
	}
	if n.QuickAdapt != nil {
		nc.QuickAdapt = *n.QuickAdapt
	}
	if n.BaseRTTOnNack != nil {
		nc.BaseRTTOnNack = *n.BaseRTTOnNack
	}
	if t.InitCwnd > 0 {
		nc.InitCwnd = int64(t.InitCwnd) // else the ceiling, as htsim
	}
	// The window's ceiling (max_cwnd_bdp BDPs of the base RTT, at most the
	// network RTT) and the network's BDP stay byte counts a run can hold.
	rtt := nc.NetworkRTT
	if nc.BaseRTT != 0 {
		rtt = nc.BaseRTT
	}
	bdp := float64(max(rtt, nc.NetworkRTT)) / float64(sim.Second) * float64(nc.LinkRate) / 8
	if ceil := nc.MaxWndBDP * bdp; ceil > MaxBuffer || bdp > MaxBuffer {
		return l.errf("transport.nscc.max_cwnd_bdp", "the window's ceiling, max_cwnd_bdp (%g) × link_rate × RTT (%v), is %.4g bytes: more than %d",
			nc.MaxWndBDP, max(rtt, nc.NetworkRTT), ceil, int64(MaxBuffer))
	}
	if err := nc.Validate(); err != nil {
		return l.errf("transport.nscc", "%v", err)
	}
	c.CC.NSCC = &nc

	// Per-packet timeouts: htsim's _min_rto, 15 us + 6 queues' worth of
	// the largest switch buffer at the host rate, unless transport.rto
	// gives a fixed one.
	r := &t.RTO
	switch {
	case r.Mode == "fixed":
	case r.Mode == "" && r.Value == 0 && r.Min == 0 && r.Max == 0 && r.Initial == 0 && r.Backoff == nil:
		c.RTO = cc.RTOConfig{Mode: cc.RTOFixed,
			Fixed: 15*sim.Microsecond + 6*nc.LinkRate.TxTime(int(maxBuffer(topo)))}
	default:
		return l.errf("transport.rto", "cc nscc times each packet out after a fixed rto: give {mode: fixed, value: D} or leave it out")
	}
	if err := c.Validate(); err != nil {
		return l.errf("transport", "%v", err)
	}
	return nil
}

// hostRate is the fastest host link of the fabric (the NIC rate NSCC
// scales by), 0 without hosts.
func hostRate(topo *topologies.Topology) sim.Bandwidth {
	var r sim.Bandwidth
	isHost := hostSet(topo)
	for i := range topo.Links {
		lk := &topo.Links[i]
		if isHost[lk.A] || isHost[lk.B] {
			r = max(r, lk.Rate)
		}
	}
	return r
}

// maxBuffer is the largest switch port buffer of the fabric.
func maxBuffer(topo *topologies.Topology) int64 {
	var b int64
	for i := range topo.Links {
		b = max(b, topo.Links[i].Queue.Buffer)
	}
	return b
}

func hostSet(topo *topologies.Topology) []bool {
	isHost := make([]bool, len(topo.Nodes))
	for _, h := range topo.Hosts {
		isHost[h] = true
	}
	return isHost
}

// diameter is the fabric's diameter in links and the latency of that
// path, the largest over host pairs of their shortest path (htsim's
// get_diameter and get_diameter_latency for its fat-trees). Hosts do not
// forward. One breadth-first search per switch that has hosts.
func diameter(topo *topologies.Topology) (int, sim.Time) {
	isHost := hostSet(topo)
	type edge struct {
		to    int
		delay sim.Time
	}
	adj := make([][]edge, len(topo.Nodes))
	for i := range topo.Links {
		lk := &topo.Links[i]
		adj[lk.A] = append(adj[lk.A], edge{lk.B, lk.Delay})
		adj[lk.B] = append(adj[lk.B], edge{lk.A, lk.Delay})
	}
	// Each switch's slowest host link (0: no host).
	hostLat := make([]sim.Time, len(topo.Nodes))
	hasHost := make([]bool, len(topo.Nodes))
	bestHops, bestLat := 0, sim.Time(0)
	for _, h := range topo.Hosts {
		for _, e := range adj[h] {
			if isHost[e.to] { // two hosts joined by a link
				bestHops, bestLat = max(bestHops, 1), max(bestLat, e.delay)
				continue
			}
			hasHost[e.to] = true
			hostLat[e.to] = max(hostLat[e.to], e.delay)
		}
	}
	var srcs []int
	for n, ok := range hasHost {
		if ok {
			srcs = append(srcs, n)
		}
	}
	slices.Sort(srcs)
	dist := make([]int, len(topo.Nodes))
	lat := make([]sim.Time, len(topo.Nodes))
	var queue []int
	for _, s := range srcs {
		for i := range dist {
			dist[i] = -1
		}
		dist[s], lat[s] = 0, 0
		queue = append(queue[:0], s)
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			if hasHost[u] {
				h := dist[u] + 2
				l := lat[u] + hostLat[s] + hostLat[u]
				if h > bestHops || h == bestHops && l > bestLat {
					bestHops, bestLat = h, l
				}
			}
			for _, e := range adj[u] {
				if isHost[e.to] || dist[e.to] >= 0 {
					continue
				}
				dist[e.to], lat[e.to] = dist[u]+1, lat[u]+e.delay
				queue = append(queue, e.to)
			}
		}
	}
	return bestHops, bestLat
}
