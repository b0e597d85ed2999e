package scenario

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/internal/yamlx"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/stracksim"
	"github.com/lockstep-sim/lockstep/switchsim"
	"github.com/lockstep-sim/lockstep/topologies"
	"github.com/lockstep-sim/lockstep/workloads"
)

// Defaults that docs/scenario.md states.
const (
	DefaultSeed    uint64   = 1
	DefaultBuffer  int64    = 1 << 20
	DefaultMaxTime sim.Time = 10 * sim.Second
)

// Built is a scenario turned into what the engine runs. It is the
// effective scenario: the file after every Edit, and what a distributed
// run sends its nodes (Effective, Files), so that they build exactly this.
// Change a scenario with an Edit before it is built; changing a Built
// value changes nothing that was built from it, which is why its seed and
// digest are read-only.
type Built struct {
	File    string
	Name    string
	StopAt  sim.Time // sim.Never: until every flow finishes (or MaxTime)
	MaxTime sim.Time
	Topo    *topologies.Topology
	Fabric  fabric.Config
	// Scenario is the effective scenario as parsed and edited; read it,
	// do not change it (Effective is what travels).
	Scenario *Scenario
	// PcapHosts are the host indices output.pcap captures (distinct,
	// valid, at most MaxPcapHosts).
	PcapHosts []int
	// Estimate is the memory the scenario needs by part (EstimateMemory),
	// computed before the workload was built.
	Estimate *Estimate
	// Collectives lists every collective instance of the workload
	// (collectives.csv), in workload and iteration order.
	Collectives []CollectiveInstance
	// SenderFCT says the outputs carry the sender side of each flow's
	// completion (output.sender_fct, or compat: stracksim).
	SenderFCT bool
	// External are the switches that run as external elements (field
	// external), by node. Fabric.External holds a peer for each that
	// fails until the run connects it (ConnectExternal).
	External []ExternalElement

	seed      uint64
	digest    string
	effective []byte            // canonical encoding of Scenario
	files     map[string][]byte // every file the scenario reads, by name
}

// Seed is the seed of every random stream (set it with WithSeed).
func (b *Built) Seed() uint64 { return b.seed }

// Digest is the sha256 of the effective scenario's canonical encoding and
// of every file it reads: two builds with the same digest build the same
// run.
func (b *Built) Digest() string { return b.digest }

// Effective is the canonical encoding of the effective scenario (JSON,
// map keys sorted), which Rebuild turns back into this Built.
func (b *Built) Effective() []byte { return bytes.Clone(b.effective) }

// Files returns a copy of the set of files the scenario read (CDFs, .topo
// and .cm files), by the name the scenario gives them.
func (b *Built) Files() map[string][]byte { return maps.Clone(b.files) }

// Limit is the exclusive end of the run's virtual time: events at or
// after it never run. It is StopAt if set, else MaxTime.
func (b *Built) Limit() sim.Time {
	if b.StopAt != sim.Never {
		return b.StopAt
	}
	return b.MaxTime
}

// loader carries the file name for errors and the files read for the digest.
type loader struct {
	file  string
	fsys  fs.FS
	hash  []byte
	files map[string][]byte
	reg   *switchsim.Registry // switch modules (nil: the built-ins)
}

// Error is a semantic error in a scenario: the file, the field path, and
// what is wrong with it.
type Error struct {
	File, Path, Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s: %s", e.File, e.Path, e.Msg) }

func (l *loader) errf(path, format string, args ...any) error {
	return &Error{File: l.file, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// read reads a file the scenario names, keeps it, and folds it into the
// digest.
func (l *loader) read(path, name string) ([]byte, error) {
	if l.fsys == nil {
		return nil, l.errf(path, "cannot read %q: no directory to read from", name)
	}
	b, err := readLimited(l.fsys.Open(name))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, l.errf(path, "cannot read %q: %v", name, err)
	}
	l.files[name] = b
	h := sha256.Sum256(b)
	l.hash = append(l.hash, h[:]...)
	return b, nil
}

// Parse decodes a scenario strictly, without building it.
// Beyond the syntax it refuses what only the file's text shows: a field
// set to 0 where 0 is never a setting (leave the field out for the
// default), and a workload field of another workload type.
func Parse(file string, data []byte) (*Scenario, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{File: file, Path: "(file)", Msg: fmt.Sprintf("larger than the %d MiB limit", MaxFileSize>>20)}
	}
	var s Scenario
	present, err := yamlx.DecodePresent(file, data, &s)
	if err != nil {
		return nil, err
	}
	if err := checkPresent(file, &s, present); err != nil {
		return nil, err
	}
	return &s, nil
}

// Edit changes a parsed scenario before it is built: a command-line flag,
// an experiment's variant. The built scenario (and its digest) is the one
// after every edit.
type Edit func(*Scenario)

// WithSeed sets the seed of every random stream (`lockstep run --seed`).
func WithSeed(seed uint64) Edit { return func(s *Scenario) { s.Seed = &seed } }

// WithCwnd records cwnd.csv for every flow (`--cwnd`; output.cwnd: {all: true}).
func WithCwnd() Edit { return func(s *Scenario) { s.Output.Cwnd = &CwndOutput{All: true} } }

// WithSenderFCT adds the sender side of every flow's completion to
// fct.csv and summary.json (`--sender-fct`; output.sender_fct: true).
func WithSenderFCT() Edit { return func(s *Scenario) { s.Output.SenderFCT = true } }

// WithQueues records queue_depth.csv, sampling every interval of virtual
// time (`--queues`; output.queues.interval).
func WithQueues(interval sim.Time) Edit {
	return func(s *Scenario) { s.Output.Queues = &QueuesOutput{Interval: yamlx.Duration(interval)} }
}

// WithSwitchModules resolves the scenario's switch modules (switch.modules)
// in r instead of the built-ins: a program that registers its own modules
// (docs/adding-a-switch-module.md). It is not part of the scenario: a
// node process rebuilds the scenario with its own binary's modules.
func WithSwitchModules(r *switchsim.Registry) Edit { return func(s *Scenario) { s.switchReg = r } }

// LoadFile reads the scenario file path, applies edits in order and
// builds it; the files it names are read relative to path's directory and
// must be inside it (Confined) unless an edit is AllowOutside. Every error
// names the file (and the field, for a bad scenario).
func LoadFile(path string, edits ...Edit) (*Built, error) {
	data, err := readLimited(os.Open(path))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: cannot read scenario: %v", path, err)
	}
	s, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	for _, e := range edits {
		if e != nil {
			e(s)
		}
	}
	fsys := Confined(filepath.Dir(path))
	if s.outside {
		fsys = Dir(filepath.Dir(path))
	}
	return Build(path, s, fsys)
}

// AllowOutside lets the scenario read files outside its folder: absolute
// names and names with ".." that leave it (`--allow-outside`). It changes
// nothing else: the digest covers the files' contents, not where they are.
func AllowOutside() Edit { return func(s *Scenario) { s.outside = true } }

// Load parses the scenario data (named file in messages), applies edits in
// order (nil edits do nothing) and builds it. fsys is rooted at the scenario's directory and
// serves the files it names (nil: it may name none).
func Load(file string, data []byte, fsys fs.FS, edits ...Edit) (*Built, error) {
	s, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	for _, e := range edits {
		if e != nil {
			e(s)
		}
	}
	if len(s.editErrs) > 0 {
		return nil, fmt.Errorf("%s: edit %w", file, s.editErrs[0])
	}
	return Build(file, s, fsys)
}

// Rebuild builds the effective scenario that Effective and Files of
// another Built describe (what a node receives) and refuses it unless it
// has digest digest.
func Rebuild(file string, effective []byte, files map[string][]byte, digest string) (*Built, error) {
	var s Scenario
	dec := json.NewDecoder(bytes.NewReader(effective))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: cannot decode the effective scenario: %v", file, err)
	}
	b, err := Build(file, &s, memFS(files))
	if err != nil {
		return nil, err
	}
	if b.digest != digest {
		return nil, fmt.Errorf("%s: the scenario has digest %s here, %s where the run started", file, b.digest, digest)
	}
	return b, nil
}

// Build builds a parsed (and perhaps edited) scenario; s is kept as the
// Built's Scenario and must not change afterwards.
func Build(file string, s *Scenario, fsys fs.FS) (*Built, error) {
	if p := nonFinite(reflect.ValueOf(s).Elem()); p != "" {
		return nil, &Error{File: file, Path: p, Msg: "must be a finite number"}
	}
	eff, err := json.Marshal(s)
	if err != nil {
		return nil, &Error{File: file, Path: "(scenario)", Msg: fmt.Sprintf("cannot encode: %v", err)}
	}
	l := &loader{file: file, fsys: fsys, files: map[string][]byte{}, reg: s.switchReg}
	sum := sha256.Sum256(eff)
	l.hash = append(l.hash, sum[:]...)
	b := &Built{File: file, Name: s.Name, Scenario: s, seed: DefaultSeed, StopAt: sim.Never, MaxTime: DefaultMaxTime,
		effective: eff}
	if s.Seed != nil {
		b.seed = *s.Seed
	}
	if s.StopAt > 0 {
		b.StopAt = sim.Time(s.StopAt)
	}
	if s.MaxTime > 0 {
		b.MaxTime = sim.Time(s.MaxTime)
	}
	topo, err := l.topology(&s.Topology)
	if err != nil {
		return nil, err
	}
	b.Topo = topo
	if s.Placement != nil {
		if err := s.Placement.Validate(file, topo); err != nil {
			return nil, err
		}
	}
	var tc hostsim.Config
	var compat *stracksim.Config
	if s.Compat != "" {
		tc, compat, err = l.compat(s, topo)
	} else {
		tc, err = l.transport(&s.Transport, s.Switch.INT)
	}
	if err != nil {
		return nil, err
	}
	if err := l.nscc(&s.Transport, &s.Switch, topo, &tc); err != nil {
		return nil, err
	}
	if o := s.Output.Cwnd; o != nil {
		tc.Trace = hostsim.TraceConfig{All: o.All || len(o.Flows) == 0, Flows: o.Flows, Interval: sim.Time(o.Interval)}
	}
	fwd, err := switchsim.ParseForwarding(s.Switch.Forwarding)
	if err != nil {
		return nil, l.errf("switch.forwarding", "%v", err)
	}
	steered, err := l.entropySteered(s, fwd)
	if err != nil {
		return nil, err
	}
	if steered {
		tc.Entropy = hostsim.EntropyRandom
	}
	b.Estimate = EstimateMemory(s, topo)
	if err := b.Estimate.Check(file, s, s.memLimit); err != nil {
		return nil, err
	}
	var tasks []hostsim.TaskSpec
	flows, err := l.workload(s.Workload, topo, b.seed, tc, &b.Collectives, &tasks)
	if err != nil {
		return nil, err
	}
	if compat != nil {
		if err := l.compatFlows(flows); err != nil {
			return nil, err
		}
	}
	imps, storms, err := l.impairments(s.Impairments, topo)
	if err != nil {
		return nil, err
	}
	b.Fabric = fabric.Config{Topo: topo, Flows: flows, Tasks: tasks, Transport: tc, Forwarding: fwd, Seed: b.seed, Impairments: imps,
		Compat: compat, Storms: storms}
	if b.Fabric.Switch, err = l.switchConfig(&s.Switch, globalMechanisms(&s.Switch), s.Workload); err != nil {
		return nil, err
	}
	if b.Fabric.SwitchTiers, err = l.tierSwitches(s, b.Fabric.Switch); err != nil {
		return nil, err
	}
	if err := l.stormSwitches(s, &b.Fabric); err != nil {
		return nil, err
	}
	if b.External, err = l.external(s, topo); err != nil {
		return nil, err
	}
	if len(b.External) > 0 {
		b.Fabric.External = map[int]fabric.ExternalPeer{}
		for _, x := range b.External {
			b.Fabric.External[x.Node] = unconnected{}
		}
	}
	if compat != nil && len(b.Fabric.SwitchTiers) > 0 {
		return nil, l.errf("topology", "per-tier switch mechanisms are not part of the stracksim profile (docs/scenario.md, compat)")
	}
	if o := s.Output.Cwnd; o != nil {
		if err := l.cwndFlows(o.Flows, len(flows)); err != nil {
			return nil, err
		}
	}
	if q := s.Output.Queues; q != nil {
		if q.Interval <= 0 {
			return nil, l.errf("output.queues.interval", "must be a positive duration")
		}
		if sim.Time(q.Interval) < MinQueueSample {
			return nil, l.errf("output.queues.interval", "must be at least %s, got %s", MinQueueSample, sim.Time(q.Interval))
		}
		b.Fabric.QueueSample = sim.Time(q.Interval)
	}
	if o := s.Output.Pcap; o != nil {
		if b.PcapHosts, err = l.pcapHosts(o.Hosts, topo.NumHosts()); err != nil {
			return nil, err
		}
	}
	b.SenderFCT = s.Output.SenderFCT || compat != nil
	d := sha256.Sum256(l.hash)
	b.digest = hex.EncodeToString(d[:])
	b.files = l.files
	return b, nil
}

// cwndFlows checks output.cwnd.flows: distinct ids of the scenario's flows.
func (l *loader) cwndFlows(ids []int32, n int) error {
	seen := make(map[int32]int, min(len(ids), n))
	for i, id := range ids {
		p := fmt.Sprintf("output.cwnd.flows[%d]", i)
		if id < 0 || int(id) >= n {
			return l.errf(p, "flow %d does not exist (the scenario has flows 0..%d)", id, n-1)
		}
		if j, dup := seen[id]; dup {
			return l.errf(p, "flow %d is listed twice (also flows[%d])", id, j)
		}
		seen[id] = i
	}
	return nil
}

// pcapHosts checks output.pcap.hosts: 1..MaxPcapHosts distinct host indices.
func (l *loader) pcapHosts(hosts []int, n int) ([]int, error) {
	if len(hosts) == 0 || len(hosts) > MaxPcapHosts {
		return nil, l.errf("output.pcap.hosts", "must list 1 to %d host indices, got %d", MaxPcapHosts, len(hosts))
	}
	for i, h := range hosts {
		if h < 0 || h >= n {
			return nil, l.errf(fmt.Sprintf("output.pcap.hosts[%d]", i), "host %d does not exist (the topology has hosts 0..%d)", h, n-1)
		}
		if slices.Contains(hosts[:i], h) {
			return nil, l.errf(fmt.Sprintf("output.pcap.hosts[%d]", i), "host %d is listed twice", h)
		}
	}
	return slices.Clone(hosts), nil
}

func (l *loader) queue(path string, t *Tier) (topologies.QueueConfig, error) {
	q := topologies.QueueConfig{Buffer: int64(t.Buffer)}
	if q.Buffer == 0 {
		q.Buffer = DefaultBuffer
	}
	if q.Buffer > MaxBuffer {
		return q, l.errf(path+".buffer", "must be at most %d bytes (1TiB), got %d", int64(MaxBuffer), q.Buffer)
	}
	if t.ECN == nil {
		return q, nil
	}
	e := t.ECN
	switch e.Mode {
	case "off":
	case "step":
		q.ECN = topologies.ECNConfig{Mode: topologies.ECNStep, K: int64(e.K)}
		if e.K <= 0 {
			return q, l.errf(path+".ecn.k", "must be positive for step marking")
		}
		if e.K > MaxBuffer {
			return q, l.errf(path+".ecn.k", "must be at most %d bytes (1TiB), got %d", int64(MaxBuffer), int64(e.K))
		}
	case "red":
		q.ECN = topologies.ECNConfig{Mode: topologies.ECNRED, Min: int64(e.Min), Max: int64(e.Max), PMax: float64(e.PMax)}
		if e.Max <= e.Min {
			return q, l.errf(path+".ecn.max", "must be larger than min (%d), got %d", int64(e.Min), int64(e.Max))
		}
		if e.Max > MaxBuffer {
			return q, l.errf(path+".ecn.max", "must be at most %d bytes (1TiB), got %d", int64(MaxBuffer), int64(e.Max))
		}
		if e.PMax <= 0 {
			return q, l.errf(path+".ecn.pmax", "must be positive for red marking")
		}
	default:
		return q, l.errf(path+".ecn.mode", "unknown mode %q (known: off, step, red)", e.Mode)
	}
	switch e.On {
	case "", "arrival":
	case "dequeue":
		q.ECN.Dequeue = true
	default:
		return q, l.errf(path+".ecn.on", "unknown %q (known: arrival, dequeue)", e.On)
	}
	return q, nil
}

// mechanisms are the switch mechanisms of a group of switches, each with
// the path of the section it came from (for errors).
type mechanisms struct {
	classes                               []SwitchClass
	control                               *int
	pfc                                   *PFC
	shared                                *SharedBuffer
	trim                                  *Trim
	cut                                   *CutThrough
	classesAt, controlAt, pfcAt, sharedAt string
	trimAt, cutAt                         string
	// mods by stage (index Stage-1), each with the path it came from.
	mods   [6]*SwitchModule
	modsAt [6]string
}

// globalMechanisms are the switch section's.
func globalMechanisms(w *Switch) mechanisms {
	m := mechanisms{classes: w.Classes, control: w.ControlClass, pfc: w.PFC, shared: w.SharedBuffer, trim: w.Trim,
		cut: w.CutThrough, classesAt: "switch.classes", controlAt: "switch.control_class", pfcAt: "switch.pfc",
		sharedAt: "switch.shared_buffer", trimAt: "switch.trim", cutAt: "switch.cut_through"}
	m.setModules(w.Modules, "switch.modules")
	return m
}

// setModules takes the stages ms gives (at path).
func (m *mechanisms) setModules(ms *SwitchModules, path string) {
	for _, st := range switchsim.Stages {
		if x := ms.stage(st); x != nil {
			m.mods[st-1], m.modsAt[st-1] = x, path+"."+st.String()
		}
	}
}

// moduleErr turns a module's build error into a scenario error naming
// the field at (switch.modules.STAGE).
func (l *loader) moduleErr(at string, err error) error {
	var ue *switchsim.UnknownModuleError
	var oe *switchsim.OptionError
	switch {
	case errors.As(err, &ue):
		return l.errf(at+".name", "%v", err)
	case errors.As(err, &oe) && oe.Err == nil:
		var known []string
		if m := l.registry().Lookup(oe.Stage, oe.Module); m != nil {
			for _, o := range m.Options {
				known = append(known, o.Key)
			}
		}
		return l.errf(at+".options."+oe.Key, "%s takes no option %q (known: %s)", oe.Module, oe.Key, strings.Join(known, ", "))
	case errors.As(err, &oe):
		return l.errf(at+".options."+oe.Key, "%v", oe.Err)
	}
	return l.errf(at, "%v", err)
}

// registry is the switch modules' registry.
func (l *loader) registry() *switchsim.Registry {
	if l.reg == nil {
		return switchsim.Builtins()
	}
	return l.reg
}

// entropySteered reports whether some switch's forwarding module follows
// the packets' entropy (switchsim.EntropySteered): senders then draw a
// fresh entropy per packet.
func (l *loader) entropySteered(s *Scenario, fwd switchsim.Forwarding) (bool, error) {
	type sel struct {
		at string
		m  *SwitchModule
	}
	sels := []sel{{"switch.modules.forward", s.Switch.Modules.stage(switchsim.StageForward)}}
	for _, sec := range tierSections(s) {
		if sec.t.Switch != nil {
			sels = append(sels, sel{sec.path + ".switch.modules.forward", sec.t.Switch.Modules.stage(switchsim.StageForward)})
		}
	}
	if sels[0].m == nil && fwd == switchsim.Spray {
		return true, nil
	}
	env := &switchsim.Env{Classes: 1, Config: &switchsim.Config{}}
	for _, x := range sels {
		if x.m == nil {
			continue
		}
		v, err := l.registry().Build(switchsim.StageForward, switchsim.ModuleRef{Name: x.m.Name, Options: x.m.Options}, env)
		if err != nil {
			return false, l.moduleErr(x.at, err)
		}
		if _, ok := v.(switchsim.EntropySteered); ok {
			return true, nil
		}
	}
	return false, nil
}

// override applies a tier's switch section (at path) to m.
func (l *loader) override(m mechanisms, path string, t *SwitchTier) (mechanisms, error) {
	if t.Classes != nil {
		m.classes, m.classesAt = t.Classes, path+".classes"
	}
	if t.ControlClass != nil {
		m.control, m.controlAt = t.ControlClass, path+".control_class"
	}
	if t.PFC != nil {
		m.pfc, m.pfcAt = t.PFC, path+".pfc"
	}
	if t.SharedBuffer != nil {
		m.shared, m.sharedAt = t.SharedBuffer, path+".shared_buffer"
	}
	if t.Trim != nil {
		m.trim, m.trimAt = t.Trim, path+".trim"
	}
	if t.CutThrough != nil {
		m.cut, m.cutAt = t.CutThrough, path+".cut_through"
	}
	m.setModules(t.Modules, path+".modules")
	for i, name := range t.Off {
		at := fmt.Sprintf("%s.off[%d]", path, i)
		given := false
		switch name {
		case "pfc":
			given, m.pfc = t.PFC != nil, nil
		case "shared_buffer":
			given, m.shared = t.SharedBuffer != nil, nil
		case "trim":
			given, m.trim = t.Trim != nil, nil
		case "cut_through":
			given, m.cut = t.CutThrough != nil, nil
		default:
			return m, l.errf(at, "unknown mechanism %q (known: pfc, shared_buffer, trim, cut_through)", name)
		}
		if given {
			return m, l.errf(at, "%s is both given and turned off", name)
		}
	}
	if t.Classes == nil && slices.Contains(t.Off, "pfc") {
		// The switch section's classes stay; without PFC a lossless class
		// is lossy here.
		m.classes = slices.Clone(m.classes)
		for i := range m.classes {
			m.classes[i].Lossless = false
		}
	}
	return m, nil
}

// switchConfig builds a group of switches' optional mechanisms.
func (l *loader) switchConfig(w *Switch, m mechanisms, ws []Workload) (switchsim.Config, error) {
	var c switchsim.Config
	c.FlowletGap = sim.Time(w.FlowletGap)
	if c.FlowletGap == 0 {
		c.FlowletGap = 50 * sim.Microsecond
	}
	if len(m.classes) > sim.MaxClasses {
		return c, l.errf(m.classesAt, "at most %d classes, got %d", sim.MaxClasses, len(m.classes))
	}
	lossless := false
	for i, k := range m.classes {
		if k.Weight < 0 {
			return c, l.errf(fmt.Sprintf("%s[%d].weight", m.classesAt, i), "must not be negative, got %d", k.Weight)
		}
		if k.Alpha < 0 {
			return c, l.errf(fmt.Sprintf("%s[%d].alpha", m.classesAt, i), "must not be negative, got %g", k.Alpha)
		}
		a := k.Alpha
		if a == 0 {
			a = 1
		}
		c.Classes = append(c.Classes, switchsim.Class{Weight: k.Weight, Lossless: k.Lossless, Alpha: a})
		lossless = lossless || k.Lossless
	}
	c.ControlClass = max(0, len(c.Classes)-1)
	if m.control != nil {
		if *m.control < 0 || *m.control >= max(1, len(c.Classes)) {
			return c, l.errf(m.controlAt, "must name one of the %d classes, got %d", max(1, len(c.Classes)), *m.control)
		}
		c.ControlClass = *m.control
	}
	if p := m.pfc; p != nil {
		if !lossless {
			return c, l.errf(m.pfcAt, "no class is lossless: mark one in %s", m.classesAt)
		}
		if p.XOFF <= 0 || p.XON > p.XOFF {
			return c, l.errf(m.pfcAt+".xon", "want 0 <= xon <= xoff and xoff > 0, got xon %d, xoff %d", int64(p.XON), int64(p.XOFF))
		}
		if p.Quanta < 0 || p.Quanta > 0xffff {
			return c, l.errf(m.pfcAt+".quanta", "must be 1..65535 (0: 65535), got %d", p.Quanta)
		}
		if p.Watchdog < 0 {
			return c, l.errf(m.pfcAt+".watchdog", "must not be negative, got %v", sim.Time(p.Watchdog))
		}
		c.PFC = switchsim.PFC{XOFF: int64(p.XOFF), XON: int64(p.XON), Headroom: int64(p.Headroom), MTU: int64(p.MTU),
			Quanta: uint16(p.Quanta), Watchdog: sim.Time(p.Watchdog)}
		if w := p.StormWatchdog; w != nil {
			at := m.pfcAt + ".storm_watchdog"
			if w.DetectionTime <= 0 || w.DetectionTime > yamlx.Duration(sim.Second) {
				return c, l.errf(at+".detection_time", "must be a positive duration up to 1s, got %v", sim.Time(w.DetectionTime))
			}
			if w.RestorationTime < 0 || w.RestorationTime > yamlx.Duration(sim.Second) {
				return c, l.errf(at+".restoration_time", "must be a positive duration up to 1s, got %v", sim.Time(w.RestorationTime))
			}
			act, err := switchsim.ParseStormAction(w.Action)
			if err != nil {
				return c, l.errf(at+".action", "%v", err)
			}
			c.PFC.Storm = &switchsim.StormWatchdog{Detect: sim.Time(w.DetectionTime), Restore: sim.Time(w.RestorationTime), Action: act}
			if c.PFC.Storm.Restore == 0 {
				c.PFC.Storm.Restore = c.PFC.Storm.Detect
			}
		}
	} else if lossless {
		return c, l.errf(m.classesAt, "a lossless class needs pfc (%s)", m.pfcAt)
	}
	if sb := m.shared; sb != nil {
		if sb.Size <= 0 || sb.Size > MaxBuffer {
			return c, l.errf(m.sharedAt+".size", "must be 1 byte to 1TiB, got %d", int64(sb.Size))
		}
		if sb.Reserved < 0 || sb.Reserved > MaxBuffer {
			return c, l.errf(m.sharedAt+".reserved", "must be 0 to 1TiB, got %d", int64(sb.Reserved))
		}
		c.Shared = switchsim.Shared{Size: int64(sb.Size), Reserved: int64(sb.Reserved)}
	}
	if t := m.trim; t != nil {
		if t.Header < 0 || t.Header > MaxHeader {
			return c, l.errf(m.trimAt+".header", "must be 0 to %d bytes (0: 64), got %d", MaxHeader, int64(t.Header))
		}
		c.Trim = switchsim.Trim{Enabled: true, Header: int32(t.Header)}
		if t.Header == 0 {
			c.Trim.Header = 64
		}
	}
	if t := m.cut; t != nil {
		if t.Header < 0 || t.Header > MaxHeader {
			return c, l.errf(m.cutAt+".header", "must be 0 to %d bytes (0: 64), got %d", MaxHeader, int64(t.Header))
		}
		c.CutThrough = switchsim.CutThrough{Enabled: true, Header: int32(t.Header)}
		if t.Header == 0 {
			c.CutThrough.Header = 64
		}
	}
	for i := range ws {
		if k := ws[i].Class; k < 0 || k >= sim.MaxClasses {
			return c, l.errf(fmt.Sprintf("workload[%d].class", i), "must be 0..7, got %d", k)
		}
	}
	if err := c.Check(); err != nil {
		return c, l.errf("switch", "%v", err)
	}
	c.Registry = l.reg
	env := &switchsim.Env{Classes: max(1, len(c.Classes)), Config: &c}
	for _, st := range switchsim.Stages {
		x := m.mods[st-1]
		if x == nil {
			continue
		}
		ref := switchsim.ModuleRef{Name: x.Name, Options: x.Options}
		*c.Modules.Ref(st) = ref
		if _, err := l.registry().Build(st, ref, env); err != nil {
			return c, l.moduleErr(m.modsAt[st-1], err)
		}
	}
	return c, nil
}

// tierSection is a topology section that may hold a tier's switch
// settings: its path, the tier of the switches it sets (0: none) and the
// section.
type tierSection struct {
	path string
	tier int
	t    *Tier
}

// tierSections lists the topology's tier sections.
func tierSections(s *Scenario) []tierSection {
	tp := &s.Topology
	switch {
	case tp.LeafSpine != nil:
		return []tierSection{{"topology.leafspine.host", 1, &tp.LeafSpine.Host}, {"topology.leafspine.fabric", 2, &tp.LeafSpine.Fabric}}
	case tp.FatTree != nil:
		return []tierSection{{"topology.fattree.host", 1, &tp.FatTree.Host}, {"topology.fattree.agg", 2, &tp.FatTree.Agg},
			{"topology.fattree.core", 3, &tp.FatTree.Core}}
	case tp.Rail != nil:
		return []tierSection{{"topology.rail.host", 1, &tp.Rail.Host}, {"topology.rail.fabric", 2, &tp.Rail.Fabric}}
	case tp.Dumbbell != nil:
		return []tierSection{{"topology.dumbbell.host", 1, &tp.Dumbbell.Host}, {"topology.dumbbell.bottleneck", 0, &tp.Dumbbell.Bottleneck}}
	case tp.Htsim != nil:
		return []tierSection{{"topology.htsim.queue", 0, &tp.Htsim.Queue}}
	case tp.Graph != nil:
		return []tierSection{{"topology.graph.defaults", 0, &tp.Graph.Defaults}}
	}
	return nil
}

// tierSwitches builds the tiers' own switch mechanisms (Tier.Switch): the
// switches of tier n take the section of the links of tier n, the links
// below them.
func (l *loader) tierSwitches(s *Scenario, global switchsim.Config) (map[int]switchsim.Config, error) {
	secs := tierSections(s)
	var out map[int]switchsim.Config
	wd, wdAt := global.PFC.Watchdog, "switch.pfc.watchdog"
	for _, sec := range secs {
		if sec.t.Switch == nil {
			continue
		}
		path := sec.path + ".switch"
		if sec.tier == 0 {
			return nil, l.errf(path, "no switch takes this section's settings (use the switch section)")
		}
		m, err := l.override(globalMechanisms(&s.Switch), path, sec.t.Switch)
		if err != nil {
			return nil, err
		}
		c, err := l.switchConfig(&s.Switch, m, s.Workload)
		if err != nil {
			return nil, err
		}
		if len(c.Classes) != len(global.Classes) {
			return nil, l.errf(m.classesAt, "every switch needs as many classes as switch.classes (%d), got %d", len(global.Classes), len(c.Classes))
		}
		if w := c.PFC.Watchdog; w != 0 && wd != 0 && w != wd {
			return nil, l.errf(m.pfcAt+".watchdog", "the watchdog is run-wide: %v here, %v in %s", w, wd, wdAt)
		} else if w != 0 {
			wd, wdAt = w, m.pfcAt+".watchdog"
		}
		if out == nil {
			out = map[int]switchsim.Config{}
		}
		out[sec.tier] = c
	}
	return out, nil
}

func (l *loader) tier(path string, t *Tier) (topologies.TierConfig, error) {
	q, err := l.queue(path, t)
	if err != nil {
		return topologies.TierConfig{}, err
	}
	if t.Rate <= 0 {
		return topologies.TierConfig{}, l.errf(path+".rate", "must be set to a positive rate such as 100Gbps")
	}
	return topologies.TierConfig{Rate: sim.Bandwidth(t.Rate), Delay: sim.Time(t.Delay), Queue: q}, nil
}

func (l *loader) topology(t *Topology) (*topologies.Topology, error) {
	missing := func(sec string) error {
		return l.errf("topology."+sec, "missing: topology.type is %q", t.Type)
	}
	wrap := func(err error) error {
		if err == nil {
			return nil
		}
		return &Error{File: l.file, Path: "topology", Msg: err.Error()}
	}
	// Exactly the section Type names may be present.
	present := map[string]bool{"dumbbell": t.Dumbbell != nil, "leafspine": t.LeafSpine != nil,
		"fattree": t.FatTree != nil, "htsim": t.Htsim != nil, "graph": t.Graph != nil, "rail": t.Rail != nil}
	for _, k := range []string{"dumbbell", "leafspine", "fattree", "htsim", "graph", "rail"} {
		if present[k] && k != t.Type {
			return nil, l.errf("topology."+k, "present, but topology.type is %q", t.Type)
		}
	}
	switch t.Type {
	case "dumbbell":
		d := t.Dumbbell
		if d == nil {
			return nil, missing("dumbbell")
		}
		host, err := l.tier("topology.dumbbell.host", &d.Host)
		if err != nil {
			return nil, err
		}
		bn, err := l.tier("topology.dumbbell.bottleneck", &d.Bottleneck)
		if err != nil {
			return nil, err
		}
		topo, err := topologies.Dumbbell(topologies.DumbbellConfig{Senders: d.Senders, Receivers: d.Receivers, Host: host, Bottleneck: bn})
		return topo, wrap(err)
	case "rail":
		d := t.Rail
		if d == nil {
			return nil, missing("rail")
		}
		host, err := l.tier("topology.rail.host", &d.Host)
		if err != nil {
			return nil, err
		}
		fab, err := l.tier("topology.rail.fabric", &d.Fabric)
		if err != nil {
			return nil, err
		}
		joined := d.Joined == nil || *d.Joined
		var nv *topologies.TierConfig
		if d.NVLink != nil {
			c, err := l.tier("topology.rail.nvlink", d.NVLink)
			if err != nil {
				return nil, err
			}
			nv = &c
		}
		topo, err := topologies.Rail(topologies.RailConfig{Servers: d.Servers, GPUs: d.GPUsPerServer, ServersPerLeaf: d.ServersPerLeaf,
			Spines: d.Spines, Joined: joined, Host: host, Fabric: fab, SwitchLatency: sim.Time(d.SwitchLatency),
			NVLink: nv, NVSwitchLatency: sim.Time(d.NVSwitchLatency)})
		return topo, wrap(err)
	case "leafspine":
		d := t.LeafSpine
		if d == nil {
			return nil, missing("leafspine")
		}
		host, err := l.tier("topology.leafspine.host", &d.Host)
		if err != nil {
			return nil, err
		}
		fq, err := l.queue("topology.leafspine.fabric", &d.Fabric)
		if err != nil {
			return nil, err
		}
		fab := topologies.TierConfig{Rate: sim.Bandwidth(d.Fabric.Rate), Delay: sim.Time(d.Fabric.Delay), Queue: fq}
		topo, err := topologies.LeafSpine(topologies.LeafSpineConfig{Leaves: d.Leaves, Spines: d.Spines,
			HostsPerLeaf: d.HostsPerLeaf, Host: host, Fabric: fab, Oversubscription: d.Oversubscription})
		return topo, wrap(err)
	case "fattree":
		d := t.FatTree
		if d == nil {
			return nil, missing("fattree")
		}
		var tiers [3]topologies.TierConfig
		for i, p := range []struct {
			name string
			t    *Tier
		}{{"host", &d.Host}, {"agg", &d.Agg}, {"core", &d.Core}} {
			tc, err := l.tier("topology.fattree."+p.name, p.t)
			if err != nil {
				return nil, err
			}
			tiers[i] = tc
		}
		topo, err := topologies.FatTree(topologies.FatTreeConfig{K: d.K, Host: tiers[0], Agg: tiers[1], Core: tiers[2],
			SwitchLatency: sim.Time(d.SwitchLatency), Oversubscribed: d.Oversubscribed})
		return topo, wrap(err)
	case "htsim":
		d := t.Htsim
		if d == nil {
			return nil, missing("htsim")
		}
		data, err := l.read("topology.htsim.file", d.File)
		if err != nil {
			return nil, err
		}
		q, err := l.queue("topology.htsim.queue", &d.Queue)
		if err != nil {
			return nil, err
		}
		topo, err := topologies.ParseHtsimTopo(d.File, data)
		if err != nil {
			return nil, l.errf("topology.htsim.file", "%v", err)
		}
		// Buffers the file sets (Queue_Down/Queue_Up) stay; the rest get
		// queue.buffer, as htsim's -q flag would. ECN, which .topo files
		// cannot express, comes from queue.ecn everywhere.
		topo.FillQueues(q)
		for i := range topo.Links {
			topo.Links[i].Queue.ECN = q.ECN
		}
		return topo, nil
	case "graph":
		d := t.Graph
		if d == nil {
			return nil, missing("graph")
		}
		defq, err := l.queue("topology.graph.defaults", &d.Defaults)
		if err != nil {
			return nil, err
		}
		gc := topologies.GraphConfig{Defaults: topologies.TierConfig{Rate: sim.Bandwidth(d.Defaults.Rate),
			Delay: sim.Time(d.Defaults.Delay), Queue: defq}}
		for _, n := range d.Nodes {
			gc.Nodes = append(gc.Nodes, topologies.GraphNode{Name: n.Name, Kind: n.Kind, Tier: n.Tier, Latency: sim.Time(n.Latency)})
		}
		for i, gl := range d.Links {
			link := topologies.GraphLink{A: gl.A, B: gl.B, Rate: sim.Bandwidth(gl.Rate)}
			if link.Rate == 0 {
				link.Rate = gc.Defaults.Rate
			}
			link.Delay = gc.Defaults.Delay
			if gl.Delay != nil {
				link.Delay = sim.Time(*gl.Delay)
			}
			if gl.Buffer != 0 || gl.ECN != nil {
				tq := Tier{Buffer: gl.Buffer, ECN: gl.ECN}
				if tq.Buffer == 0 {
					tq.Buffer = yamlx.Size(defq.Buffer)
				}
				q, err := l.queue(fmt.Sprintf("topology.graph.links[%d]", i), &tq)
				if err != nil {
					return nil, err
				}
				link.Queue = &q
			}
			gc.Links = append(gc.Links, link)
		}
		topo, err := topologies.Graph(gc)
		return topo, wrap(err)
	}
	return nil, l.errf("topology.type", "unknown topology %q (known: dumbbell, leafspine, fattree, htsim, graph, rail)", t.Type)
}

func (l *loader) transport(t *Transport, in *INT) (hostsim.Config, error) {
	c := hostsim.DefaultConfig()
	if t.CC != "" {
		c.CC.CC = t.CC
	}
	if t.CC == "strack-sim" {
		// Removed with issue 13 (docs/decisions.md): say what replaced it.
		return c, l.errf("transport.cc", "strack-sim is gone: STrack-Sim's transports run under the top-level compat: stracksim with cc simpletcp or strack (docs/scenario.md)")
	}
	if !slices.Contains(cc.ControllerNames, c.CC.CC) {
		return c, l.errf("transport.cc", "unknown congestion control %q (known: %v)", t.CC, cc.ControllerNames)
	}
	if t.Recovery != "" {
		c.CC.Recovery = t.Recovery
	}
	c.CC.Options = t.Options
	if !slices.Contains(cc.RecoveryNames, c.CC.Recovery) {
		return c, l.errf("transport.recovery", "unknown loss recovery %q (known: %v)", t.Recovery, cc.RecoveryNames)
	}
	if t.MTU != 0 {
		c.MTU = int64(t.MTU)
	}
	if t.Header != nil {
		c.Header = int64(*t.Header)
	}
	if t.AckSize != 0 {
		c.AckSize = int64(t.AckSize)
	}
	if c.MTU <= c.Header {
		return c, l.errf("transport.mtu", "must be larger than the header (%d bytes), got %d", c.Header, c.MTU)
	}
	if c.MTU > MaxMTU {
		return c, l.errf("transport.mtu", "must be at most %d bytes (an IPv4 packet's limit), got %d", MaxMTU, c.MTU)
	}
	if c.AckSize > MaxMTU {
		return c, l.errf("transport.ack_size", "must be at most %d bytes, got %d", MaxMTU, c.AckSize)
	}
	if t.InitCwnd < 0 {
		return c, l.errf("transport.init_cwnd", "must be positive, got %d", t.InitCwnd)
	}
	if t.InitCwnd > MaxInitCwnd {
		return c, l.errf("transport.init_cwnd", "must be at most %d segments, got %d", MaxInitCwnd, t.InitCwnd)
	}
	for _, n := range []struct {
		path string
		v    int
	}{{"transport.dup_thresh", t.DupThresh}, {"transport.tso_segments", t.TSOSegments}} {
		if n.v < 0 || n.v > MaxCount {
			return c, l.errf(n.path, "must be between 1 and %d, got %d", MaxCount, n.v)
		}
	}
	if d := t.DelayedAck; d != nil && (d.Count < 0 || d.Count > MaxCount || d.QuickAcks < 0 || d.QuickAcks > MaxCount) {
		field, v := "count", d.Count
		if d.Count >= 0 && d.Count <= MaxCount {
			field, v = "quickacks", d.QuickAcks
		}
		return c, l.errf("transport.delayed_ack."+field, "must be between 0 and %d, got %d", MaxCount, v)
	}
	if st := t.STrack; st != nil && (st.Entropies < 0 || st.Entropies > MaxCount) {
		return c, l.errf("transport.strack.entropies", "must be between 1 and %d, got %d", MaxCount, st.Entropies)
	}
	if t.InitCwnd > 0 {
		c.CC.InitCwnd = int64(t.InitCwnd)
	}
	if t.DupThresh < 0 {
		return c, l.errf("transport.dup_thresh", "must be positive, got %d", t.DupThresh)
	}
	if t.DupThresh > 0 {
		c.CC.DupThresh = t.DupThresh
	}
	r := &t.RTO
	switch r.Mode {
	case "", "rfc6298":
		c.RTO.Mode = cc.RTOAdaptive
		if r.Value != 0 {
			return c, l.errf("transport.rto.value", "only for mode fixed")
		}
	case "fixed":
		c.RTO.Mode = cc.RTOFixed
		c.RTO.Backoff = false
		c.RTO.Max = 0
		if r.Value <= 0 {
			return c, l.errf("transport.rto.value", "must be set to a positive duration for a fixed RTO")
		}
		c.RTO.Fixed = sim.Time(r.Value)
	default:
		return c, l.errf("transport.rto.mode", "unknown mode %q (known: rfc6298, fixed)", r.Mode)
	}
	if r.Min != 0 {
		c.RTO.Min = sim.Time(r.Min)
	}
	if r.Max != 0 {
		c.RTO.Max = sim.Time(r.Max)
	}
	if r.Initial != 0 {
		c.RTO.Initial = sim.Time(r.Initial)
	}
	if r.Backoff != nil {
		c.RTO.Backoff = *r.Backoff
	}
	if err := c.RTO.Validate(); err != nil {
		return c, l.errf("transport.rto", "%v", err)
	}
	c.ECN = t.ECN
	switch t.ECNEcho {
	case "", "rfc3168":
		c.Echo = hostsim.EchoRFC3168
	case "per-packet":
		c.Echo = hostsim.EchoPerPacket
	default:
		return c, l.errf("transport.ecn_echo", "unknown mode %q (known: rfc3168, per-packet)", t.ECNEcho)
	}
	caps := cc.Describe(c.CC) // what the modules need, by capability
	if t.Recovery == "" && caps.DefaultRecovery != "" {
		c.CC.Recovery = caps.DefaultRecovery // DCQCN: RoCE go-back-N
		caps = cc.Describe(c.CC)
	}
	if caps.NeedsECN && !c.ECN {
		return c, l.errf("transport.cc", "%s reacts to ECN marks, which it never sees without transport.ecn: true", c.CC.CC)
	}
	if in != nil || caps.NeedsINT {
		// HPCC §4.1: a 2-byte hop count, then 8 bytes per hop.
		c.INT = hostsim.INTConfig{Enabled: true, Header: 2, HopBytes: 8}
		if in != nil && in.HopBytes != nil {
			if *in.HopBytes > 1024 {
				return c, l.errf("switch.int.hop_bytes", "must be 0 to 1024 bytes, got %d", int64(*in.HopBytes))
			}
			c.INT.HopBytes = int64(*in.HopBytes)
		}
		if in != nil && in.Header != nil {
			if *in.Header > 1024 {
				return c, l.errf("switch.int.header", "must be 0 to 1024 bytes, got %d", int64(*in.Header))
			}
			c.INT.Header = int64(*in.Header)
		}
	}
	c.SACK = caps.NeedsSack
	if t.SACK != nil {
		c.SACK = *t.SACK
	}
	if d := t.DelayedAck; d != nil {
		c.DelAck.Enabled = true
		if d.Count != 0 {
			c.DelAck.Count = d.Count
		}
		if d.Timeout != 0 {
			c.DelAck.Timeout = sim.Time(d.Timeout)
		}
		c.DelAck.QuickAcks = d.QuickAcks
	}
	c.TSOSegments = t.TSOSegments
	if p := t.Pacing; p != nil {
		c.Pacing.Enabled = true
		if p.SSRatio != 0 {
			c.Pacing.SSRatio = p.SSRatio
		}
		if p.CARatio != 0 {
			c.Pacing.CARatio = p.CARatio
		}
	}
	c.RWnd = int64(t.RWnd)
	if t.STrack != nil && !caps.SteersPaths {
		return c, l.errf("transport.strack", "only for cc strack, not %q", c.CC.CC)
	}
	if caps.SteersPaths {
		if t.Recovery == "" && caps.Recovery != "" {
			c.CC.Recovery = caps.Recovery
		}
		if caps.Recovery != "" && c.CC.Recovery != caps.Recovery {
			return c, l.errf("transport.recovery", "cc %s needs recovery %s, got %q", c.CC.CC, caps.Recovery, c.CC.Recovery)
		}
		st := t.STrack
		if st == nil {
			st = &STrack{}
		}
		hc := hostsim.STrackConfig{Entropies: 256}
		mode := st.Paths
		if mode == "" {
			mode = caps.DefaultPaths
		}
		m, err := hostsim.ParsePathMode(mode)
		if err != nil {
			if mode == "strack-sim" {
				err = fmt.Errorf("strack-sim is gone: STrack-Sim's STrack runs under the top-level compat: stracksim (docs/scenario.md)")
			}
			return c, l.errf("transport.strack.paths", "%v", err)
		}
		hc.Mode = m
		if st.Entropies != 0 {
			hc.Entropies = st.Entropies
		}
		c.STrack = &hc
		sc := cc.DefaultStrackConfig(c.MTU - c.Header)
		if st.Alpha != nil {
			sc.Alpha = *st.Alpha
		}
		if st.Beta != nil {
			sc.Beta = *st.Beta
		}
		if st.MaxMDF != nil {
			sc.MaxMDF = *st.MaxMDF
		}
		if st.BaseTarget != 0 {
			sc.BaseTarget = sim.Time(st.BaseTarget)
		}
		if st.PerHop != nil {
			sc.PerHop = sim.Time(*st.PerHop)
		}
		if st.MinCwnd != 0 {
			sc.MinCwnd = int64(st.MinCwnd)
		}
		if st.MaxCwnd != 0 {
			sc.MaxCwnd = int64(st.MaxCwnd)
		}
		sc.ReoWnd = sim.Time(st.ReoWnd)
		if err := l.strackVariant(t, st, &c, &hc, &sc); err != nil {
			return c, err
		}
		c.CC.Strack = &sc
	}
	if err := c.Validate(); err != nil {
		var ue *cc.UnknownOptionError
		if errors.As(err, &ue) {
			return c, l.errf("transport.options."+ue.Key, "cc %s takes no such option", ue.Module)
		}
		var ve *cc.OptionValueError
		if errors.As(err, &ve) {
			return c, l.errf("transport.options."+ve.Key, "%v", ve.Err)
		}
		return c, l.errf("transport", "%v", err)
	}
	return c, nil
}

// CollectiveInstance is one iteration of a collective workload: its flows
// are Flows[First:First+Count] of the scenario.
type CollectiveInstance struct {
	Job       string
	Iteration int
	Op        string
	Algorithm string
	Bytes     int64
	Hosts     []int // by rank
	First     int32
	Count     int32
	// Compute is the job's compute phase before every iteration's
	// collective; Start the job's start (iteration 0's collective starts
	// Compute later).
	Compute sim.Time
	Start   sim.Time
	// Phase is, for a job with tensor or pipeline parallelism, which of
	// its exchanges this is (workloads.PhaseDP, PhaseTP, PhasePP); empty
	// for a plain job. Tasks are its iteration's compute tasks
	// (fabric.Config.Tasks; a plain job's iterations after the first, or
	// all with stragglers, have one per rank and bucket), whose last
	// firing may end the iteration.
	Phase string
	Tasks workloads.FlowRange
}

func (l *loader) workload(ws []Workload, topo *topologies.Topology, seed uint64, tc hostsim.Config, colls *[]CollectiveInstance,
	tasks *[]hostsim.TaskSpec) ([]hostsim.FlowSpec, error) {
	nh := len(topo.Hosts)
	if len(ws) == 0 {
		return nil, l.errf("workload", "must list at least one group of flows")
	}
	if err := l.jobNames(ws); err != nil {
		return nil, err
	}
	var out []hostsim.FlowSpec
	for i := range ws {
		w := &ws[i]
		taskBase := int32(len(*tasks)) // the group's first task (collectives only)
		path := fmt.Sprintf("workload[%d]", i)
		rng := sim.NewRand(seed, sim.StreamWorkload+uint64(i))
		var flows []workloads.Flow
		var err error
		switch w.Type {
		case "flows":
			if len(w.Flows) == 0 {
				return nil, l.errf(path+".flows", "must list at least one flow")
			}
			in := make([]workloads.Flow, len(w.Flows))
			for j, f := range w.Flows {
				in[j] = workloads.Flow{Src: f.Src, Dst: f.Dst, Size: int64(f.Size), Start: sim.Time(f.Start)}
			}
			flows, err = workloads.Explicit(in, nh)
		case "permutation":
			flows, err = workloads.Permutation(nh, int64(w.Size), sim.Time(w.Start), rng)
		case "incast":
			senders := w.Senders
			if len(senders) == 0 {
				if w.N <= 0 || w.N >= nh {
					return nil, l.errf(path+".n", "must be between 1 and %d when senders is empty, got %d", nh-1, w.N)
				}
				for h := 0; len(senders) < w.N; h++ {
					if h != w.Dst {
						senders = append(senders, h)
					}
				}
			}
			flows, err = workloads.Incast(senders, w.Dst, int64(w.Size), sim.Time(w.Start))
		case "alltoall":
			if n := int64(len(w.Hosts)); n*(n-1) > MaxFlows || n == 0 && int64(nh)*int64(nh-1) > MaxFlows {
				if n == 0 {
					n = int64(nh)
				}
				return nil, l.errf(path+".hosts", "%d hosts make %d flows, more than the limit of %d flows", n, n*(n-1), MaxFlows)
			}
			hosts := w.Hosts
			if len(hosts) == 0 {
				for h := 0; h < nh; h++ {
					hosts = append(hosts, h)
				}
			}
			flows, err = workloads.AllToAll(hosts, int64(w.Size), sim.Time(w.Start))
		case "poisson":
			if w.CDF == "" {
				return nil, l.errf(path+".cdf", "required for poisson arrivals")
			}
			if w.Duration <= 0 {
				return nil, l.errf(path+".duration", "required for poisson arrivals and positive: how long flows arrive after start (e.g. 1ms)")
			}
			data, rerr := l.read(path+".cdf", w.CDF)
			if rerr != nil {
				return nil, rerr
			}
			cdf, perr := workloads.ParseCDF(w.CDF, bytes.NewReader(data))
			if perr != nil {
				return nil, l.errf(path+".cdf", "%v", perr)
			}
			rate := topo.Links[topo.FirstLink(topo.Hosts[0])].Rate
			if w.MaxFlows > MaxFlows {
				return nil, l.errf(path+".max_flows", "must be at most %d, got %d", MaxFlows, w.MaxFlows)
			}
			limit := w.MaxFlows
			end := sim.Time(w.Start) + sim.Time(w.Duration)
			if end < sim.Time(w.Start) {
				return nil, l.errf(path+".duration", "start + duration is beyond the end of virtual time")
			}
			if limit == 0 {
				// Refuse before generating what is expected to be too many.
				perSec := float64(nh) * w.Load * float64(rate) / (8 * cdf.Mean())
				if n := perSec * (end - sim.Time(w.Start)).Seconds(); w.Load > 0 && w.Load <= 1 && n > MaxFlows {
					return nil, l.errf(path+".duration", "about %.3g flows expected, more than the limit of %d: set max_flows or a shorter duration", n, MaxFlows)
				}
				limit = MaxFlows + 1 // more is an error below
			}
			flows, err = workloads.Poisson(workloads.PoissonConfig{NumHosts: nh, Load: w.Load, HostRate: rate,
				CDF: cdf, Start: sim.Time(w.Start), End: end, MaxFlows: limit}, rng)
			if err == nil && len(flows) > MaxFlows {
				return nil, l.errf(path+".duration", "makes more than the limit of %d flows: set max_flows or a shorter duration", MaxFlows)
			}
		case "cm":
			data, rerr := l.read(path+".file", w.File)
			if rerr != nil {
				return nil, rerr
			}
			cm, perr := workloads.ParseCM(w.File, bytes.NewReader(data))
			if perr != nil {
				return nil, l.errf(path+".file", "%v", perr)
			}
			if cm.Nodes > nh {
				return nil, l.errf(path+".file", "%s names %d nodes but the fabric has %d hosts", w.File, cm.Nodes, nh)
			}
			flows = cm.Flows
			if w.TriggerDelay < 0 {
				return nil, l.errf(path+".trigger_delay", "must not be negative")
			}
			for j := range flows {
				flows[j].Delay = sim.Time(w.TriggerDelay)
			}
		case "collective":
			var inst []CollectiveInstance
			var ts []workloads.Task
			flows, ts, inst, err = l.collective(path, i, w, nh, int32(len(out)), taskBase, rng)
			if err != nil {
				return nil, err
			}
			*colls = append(*colls, inst...)
			for _, tk := range ts {
				*tasks = append(*tasks, hostsim.TaskSpec{Host: tk.Host, Need: tk.Need, Delay: tk.Delay, Start: tk.Start,
					Next: shiftIDs(tk.Next, int32(len(out)), taskBase)})
			}
		default:
			return nil, l.errf(path+".type", "unknown workload %q (known: flows, permutation, incast, alltoall, poisson, cm, collective)", w.Type)
		}
		if w.Type != "collective" && w.Collective != nil {
			return nil, l.errf(path+".collective", "is for type collective only")
		}
		base := int32(len(out))
		if err != nil {
			return nil, &Error{File: l.file, Path: path, Msg: err.Error()}
		}
		if len(out)+len(flows) > MaxFlows {
			return nil, l.errf(path, "makes %d flows, more than the limit of %d for a scenario", len(out)+len(flows), MaxFlows)
		}
		for j, f := range flows {
			if f.Src < 0 || f.Src >= nh || f.Dst < 0 || f.Dst >= nh {
				return nil, l.errf(path, "flow %d -> %d: the fabric has hosts 0..%d", f.Src, f.Dst, nh-1)
			}
			if f.Size > MaxFlowSize {
				fp, what := path+".size", ""
				switch w.Type {
				case "flows":
					fp = fmt.Sprintf("%s.flows[%d].size", path, j)
				case "cm":
					fp, what = path+".file", fmt.Sprintf("%s: flow %d: ", w.File, j)
				case "poisson":
					fp = path + ".cdf"
				}
				return nil, l.errf(fp, "%sa flow of %d bytes is more than the limit of %d (1TiB)", what, f.Size, int64(MaxFlowSize))
			}
			out = append(out, hostsim.FlowSpec{ID: int32(len(out)), Src: f.Src, Dst: f.Dst, Size: f.Size, Start: f.Start, Class: w.Class,
				Need: f.Need, Delay: f.Delay, Next: hostsim.NewFlowNext(shiftIDs(f.OnRecvDone, base, taskBase), shiftIDs(f.OnSendDone, base, taskBase))})
		}
	}
	return out, nil
}

func (l *loader) impairments(is []Impairment, topo *topologies.Topology) ([]fabric.LinkImpairment, []fabric.HostStorm, error) {
	byName := make(map[string]int, len(topo.Nodes))
	for i, n := range topo.Nodes {
		byName[n.Name] = i
	}
	var out []fabric.LinkImpairment
	var storms []fabric.HostStorm
	for i := range is {
		im := &is[i]
		path := fmt.Sprintf("impairments[%d]", i)
		if im.Host != "" || im.PFCStorm != nil {
			st, err := l.hostFault(path, im, byName, topo, storms)
			if err != nil {
				return nil, nil, err
			}
			storms = append(storms, st)
			continue
		}
		if len(im.Link) != 2 {
			return nil, nil, l.errf(path+".link", "must name the two end nodes, e.g. [left, right] (or name a host and its fault)")
		}
		a, okA := byName[im.Link[0]]
		b, okB := byName[im.Link[1]]
		if !okA || !okB {
			bad := im.Link[0]
			if okA {
				bad = im.Link[1]
			}
			return nil, nil, l.errf(path+".link", "no node named %q", bad)
		}
		link := -1
		for j, tl := range topo.Links {
			if (tl.A == a && tl.B == b) || (tl.A == b && tl.B == a) {
				link = j
				break
			}
		}
		if link < 0 {
			return nil, nil, l.errf(path+".link", "no link between %s and %s", im.Link[0], im.Link[1])
		}
		fwd := topo.Links[link].A == a // does "forward" run A->B?
		li := fabric.LinkImpairment{Link: link}
		switch im.Direction {
		case "", "both":
			li.AtoB, li.BtoA = true, true
		case "forward":
			li.AtoB, li.BtoA = fwd, !fwd
		case "reverse":
			li.AtoB, li.BtoA = !fwd, fwd
		default:
			return nil, nil, l.errf(path+".direction", "unknown direction %q (known: both, forward, reverse)", im.Direction)
		}
		sp := &sim.Impairments{Loss: float64(im.Loss), Jitter: sim.Time(im.Jitter)}
		if g := im.Gilbert; g != nil {
			sp.GE = &sim.GilbertElliott{P: float64(g.P), R: float64(g.R), LossGood: float64(g.LossGood), LossBad: 1}
			if g.LossBad != nil {
				sp.GE.LossBad = float64(*g.LossBad)
			}
		}
		if r := im.Reorder; r != nil {
			sp.ReorderProb, sp.ReorderDelay = float64(r.Prob), sim.Time(r.Delay)
		}
		for j, c := range im.Schedule {
			cp := fmt.Sprintf("%s.schedule[%d]", path, j)
			n := 0
			if c.Down > 0 {
				n++
				sp.Schedule = append(sp.Schedule,
					sim.LinkChange{At: sim.Time(c.At), Kind: sim.ChangeDown},
					sim.LinkChange{At: sim.Time(c.At) + sim.Time(c.Down), Kind: sim.ChangeUp})
			}
			if c.Rate > 0 {
				n++
				sp.Schedule = append(sp.Schedule, sim.LinkChange{At: sim.Time(c.At), Kind: sim.ChangeRate, Rate: sim.Bandwidth(c.Rate)})
			}
			if c.Delay != nil {
				n++
				sp.Schedule = append(sp.Schedule, sim.LinkChange{At: sim.Time(c.At), Kind: sim.ChangeDelay, Delay: sim.Time(*c.Delay)})
			}
			if c.Loss != nil {
				n++
				sp.Schedule = append(sp.Schedule, sim.LinkChange{At: sim.Time(c.At), Kind: sim.ChangeLoss, Loss: float64(*c.Loss)})
			}
			if n == 0 {
				return nil, nil, l.errf(cp, "says nothing: set down, rate, delay or loss")
			}
		}
		slices.SortStableFunc(sp.Schedule, func(x, y sim.LinkChange) int {
			switch {
			case x.At < y.At:
				return -1
			case x.At > y.At:
				return 1
			}
			return 0
		})
		li.Imp = sp
		out = append(out, li)
	}
	return out, storms, nil
}

// hostFault builds impairment im (at path), which names a host: its
// pfc_storm, the only fault of a host. storms are the ones built so far.
func (l *loader) hostFault(path string, im *Impairment, byName map[string]int, topo *topologies.Topology,
	storms []fabric.HostStorm) (fabric.HostStorm, error) {
	var st fabric.HostStorm
	switch {
	case im.Host == "":
		return st, l.errf(path+".host", "pfc_storm needs the host it stalls")
	case len(im.Link) > 0:
		return st, l.errf(path+".link", "an impairment names a link or a host, not both")
	case im.Direction != "" || im.Loss != 0 || im.Gilbert != nil || im.Jitter != 0 || im.Reorder != nil || len(im.Schedule) > 0:
		return st, l.errf(path+".host", "a host takes pfc_storm only (loss, jitter, reorder, schedule and direction are a link's)")
	case im.PFCStorm == nil:
		return st, l.errf(path+".pfc_storm", "a host impairment needs its fault: pfc_storm")
	}
	n, ok := byName[im.Host]
	if !ok || topo.Nodes[n].Kind != topologies.Host {
		return st, l.errf(path+".host", "no host named %q", im.Host)
	}
	for hi, node := range topo.Hosts {
		if node == n {
			st.Host = hi
		}
	}
	for _, o := range storms {
		if o.Host == st.Host {
			return st, l.errf(path+".host", "%s has a pfc_storm already", im.Host)
		}
	}
	p := im.PFCStorm
	at := path + ".pfc_storm"
	st.At, st.Until = sim.Time(p.At), sim.Never
	if p.At < 0 || p.At > yamlx.Duration(MaxStormTime) {
		return st, l.errf(at+".at", "must be 0 to %v, got %v", MaxStormTime, sim.Time(p.At))
	}
	if p.Until != 0 {
		if p.Until <= p.At || p.Until > yamlx.Duration(MaxStormTime) {
			return st, l.errf(at+".until", "must be after at (%v) and at most %v, got %v", sim.Time(p.At), MaxStormTime, sim.Time(p.Until))
		}
		st.Until = sim.Time(p.Until)
	}
	if p.Drain < 0 {
		return st, l.errf(at+".drain", "must not be negative, got %v", sim.Bandwidth(p.Drain))
	}
	st.Drain = sim.Bandwidth(p.Drain)
	if p.XOFF < 0 || p.XOFF > MaxBuffer {
		return st, l.errf(at+".xoff", "must be 1 byte to 1TiB, got %d", int64(p.XOFF))
	}
	if p.XON != nil && (p.XOFF == 0 || *p.XON < 0 || *p.XON > p.XOFF) {
		return st, l.errf(at+".xon", "needs xoff, and 0 <= xon <= xoff, got xon %d, xoff %d", int64(*p.XON), int64(p.XOFF))
	}
	st.XOFF = int64(p.XOFF)
	if p.XON != nil {
		st.XON = int64(*p.XON)
	} else if p.XOFF > 0 {
		st.XON = st.XOFF / 2
	}
	if p.Headroom < 0 || p.Headroom > MaxBuffer {
		return st, l.errf(at+".headroom", "must be 1 byte to 1TiB, got %d", int64(p.Headroom))
	}
	st.Headroom = int64(p.Headroom)
	if p.Quanta < 0 || p.Quanta > 0xffff {
		return st, l.errf(at+".quanta", "must be 1..65535, got %d", p.Quanta)
	}
	st.Quanta = uint16(p.Quanta)
	if p.NICWatchdog < 0 || p.NICWatchdog > yamlx.Duration(MaxStormTime) {
		return st, l.errf(at+".nic_watchdog", "must be a positive duration up to %v, got %v", MaxStormTime, sim.Time(p.NICWatchdog))
	}
	st.Watchdog = sim.Time(p.NICWatchdog)
	return st, nil
}

// stormSwitches checks that every pfc_storm host's switch runs PFC (the
// host pauses its lossless classes) and gives the errors a file and path.
func (l *loader) stormSwitches(s *Scenario, fc *fabric.Config) error {
	if len(fc.Storms) == 0 {
		return nil
	}
	k := 0
	for i := range s.Impairments {
		if s.Impairments[i].PFCStorm == nil {
			continue
		}
		st := fc.Storms[k]
		k++
		node := fc.Topo.Hosts[st.Host]
		sc := fc.Switch
		if j := fc.Topo.FirstLink(node); j >= 0 {
			peer := fc.Topo.Links[j].A
			if peer == node {
				peer = fc.Topo.Links[j].B
			}
			if c, ok := fc.SwitchTiers[fc.Topo.Nodes[peer].Tier]; ok {
				sc = c
			}
		}
		lossless := false
		for _, c := range sc.Classes {
			lossless = lossless || c.Lossless
		}
		if !lossless {
			return l.errf(fmt.Sprintf("impairments[%d].pfc_storm", i), "host %s's switch has no lossless class: set switch.classes and switch.pfc", s.Impairments[i].Host)
		}
	}
	return nil
}

// jobNames checks the collective workloads' job names (given or the
// default w<index>): each names one job in collectives.csv and jobs.csv
// (and their plots), so they must differ, and they are CSV fields, so
// letters, digits, '_', '-' and '.' only.
func (l *loader) jobNames(ws []Workload) error {
	seen := map[string]int{}
	for i := range ws {
		c := ws[i].Collective
		if ws[i].Type != "collective" || c == nil {
			continue
		}
		name := c.Job
		if name == "" {
			name = fmt.Sprintf("w%d", i)
		}
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
				return l.errf(fmt.Sprintf("workload[%d].collective.job", i), "%q: use letters, digits, '_', '-' and '.' only", name)
			}
		}
		if j, dup := seen[name]; dup {
			return l.errf(fmt.Sprintf("workload[%d].collective.job", i), "%q is workload[%d]'s job too: give each job its own name", name, j)
		}
		seen[name] = i
	}
	return nil
}

// shiftIDs renumbers an activation list of a workload group whose flows
// start at base and whose tasks (hostsim.TaskRef, negative) at taskBase.
func shiftIDs(ids []int32, base, taskBase int32) []int32 {
	if len(ids) == 0 {
		return nil
	}
	out := make([]int32, len(ids))
	for i, v := range ids {
		if v < 0 {
			out[i] = v - taskBase
		} else {
			out[i] = v + base
		}
	}
	return out
}

// collective builds a collective workload group: its flows (numbered
// from 0), its compute tasks (numbered from 0) and its instances (flows
// numbered from base, the group's first flow, and tasks from taskBase).
func (l *loader) collective(path string, idx int, w *Workload, nh int, base, taskBase int32, rng *rand.Rand) ([]workloads.Flow, []workloads.Task, []CollectiveInstance, error) {
	c := w.Collective
	if c == nil {
		return nil, nil, nil, l.errf(path+".collective", "required for type collective")
	}
	cp := path + ".collective"
	hosts := slices.Clone(w.Hosts)
	if len(hosts) > 0 && c.Ranks != 0 && c.Ranks != len(hosts) {
		return nil, nil, nil, l.errf(cp+".ranks", "%d ranks but %d hosts", c.Ranks, len(hosts))
	}
	if len(hosts) == 0 {
		n := c.Ranks
		if n == 0 {
			n = nh - c.FirstHost
		}
		if n < 2 || c.FirstHost < 0 || c.FirstHost+n > nh {
			return nil, nil, nil, l.errf(cp+".ranks", "%d ranks from host %d do not fit the fabric's %d hosts", n, c.FirstHost, nh)
		}
		switch c.Placement {
		case "", "in_order":
			for r := 0; r < n; r++ {
				hosts = append(hosts, c.FirstHost+r)
			}
		case "rail":
			g := c.GPUsPerServer
			if g < 1 || n%g != 0 || c.FirstHost%g != 0 {
				return nil, nil, nil, l.errf(cp+".gpus_per_server", "placement rail needs gpus_per_server dividing ranks and first_host, got %d", g)
			}
			// Rank order (rail, server): consecutive ranks are the same
			// rail of consecutive servers, so a ring crosses rails only
			// G times.
			servers := n / g
			for rail := 0; rail < g; rail++ {
				for sv := 0; sv < servers; sv++ {
					hosts = append(hosts, c.FirstHost+sv*g+rail)
				}
			}
		default:
			return nil, nil, nil, l.errf(cp+".placement", "unknown placement %q (known: in_order, rail)", c.Placement)
		}
	}
	for r, h := range hosts {
		if h < 0 || h >= nh {
			return nil, nil, nil, l.errf(path+".hosts", "rank %d: host %d does not exist (fabric has %d hosts)", r, h, nh)
		}
	}
	flows, tasks := collectiveCounts(w, int64(nh))
	if flows > MaxFlows {
		return nil, nil, nil, l.errf(cp, "makes about %d flows, more than the limit of %d flows", flows, MaxFlows)
	}
	if tasks > MaxFlows {
		return nil, nil, nil, l.errf(cp, "makes about %d compute tasks, more than the limit of %d", tasks, MaxFlows)
	}
	iters := c.Iterations
	if iters == 0 {
		iters = 1
	}
	cfg := workloads.CollectiveConfig{Op: c.Op, Algorithm: c.Algorithm, Hosts: hosts, Size: int64(w.Size),
		Chunks: c.Chunks, Pipeline: c.Pipeline, Start: sim.Time(w.Start), Delay: sim.Time(c.Delay)}
	jc := workloads.JobConfig{Collective: cfg, Iterations: iters, Compute: sim.Time(c.Compute),
		ComputeMax: sim.Time(c.ComputeMax), Buckets: c.Buckets}
	if p := c.Parallel; p != nil {
		if p.TP < 0 || p.PP < 0 {
			return nil, nil, nil, l.errf(cp+".parallel", "tp and pp must be at least 1, got %d and %d", p.TP, p.PP)
		}
		pc := parallelConfig(p)
		pc.Forward, pc.Backward = sim.Time(p.Forward), sim.Time(p.Backward)
		jc.Parallel = &pc
	}
	jf, err := workloads.Job(jc, rng)
	if err != nil {
		where := cp
		if c.Parallel != nil {
			where += ".parallel"
		}
		return nil, nil, nil, &Error{File: l.file, Path: where, Msg: err.Error()}
	}
	job := c.Job
	if job == "" {
		job = fmt.Sprintf("w%d", idx)
	}
	alg := c.Algorithm
	if alg == "" {
		alg = workloads.AlgRing
		if c.Op == workloads.OpAllToAll {
			alg = workloads.AlgDirect
		}
	}
	var inst []CollectiveInstance
	if jf.Instances == nil {
		for it, r := range jf.Iters {
			var tasks workloads.FlowRange
			if it < len(jf.IterTasks) {
				tasks = workloads.FlowRange{First: taskBase + jf.IterTasks[it].First, Count: jf.IterTasks[it].Count}
			}
			inst = append(inst, CollectiveInstance{Job: job, Iteration: it, Op: c.Op, Algorithm: alg, Bytes: int64(w.Size),
				Hosts: hosts, First: base + r.First, Count: r.Count, Compute: sim.Time(c.Compute), Start: sim.Time(w.Start),
				Tasks: tasks})
		}
		return jf.Flows, jf.Tasks, inst, nil
	}
	// A parallel job: every instance of every phase; each carries its
	// iteration's tasks, whose last firing may end the iteration.
	for _, in := range jf.Instances {
		a := in.Algorithm
		if in.Phase == workloads.PhaseDP {
			a = alg
		}
		it := jf.IterTasks[in.Iteration]
		inst = append(inst, CollectiveInstance{Job: job, Iteration: in.Iteration, Phase: in.Phase, Op: in.Op, Algorithm: a,
			Bytes: in.Bytes, Hosts: in.Hosts, First: base + in.First, Count: in.Count, Compute: sim.Time(c.Compute),
			Start: sim.Time(w.Start), Tasks: workloads.FlowRange{First: taskBase + it.First, Count: it.Count}})
	}
	return jf.Flows, jf.Tasks, inst, nil
}
