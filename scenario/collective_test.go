package scenario

import (
	"strings"
	"testing"
)

const collTopo = `topology:
  type: rail
  rail: {servers: 2, gpus_per_server: 4, servers_per_leaf: 2, spines: 2, host: {rate: 100Gbps}, fabric: {rate: 100Gbps}}
workload:
`

// TestCollective_PlacementAndInstances: rail-aware placement orders ranks
// rail by rail, a job lists one instance per iteration with its flows,
// and flows of later groups keep their dependencies.
func TestCollective_PlacementAndInstances(t *testing.T) {
	text := collTopo + `  - {type: flows, flows: [{src: 0, dst: 1, size: 1KB}]}
  - {type: collective, size: 8KB, collective: {job: dp, op: allgather, placement: rail, gpus_per_server: 4, iterations: 2}}
`
	b, err := Load("c.yaml", []byte(text), Dir("."))
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Collectives) != 2 {
		t.Fatalf("%d instances, want 2", len(b.Collectives))
	}
	in := b.Collectives[1]
	if want := []int{0, 4, 1, 5, 2, 6, 3, 7}; !equalInts(in.Hosts, want) {
		t.Errorf("rail placement %v, want %v", in.Hosts, want)
	}
	per := int32(7 * 8) // n-1 steps of n transfers
	if b.Collectives[0].First != 1 || in.First != 1+per || in.Count != per || in.Iteration != 1 || in.Job != "dp" {
		t.Errorf("instances %+v", b.Collectives)
	}
	// Iteration 1 waits on rank tasks (one per rank), which activate the
	// group's flows: renumbered past the first group's flow.
	if n := len(b.Fabric.Tasks); n != 8 || in.Tasks.First != 0 || in.Tasks.Count != 8 {
		t.Fatalf("%d tasks, iteration 1's %+v: want one per rank", n, in.Tasks)
	}
	for i := range b.Fabric.Flows {
		f := &b.Fabric.Flows[i]
		for _, g := range append(append([]int32{}, f.OnRecvDone()...), f.OnSendDone()...) {
			if g < 0 && int(-1-g) < len(b.Fabric.Tasks) {
				continue
			}
			if g <= f.ID || int(g) >= len(b.Fabric.Flows) {
				t.Fatalf("flow %d activates %d: dependencies must point to later flows of the scenario or to its tasks", f.ID, g)
			}
		}
	}
	for k, tk := range b.Fabric.Tasks {
		for _, g := range tk.Next {
			if g < in.First || g >= in.First+in.Count || b.Fabric.Flows[g].Src != tk.Host {
				t.Errorf("task %d (host %d) activates flow %d, not one of iteration 1's from its host", k, tk.Host, g)
			}
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCollective_Errors(t *testing.T) {
	for _, c := range []struct{ w, want string }{
		{"{type: collective, size: 1KB}", "workload[0].collective: required for type collective"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, ranks: 9}}", "workload[0].collective.ranks: 9 ranks from host 0 do not fit"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, algorithm: halving_doubling, ranks: 6, chunks: 600}}", "cannot be cut into 600 chunks"},
		{"{type: collective, size: 1KB, collective: {op: broadcast}}", "unknown collective \"broadcast\""},
		{"{type: collective, size: 1KB, collective: {op: allreduce, placement: rail, gpus_per_server: 3}}", "gpus_per_server"},
		{"{type: collective, size: 1KB, hosts: [0, 0], collective: {op: allreduce}}", "ranks 0 and 1 are both on host 0"},
		{"{type: permutation, size: 1KB, collective: {op: allreduce}}", "not a field of type permutation"},
		{"{type: cm, file: x.cm, trigger_delay: -1us}", "trigger_delay"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, parallel: {tp: 3, tp_size: 1KB}}}",
			"workload[0].collective.parallel: 8 ranks are not a multiple of tp x pp = 3 x 1"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, parallel: {tp: 0}}}", "workload[0].collective.parallel.tp: must be positive, got 0 (leave it out for the default, 1)"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, parallel: {pp: 2}}}", "pp_size must be positive"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, parallel: {pp: 2, pp_size: 1KB, schedule: zb}}}", "unknown schedule \"zb\""},
		{"{type: collective, size: 1KB, collective: {op: allreduce, buckets: 2, parallel: {pp: 2, pp_size: 1KB}}}", "do not apply"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, parallel: {pp: 2, pp_size: 1KB, flops: 3}}}", "flops"},
		// Absurd counts are refused before anything is allocated, with
		// no overflow on the way (each crashed or hung before).
		{"{type: collective, size: 1KB, collective: {op: allreduce, iterations: 4611686018427387904}}", "workload[0].collective: makes about 9223372036854775807 flows"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, chunks: 4611686018427387904}}", "workload[0].collective: makes about 9223372036854775807 flows"},
		{"{type: collective, size: 1MB, collective: {op: allreduce, chunks: 3037000500, iterations: 3037000500}}", "more than the limit of 4194304 flows"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, iterations: 4611686018427387904, parallel: {tp: 2, tp_size: 1KB}}}", "more than the limit of 4194304 flows"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, chunks: 4611686018427387904, parallel: {tp: 2, tp_size: 1KB}}}", "more than the limit of 4194304 flows"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, parallel: {tp: 2, pp: 2, microbatches: 4611686018427387904, tp_size: 1KB, pp_size: 1KB}}}", "more than the limit of 4194304 flows"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, parallel: {tp: 2, layers: 4611686018427387904, tp_size: 1KB}}}", "more than the limit of 4194304 flows"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, parallel: {microbatches: 1000000000000}}}", "workload[0].collective: makes about 32000000000032 compute tasks, more than the limit of 4194304"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, parallel: {tp: 4294967296, pp: 4294967296, tp_size: 1KB, pp_size: 1KB}}}",
			"8 ranks are not a multiple of tp x pp = 4294967296 x 4294967296"},
		{"{type: collective, size: 1KB, collective: {op: allreduce, parallel: {layers: 10000000, forward: 1s}}}", "longer than lockstep's clock"},
		{"{type: collective, size: 1KB, collective: {job: \"a,b\", op: allreduce}}", "workload[0].collective.job: \"a,b\": use letters, digits"},
		{"{type: collective, size: 1KB, collective: {job: w1, op: allreduce}}\n  - {type: collective, size: 1KB, collective: {op: allreduce}}",
			"workload[1].collective.job: \"w1\" is workload[0]'s job too"},
	} {
		_, err := Load("c.yaml", []byte(collTopo+"  - "+c.w+"\n"), Dir("."))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.w, err, c.want)
		}
	}
}
