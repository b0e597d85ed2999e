package scenario

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/lockstep-sim/lockstep/internal/yamlx"
	"github.com/lockstep-sim/lockstep/sim"
)

// Bounds on what a scenario may ask for. docs/decisions.md ("Hostile
// input") gives the reason for each number; docs/scenario.md lists them.
const (
	// MaxFileSize bounds every file a scenario reads (.cdf, .cm, .topo)
	// and the scenario file itself: files are read whole, kept for the
	// digest and sent to every node of a distributed run.
	MaxFileSize = 64 << 20
	// MaxMTU is IPv4's largest packet (its 16-bit total length).
	MaxMTU = 65535
	// MaxInitCwnd bounds transport.init_cwnd (segments): far above any
	// bandwidth-delay product a fabric has (65536 × 9000 B ≈ 590 MB).
	MaxInitCwnd = 1 << 16
	// MaxCount bounds the other per-flow counts (dup_thresh,
	// tso_segments, delayed_ack.count, strack.entropies).
	MaxCount = 1 << 16
	// MaxFlowSize is the largest flow: 1 TiB, 88 s at 100 Gb/s, and far
	// from overflowing byte counts multiplied by 8 or by picoseconds.
	MaxFlowSize = 1 << 40
	// MaxBuffer bounds a port's buffer (and ECN thresholds): 1 TiB is
	// already unlimited for any run, and keeps byte counts far from
	// overflow.
	MaxBuffer = 1 << 40
	// MaxHeader bounds a trimmed header and the bytes a cut-through
	// switch waits for: a jumbo frame.
	MaxHeader = 9216
	// MaxFlows bounds the flows of a scenario, checked before a workload
	// is generated (an all-to-all of 2048 hosts still fits).
	MaxFlows = 1 << 22
	// MinQueueSample is the shortest output.queues.interval: a 1500-byte
	// packet's serialisation at 100 Gb/s. Finer sampling says nothing new
	// and multiplies queue_depth.csv (1ps made a run grow to 1.8 GB).
	MinQueueSample = 100 * sim.Nanosecond
	// MaxNSCCDelay bounds transport.nscc's durations (network_rtt,
	// base_rtt, target_qdelay, adjust_period, fast_increase_delay), in
	// picoseconds: 1 s, 10^5 times a datacenter RTT.
	MaxNSCCDelay = 1_000_000_000_000
	// MaxNSCCGain bounds transport.nscc's gains and factors (fi, fi_scale,
	// eta, alpha, qa_threshold, max_cwnd_bdp): 200 times the largest of
	// htsim's defaults, and far from overflowing the window's integer
	// arithmetic.
	MaxNSCCGain = 1000
	// MaxStormTime bounds a pfc_storm's times (at, until, nic_watchdog):
	// an hour of virtual time, far beyond any run, and far from
	// overflowing picoseconds.
	MaxStormTime = 3600 * sim.Second
	// MaxPDSAckBytes bounds transport.nscc.ack_bytes: 1 GiB, 65536 times
	// htsim's 16 KiB, within the receivers' int32 count.
	MaxPDSAckBytes = 1 << 30
)

// noZero lists the fields where 0 is never a meaningful setting, with the
// default a field left out gets. A file that writes 0 gets an error
// instead of the default: "unset" is spelt by leaving the field out.
// Paths are normalised: list indices read [] and a topology section *.
var noZero = map[string]string{
	"stop_at":                                     "leave it out to run until every flow finishes",
	"max_time":                                    "leave it out for the default, 10s",
	"topology.*.*.buffer":                         "leave it out for the default, 1MiB",
	"topology.graph.links[].buffer":               "leave it out for the defaults' buffer",
	"topology.leafspine.oversubscription":         "leave it out for the default, 1",
	"topology.fattree.oversubscribed":             "leave it out for the default, 1",
	"transport.mtu":                               "leave it out for the default, 1500",
	"transport.ack_size":                          "leave it out for the default, 64",
	"transport.init_cwnd":                         "leave it out for the default, 10 segments",
	"transport.dup_thresh":                        "leave it out for the default, 3",
	"transport.tso_segments":                      "leave it out for the default, 1",
	"transport.rwnd":                              "leave it out for an unlimited window",
	"transport.rto.min":                           "leave it out for the default, 200ms",
	"transport.rto.max":                           "leave it out for the default, 60s",
	"transport.rto.initial":                       "leave it out for the default, 1s",
	"transport.delayed_ack.count":                 "leave it out for the default, 2",
	"transport.delayed_ack.timeout":               "leave it out for the default, 40ms",
	"transport.pacing.ss_ratio":                   "leave it out for the default, 2.0",
	"transport.pacing.ca_ratio":                   "leave it out for the default, 1.2",
	"transport.strack.entropies":                  "leave it out for the default, 256",
	"transport.strack.base_target":                "leave it out for the default, 20us",
	"transport.strack.min_cwnd":                   "leave it out for the default, 1 segment",
	"transport.strack.max_cwnd":                   "leave it out for the default, 1000 segments",
	"transport.nscc.entropies":                    "leave it out for the default, 64",
	"transport.nscc.reps_buffer":                  "leave it out for the default, 8",
	"transport.nscc.ack_bytes":                    "leave it out for the default, 16384",
	"transport.nscc.network_rtt":                  "leave it out to derive it from the fabric",
	"transport.nscc.base_rtt":                     "leave it out for network_rtt",
	"transport.nscc.target_qdelay":                "leave it out to derive it from network_rtt",
	"transport.nscc.adjust_period":                "leave it out for network_rtt",
	"transport.nscc.adjust_bytes":                 "leave it out for the default, 8 MTUs",
	"transport.nscc.max_cwnd_bdp":                 "leave it out for the default, 1.5",
	"output.cwnd.interval":                        "leave it out to record every change",
	"output.queues.interval":                      "give the sampling period",
	"placement.partitions":                        "leave it out for --partitions, else 2",
	"impairments[].pfc_storm.until":               "leave it out for a stall to the end of the run",
	"impairments[].pfc_storm.xoff":                "leave it out for the host's switch's",
	"impairments[].pfc_storm.headroom":            "leave it out for the host's switch's",
	"impairments[].pfc_storm.quanta":              "leave it out for the host's switch's",
	"impairments[].pfc_storm.nic_watchdog":        "leave it out for no NIC watchdog",
	"switch.pfc.storm_watchdog.restoration_time":  "leave it out for the detection time",
	"workload[].size":                             "a flow has at least one byte",
	"workload[].flows[].size":                     "a flow has at least one byte",
	"workload[].n":                                "give the number of senders",
	"workload[].load":                             "give the offered load in (0, 1]",
	"workload[].duration":                         "give how long arrivals go on",
	"workload[].max_flows":                        "leave it out for no limit but duration's",
	"workload[].collective.parallel.tp":           "leave it out for the default, 1",
	"workload[].collective.parallel.pp":           "leave it out for the default, 1",
	"workload[].collective.parallel.microbatches": "leave it out for the default, 1",
	"workload[].collective.parallel.layers":       "leave it out for the default, 1",
	"workload[].collective.parallel.tp_size":      "give the bytes of each tensor-parallel all-reduce",
	"workload[].collective.parallel.pp_size":      "give the bytes each stage sends the next per micro-batch",
}

// workloadFields are the fields each workload type takes, besides type.
var workloadFields = map[string][]string{
	"flows":       {"flows"},
	"permutation": {"size", "start"},
	"incast":      {"dst", "senders", "n", "size", "start"},
	"alltoall":    {"hosts", "size", "start"},
	"poisson":     {"load", "cdf", "start", "duration", "max_flows"},
	"cm":          {"file", "trigger_delay"},
	"collective":  {"hosts", "size", "start", "collective"},
}

var reflectWorkload = reflect.TypeFor[Workload]()

var indexRE = regexp.MustCompile(`\[[0-9]+\]`)

// normalise turns a field path into the form noZero uses.
func normalise(path string) string {
	p := indexRE.ReplaceAllString(path, "[]")
	if rest, ok := strings.CutPrefix(p, "topology."); ok {
		// topology.<type>.<tier>.buffer -> topology.*.*.buffer
		if parts := strings.Split(rest, "."); len(parts) == 3 && parts[2] == "buffer" && !strings.Contains(rest, "[]") {
			return "topology.*.*.buffer"
		}
	}
	return p
}

// checkPresent applies the rules that depend on what the file writes, not
// on the values alone: zero is not "unset", and each workload type takes
// only its own fields.
func checkPresent(file string, s *Scenario, present yamlx.Present) error {
	paths := make([]string, 0, len(present))
	for p := range present {
		paths = append(paths, p)
	}
	slices.Sort(paths) // the first error is the same every time
	for _, p := range paths {
		if !present.Zero(p) {
			continue
		}
		if hint, ok := noZero[normalise(p)]; ok {
			return &Error{File: file, Path: p, Msg: "must be positive, got 0 (" + hint + ")"}
		}
	}
	known := yamlx.Known(reflectWorkload)
	for i := range s.Workload {
		w := &s.Workload[i]
		own, ok := workloadFields[w.Type]
		if !ok {
			continue // Build reports the unknown type
		}
		for _, f := range known {
			path := fmt.Sprintf("workload[%d].%s", i, f)
			if f == "type" || f == "class" || !present.Has(path) || slices.Contains(own, f) {
				continue
			}
			return &Error{File: file, Path: path, Msg: fmt.Sprintf("not a field of type %s (which takes %s)", w.Type, strings.Join(own, ", "))}
		}
	}
	return nil
}
