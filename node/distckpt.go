package node

import (
	"context"
	"fmt"

	"github.com/lockstep-sim/lockstep/internal/checkpoint"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/sim"
)

// PartStore keeps the parts of a distributed run's checkpoints
// (docs/decisions.md, "Distributed checkpoints"): every node puts its own
// at each checkpoint and gets it back after a rollback or on resume.
type PartStore interface {
	// Put stores partition part's file data of the checkpoint at window.
	Put(ctx context.Context, window uint64, part int, data []byte) error
	// Get returns partition part's file of checkpoint ref, checked
	// against ref (size, header digest) and itself (sections): a part
	// that fails is refused with one line naming it.
	Get(ctx context.Context, ref *wire.CheckpointRef, part int) ([]byte, error)
	// Where names partition part's file of the checkpoint at window, for
	// errors.
	Where(window uint64, part int) string
}

// PartName is partition i's file name in a checkpoint of a distributed
// run.
func PartName(i int) string { return fmt.Sprintf("part-%d.ckpt", i) }

// DirStore keeps the parts in a directory every node shares (a run on one
// machine, or a shared volume): Dir/ckpt-<window>/part-<i>.ckpt, with the
// manifest (checkpoint.Manifest) written by the launcher once the leader
// committed the checkpoint, so that `lockstep resume` reads it as any
// other checkpoint directory.
type DirStore struct{ Store checkpoint.Store }

// Put implements PartStore.
func (d *DirStore) Put(_ context.Context, window uint64, part int, data []byte) error {
	_, err := d.Store.PutPart(window, PartName(part), data)
	return err
}

// Get implements PartStore.
func (d *DirStore) Get(_ context.Context, ref *wire.CheckpointRef, part int) ([]byte, error) {
	if part < 0 || part >= len(ref.Parts) {
		return nil, fmt.Errorf("checkpoint of window %d has %d parts, no part %d", ref.Window, len(ref.Parts), part)
	}
	return d.Store.ReadPart(ref.Window, FilePart(ref.Parts[part]))
}

// Where implements PartStore.
func (d *DirStore) Where(window uint64, part int) string {
	return d.Store.Dir + "/" + checkpoint.DirName(window) + "/" + PartName(part)
}

// FilePart is p as a manifest lists it.
func FilePart(p wire.CheckpointPart) checkpoint.Part {
	return checkpoint.Part{Name: p.Name, Bytes: p.Bytes, SHA256: p.SHA256}
}

// WirePart is p as a checkpoint reference carries it.
func WirePart(p checkpoint.Part) wire.CheckpointPart {
	return wire.CheckpointPart{Name: p.Name, Bytes: p.Bytes, SHA256: p.SHA256}
}

// Manifest is the manifest of checkpoint ref of a run of scenario digest
// in p partitions.
func Manifest(ref *wire.CheckpointRef, digest string, p int) checkpoint.Manifest {
	m := checkpoint.Manifest{Seq: ref.Window, Window: ref.Window, TimePS: ref.TimePS, Digest: digest, Partitions: p}
	for _, pt := range ref.Parts {
		m.Files = append(m.Files, FilePart(pt))
	}
	return m
}

// RefOf is the reference of a loaded checkpoint (lockstep resume).
func RefOf(m *checkpoint.Manifest) *wire.CheckpointRef {
	ref := &wire.CheckpointRef{Window: m.Window, TimePS: m.TimePS}
	for _, p := range m.Files {
		ref.Parts = append(ref.Parts, WirePart(p))
	}
	return ref
}

// Roots are the core's state for a checkpoint of its partition: the core
// itself (its fabric, recorder, follower, replica of the barrier, inbox
// and sent batches) reaches all of it.
func (c *Core) Roots() []any { return []any{c} }

// Anchors are what the core's state refers to and a fresh build
// recreates.
func (c *Core) Anchors() []any { return c.F.SnapshotAnchors() }

// End is the end of the last window the core ran (0 before any): the
// virtual time of the boundary it is at between windows.
func (c *Core) End() sim.Time { return c.end }

// EncodeCheckpoint encodes the core's state at the boundary after window
// (its part of a distributed checkpoint) with w's codec.
func (c *Core) EncodeCheckpoint(w *checkpoint.Writer, digest string) ([]byte, error) {
	if c.F.HasExternal() {
		return nil, fmt.Errorf("a partition with external elements cannot checkpoint: their state is theirs")
	}
	win, _ := c.Window()
	return w.Encode(checkpoint.Of{Seq: win, Window: win, Time: int64(c.end), Digest: digest, Partitions: c.p},
		checkpoint.State{Name: PartName(c.part), Partition: c.part, Roots: c.Roots(), Anchors: c.Anchors()})
}

// RestoreCheckpoint restores the core, freshly built and set up, from its
// part data (called name in errors) of a checkpoint of scenario digest.
func (c *Core) RestoreCheckpoint(name string, data []byte, digest string) (*checkpoint.Header, error) {
	h, err := checkpoint.Restore(name, data, digest, c.part, c.Roots(), c.Anchors(), nil)
	if err != nil {
		return nil, err
	}
	if h.Partitions != c.p {
		return nil, fmt.Errorf("%s: a checkpoint of %d partitions, the run has %d", name, h.Partitions, c.p)
	}
	return h, nil
}

// nextCheckpoint is the first multiple of every after t (sim.Never
// without checkpoints).
func nextCheckpoint(t, every sim.Time) sim.Time {
	if every <= 0 {
		return sim.Never
	}
	return (t/every + 1) * every
}
