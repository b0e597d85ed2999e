package ui

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/lockstep-sim/lockstep/plot"
)

// viewFrames is how many frames FromDir makes over a finished run.
const viewFrames = 200

// FromDir makes the model of a finished run from its directory: the
// topology from queues.csv (every switch port and its peer; nodes that
// are only peers are hosts), link utilisation as the run's average
// (queues.csv bytes over the run), switch occupancy over time from
// queue_depth.csv when the run recorded it, flows from fct.csv, cwnd
// from cwnd.csv.
func FromDir(dir string) (*Model, error) {
	run, err := plot.Load(dir)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, "queues.csv"))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, "queues.csv"), err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) < 1 {
		return nil, fmt.Errorf("%s: not a queues.csv (%v)", filepath.Join(dir, "queues.csv"), err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, c := range []string{"switch", "port", "peer", "tier", "rate_bps", "bytes"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s: no %s column", filepath.Join(dir, "queues.csv"), c)
		}
	}
	t := Topology{Name: run.Title}
	index := map[string]int{}
	isSwitch := map[string]bool{}
	for _, r := range rows[1:] {
		isSwitch[r[col["switch"]]] = true
	}
	node := func(name string) int {
		if i, ok := index[name]; ok {
			return i
		}
		kind := "host"
		if isSwitch[name] {
			kind = "switch"
		}
		index[name] = len(t.Nodes)
		t.Nodes = append(t.Nodes, Node{Name: name, Kind: kind})
		return index[name]
	}
	type lk struct{ a, b int }
	linkOf := map[lk]int{}
	var bytes []float64
	for _, r := range rows[1:] {
		a, b := node(r[col["switch"]]), node(r[col["peer"]])
		tier, _ := strconv.Atoi(r[col["tier"]])
		rate, _ := strconv.ParseInt(r[col["rate_bps"]], 10, 64)
		by, _ := strconv.ParseFloat(r[col["bytes"]], 64)
		// A switch's tier is the lowest tier of its links (a link's tier
		// is its upper end's).
		if t.Nodes[a].Tier == 0 || tier < t.Nodes[a].Tier {
			t.Nodes[a].Tier = tier
		}
		key := lk{min(a, b), max(a, b)}
		i, ok := linkOf[key]
		if !ok {
			i = len(t.Links)
			linkOf[key] = i
			t.Links = append(t.Links, Link{A: key.a, B: key.b, RateBps: rate, Tier: tier})
			bytes = append(bytes, 0)
		}
		bytes[i] = math.Max(bytes[i], by)
	}
	m := newModel(t)
	end := run.EndNs
	if math.IsNaN(end) || end <= 0 {
		end = 1
	}
	util := make([]float64, len(t.Links))
	for i, l := range t.Links {
		if l.RateBps > 0 {
			util[i] = math.Min(1, bytes[i]*8/(float64(l.RateBps)*end/1e9))
		}
	}
	var frames []Frame
	for k := range viewFrames {
		t0, t1 := end*float64(k)/viewFrames, end*float64(k+1)/viewFrames
		fr := Frame{TNs: t1, Util: util, Queue: make([]int64, len(t.Nodes))}
		for _, s := range run.Queues {
			sw, _, _ := cutLast(s.Name, ':')
			peak := 0.0
			for _, p := range s.Points {
				if p.X > t0 && p.X <= t1 {
					peak = math.Max(peak, p.Y)
				}
			}
			if i, ok := index[sw]; ok {
				fr.Queue[i] += int64(peak)
			}
		}
		frames = append(frames, fr)
	}
	var flows []Flow
	done := 0
	for _, fl := range run.Flows {
		if fl.Finished {
			done++
			sd := fl.Slowdown
			if math.IsNaN(sd) {
				sd = 0
			}
			flows = append(flows, Flow{ID: int32(fl.ID), Size: fl.Size, FCTNs: fl.FCTNs, Slowdown: sd})
		}
	}
	var cwnd []CwndPoint
	for _, s := range run.Cwnd {
		id, err := strconv.Atoi(s.Name)
		if err != nil || id >= MaxCwndFlows {
			continue
		}
		for _, p := range s.Points {
			cwnd = append(cwnd, CwndPoint{TNs: p.X, Flow: int32(id), Cwnd: int64(p.Y)})
		}
	}
	var sum struct {
		Events uint64 `json:"events"`
		Perf   struct {
			EventsPerSec float64 `json:"events_per_second"`
		} `json:"perf"`
	}
	if data, err := os.ReadFile(filepath.Join(dir, "summary.json")); err == nil {
		_ = json.Unmarshal(data, &sum)
	}
	m.update(func(s *State) {
		s.Progress = Progress{NowNs: end, LimitNs: end, Events: sum.Events, EventsPerSec: sum.Perf.EventsPerSec,
			Flows: len(run.Flows), FlowsDone: done, Finished: true}
		s.Frames, s.Flows, s.Cwnd = frames, flows, cwnd
	})
	return m, nil
}

func cutLast(s string, sep byte) (string, string, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
