package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium is where Debian's chromium package (make deps) puts the browser.
const chromium = "/usr/bin/chromium"

// syncBuffer is a bytes.Buffer safe for the run's goroutine and the test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// The live view in a real browser: headless Chromium loads the page of a
// running `lockstep run --ui`, the fabric has every node of the k=4
// fat-tree (16 hosts + 20 switches), the count of finished flows grows
// while the run goes on, and the page raises no JavaScript error. The
// screenshot's path is in the log.
func TestUI_LiveViewInChromium(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: run `make deps` (installs Debian's chromium) before the tests", chromium)
		}
		t.Skipf("%s is missing: run `make deps` to install chromium and run this test", chromium)
	}
	// A long-enough run: a k=4 fat-tree permutation, flows of staggered
	// sizes so that they finish one after another.
	var flows strings.Builder
	for i := range 16 {
		fmt.Fprintf(&flows, "      - {src: %d, dst: %d, size: %dKB, start: %dus}\n", i, (i+5)%16, 200+400*i, 20*i)
	}
	dir := write(t, map[string]string{"s.yaml": `name: ui-test
topology:
  type: fattree
  fattree:
    k: 4
    host: {rate: 1Gbps, delay: 1us}
    agg: {rate: 1Gbps, delay: 1us}
    core: {rate: 1Gbps, delay: 1us}
transport: {cc: cubic, rto: {min: 1ms}}
output: {cwnd: {flows: [0, 1, 2, 3]}}
workload:
  - type: flows
    flows:
` + flows.String()})
	out := filepath.Join(dir, "out")
	// The run takes well under a second; slow its batches down (wall time
	// only) so that the page sees it going on.
	testObserveDelay = 40 * time.Millisecond
	hold := make(chan struct{})
	var release sync.Once
	testObserveHold = hold
	defer func() {
		release.Do(func() { close(hold) })
		testObserveDelay, testObserveHold = 0, nil
	}()
	var stdout bytes.Buffer
	stderr := &syncBuffer{}
	exit := make(chan int, 1)
	go func() {
		exit <- run([]string{"run", filepath.Join(dir, "s.yaml"), "--out", out, "--quiet", "--ui", "127.0.0.1:0", "--ui-wait"},
			&stdout, stderr)
	}()
	var url string
	re := regexp.MustCompile(`live view: (http://127\.0\.0\.1:\d+/)`)
	for deadline := time.Now().Add(20 * time.Second); url == ""; time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no live view address on stderr: %q", stderr.String())
		}
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var jsErrs []string
	var mu sync.Mutex
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			jsErrs = append(jsErrs, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value))
				}
				jsErrs = append(jsErrs, "console.error: "+strings.Join(args, " "))
			}
		}
	}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(`#topo .node`)); err != nil {
		t.Fatalf("load the page: %v (stderr %q)", err, stderr.String())
	}
	count := func(sel string) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("`+sel+`").length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	finished := func() int {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("cdf").getAttribute("data-count") || "0"`))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(v)
		return n
	}
	nodes, hosts, switches := count("#topo .node"), count("#topo .node.host"), count("#topo .node.switch")
	if nodes != 36 || hosts != 16 || switches != 20 {
		t.Errorf("topology: %d nodes (%d hosts, %d switches), want 36 (16, 20) for a k=4 fat-tree", nodes, hosts, switches)
	}
	// The FCT count grows: poll until every flow has finished.
	firstN := finished()
	// The run waits after its first batch until the page has been read
	// once: however slow the browser was to start, the count must grow.
	release.Do(func() { close(hold) })
	seen := map[int]bool{firstN: true}
	last := firstN
	for deadline := time.Now().Add(60 * time.Second); last < 16; time.Sleep(50 * time.Millisecond) {
		last = finished()
		seen[last] = true
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("FCT count stuck at %d (first %d); stderr %q; page errors %q", last, firstN, stderr.String(), jsErrs)
		}
	}
	if last <= firstN || len(seen) < 2 {
		t.Errorf("FCT count went from %d to %d (values seen %v); want it to grow while the run goes on", firstN, last, seen)
	}
	if err := chromedp.Do(ctx, chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(os.TempDir(), "lockstep-ui-live.png")
	if p := os.Getenv("LOCKSTEP_UI_SCREENSHOT"); p != "" {
		shot = p
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (first load saw %d finished flows, then %v)", shot, firstN, seen)
	mu.Lock()
	if len(jsErrs) > 0 {
		t.Errorf("JavaScript errors on the page:\n%s", strings.Join(jsErrs, "\n"))
	}
	mu.Unlock()
	// End the run's --ui-wait the way a user does.
	p, _ := os.FindProcess(os.Getpid())
	_ = p.Signal(os.Interrupt)
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("run exit %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Error("the run did not end after the interrupt")
	}
}
