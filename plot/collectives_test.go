package plot

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFigures_CollectivesDrawCCTAndIterationTime(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		FCTFile: "flow_id,src,dst,size_bytes,start_ns,finish_ns,fct_ns,finished\n0,0,1,100,0.000,10.000,10.000,true\n",
		CollectivesFile: "job,iteration,type,algorithm,bytes,ranks,start_ns,end_ns,cct_ns,ideal_cct_ns,algbw_GBps,busbw_GBps\n" +
			"dp,0,allreduce,ring,100,2,0.000,5000.000,5000.000,4000.000,0.020,0.020\ndp,1,allreduce,ring,100,2,6000.000,,,4000.000,,\n",
		JobsFile: "job,iteration,begin_ns,end_ns,iteration_ns\ndp,0,0.000,5000.000,5000.000\ndp,1,5000.000,,\n",
	}
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.CCT) != 1 || len(r.CCT[0].Points) != 1 || r.CCT[0].Points[0].Y != 5 || len(r.Iterations) != 1 {
		t.Fatalf("CCT %+v iterations %+v: want one job, one finished iteration of 5us", r.CCT, r.Iterations)
	}
	figs, _, err := Figures(r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range figs {
		got[f.Name] = true
	}
	if !got[FigCCT] || !got[FigIteration] {
		t.Errorf("figures %v: want %s and %s", got, FigCCT, FigIteration)
	}
}
