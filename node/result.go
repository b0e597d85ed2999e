package node

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstep-sim/lockstep/coordinator/barrier"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/results"
)

// PartResult is what a node sends back when the run ends: its part of the
// outputs (results.Part) and the node's own statistics. It is a plain
// value (msgpack-encodable).
type PartResult struct {
	Part results.Part
	Core CoreStats
	// Final is the finishing grant the partition accepted.
	Final barrier.Grant
	// Perf is the shell's wall-clock view.
	Perf NodePerf
	// Reason is why the node failed, for a partial result it pushed on
	// its own failure (an external element's error), else empty.
	Reason string `msgpack:",omitempty"`
}

// NodePerf is a node's machine-dependent statistics.
type NodePerf struct {
	WallSeconds float64 // from setup to the finishing grant
	RunSeconds  float64 // running windows
	WaitSeconds float64 // waiting for grants and batches
	MaxWait     float64 // the longest single wait, seconds
	// Where a window's time goes (seconds, summed over the windows): the
	// core running it (inject, events, gathering the outbox), encoding and
	// publishing its batches and report, decoding and delivering what
	// came in; the part of the wait spent on slower partitions (from their
	// reported busy time; in memory, the slowest core's run), the rest
	// of WaitSeconds being the network and the barrier.
	ComputeSeconds   float64
	EncodeSeconds    float64
	PublishSeconds   float64
	DecodeSeconds    float64
	ImbalanceSeconds float64
	Windows          uint64
	// AheadSeconds is the time spent running windows' first phases
	// while waiting (Core.RunAhead; counted in ComputeSeconds and
	// RunSeconds too, not in WaitSeconds), AheadEvents their events,
	// AheadWindows the windows that had one.
	AheadSeconds float64
	AheadEvents  uint64
	AheadWindows uint64
	Messages     uint64 // NATS messages received (batches, grants, resyncs)
	// Echoes counts the node's own reports the server delivered back to
	// it (a connection without ConnOptions); 0 on its own connection.
	Echoes uint64 `msgpack:",omitempty"`
	// Rejected counts messages dropped because they did not come from
	// the member they claim (or did not decode).
	Rejected uint64
	// Checkpoints, CheckpointBytes and CheckpointSeconds sum the parts of
	// checkpoints this node stored (encoding and storing); Restores counts
	// the checkpoints it restored (a rollback, a replacement node, a
	// resume); Stale the messages dropped as of another epoch.
	Checkpoints       uint64
	CheckpointBytes   uint64
	CheckpointSeconds float64
	Restores          uint64
	Stale             uint64
	// Resends counts the leader's resync requests the node answered (it
	// resent its last reports and batches): the run had stalled, after a
	// message was lost (a NATS outage) or a peer fell behind.
	Resends uint64 `msgpack:",omitempty"`
	// Routes is Config.Routes: the other servers the node's own NATS
	// server was joined to (0: not serving).
	Routes uint64 `msgpack:",omitempty"`
	// CPUSeconds, Preempted and RunqSeconds are the node's process's CPU
	// time (user and system), involuntary context switches and time its
	// threads were runnable but waited for a CPU (Linux), from setup to
	// the finishing grant, when the node is alone in its process
	// (Config.OwnProcess; else 0).
	CPUSeconds  float64 `msgpack:",omitempty"`
	Preempted   uint64  `msgpack:",omitempty"`
	RunqSeconds float64 `msgpack:",omitempty"`
}

// Result collects the partition's result. Precondition: Over.
func (c *Core) Result() *PartResult {
	why := results.FinishDrained
	var d *fabric.Deadlock
	switch c.grant.Reason {
	case barrier.FinishStopTime:
		why = results.FinishLimit
	case barrier.FinishDeadlock:
		why = results.FinishDeadlock
		d = &fabric.Deadlock{At: c.grant.Start, Threshold: c.F.DeadlockThreshold(), Cycle: c.grant.Cycle}
	case barrier.FinishIdle, barrier.FinishAllDone:
	}
	p := c.rec.Part(c.part, why)
	p.Deadlock = d
	// Packets received in batches and not yet injected are still on
	// their wires, as they would be in a single process.
	for _, b := range c.inbox {
		p.Cons.OnWire += len(b.b.Packets)
		p.Cons.PoolLive += len(b.b.Packets)
	}
	return &PartResult{Part: *p, Core: c.stats, Final: c.grant}
}

// PartialResult is the partition's result so far, for a run that failed
// after it started: the part as the fabric stands between two windows,
// with no finishing grant (results.MergePartial takes it).
func (c *Core) PartialResult() *PartResult {
	p := c.rec.Part(c.part, 0)
	for _, b := range c.inbox {
		p.Cons.OnWire += len(b.b.Packets)
		p.Cons.PoolLive += len(b.b.Packets)
	}
	return &PartResult{Part: *p, Core: c.stats}
}

// Partial reports whether r is a partial result (PartialResult).
func (r *PartResult) Partial() bool { return !r.Final.Finished }

// Parts checks that every partition accepted the same finishing grant
// and returns their parts for results.Merge, by partition.
func Parts(rs []*PartResult) ([]*results.Part, error) {
	parts := make([]*results.Part, len(rs))
	for i, r := range rs {
		if r == nil {
			return nil, fmt.Errorf("node: no result from partition %d", i)
		}
		if !r.Final.Finished {
			return nil, fmt.Errorf("node: partition %d has not finished", r.Part.Partition)
		}
		if f := rs[0].Final; !sameFinal(r.Final, f) {
			return nil, fmt.Errorf("node: partitions %d and %d finished differently", rs[0].Part.Partition, r.Part.Partition)
		}
		parts[i] = &r.Part
	}
	return parts, nil
}

func sameFinal(a, b barrier.Grant) bool {
	return a.Window == b.Window && a.Start == b.Start && a.Finished == b.Finished && a.Reason == b.Reason
}

// EncodeResult encodes a result to send it: msgpack with every struct as
// an array of its fields in declaration order, not a map keyed by field
// name, and every integer in its smallest form (msgpack's default writes
// an int64 or uint64 field in 9 bytes). A result is mostly per-port and
// per-flow rows of small counters: a node of the k=16 permutation sent
// 621 KB as maps, 290 KB as arrays, 129 KB with compact integers.
// DecodeResult reads any of these; a result whose structs have another
// number of fields than the reader's (another build) is refused, not
// misread.
func EncodeResult(r *PartResult) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseArrayEncodedStructs(true)
	enc.UseCompactInts(true)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodeResult decodes a result sent by a node.
func DecodeResult(data []byte) (*PartResult, error) {
	if err := wire.Bounded(data); err != nil {
		return nil, fmt.Errorf("node: decode result: %w", err)
	}
	var r PartResult
	if err := msgpack.Unmarshal(data, &r); err != nil {
		if strings.Contains(err.Error(), "array-encoded struct") {
			// msgpack's only word for a struct of another shape.
			return nil, fmt.Errorf("node: decode result: its structs have other fields than this build's (the node runs another version of lockstep?): %w", err)
		}
		return nil, fmt.Errorf("node: decode result: %w", err)
	}
	return &r, nil
}
