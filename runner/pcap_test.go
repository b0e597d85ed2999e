package runner_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
)

// tsharkFields are the columns tsharkFrames asks for, in order.
var tsharkFields = []string{
	"frame.time_epoch", "frame.len", "frame.cap_len",
	"ip.src", "ip.dst", "ip.dsfield.ecn", "ip.ttl",
	"tcp.seq", "tcp.ack", "tcp.len", "tcp.flags.ack", "tcp.flags.ece", "tcp.flags.cwr",
	"tcp.options.timestamp.tsval", "tcp.options.sack_le", "tcp.options.sack_re",
	"tcp.options.experimental.exid",
	"tcp.analysis.retransmission", "tcp.analysis.fast_retransmission",
	"tcp.analysis.spurious_retransmission", "tcp.analysis.out_of_order",
}

// frame is one tshark output row: field name -> value ("" when absent;
// repeated fields joined by commas).
type frame map[string]string

func (f frame) int(t *testing.T, name string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(f[name], 0, 64)
	if err != nil {
		t.Fatalf("tshark field %s = %q: %v", name, f[name], err)
	}
	return v
}

// ns parses frame.time_epoch ("S.NNNNNNNNN") exactly.
func (f frame) ns(t *testing.T) int64 {
	t.Helper()
	s, frac, ok := strings.Cut(f["frame.time_epoch"], ".")
	sec, err1 := strconv.ParseInt(s, 10, 64)
	n, err2 := strconv.ParseInt(frac, 10, 64)
	if !ok || len(frac) != 9 || err1 != nil || err2 != nil {
		t.Fatalf("frame.time_epoch %q is not seconds with 9 decimals", f["frame.time_epoch"])
	}
	return sec*1e9 + n
}

// startTshark starts reading a pcap file with tshark (sequence numbers raw)
// and returns a function that waits for it and returns its frames. Both
// captures are read at once: tshark's start-up dominates the test's time.
func startTshark(t *testing.T, tshark, file string) (wait func() []frame) {
	t.Helper()
	args := []string{"-n", "-r", file, "-o", "tcp.relative_sequence_numbers:FALSE",
		"-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,"}
	for _, f := range tsharkFields {
		args = append(args, "-e", f)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(tshark, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("tshark: %v", err)
	}
	waited := false
	t.Cleanup(func() { // a failure before wait: end this tshark (ours, by pid)
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return func() []frame {
		t.Helper()
		waited = true
		if err := cmd.Wait(); err != nil {
			t.Fatalf("tshark %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		var out []frame
		for line := range strings.Lines(stdout.String()) {
			cols := strings.Split(strings.TrimRight(line, "\n"), "\t")
			if len(cols) != len(tsharkFields) {
				t.Fatalf("tshark row has %d columns, want %d: %q", len(cols), len(tsharkFields), line)
			}
			f := frame{}
			for i, c := range cols {
				f[tsharkFields[i]] = c
			}
			out = append(out, f)
		}
		return out
	}
}

// lookTshark finds tshark or fails: the pcap output is only tested for real
// when a real reader decodes it, so a missing tshark must not pass quietly.
func lookTshark(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		t.Fatalf("tshark is not installed (%v): run `make deps`, which installs Debian's tshark package "+
			"(.ci/run does it); the pcap tests read lockstep's captures with it", err)
	}
	return p
}

// A Reno/SACK flow over a lossy, ECN-marking bottleneck, captured at its
// sender (host 0) and receiver (host 2) and read back by tshark: every
// packet each host sent or received is a frame, with the documented
// encoding (docs/decisions.md "Packet capture (pcap/)").
func TestPcap_TsharkReadsSenderAndReceiverCaptures(t *testing.T) {
	tshark := lookTshark(t)
	r := runYAML(t, `
topology:
  type: dumbbell
  dumbbell:
    senders: 2
    receivers: 2
    host: {rate: 100Gbps, delay: 1us}
    bottleneck: {rate: 10Gbps, delay: 2us, buffer: 128KiB, ecn: {mode: step, k: 20KB}}
transport: {cc: reno, recovery: sack, ecn: true, rto: {min: 1ms}}
impairments:
  - {link: [left, right], direction: forward, loss: 0.02}
output:
  pcap: {hosts: [2, 0]}
workload:
  - type: flows
    flows: [{src: 0, dst: 2, size: 300KB}, {src: 1, dst: 3, size: 300KB}]
`)
	dir := t.TempDir()
	if err := r.WriteDir(dir, results.Perf{}, nil); err != nil {
		t.Fatalf("WriteDir: %v", err)
	}
	if len(r.Pcaps) != 2 || r.Pcaps[0].Host != 2 || r.Pcaps[1].Host != 0 {
		t.Fatalf("captures: want hosts [2 0] in the scenario's order, got %+v", r.Pcaps)
	}
	rec := r.Fabric.Transport().Records[0] // flow 0: host 0 -> host 2
	if rec.Retransmits == 0 || !rec.Finished {
		t.Fatalf("the scenario must lose and retransmit a packet of flow 0 and finish: %+v", rec)
	}
	const mss = 1500 - 64 // mtu - header (scenario defaults)
	endNs := int64(r.End) / 1000

	waitSnd := startTshark(t, tshark, filepath.Join(dir, "pcap", "h0.pcap"))
	waitRcv := startTshark(t, tshark, filepath.Join(dir, "pcap", "h2.pcap"))

	// The sender's capture.
	snd := r.Fabric.Host(0)
	frames := waitSnd()
	if want := snd.Created + snd.Consumed; uint64(len(frames)) != want {
		t.Fatalf("h0.pcap: want %d frames (%d sent + %d received), tshark read %d", want, snd.Created, snd.Consumed, len(frames))
	}
	var prevNs int64
	var data, acks, retx, wiresharkRetx, sacked, ece, cwr uint64
	var highest int64 // highest sequence sent + 1
	for i, f := range frames {
		ns := f.ns(t)
		if ns < prevNs || ns > endNs {
			t.Fatalf("frame %d: time %d ns outside [%d, %d]", i+1, ns, prevNs, endNs)
		}
		prevNs = ns
		switch {
		case f["ip.src"] == "10.0.0.1" && f["ip.dst"] == "10.0.0.3":
			// Data, sent at the tap: TSval is the send time in us,
			// TTL untouched, ECT(0), the frame 14 + Size long.
			data++
			seq, n := f.int(t, "tcp.seq"), f.int(t, "tcp.len")
			if n <= 0 || n > mss || f["tcp.flags.ack"] != "0" || f["ip.dsfield.ecn"] != "2" || f["ip.ttl"] != "64" {
				t.Fatalf("frame %d: data frame with len %d, ACK flag %s, ECN %s, TTL %s; want 1..%d, 0, 2 (ECT(0)), 64",
					i+1, n, f["tcp.flags.ack"], f["ip.dsfield.ecn"], f["ip.ttl"], mss)
			}
			if ts := f.int(t, "tcp.options.timestamp.tsval"); ts != ns/1000 {
				t.Fatalf("frame %d: TSval %d, want the send time in us %d", i+1, ts, ns/1000)
			}
			if flen, caplen := f.int(t, "frame.len"), f.int(t, "frame.cap_len"); flen != 14+64+n || caplen != 14+20+32 {
				t.Fatalf("frame %d: frame.len %d, cap_len %d; want 14+64+%d and 66 (headers only)", i+1, flen, caplen, n)
			}
			if seq < highest {
				retx++
			}
			highest = max(highest, seq+n)
			if f["tcp.analysis.retransmission"] != "" || f["tcp.analysis.fast_retransmission"] != "" ||
				f["tcp.analysis.spurious_retransmission"] != "" || f["tcp.analysis.out_of_order"] != "" {
				wiresharkRetx++
			}
			if f["tcp.flags.cwr"] == "1" {
				cwr++
			}
		case f["ip.src"] == "10.0.0.3" && f["ip.dst"] == "10.0.0.1":
			// ACKs, received after 3 links: seq 0, the lockstep option
			// when room is left, SACK blocks above the cumulative ACK.
			acks++
			ack := f.int(t, "tcp.ack")
			if f["tcp.flags.ack"] != "1" || f["tcp.seq"] != "0" || f["tcp.len"] != "0" || f["ip.ttl"] != "61" {
				t.Fatalf("frame %d: ACK frame with flag %s, seq %s, len %s, TTL %s; want 1, 0, 0, 61",
					i+1, f["tcp.flags.ack"], f["tcp.seq"], f["tcp.len"], f["ip.ttl"])
			}
			if f["tcp.flags.ece"] == "1" {
				ece++
			}
			if f["tcp.options.sack_le"] == "" {
				if f["tcp.options.experimental.exid"] != "0x4c53" {
					t.Fatalf("frame %d: ACK without SACK has exid %q, want 0x4c53", i+1, f["tcp.options.experimental.exid"])
				}
				continue
			}
			sacked++
			les, res := strings.Split(f["tcp.options.sack_le"], ","), strings.Split(f["tcp.options.sack_re"], ",")
			if len(les) != len(res) || len(les) > 3 {
				t.Fatalf("frame %d: SACK edges %v / %v: want matching lists of at most 3 (with timestamps)", i+1, les, res)
			}
			for b := range les {
				le, err1 := strconv.ParseInt(les[b], 10, 64)
				re, err2 := strconv.ParseInt(res[b], 10, 64)
				if err1 != nil || err2 != nil || le <= ack || re <= le {
					t.Fatalf("frame %d: SACK block %s-%s with ACK %d: want ack < left < right (RFC 2018)", i+1, les[b], res[b], ack)
				}
			}
		default:
			t.Fatalf("frame %d: unexpected addresses %s -> %s", i+1, f["ip.src"], f["ip.dst"])
		}
	}
	if data != snd.Created || acks != snd.Consumed || data != rec.PacketsSent {
		t.Errorf("h0.pcap: want %d data frames (flow 0 sent %d) and %d ACK frames; got %d and %d",
			snd.Created, rec.PacketsSent, snd.Consumed, data, acks)
	}
	if retx != rec.Retransmits {
		t.Errorf("h0.pcap: want %d frames resending sequence space (fct retransmits), got %d", rec.Retransmits, retx)
	}
	if wiresharkRetx == 0 {
		t.Errorf("h0.pcap: tshark's sequence analysis flagged no retransmission; fct.csv has %d", rec.Retransmits)
	}
	if sacked == 0 {
		t.Errorf("h0.pcap: no ACK carries SACK blocks, yet %d segments were retransmitted under SACK recovery", rec.Retransmits)
	}
	if ece != rec.ECNMarkedAcks || ece == 0 || cwr == 0 {
		t.Errorf("h0.pcap: want %d ECE ACKs (fct ecn_marked_acks, > 0) and some CWR data; got %d and %d", rec.ECNMarkedAcks, ece, cwr)
	}
	t.Logf("h0.pcap: %d data (%d retransmitted, tshark flags %d), %d ACKs (%d with SACK, %d ECE)",
		data, retx, wiresharkRetx, acks, sacked, ece)

	// The receiver's capture: CE marks arrive, ECE goes back.
	rcv := r.Fabric.Host(2)
	frames = waitRcv()
	if want := rcv.Created + rcv.Consumed; uint64(len(frames)) != want {
		t.Fatalf("h2.pcap: want %d frames (%d sent + %d received), tshark read %d", want, rcv.Created, rcv.Consumed, len(frames))
	}
	var ce, ect, eceSent uint64
	for i, f := range frames {
		switch f["ip.dst"] {
		case "10.0.0.3":
			switch f["ip.dsfield.ecn"] {
			case "3":
				ce++
			case "2":
				ect++
			default:
				t.Fatalf("frame %d: data with ECN %s, want 2 (ECT(0)) or 3 (CE)", i+1, f["ip.dsfield.ecn"])
			}
		case "10.0.0.1":
			if f["tcp.flags.ece"] == "1" {
				eceSent++
			}
		}
	}
	marks := r.Summary().Marks
	if ce == 0 || ce > marks || ce+ect != rcv.Consumed {
		t.Errorf("h2.pcap: want 0 < CE frames <= %d switch marks and CE+ECT = %d data received; got %d CE, %d ECT", marks, rcv.Consumed, ce, ect)
	}
	if eceSent != ece {
		t.Errorf("h2.pcap: %d ECE ACKs sent, but h0.pcap received %d (the reverse path loses nothing)", eceSent, ece)
	}
	t.Logf("h2.pcap: %d data received (%d CE), %d ACKs sent (%d ECE)", rcv.Consumed, ce, rcv.Created, eceSent)
}

// Without output.pcap no pcap directory appears.
func TestPcap_NoOutputWithoutRequest(t *testing.T) {
	r := runYAML(t, `
topology:
  type: dumbbell
  dumbbell: {senders: 1, receivers: 1, host: {rate: 10Gbps}, bottleneck: {rate: 10Gbps}}
workload:
  - type: flows
    flows: [{src: 0, dst: 1, size: 10KB}]
`)
	dir := t.TempDir()
	if err := r.WriteDir(dir, results.Perf{}, nil); err != nil {
		t.Fatalf("WriteDir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pcap")); !os.IsNotExist(err) {
		t.Errorf("want no pcap directory, got stat error %v", err)
	}
	if len(r.Pcaps) != 0 {
		t.Errorf("want no captures, got %d", len(r.Pcaps))
	}
}

// output.pcap.hosts must name 1..64 distinct existing hosts.
func TestPcap_ScenarioRejectsBadHostLists(t *testing.T) {
	many := make([]string, 65)
	for i := range many {
		many[i] = strconv.Itoa(i % 2)
	}
	for _, c := range []struct{ hosts, want string }{
		{"[]", "must list 1 to 64 host indices, got 0"},
		{"[" + strings.Join(many, ", ") + "]", "must list 1 to 64 host indices, got 65"},
		{"[0, 2]", "output.pcap.hosts[1]: host 2 does not exist (the topology has hosts 0..1)"},
		{"[-1]", "output.pcap.hosts[0]: host -1 does not exist"},
		{"[1, 0, 1]", "output.pcap.hosts[2]: host 1 is listed twice"},
	} {
		text := fmt.Sprintf(`
topology:
  type: dumbbell
  dumbbell: {senders: 1, receivers: 1, host: {rate: 10Gbps}, bottleneck: {rate: 10Gbps}}
output:
  pcap: {hosts: %s}
workload:
  - type: flows
    flows: [{src: 0, dst: 1, size: 10KB}]
`, c.hosts)
		_, err := scenario.Load("test.yaml", []byte(text), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("hosts %s: want an error containing %q, got %v", c.hosts, c.want, err)
		}
	}
}
