package checkpoint

import (
	"bytes"
	"fmt"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/lockstep-sim/lockstep/internal/snapshot"
	"github.com/lockstep-sim/lockstep/internal/version"
)

// Section names of a state file.
const (
	SectionTypes = "types" // internal/snapshot's type table
	SectionGraph = "graph" // internal/snapshot's graph
)

// Writer encodes a run's state at boundaries and saves it in its Store.
// It keeps the snapshot codec (its type plans and the anchors' regions)
// from one checkpoint to the next. Not safe for concurrent use.
type Writer struct {
	Store Store
	codec *snapshot.Codec
	// Count, Bytes and Seconds sum the checkpoints written: checkpoints,
	// their files' bytes, and the wall time taken, of which EncodeSeconds is the
	// encoding's (the rest writes and syncs the files).
	Count         int
	Bytes         int64
	Seconds       float64
	EncodeSeconds float64
	// Last is the directory of the last checkpoint written.
	Last string
	zbuf []byte // the compressed graph (reused)
}

// NewWriter writes checkpoints into dir, keeping the last keep.
func NewWriter(dir string, keep int) *Writer {
	return &Writer{Store: Store{Dir: dir, Keep: keep}, codec: snapshot.NewCodec()}
}

// Of says what a checkpoint is of.
type Of struct {
	Seq        uint64
	Window     uint64
	Time       int64 // virtual ps
	Digest     string
	Partitions int
}

// State is one file of a checkpoint: a partition's graph (or every
// partition's, Partition -1).
type State struct {
	Name      string
	Partition int
	Roots     []any
	Anchors   []any
}

// Encode returns the checkpoint file of one state.
func (w *Writer) Encode(of Of, st State) ([]byte, error) {
	s, err := w.codec.Encode(st.Roots, st.Anchors)
	if err != nil {
		return nil, err
	}
	types := s2.Encode(nil, s.Types)
	w.zbuf = s2.Encode(w.zbuf[:cap(w.zbuf)], s.Graph)
	var buf bytes.Buffer
	buf.Grow(len(types) + len(w.zbuf) + 4096)
	h := Header{Build: version.Get().Version, Digest: of.Digest, Partition: st.Partition, Partitions: of.Partitions,
		Window: of.Window, Time: of.Time, Compression: CompressionS2}
	if err := Write(&buf, h, []Named{{SectionTypes, types}, {SectionGraph, w.zbuf}}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Save encodes the states and saves them as checkpoint of.Seq.
func (w *Writer) Save(of Of, states ...State) error {
	t0 := time.Now()
	m := Manifest{Seq: of.Seq, Window: of.Window, TimePS: of.Time, Digest: of.Digest, Partitions: of.Partitions}
	files := make([][]byte, 0, len(states))
	for _, st := range states {
		data, err := w.Encode(of, st)
		if err != nil {
			return fmt.Errorf("checkpoint at virtual %d ps: %w", of.Time, err)
		}
		m.Files = append(m.Files, NewPart(st.Name, data))
		files = append(files, data)
		w.Bytes += int64(len(data))
	}
	w.EncodeSeconds += time.Since(t0).Seconds()
	dir, err := w.Store.Save(m, files)
	if err != nil {
		return fmt.Errorf("checkpoint at virtual %d ps: %w", of.Time, err)
	}
	w.Count++
	w.Last = dir
	w.Seconds += time.Since(t0).Seconds()
	return nil
}

// Restore decodes checkpoint file data (called name in errors) into the
// graph of roots, which a fresh build of the scenario with digest made.
// register names concrete types the state may hold in interfaces that a
// fresh build lacks (snapshot.Codec.Register).
func Restore(name string, data []byte, digest string, partition int, roots, anchors, register []any) (*Header, error) {
	f, err := Decode(name, data)
	if err != nil {
		return nil, err
	}
	if f.Digest != digest {
		return nil, fmt.Errorf("%s: a checkpoint of scenario %s, not of %s", name, short(f.Digest), short(digest))
	}
	if f.Partition != partition {
		return nil, fmt.Errorf("%s: a checkpoint of partition %d, not %d", name, f.Partition, partition)
	}
	types, err := f.Section(SectionTypes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	graph, err := f.Section(SectionGraph)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := snapshot.NewCodec()
	c.Register(register...)
	if err := c.Decode(&snapshot.Snapshot{Types: types, Graph: graph}, roots, anchors); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &f.Header, nil
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
