//go:build cluster

package cluster

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-sim/lockstep/deploy/image"
)

// label marks everything a test creates, so that cleanup finds it all.
const label = "lockstep.test"

// docker runs the docker CLI and returns its trimmed stdout.
func docker(args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command("docker", args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return strings.TrimSpace(out.String()), fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

func mustDocker(t testing.TB, args ...string) string {
	t.Helper()
	out, err := docker(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	imageOnce sync.Once
	imageName string
	imageErr  error
	hostOnce  sync.Once
	hostBin   string
	hostErr   error
)

// shared holds what the tests build once and share (the image's
// binary, the host binary, the single-process references); TestMain
// removes it.
var shared string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "lockstep-cluster-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared = d
	code := m.Run()
	_ = os.RemoveAll(d)
	os.Exit(code)
}

// sharedDir is a fresh directory under shared.
func sharedDir(name string) (string, error) {
	d := filepath.Join(shared, name)
	return d, os.MkdirAll(d, 0o755)
}

func repoRoot() string { return filepath.Join("..", "..") }

// lockstepImage is the image under test: $LOCKSTEP_IMAGE (make
// test-cluster passes the one make image built), else one built here
// from the source, the same way.
func lockstepImage(t testing.TB) string {
	t.Helper()
	if _, err := docker("info", "--format", "{{.ServerVersion}}"); err != nil {
		t.Fatalf("no Docker daemon (make test-cluster needs one; .ci/run starts dockerd): %v", err)
	}
	imageOnce.Do(func() {
		if s := os.Getenv("LOCKSTEP_IMAGE"); s != "" {
			imageName = s
			_, imageErr = docker("image", "inspect", s)
			return
		}
		dir, err := sharedDir("image")
		if err != nil {
			imageErr = err
			return
		}
		bin := filepath.Join(dir, "lockstep")
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", bin, "./cmd/lockstep")
		cmd.Dir = repoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			imageErr = fmt.Errorf("go build: %v: %s", err, out)
			return
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			imageErr = err
			return
		}
		im, err := image.Build(image.Spec{Binary: b, Tag: "lockstep:cluster-test"})
		if err != nil {
			imageErr = err
			return
		}
		tar := filepath.Join(dir, "image.tar")
		if err := os.WriteFile(tar, im.Archive, 0o644); err != nil {
			imageErr = err
			return
		}
		if _, err := docker("load", "-i", tar); err != nil {
			imageErr = err
			return
		}
		imageName = "lockstep:cluster-test"
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageName
}

// lockstepHost is a lockstep binary for this host: the launcher and the
// single-process reference runs.
func lockstepHost(t testing.TB) string {
	t.Helper()
	hostOnce.Do(func() {
		dir, err := sharedDir("host")
		if err != nil {
			hostErr = err
			return
		}
		hostBin = filepath.Join(dir, "lockstep")
		cmd := exec.Command("go", "build", "-o", hostBin, "./cmd/lockstep")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			hostErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if hostErr != nil {
		t.Fatal(hostErr)
	}
	return hostBin
}

// env is one test's private Docker network and the containers on it.
type env struct {
	t     testing.TB
	id    string // unique; names every container and the network
	net   string
	image string
}

// newEnv creates a private network; its cleanup removes every container
// and the network, and fails the test if any is left (case e).
func newEnv(t testing.TB) *env {
	t.Helper()
	img := lockstepImage(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	e := &env{t: t, id: "ls" + hex.EncodeToString(b[:]), image: img}
	e.net = e.id + "-net"
	t.Cleanup(e.cleanup)
	mustDocker(t, "network", "create", "--label", label+"="+e.id, e.net)
	return e
}

// newEnvSubnet is newEnv with a /24 of its own, so that containers can
// have fixed addresses (a pod's IP, known before it starts).
func newEnvSubnet(t testing.TB) *env {
	t.Helper()
	img := lockstepImage(t)
	var b [5]byte
	_, _ = rand.Read(b[:])
	e := &env{t: t, id: "ls" + hex.EncodeToString(b[:4]), image: img}
	e.net = e.id + "-net"
	t.Cleanup(e.cleanup)
	var err error
	for i := 0; i < 20; i++ {
		subnet := fmt.Sprintf("172.30.%d.0/24", (int(b[4])+i*37)%256)
		if _, err = docker("network", "create", "--label", label+"="+e.id, "--subnet", subnet, e.net); err == nil {
			return e
		}
	}
	t.Fatal(err)
	return nil
}

// name is the container name of a member ("c1", "nats", "n0").
func (e *env) name(member string) string { return e.id + "-" + member }

func (e *env) cleanup() {
	ids, _ := docker("ps", "-aq", "--filter", "label="+label+"="+e.id)
	if ids != "" {
		if _, err := docker(append([]string{"rm", "-f"}, strings.Fields(ids)...)...); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	}
	if _, err := docker("network", "rm", e.net); err != nil && !strings.Contains(err.Error(), "No such network") &&
		!strings.Contains(err.Error(), "not found") {
		e.t.Errorf("cleanup: %v", err)
	}
	left, _ := docker("ps", "-aq", "--filter", "label="+label+"="+e.id)
	nets, _ := docker("network", "ls", "-q", "--filter", "label="+label+"="+e.id)
	if left != "" || nets != "" {
		e.t.Errorf("left behind after the test: containers %q, networks %q", left, nets)
	}
}

// container is how a member runs: docker run options and the lockstep
// command line.
type container struct {
	member  string   // "nats", "c1", "n0"
	aliases []string // DNS names on the network (the member's own by default)
	ip      string   // a fixed address on the network, if any
	opts    []string // more docker run options (-p, -v, -e)
	args    []string // lockstep's arguments
	image   string   // the image, if not lockstep's (the external switch's)
}

// run starts c detached.
func (e *env) run(c container) {
	e.t.Helper()
	args := []string{"run", "-d", "--name", e.name(c.member), "--label", label + "=" + e.id,
		"--network", e.net, "--hostname", c.member}
	if len(c.aliases) == 0 {
		c.aliases = []string{c.member}
	}
	for _, a := range c.aliases {
		args = append(args, "--network-alias", a)
	}
	if c.ip != "" {
		args = append(args, "--ip", c.ip)
	}
	img := e.image
	if c.image != "" {
		img = c.image
	}
	args = append(append(append(args, c.opts...), img), c.args...)
	mustDocker(e.t, args...)
}

// logs returns a member's output so far.
func (e *env) logs(member string) string {
	out, err := exec.Command("docker", "logs", e.name(member)).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(docker logs %s: %v)", member, err)
	}
	return string(out)
}

// exitCode waits up to d for a member to exit and returns its status.
func (e *env) exitCode(member string, d time.Duration) (int, error) {
	deadline := time.Now().Add(d)
	for {
		st, err := docker("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", e.name(member))
		if err != nil {
			return -1, err
		}
		var s string
		var code int
		fmt.Sscanf(st, "%s %d", &s, &code)
		if s == "exited" || s == "dead" {
			return code, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("%s still %s after %v", member, s, d)
		}
		time.Sleep(200 * time.Millisecond) // polling docker against the deadline
	}
}

// freePort is a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
