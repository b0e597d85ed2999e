package switchsim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lockstep-sim/lockstep/sim"
)

// Module is one registered switch module.
type Module struct {
	Stage Stage
	Name  string
	// Doc is one line for `lockstep switch list`, with its source.
	Doc string
	// Options are the keys New reads, for the list and the docs.
	Options []OptionDoc
	// New builds the module for one switch. It returns a value that
	// implements the stage's interface (Forwarder for StageForward, ...).
	// It reads its options from o (an unknown key is an error once New
	// returns) and may size per-port state by env; env.Ports is empty when
	// a scenario is only checked.
	New func(o *Options, env *Env) (any, error)
}

// OptionDoc documents one option of a module.
type OptionDoc struct {
	Key, Default, Doc string
}

// Env is what a module's constructor knows of its switch.
type Env struct {
	// Ports are the switch's ports (empty when a scenario is checked).
	Ports []Port
	// Classes is the number of class queues per port (at least 1).
	Classes int
	// Config is the switch's configuration; its fields give built-in
	// modules their defaults (Shared for "dynamic", Trim for "ndp", ...).
	Config *Config
}

// Registry is a set of modules by stage and name. Builtins returns one
// with the built-in modules; a program adds its own with Register and
// hands the registry to the switches through Config.Registry (and to a
// scenario through scenario.WithSwitchModules).
type Registry struct {
	mods []Module
}

// builtins is the built-in modules. It is never modified: Builtins and
// Config.Registry's nil default read it.
var builtins = &Registry{mods: builtinModules()}

// Builtins returns a new registry holding the built-in modules.
func Builtins() *Registry {
	return &Registry{mods: slices.Clone(builtins.mods)}
}

// Register adds m. The name must be new in its stage.
func (r *Registry) Register(m Module) error {
	if m.Stage < StageClassify || m.Stage > StageTrim {
		return fmt.Errorf("switchsim: module %q: invalid stage %d", m.Name, m.Stage)
	}
	if m.Name == "" || m.New == nil {
		return fmt.Errorf("switchsim: %s module: want a name and a constructor", m.Stage)
	}
	if r.Lookup(m.Stage, m.Name) != nil {
		return fmt.Errorf("switchsim: %s module %q is already registered", m.Stage, m.Name)
	}
	r.mods = append(r.mods, m)
	return nil
}

// Lookup is the module of stage st named name, or nil.
func (r *Registry) Lookup(st Stage, name string) *Module {
	for i := range r.mods {
		if r.mods[i].Stage == st && r.mods[i].Name == name {
			return &r.mods[i]
		}
	}
	return nil
}

// Modules lists the modules of stage st in registration order.
func (r *Registry) Modules(st Stage) []Module {
	var out []Module
	for _, m := range r.mods {
		if m.Stage == st {
			out = append(out, m)
		}
	}
	return out
}

// Names lists the names of stage st's modules.
func (r *Registry) Names(st Stage) []string {
	var out []string
	for _, m := range r.Modules(st) {
		out = append(out, m.Name)
	}
	return out
}

// Build builds the module ref names for stage st and checks that it
// implements the stage's interface.
func (r *Registry) Build(st Stage, ref ModuleRef, env *Env) (any, error) {
	m := r.Lookup(st, ref.Name)
	if m == nil {
		return nil, &UnknownModuleError{Stage: st, Name: ref.Name, Known: r.Names(st)}
	}
	o := &Options{stage: st, module: ref.Name, m: ref.Options, used: map[string]bool{}}
	v, err := m.New(o, env)
	if err != nil {
		return nil, err
	}
	if err := o.done(); err != nil {
		return nil, err
	}
	ok := false
	switch st {
	case StageClassify:
		_, ok = v.(Classifier)
	case StageForward:
		_, ok = v.(Forwarder)
	case StageBuffer:
		_, ok = v.(BufferPolicy)
	case StageAQM:
		_, ok = v.(AQM)
	case StageSchedule:
		_, ok = v.(Scheduler)
	case StageTrim:
		ok = v == nil
		if !ok {
			_, ok = v.(Trimmer)
		}
	}
	if !ok {
		return nil, fmt.Errorf("switchsim: %s module %q (%T) does not implement the stage's interface", st, ref.Name, v)
	}
	return v, nil
}

// UnknownModuleError is a module name the registry does not know.
type UnknownModuleError struct {
	Stage Stage
	Name  string
	Known []string
}

func (e *UnknownModuleError) Error() string {
	return fmt.Sprintf("unknown %s module %q (known: %s)", e.Stage, e.Name, strings.Join(e.Known, ", "))
}

// OptionError is an option a module refuses: a key it does not take
// (Err nil), a value that does not parse or is out of range, or a
// required one that is missing.
type OptionError struct {
	Stage       Stage
	Module, Key string
	Err         error
}

func (e *OptionError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s module %s: unknown option %q", e.Stage, e.Module, e.Key)
	}
	return fmt.Sprintf("%s module %s: option %s: %v", e.Stage, e.Module, e.Key, e.Err)
}

func (e *OptionError) Unwrap() error { return e.Err }

// Options are a module's key=value options as its constructor reads
// them: each getter marks its key as known and returns the default when
// the key is absent.
type Options struct {
	stage  Stage
	module string
	m      map[string]string
	used   map[string]bool
}

// Has reports whether key was given.
func (o *Options) Has(key string) bool {
	o.used[key] = true
	_, ok := o.m[key]
	return ok
}

func (o *Options) errf(key, format string, args ...any) error {
	return &OptionError{Stage: o.stage, Module: o.module, Key: key, Err: fmt.Errorf(format, args...)}
}

// Required is the error for a missing required key, or nil.
func (o *Options) Required(keys ...string) error {
	for _, k := range keys {
		if !o.Has(k) {
			return o.errf(k, "required")
		}
	}
	return nil
}

// String is key's text, or def.
func (o *Options) String(key, def string) string {
	o.used[key] = true
	if v, ok := o.m[key]; ok {
		return v
	}
	return def
}

// Float is key as a finite number within [lo, hi], or def.
func (o *Options) Float(key string, def, lo, hi float64) (float64, error) {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < lo || f > hi {
		return 0, o.errf(key, "want a number in [%g, %g], got %q", lo, hi, v)
	}
	return f, nil
}

// Int is key as an integer within [lo, hi], or def.
func (o *Options) Int(key string, def, lo, hi int64) (int64, error) {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, o.errf(key, "want a whole number in [%d, %d], got %q", lo, hi, v)
	}
	return n, nil
}

// Bool is key as true or false, or def.
func (o *Options) Bool(key string, def bool) (bool, error) {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, o.errf(key, "want true or false, got %q", v)
	}
	return b, nil
}

// Micros is key, a duration in microseconds (a number, up to 1e9), or
// def.
func (o *Options) Micros(key string, def sim.Time) (sim.Time, error) {
	f, err := o.Float(key, float64(def)/float64(sim.Microsecond), 0, 1e9)
	if err != nil {
		return 0, err
	}
	return sim.Time(math.Round(f * float64(sim.Microsecond))), nil
}

// Choice is key, one of choices, or def.
func (o *Options) Choice(key, def string, choices ...string) (string, error) {
	v := o.String(key, def)
	if !slices.Contains(choices, v) {
		return "", o.errf(key, "want one of %s, got %q", strings.Join(choices, ", "), v)
	}
	return v, nil
}

// done reports the first key no getter asked for, in sorted order.
func (o *Options) done() error {
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !o.used[k] {
			return &OptionError{Stage: o.stage, Module: o.module, Key: k}
		}
	}
	return nil
}
