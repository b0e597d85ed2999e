package coordinator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/lockstep-sim/lockstep/internal/wire"
)

func applyCmd(t *testing.T, f *FSM, index uint64, c Command) error {
	t.Helper()
	r := f.Apply(&raft.Log{Index: index, Data: c.Encode()})
	if r == nil {
		return nil
	}
	err, ok := r.(error)
	if !ok {
		t.Fatalf("Apply returned %T, want nil or error", r)
	}
	return err
}

var testRun = RunConfig{Digest: "abc", Seed: 7, P: 2, Part: []int{0, 0, 1, 1}, Lookahead: 1000, StopAt: 5000}

// docs/design.md §3: raft replicates "scenario digest, seed, partition map,
// membership, run phase ... periodic progress marks".
func TestFSM_Design3_ControlStateLifecycle(t *testing.T) {
	f := &FSM{}
	if err := applyCmd(t, f, 1, Command{Op: OpMark, Mark: Mark{Window: 1}}); err == nil {
		t.Errorf("mark before configure: no error")
	}
	if err := applyCmd(t, f, 2, Command{Op: OpConfigure, Config: testRun}); err != nil {
		t.Fatalf("configure: %v", err)
	}
	other := testRun
	other.Seed = 8
	if err := applyCmd(t, f, 3, Command{Op: OpConfigure, Config: other}); err == nil || !strings.Contains(err.Error(), "already configured") {
		t.Errorf("configure with another seed: err = %v, want a refusal", err)
	}
	if err := applyCmd(t, f, 4, Command{Op: OpConfigure, Config: testRun}); err != nil {
		t.Errorf("configure again with the same run (a new leader): %v", err)
	}
	_ = applyCmd(t, f, 5, Command{Op: OpLead, Lead: LeaderTerm{ID: "c1", Term: 2}})
	_ = applyCmd(t, f, 6, Command{Op: OpJoin, Joined: []int{1}})
	if err := applyCmd(t, f, 7, Command{Op: OpJoin, Joined: []int{0, 2}}); err == nil {
		t.Errorf("join of partition 2 of 2: no error")
	}
	_ = applyCmd(t, f, 8, Command{Op: OpMark, Mark: Mark{Window: 10, Start: 1}})
	_ = applyCmd(t, f, 9, Command{Op: OpMark, Mark: Mark{Window: 5, Start: 2}}) // late, older
	st := f.State()
	if st.Phase != PhaseRunning || st.Mark.Window != 10 || st.Mark.Start != 1 {
		t.Errorf("after marks 10 then 5: phase %v mark %d start %d; want running, 10, 1", st.Phase, st.Mark.Window, st.Mark.Start)
	}
	if !reflect.DeepEqual(st.Joined, []bool{false, true}) || len(st.Leaders) != 1 {
		t.Errorf("joined %v leaders %v; want [false true] and one leader", st.Joined, st.Leaders)
	}
	_ = applyCmd(t, f, 10, Command{Op: OpFinish, Window: 11, Reason: 1})
	if st := f.State(); st.Phase != PhaseFinished || st.FinishWindow != 11 {
		t.Errorf("after finish: phase %v window %d; want finished, 11", st.Phase, st.FinishWindow)
	}
	// State returns a copy.
	st = f.State()
	st.Config.Part[0] = 9
	if f.State().Config.Part[0] != 0 {
		t.Errorf("State shares the partition map with the FSM")
	}
}

type sink struct {
	bytes.Buffer
	cancelled bool
}

func (s *sink) ID() string    { return "test" }
func (s *sink) Cancel() error { s.cancelled = true; return nil }
func (s *sink) Close() error  { return nil }

func TestFSM_SnapshotRestoreRoundTrip(t *testing.T) {
	f := &FSM{}
	_ = applyCmd(t, f, 1, Command{Op: OpConfigure, Config: testRun})
	_ = applyCmd(t, f, 2, Command{Op: OpMark, Mark: Mark{Window: 3, Start: 77, Term: 2}})
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var s sink
	if err := snap.Persist(&s); err != nil {
		t.Fatal(err)
	}
	g := &FSM{}
	if err := g.Restore(io.NopCloser(&s)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.State(), g.State()) {
		t.Errorf("restored state\n %+v\nwant\n %+v", g.State(), f.State())
	}
}

func TestBoltStore_LogAndStableStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := OpenBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if i, _ := s.LastIndex(); i != 0 {
		t.Errorf("empty store: last index %d, want 0", i)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 5; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 3 || last != 5 {
		t.Errorf("after deleting 1..2: first %d last %d, want 3 and 5", first, last)
	}
	var l raft.Log
	if err := s.GetLog(1, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Errorf("GetLog(1) after delete: %v, want ErrLogNotFound", err)
	}
	if _, err := s.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Errorf("missing key: err %v, want \"not found\" (raft compares the text)", err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 9); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.GetLog(4, &l); err != nil || l.Index != 4 || l.Term != 1 || !bytes.Equal(l.Data, []byte{4}) {
		t.Errorf("reopened GetLog(4) = %+v, %v", l, err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 9 {
		t.Errorf("reopened CurrentTerm = %d, %v; want 9", v, err)
	}
}

// Distributed checkpoints (docs/decisions.md): a checkpoint commits only
// with a part per partition and in the current epoch, newer than the last;
// a rollback needs a committed checkpoint, starts the next epoch, records
// the restart, makes the checkpoint the one new nodes restore and clears
// the marks; checkpoints stored before it are then ignored; a resumed run
// starts with its checkpoint committed. The state survives a snapshot.
func TestFSM_CheckpointsAndRollbacks(t *testing.T) {
	ref := func(w uint64, parts int) *wire.CheckpointRef {
		r := &wire.CheckpointRef{Window: w, TimePS: int64(w) * 1000}
		for i := range parts {
			r.Parts = append(r.Parts, wire.CheckpointPart{Name: fmt.Sprintf("part-%d.ckpt", i), Bytes: 10, SHA256: "x"})
		}
		return r
	}
	f := &FSM{}
	if err := applyCmd(t, f, 1, Command{Op: OpConfigure, Config: testRun}); err != nil {
		t.Fatal(err)
	}
	if err := applyCmd(t, f, 2, Command{Op: OpRollback, Epoch: 1}); err == nil {
		t.Errorf("rollback without a checkpoint: no error")
	}
	if err := applyCmd(t, f, 3, Command{Op: OpCheckpoint, Ckpt: ref(100, 1)}); err == nil {
		t.Errorf("checkpoint with 1 part of 2: no error")
	}
	_ = applyCmd(t, f, 4, Command{Op: OpMark, Mark: Mark{Window: 256}})
	_ = applyCmd(t, f, 5, Command{Op: OpCheckpoint, Ckpt: ref(100, 2)})
	_ = applyCmd(t, f, 6, Command{Op: OpCheckpoint, Ckpt: ref(50, 2)}) // late, older
	if st := f.State(); st.Checkpoint == nil || st.Checkpoint.Window != 100 || st.Checkpoints != 1 {
		t.Fatalf("after checkpoints 100 then 50: %+v, %d committed; want 100, 1", st.Checkpoint, st.Checkpoints)
	}
	if err := applyCmd(t, f, 7, Command{Op: OpRollback, Epoch: 2}); err == nil {
		t.Errorf("rollback to epoch 2 from 0: no error")
	}
	r := wire.Restart{Epoch: 1, Partition: 1, LostAt: 130, FromWindow: 100}
	if err := applyCmd(t, f, 8, Command{Op: OpRollback, Epoch: 1, Restart: r}); err != nil {
		t.Fatal(err)
	}
	_ = applyCmd(t, f, 9, Command{Op: OpCheckpoint, Ckpt: ref(200, 2), Epoch: 0}) // stored before the rollback
	st := f.State()
	if st.Epoch != 1 || st.Checkpoint.Window != 100 || st.Restore == nil || st.Restore.Window != 100 ||
		!reflect.DeepEqual(st.Restarts, []wire.Restart{r}) || st.HasMark {
		t.Fatalf("after the rollback: epoch %d checkpoint %+v restore %+v restarts %v mark %v", st.Epoch, st.Checkpoint, st.Restore, st.Restarts, st.HasMark)
	}
	_ = applyCmd(t, f, 10, Command{Op: OpCheckpoint, Ckpt: ref(150, 2), Epoch: 1})
	if st := f.State(); st.Checkpoint.Window != 150 || st.Restore.Window != 100 {
		t.Errorf("a checkpoint in epoch 1: checkpoint %d restore %d; want 150, 100", st.Checkpoint.Window, st.Restore.Window)
	}
	snap, _ := f.Snapshot()
	var sk sink
	if err := snap.Persist(&sk); err != nil {
		t.Fatal(err)
	}
	g := &FSM{}
	if err := g.Restore(io.NopCloser(&sk)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g.State(), f.State()) {
		t.Errorf("restored from a snapshot: %+v, want %+v", g.State(), f.State())
	}
	_ = applyCmd(t, f, 11, Command{Op: OpFinish})
	if err := applyCmd(t, f, 12, Command{Op: OpRollback, Epoch: 2}); err == nil {
		t.Errorf("rollback after the finish: no error")
	}
	resumed := &FSM{}
	if err := applyCmd(t, resumed, 1, Command{Op: OpConfigure, Config: testRun, Ckpt: ref(300, 2)}); err != nil {
		t.Fatal(err)
	}
	if st := resumed.State(); st.Checkpoint == nil || st.Restore == nil || st.Restore.Window != 300 {
		t.Errorf("resumed: checkpoint %+v restore %+v; want window 300", st.Checkpoint, st.Restore)
	}
}
