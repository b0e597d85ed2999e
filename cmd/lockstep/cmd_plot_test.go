package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plotTestdata is a run directory with fct.csv only (no cwnd.csv,
// queue_depth.csv or summary.json).
const plotTestdata = "../../plot/testdata/fctonly"

func runPlot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout bytes.Buffer
	cmd := newPlotCmd(&stdout)
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	return stdout.String(), err
}

func TestPlotCmd_DrawsAndReportsSkips(t *testing.T) {
	out := filepath.Join(t.TempDir(), "figs")
	got, err := runPlot(t, "--out", out, plotTestdata)
	if err != nil {
		t.Fatalf("plot: want no error, got %v", err)
	}
	var want strings.Builder
	for _, name := range []string{"fct_cdf", "fct_per_flow", "fct_vs_size"} {
		p := filepath.Join(out, name)
		want.WriteString("drew " + name + ": " + p + ".png " + p + ".svg\n")
	}
	want.WriteString("skipped slowdown_vs_size: no finished flows with a slowdown (fct.csv from an older lockstep?)\n")
	want.WriteString("skipped cwnd: no cwnd.csv\nskipped queue_depth: no queue_depth.csv\n")
	if got != want.String() {
		t.Errorf("stdout:\nwant %q\ngot  %q", want.String(), got)
	}
	for _, f := range []string{"fct_cdf.png", "fct_cdf.svg", "fct_per_flow.png", "fct_vs_size.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: want it written, got %v", f, err)
		}
	}
}

func TestPlotCmd_FormatLogxMaxSeriesAndDefaultOutDir(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(plotTestdata, "fct.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fct.csv"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runPlot(t, "--format", "svg", "--logx", "--max-series", "3", dir); err != nil {
		t.Fatalf("plot: want no error, got %v", err)
	}
	svgs, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	pngs, _ := filepath.Glob(filepath.Join(dir, "*.png"))
	if len(svgs) != 3 || len(pngs) != 0 {
		t.Errorf("--format svg without --out: want 3 svg and no png in DIR, got %v and %v", svgs, pngs)
	}
}

func TestPlotCmd_BadInputIsOneLineUsageError(t *testing.T) {
	const hdr = "flow_id,src,dst,size_bytes,start_ns,finish_ns,fct_ns,packets_sent,retransmits,timeouts,ecn_marked_acks,finished\n"
	malformed := write(t, map[string]string{"fct.csv": hdr + "0,0,1,1000,0.000,5.000,5.000,1,0,0,0,true\n1,0,1,big,0.000,5.000,5.000,1,0,0,0,true\n"})
	missing := filepath.Join(t.TempDir(), "nope")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"missing dir", []string{missing}, []string{missing, "no such run directory"}},
		{"no fct.csv", []string{t.TempDir()}, []string{"fct.csv", "cannot read"}},
		{"malformed fct.csv", []string{malformed}, []string{filepath.Join(malformed, "fct.csv") + ":3:", "size_bytes"}},
		{"unknown format", []string{"--format", "pdf", plotTestdata}, []string{"pdf"}},
		{"zero max-series", []string{"--max-series", "0", plotTestdata}, []string{"--max-series"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := runPlot(t, c.args...)
			if err == nil {
				t.Fatalf("plot %v: want an error, got none (stdout %q)", c.args, out)
			}
			var u usageError
			if !errors.As(err, &u) {
				t.Errorf("want a usageError (exit status 2), got %T: %v", err, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error: want it to contain %q, got %q", w, err)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error: want one line, got %q", err)
			}
			if out != "" {
				t.Errorf("stdout: want nothing on error, got %q", out)
			}
		})
	}
}
