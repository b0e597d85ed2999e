package wire

import "fmt"

// Control message types (Control.Type).
const (
	// TypeSetupRequest: a node asks a coordinator for the run's Setup.
	TypeSetupRequest = "setup-request"
	// TypeSetup: the reply, a Setup.
	TypeSetup = "setup"
	// TypeResultChunk: a node sends part of its encoded result.
	TypeResultChunk = "result-chunk"
	// TypeAck: the reply to a result chunk.
	TypeAck = "ack"
	// TypeStatus: a coordinator leader's periodic status.
	TypeStatus = "status"
	// TypeNodeStatus: a node's periodic progress.
	TypeNodeStatus = "node-status"
	// TypeAbort: the run is abandoned; every process stops.
	TypeAbort = "abort"
	// TypeError: a reply that refuses a request.
	TypeError = "error"
)

// Subjects of a run. Every subject starts with "lockstep.<run>.".
type Subjects struct{ prefix string }

// NewSubjects returns the subjects of run id run. Run ids are made of
// letters, digits, '-' and '_'.
func NewSubjects(run string) (Subjects, error) {
	if run == "" {
		return Subjects{}, fmt.Errorf("wire: empty run id")
	}
	for _, c := range run {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return Subjects{}, fmt.Errorf("wire: run id %q: only letters, digits, '-' and '_' are allowed", run)
		}
	}
	return Subjects{prefix: "lockstep." + run + "."}, nil
}

// Batch is node i's inbox for batches.
func (s Subjects) Batch(i int) string { return fmt.Sprintf("%sbatch.%d", s.prefix, i) }

// Grant carries grants to every node.
func (s Subjects) Grant() string { return s.prefix + "grant" }

// Resync carries a new leader's resend requests to every node.
func (s Subjects) Resync() string { return s.prefix + "resync" }

// Report carries the nodes' reports to the leader.
func (s Subjects) Report() string { return s.prefix + "report" }

// Setup is where nodes request the run's setup (request/reply).
func (s Subjects) Setup() string { return s.prefix + "setup" }

// Result is where node i sends its result chunks (request/reply).
func (s Subjects) Result(i int) string { return fmt.Sprintf("%sresult.%d", s.prefix, i) }

// Results matches every node's result subject.
func (s Subjects) Results() string { return s.prefix + "result.*" }

// Status carries the leader's status.
func (s Subjects) Status() string { return s.prefix + "status" }

// NodeStatus carries the nodes' progress.
func (s Subjects) NodeStatus() string { return s.prefix + "node-status" }

// Abort tells every process of the run to stop.
func (s Subjects) Abort() string { return s.prefix + "abort" }

// SetupRequest is a node's request for the setup.
type SetupRequest struct {
	Partition int
}

// Setup is everything a node needs to build its partition (docs/design.md §7:
// a node needs nothing but the binary, a NATS URL, a run id and its
// partition index). It carries the effective scenario (after every
// command-line and API edit), not the file it came from: the node
// rebuilds exactly what the launcher built from Scenario and Files,
// refuses it unless it gives Digest, and checks that Part gives Lookahead.
type Setup struct {
	File     string            // the scenario's file name (for messages)
	Scenario []byte            // scenario.Built.Effective: the effective scenario, canonically encoded
	Files    map[string][]byte // the files it reads (CDFs, .topo, .cm), by name
	Seed     uint64            // the effective seed
	// Digest is scenario.Built.Digest: the effective scenario and every
	// file it reads.
	Digest    string
	P         int
	Part      []int // every topology node's partition
	Lookahead int64 // ps
	StopAt    int64 // ps: the barrier's exclusive end of virtual time
	// Term is the raft term of the leader that answered.
	Term uint64
}

// ResultChunk is part Index of Total of node Partition's encoded result.
type ResultChunk struct {
	Partition int
	Index     int
	Total     int
	Data      []byte
}

// Status is a coordinator leader's periodic status.
type Status struct {
	ID     string // raft server id
	Term   uint64
	PID    int
	Window uint64 // last window granted
	Start  int64  // its start, ps
	Phase  string
	Grants uint64
}

// NodeStatus is a node's periodic progress.
type NodeStatus struct {
	Partition int
	Window    uint64
	Events    uint64
	Now       int64 // virtual time of its last event, ps
}

// Abort says why a run is abandoned.
type Abort struct {
	Reason string
}

// ErrorReply refuses a request.
type ErrorReply struct {
	Msg string
}
