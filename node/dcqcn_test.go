package node

import (
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/partition"
)

// dcqcnScenario is DCQCN over lossy RoCE with RED marking: CNPs, NAKs,
// go-back-N and selective repeat cross the cuts, the NICs pull paced
// flows, and rate.csv records the rates.
const dcqcnScenario = `
topology:
  type: leafspine
  leafspine:
    leaves: 3
    spines: 2
    hosts_per_leaf: 3
    host: {rate: 40Gbps, delay: 1us, buffer: 40KiB, ecn: {mode: red, min: 5KB, max: 30KB, pmax: 5%}}
    fabric: {rate: 40Gbps, delay: 2us, buffer: 40KiB, ecn: {mode: red, min: 5KB, max: 30KB, pmax: 5%}}
transport:
  cc: dcqcn
  recovery: RECOVERY
  ecn: true
  mtu: 1064
  rto: {mode: fixed, value: 300us}
  options: {timer: 20us, byte_counter: 100KB}
output: {cwnd: {all: true}, queues: {interval: 20us}}
workload:
  - {type: incast, n: 6, dst: 0, size: 300KB}
  - {type: permutation, size: 200KB, start: 30us}
`

// TestRunLocal_Design2_DCQCNByteIdentical: DCQCN runs give the same bytes
// in one process, cut into partitions, and one element per partition.
func TestRunLocal_Design2_DCQCNByteIdentical(t *testing.T) {
	for _, rec := range []string{"gbn", "sr"} {
		b := loadText(t, "dcqcn.yaml", strings.ReplaceAll(dcqcnScenario, "RECOVERY", rec))
		want, wantSum := single(t, b)
		if wantSum.QueueDrops == 0 || wantSum.Marks == 0 || wantSum.Retransmits == 0 {
			t.Fatalf("%s: the scenario should drop, mark and retransmit: %+v", rec, wantSum)
		}
		if len(files(t, want)["rate.csv"]) == 0 {
			t.Fatalf("%s: no rate.csv", rec)
		}
		for _, p := range []int{2, 3} {
			pl, err := partition.Auto(b.Topo, b.Fabric.Impairments, p)
			if err != nil {
				t.Fatal(err)
			}
			got, lr := local(t, b, pl, p == 3)
			compare(t, rec+" P="+itoa(p), want, wantSum, got, lr)
		}
		pl, err := partition.PerElement(b.Topo, b.Fabric.Impairments)
		if err != nil {
			t.Fatal(err)
		}
		got, lr := local(t, b, pl, false)
		compare(t, rec+" per-element", want, wantSum, got, lr)
	}
}
