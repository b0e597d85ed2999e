package results_test

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/internal/version"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// onePart runs examples/dumbbell.yaml in one fabric and returns its part.
func onePart(t *testing.T) (*scenario.Built, *results.Part) {
	t.Helper()
	b, err := scenario.LoadFile("../examples/dumbbell.yaml", scenario.WithCwnd())
	if err != nil {
		t.Fatal(err)
	}
	f, err := fabric.New(b.Fabric)
	if err != nil {
		t.Fatal(err)
	}
	rec := results.NewRecorder(b, f)
	f.RunUntil(b.Limit())
	if f.Engine().NextEventTime() != sim.Never {
		t.Fatal("the dumbbell did not drain")
	}
	return b, rec.Part(0, results.FinishDrained)
}

func TestMerge_OnePartIsTheRun(t *testing.T) {
	b, p := onePart(t)
	o, err := results.Merge(b, []*results.Part{p})
	if err != nil {
		t.Fatal(err)
	}
	if o.StoppedBy != "flows-done" || o.End != p.LastCompletion || len(o.Records) != len(b.Fabric.Flows) || len(o.Cwnd) == 0 {
		t.Errorf("stopped by %s at %v (last completion %v), %d records, %d cwnd rows", o.StoppedBy, o.End,
			p.LastCompletion, len(o.Records), len(o.Cwnd))
	}
	var fct bytes.Buffer
	if err := o.WriteFCT(&fct); err != nil || !strings.HasPrefix(fct.String(), results.FCTHeader+"\n") {
		t.Errorf("fct.csv: %v\n%s", err, fct.String())
	}
	if c := o.Conservation(); c.Balance() != 0 {
		t.Errorf("conservation %+v does not balance", c)
	}
}

func TestMerge_RefusesIncompleteOrInconsistentParts(t *testing.T) {
	for name, c := range map[string]func(p *results.Part) []*results.Part{
		"repeated partition": func(p *results.Part) []*results.Part { return []*results.Part{p, p} },
		"no parts":           func(*results.Part) []*results.Part { return nil },
		"no receiver": func(p *results.Part) []*results.Part {
			p.Flows[0].Receiver = false
			return []*results.Part{p}
		},
		"another scenario": func(p *results.Part) []*results.Part {
			p.Digest = "0"
			return []*results.Part{p}
		},
		"unfinished": func(p *results.Part) []*results.Part {
			p.Finish = 0
			return []*results.Part{p}
		},
		"different finishes": func(p *results.Part) []*results.Part {
			q := *p
			q.Partition, q.Finish, q.Flows = 1, results.FinishLimit, nil
			return []*results.Part{p, &q}
		},
	} {
		b, p := onePart(t)
		if _, err := results.Merge(b, c(p)); err == nil {
			t.Errorf("%s: merged", name)
		}
	}
}

func TestMergePartial_MissingPartsAreUnfinishedAndMarked(t *testing.T) {
	b, p := onePart(t)
	o := results.MergePartial(b, 2, []*results.Part{p}, "partition 1: gone")
	s := o.Summary()
	if s.Complete || s.Reason != "partition 1: gone" || s.StoppedBy != "incomplete" || len(s.MissingPartitions) != 1 ||
		s.MissingPartitions[0] != 1 || s.FlowsFinished != len(b.Fabric.Flows) {
		t.Errorf("summary %+v", s)
	}
	none := results.MergePartial(b, 1, nil, "NATS gone").Summary()
	if none.FlowsFinished != 0 || none.Flows != len(b.Fabric.Flows) || none.Complete {
		t.Errorf("no parts: summary %+v", none)
	}
	full, err := results.Merge(b, []*results.Part{p})
	if err != nil || !full.Summary().Complete {
		t.Errorf("Merge: complete %v, err %v", full != nil && full.Summary().Complete, err)
	}
}

func TestSummary_RecordsTheBuild(t *testing.T) {
	b, p := onePart(t)
	o, err := results.Merge(b, []*results.Part{p})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	s := o.Summary()
	if err := results.WriteSummary(&buf, &s); err != nil {
		t.Fatal(err)
	}
	want := `"build": {
    "version": "` + version.Version + `",`
	if s.Build != version.Get() || !strings.Contains(buf.String(), want) || !strings.Contains(buf.String(), runtime.Version()) {
		t.Errorf("summary.json build = %+v, want %+v; text:\n%s", s.Build, version.Get(), buf.String())
	}
}
