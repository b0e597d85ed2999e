package plot

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeDir puts files into a fresh directory and returns it.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
	}
	return dir
}

const fctHeader = "flow_id,src,dst,size_bytes,start_ns,finish_ns,fct_ns,packets_sent,retransmits,timeouts,ecn_marked_acks,finished\n"

// The values below are read off testdata/run by hand.
func TestLoad_FullRun(t *testing.T) {
	r, err := Load("testdata/run")
	if err != nil {
		t.Fatalf("Load: want no error, got %v", err)
	}
	if r.Title != "testrun" {
		t.Errorf("Title: want %q (summary.json name), got %q", "testrun", r.Title)
	}
	if r.EndNs != 8000 {
		t.Errorf("EndNs: want 8000, got %v", r.EndNs)
	}
	if len(r.Flows) != 8 {
		t.Fatalf("flows: want 8, got %d", len(r.Flows))
	}
	want2 := Flow{ID: 2, Size: 100000, StartNs: 1000, FCTNs: 150.25, Finished: true, Slowdown: 3.005}
	if r.Flows[2] != want2 {
		t.Errorf("flow 2: want %+v, got %+v", want2, r.Flows[2])
	}
	if f := r.Flows[5]; f.Finished || f.ID != 5 || f.StartNs != 4000 || !math.IsNaN(f.Slowdown) {
		t.Errorf("flow 5: want unfinished, id 5, start 4000; got %+v", f)
	}

	if !r.HasCwnd {
		t.Fatalf("HasCwnd: want true, got false")
	}
	var names []string
	for _, s := range r.Cwnd {
		names = append(names, s.Name)
	}
	// Flow labels are all integers, so numeric order (not "10" < "2").
	if want := []string{"2", "3", "10"}; !reflect.DeepEqual(names, want) {
		t.Errorf("cwnd series: want %v, got %v", want, names)
	}
	wantPts := []Point{{0, 14600}, {10, 29200}, {20, 58400}, {30, 29200}}
	if !reflect.DeepEqual(r.Cwnd[0].Points, wantPts) || r.Cwnd[0].Peak != 58400 {
		t.Errorf("cwnd flow 2: want %v peak 58400, got %v peak %v", wantPts, r.Cwnd[0].Points, r.Cwnd[0].Peak)
	}

	names = names[:0]
	for _, s := range r.Queues {
		names = append(names, s.Name)
	}
	// Largest peak first: spine0:0 9000, leaf0:1 3000, leaf0:10 500.
	if want := []string{"spine0:0", "leaf0:1", "leaf0:10"}; !reflect.DeepEqual(names, want) {
		t.Errorf("queue series: want %v, got %v", want, names)
	}
}

func TestLoad_ColumnsByNameInAnyOrderWithExtras(t *testing.T) {
	dir := writeDir(t, map[string]string{
		FCTFile: "extra,finished,fct_ns,size_bytes,flow_id,more\n" +
			"a,true,7.500,1500,3,b\n" +
			"c,false,,64,4,d\n",
		CwndFile: "cwnd_bytes,note,flow,time_ns\n2920,x,f1,5.000\n1460,y,f1,1.000\n",
	})
	r, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: want no error, got %v", err)
	}
	want := []Flow{
		{ID: 3, Size: 1500, StartNs: math.NaN(), FCTNs: 7.5, Finished: true},
		{ID: 4, Size: 64, StartNs: math.NaN()},
	}
	for i := range want {
		g, w := r.Flows[i], want[i]
		if g.ID != w.ID || g.Size != w.Size || !math.IsNaN(g.StartNs) || g.FCTNs != w.FCTNs || g.Finished != w.Finished {
			t.Errorf("flow %d: want %+v, got %+v", i, w, g)
		}
	}
	// Samples are put in time order.
	if wantPts := []Point{{1, 1460}, {5, 2920}}; !reflect.DeepEqual(r.Cwnd[0].Points, wantPts) {
		t.Errorf("cwnd: want %v, got %v", wantPts, r.Cwnd[0].Points)
	}
	if !math.IsNaN(r.EndNs) || r.Title != "" || r.HasQueues {
		t.Errorf("without summary.json and queue_depth.csv: want no title, NaN end, no queues; got %q %v %v", r.Title, r.EndNs, r.HasQueues)
	}
}

func TestLoad_FinishedInferredFromFCTWithoutFinishedColumn(t *testing.T) {
	dir := writeDir(t, map[string]string{FCTFile: "flow_id,size_bytes,fct_ns\n0,10,2.000\n1,10,\n"})
	r, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: want no error, got %v", err)
	}
	if !r.Flows[0].Finished || r.Flows[1].Finished {
		t.Errorf("finished: want [true false], got [%v %v]", r.Flows[0].Finished, r.Flows[1].Finished)
	}
}

func TestLoad_ErrorsNameFileAndLine(t *testing.T) {
	good := fctHeader + "0,0,1,1000,0.000,5.000,5.000,1,0,0,0,true\n"
	cases := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the error
	}{
		{"size not a number", map[string]string{FCTFile: fctHeader + "0,0,1,abc,0.000,5.000,5.000,1,0,0,0,true\n"},
			[]string{"fct.csv:2:", "size_bytes", `"abc"`}},
		{"too few fields on line 3", map[string]string{FCTFile: good + "1,0,1,1000,0.000\n"},
			[]string{"fct.csv:3:", "wrong number of fields"}},
		{"missing column", map[string]string{FCTFile: "flow_id,size_bytes\n0,1\n"},
			[]string{"fct.csv:1:", `missing column "fct_ns"`}},
		{"duplicate column", map[string]string{FCTFile: "flow_id,size_bytes,fct_ns,fct_ns\n"},
			[]string{"fct.csv:1:", `"fct_ns" appears twice`}},
		{"finished not a bool", map[string]string{FCTFile: fctHeader + "0,0,1,1000,0.000,5.000,5.000,1,0,0,0,maybe\n"},
			[]string{"fct.csv:2:", "finished", `"maybe"`}},
		{"finished without fct", map[string]string{FCTFile: fctHeader + "0,0,1,1000,0.000,,,1,0,0,0,true\n"},
			[]string{"fct.csv:2:", "fct_ns", "empty"}},
		{"NaN fct", map[string]string{FCTFile: fctHeader + "0,0,1,1000,0.000,5.000,NaN,1,0,0,0,true\n"},
			[]string{"fct.csv:2:", "fct_ns", "not a number"}},
		{"negative size", map[string]string{FCTFile: fctHeader + "0,0,1,-5,0.000,5.000,5.000,1,0,0,0,true\n"},
			[]string{"fct.csv:2:", "size_bytes", "negative"}},
		{"bare quote", map[string]string{FCTFile: good + "1,0,1,10\"00,0.000,5.000,5.000,1,0,0,0,true\n"},
			[]string{"fct.csv:3:", "quote"}},
		{"empty fct.csv", map[string]string{FCTFile: ""}, []string{"fct.csv:1:", "empty"}},
		{"no fct.csv", map[string]string{CwndFile: "time_ns,flow,cwnd_bytes\n"}, []string{"fct.csv", "cannot read"}},
		{"bad cwnd", map[string]string{FCTFile: good, CwndFile: "time_ns,flow,cwnd_bytes\n1,0,100\n2,0,lots\n"},
			[]string{"cwnd.csv:3:", "cwnd_bytes", `"lots"`}},
		{"cwnd missing column", map[string]string{FCTFile: good, CwndFile: "time_ns,cwnd_bytes\n"},
			[]string{"cwnd.csv:1:", `"flow"`}},
		{"bad port", map[string]string{FCTFile: good, QueueDepthFile: "time_ns,switch,port,depth_bytes\n1,s0,x,5\n"},
			[]string{"queue_depth.csv:2:", "port", `"x"`}},
		{"summary syntax", map[string]string{FCTFile: good, SummaryFile: "{\n  \"name\": \"x\",\n  oops\n}\n"},
			[]string{"summary.json:3:"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, c.files)
			_, err := Load(dir)
			if err == nil {
				t.Fatalf("Load: want an error containing %q, got none", c.want)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error: want it to contain %q, got %q", w, msg)
				}
			}
			if !strings.HasPrefix(msg, dir) {
				t.Errorf("error: want it to start with the path %q, got %q", dir, msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error: want one line, got %q", msg)
			}
		})
	}
}

func TestLoad_MissingOrFileDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "no such run directory") {
		t.Errorf("missing dir: want %q ... no such run directory, got %v", missing, err)
	}
	file := filepath.Join(writeDir(t, map[string]string{"f": "x"}), "f")
	if _, err := Load(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file as dir: want ... not a directory, got %v", err)
	}
}

func TestLoad_TitleFallsBackToScenario(t *testing.T) {
	// virtual_end_ps wins; virtual_end_ns is a number, or a string in
	// summaries written before summary.json had numbers.
	for _, end := range []string{`"virtual_end_ns": "12.500"`, `"virtual_end_ns": 12.500`,
		`"virtual_end_ps": 12500, "virtual_end_ns": 99`} {
		dir := writeDir(t, map[string]string{
			FCTFile:     fctHeader,
			SummaryFile: `{"scenario": "fattree.yaml", ` + end + `}`,
		})
		r, err := Load(dir)
		if err != nil {
			t.Fatalf("Load: want no error, got %v", err)
		}
		if r.Title != "fattree.yaml" || r.EndNs != 12.5 {
			t.Errorf("%s: want title fattree.yaml and end 12.5, got %q and %v", end, r.Title, r.EndNs)
		}
	}
}
