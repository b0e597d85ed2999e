package coordinator

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstep-sim/lockstep/internal/wire"
)

// Phase is the run's phase as raft records it.
type Phase uint8

// Phases. The zero value is "not configured".
const (
	// PhaseSetup: configured, nodes joining.
	PhaseSetup Phase = 1 + iota
	// PhaseRunning: the first window was granted.
	PhaseRunning
	// PhaseFinished: the finishing grant was issued.
	PhaseFinished
)

func (p Phase) String() string {
	switch p {
	case 0:
		return "unconfigured"
	case PhaseSetup:
		return "setup"
	case PhaseRunning:
		return "running"
	case PhaseFinished:
		return "finished"
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// RunConfig is what identifies a run: every replica must agree on it.
type RunConfig struct {
	Digest    string
	Seed      uint64
	P         int
	Part      []int
	Lookahead int64
	StopAt    int64
	// Deadlock and DeadlockEvery: the PFC deadlock search (ps; 0: none).
	Deadlock, DeadlockEvery int64
}

// Mark is a progress mark: every node had accepted window Window (their
// statuses said so to the leader of Term), from which a new leader's
// progress starts until the nodes' statuses bring it up to date.
type Mark struct {
	Window uint64
	Start  int64 // the window's start, ps
	Term   uint64
}

// LeaderTerm records which replica led which term.
type LeaderTerm struct {
	ID   string
	Term uint64
}

// ControlState is the run's control state, replicated by raft (docs/design.md
// §3): scenario digest, seed, partition map, membership, phase, progress
// marks, and who led. It never holds per-window data other than the last
// mark: raft is not on the per-window path.
type ControlState struct {
	Config  RunConfig
	Phase   Phase
	Joined  []bool // by partition
	Mark    Mark
	HasMark bool
	Leaders []LeaderTerm
	// FinishWindow and FinishReason describe the finishing grant.
	FinishWindow uint64
	FinishReason uint8
	// Epoch is the run's epoch: 0 from the start, one more at each
	// rollback (docs/decisions.md, "Distributed checkpoints").
	// Checkpoint is the last checkpoint committed (every part stored);
	// Restore the one a node joining in Epoch restores (the resumed
	// checkpoint in epoch 0, the rollback's after); Restarts the
	// rollbacks, oldest first.
	Epoch      uint64
	Checkpoint *wire.CheckpointRef
	// Checkpoints counts the checkpoints committed.
	Checkpoints uint64
	Restore     *wire.CheckpointRef
	Restarts    []wire.Restart
}

// Op is a command's operation.
type Op uint8

// Operations. The zero value is invalid.
const (
	OpConfigure Op = 1 + iota
	OpLead
	OpJoin
	OpMark
	OpFinish
	// OpCheckpoint commits a checkpoint whose parts are all stored.
	OpCheckpoint
	// OpRollback starts epoch Epoch: every node goes back to the last
	// committed checkpoint.
	OpRollback
)

// Command is one raft log entry's payload.
type Command struct {
	Op     Op
	Config RunConfig  `msgpack:",omitempty"`
	Lead   LeaderTerm `msgpack:",omitempty"`
	Joined []int      `msgpack:",omitempty"` // partitions that joined
	Mark   Mark       `msgpack:",omitempty"`
	Window uint64     `msgpack:",omitempty"`
	Reason uint8      `msgpack:",omitempty"`
	// Ckpt is OpCheckpoint's checkpoint, or OpConfigure's resumed one;
	// Epoch the epoch OpCheckpoint's parts were stored in, or the one
	// OpRollback starts, with Restart saying why.
	Ckpt    *wire.CheckpointRef `msgpack:",omitempty"`
	Epoch   uint64              `msgpack:",omitempty"`
	Restart wire.Restart        `msgpack:",omitempty"`
}

// Encode encodes c for raft.Apply.
func (c *Command) Encode() []byte {
	b, err := msgpack.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("coordinator: encode command %+v: %v", c, err))
	}
	return b
}

// FSM is the raft state machine: Apply decodes a command and changes the
// ControlState; it is deterministic (hashicorp/raft fsm.go: "Apply must be
// deterministic") and does no I/O.
type FSM struct {
	mu  sync.Mutex
	s   ControlState  // guarded by mu
	fin chan struct{} // guarded by mu; closed once Phase is PhaseFinished
}

// Finished is closed once the run's finish is applied.
func (f *FSM) Finished() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finChan()
	return f.fin
}

// finChan creates fin and closes it if the run has finished; precondition:
// mu held.
func (f *FSM) finChan() {
	if f.fin == nil {
		f.fin = make(chan struct{})
	}
	if f.s.Phase == PhaseFinished {
		select {
		case <-f.fin:
		default:
			close(f.fin)
		}
	}
}

var _ raft.FSM = (*FSM)(nil)

// State returns a deep copy of the control state.
func (f *FSM) State() ControlState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return cloneControl(f.s)
}

func cloneControl(s ControlState) ControlState {
	c := s
	c.Config.Part = slices.Clone(s.Config.Part)
	c.Joined = slices.Clone(s.Joined)
	c.Leaders = slices.Clone(s.Leaders)
	c.Checkpoint = cloneRef(s.Checkpoint)
	c.Restore = cloneRef(s.Restore)
	c.Restarts = slices.Clone(s.Restarts)
	return c
}

func cloneRef(r *wire.CheckpointRef) *wire.CheckpointRef {
	if r == nil {
		return nil
	}
	c := *r
	c.Parts = slices.Clone(r.Parts)
	return &c
}

// Apply implements raft.FSM.Apply. It returns nil or an error (the
// future's Response).
func (f *FSM) Apply(l *raft.Log) any {
	var c Command
	if err := msgpack.Unmarshal(l.Data, &c); err != nil {
		return fmt.Errorf("coordinator: log %d: %w", l.Index, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.apply(&c)
	f.finChan()
	return err
}

func (f *FSM) apply(c *Command) error {
	s := &f.s
	switch c.Op {
	case OpConfigure:
		if s.Phase != 0 {
			if !sameConfig(s.Config, c.Config) {
				return fmt.Errorf("coordinator: run already configured with digest %s seed %d P=%d, not %s seed %d P=%d",
					s.Config.Digest, s.Config.Seed, s.Config.P, c.Config.Digest, c.Config.Seed, c.Config.P)
			}
			return nil
		}
		if c.Config.P < 1 || len(c.Config.Part) == 0 {
			return fmt.Errorf("coordinator: configure with P=%d and %d nodes", c.Config.P, len(c.Config.Part))
		}
		s.Config = c.Config
		s.Config.Part = slices.Clone(c.Config.Part)
		s.Joined = make([]bool, c.Config.P)
		s.Phase = PhaseSetup
		if c.Ckpt != nil {
			// A resumed run: its checkpoint is the first committed one.
			if len(c.Ckpt.Parts) != c.Config.P {
				return fmt.Errorf("coordinator: resume from a checkpoint of %d parts, P=%d", len(c.Ckpt.Parts), c.Config.P)
			}
			s.Checkpoint, s.Restore = cloneRef(c.Ckpt), cloneRef(c.Ckpt)
		}
	case OpLead:
		s.Leaders = append(s.Leaders, c.Lead)
	case OpJoin:
		for _, p := range c.Joined {
			if p < 0 || p >= len(s.Joined) {
				return fmt.Errorf("coordinator: join of partition %d of %d", p, len(s.Joined))
			}
		}
		for _, p := range c.Joined {
			s.Joined[p] = true
		}
	case OpMark:
		if s.Phase == 0 {
			return fmt.Errorf("coordinator: mark before configure")
		}
		if s.HasMark && c.Mark.Window <= s.Mark.Window {
			return nil // an older mark committed late
		}
		s.Mark = c.Mark
		s.HasMark = true
		if s.Phase == PhaseSetup {
			s.Phase = PhaseRunning
		}
	case OpFinish:
		s.Phase = PhaseFinished
		s.FinishWindow, s.FinishReason = c.Window, c.Reason
	case OpCheckpoint:
		switch {
		case s.Phase == 0 || c.Ckpt == nil || len(c.Ckpt.Parts) != s.Config.P:
			return fmt.Errorf("coordinator: checkpoint before configure, or without a part for each of %d partitions", s.Config.P)
		case c.Epoch != s.Epoch || s.Checkpoint != nil && c.Ckpt.Window <= s.Checkpoint.Window:
			return nil // stored before a rollback, or older than the last one
		}
		s.Checkpoint = cloneRef(c.Ckpt)
		s.Checkpoints++
	case OpRollback:
		switch {
		case s.Checkpoint == nil:
			return fmt.Errorf("coordinator: rollback without a committed checkpoint")
		case c.Epoch != s.Epoch+1:
			return fmt.Errorf("coordinator: rollback to epoch %d in epoch %d", c.Epoch, s.Epoch)
		case s.Phase == PhaseFinished:
			return fmt.Errorf("coordinator: rollback after the run finished")
		}
		s.Epoch = c.Epoch
		s.Restore = cloneRef(s.Checkpoint)
		s.Restarts = append(s.Restarts, c.Restart)
		// The marks were of the windows rolled back; the next ones start
		// over from the checkpoint.
		s.Mark, s.HasMark = Mark{}, false
	default:
		return fmt.Errorf("coordinator: unknown op %d", c.Op)
	}
	return nil
}

func sameConfig(a, b RunConfig) bool {
	return a.Digest == b.Digest && a.Seed == b.Seed && a.P == b.P && slices.Equal(a.Part, b.Part) &&
		a.Lookahead == b.Lookahead && a.StopAt == b.StopAt && a.Deadlock == b.Deadlock && a.DeadlockEvery == b.DeadlockEvery
}

// Snapshot implements raft.FSM.Snapshot.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &snapshot{s: f.State()}, nil
}

// Restore implements raft.FSM.Restore.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var s ControlState
	if err := msgpack.NewDecoder(rc).Decode(&s); err != nil {
		return fmt.Errorf("coordinator: restore: %w", err)
	}
	f.mu.Lock()
	f.s = s
	f.finChan()
	f.mu.Unlock()
	return nil
}

type snapshot struct{ s ControlState }

// Persist implements raft.FSMSnapshot.Persist.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	data, err := msgpack.Marshal(&s.s)
	if err == nil {
		_, err = sink.Write(data)
	}
	if err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.Release.
func (s *snapshot) Release() {}
