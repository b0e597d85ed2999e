package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/results"
)

// readFCT reads DIR/fct.csv into its header and its rows as maps from
// column name to value.
func readFCT(t *testing.T, dir string) (string, []map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "fct.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("fct.csv: %v (%d lines)", err, len(recs))
	}
	var rows []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, name := range recs[0] {
			m[name] = r[i]
		}
		rows = append(rows, m)
	}
	return strings.Join(recs[0], ","), rows
}

// TestRun_STrackSimProfileReportsWhatSTrackSimReports runs
// examples/multi_loss_stracksim.yaml with cc: strack and --seed 344
// through the command line, as issue 26 did, and reads its own output
// files: fct.csv's sender_fct_ns is STrack-Sim's per-flow FCT of the
// report's data run (examples/tcp_limits/data/per_flow.csv: 243,068,
// 42,440, 142,084 and 56,820 ns), one ACK's way (1,522 ns: 64 B at 100
// and 40 Gb/s, truncated, and 3 × 500 ns) after fct_ns at the receiver,
// and summary.json's stracksim block is its aggregate.csv (P50 142.1 us,
// P99 243.1 us, 663 sent, 215 retransmitted, 152 drops, 203 marks).
func TestRun_STrackSimProfileReportsWhatSTrackSimReports(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "examples", "multi_loss_stracksim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(text), "cc: simpletcp") != 1 {
		t.Fatal("examples/multi_loss_stracksim.yaml: want exactly one `cc: simpletcp` to turn into strack")
	}
	dir := write(t, map[string]string{"s.yaml": strings.Replace(string(text), "cc: simpletcp", "cc: strack", 1)})
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", filepath.Join(dir, "s.yaml"), "--seed", "344", "--out", out, "--quiet"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	header, rows := readFCT(t, out)
	if header != results.FCTHeader+","+results.SenderColumns {
		t.Fatalf("fct.csv header %q, want the usual columns and then %q", header, results.SenderColumns)
	}
	wantSender := []string{"243068.000", "42440.000", "142084.000", "56820.000"}
	wantRecv := []string{"241546.000", "40918.000", "140562.000", "55298.000"}
	if len(rows) != len(wantSender) {
		t.Fatalf("%d flows, want %d", len(rows), len(wantSender))
	}
	for i, r := range rows {
		if r["sender_fct_ns"] != wantSender[i] || r["fct_ns"] != wantRecv[i] {
			t.Errorf("flow %d: sender_fct_ns %s and fct_ns %s; STrack-Sim's FCT is %s ns (sender side), the receiver's %s",
				i, r["sender_fct_ns"], r["fct_ns"], wantSender[i], wantRecv[i])
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s results.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	st := s.StrackSim
	if st == nil {
		t.Fatalf("summary.json has no stracksim block: %s", b)
	}
	us := func(n json.Number) string { // as aggregate.csv prints it: {:.1} of ns / 1000
		f, _ := n.Float64()
		return fmt.Sprintf("%.1f", f/1e3)
	}
	if st.P50 != "142084.000" || st.P99 != "243068.000" || st.P95 != "243068.000" || st.Max != "243068.000" {
		t.Errorf("stracksim fct_p50/p95/p99/max_ns %s, %s, %s, %s; STrack-Sim's 142084, 243068, 243068, 243068", st.P50, st.P95, st.P99, st.Max)
	}
	if p50, p99 := us(st.P50), us(st.P99); p50 != "142.1" || p99 != "243.1" {
		t.Errorf("P50 %s us, P99 %s us; the report's 142.1 and 243.1", p50, p99)
	}
	if st.CompletedFlows != 4 || st.PacketsSent != 663 || st.PacketsRetransmits != 215 || st.Drops != 152 || st.ECNMarks != 203 {
		t.Errorf("stracksim %+v; STrack-Sim's 4 completed, 663 sent, 215 retransmitted, 152 drops, 203 marks", *st)
	}
	// The receiver-side fields keep lockstep's definitions: nearest rank
	// over the receiver's FCTs (the 2nd of 4 for P50).
	if s.FCT == nil || s.FCT.P50 != "55298.000" || s.FCT.P99 != "241546.000" {
		t.Errorf("fct_ns %+v, want p50 55298.000 and p99 241546.000 (receiver side, nearest rank)", s.FCT)
	}
	if s.SenderFCT == nil || s.SenderFCT.P50 != "56820.000" || s.SenderFCT.P99 != "243068.000" {
		t.Errorf("sender_fct_ns %+v, want p50 56820.000 and p99 243068.000 (sender side, nearest rank)", s.SenderFCT)
	}
}

// TestRun_SenderFCTOutput: output.sender_fct adds acked_ns and
// sender_fct_ns to fct.csv and sender_fct_ns to summary.json, and leaves
// every other column as a run without it writes them.
func TestRun_SenderFCTOutput(t *testing.T) {
	dir := write(t, map[string]string{
		"plain.yaml":  goodTopo + goodFlows,
		"sender.yaml": goodTopo + goodFlows + "output: {sender_fct: true}\n",
	})
	var stdout, stderr bytes.Buffer
	for _, name := range []string{"plain", "sender"} {
		if code := run([]string{"run", filepath.Join(dir, name+".yaml"), "--out", filepath.Join(dir, name), "--quiet"}, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr.String())
		}
	}
	ph, prows := readFCT(t, filepath.Join(dir, "plain"))
	sh, srows := readFCT(t, filepath.Join(dir, "sender"))
	if ph != results.FCTHeader || sh != results.FCTHeader+","+results.SenderColumns {
		t.Fatalf("headers %q and %q", ph, sh)
	}
	for i := range prows {
		for col, v := range prows[i] {
			if srows[i][col] != v {
				t.Errorf("flow %d: %s is %q without sender_fct and %q with it", i, col, v, srows[i][col])
			}
		}
		sf, err1 := strconv.ParseFloat(srows[i]["sender_fct_ns"], 64)
		rf, err2 := strconv.ParseFloat(srows[i]["fct_ns"], 64)
		if err1 != nil || err2 != nil || sf <= rf {
			t.Errorf("flow %d: sender side %s ns not after the receiver's %s ns", i, srows[i]["sender_fct_ns"], srows[i]["fct_ns"])
		}
	}
	for _, c := range []struct {
		name string
		want bool
	}{{"plain", false}, {"sender", true}} {
		b, err := os.ReadFile(filepath.Join(dir, c.name, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s results.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if (s.SenderFCT != nil) != c.want || s.StrackSim != nil {
			t.Errorf("%s: sender_fct_ns %v, stracksim %v; want sender_fct_ns only with output.sender_fct and no stracksim block",
				c.name, s.SenderFCT, s.StrackSim)
		}
	}
}
