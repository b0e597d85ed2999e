package plot

import (
	"strings"
	"testing"
)

func TestSweepFigure(t *testing.T) {
	dir := writeDir(t, map[string]string{SweepSummaryFile: "point,transport.cc,a.buffer,runs,slowdown_p99_mean,slowdown_p99_ci95\n" +
		"x,reno,64KiB,3,2.5,0.25\nx,reno,1MiB,3,1.5,0.1\nx,cubic,64KiB,3,3,\nx,cubic,1MiB,0,,\n"})
	fig, err := SweepFigure(dir, "slowdown_p99", "a.buffer")
	if err != nil {
		t.Fatal(err)
	}
	if fig.Name != "sweep_slowdown_p99_vs_buffer" {
		t.Errorf("name %q", fig.Name)
	}
	s := svgOf(t, fig)
	for _, want := range []string{">64KiB<", ">1MiB<", ">cc=reno<", ">cc=cubic<"} {
		if !strings.Contains(s, want) {
			t.Errorf("svg has no %s", want)
		}
	}
	if _, err := SweepFigure(dir, "nosuch", "a.buffer"); err == nil || !strings.Contains(err.Error(), "one of slowdown_p99") {
		t.Errorf("bad metric: %v", err)
	}
	if _, err := SweepFigure(dir, "slowdown_p99", "b"); err == nil || !strings.Contains(err.Error(), "it has transport.cc, a.buffer") {
		t.Errorf("bad x: %v", err)
	}
}
