// Package barrier is the pure conservative-lockstep barrier of docs/design.md §3:
// it decides how far in virtual time every node may run before it must wait
// for the others. It is a deterministic state machine in the shape of etcd's
// RawNode: reports go in through Step, grants come out of Ready, and Advance
// acknowledges them. It does no I/O, starts no goroutines, reads no clock and
// imports nothing but the standard library and package sim. The NATS shell
// that carries reports and grants, and the raft FSM that snapshots the
// barrier, live elsewhere (coordinator/).
//
// It models windows, message counts, raft terms and the resynchronisation
// after a leader failover. It does not model packets, elements or
// partitioning: a node's events are summarised by two timestamps.
//
// # Windows
//
// The fabric is split into P partitions, one per node, numbered 0..P-1. L
// (Config.Lookahead) is the smallest propagation delay of a cut link, so a
// packet sent at virtual time t to another node arrives at t+L or later.
//
// Window k covers [Start_k, End_k): a node processes every event with time
// < End_k and nothing later. Window 0 is the setup window [0, 0): it runs no
// events. Every node's first Report is for window 0 and carries its first
// event time (and, if setup sends anything to other nodes, those counts).
// There is therefore no special first grant: the first real window, window
// 1, is granted from the window-0 reports like every later one.
//
// After window k, node i reports NextEvent_i (its earliest pending event,
// sim.Never if none), MinSent_i (the earliest arrival time of the packets it
// sent to other nodes during window k, sim.Never if none) and Sent_i[j] (how
// many batch messages it sent to node j during window k). When all P reports
// for window k are in, let
//
//	m = min over i of (NextEvent_i, MinSent_i).
//
// Then the barrier grants window k+1 = [m, min(m+L, StopAt)), with
// Expect[j] = sum over i of Sent_i[j]: node j must have received that many
// batch messages sent during window k before it starts window k+1.
//
// # Why this is safe
//
// Claim: while node j runs window k+1 = [m, E) with E <= m+L, no event with
// time < E can reach j that is not already in its queue when it starts, or
// that j creates itself while it runs.
//
//  1. No event earlier than m exists anywhere after window k. Events pending
//     at some node are >= its NextEvent >= m. A packet sent during window k
//     arrives at or after its sender's MinSent >= m. A packet sent during an
//     earlier window was received before window k started (that is what
//     Expect enforces), so it sits in its receiver's queue and is counted in
//     the receiver's NextEvent. Hence starting at m instead of End_k skips
//     only idle time: this is how a 1 ms gap between events costs one grant
//     instead of 1 ms / L grants.
//  2. Packets sent during window k (or before) and bound for j are all in
//     j's queue before it starts: it waits for Expect[j] messages.
//  3. Packets sent during window k+1 cannot matter: every event any node
//     processes in window k+1 has time >= m (by 1), so a packet it sends
//     leaves at >= m and arrives at >= m+L >= E, i.e. in a later window.
//
// So each node sees exactly the events a sequential simulator would feed it,
// in the same order (docs/design.md §2 fixes the order of simultaneous events),
// and the run is byte-identical however it is partitioned. The same argument
// shows a report can never legally name a time before the end of the window
// it reports on; Step rejects such reports (ErrBadReport).
//
// A window is never shorter than L unless it is clipped by the stop time, and
// never empty: E > m because m < StopAt.
//
// # Finishing
//
// Instead of granting window k+1 the barrier may end the run. It then emits a
// Grant with Finished set and a FinishReason, Start == End == min(m, StopAt)
// (the time from which nothing runs; sim.Never when everything ran), and the
// Expect counts of messages still in flight, so shells that want to drain
// them can. The reasons, checked in this order:
//
//   - FinishIdle: m == sim.Never, nothing is pending and nothing in flight.
//   - FinishAllDone: every report has Done set (the node has nothing left
//     that matters, for example only a periodic sampler) and every MinSent is
//     sim.Never (no packet is in flight). Done is optional: a node that never
//     sets it just runs until FinishIdle or FinishStopTime.
//   - FinishStopTime: m >= StopAt. Config.StopAt is exclusive: events at
//     times < StopAt run, and every window is clipped so that End <= StopAt.
//
// After the finishing grant, Step answers ErrFinished.
//
// # Terms and failover
//
// Every report and grant carries a raft term. Reports from an older term than
// the barrier's are ignored, counted in Stats.Stale, and answered with
// ErrStale; reports from a newer term get ErrNewerTerm (this barrier belongs
// to a deposed leader). Grants carry the barrier's term, and a Follower
// ignores grants older than the newest term it has seen.
//
// Raft is not on the per-window path, so a new leader's barrier, restored
// from a raft snapshot (State / Restore), may lag the nodes by many windows.
// SetTerm therefore puts the barrier into a resynchronising phase: the leader
// asks every node where it stands, and each node answers with its last two
// reports (Follower.Resend), restamped with the new term. Once the barrier
// has at least one report from every node it looks at each node's latest,
// lo = the lowest window and hi = the highest:
//
//   - lo == hi: every node finished hi; the barrier grants hi+1 from the hi
//     reports, exactly as in the normal phase.
//   - lo+1 == hi: the old leader granted hi but some nodes may never have
//     received it. The barrier re-issues grant hi from the lo reports (the
//     nodes at hi resent theirs as their second-to-last report), and the
//     hi reports already in count towards window hi.
//   - hi > lo+1: a newer report of the node at lo is still on its way
//     (window w+1 is granted only after every node finished w, so the
//     nodes' last windows are never further apart); the barrier waits.
//
// A grant is a pure function of the reports of the window before it and the
// Config, so a re-issued grant is identical to the lost one but for its term,
// and nodes that already have it ignore the duplicate (Follower.Accept). The
// barrier may resolve on an incomplete view (a node's resent report for w-1
// arrived, the one for w did not yet): it then grants an older window again,
// which is harmless for the same reason, and collects the later reports as
// they come. The one report that can arrive too soon for that is from a node
// that held the old leader's grant for the window after its last finished
// one and finishes it after resending; the barrier keeps such reports for
// the window after the one it collects right after the resync
// (State.EarlyWindow). Leftover resent reports then get ErrDuplicate or
// ErrWrongWindow, which a shell may ignore.
//
// Either way the run continues with the same windows it would have had
// without the failover, so its results do not change. Reports collected
// before their window is granted (early or resent ones) are checked against
// its end only when it is granted; Stats.Dropped counts the ones that fail.
// The Grant.Idle of the first grant after a resync is 0 unless the restored
// state already knew where the previous window ended, and Stats count grants
// for windows the restored state had already granted as Reissued.
//
// # Peers
//
// A grant is a pure function of the reports and the Config, so the leader
// need not be on the per-window path at all. In a peer run (Config.Peer)
// every node publishes its report to every node and steps every report,
// its own included, into a Barrier of its own; whenever Ready returns a
// grant it calls Advance and gives the grant to its Follower. All replicas
// issue the same grants, so the run is the one a leader would have run,
// but a window costs one report hop instead of a report and a grant hop
// through the leader.
//
// A replica can be at most one window behind a node: node i runs window
// w+1 only after its replica has every report of w, node j's among them,
// so j's report for w+2 needs i's for w+1, which i's own replica already
// holds. Hence a peer replica keeps any report for Window+1 as early
// (without Peer, only after a resync), and a report for a window it has
// finished collecting is a harmless copy (ErrWrongWindow or ErrDuplicate).
// Terms stay fixed in a peer run (the leader no longer grants).
//
// Reports that are lost have to be sent again. The window-0 reports are
// published before every node has subscribed; the republish rule recovers
// them: a node that hears a peer's window-0 report for the first time
// publishes its own window-0 report again (the peer subscribed before it
// published, so it gets the copy). After an outage, a resend request
// makes every node publish its last two reports (Follower.Last) and the
// batches of its last two windows again.
//
// A process that wants to follow a peer run window by window can be an
// observer: a peer Barrier fed with the same reports, whose grants it
// never publishes. It may fall behind (started from an old snapshot, or it
// lost reports): on a report more than a window ahead, or when it made no
// progress for a while, it calls Resync, which drops what it collected and
// resolves from the reports that come next exactly as after SetTerm, and
// asks the nodes to resend. TestCausality_PeerProperty checks all of this
// under random orders, losses and observer replacements. (The coordinator
// leader was such an observer; it now hears no reports and follows the
// run from the nodes' statuses: package coordinator.)
//
// # Duties of the shells
//
// The coordinator shell, on the raft leader:
//
//  1. Step every report. Count ErrStale; log the other errors.
//  2. After each Step, if Ready returns a grant, publish it to every node,
//     then call Advance.
//  3. On becoming leader: Restore the latest snapshot (if any), SetTerm to
//     the new term, and ask every node to resend.
//
// A node, with f := NewFollower(node, term):
//
//  1. After setup, send f.Finish(Report{NextEvent: first event, ...}).
//  2. Offer every grant to f.Accept, and every incoming batch to f.Receive
//     with the window it was sent in.
//  3. When f.ReadyToRun(g): process the events before g.End, tag outgoing
//     batches with g.Window, and send f.Finish(...) with the counts.
//  4. Stop on a Finished grant. Answer a leader's request with f.Resend.
//
// The property test (property_test.go) runs random fabrics under random
// message orders, duplicated grants and failovers that restore snapshots of
// random age, and checks causality, liveness and that every node processes
// the same events in the same order as a sequential simulator.
package barrier
