package scenario

import (
	"strings"
	"testing"
)

const k48 = `
topology:
  type: fattree
  fattree:
    k: 48
    host: {rate: 100Gbps, delay: 1us, buffer: 1MiB}
    agg:  {rate: 100Gbps, delay: 1us, buffer: 1MiB}
    core: {rate: 100Gbps, delay: 1us, buffer: 1MiB}
workload:
  - type: %s
    size: 1MB
`

func TestEstimate_RefusesAllToAllOfAK48FatTreeBeforeBuildingFlows(t *testing.T) {
	text := strings.Replace(k48, "%s", "alltoall", 1)
	_, err := Load("s.yaml", []byte(text), nil, WithMemoryLimit(24<<30))
	want := "s.yaml: workload[0]: alltoall makes 764384256 flows, about 1.1 TB; the scenario needs about 1.1 TB in all, more than the 24.0 GB this machine has"
	if err == nil || err.Error() != want {
		t.Fatalf("expected %q, got %v", want, err)
	}
}

func TestEstimate_PermutationOfAK48FatTreeFitsAndDigestIgnoresTheLimit(t *testing.T) {
	text := strings.Replace(k48, "%s", "permutation", 1)
	a, err := Load("s.yaml", []byte(text), nil, WithMemoryLimit(24<<30))
	if err != nil {
		t.Fatalf("expected no error, got %v", err)
	}
	b, err := Load("s.yaml", []byte(text), nil)
	if err != nil {
		t.Fatalf("expected no error without a limit, got %v", err)
	}
	if a.Digest() != b.Digest() {
		t.Errorf("expected the limit to leave the digest alone, got %s and %s", a.Digest(), b.Digest())
	}
	e := a.Estimate
	if e.Flows[0] != 27648 || e.Total() > 1<<30 || e.Total() < 50<<20 {
		t.Errorf("expected 27648 flows and a total between 50 MB and 1 GB, got %d and %d bytes", e.Flows[0], e.Total())
	}
}
