package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/sim"
)

func oneFlow(hostRate, bnRate, delay, bnBuffer, transport, size string) string {
	return `
topology:
  type: dumbbell
  dumbbell:
    senders: 1
    receivers: 1
    host: {rate: ` + hostRate + `, delay: ` + delay + `, buffer: 4MiB}
    bottleneck: {rate: ` + bnRate + `, delay: ` + delay + `, buffer: ` + bnBuffer + `}
transport: ` + transport + `
workload:
  - type: flows
    flows: [{src: 0, dst: 1, size: ` + size + `}]
`
}

func TestReceiveWindow_LimitsRateToRwndPerRTT(t *testing.T) {
	// 20 segments of 1436 B per round trip of 60 us propagation plus three
	// 120 ns serialisations of data and three 5.12 ns of ACK.
	r := runYAML(t, oneFlow("100Gbps", "100Gbps", "10us", "4MiB", "{rwnd: 28720, init_cwnd: 100}", "10MB"))
	rec := r.Fabric.Transport().Records[0]
	rtt := 60*sim.Microsecond + 3*120*sim.Nanosecond + 3*5120*sim.Picosecond
	want := 28720 / rtt.Seconds() // bytes per second
	got := 10e6 / rec.Finish.Seconds()
	if got < 0.95*want || got > 1.01*want {
		t.Fatalf("rate %.3f Gb/s, want rwnd/RTT = %.3f Gb/s (within -5%%/+1%%)", got*8/1e9, want*8/1e9)
	}
}

func TestCwndTrace_RecordsEvents(t *testing.T) {
	r := runYAML(t, oneFlow("100Gbps", "10Gbps", "5us", "64KiB", "{rto: {min: 1ms}}", "5MB")+"output: {cwnd: {all: true}}\n")
	dir := t.TempDir()
	if err := r.WriteDir(dir, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cwnd.csv"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.HasPrefix(text, results.CwndHeader+"\n") {
		t.Fatalf("cwnd.csv header: %q", strings.SplitN(text, "\n", 2)[0])
	}
	for _, w := range []string{",slow-start,", ",congestion-avoidance,", "fast-retransmit", ",recovery,"} {
		if !strings.Contains(text, w) {
			t.Errorf("cwnd.csv lacks %q (a 64 KiB buffer must cause loss and recovery)", w)
		}
	}
}

func TestQueueDepth_SampledWhileBusyAndRunDrains(t *testing.T) {
	r := runYAML(t, oneFlow("100Gbps", "10Gbps", "5us", "64KiB", "{rto: {min: 1ms}}", "1MB")+"output: {queues: {interval: 10us}}\n")
	if r.StoppedBy != "flows-done" {
		t.Fatalf("stopped by %s: sampling must not keep the run alive", r.StoppedBy)
	}
	rows := r.Depths
	var peak int64
	for i, d := range rows {
		if d.Time%(10*sim.Microsecond) != 0 {
			t.Fatalf("sample at %v is off the 10us grid", d.Time)
		}
		if i > 0 && d.Time < rows[i-1].Time {
			t.Fatal("samples out of time order")
		}
		if d.Switch == "left" && d.Port == 1 {
			peak = max(peak, d.Bytes)
		}
	}
	var want int64
	for _, q := range r.Ports {
		if q.Switch == "left" && q.Peer == "right" {
			want = q.PeakBytes
		}
	}
	if peak == 0 || peak > want {
		t.Fatalf("sampled bottleneck peak %d B, want in (0, %d] (the port's true peak)", peak, want)
	}
	if last := rows[len(rows)-1]; last.Bytes != 0 {
		t.Fatalf("last sample %+v: want the queue seen draining to 0", last)
	}
}

func TestCwndTrace_HyStartPlusPlusReportsCSSEntryAndExit(t *testing.T) {
	r := runYAML(t, oneFlow("10Gbps", "1Gbps", "500us", "4MiB",
		"{cc: cubic, options: {hystart: hystart++}, rto: {min: 10ms}}", "20MB")+"output: {cwnd: {all: true}}\n")
	var events []string
	for _, row := range r.Fabric.Transport().CwndLog {
		if row.Event != "" {
			events = append(events, row.Event)
		}
	}
	joined := strings.Join(events, " ")
	if !strings.Contains(joined, "css-entry") || !strings.Contains(joined, "ss-exit:") {
		t.Fatalf("events %q: want css-entry and a later ss-exit:REASON", joined)
	}
	if strings.Index(joined, "css-entry") > strings.Index(joined, "ss-exit:") {
		t.Fatalf("events %q: css-entry must come before the exit", joined)
	}
}
