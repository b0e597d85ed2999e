package switchsim

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

// builtinModules are the modules every registry starts with, in the
// order `lockstep switch list` prints them.
func builtinModules() []Module {
	return []Module{
		{Stage: StageClassify, Name: "class",
			Doc: "a data packet's class field (its workload's class), clamped to the last class; packets without payload and trimmed headers to the control class",
			New: func(o *Options, env *Env) (any, error) { return classByField{control: env.Config.ControlClass}, nil }},

		{Stage: StageForward, Name: "ecmp",
			Doc: "a salted hash of the 5-tuple: every packet of a flow takes one path",
			New: func(o *Options, env *Env) (any, error) { return ecmp{}, nil }},
		{Stage: StageForward, Name: "spray",
			Doc: "a salted hash of the packet's entropy value; senders draw a fresh one per packet (packet spraying)",
			New: func(o *Options, env *Env) (any, error) { return spray{}, nil }},
		{Stage: StageForward, Name: "adaptive",
			Doc: "each packet to the equal-cost port with the fewest bytes in its buffer (ties: the ECMP hash's port)",
			New: func(o *Options, env *Env) (any, error) { return adaptive{}, nil }},
		{Stage: StageForward, Name: "flowlet",
			Doc:     "as adaptive, but a flow changes port only after an idle gap (Kandula et al. CCR 2007; a 4096-entry table by 5-tuple hash)",
			Options: []OptionDoc{{"gap_us", "switch.flowlet_gap (50)", "the idle gap that starts a new flowlet, microseconds"}},
			New: func(o *Options, env *Env) (any, error) {
				gap, err := o.Micros("gap_us", env.Config.FlowletGap)
				if err != nil {
					return nil, err
				}
				return newFlowlet(gap), nil
			}},
		{Stage: StageForward, Name: "drill",
			Doc: "DRILL(d, m) (Ghorbani et al. SIGCOMM 2017): the least loaded of d random equal-cost ports and the m remembered from the last packet",
			Options: []OptionDoc{{"samples", "2", "d: ports sampled at random per packet, 1 to 16"},
				{"memory", "1", "m: least loaded ports remembered, 0 to 4"}},
			New: func(o *Options, env *Env) (any, error) {
				d, err := o.Int("samples", 2, 1, drillMaxD)
				if err != nil {
					return nil, err
				}
				m, err := o.Int("memory", 1, 0, drillMaxMem)
				if err != nil {
					return nil, err
				}
				return newDrill(int(d), int(m)), nil
			}},

		{Stage: StageBuffer, Name: "static",
			Doc: "drop-tail on each port's own buffer (the tier's buffer)",
			New: func(o *Options, env *Env) (any, error) { return staticBuffer{}, nil }},
		{Stage: StageBuffer, Name: "dynamic",
			Doc: "a switch-wide pool with Choudhury-Hahne dynamic thresholds: beyond its reserve a queue holds at most alpha × the free pool (alpha per class)",
			Options: []OptionDoc{{"size_bytes", "switch.shared_buffer.size", "the pool, bytes (required without shared_buffer)"},
				{"reserved_bytes", "switch.shared_buffer.reserved (0)", "each (port, class) queue's own bytes outside the pool"}},
			New: newDynamicBuffer},

		{Stage: StageAQM, Name: "ecn",
			Doc: "each port's ecn setting (the tier's ecn: off, step or red, on arrival or dequeue); marks ECN-capable packets, never drops",
			New: func(o *Options, env *Env) (any, error) { return &ecnAQM{}, nil }},
		{Stage: StageAQM, Name: "droptail",
			Doc: "no marking on any port of the switch (drop-tail only)",
			New: func(o *Options, env *Env) (any, error) { return &ecnAQM{set: &topologies.ECNConfig{}}, nil }},
		{Stage: StageAQM, Name: "step",
			Doc: "mark an ECN-capable packet when its port holds more than k bytes (DCTCP's marking, RFC 8257 §3.1), every port",
			Options: []OptionDoc{{"k_bytes", "required", "the threshold, bytes"},
				{"on", "arrival", "arrival (the occupancy the packet finds) or dequeue (the backlog behind it)"}},
			New: newStepAQM},
		{Stage: StageAQM, Name: "red",
			Doc: "RED marking on the instantaneous queue (Floyd-Jacobson 1993, weight 1): probability 0 at min to pmax at max, 1 above, every port",
			Options: []OptionDoc{{"min_bytes", "required", "below it no mark"}, {"max_bytes", "required", "above it every ECN-capable packet is marked"},
				{"pmax", "1", "the probability at max_bytes"}, {"on", "arrival", "arrival or dequeue"}},
			New: newREDAQM},
		{Stage: StageAQM, Name: "codel",
			Doc: "CoDel (RFC 8289): drops on dequeue once the sojourn time has stayed above target for an interval, at intervals shrinking as 1/sqrt(count)",
			Options: []OptionDoc{{"target_us", "5000", "TARGET, the acceptable standing delay, microseconds (RFC 8289: 5 ms)"},
				{"interval_us", "100000", "INTERVAL, microseconds (RFC 8289: 100 ms)"},
				{"mtu_bytes", "0", "the packet size below which a backlog is never dropped (0: the queue's largest packet)"},
				{"ecn", "false", "mark ECN-capable packets instead of dropping them"}},
			New: newCoDelAQM},

		{Stage: StageSchedule, Name: "dwrr",
			Doc:     "strict priority for weight-0 classes (highest first), then deficit weighted round robin by weight (Shreedhar-Varghese 1995)",
			Options: []OptionDoc{{"quantum_bytes", "1500", "the quantum of weight 1"}},
			New: func(o *Options, env *Env) (any, error) {
				q, err := o.Int("quantum_bytes", DWRRQuantum, 1, 1<<30)
				if err != nil {
					return nil, err
				}
				w := &dwrr{}
				for i := 0; i < env.Classes; i++ {
					k := Class{}
					if i < len(env.Config.Classes) {
						k = env.Config.Classes[i]
					}
					w.strict[i] = k.Weight == 0
					w.quantum[i] = int64(k.Weight) * q
				}
				return w, nil
			}},
		{Stage: StageSchedule, Name: "strict",
			Doc: "strict priority over every class, the highest first, whatever the weights (IEEE 802.1Q §8.6.8.1)",
			New: func(o *Options, env *Env) (any, error) { return strictPriority{}, nil }},

		{Stage: StageTrim, Name: "none",
			Doc: "a packet that does not fit is dropped",
			New: func(o *Options, env *Env) (any, error) { return nil, nil }},
		{Stage: StageTrim, Name: "ndp",
			Doc: "NDP trimming (Handley et al. SIGCOMM 2017): a data packet that does not fit is cut to its header, queued in the control class",
			Options: []OptionDoc{{"header_bytes", "switch.trim.header (64)", "the size of a trimmed packet"},
				{"queue_bytes", "1024 headers", "the headers a port may hold beyond its buffer"}},
			New: newNDPTrim},
	}
}

func newDynamicBuffer(o *Options, env *Env) (any, error) {
	sh := env.Config.Shared
	if sh.Size == 0 {
		if err := o.Required("size_bytes"); err != nil {
			return nil, err
		}
	}
	size, err := o.Int("size_bytes", sh.Size, 1, 1<<40)
	if err != nil {
		return nil, err
	}
	res, err := o.Int("reserved_bytes", sh.Reserved, 0, 1<<40)
	if err != nil {
		return nil, err
	}
	b := &dynamicBuffer{size: size, reserved: res}
	for i := range b.alpha {
		b.alpha[i] = 1
		if i < len(env.Config.Classes) {
			b.alpha[i] = env.Config.Classes[i].Alpha
		}
	}
	return b, nil
}

func ecnOn(o *Options) (bool, error) {
	on, err := o.Choice("on", "arrival", "arrival", "dequeue")
	return on == "dequeue", err
}

func newStepAQM(o *Options, env *Env) (any, error) {
	if err := o.Required("k_bytes"); err != nil {
		return nil, err
	}
	k, err := o.Int("k_bytes", 0, 0, 1<<40)
	if err != nil {
		return nil, err
	}
	deq, err := ecnOn(o)
	if err != nil {
		return nil, err
	}
	return &ecnAQM{set: &topologies.ECNConfig{Mode: topologies.ECNStep, K: k, Dequeue: deq}}, nil
}

func newREDAQM(o *Options, env *Env) (any, error) {
	if err := o.Required("min_bytes", "max_bytes"); err != nil {
		return nil, err
	}
	lo, err := o.Int("min_bytes", 0, 0, 1<<40)
	if err != nil {
		return nil, err
	}
	hi, err := o.Int("max_bytes", 0, lo+1, 1<<40)
	if err != nil {
		return nil, err
	}
	p, err := o.Float("pmax", 1, 0, 1)
	if err != nil {
		return nil, err
	}
	deq, err := ecnOn(o)
	if err != nil {
		return nil, err
	}
	return &ecnAQM{set: &topologies.ECNConfig{Mode: topologies.ECNRED, Min: lo, Max: hi, PMax: p, Dequeue: deq}}, nil
}

// CoDel's defaults: RFC 8289 §4.2 and §4.3 (TARGET 5 ms, INTERVAL 100
// ms, for the Internet; datacenter fabrics want microseconds).
const (
	CoDelTarget   = 5 * sim.Millisecond
	CoDelInterval = 100 * sim.Millisecond
)

func newCoDelAQM(o *Options, env *Env) (any, error) {
	target, err := o.Micros("target_us", CoDelTarget)
	if err != nil {
		return nil, err
	}
	interval, err := o.Micros("interval_us", CoDelInterval)
	if err != nil {
		return nil, err
	}
	if target <= 0 || interval <= 0 {
		return nil, o.errf("target_us", "target and interval must be positive, got %v and %v", target, interval)
	}
	mtu, err := o.Int("mtu_bytes", 0, 0, 1<<30)
	if err != nil {
		return nil, err
	}
	ecn, err := o.Bool("ecn", false)
	if err != nil {
		return nil, err
	}
	return NewCoDel(target, interval, mtu, ecn, len(env.Ports), env.Classes), nil
}

func newNDPTrim(o *Options, env *Env) (any, error) {
	def := env.Config.Trim.Header
	if def == 0 {
		def = 64
	}
	h, err := o.Int("header_bytes", int64(def), 1, 1<<20)
	if err != nil {
		return nil, err
	}
	qdef := env.Config.Trim.Queue
	if qdef == 0 || int32(h) != env.Config.Trim.Header {
		qdef = 1024 * h
	}
	q, err := o.Int("queue_bytes", qdef, 1, 1<<40)
	if err != nil {
		return nil, err
	}
	return &ndpTrim{header: int32(h), queue: q}, nil
}

// kind is how the core calls a stage's module: a built-in's own code
// directly (a switch on the kind, resolved once), kindCustom through the
// stage's interface.
type kind uint8

const (
	kindCustom kind = iota
	kindECMP
	kindSpray
	kindAdaptive
	kindFlowlet
	kindDrill
	kindStatic
	kindDynamic
	kindECN
	kindCoDel
	kindDWRR
	kindStrict
	kindClass
	kindNoTrim
	kindNDP
)

// kindOf is the kind of a built module.
func kindOf(v any) kind {
	switch v.(type) {
	case ecmp:
		return kindECMP
	case spray:
		return kindSpray
	case adaptive:
		return kindAdaptive
	case *flowletFwd:
		return kindFlowlet
	case *drill:
		return kindDrill
	case staticBuffer:
		return kindStatic
	case *dynamicBuffer:
		return kindDynamic
	case *ecnAQM:
		return kindECN
	case *CoDel:
		return kindCoDel
	case *dwrr:
		return kindDWRR
	case strictPriority:
		return kindStrict
	case classByField:
		return kindClass
	case nil:
		return kindNoTrim
	case *ndpTrim:
		return kindNDP
	}
	return kindCustom
}

// pipeline is a switch's built modules and how to call them.
type pipeline struct {
	cls  Classifier
	fwd  Forwarder
	buf  BufferPolicy
	aqm  AQM
	sch  Scheduler
	trim Trimmer // nil: no trimming
	// The stateful built-ins as their own types (set with their kind),
	// so that the hot path calls them without a type assertion.
	flowlet *flowletFwd
	drill   *drill
	dyn     *dynamicBuffer
	codel   *CoDel
	dwrr    *dwrr
	ndp     *ndpTrim
}

// kinds is how the switch calls its pipeline's modules: each stage's
// kind (a built-in's own code, or kindCustom: through its interface) and
// what the modules need of the core. The switch keeps it in its first
// lines, apart from the pipeline, because every packet reads it.
type kinds struct {
	kcls, kfwd, kbuf, kaqm, ksch, ktrim kind
	// deqAQM: the AQM decides on dequeue (a DequeueAQM); aqmDeq: the
	// core asks it before a packet starts (not for kindECN, whose dequeue
	// marking start does itself); sojourn: it needs enqueue times (a
	// SojournUser); portState: some module is a PortStateUser, or trims.
	deqAQM, aqmDeq, sojourn, portState bool
}

// defaultRef is the module stage st takes when c names none: the one the
// legacy fields imply.
func (c *Config) defaultRef(st Stage, mode Forwarding) ModuleRef {
	switch st {
	case StageClassify:
		return ModuleRef{Name: "class"}
	case StageForward:
		if mode == 0 {
			mode = ECMP
		}
		return ModuleRef{Name: mode.String()}
	case StageBuffer:
		if c.Shared.Size > 0 {
			return ModuleRef{Name: "dynamic"}
		}
		return ModuleRef{Name: "static"}
	case StageAQM:
		return ModuleRef{Name: "ecn"}
	case StageSchedule:
		return ModuleRef{Name: "dwrr"}
	case StageTrim:
		if c.Trim.Enabled {
			return ModuleRef{Name: "ndp"}
		}
		return ModuleRef{Name: "none"}
	}
	return ModuleRef{}
}

// DefaultModule is the module stage st runs when a switch names none and
// sets none of the fields that imply another (forwarding, shared_buffer,
// trim).
func DefaultModule(st Stage) string {
	return (&Config{}).defaultRef(st, ECMP).Name
}

// buildModules builds the switch's modules from s.cfg.
func (s *Switch) buildModules() error {
	reg := s.cfg.Registry
	if reg == nil {
		reg = builtins
	}
	env := &Env{Ports: s.Ports, Classes: s.nc, Config: &s.cfg}
	var p pipeline
	var ks kinds
	for _, st := range Stages {
		ref := *s.cfg.Modules.Ref(st)
		if ref.Name == "" {
			ref = s.cfg.defaultRef(st, s.Mode)
		}
		v, err := reg.Build(st, ref, env)
		if err != nil {
			return err
		}
		k := kindOf(v)
		switch st {
		case StageClassify:
			p.cls, ks.kcls = v.(Classifier), k
		case StageForward:
			p.fwd, ks.kfwd = v.(Forwarder), k
		case StageBuffer:
			p.buf, ks.kbuf = v.(BufferPolicy), k
		case StageAQM:
			p.aqm, ks.kaqm = v.(AQM), k
			_, ks.deqAQM = v.(DequeueAQM)
			ks.aqmDeq = ks.deqAQM && k != kindECN
			_, ks.sojourn = v.(SojournUser)
		case StageSchedule:
			p.sch, ks.ksch = v.(Scheduler), k
		case StageTrim:
			if v != nil {
				p.trim = v.(Trimmer)
				ks.portState = true // the Trimmed counters
			}
			ks.ktrim = k
		}
		if _, ok := v.(PortStateUser); ok {
			ks.portState = true
		}
		switch x := v.(type) {
		case *flowletFwd:
			p.flowlet = x
		case *drill:
			p.drill = x
		case *dynamicBuffer:
			p.dyn = x
		case *CoDel:
			p.codel = x
		case *dwrr:
			p.dwrr = x
		case *ndpTrim:
			p.ndp = x
		}
	}
	s.mod, s.kinds = p, ks
	s.poolSize, s.poolReserved = 0, 0
	if sp, ok := p.buf.(SharedPool); ok {
		s.poolSize, s.poolReserved = sp.Pool()
		if s.poolSize <= 0 || s.poolReserved < 0 {
			return fmt.Errorf("buffer module: pool of %d bytes with %d reserved", s.poolSize, s.poolReserved)
		}
	}
	s.trimQueue = 0
	if p.trim != nil {
		s.trimQueue = p.trim.HeaderQueue()
	}
	if a, ok := p.aqm.(*ecnAQM); ok && a.set != nil {
		for i := range s.Ports {
			s.Ports[i].Queue.ECN = *a.set
		}
	}
	return nil
}

// UseInterfaces makes the switch call every module through its stage's
// interface, built-ins included (a test checks that both ways give the
// same results).
func (s *Switch) UseInterfaces() {
	m := &s.kinds
	m.kcls, m.kfwd, m.kbuf, m.kaqm, m.ksch = kindCustom, kindCustom, kindCustom, kindCustom, kindCustom
	m.aqmDeq = m.deqAQM
	if s.mod.trim != nil {
		m.ktrim = kindCustom
	}
}
