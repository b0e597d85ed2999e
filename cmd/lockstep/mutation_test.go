package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// A mutation of one leaf of a scenario's YAML tree.
type mutation struct {
	name  string
	apply func(parent, key, val *yaml.Node) bool // false: does not apply here
	args  []string                               // extra validate flags
}

func setScalar(v *yaml.Node, text string) {
	*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "", Value: text, Style: 0}
}

// fileKeys are the fields that name a file.
var fileKeys = []string{"file", "cdf"}

// otherWorkloadField maps a workload type to a field of another type.
var otherWorkloadField = map[string][2]string{
	"flows": {"size", "1KB"}, "permutation": {"dst", "1"}, "incast": {"load", "0.5"},
	"alltoall": {"n", "2"}, "poisson": {"senders", "[0]"}, "cm": {"cdf", "x.cdf"},
}

func mutations() []mutation {
	scalar := func(name, text string) mutation {
		return mutation{name: name, apply: func(_, _, v *yaml.Node) bool {
			if v.Kind != yaml.ScalarNode {
				return false
			}
			setScalar(v, text)
			return true
		}}
	}
	file := func(name, text string, args ...string) mutation {
		return mutation{name: name, args: args, apply: func(_, k, v *yaml.Node) bool {
			if k == nil || !slices.Contains(fileKeys, k.Value) || v.Kind != yaml.ScalarNode {
				return false
			}
			setScalar(v, text)
			return true
		}}
	}
	return []mutation{
		scalar("zero", "0"),
		scalar("negative", "-1"),
		scalar("huge", "1e15"),
		scalar("huge-unit", "9223372036854775807"),
		scalar("tiny-duration", "1ps"),
		scalar("wrong-type-string", "abc"),
		{name: "wrong-type-map", apply: func(_, _, v *yaml.Node) bool {
			*v = yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "x"}, {Kind: yaml.ScalarNode, Value: "1"}}}
			return true
		}},
		{name: "unknown-field", apply: func(p, k, _ *yaml.Node) bool {
			if p == nil || p.Kind != yaml.MappingNode || k == nil || p.Content[0] != k {
				return false // once per mapping: at its first key
			}
			p.Content = append(p.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "zzz_unknown"}, &yaml.Node{Kind: yaml.ScalarNode, Value: "1"})
			return true
		}},
		{name: "other-workload-field", apply: func(p, k, v *yaml.Node) bool {
			if p == nil || k == nil || k.Value != "type" {
				return false
			}
			f, ok := otherWorkloadField[v.Value]
			if !ok {
				return false
			}
			val := &yaml.Node{Kind: yaml.ScalarNode, Value: f[1]}
			if strings.HasPrefix(f[1], "[") {
				val = &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "0"}}}
			}
			p.Content = append(p.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: f[0]}, val)
			return true
		}},
		file("missing-file", "missing.file"),
		file("dev-zero", "/dev/zero"),
		file("dev-zero-allowed", "/dev/zero", "--allow-outside"),
		file("outside-file", "../../etc/passwd"),
		file("outside-file-allowed", "/etc/passwd", "--allow-outside"),
	}
}

// leaves visits every (mapping, key, value) and (sequence, nil, item)
// under n in document order, numbering them.
func leaves(n *yaml.Node, visit func(parent, key, val *yaml.Node, path string), path string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			leaves(c, visit, path)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := strings.TrimPrefix(path+"."+k.Value, ".")
			visit(n, k, v, p)
			leaves(v, visit, p)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if c.Kind == yaml.ScalarNode {
				visit(n, nil, c, p)
			}
			leaves(c, visit, p)
		}
	}
}

type sweepCounts struct {
	tried, clean, namesField, accepted, crashes int
}

// mutationSweep mutates every leaf of every example scenario (every stride-th
// mutation) and validates the result.
func mutationSweep(t *testing.T, stride int) sweepCounts {
	t.Helper()
	examples, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	// A copy of examples/ one level down, so that "../.." leaves it.
	dir := filepath.Join(t.TempDir(), "a")
	if err := os.CopyFS(dir, os.DirFS("../../examples")); err != nil {
		t.Fatal(err)
	}
	var c sweepCounts
	k := 0
	for _, ex := range examples {
		text, err := os.ReadFile(ex)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(text, &doc); err != nil {
			t.Fatal(err)
		}
		// Count the leaves once, then mutate a fresh copy per (leaf, mutation).
		var n int
		leaves(&doc, func(_, _, _ *yaml.Node, _ string) { n++ }, "")
		for leaf := range n {
			for _, m := range mutations() {
				var fresh yaml.Node
				_ = yaml.Unmarshal(text, &fresh)
				i, applied, at := 0, false, ""
				leaves(&fresh, func(p, key, v *yaml.Node, path string) {
					if i == leaf {
						applied, at = m.apply(p, key, v), path
					}
					i++
				}, "")
				if !applied {
					continue
				}
				if k++; k%stride != 0 {
					continue
				}
				out, err := yaml.Marshal(&fresh)
				if err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(dir, "mutated.yaml")
				if err := os.WriteFile(file, out, 0o644); err != nil {
					t.Fatal(err)
				}
				c.tried++
				var stdout, stderr bytes.Buffer
				code := run(append([]string{"validate", file}, m.args...), &stdout, &stderr)
				msg := stderr.String()
				field := at[strings.LastIndexAny(at, ".]")+1:]
				switch {
				case code == exitOK:
					c.accepted++
					if os.Getenv("SWEEP_ACCEPTED") != "" {
						t.Logf("accepted: %s: %s %s", filepath.Base(ex), at, m.name)
					}
				case code == exitUsage && strings.Count(msg, "\n") == 1 && strings.Contains(msg, file):
					c.clean++
					if field == "" || strings.Contains(msg, field) {
						c.namesField++
					}
				default:
					c.crashes++
					t.Errorf("%s: %s %s (%s): exit %d: %q", filepath.Base(ex), at, m.name, m.args, code, msg)
				}
			}
		}
	}
	return c
}

// TestSweep_MutatedExamplesNeverCrash: every leaf of every example,
// mutated (zero, negative, huge, wrong type, unknown field, another
// workload type's field, missing file, /dev/zero, a file outside), is
// either valid or refused by validate with exit status 2 and one line
// naming the file. SWEEP_ACCEPTED=1 logs the accepted mutations.
func TestSweep_MutatedExamplesNeverCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	stride := 2 // every second (leaf, mutation) pair; all under -tags slow
	if slowTests {
		stride = 1
	}
	c := mutationSweep(t, stride)
	t.Logf("mutation sweep: %d tried, %d clean errors (%d naming the mutated field), %d accepted, %d crashes",
		c.tried, c.clean, c.namesField, c.accepted, c.crashes)
	if c.crashes != 0 {
		t.Errorf("%d crashes", c.crashes)
	}
}
