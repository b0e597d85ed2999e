package docs

import (
	"os"
	"regexp"
	"testing"

	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
)

// TestScenarioDoc_ExamplesRun validates and runs every ```yaml block of
// scenario.md: the documentation cannot drift from the parser.
func TestScenarioDoc_ExamplesRun(t *testing.T) {
	text, err := os.ReadFile("scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(text), -1)
	if len(blocks) < 8 {
		t.Fatalf("found %d yaml examples in scenario.md, want at least 8", len(blocks))
	}
	for i, m := range blocks {
		b, err := scenario.Load("scenario.md", []byte(m[1]), scenario.Dir("."))
		if err != nil {
			t.Errorf("example %d: %v", i+1, err)
			continue
		}
		r, err := runner.Run(b, runner.Options{})
		if err != nil {
			t.Errorf("example %d: run: %v", i+1, err)
			continue
		}
		s := r.Summary()
		if s.FlowsFinished != s.Flows {
			t.Errorf("example %d: %d of %d flows finished (stopped by %s)", i+1, s.FlowsFinished, s.Flows, s.StoppedBy)
		}
		if c := r.Fabric.Conservation(); c.Balance() != 0 {
			t.Errorf("example %d: packets not conserved: %+v", i+1, c)
		}
	}
}
