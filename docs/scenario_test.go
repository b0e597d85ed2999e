package docs

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/examples/extswitch"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sweep"
)

// TestScenarioDoc_ExamplesRun validates and runs every ```yaml block of
// scenario.md: the documentation cannot drift from the parser.
func TestScenarioDoc_ExamplesRun(t *testing.T) {
	text, err := os.ReadFile("scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(text), -1)
	if len(blocks) < 8 {
		t.Fatalf("found %d yaml examples in scenario.md, want at least 8", len(blocks))
	}
	for i, m := range blocks {
		b, err := scenario.Load("scenario.md", []byte(m[1]), scenario.Dir("."))
		if err != nil {
			t.Errorf("example %d: %v", i+1, err)
			continue
		}
		if len(b.External) > 0 {
			// External switches: the example switch, in this process, must
			// give the files of lockstep's own switches.
			b.ConnectExternal(func(string) fabric.ExternalPeer { return extswitch.New() })
			sameAsBuiltIn(t, i+1, m[1], b)
		}
		r, err := runner.Run(b, runner.Options{})
		if err != nil {
			t.Errorf("example %d: run: %v", i+1, err)
			continue
		}
		s := r.Summary()
		if s.FlowsFinished != s.Flows {
			t.Errorf("example %d: %d of %d flows finished (stopped by %s)", i+1, s.FlowsFinished, s.Flows, s.StoppedBy)
		}
		if c := r.Fabric.Conservation(); c.Balance() != 0 {
			t.Errorf("example %d: packets not conserved: %+v", i+1, c)
		}
	}
}

// sameAsBuiltIn runs example n (text, built with external elements as
// b) and the same scenario without its external list: fct.csv and
// queues.csv are byte-identical.
func sameAsBuiltIn(t *testing.T, n int, text string, b *scenario.Built) {
	t.Helper()
	s, err := scenario.Parse("scenario.md", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	s.External = nil
	plain, err := scenario.Build("scenario.md", s, scenario.Dir("."))
	if err != nil {
		t.Fatal(err)
	}
	dirs := [2]string{t.TempDir(), t.TempDir()}
	for k, bb := range []*scenario.Built{plain, b} {
		r, err := runner.Run(bb, runner.Options{})
		if err != nil {
			t.Fatalf("example %d: %v", n, err)
		}
		if err := r.WriteDir(dirs[k], results.Perf{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"fct.csv", "queues.csv"} {
		a, _ := os.ReadFile(filepath.Join(dirs[0], f))
		c, _ := os.ReadFile(filepath.Join(dirs[1], f))
		if len(a) == 0 || !bytes.Equal(a, c) {
			t.Errorf("example %d: %s differs with the external switches (%d vs %d bytes)", n, f, len(c), len(a))
		}
	}
	// The run below uses fresh elements.
	b.ConnectExternal(func(string) fabric.ExternalPeer { return extswitch.New() })
}

// fieldTables maps the headings of scenario.md whose section holds a
// "| field | ..." table to the struct the table documents.
var fieldTables = map[string]reflect.Type{
	"Top level":                              reflect.TypeFor[scenario.Scenario](),
	"topology":                               reflect.TypeFor[scenario.Tier](),
	"transport":                              reflect.TypeFor[scenario.Transport](),
	"transport.strack":                       reflect.TypeFor[scenario.STrack](),
	"transport.nscc":                         reflect.TypeFor[scenario.NSCC](),
	"output":                                 reflect.TypeFor[scenario.Output](),
	"switch":                                 reflect.TypeFor[scenario.Switch](),
	"switch.int":                             reflect.TypeFor[scenario.INT](),
	"switch.modules":                         reflect.TypeFor[scenario.SwitchModule](),
	"impairments":                            reflect.TypeFor[scenario.Impairment](),
	"placement":                              reflect.TypeFor[scenario.Placement](),
	"external":                               reflect.TypeFor[scenario.External](),
	"Sweeps":                                 reflect.TypeFor[sweep.Spec](),
	"Flows that wait on others (collective)": reflect.TypeFor[scenario.CollectiveSpec](),
	"rail":                                   reflect.TypeFor[scenario.Rail](),
	"Tensor and pipeline parallelism (collective.parallel)": reflect.TypeFor[scenario.Parallel](),
}

// yamlFields returns the yaml names of t's fields (t a struct, or a
// pointer, slice or map of one) and their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	out := map[string]reflect.Type{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			out[name] = f.Type
		}
	}
	return out
}

// sameSet reports the names of want missing from got and of got not in
// want.
func sameSet(t *testing.T, what string, want map[string]reflect.Type, got map[string]bool) {
	t.Helper()
	for n := range want {
		if !got[n] {
			t.Errorf("%s: field %q is not documented", what, n)
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: documents %q, which is no field", what, n)
		}
	}
}

// TestScenarioDoc_FieldTablesMatchTheStructs checks every field table of
// scenario.md against the yaml tags of the struct it documents: every
// field is documented and every documented field exists, including the
// dotted rows (rto.mode) and the {a, b} lists of a type column
// (delayed_ack, gilbert_elliott, schedule, ...). The workload table's
// fields column is checked against scenario.Workload the same way.
func TestScenarioDoc_FieldTablesMatchTheStructs(t *testing.T) {
	text, err := os.ReadFile("scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile("`([^`]+)`")
	ident := regexp.MustCompile(`^[a-z_]+`)
	braces := regexp.MustCompile(`\{([a-z_, ]+)\}`)
	heading, inFence, tables := "", false, 0
	var rows [][]string
	seenHeadings := map[string]bool{}
	flush := func() {
		defer func() { rows = nil }()
		if len(rows) < 3 {
			return
		}
		head := rows[0]
		switch {
		case head[0] == "type" && heading == "workload":
			tables++
			got := map[string]bool{"type": true}
			for _, r := range rows[2:] {
				for _, m := range code.FindAllStringSubmatch(r[1], -1) {
					got[ident.FindString(m[1])] = true
				}
			}
			sameSet(t, "workload table", yamlFields(reflect.TypeFor[scenario.Workload]()), got)
			return
		case head[0] != "field":
			return
		}
		tables++
		typ, ok := fieldTables[heading]
		if !ok {
			t.Errorf("a field table under %q, which TestScenarioDoc_FieldTablesMatchTheStructs does not map to a struct", heading)
			return
		}
		seenHeadings[heading] = true
		fields := yamlFields(typ)
		got := map[string]bool{}
		nested := map[string]map[string]bool{}
		for _, r := range rows[2:] {
			for _, m := range code.FindAllStringSubmatch(r[0], -1) {
				top, sub, dotted := strings.Cut(m[1], ".")
				got[top] = true
				if dotted {
					if nested[top] == nil {
						nested[top] = map[string]bool{}
					}
					nested[top][sub] = true
				}
				// A type column like `{count, timeout}` or list of `{at, down}`
				// lists the field's own fields.
				if len(head) > 2 && head[1] == "type" && !dotted {
					if b := braces.FindStringSubmatch(r[1]); b != nil {
						sub := map[string]bool{}
						for _, n := range strings.Split(b[1], ",") {
							sub[strings.TrimSpace(n)] = true
						}
						if ft, ok := fields[top]; ok {
							sameSet(t, heading+" "+top, yamlFields(ft), sub)
						}
					}
				}
			}
		}
		sameSet(t, heading+" table", fields, got)
		for top, sub := range nested {
			if ft, ok := fields[top]; ok {
				sameSet(t, heading+" "+top+".*", yamlFields(ft), sub)
			}
		}
	}
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence {
			continue
		}
		if strings.HasPrefix(line, "|") {
			var cells []string
			for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
				cells = append(cells, strings.TrimSpace(c))
			}
			rows = append(rows, cells)
			continue
		}
		flush()
		if strings.HasPrefix(line, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	flush()
	for h := range fieldTables {
		if !seenHeadings[h] {
			t.Errorf("no field table under %q", h)
		}
	}
	if tables < len(fieldTables)+1 {
		t.Errorf("checked %d tables, want at least %d", tables, len(fieldTables)+1)
	}
}

// TestScenarioDoc_SweepExampleRuns runs the ```yaml sweep block of
// scenario.md's "Sweeps" (from this folder, as the page says) and checks
// the folders and CSV files the section describes.
func TestScenarioDoc_SweepExampleRuns(t *testing.T) {
	text, err := os.ReadFile("scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml sweep\n(.*?)```").FindStringSubmatch(string(text))
	if m == nil {
		t.Fatal("no ```yaml sweep block in scenario.md")
	}
	f, err := os.CreateTemp(".", ".sweep-example-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.WriteString(m[1]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	l, err := sweep.Load(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	rep, err := sweep.Run(l, sweep.Options{Out: out, Parallel: 2, Run: func(b *scenario.Built, dir string) error {
		r, err := runner.Run(b, runner.Options{})
		if err != nil {
			return err
		}
		return r.WriteDir(dir, results.Perf{}, nil)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Runs != 8 || len(rep.Failed) != 0 {
		t.Errorf("%d runs, failed %v; the page says 8 runs", rep.Runs, rep.Failed)
	}
	for _, name := range []string{"sweep.csv", "sweep-summary.csv", "cc=dctcp,buffer=128KiB/seed=2/summary.json",
		"cc=reno,buffer=512KiB/seed=1/fct.csv"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("the sweep wrote no %s: %v", name, err)
		}
	}
	sec := string(text)[strings.Index(string(text), "## Sweeps"):]
	for _, m := range sweep.Metrics {
		if !strings.Contains(sec, "`"+m.Name+"`") {
			t.Errorf("the Sweeps section does not list the metric %s", m.Name)
		}
	}
	sum, err := os.ReadFile(filepath.Join(out, "sweep-summary.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"point,transport.cc,topology.dumbbell.bottleneck.buffer,runs,fct_p50_ns_mean,fct_p50_ns_ci95"} {
		if !strings.HasPrefix(string(sum), col) {
			t.Errorf("sweep-summary.csv starts %q, want %q", strings.SplitN(string(sum), "\n", 2)[0], col)
		}
	}
}
