package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ManifestName is the manifest's file name in a checkpoint directory.
const ManifestName = "manifest.json"

// Manifest lists a checkpoint's files with their digests. A checkpoint
// directory is valid when its manifest and every file it lists are.
type Manifest struct {
	Format int `json:"format"`
	// Seq orders a run's checkpoints (the window for a partitioned run, a
	// count for a run in one partition); the directory is ckpt-<Seq>.
	Seq        uint64 `json:"seq"`
	Window     uint64 `json:"window"`
	TimePS     int64  `json:"time_ps"`
	Digest     string `json:"digest"`
	Partitions int    `json:"partitions"`
	Files      []Part `json:"files"`
}

// Part is one file of a checkpoint: a checkpoint file (file.go), its
// size and the SHA-256 of its header (which holds every section's).
type Part struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"header_sha256"`
}

// NewPart describes checkpoint file data stored as name.
func NewPart(name string, data []byte) Part {
	return Part{Name: name, Bytes: int64(len(data)), SHA256: HeaderDigest(data)}
}

// Store keeps a run's checkpoints in Dir: ckpt-<seq> directories, the
// last Keep of them (at least 1).
type Store struct {
	Dir  string
	Keep int
}

// dirName is checkpoint seq's directory name.
func dirName(seq uint64) string { return fmt.Sprintf("ckpt-%012d", seq) }

// Save writes a checkpoint: its files (name to bytes, in m.Files order)
// and the manifest, into a temporary directory that is then renamed to
// ckpt-<m.Seq>, every file synced; then it removes all but the last Keep.
// It returns the checkpoint's directory.
func (s *Store) Save(m Manifest, files [][]byte) (string, error) {
	if len(files) != len(m.Files) {
		return "", fmt.Errorf("checkpoint: %d files for a manifest of %d", len(files), len(m.Files))
	}
	m.Format = Format
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(s.Dir, ".tmp-"+dirName(m.Seq)+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // a no-op after the rename
	for i, data := range files {
		if err := writeSynced(filepath.Join(tmp, m.Files[i].Name), data); err != nil {
			return "", err
		}
	}
	mb, err := json.MarshalIndent(&m, "", " ")
	if err != nil {
		return "", err
	}
	if err := writeSynced(filepath.Join(tmp, ManifestName), append(mb, '\n')); err != nil {
		return "", err
	}
	if err := syncDir(tmp); err != nil {
		return "", err
	}
	final := filepath.Join(s.Dir, dirName(m.Seq))
	if err := os.RemoveAll(final); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	if err := syncDir(s.Dir); err != nil {
		return "", err
	}
	return final, s.prune()
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// seqs lists the checkpoints in Dir, oldest first.
func (s *Store) seqs() ([]uint64, error) {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "ckpt-")
		if !ok || !e.IsDir() {
			continue
		}
		if v, err := strconv.ParseUint(n, 10, 64); err == nil {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (s *Store) prune() error {
	seqs, err := s.seqs()
	if err != nil {
		return err
	}
	keep := max(s.Keep, 1)
	for len(seqs) > keep {
		if err := os.RemoveAll(filepath.Join(s.Dir, dirName(seqs[0]))); err != nil {
			return err
		}
		seqs = seqs[1:]
	}
	return nil
}

// Loaded is a checkpoint read and checked: its manifest and its files'
// bytes (in manifest order).
type Loaded struct {
	Dir      string
	Manifest Manifest
	Files    [][]byte
}

// ErrNone says a store holds no checkpoint that passes its checks.
var ErrNone = errors.New("checkpoint: none usable")

// Latest returns the newest checkpoint whose manifest and files pass every
// check, and one line for each newer one it refused (naming the file and
// what failed). With none usable the error wraps ErrNone and says why
// each was refused.
func (s *Store) Latest() (*Loaded, []string, error) {
	seqs, err := s.seqs()
	if err != nil {
		return nil, nil, fmt.Errorf("%w in %s: %v", ErrNone, s.Dir, err)
	}
	var refused []string
	for i := len(seqs) - 1; i >= 0; i-- {
		l, err := Load(filepath.Join(s.Dir, dirName(seqs[i])))
		if err != nil {
			refused = append(refused, err.Error())
			continue
		}
		return l, refused, nil
	}
	if len(refused) == 0 {
		return nil, nil, fmt.Errorf("%w: no checkpoint in %s", ErrNone, s.Dir)
	}
	return nil, refused, fmt.Errorf("%w in %s: %s", ErrNone, s.Dir, strings.Join(refused, "; "))
}

// Load reads and checks the checkpoint in dir: the manifest, and each
// file's size, header digest and sections (Decode).
func Load(dir string) (*Loaded, error) {
	mp := filepath.Join(dir, ManifestName)
	mb, err := os.ReadFile(mp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s: no manifest: the checkpoint is incomplete (never committed)", ErrCorrupt, mp)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, mp, unwrapPath(err))
	}
	l := &Loaded{Dir: dir}
	dec := json.NewDecoder(bytes.NewReader(mb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l.Manifest); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, mp, err)
	}
	if l.Manifest.Format != Format {
		return nil, fmt.Errorf("%w: %s: format %d, this build reads %d", ErrCorrupt, mp, l.Manifest.Format, Format)
	}
	for _, p := range l.Manifest.Files {
		if p.Name != filepath.Base(p.Name) || p.Name == ManifestName {
			return nil, fmt.Errorf("%w: %s: file name %q", ErrCorrupt, mp, p.Name)
		}
		fp := filepath.Join(dir, p.Name)
		data, err := os.ReadFile(fp)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, fp, unwrapPath(err))
		}
		if int64(len(data)) != p.Bytes {
			return nil, fmt.Errorf("%w: %s: %d bytes, the manifest says %d (truncated)", ErrCorrupt, fp, len(data), p.Bytes)
		}
		if got := HeaderDigest(data); got != p.SHA256 {
			return nil, fmt.Errorf("%w: %s: header SHA-256 differs from the manifest's (the file is corrupted)", ErrCorrupt, fp)
		}
		if _, err := Decode(fp, data); err != nil {
			return nil, err
		}
		l.Files = append(l.Files, data)
	}
	return l, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// DirName is checkpoint seq's directory name in a store.
func DirName(seq uint64) string { return dirName(seq) }

// PutPart writes one file of checkpoint seq into its directory (created if
// need be), atomically: a temporary file, synced, renamed into place, and
// the directory synced. The nodes of a distributed run each put their part
// this way; Commit writes the manifest once every part is in.
func (s *Store) PutPart(seq uint64, name string, data []byte) (string, error) {
	if name != filepath.Base(name) || name == ManifestName || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("checkpoint: file name %q", name)
	}
	dir := filepath.Join(s.Dir, dirName(seq))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".tmp-"+name+"-")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return path, syncDir(dir)
}

// ReadPart reads file want of checkpoint seq and checks it against want
// (size, header digest) and itself (every section's digest): a part that
// fails is refused with one line naming the file.
func (s *Store) ReadPart(seq uint64, want Part) ([]byte, error) {
	if want.Name != filepath.Base(want.Name) || want.Name == ManifestName {
		return nil, fmt.Errorf("%w: file name %q", ErrCorrupt, want.Name)
	}
	fp := filepath.Join(s.Dir, dirName(seq), want.Name)
	data, err := os.ReadFile(fp)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, fp, unwrapPath(err))
	}
	if err := CheckPart(fp, data, want); err != nil {
		return nil, err
	}
	return data, nil
}

// CheckPart checks file data (called name in errors) against want: its
// size, its header digest and every section's digest.
func CheckPart(name string, data []byte, want Part) error {
	if int64(len(data)) != want.Bytes {
		return fmt.Errorf("%w: %s: %d bytes, the manifest says %d (truncated)", ErrCorrupt, name, len(data), want.Bytes)
	}
	if got := HeaderDigest(data); got != want.SHA256 {
		return fmt.Errorf("%w: %s: header SHA-256 differs from the manifest's (the file is corrupted)", ErrCorrupt, name)
	}
	_, err := Decode(name, data)
	return err
}

// Commit writes the manifest of checkpoint m.Seq, whose files its nodes
// put (PutPart), atomically; from then on Load and Latest see the
// checkpoint. Then it removes every checkpoint older than the Keep newest
// committed ones (a checkpoint still being written, newer than every
// committed one, stays).
func (s *Store) Commit(m Manifest) (string, error) {
	m.Format = Format
	dir := filepath.Join(s.Dir, dirName(m.Seq))
	mb, err := json.MarshalIndent(&m, "", " ")
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".tmp-"+ManifestName+"-")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(append(mb, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, filepath.Join(dir, ManifestName)); err != nil {
		return "", err
	}
	if err := syncDir(dir); err != nil {
		return "", err
	}
	return dir, s.pruneCommitted(m.Seq)
}

// RemoveNewer removes the checkpoints newer than seq and returns their
// directories: a resumed distributed run's nodes write their parts of those
// windows again, and a stale manifest or part must not mix with them.
func (s *Store) RemoveNewer(seq uint64) ([]string, error) {
	seqs, err := s.seqs()
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, q := range seqs {
		if q > seq {
			d := filepath.Join(s.Dir, dirName(q))
			if err := os.RemoveAll(d); err != nil {
				return gone, err
			}
			gone = append(gone, d)
		}
	}
	return gone, nil
}

// pruneCommitted removes, of the checkpoints older than seq (the one just
// committed), those beyond the Keep newest that have a manifest, and those
// older than a committed one that have none (never committed, or
// committed while nobody wrote the manifest: superseded either way). A
// checkpoint newer than seq may be being written: it stays.
func (s *Store) pruneCommitted(seq uint64) error {
	seqs, err := s.seqs()
	if err != nil {
		return err
	}
	keep, n := max(s.Keep, 1), 0
	for i := len(seqs) - 1; i >= 0; i-- {
		if seqs[i] > seq {
			continue
		}
		d := filepath.Join(s.Dir, dirName(seqs[i]))
		_, err := os.Stat(filepath.Join(d, ManifestName))
		committed := err == nil
		if n >= keep || n > 0 && !committed {
			if err := os.RemoveAll(d); err != nil {
				return err
			}
			continue
		}
		if committed {
			n++
		}
	}
	return nil
}
