// Package image assembles lockstep's container image without a Dockerfile
// or a registry (docs/design.md §7): one layer holding the static binary as
// /lockstep and an empty /tmp, a config that runs it as a non-root user,
// written as a `docker load` archive. Every byte is a function of the
// binary, the tag and Created: no file times, owners or build clock leak
// in, so the same binary gives the same image digest (the config's sha256,
// which Docker shows as the image ID) on every build.
package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Spec is what goes into an image.
type Spec struct {
	Binary  []byte    // the static lockstep binary (CGO_ENABLED=0)
	Tag     string    // repository:tag, e.g. lockstep:v0.3.0
	Created time.Time // the config's creation time (SOURCE_DATE_EPOCH; zero: 1970)
	Version string    // recorded as a label
	Commit  string    // recorded as a label
	// Name is the binary's file name at the image's root, its entrypoint
	// and title (default "lockstep"; the example external switch's image
	// is "extswitch").
	Name string
}

// User is the uid:gid the image runs as (distroless's "nonroot").
const User = "65532:65532"

// Built is an assembled image.
type Built struct {
	Archive []byte // the `docker load` tarball
	ID      string // sha256:... of the config: Docker's image ID
	Layer   string // sha256:... of the uncompressed layer (its diff id)
	Size    int    // the layer's size in bytes
}

type config struct {
	Architecture string      `json:"architecture"`
	OS           string      `json:"os"`
	Created      string      `json:"created"`
	Config       imageConfig `json:"config"`
	RootFS       rootFS      `json:"rootfs"`
	History      []history   `json:"history"`
}

type imageConfig struct {
	User       string            `json:"User"`
	Entrypoint []string          `json:"Entrypoint"`
	Env        []string          `json:"Env"`
	WorkingDir string            `json:"WorkingDir"`
	Labels     map[string]string `json:"Labels"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type history struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

type manifestEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

// layer is the root filesystem: the binary (/lockstep), /tmp (sticky,
// world-writable: JetStream's store and crash files go there) and
// /etc/passwd naming the user, all with the zero time.
func layer(name string, bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	passwd := []byte("root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n")
	group := []byte("root:x:0:\nnonroot:x:65532:\n")
	entries := []struct {
		hdr  tar.Header
		data []byte
	}{
		{tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "etc/group", Typeflag: tar.TypeReg, Mode: 0o644}, group},
		{tar.Header{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644}, passwd},
		{tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755}, bin},
		{tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, nil},
	}
	for _, e := range entries {
		h := e.hdr
		h.ModTime, h.Format, h.Size = epoch, tar.FormatPAX, int64(len(e.data))
		if err := tw.WriteHeader(&h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Build assembles the image s describes.
func Build(s Spec) (*Built, error) {
	if len(s.Binary) == 0 || s.Tag == "" {
		return nil, fmt.Errorf("image: a binary and a tag are required")
	}
	name := s.Name
	if name == "" {
		name = "lockstep"
	}
	if strings.ContainsAny(name, "/.") {
		return nil, fmt.Errorf("image: binary name %q: a plain file name", name)
	}
	ly, err := layer(name, s.Binary)
	if err != nil {
		return nil, err
	}
	created := s.Created.UTC().Format(time.RFC3339)
	cfg := config{Architecture: "amd64", OS: "linux", Created: created,
		Config: imageConfig{User: User, Entrypoint: []string{"/" + name}, WorkingDir: "/tmp",
			Env: []string{"TMPDIR=/tmp"},
			Labels: map[string]string{"org.opencontainers.image.title": name,
				"org.opencontainers.image.version": s.Version, "org.opencontainers.image.revision": s.Commit}},
		RootFS:  rootFS{Type: "layers", DiffIDs: []string{digest(ly)}},
		History: []history{{Created: created, CreatedBy: "lockstep deploy/image: static binary FROM scratch"}}}
	cj, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	id := digest(cj)
	cname := id[len("sha256:"):] + ".json"
	lname := digest(ly)[len("sha256:"):] + "/layer.tar"
	mj, err := json.Marshal([]manifestEntry{{Config: cname, RepoTags: []string{s.Tag}, Layers: []string{lname}}})
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	epoch := time.Unix(0, 0).UTC()
	for _, f := range []struct {
		name string
		data []byte
	}{{cname, cj}, {lname, ly}, {"manifest.json", mj}} {
		h := tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.data)), ModTime: epoch,
			Format: tar.FormatPAX}
		if err := tw.WriteHeader(&h); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, bytes.NewReader(f.data)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &Built{Archive: out.Bytes(), ID: id, Layer: digest(ly), Size: len(ly)}, nil
}
