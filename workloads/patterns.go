package workloads

import (
	"fmt"
	"math/rand/v2"

	"github.com/lockstep-sim/lockstep/sim"
)

// Permutation returns a permutation workload: every host sends one flow of
// size bytes at start and receives exactly one, and no host sends to itself
// (a derangement, like htsim's ConnectionMatrix::setPermutation).
//
// The derangement is drawn uniformly from all derangements of numHosts
// hosts: Fisher-Yates shuffles (rand.Rand.Perm) are drawn until one has no
// fixed point, which takes e ≈ 2.72 shuffles on average. (htsim's own
// setPermutation is not uniform: it moves a fixed point to the next free
// host.) Flow i is sent by host i, so Flow.ID == Flow.Src.
func Permutation(numHosts int, size int64, start sim.Time, rng *rand.Rand) ([]Flow, error) {
	if numHosts < 2 {
		return nil, fmt.Errorf("permutation: needs at least 2 hosts, got %d", numHosts)
	}
	if numHosts > maxFlows {
		return nil, fmt.Errorf("permutation: %d hosts is more than the %d flows a list can hold", numHosts, maxFlows)
	}
	if err := checkCommon(size, start); err != nil {
		return nil, fmt.Errorf("permutation: %w", err)
	}
	var to []int
	for {
		to = rng.Perm(numHosts)
		if isDerangement(to) {
			break
		}
	}
	flows := make([]Flow, numHosts)
	for src, dst := range to {
		flows[src] = Flow{ID: int32(src), Src: src, Dst: dst, Size: size, Start: start}
	}
	return flows, nil
}

func isDerangement(p []int) bool {
	for i, v := range p {
		if i == v {
			return false
		}
	}
	return true
}

// Incast returns an N->1 workload: each host in senders sends one flow of
// size bytes to dst at start. Flow i is sent by senders[i]; a host listed
// twice sends two flows. A sender equal to dst is an error. Host indices
// are checked against the fabric by Explicit, not here.
func Incast(senders []int, dst int, size int64, start sim.Time) ([]Flow, error) {
	if len(senders) == 0 {
		return nil, fmt.Errorf("incast: no senders")
	}
	if len(senders) > maxFlows {
		return nil, fmt.Errorf("incast: %d senders is more than the %d flows a list can hold", len(senders), maxFlows)
	}
	if dst < 0 {
		return nil, fmt.Errorf("incast: dst: host %d does not exist (host indices start at 0)", dst)
	}
	if err := checkCommon(size, start); err != nil {
		return nil, fmt.Errorf("incast: %w", err)
	}
	flows := make([]Flow, len(senders))
	for i, src := range senders {
		if src < 0 {
			return nil, fmt.Errorf("incast: senders[%d]: host %d does not exist (host indices start at 0)", i, src)
		}
		if src == dst {
			return nil, fmt.Errorf("incast: senders[%d]: host %d is the incast destination", i, src)
		}
		flows[i] = Flow{ID: int32(i), Src: src, Dst: dst, Size: size, Start: start}
	}
	return flows, nil
}

// AllToAll returns an all-to-all workload: every ordered pair of distinct
// hosts in hosts exchanges one flow of size bytes at start, n*(n-1) flows
// for n hosts. Flows are ordered by the position of the sender in hosts,
// then of the receiver. Hosts must be distinct.
func AllToAll(hosts []int, size int64, start sim.Time) ([]Flow, error) {
	n := len(hosts)
	if n < 2 {
		return nil, fmt.Errorf("all-to-all: needs at least 2 hosts, got %d", n)
	}
	if int64(n)*int64(n-1) > maxFlows {
		return nil, fmt.Errorf("all-to-all: %d hosts make %d flows, more than the %d a list can hold", n, int64(n)*int64(n-1), maxFlows)
	}
	if err := checkCommon(size, start); err != nil {
		return nil, fmt.Errorf("all-to-all: %w", err)
	}
	seen := make(map[int]int, n) // host -> first index; never iterated
	for i, h := range hosts {
		if h < 0 {
			return nil, fmt.Errorf("all-to-all: hosts[%d]: host %d does not exist (host indices start at 0)", i, h)
		}
		if j, dup := seen[h]; dup {
			return nil, fmt.Errorf("all-to-all: hosts[%d]: host %d is listed twice (also hosts[%d])", i, h, j)
		}
		seen[h] = i
	}
	flows := make([]Flow, 0, n*(n-1))
	for _, src := range hosts {
		for _, dst := range hosts {
			if src == dst {
				continue
			}
			flows = append(flows, Flow{ID: int32(len(flows)), Src: src, Dst: dst, Size: size, Start: start})
		}
	}
	return flows, nil
}
