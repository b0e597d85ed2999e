// ParseHtsimTopo reads htsim's tiered fat-tree description (.topo files).
//
// Source followed: Broadcom/csg-htsim, sim/datacenter/fat_tree_topology.cpp
// at commit f661b2fa3a9070a6366f4bc3db695da1ce5509ae:
//   - FatTreeTopology::load(istream&) for the syntax and the required keys;
//   - FatTreeTopology::set_custom_params for the sizing (pods, ToRs and
//     aggregation switches per pod, core switches) and its consistency
//     checks;
//   - FatTreeTopology::init_network for the wiring, including Bundle (one
//     queue and pipe per bundle member) and the agg-core striping
//     core = podpos + agg_switches_per_pod*l;
//   - fat_tree_topology.h for the meaning of each tier's settings.
// Files of the same shapes as htsim's examples in
// sim/datacenter/topologies/ (fat_tree_1024, leaf_spine_tiny, zrs) build
// the fabrics htsim builds from them (htsim_test.go). The older parser (commit 52ff02fc) lacks Queue_Up and
// Queue_Down; the FatTreeInterDCTopology fork accepts the same keys as
// f661b2fa and, like us, rejects unknown ones.
//
// Format: one "Key value" per line, keys case-insensitive, '#' starts a
// comment. A header (Nodes, Tiers, Podsize) comes first; then one section
// per switch tier, opened by "Tier n" (0 = ToR, 1 = aggregation or spine,
// 2 = core), holding Downlink_speed_Gbps, Downlink_Latency_ns, Radix_Down,
// Radix_Up (not on the top tier), and optionally Switch_Latency_ns,
// Oversubscribed, Bundle, Queue_Down and Queue_Up (bytes). "Downlink"
// settings of tier n are those of the links between tier n and the tier
// below it (hosts, for tier 0).
//
// What we build: hosts h0.., then tor0.., agg0.., core0.. in htsim's order
// (host i is htsim server i, tor j is Switch_LowerPod_j, and so on), links
// in the order init_network creates them, so port numbers equal htsim's
// FatTreeSwitch port numbers. Link tiers are htsim tier + 1 (host-ToR links
// are tier 1), as are switch node tiers. Each bundle member is a separate
// Link (and port), as in htsim; routes spread over all of them.
//
// Deviations from htsim, each deliberate:
//  1. Unknown keys are errors (htsim ignores them). So are keys without a
//     value or with more than one, tier keys before the first Tier line,
//     header keys after it (htsim ignores both), duplicate header keys
//     (htsim keeps the last), a second section for the same tier, a
//     section for a tier the header does not have (htsim ignores it), and
//     Radix_Up or Queue_Up on the top tier of a 2-tier file (htsim refuses
//     them only on tier 2).
//  2. Values must be whole decimal numbers; htsim's stoi reads "100G" as
//     100 and aborts on "fast". Tabs separate fields as spaces do, and '#'
//     after a value starts a comment.
//  3. Downlink_Latency_ns 0 is accepted (htsim takes 0 as "missing").
//  4. Consistency: htsim compares Radix_Down/Radix_Up (integer division)
//     with Oversubscribed, ignoring link speeds. We instead require the
//     wiring it computes to match every radix exactly: each ToR has
//     Radix_Up uplinks, each aggregation switch Radix_Down downlinks and
//     Radix_Up uplinks, each core Radix_Down downlinks. For equal link
//     speeds this accepts the same files; it also accepts files whose
//     tiers differ in speed when the numbers add up, and it rejects the
//     files where htsim's asserts would fire or where it would build
//     switches with more ports than their radix.
//  5. A 2-tier file must have Podsize == Nodes (one pod). htsim accepts
//     more pods but then links every ToR to every spine of every pod,
//     beyond Radix_Up.
//  6. Buffers: a lockstep link has one buffer size for both directions, so
//     a link's buffer is Queue_Down of its upper tier or Queue_Up of its
//     lower tier, and it is an error when both are given and differ. Links
//     whose tiers give neither get Buffer 0; htsim takes those from its -q
//     flag, and callers should do the same with Topology.FillQueues.
//     htsim's host NIC queue (FEEDER_BUFFER) is not described here.
//  7. Switch_Latency_ns becomes Node.Latency of the tier's switches (htsim's
//     FatTreeSwitch delay). The constructor-argument latencies that
//     override the file in htsim (_hop_latency) do not exist here.
//  8. Sizes are capped (1M nodes, 4M links) so that a bad file cannot
//     exhaust memory.
// htsim's mode without Podsize (derive K from Nodes) is not a file format:
// FatTree and LeafSpine build those fabrics.

package topologies

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lockstep-sim/lockstep/sim"
)

// htsimKey is a key of a .topo file.
type htsimKey int

const (
	hkNodes htsimKey = iota
	hkTiers
	hkPodsize
	hkTier
	hkSpeed
	hkLinkLatency
	hkRadixDown
	hkRadixUp
	hkSwitchLatency
	hkOversub
	hkBundle
	hkQueueDown
	hkQueueUp
	numHtsimKeys
)

// htsimKeys gives each key its canonical spelling (as htsim's example
// files write it) and its range of values.
var htsimKeys = [numHtsimKeys]struct {
	name     string
	min, max int64
}{
	hkNodes:         {"Nodes", 1, maxNodes},
	hkTiers:         {"Tiers", 2, 3},
	hkPodsize:       {"Podsize", 1, maxNodes},
	hkTier:          {"Tier", 0, 2},
	hkSpeed:         {"Downlink_speed_Gbps", 1, 1_000_000},
	hkLinkLatency:   {"Downlink_Latency_ns", 0, 1_000_000_000_000},
	hkRadixDown:     {"Radix_Down", 1, 1 << 16},
	hkRadixUp:       {"Radix_Up", 1, 1 << 16},
	hkSwitchLatency: {"Switch_Latency_ns", 0, 1_000_000_000_000},
	hkOversub:       {"Oversubscribed", 1, 1 << 16},
	hkBundle:        {"Bundle", 1, 1 << 16},
	hkQueueDown:     {"Queue_Down", 1, 1 << 40},
	hkQueueUp:       {"Queue_Up", 1, 1 << 40},
}

var htsimKeyByLower = func() map[string]htsimKey {
	m := make(map[string]htsimKey, numHtsimKeys)
	for k := range numHtsimKeys {
		m[strings.ToLower(htsimKeys[k].name)] = k
	}
	return m
}()

func (k htsimKey) String() string { return htsimKeys[k].name }

func (k htsimKey) isHeader() bool { return k == hkNodes || k == hkTiers || k == hkPodsize }

// htsimSection holds the keys of a file's header or of one Tier section,
// with the line each was set on.
type htsimSection struct {
	line int // of the "Tier n" line; 0: the section is absent
	val  [numHtsimKeys]int64
	at   [numHtsimKeys]int // line where each key was set; 0: unset
}

func (s *htsimSection) get(k htsimKey, def int64) int64 {
	if s.at[k] == 0 {
		return def
	}
	return s.val[k]
}

// htsimParser holds one parse.
type htsimParser struct {
	name      string
	lastLine  int
	hdr       htsimSection // Nodes, Tiers, Podsize
	firstTier int          // line of the first Tier line; 0: none yet
	tier      [3]htsimSection
}

// errf formats an error as "name:line: key: message".
func (p *htsimParser) errf(line int, key string, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s: %s", p.name, line, key, fmt.Sprintf(format, args...))
}

// ParseHtsimTopo builds the fabric described by an htsim .topo file; name
// is the file's name, used in errors ("fabric.topo:7: Radix_Down: ...").
// Errors are one line and name the line and the key at fault. See the
// comment at the top of htsim.go for the format, the htsim source it
// follows and where it deviates.
func ParseHtsimTopo(name string, data []byte) (*Topology, error) {
	if name == "" {
		name = "<input>"
	}
	plan, err := parseHtsimPlan(name, data)
	if err != nil {
		return nil, err
	}
	return plan.build(), nil
}

// parseHtsimPlan does all of ParseHtsimTopo but building the fabric.
func parseHtsimPlan(name string, data []byte) (*tieredPlan, error) {
	p := &htsimParser{name: name}
	if err := p.parse(data); err != nil {
		return nil, err
	}
	if err := p.checkPresent(); err != nil {
		return nil, err
	}
	plan, err := p.plan()
	if err != nil {
		return nil, err
	}
	if err := plan.checkSize("fabric"); err != nil {
		return nil, p.errf(p.hdr.at[hkNodes], hkNodes.String(), "%v", err)
	}
	return plan, nil
}

// parse reads every line and records each key's value and line.
func (p *htsimParser) parse(data []byte) error {
	current := -1
	line := 0
	for len(data) > 0 {
		line++
		raw := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		fields := strings.Fields(string(raw))
		for i, f := range fields {
			if strings.HasPrefix(f, "#") {
				fields = fields[:i]
				break
			}
		}
		if len(fields) == 0 {
			continue
		}
		keyTok := keyLabel(fields[0])
		k, ok := htsimKeyByLower[strings.ToLower(fields[0])]
		if !ok {
			return p.errf(line, keyTok, "unknown key (htsim accepts Nodes, Tiers, Podsize, Tier, "+
				"Downlink_speed_Gbps, Downlink_Latency_ns, Radix_Down, Radix_Up, Switch_Latency_ns, "+
				"Oversubscribed, Bundle, Queue_Down, Queue_Up)")
		}
		if len(fields) == 1 {
			return p.errf(line, keyTok, "expected a value")
		}
		if len(fields) > 2 {
			return p.errf(line, keyTok, "expected one value, got %d", len(fields)-1)
		}
		v, msg := parseWhole(fields[1])
		if msg != "" {
			return p.errf(line, keyTok, "%s", msg)
		}
		spec := htsimKeys[k]
		if v < spec.min || v > spec.max {
			return p.errf(line, keyTok, "%s", rangeMsg(v, spec.min, spec.max))
		}
		switch {
		case k.isHeader():
			if p.firstTier != 0 {
				return p.errf(line, keyTok, "must come before the first Tier line (line %d)", p.firstTier)
			}
			if at := p.hdr.at[k]; at != 0 {
				return p.errf(line, keyTok, "duplicate (first set on line %d)", at)
			}
			p.hdr.val[k], p.hdr.at[k] = v, line
		case k == hkTier:
			if p.firstTier == 0 {
				for _, hk := range []htsimKey{hkNodes, hkTiers, hkPodsize} {
					if p.hdr.at[hk] == 0 {
						return p.errf(line, hk.String(), "missing (it must come before the first Tier line)")
					}
				}
				p.firstTier = line
			}
			if tiers := p.hdr.val[hkTiers]; v >= tiers {
				return p.errf(line, keyTok, "the header says Tiers %d, so tiers are 0..%d, got %d", tiers, tiers-1, v)
			}
			if at := p.tier[v].line; at != 0 {
				return p.errf(line, keyTok, "duplicate section for tier %d (first on line %d)", v, at)
			}
			current = int(v)
			p.tier[current].line = line
		default:
			if current < 0 {
				return p.errf(line, keyTok, "must follow a Tier line")
			}
			s := &p.tier[current]
			if at := s.at[k]; at != 0 {
				return p.errf(line, keyTok, "duplicate in Tier %d (first set on line %d)", current, at)
			}
			top := current == int(p.hdr.val[hkTiers])-1
			if top && (k == hkRadixUp || k == hkQueueUp) {
				return p.errf(line, keyTok, "tier %d is the top tier and has no uplinks", current)
			}
			if current == 0 && k == hkBundle && v != 1 {
				return p.errf(line, keyTok, "must be 1 in Tier 0 (htsim does not bundle host links), got %d", v)
			}
			s.val[k], s.at[k] = v, line
		}
	}
	p.lastLine = max(line, 1)
	return nil
}

// checkPresent reports missing header keys, sections and required keys.
func (p *htsimParser) checkPresent() error {
	for _, hk := range []htsimKey{hkNodes, hkTiers, hkPodsize} {
		if p.hdr.at[hk] == 0 {
			return p.errf(p.lastLine, hk.String(), "missing")
		}
	}
	tiers := int(p.hdr.val[hkTiers])
	for t := 0; t < tiers; t++ {
		s := &p.tier[t]
		if s.line == 0 {
			return p.errf(p.lastLine, hkTier.String(), "no section for tier %d (the header says Tiers %d)", t, tiers)
		}
		required := []htsimKey{hkSpeed, hkLinkLatency, hkRadixDown}
		if t < tiers-1 {
			required = append(required, hkRadixUp)
		}
		for _, k := range required {
			if s.at[k] == 0 {
				return p.errf(s.line, k.String(), "missing in the Tier %d section", t)
			}
		}
	}
	return nil
}

// plan sizes the fabric as set_custom_params does and checks that the
// wiring matches every radix (deviation 4 in the file comment).
func (p *htsimParser) plan() (*tieredPlan, error) {
	nodes, podsize := p.hdr.val[hkNodes], p.hdr.val[hkPodsize]
	tiers := int(p.hdr.val[hkTiers])
	t0, t1, t2 := &p.tier[0], &p.tier[1], &p.tier[2]
	podLine := p.hdr.at[hkPodsize]

	if nodes%podsize != 0 {
		return nil, p.errf(podLine, "Podsize", "Nodes %d is not a multiple of Podsize %d", nodes, podsize)
	}
	pods := nodes / podsize
	if tiers == 2 && pods != 1 {
		return nil, p.errf(podLine, "Podsize", "a 2-tier fabric is one pod, so Podsize must equal Nodes (%d), got %d", nodes, podsize)
	}
	rd0, ru0 := t0.val[hkRadixDown], t0.val[hkRadixUp]
	rd1 := t1.val[hkRadixDown]
	b1 := t1.get(hkBundle, 1)
	if podsize%rd0 != 0 {
		return nil, p.errf(t0.at[hkRadixDown], "Radix_Down", "Podsize %d is not a multiple of Tier 0 Radix_Down %d", podsize, rd0)
	}
	torsPerPod := podsize / rd0
	if ru0%b1 != 0 {
		return nil, p.errf(t0.at[hkRadixUp], "Radix_Up", "Tier 0 Radix_Up %d is not a multiple of Tier 1 Bundle %d", ru0, b1)
	}
	if rd1%b1 != 0 {
		return nil, p.errf(t1.at[hkRadixDown], "Radix_Down", "Tier 1 Radix_Down %d is not a multiple of its Bundle %d", rd1, b1)
	}
	s0, s1 := t0.val[hkSpeed], t1.val[hkSpeed]
	o0 := t0.get(hkOversub, 1)
	if num, den := nodes*s0, s1*o0; num%den != 0 {
		k, at := hkOversub, t0.at[hkOversub]
		if at == 0 {
			k, at = hkSpeed, t1.at[hkSpeed]
		}
		return nil, p.errf(at, k.String(), "%d hosts x %d Gb/s over %d Gb/s ToR uplinks at oversubscription %d is not a whole number of uplinks",
			nodes, s0, s1, o0)
	}
	torUp := nodes * s0 / (s1 * o0)
	if torUp%(pods*rd1) != 0 {
		return nil, p.errf(t1.at[hkRadixDown], "Radix_Down", "%d ToR uplinks do not divide evenly among %d pod(s) of Tier 1 switches with Radix_Down %d",
			torUp, pods, rd1)
	}
	aggsPerPod := torUp / (pods * rd1)
	if aggsPerPod*b1 != ru0 {
		return nil, p.errf(t0.at[hkRadixUp], "Radix_Up", "Tier 0 has Radix_Up %d, but %d Tier 1 switches per pod x Bundle %d give each ToR %d uplinks (check Oversubscribed and the link speeds)",
			ru0, aggsPerPod, b1, aggsPerPod*b1)
	}
	if torsPerPod*b1 != rd1 {
		return nil, p.errf(t1.at[hkRadixDown], "Radix_Down", "Tier 1 has Radix_Down %d, but %d ToRs per pod x Bundle %d give each Tier 1 switch %d downlinks",
			rd1, torsPerPod, b1, torsPerPod*b1)
	}

	plan := &tieredPlan{
		name:        p.name,
		tiers:       tiers,
		pods:        int(pods),
		hostsPerTor: int(rd0),
		torsPerPod:  int(torsPerPod),
		aggsPerPod:  int(aggsPerPod),
		bundle1:     int(b1),
		names:       [3]string{"tor", "agg", "core"},
	}
	if tiers == 3 {
		ru1, rd2 := t1.val[hkRadixUp], t2.val[hkRadixDown]
		b2 := t2.get(hkBundle, 1)
		if ru1%b2 != 0 {
			return nil, p.errf(t1.at[hkRadixUp], "Radix_Up", "Tier 1 Radix_Up %d is not a multiple of Tier 2 Bundle %d", ru1, b2)
		}
		if rd2%b2 != 0 {
			return nil, p.errf(t2.at[hkRadixDown], "Radix_Down", "Tier 2 Radix_Down %d is not a multiple of its Bundle %d", rd2, b2)
		}
		s2 := t2.val[hkSpeed]
		o1 := t1.get(hkOversub, 1)
		if num, den := torUp*s1, s2*o1; num%den != 0 {
			k, at := hkOversub, t1.at[hkOversub]
			if at == 0 {
				k, at = hkSpeed, t2.at[hkSpeed]
			}
			return nil, p.errf(at, k.String(), "%d ToR uplinks x %d Gb/s over %d Gb/s core links at oversubscription %d is not a whole number of uplinks",
				torUp, s1, s2, o1)
		}
		aggUp := torUp * s1 / (s2 * o1)
		if aggUp%rd2 != 0 {
			return nil, p.errf(t2.at[hkRadixDown], "Radix_Down", "%d aggregation uplinks are not a multiple of Tier 2 Radix_Down %d", aggUp, rd2)
		}
		cores := aggUp / rd2
		if cores%aggsPerPod != 0 {
			return nil, p.errf(t2.at[hkRadixDown], "Radix_Down", "%d core switches are not a multiple of the %d Tier 1 switches per pod", cores, aggsPerPod)
		}
		if cores*b2/aggsPerPod != ru1 {
			return nil, p.errf(t1.at[hkRadixUp], "Radix_Up", "Tier 1 has Radix_Up %d, but %d core switches x Bundle %d over %d Tier 1 switches per pod give each %d uplinks",
				ru1, cores, b2, aggsPerPod, cores*b2/aggsPerPod)
		}
		if pods*b2 != rd2 {
			return nil, p.errf(t2.at[hkRadixDown], "Radix_Down", "Tier 2 has Radix_Down %d, but %d pods x Bundle %d give each core %d downlinks",
				rd2, pods, b2, pods*b2)
		}
		plan.cores = int(cores)
		plan.coreGroups = int(cores / aggsPerPod)
		plan.bundle2 = int(b2)
	}

	for t := 0; t < tiers; t++ {
		s := &p.tier[t]
		buf := s.get(hkQueueDown, 0)
		if t > 0 {
			below := &p.tier[t-1]
			if up := below.get(hkQueueUp, 0); below.at[hkQueueUp] != 0 {
				if s.at[hkQueueDown] != 0 && up != buf {
					return nil, p.errf(below.at[hkQueueUp], "Queue_Up",
						"Tier %d Queue_Up %d differs from Tier %d Queue_Down %d (line %d); a link here has one buffer size for both directions",
						t-1, up, t, buf, s.at[hkQueueDown])
				}
				buf = up
			}
		}
		plan.link[t] = TierConfig{
			Rate:  sim.Bandwidth(s.val[hkSpeed]) * sim.GbitPerSecond,
			Delay: sim.Time(s.val[hkLinkLatency]) * sim.Nanosecond,
			Queue: QueueConfig{Buffer: buf},
		}
		plan.latency[t] = sim.Time(s.get(hkSwitchLatency, 0)) * sim.Nanosecond
	}
	return plan, nil
}

// parseWhole parses a whole decimal number. On failure it returns a
// message for the error.
func parseWhole(s string) (int64, string) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return v, ""
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Sprintf("number out of range, got %q", clip(s))
	}
	if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && finite(f) {
		return 0, fmt.Sprintf("expected a whole number, got %q", clip(s))
	}
	return 0, fmt.Sprintf("expected a number, got %q", clip(s))
}

func rangeMsg(v, lo, hi int64) string {
	switch {
	case v < lo && lo == 0:
		return fmt.Sprintf("must not be negative, got %d", v)
	case v < lo && lo == 1:
		return fmt.Sprintf("must be positive, got %d", v)
	default:
		return fmt.Sprintf("must be between %d and %d, got %d", lo, hi, v)
	}
}

// clip shortens s for an error message.
func clip(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// keyLabel is a key token as an error shows it: as written when it is
// plain text, quoted otherwise.
func keyLabel(tok string) string {
	plain := utf8.ValidString(tok) && len(tok) <= 40
	for _, r := range tok {
		if !plain || !unicode.IsGraphic(r) || r == '"' {
			plain = false
			break
		}
	}
	if plain {
		return tok
	}
	return strconv.Quote(clip(tok))
}
