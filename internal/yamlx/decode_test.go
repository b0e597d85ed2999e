package yamlx

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/lockstep-sim/lockstep/sim"
)

// The test scenario mirrors the shape of a real one: inline common fields,
// a required field one level down, optional pointers, a list of structs with
// nested lists of structs, maps, and every scalar kind.

type testCommon struct {
	Seed int64  `yaml:"seed"`
	Name string `yaml:"name"`
}

type testHost struct {
	NIC   Rate     `yaml:"nic"`
	Delay Duration `yaml:"delay"`
}

type testDumbbell struct {
	Senders    int      `yaml:"senders"`
	Receivers  int      `yaml:"receivers"`
	Host       testHost `yaml:"host"`
	Bottleneck Rate     `yaml:"bottleneck"`
}

type testTopology struct {
	Type     string        `yaml:"type" lockstep:"required"`
	Dumbbell *testDumbbell `yaml:"dumbbell"`
}

type testQueue struct {
	Weight uint8 `yaml:"weight"`
}

type testHop struct {
	Node   string      `yaml:"node"`
	Queues []testQueue `yaml:"queues"`
}

type testFlow struct {
	Src   string       `yaml:"src" lockstep:"required"`
	Size  Size         `yaml:"size"`
	Start Duration     `yaml:"start"`
	Loss  *Probability `yaml:"loss"`
	Path  []testHop    `yaml:"path"`
}

// testLevel implements yaml.Unmarshaler.
type testLevel int

func (l *testLevel) UnmarshalYAML(n *yaml.Node) error {
	switch n.Value {
	case "low":
		*l = 1
	case "high":
		*l = 2
	default:
		return fmt.Errorf("unknown level %q: %w", n.Value, errTestLevel)
	}
	return nil
}

var errTestLevel = errors.New("bad level")

// testBoth implements both interfaces; Decode must prefer
// ScalarUnmarshaler.
type testBoth string

func (b *testBoth) UnmarshalYAMLScalar(v string) error { *b = testBoth("scalar:" + v); return nil }
func (b *testBoth) UnmarshalYAML(n *yaml.Node) error   { *b = testBoth("node:" + n.Value); return nil }

type testScenario struct {
	testCommon `yaml:",inline"`
	Topology   testTopology              `yaml:"topology"`
	Workload   []testFlow                `yaml:"workload"`
	Links      map[string]Rate           `yaml:"links"`
	Groups     map[string][]string       `yaml:"groups"`
	Tags       []string                  `yaml:"tags"`
	Debug      *bool                     `yaml:"debug"`
	Ratio      float64                   `yaml:"ratio"`
	Gain       float32                   `yaml:"gain"`
	Small      int8                      `yaml:"small"`
	Port       uint16                    `yaml:"port"`
	Count      uint64                    `yaml:"count"`
	Pair       [2]int                    `yaml:"pair"`
	Level      testLevel                 `yaml:"level"`
	Both       testBoth                  `yaml:"both"`
	Params     map[string]any            `yaml:"params"`
	Timeout    **Duration                `yaml:"timeout"`
	Matrix     [][]testQueue             `yaml:"matrix"`
	Nested     map[string]map[string]int `yaml:"nested"`
	Untagged   int
	Skipped    int `yaml:"-"`
}

const testFile = "x.yaml"

func decodeScenario(src string) (testScenario, error) {
	var s testScenario
	err := Decode(testFile, []byte(src), &s)
	return s, err
}

func TestDecode_Errors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		// Unknown fields at several depths.
		{"unknown top-level", "seed: 1\nsede: 2\n",
			`x.yaml:2:1: sede: unknown field (known: seed, name, topology, workload, links, groups, tags, debug, ratio, gain, small, port, count, pair, level, both, params, timeout, matrix, nested)`},
		{"unknown depth 2", "topology:\n  type: dumbbell\n  dumbell: {}\n",
			`x.yaml:3:3: topology.dumbell: unknown field (known: type, dumbbell)`},
		{"unknown depth 3", "topology:\n  type: dumbbell\n  dumbbell:\n    senders: 2\n    bandwith: 10Gbps\n",
			`x.yaml:5:5: topology.dumbbell.bandwith: unknown field (known: senders, receivers, host, bottleneck)`},
		{"unknown depth 4", "topology:\n  type: d\n  dumbbell:\n    host: {nic: 1G, delai: 1us}\n",
			`x.yaml:4:21: topology.dumbbell.host.delai: unknown field (known: nic, delay)`},
		{"unknown in list", "workload:\n  - src: a\n  - src: b\n    sise: 1KB\n",
			`x.yaml:4:5: workload[1].sise: unknown field (known: src, size, start, loss, path)`},
		{"unknown in nested list", "workload:\n  - src: a\n    path:\n      - node: s1\n        queues: [{weight: 1}, {wieght: 2}]\n",
			`x.yaml:5:32: workload[0].path[0].queues[1].wieght: unknown field (known: weight)`},
		{"untagged field is unknown", "untagged: 1\n",
			`x.yaml:1:1: untagged: unknown field (known: seed, name, topology, workload, links, groups, tags, debug, ratio, gain, small, port, count, pair, level, both, params, timeout, matrix, nested)`},
		{"skipped field is unknown", "topology: {type: a, Skipped: 1}\n",
			`x.yaml:1:21: topology.Skipped: unknown field (known: type, dumbbell)`},
		{"odd key is quoted in path", "topology:\n  type: a\n  \"dumb bell\": 1\n",
			`x.yaml:3:3: topology["dumb bell"]: unknown field (known: type, dumbbell)`},

		// Wrong scalar types.
		{"int from word", "seed: abc\n", `x.yaml:1:7: seed: expected an integer, got "abc"`},
		{"int from fraction", "seed: 2.5\n", `x.yaml:1:7: seed: expected an integer, got "2.5"`},
		{"int from list", "seed: [1]\n", `x.yaml:1:7: seed: expected an integer, got a list`},
		{"int from null", "seed:\n", `x.yaml:1:6: seed: expected an integer, got null`},
		{"int8 overflow", "small: 128\n", `x.yaml:1:8: small: expected an integer from -128 to 127, got "128"`},
		{"int8 underflow", "small: -129\n", `x.yaml:1:8: small: expected an integer from -128 to 127, got "-129"`},
		{"int64 overflow", "seed: 9223372036854775808\n",
			`x.yaml:1:7: seed: expected an integer from -9223372036854775808 to 9223372036854775807, got "9223372036854775808"`},
		{"int64 huge", "seed: 99999999999999999999999\n",
			`x.yaml:1:7: seed: expected an integer from -9223372036854775808 to 9223372036854775807, got "99999999999999999999999"`},
		{"int64 float overflow", "seed: 1e30\n",
			`x.yaml:1:7: seed: expected an integer from -9223372036854775808 to 9223372036854775807, got "1e30"`},
		{"uint16 overflow", "port: 65536\n", `x.yaml:1:7: port: expected an integer from 0 to 65535, got "65536"`},
		{"uint negative", "port: -1\n", `x.yaml:1:7: port: expected an integer from 0 to 65535, got "-1"`},
		{"uint64 overflow", "count: 18446744073709551616\n",
			`x.yaml:1:8: count: expected an integer from 0 to 18446744073709551615, got "18446744073709551616"`},
		{"bad underscores", "seed: 1__0\n", `x.yaml:1:7: seed: expected an integer, got "1__0"`},
		{"float from word", "ratio: half\n", `x.yaml:1:8: ratio: expected a number, got "half"`},
		{"float NaN", "ratio: .nan\n", `x.yaml:1:8: ratio: expected a number, got ".nan"`},
		{"float Go inf", "ratio: inf\n", `x.yaml:1:8: ratio: expected a number, got "inf"`},
		{"float32 overflow", "gain: 1e39\n", `x.yaml:1:7: gain: expected a number that fits in float32, got "1e39"`},
		{"bool yes", "debug: yes\n", `x.yaml:1:8: debug: expected true or false, got "yes"`},
		{"string from mapping", "name: {a: 1}\n", `x.yaml:1:7: name: expected a string, got a mapping`},
		{"string from null", "name: ~\n", `x.yaml:1:7: name: expected a string, got null`},
		{"struct from scalar", "topology: dumbbell\n", `x.yaml:1:11: topology: expected a mapping, got "dumbbell"`},
		{"struct from null", "topology:\n", `x.yaml:1:10: topology: expected a mapping, got null`},
		{"slice from scalar", "tags: a\n", `x.yaml:1:7: tags: expected a list, got "a"`},
		{"map from list", "links: [a]\n", `x.yaml:1:8: links: expected a mapping, got a list`},
		{"array length", "pair: [1, 2, 3]\n", `x.yaml:1:7: pair: expected a list of 2 items, got 3`},
		{"long value is shortened", "seed: " + strings.Repeat("z", 100) + "\n",
			`x.yaml:1:7: seed: expected an integer, got "` + strings.Repeat("z", 60) + `…"`},
		{"multi-line value stays on one line", "name: x\nseed: |\n  a\n  b\n", `x.yaml:2:7: seed: expected an integer, got "a\nb\n"`},

		// Units in context.
		{"size word", "workload:\n  - src: a\n  - src: b\n  - src: c\n    size: lots\n",
			`x.yaml:5:11: workload[2].size: expected a size like 64KB or 1MiB, got "lots"`},
		{"size overflow", "workload: [{src: a, size: 1e30GB}]\n",
			`x.yaml:1:27: workload[0].size: size "1e30GB" is too large (max 9223372036854775807B)`},
		{"size from list", "workload: [{src: a, size: [1]}]\n",
			`x.yaml:1:27: workload[0].size: expected a single value, got a list`},
		{"rate in map", "links:\n  spine1: 100Gbps\n  spine2: 0Gbps\n",
			`x.yaml:3:11: links.spine2: rate must be positive, got "0Gbps"`},
		{"duration negative", "topology: {type: a, dumbbell: {host: {delay: -1us}}}\n",
			`x.yaml:1:46: topology.dumbbell.host.delay: duration must not be negative, got "-1us"`},
		{"probability pointer", "workload: [{src: a, loss: 150%}]\n",
			`x.yaml:1:27: workload[0].loss: probability "150%" is not between 0 and 1 (0% and 100%)`},
		{"double pointer", "timeout: 5\n", `x.yaml:1:10: timeout: duration "5" needs a unit (ps, ns, us, ms or s)`},

		// Custom unmarshalers.
		{"yaml.Unmarshaler error", "level: medium\n", `x.yaml:1:8: level: unknown level "medium": bad level`},

		// Structure.
		{"duplicate key", "seed: 1\nname: a\nseed: 2\n", `x.yaml:3:1: seed: duplicate key (first set on line 1)`},
		{"duplicate nested key", "topology:\n  type: a\n  type: b\n", `x.yaml:3:3: topology.type: duplicate key (first set on line 2)`},
		{"duplicate map key", "links: {a: 1G, a: 2G}\n", `x.yaml:1:16: links.a: duplicate key (first set on line 1)`},
		{"complex key", "? [a]\n: 1\n", `x.yaml:1:3: a mapping key must be a single value, got a list`},
		{"missing required", "seed: 1\ntopology:\n  dumbbell: {senders: 1}\n",
			`x.yaml:3: topology: missing required field "type"`},
		{"missing required in list", "workload:\n  - src: a\n  - size: 1KB\n",
			`x.yaml:3: workload[1]: missing required field "src"`},
		{"required but null", "topology:\n  type:\n", `x.yaml:2:8: topology.type: required field has no value`},
		{"empty file", "", `x.yaml: empty scenario`},
		{"only comments", "# nothing here\n\n", `x.yaml: empty scenario`},
		{"only null", "---\n~\n", `x.yaml: empty scenario`},
		{"top-level list", "- a\n- b\n", `x.yaml:1:1: expected a mapping at the top level, got a list`},
		{"top-level scalar", "hello\n", `x.yaml:1:1: expected a mapping at the top level, got "hello"`},
		{"two documents", "seed: 1\n---\nseed: 2\n", `x.yaml:2: expected a single YAML document, found a second one`},
		{"second document after an empty one", "---\n---\nseed: 2\n", `x.yaml:2: expected a single YAML document, found a second one`},

		// Syntax errors: the line is where the problem is, not where yaml.v3
		// says the enclosing block started.
		{"syntax bad indent", "seed: 1\ntopology:\n  type: x\n  dumbbell:\n    senders: 2\n   receivers: 3\n",
			`x.yaml:6: did not find expected key`},
		{"syntax list indent", "seed: 1\nworkload:\n  - src: a\n    size: 2\n  c: 3\n",
			`x.yaml:5: did not find expected '-' indicator`},
		{"syntax tab", "seed: 1\nname: abc\n\tx: 1\n", `x.yaml:3: found a tab character that violates indentation`},
		{"syntax mapping value", "seed: 1\nname: a: b\n", `x.yaml:2: mapping values are not allowed in this context`},
		{"syntax mapping value line 1", "name: a: b\n", `x.yaml:1: mapping values are not allowed in this context`},
		{"syntax unclosed quote", "seed: 1\nname: \"abc\nx: 1\n", `x.yaml:2: found unexpected end of stream`},
		{"syntax unclosed flow", "seed: 1\ntags: [a, b\n", `x.yaml:2: did not find expected ',' or ']'`},
		{"syntax control char", "seed: 1\nname: a\x01\n", `x.yaml:2: control characters are not allowed`},
		{"syntax bad utf8", "seed: 1\nname: ok\nx: \xff\n", `x.yaml:3: invalid leading UTF-8 octet`},
		{"syntax unknown anchor", "seed: 1\nname: *nope\n", `x.yaml:2: unknown anchor 'nope' referenced`},

		// Aliases and merge keys.
		{"alias error reported at anchor", "base: &b {src: a, size: big}\n",
			`x.yaml:1:1: base: unknown field (known: seed, name, topology, workload, links, groups, tags, debug, ratio, gain, small, port, count, pair, level, both, params, timeout, matrix, nested)`},
		{"alias value error", "params: {base: &n {a: 1}}\ntags: [*n]\n", `x.yaml:1:16: tags[0]: expected a string, got a mapping`},
		{"alias to enclosing list", "matrix: &m [[{weight: 1}], *m]\n",
			`x.yaml:1:28: matrix[1]: alias *m refers to a value that contains it`},
		{"merge unknown field", "workload:\n  - &f {src: a, size: 1KB}\n  - <<: *f\n    colour: red\n",
			`x.yaml:4:5: workload[1].colour: unknown field (known: src, size, start, loss, path)`},
		{"merge scalar", "topology:\n  <<: 5\n  type: a\n", `x.yaml:2:7: topology: a merge key (<<) needs a mapping or a list of mappings, got "5"`},
		{"merge into itself", "nested: &n\n  a: {x: 1}\n  b:\n    <<: *n\n",
			`x.yaml:2:6: nested.b.a: expected an integer, got a mapping`},
		{"merge of itself", "nested: &n {a: {x: 1}, <<: *n}\n",
			`x.yaml:1:9: nested: merge key refers to a mapping that contains it`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeScenario(tt.src)
			if err == nil {
				t.Fatalf("Decode(%q) = nil, want error %q", tt.src, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Fatalf("Decode(%q) error:\n got: %s\nwant: %s", tt.src, got, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Decode(%q) error is %T, want *Error", tt.src, err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestDecode_Values(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want func(*testScenario)
	}{
		{"inline fields", "seed: 7\nname: run\n", func(s *testScenario) {
			s.Seed, s.Name = 7, "run"
		}},
		{"nested struct and pointer", "topology:\n  type: dumbbell\n  dumbbell:\n    senders: 2\n    host: {nic: 100Gbps, delay: 1us}\n    bottleneck: 40 Gb/s\n",
			func(s *testScenario) {
				s.Topology = testTopology{Type: "dumbbell", Dumbbell: &testDumbbell{
					Senders:    2,
					Host:       testHost{NIC: Rate(100 * sim.GbitPerSecond), Delay: Duration(sim.Microsecond)},
					Bottleneck: Rate(40 * sim.GbitPerSecond),
				}}
			}},
		{"null pointer stays nil", "topology: {type: a, dumbbell: null}\ndebug: ~\n", func(s *testScenario) {
			s.Topology.Type = "a"
		}},
		{"pointer to scalar", "debug: false\n", func(s *testScenario) { s.Debug = ptr(false) }},
		{"pointer to pointer", "timeout: 2.5us\n", func(s *testScenario) {
			s.Timeout = ptr(ptr(Duration(2500 * sim.Nanosecond)))
		}},
		{"list of structs with nested lists", "workload:\n  - src: h0\n    size: 64KiB\n    start: 10ms\n    loss: 5%\n    path:\n      - node: s1\n        queues: [{weight: 3}, {weight: 255}]\n      - node: s2\n  - {src: h1, size: 1.5KB}\n",
			func(s *testScenario) {
				s.Workload = []testFlow{
					{Src: "h0", Size: 64 * Kibibyte, Start: Duration(10 * sim.Millisecond), Loss: ptr(Probability(0.05)),
						Path: []testHop{{Node: "s1", Queues: []testQueue{{3}, {255}}}, {Node: "s2"}}},
					{Src: "h1", Size: 1500},
				}
			}},
		{"slice of slices", "matrix: [[{weight: 1}], [], [{weight: 2}, {weight: 3}]]\n", func(s *testScenario) {
			s.Matrix = [][]testQueue{{{1}}, {}, {{2}, {3}}}
		}},
		{"maps", "links: {s1: 100G, s2: 10Mbps}\ngroups: {a: [x, y], b: []}\nnested: {p: {q: 1}}\n", func(s *testScenario) {
			s.Links = map[string]Rate{"s1": Rate(100 * sim.GbitPerSecond), "s2": Rate(10 * sim.MbitPerSecond)}
			s.Groups = map[string][]string{"a": {"x", "y"}, "b": {}}
			s.Nested = map[string]map[string]int{"p": {"q": 1}}
		}},
		{"free-form any", "params: {k: 3, list: [a, 1.5], on: true, none: null}\n", func(s *testScenario) {
			s.Params = map[string]any{"k": 3, "list": []any{"a", 1.5}, "on": true, "none": nil}
		}},
		{"scalar kinds", "ratio: 0.25\ngain: -.inf\nsmall: -128\nport: 0x1F90\ncount: 18446744073709551615\npair: [1, 1e6]\nseed: 1_000\n", func(s *testScenario) {
			s.Ratio, s.Gain, s.Small, s.Port, s.Count = 0.25, float32(math.Inf(-1)), -128, 8080, 1<<64-1
			s.Pair = [2]int{1, 1000000}
			s.Seed = 1000
		}},
		{"leading zero is decimal", "seed: 0755\n", func(s *testScenario) { s.Seed = 755 }},
		{"quoted number", "seed: \"42\"\nname: 42\n", func(s *testScenario) { s.Seed, s.Name = 42, "42" }},
		{"booleans", "debug: TRUE\n", func(s *testScenario) { s.Debug = ptr(true) }},
		{"custom unmarshalers", "level: high\nboth: x\n", func(s *testScenario) { s.Level, s.Both = 2, "scalar:x" }},
		{"aliases and merge keys", "workload:\n  - &f {src: a, size: 1KB, start: 1us}\n  - <<: *f\n    src: b\n  - <<: [{size: 2KB}, *f]\n    src: c\ntags: &t [x]\ngroups: {g: *t}\n",
			func(s *testScenario) {
				s.Workload = []testFlow{
					{Src: "a", Size: 1000, Start: Duration(sim.Microsecond)},
					{Src: "b", Size: 1000, Start: Duration(sim.Microsecond)},
					{Src: "c", Size: 2000, Start: Duration(sim.Microsecond)},
				}
				s.Tags = []string{"x"}
				s.Groups = map[string][]string{"g": {"x"}}
			}},
		{"trailing document separator", "seed: 3\n---\n", func(s *testScenario) { s.Seed = 3 }},
		{"empty flow collections", "tags: []\nlinks: {}\n", func(s *testScenario) {
			s.Tags = []string{}
			s.Links = map[string]Rate{}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeScenario(tt.src)
			if err != nil {
				t.Fatalf("Decode(%q) = %v, want no error", tt.src, err)
			}
			var want testScenario
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Decode(%q):\n got: %+v\nwant: %+v", tt.src, got, want)
			}
		})
	}
}

func TestDecode_KeepsDefaults(t *testing.T) {
	s := testScenario{testCommon: testCommon{Seed: 1, Name: "default"}, Links: map[string]Rate{"old": 1}}
	s.Topology.Dumbbell = &testDumbbell{Senders: 8, Receivers: 8}
	src := "name: custom\ntopology: {type: d, dumbbell: {senders: 2}}\nlinks: {new: 1G}\n"
	if err := Decode(testFile, []byte(src), &s); err != nil {
		t.Fatalf("Decode = %v, want no error", err)
	}
	if s.Seed != 1 || s.Name != "custom" {
		t.Errorf("seed, name = %d, %q; want 1, \"custom\"", s.Seed, s.Name)
	}
	if d := s.Topology.Dumbbell; d.Senders != 2 || d.Receivers != 8 {
		t.Errorf("dumbbell = %+v; want senders 2 from the file and receivers 8 from the default", *d)
	}
	if len(s.Links) != 2 {
		t.Errorf("links = %v; want the default and the new entry", s.Links)
	}
}

func TestDecode_NullClearsPointer(t *testing.T) {
	s := testScenario{Debug: ptr(true)}
	if err := Decode(testFile, []byte("debug: null\n"), &s); err != nil {
		t.Fatalf("Decode = %v, want no error", err)
	}
	if s.Debug != nil {
		t.Errorf("debug = %v, want nil after an explicit null", *s.Debug)
	}
}

func TestDecode_UnwrapsCustomError(t *testing.T) {
	_, err := decodeScenario("level: medium\n")
	if !errors.Is(err, errTestLevel) {
		t.Fatalf("errors.Is(%v, errTestLevel) = false, want true", err)
	}
	_, err = decodeScenario("workload: [{src: a, size: x}]\n")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is %T, want *Error", err, err)
	}
	want := Error{File: testFile, Line: 1, Col: 27, Path: "workload[0].size", Msg: `expected a size like 64KB or 1MiB, got "x"`}
	if e.File != want.File || e.Line != want.Line || e.Col != want.Col || e.Path != want.Path || e.Msg != want.Msg {
		t.Errorf("error fields = %+v, want %+v", *e, want)
	}
}

func TestDecode_AliasBomb(t *testing.T) {
	type node struct {
		K []node `yaml:"k"`
	}
	type doc struct {
		L map[string]node `yaml:"l"`
	}
	// Each level refers to the one before ten times: 10^9 nodes if expanded.
	var b strings.Builder
	b.WriteString("l:\n  l0: &l0 {k: [{}, {}, {}, {}, {}, {}, {}, {}, {}, {}]}\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d {k: [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]}\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	var d doc
	err := Decode(testFile, []byte(b.String()), &d)
	if err == nil || !strings.Contains(err.Error(), "too many nodes after expanding aliases") {
		t.Fatalf("Decode(alias bomb) = %v, want a too-many-nodes error", err)
	}
}

func TestDecode_RecursiveAlias(t *testing.T) {
	type tree struct {
		Kids []tree `yaml:"kids"`
	}
	type doc struct {
		Root tree `yaml:"root"`
	}
	var d doc
	err := Decode(testFile, []byte("root: &r {kids: [*r]}\n"), &d)
	want := `x.yaml:1:18: root.kids[0]: alias *r refers to a value that contains it`
	if err == nil || err.Error() != want {
		t.Fatalf("Decode(recursive alias) = %v, want %s", err, want)
	}
}

func TestDecode_BadTarget(t *testing.T) {
	for _, out := range []any{nil, testScenario{}, (*testScenario)(nil), new(int), new([]int)} {
		err := Decode(testFile, []byte("seed: 1\n"), out)
		if err == nil || !strings.HasPrefix(err.Error(), "yamlx: Decode needs a non-nil pointer to a struct or map") {
			t.Errorf("Decode into %T = %v, want a yamlx: usage error", out, err)
		}
	}
}

func TestDecode_BadGoTypes(t *testing.T) {
	type dup struct {
		A int `yaml:"a"`
		B int `yaml:"a"`
	}
	type unexported struct {
		a int `yaml:"a"` //nolint:unused // the point of the test
	}
	type inlinePtr struct {
		P *testCommon `yaml:",inline"`
	}
	type chanField struct {
		C chan int `yaml:"c"`
	}
	type intKeys struct {
		M map[int]int `yaml:"m"`
	}
	tests := []struct {
		name string
		out  any
		src  string
		want string
	}{
		{"duplicate name", &dup{}, "a: 1\n", `x.yaml:1:1: yamlx: yamlx.dup.B: duplicate yaml field name "a"`},
		{"unexported", &unexported{}, "a: 1\n", `x.yaml:1:1: yamlx: yamlx.unexported.a: field has a yaml tag but is unexported`},
		{"inline pointer", &inlinePtr{}, "seed: 1\n", `x.yaml:1:1: yamlx: yamlx.inlinePtr.P: an inline field must be a struct or an exported map with string keys, not *yamlx.testCommon`},
		{"chan", &chanField{}, "c: 1\n", `x.yaml:1:4: c: cannot decode into Go type chan int`},
		{"int map keys", &intKeys{}, "m: {1: 2}\n", `x.yaml:1:4: m: cannot decode into Go type map[int]int (map keys must be strings)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Decode(testFile, []byte(tt.src), tt.out)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Decode(%q) = %v, want %s", tt.src, err, tt.want)
			}
		})
	}
}

func TestDecode_InlineMap(t *testing.T) {
	type cc struct {
		Name  string            `yaml:"name" lockstep:"required"`
		Extra map[string]string `yaml:",inline"`
	}
	var c cc
	if err := Decode(testFile, []byte("name: cubic\nbeta: \"0.7\"\nhystart: on\n"), &c); err != nil {
		t.Fatalf("Decode = %v, want no error", err)
	}
	want := cc{Name: "cubic", Extra: map[string]string{"beta": "0.7", "hystart": "on"}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Decode = %+v, want %+v", c, want)
	}
}

func TestDecode_TopLevelMap(t *testing.T) {
	m := map[string]Size{}
	if err := Decode(testFile, []byte("a: 1KB\nb: 2\n"), &m); err != nil {
		t.Fatalf("Decode = %v, want no error", err)
	}
	if want := map[string]Size{"a": 1000, "b": 2}; !reflect.DeepEqual(m, want) {
		t.Errorf("Decode = %v, want %v", m, want)
	}
}

func TestKnown(t *testing.T) {
	tests := []struct {
		t    reflect.Type
		want []string
	}{
		{reflect.TypeFor[testDumbbell](), []string{"senders", "receivers", "host", "bottleneck"}},
		{reflect.TypeFor[*testTopology](), []string{"type", "dumbbell"}},
		{reflect.TypeFor[testScenario](), []string{"seed", "name", "topology", "workload", "links", "groups", "tags", "debug", "ratio", "gain", "small", "port", "count", "pair", "level", "both", "params", "timeout", "matrix", "nested"}},
		{reflect.TypeFor[int](), nil},
		{nil, nil},
	}
	for _, tt := range tests {
		if got := Known(tt.t); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Known(%v) = %q, want %q", tt.t, got, tt.want)
		}
	}
}

func TestError_Format(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "a.yaml", Line: 3, Col: 5, Path: "x.y", Msg: "bad"}, "a.yaml:3:5: x.y: bad"},
		{Error{File: "a.yaml", Line: 3, Path: "x", Msg: "bad"}, "a.yaml:3: x: bad"},
		{Error{File: "a.yaml", Line: 3, Msg: "bad"}, "a.yaml:3: bad"},
		{Error{File: "a.yaml", Msg: "bad"}, "a.yaml: bad"},
		{Error{Line: 1, Col: 2, Msg: "bad"}, "<input>:1:2: bad"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%+v.Error() = %q, want %q", tt.e, got, tt.want)
		}
	}
}

func TestDecode_AnyErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"params: {a: 1, a: 2}\n", `x.yaml:1:16: params.a: duplicate key (first set on line 1)`},
		{"params: {a: [1, {b: 1, b: 2}]}\n", `x.yaml:1:24: params.a[1].b: duplicate key (first set on line 1)`},
		{"params: &p {a: [*p]}\n", `x.yaml:1:17: params.a[0]: alias *p refers to a value that contains it`},
		{"params: {a: !!binary '%%%'}\n", `x.yaml:1:13: params.a: !!binary value contains invalid base64 data`},
	}
	for _, tt := range tests {
		_, err := decodeScenario(tt.src)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Decode(%q) = %v, want %s", tt.src, err, tt.want)
		}
	}
}

// TestDecodePresent_TellsZeroFromAbsent: a field written as 0 is present,
// one left out is not, through inline structs, lists and merge keys.
func TestDecodePresent_TellsZeroFromAbsent(t *testing.T) {
	doc := "seed: 0\nratio: 0\nworkload:\n  - &f {src: a, size: 0}\n  - <<: *f\n    start: 1us\n"
	var s testScenario
	p, err := DecodePresent(testFile, []byte(doc), &s)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"seed", "ratio", "workload", "workload[0].src", "workload[0].size", "workload[1].size", "workload[1].start"} {
		if !p.Has(path) {
			t.Errorf("Has(%q) = false, want true", path)
		}
	}
	for _, path := range []string{"name", "gain", "workload[0].start", "workload[1].loss", "topology"} {
		if p.Has(path) {
			t.Errorf("Has(%q) = true, want false", path)
		}
	}
	if !p.Zero("seed") || !p.Zero("workload[1].size") || p.Zero("workload[1].start") || p.Zero("workload") {
		t.Errorf("Zero: seed %v, workload[1].size %v, workload[1].start %v, workload %v; want true, true, false, false",
			p.Zero("seed"), p.Zero("workload[1].size"), p.Zero("workload[1].start"), p.Zero("workload"))
	}
	if p, err := DecodePresent(testFile, []byte("seed: x\n"), &s); err == nil || p != nil {
		t.Errorf("DecodePresent on a bad document = %v, %v; want nil and an error", p, err)
	}
}
