package runner_test

import (
	"os/exec"
	"path/filepath"
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
