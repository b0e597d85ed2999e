package wire

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

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
	// TypeCheckpointStored: a node stored its part of a checkpoint
	// (CheckpointStored), on Checkpoint(i).
	TypeCheckpointStored = "checkpoint-stored"
	// TypeRollback: the leader rolls every node back to a committed
	// checkpoint in a new epoch (Rollback), on Rollback().
	TypeRollback = "rollback"
)

// Subjects of a run. Every subject starts with "lockstep.<run>.". A
// subject that a node publishes on ends with the node's index, so that
// NATS permissions can restrict each member to its own subjects (deploy's
// per-member users) and a receiver can check that a message's body claims
// the sender its subject names (Sender).
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

// Prefix is "lockstep.<run>.", which every subject of the run starts with.
func (s Subjects) Prefix() string { return s.prefix }

// Batch is where node from sends its batches for node to.
func (s Subjects) Batch(to, from int) string { return fmt.Sprintf("%sbatch.%d.%d", s.prefix, to, from) }

// Batches matches node to's batches, from every node.
func (s Subjects) Batches(to int) string { return fmt.Sprintf("%sbatch.%d.*", s.prefix, to) }

// Resync carries the leader's resend requests to every node.
func (s Subjects) Resync() string { return s.prefix + "resync" }

// Report is where node i sends its reports to the leader.
func (s Subjects) Report(i int) string { return fmt.Sprintf("%sreport.%d", s.prefix, i) }

// Reports matches every node's report subject.
func (s Subjects) Reports() string { return s.prefix + "report.*" }

// Setup is where nodes request the run's setup (request/reply).
func (s Subjects) Setup() string { return s.prefix + "setup" }

// Result is where node i sends its result chunks (request/reply).
func (s Subjects) Result(i int) string { return fmt.Sprintf("%sresult.%d", s.prefix, i) }

// Results matches every node's result subject.
func (s Subjects) Results() string { return s.prefix + "result.*" }

// Status carries the leader's status.
func (s Subjects) Status() string { return s.prefix + "status" }

// NodeStatus is where node i publishes its progress.
func (s Subjects) NodeStatus(i int) string { return fmt.Sprintf("%snode-status.%d", s.prefix, i) }

// NodeStatuses matches every node's progress subject.
func (s Subjects) NodeStatuses() string { return s.prefix + "node-status.*" }

// Abort tells every process of the run to stop.
func (s Subjects) Abort() string { return s.prefix + "abort" }

// Checkpoint is where node i says it stored its part of a checkpoint.
func (s Subjects) Checkpoint(i int) string { return fmt.Sprintf("%sckpt.%d", s.prefix, i) }

// Checkpoints matches every node's Checkpoint subject.
func (s Subjects) Checkpoints() string { return s.prefix + "ckpt.*" }

// Rollback carries the leader's rollbacks to every node.
func (s Subjects) Rollback() string { return s.prefix + "rollback" }

// Inbox is the prefix of member's reply subjects (nats.CustomInboxPrefix),
// so that each member may subscribe to its own replies only.
func (s Subjects) Inbox(member string) string { return s.prefix + "inbox." + member }

// Sender returns the node index a node's subject ends with (Batch,
// Report, Result, NodeStatus), or false if subject has none.
func (s Subjects) Sender(subject string) (int, bool) {
	if !strings.HasPrefix(subject, s.prefix) {
		return 0, false
	}
	i := strings.LastIndexByte(subject, '.')
	n, err := strconv.Atoi(subject[i+1:])
	if err != nil || n < 0 || n >= MaxNodes || strconv.Itoa(n) != subject[i+1:] {
		return 0, false
	}
	return n, true
}

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
	File     string // the scenario's file name (for messages)
	Scenario []byte // scenario.Built.Effective: the effective scenario, canonically encoded
	Files    []File // the files it reads (CDFs, .topo, .cm), by name
	Seed     uint64 // the effective seed
	// Digest is scenario.Built.Digest: the effective scenario and every
	// file it reads.
	Digest    string
	P         int
	Part      []int // every topology node's partition
	Lookahead int64 // ps
	StopAt    int64 // ps: the barrier's exclusive end of virtual time
	// Deadlock is the PFC deadlock threshold (ps, 0: no search) and
	// DeadlockEvery the search's grid period (barrier.Config).
	Deadlock, DeadlockEvery int64
	// CheckpointEvery is the virtual time between checkpoints (ps, 0:
	// none): every node saves its part at the first window boundary at or
	// after each multiple (docs/decisions.md, "Distributed checkpoints").
	// CheckpointDir is the directory the parts go to, shared by every
	// node ("": the server's JetStream object store). MaxRestarts bounds
	// the rollbacks after a lost node.
	CheckpointEvery int64
	CheckpointDir   string
	MaxRestarts     int
	// Resume is the checkpoint a resumed run starts from (nil: from the
	// start): `lockstep resume` of a multi-process run.
	Resume *CheckpointRef
	// Term is the raft term of the leader that answered, Epoch the run's
	// epoch, and Restore the checkpoint a node joining in that epoch
	// restores (Resume in epoch 0; the rollback's in later ones), filled
	// in by the leader that answered.
	Term    uint64
	Epoch   uint64
	Restore *CheckpointRef
	// Sig is the launcher's signature of SetupMessage (nil when the run
	// has no member keys, e.g. `lockstep coordinator FILE`).
	Sig []byte
}

// CheckpointRef names a checkpoint of a distributed run: its window, its
// virtual time, and every partition's part (by partition) with its size
// and header digest (checkpoint.Part). The leader commits it through raft
// once every part is stored.
type CheckpointRef struct {
	Window uint64
	TimePS int64
	Parts  []CheckpointPart
}

// CheckpointPart is one partition's part of a checkpoint.
type CheckpointPart struct {
	Name   string
	Bytes  int64
	SHA256 string // of the file's header (checkpoint.HeaderDigest)
}

// CheckpointStored is a node's word that its part of the checkpoint at
// Window (virtual TimePS) is stored, in Epoch.
type CheckpointStored struct {
	Partition int
	Epoch     uint64
	Window    uint64
	TimePS    int64
	Part      CheckpointPart
}

// Rollback tells every node to restore its part of checkpoint To and go
// on in Epoch; messages of any other epoch are dropped from then on. Lost
// names the partition whose loss caused it. From names the coordinator
// that sent it and Sig is its signature of RollbackMessage (nil without
// member keys).
type Rollback struct {
	Epoch uint64
	Lost  int
	To    CheckpointRef
	From  string
	Sig   []byte
}

// Restart is one rollback as summary.json reports it: the epoch it
// started, the partition lost, the window the run had reached (as the
// leader saw it), the checkpoint's window it went back to, and whether
// the node was lost by its silence (a hung node, which its launcher then
// kills) rather than by a new incarnation asking for the setup.
type Restart struct {
	Epoch      uint64 `json:"epoch"`
	Partition  int    `json:"partition"`
	LostAt     uint64 `json:"lost_at_window"`
	FromWindow uint64 `json:"from_window"`
	Silent     bool   `json:"silent,omitempty"`
}

// File is one file a scenario reads. Setup carries a list, not a map: no
// message decoded from the network has a Go map in it, so that decoding
// allocates at most a constant per byte (a map pre-sizes by its header).
type File struct {
	Name string
	Data []byte
}

// FilesOf lists m by name.
func FilesOf(m map[string][]byte) []File {
	fs := make([]File, 0, len(m))
	for _, n := range slices.Sorted(maps.Keys(m)) {
		fs = append(fs, File{Name: n, Data: m[n]})
	}
	return fs
}

// FileMap is the inverse of FilesOf; a name given twice is an error.
func FileMap(fs []File) (map[string][]byte, error) {
	m := make(map[string][]byte, len(fs))
	for _, f := range fs {
		if _, dup := m[f.Name]; dup {
			return nil, fmt.Errorf("wire: setup lists file %q twice", f.Name)
		}
		m[f.Name] = f.Data
	}
	return m, nil
}

// ResultChunk is part Index of Total of node Partition's encoded result.
type ResultChunk struct {
	Partition int
	Index     int
	Total     int
	Data      []byte
	// Sig is the node's signature of ChunkMessage (nil without member
	// keys).
	Sig []byte
}

// Status is a coordinator leader's periodic status.
type Status struct {
	ID     string // raft server id
	Term   uint64
	PID    int
	Window uint64 // the last window every node accepted (their statuses)
	Start  int64  // its start, ps
	Phase  string // running, finished
	Grants uint64 // windows the nodes completed in this term
	// Rejected counts the checkpoint parts this leader dropped
	// (undecodable, or from a sender other than the one they claim) and
	// the raft connections its replica refused (not from a coordinator of
	// the run).
	Rejected uint64
	// Epoch is the run's epoch, Checkpoint the last checkpoint committed
	// (nil: none) and Restarts the rollbacks so far, as raft has them.
	Epoch       uint64         `msgpack:",omitempty"`
	Checkpoint  *CheckpointRef `msgpack:",omitempty"`
	Checkpoints uint64         `msgpack:",omitempty"` // committed so far
	Restarts    []Restart      `msgpack:",omitempty"`
}

// NodeStatus is a node's periodic progress.
type NodeStatus struct {
	Partition int
	Window    uint64 // the last window the node accepted (0: none yet)
	// Start is that window's start, ps: with Window, the progress the
	// leader reports (it hears no reports: coordinator/leader.go).
	Start  int64 `msgpack:",omitempty"`
	Events uint64
	Now    int64 // virtual time of its last event, ps
	// Finished says the node accepted the finishing grant (Reason,
	// barrier.FinishReason) of window Window: the leader learns the end
	// from the nodes' statuses.
	Finished bool  `msgpack:",omitempty"`
	Reason   uint8 `msgpack:",omitempty"`
	// Epoch is the node's epoch: after a rollback, its status in the new
	// epoch says it restored the checkpoint.
	Epoch uint64 `msgpack:",omitempty"`
}

// Abort says why a run is abandoned. From names the member that sent it
// and Sig is its signature of AbortMessage (nil without member keys).
type Abort struct {
	Reason string
	From   string
	Sig    []byte
}

// ErrorReply refuses a request.
type ErrorReply struct {
	Msg string
}

// SetupMessage is the canonical text the launcher signs for a run's
// setup: the run id and every field but Term and Sig. The scenario and its
// files are covered through Digest, which a node recomputes from them
// (node.FromSetup).
func SetupMessage(run string, su *Setup) []byte {
	b := fmt.Appendf(nil, "lockstep setup v3\x00%s\x00%q\x00%s\x00%d\x00%d\x00%v\x00%d\x00%d\x00%d\x00%d\x00%d\x00%q\x00%d",
		run, su.File, su.Digest, su.Seed, su.P, su.Part, su.Lookahead, su.StopAt, su.Deadlock, su.DeadlockEvery,
		su.CheckpointEvery, su.CheckpointDir, su.MaxRestarts)
	return appendRef(b, su.Resume)
}

// appendRef appends ref's canonical text (nothing for nil).
func appendRef(b []byte, ref *CheckpointRef) []byte {
	if ref == nil {
		return b
	}
	b = fmt.Appendf(b, "\x00ckpt %d %d", ref.Window, ref.TimePS)
	for _, p := range ref.Parts {
		b = fmt.Appendf(b, "\x00%q %d %s", p.Name, p.Bytes, p.SHA256)
	}
	return b
}

// RollbackMessage is the canonical text a coordinator signs for a
// rollback.
func RollbackMessage(run string, r *Rollback) []byte {
	b := fmt.Appendf(nil, "lockstep rollback v1\x00%s\x00%s\x00%d\x00%d", run, r.From, r.Epoch, r.Lost)
	return appendRef(b, &r.To)
}

// AbortMessage is the canonical text a member signs for an abort.
func AbortMessage(run string, a *Abort) []byte {
	return fmt.Appendf(nil, "lockstep abort v1\x00%s\x00%s\x00%s", run, a.From, a.Reason)
}

// ChunkMessage is the canonical text a node signs for a result chunk.
func ChunkMessage(run string, ch *ResultChunk) []byte {
	h := sha256.Sum256(ch.Data)
	return fmt.Appendf(nil, "lockstep result v1\x00%s\x00%d\x00%d\x00%d\x00%x", run, ch.Partition, ch.Index, ch.Total, h)
}
