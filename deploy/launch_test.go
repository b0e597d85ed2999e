package deploy

import (
	"bytes"
	"testing"
)

func TestPrefixWriter_PrefixesEveryLineAcrossWrites(t *testing.T) {
	var b bytes.Buffer
	w := &prefixWriter{w: &syncWriter{w: &b}, prefix: "node 1: "}
	for _, s := range []string{"one\ntw", "o\n", "three", "\nfour\n"} {
		if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
		}
	}
	want := "node 1: one\nnode 1: two\nnode 1: three\nnode 1: four\n"
	if got := b.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFreePorts_Distinct(t *testing.T) {
	ps, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 || ps[0] == ps[1] || ps[1] == ps[2] || ps[0] == ps[2] {
		t.Errorf("freePorts(3) = %v, want 3 distinct ports", ps)
	}
}
