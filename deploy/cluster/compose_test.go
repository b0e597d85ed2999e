//go:build cluster

package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestCompose_SameAsOneProcess brings deploy/compose/docker-compose.yml up
// (NATS, three coordinators, four nodes, all started at once: the members
// wait for NATS), runs the launcher on this host against it and checks the
// outputs; `docker-compose down` and the env's cleanup leave nothing.
func TestCompose_SameAsOneProcess(t *testing.T) {
	compose, err := exec.LookPath("docker-compose")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("docker-compose is not installed: %v", err)
		}
		t.Skip("docker-compose is not installed")
	}
	file := scenarioFile(t, longYAML(t))
	ref := reference(t, file)
	e := newEnv(t) // its network is unused: compose makes its own, labelled for the cleanup
	port := freePort(t)
	yml := filepath.Join(repoRoot(), "deploy", "compose", "docker-compose.yml")
	env := append(os.Environ(), "LOCKSTEP_IMAGE="+e.image, "LOCKSTEP_SCENARIO="+file, "LOCKSTEP_RUN=compose-"+e.id,
		fmt.Sprintf("LOCKSTEP_NATS_PORT=%d", port), "LOCKSTEP_TEST_ID="+e.id)
	dc := func(args ...string) ([]byte, error) {
		c := exec.Command(compose, append([]string{"-f", yml, "-p", e.id}, args...)...)
		c.Env = env
		return c.CombinedOutput()
	}
	t.Cleanup(func() {
		if out, err := dc("down", "--timeout", "1"); err != nil {
			t.Errorf("docker-compose down: %v: %s", err, out)
		}
	})
	if out, err := dc("up", "-d"); err != nil {
		t.Fatalf("docker-compose up: %v: %s", err, out)
	}
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", port)
	waitNATS(t, natsURL)
	start := time.Now()
	l := startLauncher(t, file, natsURL, "compose-"+e.id, 4)
	if code := l.wait(t, 3*time.Minute); code != 0 {
		out, _ := dc("logs", "--no-color")
		t.Fatalf("launcher exit %d:\n%s\n%s", code, l.stderr.String(), out)
	}
	t.Logf("compose run: %.2fs", time.Since(start).Seconds())
	sameOutputs(t, ref, l.out)
}
