package node

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// NewSetup bundles a built scenario and its placement for the nodes: it
// reads the scenario file b.File again, with every file it refers to, and
// checks that they still give b.Digest.
func NewSetup(b *scenario.Built, pl *partition.Placement) (*wire.Setup, error) {
	data, err := os.ReadFile(b.File)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read scenario: %w", b.File, err)
	}
	rec := &recordFS{fsys: scenario.Dir(filepath.Dir(b.File)), files: map[string][]byte{}}
	s, err := scenario.Parse(b.File, data)
	if err != nil {
		return nil, err
	}
	seed := b.Seed
	s.Seed = &seed
	again, err := scenario.Build(b.File, data, s, rec)
	if err != nil {
		return nil, err
	}
	if again.Digest != b.Digest {
		return nil, fmt.Errorf("%s: the scenario or a file it reads changed while the run was starting", b.File)
	}
	return &wire.Setup{File: b.File, Data: data, Files: rec.files, Seed: &seed, Digest: b.Digest, P: pl.P,
		Part: slices.Clone(pl.Part), Lookahead: int64(pl.Lookahead), StopAt: int64(Limit(b))}, nil
}

// FromSetup rebuilds the scenario and the placement a Setup describes and
// checks them against its digest and lookahead.
func FromSetup(su *wire.Setup) (*scenario.Built, *partition.Placement, error) {
	s, err := scenario.Parse(su.File, su.Data)
	if err != nil {
		return nil, nil, err
	}
	if su.Seed != nil {
		s.Seed = su.Seed
	}
	b, err := scenario.Build(su.File, su.Data, s, memFS(su.Files))
	if err != nil {
		return nil, nil, err
	}
	if b.Digest != su.Digest {
		return nil, nil, fmt.Errorf("node: scenario %s has digest %s here, %s at the coordinator", su.File, b.Digest, su.Digest)
	}
	pl, err := partition.Make(b.Topo, b.Fabric.Impairments, su.Part)
	if err != nil {
		return nil, nil, err
	}
	if pl.P != su.P || int64(pl.Lookahead) != su.Lookahead || int64(Limit(b)) != su.StopAt {
		return nil, nil, fmt.Errorf("node: placement gives P=%d, lookahead %v, stop %v here; the coordinator says P=%d, %v, %v",
			pl.P, pl.Lookahead, Limit(b), su.P, sim.Time(su.Lookahead), sim.Time(su.StopAt))
	}
	return b, pl, nil
}

// recordFS reads through fsys and keeps a copy of every file read.
type recordFS struct {
	fsys  fs.FS
	files map[string][]byte
}

func (r *recordFS) Open(name string) (fs.File, error) {
	data, err := r.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &memFile{name: name, Reader: bytes.NewReader(data), size: int64(len(data))}, nil
}

// ReadFile implements fs.ReadFileFS.
func (r *recordFS) ReadFile(name string) ([]byte, error) {
	data, err := fs.ReadFile(r.fsys, name)
	if err != nil {
		return nil, err
	}
	r.files[name] = bytes.Clone(data)
	return data, nil
}

// memFS serves files by name from memory.
type memFS map[string][]byte

func (m memFS) Open(name string) (fs.File, error) {
	data, err := m.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &memFile{name: name, Reader: bytes.NewReader(data), size: int64(len(data))}, nil
}

// ReadFile implements fs.ReadFileFS.
func (m memFS) ReadFile(name string) ([]byte, error) {
	data, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return bytes.Clone(data), nil
}

type memFile struct {
	name string
	*bytes.Reader
	size int64
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f, nil }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Name() string               { return filepath.Base(f.name) }
func (f *memFile) Size() int64                { return f.size }
func (f *memFile) Mode() fs.FileMode          { return 0o444 }
func (f *memFile) ModTime() time.Time         { return time.Time{} }
func (f *memFile) IsDir() bool                { return false }
func (f *memFile) Sys() any                   { return nil }

var (
	_ fs.ReadFileFS = memFS(nil)
	_ fs.ReadFileFS = (*recordFS)(nil)
	_ io.Reader     = (*memFile)(nil)
)
