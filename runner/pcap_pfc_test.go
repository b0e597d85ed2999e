package runner_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/results"
)

// TestPcap_TsharkDecodesPauseFrames: a lossless incast captured
// at one sender: tshark decodes the PAUSE frames its switch sent it as PFC
// (Ethertype 0x8808, opcode 0x0101, class-enable vector, 8 pause times).
func TestPcap_TsharkDecodesPauseFrames(t *testing.T) {
	tshark := lookTshark(t)
	r := runYAML(t, `
topology:
  type: leafspine
  leafspine:
    leaves: 3
    spines: 2
    hosts_per_leaf: 8
    host: {rate: 100Gbps, delay: 1us}
    fabric: {rate: 100Gbps, delay: 1us}
switch:
  classes: [{}, {}, {}, {lossless: true}, {}]
  control_class: 4
  pfc: {xoff: 16KiB, xon: 8KiB, quanta: 1000}
workload:
  - type: incast
    dst: 0
    n: 16
    size: 256KB
    class: 3
output:
  pcap: {hosts: [8]}
`)
	dir := t.TempDir()
	if err := r.WriteDir(dir, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tshark, "-n", "-r", filepath.Join(dir, "pcap", "h8.pcap"), "-Y", "macc",
		"-T", "fields", "-E", "separator=/t", "-e", "eth.type", "-e", "eth.dst", "-e", "macc.opcode",
		"-e", "macc.cbfc.enbv", "-e", "macc.cbfc.pause_time.c3", "-e", "macc.cbfc.pause_time.c0", "-e", "frame.len")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	var xoff, xon int
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "\t")
		if len(f) != 7 || f[0] != "0x8808" || f[1] != "01:80:c2:00:00:01" || f[2] != "0x0101" || f[3] != "0x0008" || f[5] != "0" || f[6] != "60" {
			t.Fatalf("PAUSE frame decoded as %q; want type 0x8808 to 01:80:c2:00:00:01, opcode 0x0101, vector 0x0008 (class 3), 60 bytes", line)
		}
		switch f[4] {
		case "1000":
			xoff++
		case "0":
			xon++
		default:
			t.Fatalf("class 3 pause time %s, want 1000 or 0", f[4])
		}
	}
	t.Logf("host 8 received %d XOFF and %d XON frames", xoff, xon)
	if xoff == 0 || xon == 0 {
		t.Errorf("expected XOFF and XON frames at a paused sender, got %d and %d", xoff, xon)
	}
}

// TestPcap_TsharkDecodesTrimmedPackets: an STrack incast with trimming,
// captured at the receiver: tshark shows each trimmed packet as headers
// only (TCP length 0, DSCP 3, the cut payload in the lockstep option) and
// each trim NACK the receiver sent (DSCP 7) echoing its sequence.
func TestPcap_TsharkDecodesTrimmedPackets(t *testing.T) {
	tshark := lookTshark(t)
	r := runYAML(t, `
topology:
  type: leafspine
  leafspine:
    leaves: 2
    spines: 2
    hosts_per_leaf: 8
    host: {rate: 100Gbps, delay: 1us, buffer: 32KiB}
    fabric: {rate: 100Gbps, delay: 1us, buffer: 32KiB}
transport: {cc: strack, mtu: 4096}
switch:
  classes: [{}, {}]
  trim: {}
workload:
  - type: incast
    dst: 0
    senders: [8, 9, 10, 11, 12, 13, 14, 15]
    size: 128KiB
output:
  pcap: {hosts: [0]}
`)
	var trimmed uint64
	for _, c := range r.Classes {
		trimmed += c.Trimmed
	}
	if trimmed == 0 {
		t.Fatal("nothing was trimmed; the test needs trims")
	}
	dir := t.TempDir()
	if err := r.WriteDir(dir, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tshark, "-n", "-r", filepath.Join(dir, "pcap", "h0.pcap"), "-o", "tcp.relative_sequence_numbers:FALSE",
		"-Y", "ip.dsfield.dscp == 3 || ip.dsfield.dscp == 7", "-T", "fields", "-E", "separator=/t",
		"-e", "ip.dsfield.dscp", "-e", "ip.dst", "-e", "tcp.len", "-e", "tcp.seq_raw", "-e", "tcp.flags.ack",
		"-e", "tcp.options.experimental.exid", "-e", "tcp.options.experimental.data", "-e", "frame.len")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	var headers, nacks int
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimRight(line, "\n"), "\t")
		if len(f) != 8 {
			t.Fatalf("tshark row %q", line)
		}
		switch f[0] {
		case "3": // a trimmed header arriving at host 0 (10.0.0.1)
			cut, err := strconv.ParseUint(f[6], 16, 32)
			if f[1] != "10.0.0.1" || f[2] != "0" || f[5] != "0x4c53" || err != nil || cut == 0 || cut > 4032 || f[7] != "78" {
				t.Fatalf("trimmed packet decoded as %q; want to 10.0.0.1, TCP length 0, option 0x4c53 with the 1..4032 cut bytes, 78 bytes on the wire", line)
			}
			headers++
		case "7": // a trim NACK host 0 sent
			if f[1] == "10.0.0.1" || f[4] != "1" || f[5] != "0x4c53" {
				t.Fatalf("trim NACK decoded as %q; want an ACK from host 0 with the lockstep option", line)
			}
			nacks++
		}
	}
	t.Logf("host 0 received %d trimmed headers and sent %d trim NACKs (%d trims in the fabric)", headers, nacks, trimmed)
	if uint64(headers) != trimmed || nacks != headers {
		t.Errorf("want every trimmed packet (%d) captured at the receiver and one NACK each, got %d headers and %d NACKs", trimmed, headers, nacks)
	}
}

// TestPcap_TsharkDecodesAStormHostsPauseFrames: a host whose receive
// pipeline stalls (pfc_storm) sends its switch PAUSE frames; its capture
// shows them as PFC frames from the host (its label 02:01 and element
// id), the XOFFs with the storm's quanta and the XON when the stall ends.
// (The sender's first window, 10 segments, goes over the 8 KiB XOFF.)
func TestPcap_TsharkDecodesAStormHostsPauseFrames(t *testing.T) {
	tshark := lookTshark(t)
	r := runYAML(t, `
topology:
  type: leafspine
  leafspine:
    leaves: 2
    spines: 1
    hosts_per_leaf: 2
    host: {rate: 100Gbps, delay: 1us}
    fabric: {rate: 100Gbps, delay: 1us}
switch:
  classes: [{lossless: true}, {}]
  pfc: {xoff: 8KiB, xon: 4KiB}
impairments:
  - host: h0
    pfc_storm: {at: 0s, until: 100us, quanta: 2000}
workload:
  - type: flows
    flows: [{src: 2, dst: 0, size: 256KB}]
output:
  pcap: {hosts: [0]}
`)
	dir := t.TempDir()
	if err := r.WriteDir(dir, results.Perf{}, nil); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tshark, "-n", "-r", filepath.Join(dir, "pcap", "h0.pcap"), "-Y", "macc",
		"-T", "fields", "-E", "separator=/t", "-e", "eth.src", "-e", "macc.opcode", "-e", "macc.cbfc.enbv",
		"-e", "macc.cbfc.pause_time.c0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	var xoff, xon int
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "\t")
		if len(f) != 4 || f[0] != "02:01:00:00:00:00" || f[1] != "0x0101" || f[2] != "0x0001" {
			t.Fatalf("PAUSE frame decoded as %q; want one from host 0 (02:01:00:00:00:00), opcode 0x0101, vector 0x0001", line)
		}
		switch f[3] {
		case "2000":
			xoff++
		case "0":
			xon++
		default:
			t.Fatalf("pause time %s, want 2000 or 0", f[3])
		}
	}
	sent := r.Fabric.Host(0).PausesSent()
	t.Logf("host 0 sent %d XOFF and %d XON frames", xoff, xon)
	if xoff < 2 || xon != 1 || uint64(xoff+xon) != sent {
		t.Errorf("want XOFFs (refreshed) and one XON, %d in all, got %d and %d", sent, xoff, xon)
	}
}
