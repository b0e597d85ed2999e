package checkpoint

import (
	"bytes"
	"fmt"
	"runtime/debug"
	"sync"
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
// from one checkpoint to the next. Save encodes while the run is stopped
// and leaves compressing, writing and syncing the files to a goroutine of
// its own, so the run goes on meanwhile; Wait waits for it. Not safe for
// concurrent use.
type Writer struct {
	Store Store
	codec *snapshot.Codec
	// Count, Bytes and Seconds sum the checkpoints written: checkpoints,
	// their files' bytes, and the wall time the run was stopped for them,
	// of which EncodeSeconds is the encoding's (the rest is waiting for
	// the write of the checkpoint before). WriteSeconds is the time the
	// background writes took (compressing, writing, syncing the files),
	// while the run went on. Read them after Wait.
	Count         int
	Bytes         int64
	Seconds       float64
	EncodeSeconds float64
	WriteSeconds  float64
	// Last is the directory of the last checkpoint written.
	Last    string
	zbuf    []byte     // the compressed graph (reused)
	pending chan error // the background write going on, nil when none
	failed  error      // the first background write that failed
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

// Encode returns the checkpoint file of one state. It waits for a
// background write first (it reuses the buffers that write reads).
func (w *Writer) Encode(of Of, st State) ([]byte, error) {
	w.wait()
	s, err := w.encode(st)
	if err != nil {
		return nil, err
	}
	return w.file(of, st.Partition, s)
}

// encode encodes a state with the collector off: the run is stopped, the
// encoding allocates its scratch (a few hundred MB at 10^4 hosts, most
// of it let go at the end), and a collection meanwhile would mark the
// whole simulation and that scratch, at a cost greater than the
// encoding's (three collections at k=32 before this), to free nothing.
// In-memory partitions encode at once, each with its own Writer: the
// collector is off while any of them encodes (gcOff).
func (w *Writer) encode(st State) (*snapshot.Snapshot, error) {
	gcOff.acquire()
	defer gcOff.release()
	return w.codec.Encode(st.Roots, st.Anchors)
}

// gcOff turns the collector off for the first of concurrent encodes and
// back to what it was after the last (a plain save and restore around
// each would leave it off when two overlap: the second saves "off").
var gcOff gcSwitch

type gcSwitch struct {
	mu      sync.Mutex
	n       int
	percent int
}

func (g *gcSwitch) acquire() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		g.percent = debug.SetGCPercent(-1)
	}
	g.n++
}

func (g *gcSwitch) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 {
		debug.SetGCPercent(g.percent)
	}
}

// file compresses an encoded state into a checkpoint file.
func (w *Writer) file(of Of, partition int, s *snapshot.Snapshot) ([]byte, error) {
	types := s2.Encode(nil, s.Types)
	w.zbuf = s2.Encode(w.zbuf[:cap(w.zbuf)], s.Graph)
	var buf bytes.Buffer
	buf.Grow(len(types) + len(w.zbuf) + 4096)
	h := Header{Build: version.Get().Version, Digest: of.Digest, Partition: partition, Partitions: of.Partitions,
		Window: of.Window, Time: of.Time, Compression: CompressionS2}
	if err := Write(&buf, h, []Named{{SectionTypes, types}, {SectionGraph, w.zbuf}}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Save encodes the states, which must not change until it returns, and
// starts saving them as checkpoint of.Seq: a goroutine compresses the
// files, writes and syncs them and the manifest, and renames the
// checkpoint into place (Store.Save), so a checkpoint is listed only once
// all of it is durable, and a crash meanwhile leaves the one before. It
// first waits for the checkpoint before to be written; a write that
// failed fails this Save (or Wait).
func (w *Writer) Save(of Of, states ...State) error {
	t0 := time.Now()
	if err := w.wait(); err != nil {
		return err
	}
	te := time.Now()
	snaps := make([]*snapshot.Snapshot, len(states))
	for i, st := range states {
		s, err := w.encode(st)
		if err != nil {
			return fmt.Errorf("checkpoint at virtual %d ps: %w", of.Time, err)
		}
		if i < len(states)-1 {
			// The codec's buffer is the next Encode's.
			s.Graph = bytes.Clone(s.Graph)
		}
		snaps[i] = s
	}
	w.EncodeSeconds += time.Since(te).Seconds()
	parts := make([]State, len(states))
	for i, st := range states {
		parts[i] = State{Name: st.Name, Partition: st.Partition}
	}
	done := make(chan error, 1)
	w.pending = done
	go func() { done <- w.write(of, parts, snaps) }()
	w.Seconds += time.Since(t0).Seconds()
	return nil
}

// write is Save's background part.
func (w *Writer) write(of Of, parts []State, snaps []*snapshot.Snapshot) error {
	t0 := time.Now()
	m := Manifest{Seq: of.Seq, Window: of.Window, TimePS: of.Time, Digest: of.Digest, Partitions: of.Partitions}
	files := make([][]byte, 0, len(parts))
	var n int64
	for i, st := range parts {
		data, err := w.file(of, st.Partition, snaps[i])
		if err != nil {
			return fmt.Errorf("checkpoint at virtual %d ps: %w", of.Time, err)
		}
		m.Files = append(m.Files, NewPart(st.Name, data))
		files = append(files, data)
		n += int64(len(data))
	}
	dir, err := w.Store.Save(m, files)
	if err != nil {
		return fmt.Errorf("checkpoint at virtual %d ps: %w", of.Time, err)
	}
	w.Count++
	w.Bytes += n
	w.Last = dir
	w.WriteSeconds += time.Since(t0).Seconds()
	return nil
}

// Wait waits for the checkpoint Save is writing, if any, and returns the
// error of the first write that failed. The counters and Last are the
// checkpoints written once it returns.
func (w *Writer) Wait() error {
	t0 := time.Now()
	pending := w.pending != nil
	err := w.wait()
	if pending {
		w.Seconds += time.Since(t0).Seconds()
	}
	return err
}

func (w *Writer) wait() error {
	if w.pending != nil {
		if err := <-w.pending; err != nil && w.failed == nil {
			w.failed = err
		}
		w.pending = nil
	}
	return w.failed
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
