// Package workloads builds the flow lists that the engine runs: who sends
// how many bytes to whom, and when each flow starts.
//
// A workload is open loop: a flow starts at its Start time whatever happens
// to the flows before it. The package has
//
//   - Explicit: a list written out by hand (validated, renumbered);
//   - Permutation, Incast and AllToAll: the classic synthetic patterns;
//   - Poisson: flows arriving as a Poisson process with sizes drawn from an
//     empirical flow-size distribution (CDF), the open-loop load generator of
//     the HPCC simulator's traffic_gen.py;
//   - ParseCM: htsim connection-matrix (.cm) files, read unchanged.
//
// It does not model closed-loop or dependent traffic: htsim's triggers
// (a flow that starts when another finishes), flow priorities, unbounded
// (size 0) flows and link failures are rejected with an error, never
// ignored.
//
// Determinism: every random generator takes the *rand.Rand it draws from
// (use sim.NewRand(seed, sim.StreamWorkload)); nothing reads the wall clock,
// the global random source or iterates a map. The same stream gives the same
// flows. Every function returns flows numbered 0..n-1 (Flow.ID) in a stable,
// documented order.
package workloads
