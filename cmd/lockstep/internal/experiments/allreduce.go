package experiments

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
)

// arFabric is one fabric of the allreduce experiment: 128 NICs at 100
// Gb/s, the job on half of them, the background job on the other half,
// interleaved so that the two share the fabric's links.
type arFabric struct {
	label, topo string
	rail        bool
}

var arFabrics = []arFabric{
	{"rail", `  type: rail
  rail: {servers: 16, gpus_per_server: 8, servers_per_leaf: 4, spines: 4,
         host: {rate: 100Gbps, delay: 500ns, buffer: 2MiB, ecn: {mode: step, k: 100KiB}}, fabric: {rate: 100Gbps, delay: 1us, buffer: 2MiB, ecn: {mode: step, k: 100KiB}}}`, true},
	{"fat-tree", `  type: fattree
  fattree: {k: 8, host: {rate: 100Gbps, delay: 500ns, buffer: 2MiB, ecn: {mode: step, k: 100KiB}}, agg: {rate: 100Gbps, delay: 1us, buffer: 2MiB, ecn: {mode: step, k: 100KiB}},
            core: {rate: 100Gbps, delay: 1us, buffer: 2MiB, ecn: {mode: step, k: 100KiB}}}`, false},
}

// hosts places job j's (0: the measured job, 1: the background) ranks.
// Rail: the jobs take alternate servers (j, j+2, ..), 8 servers each, and
// ranks go rail by rail over them (rank r on server 2(r mod 8)+j, NIC
// r/8), so a ring stays on a rail but at its wraps. Fat-tree: alternate
// hosts (rank r on host 2r+j). Either way each job's ring crosses every
// leaf (edge switch) and both jobs' crossings share the uplinks.
func (f arFabric) hosts(ranks, j int) []int {
	out := make([]int, ranks)
	for r := range out {
		if f.rail {
			out[r] = (2*(r%8)+j)*8 + r/8
		} else {
			out[r] = 2*r + j
		}
	}
	return out
}

// arAlgs are the algorithms with their chunking: a step's transfer in
// pieces, all of a step's pieces in flight (the tree needs small pieces
// to pipeline its depth).
var arAlgs = []struct {
	name           string
	chunks, inPipe int
}{{"ring", 16, 4}, {"halving_doubling", 16, 4}, {"double_binary_tree", 32, 4}}

type arRow struct {
	fabric, fwd, alg string
	background       bool
	res              results.CollectiveRow
	events           uint64
}

// arScenario is the YAML of one variant.
func arScenario(f arFabric, fwd, alg string, chunks, pipe int, size string, ranks int, background bool) string {
	list := func(h []int) string { return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(h)), ", "), "[]") }
	var b strings.Builder
	fmt.Fprintf(&b, "name: allreduce-%s-%s-%s\ntopology:\n%s\ntransport: {cc: dctcp, ecn: true, init_cwnd: 64, rto: {min: 1ms}}\nswitch: {forwarding: %s}\nworkload:\n", f.label, fwd, alg, f.topo, fwd)
	fmt.Fprintf(&b, "  - {type: collective, size: %s, hosts: [%s], collective: {job: main, op: allreduce, algorithm: %s, chunks: %d, pipeline: %d}}\n",
		size, list(f.hosts(ranks, 0)), alg, chunks, pipe)
	if background {
		fmt.Fprintf(&b, "  - {type: collective, size: %s, hosts: [%s], collective: {job: background, op: allreduce, chunks: 4, pipeline: 4}}\n",
			size, list(f.hosts(ranks, 1)))
	}
	return b.String()
}

// allreduce: ring vs halving-doubling vs double binary tree all-reduce of
// 64 MB over 64 ranks on a rail-optimised fabric and a fat-tree, with
// ECMP and spraying, alone and with a second job; and the analytical check
// of the ring's bus bandwidth on the idle fabric.
func allreduce(env *Env) error {
	size, ranks, sizeBytes := "64MB", 64, int64(64_000_000)
	if env.Quick {
		size, ranks, sizeBytes = "512KB", 8, 512_000
	}
	var rows []arRow
	for _, f := range arFabrics {
		for _, fwd := range []string{"ecmp", "spray"} {
			for ai, a := range arAlgs {
				for _, bg := range []bool{false, true} {
					if bg && ai != 0 {
						continue // the background only with the ring
					}
					text := arScenario(f, fwd, a.name, a.chunks, a.inPipe, size, ranks, bg)
					b, err := scenario.Load("allreduce.yaml", []byte(text), scenario.Dir("."))
					if err != nil {
						return err
					}
					r, err := runner.Run(b, runner.Options{})
					if err != nil {
						return err
					}
					cs := r.Collectives()
					row := arRow{fabric: f.label, fwd: fwd, alg: a.name, background: bg, res: cs[0], events: r.Summary().Events}
					if !row.res.Done {
						return fmt.Errorf("%s %s %s: the all-reduce did not finish", f.label, fwd, a.name)
					}
					env.logf("allreduce %s %s %s background=%t: CCT %s, busbw %.2f GB/s", f.label, fwd, a.name, bg, row.res.CCT(), row.res.BusBW())
					rows = append(rows, row)
				}
			}
		}
	}
	return arReport(env, rows, sizeBytes, ranks)
}

func arReport(env *Env, rows []arRow, size int64, n int) error {
	dir := filepath.Join(env.Out, "allreduce")
	var md, csv strings.Builder
	csv.WriteString("fabric,forwarding,algorithm,background,cct_us,ideal_cct_us,algbw_GBps,busbw_GBps,cct_over_ideal,events\n")
	fmt.Fprintf(&md, "# All-reduce: ring vs halving-doubling vs double binary tree\n\n")
	fmt.Fprintf(&md, "`lockstep experiment allreduce` (this file is its output). One all-reduce of %d bytes over %d ranks "+
		"(NICs at 100 Gb/s; MTU 1500, 64-byte headers and ACKs, DCTCP with an initial window of 64 segments, ECN marking above 100 KiB, a 1 ms minimum RTO) on two fabrics "+
		"of 128 NICs: a rail-optimised one (16 servers of 8 NICs, each rail a leaf-spine of 4 leaves, the rails joined at "+
		"4 spines; the job on the even servers, its ranks rail by rail: rank r on server 2(r mod 8), NIC r/8) and a k=8 fat-tree "+
		"(the job on the even hosts, rank r on host 2r). Forwarding is ECMP "+
		"(per flow) or packet spraying. \"background\" adds a second ring all-reduce of the same size, 4 chunks in flight, on the other "+
		"%d NICs (the odd servers or hosts, placed the same way), so that the two jobs' rings cross the same leaves' "+
		"(edge switches') uplinks. "+
		"Each step of an algorithm is cut into chunks (ring and halving-doubling 16, tree 32), 4 of them in flight per transfer; a step starts "+
		"when its data has arrived (receiver-side completion). Bus bandwidth is NCCL's: algbw x 2(n-1)/n. The ideal CCT is "+
		"the longer of the dependency graph's critical path and the busiest NIC's bytes (data, headers, ACKs) at line rate "+
		"(docs/decisions.md, \"Ideal CCT\").\n\n", size, n, n)
	md.WriteString("| fabric | forwarding | algorithm | background | CCT (us) | ideal (us) | algbw (GB/s) | busbw (GB/s) | CCT / ideal |\n|---|---|---|---|---|---|---|---|---|\n")
	labels := []string{}
	vals := [][]float64{{}, {}}
	for _, r := range rows {
		c := &r.res
		ratio := float64(c.CCT()) / float64(c.Ideal)
		fmt.Fprintf(&md, "| %s | %s | %s | %t | %.1f | %.1f | %.2f | %.2f | %.3f |\n", r.fabric, r.fwd, r.alg, r.background,
			us(c.CCT()), us(c.Ideal), c.AlgBW(), c.BusBW(), ratio)
		fmt.Fprintf(&csv, "%s,%s,%s,%t,%.3f,%.3f,%.4f,%.4f,%.5f,%d\n", r.fabric, r.fwd, r.alg, r.background,
			us(c.CCT()), us(c.Ideal), c.AlgBW(), c.BusBW(), ratio, r.events)
		if !r.background {
			if r.fwd == "ecmp" {
				labels = append(labels, r.fabric+"\n"+strings.ReplaceAll(r.alg, "_", " "))
				vals[0] = append(vals[0], c.BusBW())
			} else {
				vals[1] = append(vals[1], c.BusBW())
			}
		}
	}
	// The analytical check: on the idle fabric the pipelined ring is
	// bound by the NIC, which sends 2(n-1)/n of the message with headers
	// and the ACKs of as much received.
	ring := rows[0].res
	mss := int64(1500 - 64)
	effRate := 100e9 / 8 * float64(mss) / float64(1500+64) // payload bytes/s
	ideal := 2 * float64(n-1) / float64(n) * float64(size) / effRate
	busIdeal := 2 * float64(n-1) / float64(n) * float64(size) / ideal / 1e9
	dev := (ring.BusBW() - busIdeal) / busIdeal
	fmt.Fprintf(&md, "\n## Analytical check (ring, rail fabric, ECMP, idle)\n\n"+
		"With every step in pipelined chunks a rank's NIC never idles, so the ring takes the time its NIC needs to send "+
		"2(n-1)/n x message of payload: at 100 Gb/s with %d payload bytes per 1500-byte packet and a 64-byte ACK sent for "+
		"each packet received, the payload rate is 12.5 GB/s x %d / %d = %.4f GB/s, so T = %.1f us and "+
		"busbw = 2(n-1)/n x message / T = %.4f GB/s. Measured: CCT %.1f us, busbw %.4f GB/s: %+.2f%% (within 1%%: %t).\n",
		mss, mss, 1500+64, effRate/1e9, ideal*1e6, busIdeal, us(ring.CCT()), ring.BusBW(), 100*dev, dev > -0.01 && dev < 0.01)
	fmt.Fprintf(&md, "\n![bus bandwidth](allreduce/busbw.png)\n\nData: [allreduce/results.csv](allreduce/results.csv).\n")
	if err := writeFile(dir, "results.csv", csv.String()); err != nil {
		return err
	}
	if err := bars("All-reduce bus bandwidth, idle fabric", "busbw (GB/s)", labels, []string{"ECMP", "spray"}, vals, dir, "busbw"); err != nil {
		return err
	}
	return writeFile(env.Out, "allreduce.md", md.String())
}
