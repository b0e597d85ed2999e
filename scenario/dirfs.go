package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// errOutside is the error for a name that leaves the scenario's folder.
var errOutside = errors.New("outside the scenario's folder (use --allow-outside to read it)")

// Confined returns the file system a scenario in directory dir reads its
// files from by default: names are relative to dir and must stay inside
// it. An absolute name, a ".." that leaves dir, and a symbolic link that
// points out of it are refused (os.Root).
func Confined(dir string) fs.FS { return confinedFS(dir) }

type confinedFS string

func (d confinedFS) Open(name string) (fs.File, error) {
	if !filepath.IsLocal(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errOutside}
	}
	root, err := os.OpenRoot(string(d))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		if strings.Contains(err.Error(), "escapes from parent") {
			// os.Root's error for a link out of dir (its error value is
			// not exported).
			return nil, &fs.PathError{Op: "open", Path: name, Err: errOutside}
		}
		return nil, err
	}
	return f, nil
}

// readLimited reads an opened file whole, refusing one larger than
// MaxFileSize (or endless, as /dev/zero is) before holding more than that.
func readLimited(f fs.File, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooBig := fmt.Errorf("larger than the %d MiB limit on input files", MaxFileSize>>20)
	var buf bytes.Buffer
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		if st.Size() > MaxFileSize {
			return nil, tooBig // without reading it
		}
		buf.Grow(int(st.Size()) + 512)
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxFileSize+1)); err != nil {
		return nil, err
	}
	if buf.Len() > MaxFileSize {
		return nil, tooBig // it grew, or it never ends (/dev/zero)
	}
	return buf.Bytes(), nil
}

// Dir returns a file system for a scenario in directory dir that may read
// anywhere (AllowOutside, `--allow-outside`): relative names are resolved
// against dir (".." allowed), absolute names are used as they are.
func Dir(dir string) fs.FS { return dirFS(dir) }

type dirFS string

func (d dirFS) Open(name string) (fs.File, error) {
	if !filepath.IsAbs(name) {
		name = filepath.Join(string(d), name)
	}
	return os.Open(name)
}

// ReadFile implements fs.ReadFileFS.
func (d dirFS) ReadFile(name string) ([]byte, error) {
	if !filepath.IsAbs(name) {
		name = filepath.Join(string(d), name)
	}
	return os.ReadFile(name)
}

// memFS serves the files a Built recorded (Rebuild), by the names the
// scenario gives them.
type memFS map[string][]byte

func (m memFS) Open(name string) (fs.File, error) {
	data, ok := m[name] // read only: no copy
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
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
	_ fs.ReadFileFS = dirFS("")
	_ fs.FS         = confinedFS("")
)
