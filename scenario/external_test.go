package scenario

import (
	"strings"
	"testing"
)

const externalBase = `topology:
  type: fattree
  fattree:
    k: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 64KiB}
    agg: {rate: 100Gbps, delay: 1us, buffer: 64KiB}
    core: {rate: 100Gbps, delay: 1us, buffer: 64KiB}
workload:
  - {type: permutation, size: 10KB}
`

// TestExternal_Resolves: names and patterns resolve to switches in node
// order, with their element names.
func TestExternal_Resolves(t *testing.T) {
	b, err := Load("s.yaml", []byte(externalBase+`external:
  - {switch: "core*"}
  - {switch: tor1, element: first-tor}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range b.External {
		got = append(got, b.Topo.Nodes[x.Node].Name+"="+x.Element)
		if b.Fabric.External[x.Node] == nil {
			t.Errorf("node %d has no peer", x.Node)
		}
	}
	if s := strings.Join(got, " "); s != "tor1=first-tor core0=core0 core1=core1 core2=core2 core3=core3" {
		t.Fatalf("got %s", s)
	}
	// Unconnected, an element fails its setup, with the way to connect it.
	if err := b.Fabric.External[b.External[0].Node].Setup(nil); err == nil || !strings.Contains(err.Error(), "--nats") {
		t.Fatalf("an unconnected element: %v", err)
	}
	// The list is part of the digest; a scenario without it keeps its own.
	plain, err := Load("s.yaml", []byte(externalBase), nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Digest() == b.Digest() || strings.Contains(string(plain.Effective()), "External") {
		t.Fatalf("the external list must change the digest and be absent when empty: %s", plain.Effective())
	}
	r, err := Rebuild("s.yaml", b.Effective(), b.Files(), b.Digest())
	if err != nil || len(r.External) != 5 {
		t.Fatalf("rebuilt: %v, %d elements", err, len(r.External))
	}
}

// TestExternal_Errors: every mistake is one line naming the file and
// the field.
func TestExternal_Errors(t *testing.T) {
	for _, c := range []struct{ list, want string }{
		{"[{switch: tor9}]", `s.yaml: external[0].switch: no switch named "tor9"`},
		{"[{switch: h3}]", "s.yaml: external[0].switch: h3 is a host: only switches run as external elements"},
		{`[{switch: "h*"}]`, `s.yaml: external[0].switch: pattern "h*" matches hosts only`},
		{`[{switch: "x*"}]`, `s.yaml: external[0].switch: no switch named "x*"`},
		{"[{switch: core0}, {switch: agg0}, {switch: \"core*\"}]", "s.yaml: external[2].switch: switch core0 is already external (external[0])"},
		{"[{switch: tor0}, {switch: tor0}]", "s.yaml: external[1].switch: switch tor0 is already external (external[0])"},
		{"[{switch: tor0, element: x}, {switch: tor1, element: x}]", "s.yaml: external[1].element: element name x is already switch tor0's"},
		{"[{switch: tor0}, {switch: tor1, element: tor0}]", "s.yaml: external[1].element: element name tor0 is already switch tor0's"},
		{`[{switch: "tor*", element: t}]`, "s.yaml: external[0].element: only with one switch's name"},
		{"[{switch: tor0, element: a.b}]", `s.yaml: external[0].element: "a.b" is not an element name`},
		{`[{switch: "tor["}]`, `s.yaml: external[0].switch: "tor[" is not a valid pattern`},
		{"[{element: x}]", `s.yaml:10: external[0]: missing required field "switch"`},
		{"[{switch: tor0, port: 3}]", "s.yaml:10:27: external[0].port: unknown field (known: switch, element)"},
	} {
		_, err := Load("s.yaml", []byte(externalBase+"external: "+c.list+"\n"), nil)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("external: %s: want one line starting %q, got %v", c.list, c.want, err)
		}
	}
}
