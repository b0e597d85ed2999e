package scenario

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Dir returns the file system a scenario in directory dir reads its files
// from: relative names are resolved against dir (".." allowed), absolute
// names are used as they are. Unlike os.DirFS it does not confine names to
// dir, since scenarios routinely share CDF and .topo files.
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
	_ fs.ReadFileFS = dirFS("")
)
