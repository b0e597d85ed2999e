package partition

import (
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/scenario"
)

func fatTreePermutation(t *testing.T, k int, size string) *scenario.Built {
	t.Helper()
	y := `topology:
  type: fattree
  fattree:
    k: ` + itoa(k) + `
    host: {rate: 100Gbps, delay: 1us}
    agg:  {rate: 100Gbps, delay: 1us}
    core: {rate: 100Gbps, delay: 1us}
transport: {cc: reno, mtu: 4096}
workload:
  - {type: permutation, size: ` + size + `}
`
	b, err := scenario.Load("s.yaml", []byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

func TestDefaultCut_SmallStaysWholeLargeIsCut(t *testing.T) {
	m := DefaultCutModel
	small := fatTreePermutation(t, 4, "64KB")
	if pl, c, err := m.Decide(small, 8); err != nil || pl != nil || c.Partitions != 1 || !strings.Contains(c.Reason, "too little work") {
		t.Errorf("k=4 permutation of 64 KB on 8 cores: %v, %+v, %v; want one partition for too little work", pl, c, err)
	}
	big := fatTreePermutation(t, 16, "2MB")
	if pl, c, err := m.Decide(big, 1); err != nil || pl != nil || c.Reason != "one core" {
		t.Errorf("perm1024 on 1 core: %v, %+v, %v; want one partition", pl, c, err)
	}
	pl, c, err := m.Decide(big, 2)
	if err != nil || pl == nil || pl.P != 2 || c.Partitions != 2 {
		t.Fatalf("perm1024 on 2 cores: %v, %+v, %v; want 2 partitions", pl, c, err)
	}
	if c.CutSeconds >= c.OneSeconds || c.Windows <= 0 || c.Cross <= 0 || c.LookaheadNs != 1000 {
		t.Errorf("perm1024 on 2 cores: model %+v", c)
	}
	// Hosts: 16 pods x 64 = 1024 in all (not evenly divided yet: see
	// docs/decisions.md, "The default cut").
	if pl.Hosts[0]+pl.Hosts[1] != 1024 {
		t.Errorf("perm1024 cut in 2: hosts %v, want 1024 in all", pl.Hosts)
	}
}
