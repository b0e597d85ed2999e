package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/switchsim"
)

// TestSwitchList_EveryModuleAndOption: `lockstep switch list` prints every
// stage, every registered module with its one line, each stage's default
// marked, and every option each module takes.
func TestSwitchList_EveryModuleAndOption(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"switch", "list"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	r := switchsim.Builtins()
	for _, st := range switchsim.Stages {
		if !strings.Contains(out, "\n"+st.String()+":\n") && !strings.HasPrefix(out, st.String()+":\n") {
			t.Errorf("stage %s missing", st)
		}
		if def := switchsim.DefaultModule(st); !strings.Contains(out, "  "+def+" (default) ") {
			t.Errorf("stage %s: default module %s not marked", st, def)
		}
		for _, m := range r.Modules(st) {
			if !strings.Contains(out, "  "+m.Name+" ") || !strings.Contains(out, m.Doc) {
				t.Errorf("%s module %s missing", st, m.Name)
			}
			for _, o := range m.Options {
				if !strings.Contains(out, o.Key+" = "+o.Default+": "+o.Doc) {
					t.Errorf("%s module %s: option %s missing", st, m.Name, o.Key)
				}
			}
		}
	}
	for _, want := range []string{"codel", "RFC 8289", "drill", "strict"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in the list", want)
		}
	}
	stdout.Reset()
	if code := run([]string{"switch", "list", "--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "switch.modules") {
		t.Errorf("switch list --help: exit %d, want the help naming switch.modules: %s", code, stdout.String())
	}
}
