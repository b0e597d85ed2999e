package scenario

import (
	"io/fs"
	"os"
	"path/filepath"
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
