//go:build cluster

package cluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-sim/lockstep/deploy/image"
)

var (
	extOnce  sync.Once
	extImage string
	extErr   error
)

// extswitchImage is the example external switch's image
// (examples/extswitch/cmd/extswitch, FROM scratch): $LOCKSTEP_EXTSWITCH_IMAGE
// (make test-cluster passes the one make image-extswitch built), else one
// built here from the source, the same way.
func extswitchImage(t testing.TB) string {
	t.Helper()
	lockstepImage(t) // a Docker daemon
	extOnce.Do(func() {
		if s := os.Getenv("LOCKSTEP_EXTSWITCH_IMAGE"); s != "" {
			extImage = s
			_, extErr = docker("image", "inspect", s)
			return
		}
		dir, err := sharedDir("extswitch")
		if err != nil {
			extErr = err
			return
		}
		bin := filepath.Join(dir, "extswitch")
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", bin, "./examples/extswitch/cmd/extswitch")
		cmd.Dir = repoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			extErr = fmt.Errorf("go build: %v: %s", err, out)
			return
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			extErr = err
			return
		}
		im, err := image.Build(image.Spec{Binary: b, Tag: "lockstep-extswitch:cluster-test", Name: "extswitch"})
		if err != nil {
			extErr = err
			return
		}
		tar := filepath.Join(dir, "image.tar")
		if err := os.WriteFile(tar, im.Archive, 0o644); err != nil {
			extErr = err
			return
		}
		if _, err := docker("load", "-i", tar); err != nil {
			extErr = err
			return
		}
		extImage = "lockstep-extswitch:cluster-test"
	})
	if extErr != nil {
		t.Fatal(extErr)
	}
	return extImage
}

// extFatTree is a k=4 fat-tree with small buffers, ECN by a step on two
// tiers (one on dequeue), a switch latency, an incast and a permutation
// of size bytes: queues, drops, marks and ties at the switches.
func extFatTree(size string) string {
	return `seed: 7
topology:
  type: fattree
  fattree:
    k: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 64KiB, ecn: {mode: step, k: 20KiB}}
    agg:  {rate: 100Gbps, delay: 2us, buffer: 64KiB}
    core: {rate: 100Gbps, delay: 1us, buffer: 64KiB, ecn: {mode: step, k: 16KiB, on: dequeue}}
    switch_latency: 300ns
transport: {mtu: 4096, ecn: true, rto: {min: 1ms, initial: 2ms}}
workload:
  - {type: incast, n: 8, dst: 0, size: 300KB}
  - {type: permutation, size: ` + size + `}
`
}

// extList replaces a ToR, an aggregation switch (under another element
// name) and the four cores.
const extList = `external:
  - {switch: tor0}
  - {switch: agg1, element: aggregation-1}
  - {switch: "core*"}
`

const extElements = "tor0,aggregation-1,core0,core1,core2,core3"

// sameFilesAsBuiltIn: every output file but summary.json (whose event
// counts differ: an external switch's events are not lockstep's) is
// byte-identical to the run with lockstep's own switches.
func sameFilesAsBuiltIn(t testing.TB, want, got string) {
	t.Helper()
	ents, err := os.ReadDir(want)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if e.Name() == "summary.json" || e.IsDir() {
			continue
		}
		n++
		a, _ := os.ReadFile(filepath.Join(want, e.Name()))
		b, err := os.ReadFile(filepath.Join(got, e.Name()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from the built-in run (%d vs %d bytes, %v)", e.Name(), len(b), len(a), err)
		}
	}
	if n < 2 {
		t.Fatalf("the built-in run wrote %d files", n)
	}
}

// runSwitches starts the external switch container serving the run's
// elements and waits until it serves them.
func (d *deployment) runSwitches(t testing.TB, member string) {
	t.Helper()
	d.e.run(container{member: member, image: extswitchImage(t), opts: []string{"--env-file", d.envFile},
		args: []string{"-nats", "nats://nats:4222", "-run", d.run, "-element", extElements}})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(d.e.logs(member), "serving") {
		if time.Now().After(deadline) {
			t.Fatalf("the external switch container does not serve:\n%s", d.e.logs(member))
		}
		time.Sleep(50 * time.Millisecond) // polling docker against the deadline
	}
}

// Case (h): six switches of a fat-tree replaced by the example external
// switch, served by a container of its own image (FROM scratch, built
// from its binary as lockstep's is), stepped by 2 node containers over
// the NATS container: every output byte-identical to one process with
// lockstep's own switches.
func TestCluster_H_ExternalSwitchSameAsTheBuiltIn(t *testing.T) {
	ref := reference(t, scenarioFile(t, extFatTree("200KB")))
	file := scenarioFile(t, extFatTree("200KB")+extList)
	e := newEnv(t)
	d := e.deploy(t, file, 2, 20*time.Second)
	d.runSwitches(t, "sw")
	start := time.Now()
	l := d.launcher(t)
	defer d.dump(t, l)
	defer func() {
		if t.Failed() {
			t.Logf("sw:\n%s", e.logs("sw"))
		}
	}()
	d.start()
	if code := l.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("launcher exit %d:\n%s", code, l.stderr.String())
	}
	t.Logf("k=4 fat-tree, 6 external switches in a container, 2 node containers + 3 coordinators + NATS: %.2fs",
		time.Since(start).Seconds())
	sameFilesAsBuiltIn(t, ref, l.out)
	if q, err := os.ReadFile(filepath.Join(l.out, "queues.csv")); err != nil || !strings.Contains(string(q), "\ncore3,") {
		t.Errorf("queues.csv has no rows of the external core3: %v", err)
	}
}

// Case (i): the external switch container is killed mid-run: the node
// that steps the elements finds none and fails the run, naming the
// element, within the peer timeout; the launcher exits 3 with partial
// results.
func TestCluster_I_ExternalSwitchKilled(t *testing.T) {
	file := scenarioFile(t, extFatTree("20MB")+extList)
	e := newEnv(t)
	const peerTO = 4 * time.Second
	d := e.deploy(t, file, 2, peerTO)
	d.runSwitches(t, "sw")
	w := watch(t, d.natsURL, d.run, d.token)
	l := d.launcher(t)
	defer d.dump(t, l)
	d.start()
	w.untilWindow(t, 300, 2*time.Minute)
	mustDocker(t, "kill", e.name("sw"))
	killed := time.Now()
	code := l.wait(t, 2*time.Minute)
	took := time.Since(killed)
	last := lastLine(l.stderr.String())
	if code != 3 || !strings.Contains(last, "external element ") || !strings.Contains(last, "partial results in") {
		t.Fatalf("launcher exit %d, want 3 with one line naming the element:\n%s", code, l.stderr.String())
	}
	if took > peerTO+5*time.Second {
		t.Errorf("the run failed %v after the kill; peer timeout %v", took, peerTO)
	}
	t.Logf("%.2fs after the kill: %s", took.Seconds(), last)
}
