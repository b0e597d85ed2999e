// Package sweep runs a scenario over a grid of parameters and seeds: it
// reads a sweep spec (docs/scenario.md "Sweeps"), turns every point of
// the grid into scenario edits (scenario.WithField, scenario.WithSeed),
// runs the points in parallel through a caller's run function (the one
// `lockstep run` uses, so a point's outputs are those of running it
// alone), skips the runs a previous sweep finished, and writes sweep.csv
// (one row per run) and sweep-summary.csv (mean and 95% confidence
// interval over the seeds of each point).
package sweep

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lockstep-sim/lockstep/internal/yamlx"
	"github.com/lockstep-sim/lockstep/scenario"
)

// MaxRuns bounds a sweep's grid (points × seeds).
const MaxRuns = 100000

// Spec is a sweep file.
type Spec struct {
	// Scenario is the base scenario, relative to the spec's directory.
	Scenario string `yaml:"scenario" lockstep:"required"`
	// Parameters are the fields to vary, in the order written: each maps
	// a scenario field path to a list of values or a range; paths joined
	// by "+" ("topology.fattree.agg.buffer+topology.fattree.core.buffer")
	// take the same value.
	Parameters Params `yaml:"parameters"`
	// Seeds are the seeds of every point (a list or a range; default [1]).
	Seeds *Values `yaml:"seeds"`
	// Out is the output directory, relative to the spec's directory
	// (default: out/NAME in the working directory, NAME the spec's file
	// name without .yaml, as `lockstep run` writes into out/); --out
	// overrides.
	Out string `yaml:"out"`
}

// Param is one varied field.
type Param struct {
	Path   string
	Values []string // YAML text of each value
	edits  []scenario.Edit
}

// Params keeps the parameters in the order the file writes them.
type Params []Param

// UnmarshalYAML reads a mapping of field path to values.
func (p *Params) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return errors.New("want a mapping of field paths to lists or ranges")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var vals Values
		if err := vals.UnmarshalYAML(v); err != nil {
			return fmt.Errorf("%s: %v", k.Value, err)
		}
		for _, q := range *p {
			if q.Path == k.Value {
				return fmt.Errorf("%s: given twice", k.Value)
			}
		}
		*p = append(*p, Param{Path: k.Value, Values: vals})
	}
	return nil
}

// Values is a list of values ([a, b, c]) or a numeric range ({from: 1,
// to: 9, step: 2}, both ends included, step default 1).
type Values []string

// UnmarshalYAML reads a list or a range.
func (vs *Values) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return errors.New("empty list")
		}
		for _, c := range n.Content {
			if c.Kind == yaml.ScalarNode {
				*vs = append(*vs, c.Value)
				continue
			}
			b, err := yaml.Marshal(c)
			if err != nil {
				return err
			}
			*vs = append(*vs, strings.TrimRight(string(b), "\n"))
		}
		return nil
	case yaml.MappingNode:
		var r struct {
			From *float64 `yaml:"from"`
			To   *float64 `yaml:"to"`
			Step *float64 `yaml:"step"`
		}
		if err := n.Decode(&r); err != nil {
			return fmt.Errorf("a range is {from: N, to: M, step: S} with numbers: %v", oneLine(err.Error()))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; k != "from" && k != "to" && k != "step" {
				return fmt.Errorf("a range has from, to and step, not %q", k)
			}
		}
		if r.From == nil || r.To == nil {
			return errors.New("a range needs from and to")
		}
		step := 1.0
		if r.Step != nil {
			step = *r.Step
		}
		if step <= 0 || math.IsNaN(step) || *r.To < *r.From {
			return fmt.Errorf("range from %v to %v step %v: want from <= to and step > 0", *r.From, *r.To, step)
		}
		count := math.Floor((*r.To-*r.From)/step+1e-9) + 1
		if count > MaxRuns {
			return fmt.Errorf("range from %v to %v step %v has %v values, more than %d", *r.From, *r.To, step, count, MaxRuns)
		}
		for i := range int(count) {
			*vs = append(*vs, strconv.FormatFloat(*r.From+float64(i)*step, 'g', -1, 64))
		}
		return nil
	default:
		return fmt.Errorf("want a list [a, b] or a range {from: 1, to: 4}, got %q", n.Value)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Loaded is a checked spec: the base scenario's path, the parameters with
// their edits, the seeds and the output directory.
type Loaded struct {
	File     string // the spec file
	Scenario string // the base scenario's path
	Params   []Param
	Seeds    []uint64
	Out      string
}

// Load reads and checks the spec file path: its fields strictly, every
// parameter path against the scenario format, and every value against its
// field. Errors are one line naming the file (and the parameter).
func Load(path string) (*Loaded, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: cannot read sweep spec: %v", path, err)
	}
	var s Spec
	if err := yamlx.Decode(path, data, &s); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	l := &Loaded{File: path, Scenario: filepath.Join(dir, s.Scenario), Params: s.Parameters}
	if filepath.IsAbs(s.Scenario) {
		l.Scenario = s.Scenario
	}
	runs := 1
	for i := range l.Params {
		p := &l.Params[i]
		for _, v := range p.Values {
			// "a+b+c" sets the fields a, b and c to the same value.
			var es []scenario.Edit
			for f := range strings.SplitSeq(p.Path, "+") {
				e, err := scenario.WithField(strings.TrimSpace(f), v)
				if err != nil {
					return nil, fmt.Errorf("%s: parameters: %v", path, err)
				}
				es = append(es, e)
			}
			p.edits = append(p.edits, func(s *scenario.Scenario) {
				for _, e := range es {
					e(s)
				}
			})
		}
		runs *= len(p.Values)
		if runs > MaxRuns {
			return nil, fmt.Errorf("%s: parameters: the grid has more than %d points", path, MaxRuns)
		}
	}
	if s.Seeds == nil {
		l.Seeds = []uint64{scenario.DefaultSeed}
	}
	if s.Seeds != nil {
		for _, v := range *s.Seeds {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: seeds: %q is not a non-negative integer", path, v)
			}
			l.Seeds = append(l.Seeds, n)
		}
	}
	if runs*len(l.Seeds) > MaxRuns {
		return nil, fmt.Errorf("%s: %d points × %d seeds is more than %d runs", path, runs, len(l.Seeds), MaxRuns)
	}
	switch {
	case s.Out == "":
		base := filepath.Base(path)
		l.Out = filepath.Join("out", strings.TrimSuffix(base, filepath.Ext(base)))
	case filepath.IsAbs(s.Out):
		l.Out = s.Out
	default:
		l.Out = filepath.Join(dir, s.Out)
	}
	return l, nil
}
