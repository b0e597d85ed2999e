// Package version says which build of lockstep is running: the release
// version (set at link time, -ldflags "-X .../internal/version.Version=v1.2.3"),
// the VCS commit and whether the tree was modified (from the Go toolchain's
// build information), and the Go version. summary.json records it, so a
// result can be traced to the binary that produced it.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release version; "dev" unless the build sets it.
var Version = "dev"

// Commit is the VCS revision when the build sets it with -ldflags
// (make build does); otherwise Get reads it from the Go build information,
// which has it when go build ran in a checkout with -buildvcs on.
var Commit = ""

// Info is one build's identity.
type Info struct {
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from, with
	// "+modified" when the work tree had uncommitted changes; "" when the
	// build recorded none (go test, go run outside a checkout).
	Commit string `json:"commit,omitempty"`
	Go     string `json:"go"`
}

// Get returns the running binary's Info.
func Get() Info {
	in := Info{Version: Version, Commit: Commit, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok || in.Commit != "" {
		return in
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if in.Commit != "" && modified {
		in.Commit += "+modified"
	}
	return in
}

// String is the one line `lockstep version` prints.
func (in Info) String() string {
	c := in.Commit
	if c == "" {
		c = "unknown commit"
	}
	return "lockstep " + in.Version + " (" + c + ", " + in.Go + ")"
}
