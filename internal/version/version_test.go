package version

import (
	"runtime"
	"strings"
	"testing"
)

func TestGet_NamesVersionAndGo(t *testing.T) {
	in := Get()
	if in.Version != Version || in.Go != runtime.Version() {
		t.Fatalf("Get() = %+v, want version %q and Go %q", in, Version, runtime.Version())
	}
	s := in.String()
	if !strings.HasPrefix(s, "lockstep "+Version+" (") || !strings.Contains(s, runtime.Version()) {
		t.Fatalf("String() = %q: want lockstep VERSION (COMMIT, GO)", s)
	}
}
