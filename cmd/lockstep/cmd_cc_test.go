package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCC runs `lockstep cc ARGS...` through newCCCmd.
func runCC(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newCCCmd(&out, &errOut)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// ccScript writes a trace script into a temporary directory.
func ccScript(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.trace")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const ccGoodScript = `cc reno
recovery reno
mss 1000
init_cwnd 10
rto fixed 100ms
send
ack 1000
# RFC 5681 §3.1: one SMSS per ACK in slow start
expect cwnd=11000 nxt=12000
`

func TestCCTrace_PrintsTableAndPasses(t *testing.T) {
	out, errOut, err := runCC(t, "trace", ccScript(t, ccGoodScript))
	if err != nil {
		t.Fatalf("want success, got %v (stderr %q)", err, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a header and 3 rows ((start), send, ack), got %d lines:\n%s", len(lines), out)
	}
	for _, col := range []string{"line", "time", "cwnd", "segs", "ssthresh", "state", "pipe", "una", "nxt", "sent"} {
		if !strings.Contains(lines[0], col) {
			t.Errorf("header: want column %q, got %q", col, lines[0])
		}
	}
	if !strings.Contains(lines[3], "ack 1000") || !strings.Contains(lines[3], "11000") {
		t.Errorf("last row: want the ack and cwnd 11000, got %q", lines[3])
	}
	if errOut != "" {
		t.Errorf("stderr: want nothing, got %q", errOut)
	}
}

func TestCCTrace_FailedExpectIsExit1WithLine(t *testing.T) {
	src := strings.Replace(ccGoodScript, "expect cwnd=11000", "expect cwnd=12000", 1)
	out, errOut, err := runCC(t, "trace", ccScript(t, src))
	if err == nil {
		t.Fatal("want an error for a failed expect, got nil")
	}
	var u usageError
	if errors.As(err, &u) || isCobraUsage(err) {
		t.Fatalf("a failed expect is a failed run (exit 1), not bad input: got %v", err)
	}
	if !strings.Contains(err.Error(), "first at line 9") {
		t.Fatalf("error: want the line number 9, got %q", err)
	}
	if !strings.Contains(errOut, "s.trace:9: expect cwnd=12000 nxt=12000: cwnd: want 12000, got 11000") {
		t.Fatalf("stderr: want the failed expect with want vs got, got %q", errOut)
	}
	if !strings.Contains(out, "ack 1000") {
		t.Fatalf("stdout: want the full table even when an expect fails, got %q", out)
	}
}

func TestCCTrace_BadInputIsExit2(t *testing.T) {
	cases := []struct {
		name string
		path func(t *testing.T) string
		want string
	}{
		{"missing file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none.trace") }, "cannot read script"},
		{"parse error", func(t *testing.T) string { return ccScript(t, "send\nfly 3\n") }, "s.trace:2: unknown step"},
		{"unknown cc", func(t *testing.T) string { return ccScript(t, "cc nosuch\nsend\n") }, "nosuch"},
		{"unsent ack", func(t *testing.T) string { return ccScript(t, "ack 5000\n") }, "s.trace:1: ack 5000"},
		{"option refused", func(t *testing.T) string { return ccScript(t, "option variant=kelly\nsend\n") }, "s.trace:1: option variant=kelly"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := runCC(t, "trace", c.path(t))
			var u usageError
			if !errors.As(err, &u) {
				t.Fatalf("want a usage error (exit 2), got %T %v", err, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q in the error, got %q", c.want, err)
			}
		})
	}
	if _, _, err := runCC(t, "trace"); err == nil || !isCobraUsage(err) {
		t.Fatalf("no script: want cobra's argument error, got %v", err)
	}
}

func TestCCList_NamesRegistryModules(t *testing.T) {
	out, _, err := runCC(t, "list")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "cc:") || !strings.Contains(out, "recovery:") || !strings.Contains(out, "reno") {
		t.Fatalf("want the controller and recovery names (reno at least), got %q", out)
	}
}
