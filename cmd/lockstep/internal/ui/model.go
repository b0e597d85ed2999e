// Package ui is the live view (lockstep run --ui, lockstep view): a model
// of what the page shows, fed from snapshots of a running fabric taken
// between event batches (Live.Observe) or from a finished run's files
// (FromDir), and an HTTP server with a small JSON/SSE API (docs/ui.md)
// and the page's embedded assets. The page never reaches the engine: it
// reads copies, under the model's lock.
package ui

import (
	"cmp"
	"slices"
	"sync"
)

// Node is a topology node as the page draws it.
type Node struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // host or switch
	Tier int    `json:"tier"` // 0 hosts, 1 ToR/leaf, 2 agg/spine, 3 core
}

// Link is a link between nodes A and B (indices into Nodes).
type Link struct {
	A       int   `json:"a"`
	B       int   `json:"b"`
	RateBps int64 `json:"rate_bps"`
	Tier    int   `json:"tier"`
}

// Topology is /api/topology.
type Topology struct {
	Name  string `json:"name"`
	Nodes []Node `json:"nodes"`
	Links []Link `json:"links"`
}

// Frame is the fabric at one virtual time: per link, the utilisation since
// the frame before (the busier direction, 0..1) and per node the bytes in
// its switch ports' buffers (0 for hosts).
type Frame struct {
	TNs   float64   `json:"t_ns"`
	Util  []float64 `json:"util"`
	Queue []int64   `json:"queue"`
}

// Flow is a finished flow.
type Flow struct {
	ID       int32   `json:"id"`
	Size     int64   `json:"size"`
	FCTNs    float64 `json:"fct_ns"`
	Slowdown float64 `json:"slowdown"` // 0: unknown
}

// CwndPoint is one cwnd sample of a selected flow.
type CwndPoint struct {
	TNs  float64 `json:"t_ns"`
	Flow int32   `json:"flow"`
	Cwnd int64   `json:"cwnd"`
}

// Progress is /api/progress and every SSE event.
type Progress struct {
	NowNs        float64 `json:"now_ns"`
	LimitNs      float64 `json:"limit_ns"`
	Events       uint64  `json:"events"`
	EventsPerSec float64 `json:"events_per_second"`
	Flows        int     `json:"flows"`
	FlowsDone    int     `json:"flows_done"`
	Live         bool    `json:"live"`     // a run in progress (lockstep run --ui)
	Finished     bool    `json:"finished"` // the run has ended
	Frames       int     `json:"frames"`
}

// State is /api/state: everything the page draws.
type State struct {
	Progress Progress    `json:"progress"`
	Frames   []Frame     `json:"frames"`
	Flows    []Flow      `json:"flows"`
	Cwnd     []CwndPoint `json:"cwnd"`
}

// MaxFrames bounds the frames kept: past it every other frame is dropped
// (the oldest survive at half the resolution).
const MaxFrames = 2000

// MaxCwndFlows is how many flows' cwnd the model keeps (the first ones).
const MaxCwndFlows = 8

// Model is what the page shows; safe for concurrent use.
type Model struct {
	mu      sync.Mutex
	topo    Topology
	state   State
	changed chan struct{} // closed and replaced on every update
}

func newModel(t Topology) *Model {
	return &Model{topo: t, changed: make(chan struct{})}
}

func (m *Model) update(f func(s *State)) {
	m.mu.Lock()
	f(&m.state)
	if len(m.state.Frames) > MaxFrames {
		kept := m.state.Frames[:0]
		for i, fr := range m.state.Frames {
			if i%2 == 0 || i == len(m.state.Frames)-1 {
				kept = append(kept, fr)
			}
		}
		m.state.Frames = kept
	}
	m.state.Progress.Frames = len(m.state.Frames)
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
}

// Topology returns the topology.
func (m *Model) Topology() Topology { return m.topo }

// State returns a copy of the state.
func (m *Model) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.state
	// Copies, and never nil: the page maps over each list, and a nil slice
	// is JSON null (a page opened before the first flow finished broke).
	s.Frames = append([]Frame{}, s.Frames...)
	s.Flows = append([]Flow{}, s.Flows...)
	s.Cwnd = append([]CwndPoint{}, s.Cwnd...)
	return s
}

// Progress returns the progress and a channel closed at the next update.
func (m *Model) Progress() (Progress, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.Progress, m.changed
}

func sortFlows(fs []Flow) {
	slices.SortFunc(fs, func(a, b Flow) int { return cmp.Compare(a.ID, b.ID) })
}
