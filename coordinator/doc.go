// Package coordinator is the control plane of a distributed run
// (docs/design.md §3): a hashicorp/raft replica (1 or 3 voters, TCP transport,
// BoltDB or in-memory stores) whose FSM replicates the run's control state
// (scenario digest, seed, partition map, membership, phase, progress marks,
// the leader of each term), and, on the leader only, the NATS shell around
// the pure lockstep barrier of package coordinator/barrier.
//
// The leader's duties, in order:
//
//  1. On election, wait for the FSM to apply every committed entry
//     (raft.Barrier), record the run (or check it against the recorded
//     one), and restore the barrier from the last progress mark.
//  2. Move the barrier to the new raft term, which starts a
//     resynchronisation, and ask the nodes to resend their last reports
//     until they have (Resync messages, every ResyncEvery).
//  3. Answer the nodes' setup requests with the scenario, the partition
//     map and the term.
//  4. Feed every report to the barrier and publish every grant. This is
//     the per-window path, and raft is not on it: every MarkEvery windows
//     the barrier's state is proposed as a progress mark, asynchronously.
//  5. Publish its status every StatusEvery (progress, and who leads).
//
// Grants carry the raft term and nodes ignore grants of older terms
// (barrier.Follower), so a deposed leader that keeps publishing does no
// harm; and since a grant is a pure function of the reports, a new leader
// re-issues exactly the grants the old one would have (barrier package
// doc, "Terms and failover"): the run's results do not change.
//
// The package imports neither switchsim nor hostsim: it knows the run only
// through wire.Setup, which the command line builds.
package coordinator
