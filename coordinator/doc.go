// Package coordinator is the control plane of a distributed run
// (docs/design.md §3): a hashicorp/raft replica (1 or 3 voters, TCP transport,
// BoltDB or in-memory stores) whose FSM replicates the run's control state
// (scenario digest, seed, partition map, membership, phase, progress marks,
// committed checkpoints and rollbacks, the leader of each term), and, on
// the leader only, a NATS shell that serves the nodes.
//
// The nodes run the lockstep barrier among themselves: each steps every
// node's report into its own replica of the pure barrier of package
// coordinator/barrier and grants itself the next window (barrier package
// doc, "Peers"). No coordinator is on the per-window path, and none hears
// the reports. The leader's duties:
//
//  1. On election, wait for the FSM to apply every committed entry
//     (raft.Barrier), record the run (or check it against the recorded
//     one), and take the run's progress from the last mark.
//  2. Answer the nodes' setup requests with the scenario, the partition
//     map, the term, the epoch and the checkpoint to restore, if any.
//  3. Follow the run from the nodes' statuses (every StatusEvery): the
//     joins once every node has spoken, a progress mark every MarkEvery
//     windows the slowest node has accepted (proposed asynchronously), the
//     finish once every node says it finished.
//  4. Watch the deadlines: a node silent for PeerTimeout is lost (a
//     rollback to the last committed checkpoint, or the run fails); a run
//     whose statuses show no progress for StallAfter has the nodes resend
//     their last reports and batches (whatever a NATS outage lost).
//  5. Commit a checkpoint once every node stored its part, and roll every
//     node back when one is replaced.
//  6. Publish its status every StatusEvery (progress, and who leads).
//
// Since every grant is a pure function of the reports and the nodes
// compute them, a leader's death changes nothing in the run: its successor
// only takes up the duties above. The run's results do not change.
//
// The package imports neither switchsim nor hostsim: it knows the run only
// through wire.Setup, which the command line builds.
package coordinator
