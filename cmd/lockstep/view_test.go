package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"
)

// lockstep view DIR serves the live view's page and its JSON API for a
// finished run: the topology, every flow's FCT, frames ending at the
// run's end, the progress marked finished; and it stops when its context
// ends.
func TestView_ServesPageAndAPIForAFinishedRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	runCLI(t, "run", filepath.Join("..", "..", "examples", "dumbbell.yaml"), "--out", dir, "--cwnd", "--queues", "10us", "--quiet")
	var sum struct {
		EndPs int64 `json:"virtual_end_ps"`
		Flows int   `json:"flows"`
	}
	if err := json.Unmarshal(readOut(t, dir, "summary.json"), &sum); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout bytes.Buffer
	stderr := &lockedWriter{w: &bytes.Buffer{}}
	root := newRoot(viper.New(), &stdout, stderr)
	root.SetArgs([]string{"view", dir, "--addr", "127.0.0.1:0"})
	root.SetOut(&stdout)
	root.SetErr(stderr)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		stderr.mu.Lock()
		if m := regexp.MustCompile(`view: (http://\S+/)`).FindStringSubmatch(stderr.w.String()); m != nil {
			base = m[1]
		}
		stderr.mu.Unlock()
	}
	if base == "" {
		t.Fatalf("lockstep view printed no address: %q", stderr.w.String())
	}
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(base + strings.TrimPrefix(path, "/"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return b
	}
	if page := get("/"); !bytes.Contains(page, []byte("<html")) && !bytes.Contains(page, []byte("<!DOCTYPE")) {
		t.Errorf("GET /: not the page: %.200s", page)
	}
	var topo struct {
		Nodes []struct {
			Name string `json:"name"`
			Kind string `json:"kind"`
		} `json:"nodes"`
		Links []json.RawMessage `json:"links"`
	}
	if err := json.Unmarshal(get("/api/topology"), &topo); err != nil {
		t.Fatal(err)
	}
	if len(topo.Nodes) != 10 || len(topo.Links) != 9 {
		t.Errorf("/api/topology: %d nodes and %d links, want the dumbbell's 10 and 9", len(topo.Nodes), len(topo.Links))
	}
	var st struct {
		Progress struct {
			NowNs     float64 `json:"now_ns"`
			FlowsDone int     `json:"flows_done"`
			Finished  bool    `json:"finished"`
			Live      bool    `json:"live"`
		} `json:"progress"`
		Frames []struct {
			TNs float64 `json:"t_ns"`
		} `json:"frames"`
		Flows []json.RawMessage `json:"flows"`
		Cwnd  []json.RawMessage `json:"cwnd"`
	}
	if err := json.Unmarshal(get("/api/state"), &st); err != nil {
		t.Fatal(err)
	}
	end := float64(sum.EndPs) / 1e3
	if !st.Progress.Finished || st.Progress.Live || st.Progress.FlowsDone != sum.Flows || len(st.Flows) != sum.Flows ||
		st.Progress.NowNs != end || len(st.Cwnd) == 0 {
		t.Errorf("/api/state: progress %+v, %d flows, %d cwnd points; want finished (not live) at %v ns with all %d flows and cwnd points",
			st.Progress, len(st.Flows), len(st.Cwnd), end, sum.Flows)
	}
	if len(st.Frames) == 0 || st.Frames[len(st.Frames)-1].TNs != end {
		t.Errorf("/api/state: %d frames, want the last at the run's end %v", len(st.Frames), end)
	}
	var pr struct {
		Finished bool `json:"finished"`
	}
	if err := json.Unmarshal(get("/api/progress"), &pr); err != nil || !pr.Finished {
		t.Errorf("/api/progress: %+v %v, want finished", pr, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("view: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("lockstep view did not stop when its context ended")
	}
}
