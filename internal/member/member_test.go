package member

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstep-sim/lockstep/internal/wire"
)

func TestSet_KeysSignAndTheFileRoundTrips(t *testing.T) {
	s, err := NewSet("r1", []string{"c1", "c2"}, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.All()); n != 5 {
		t.Fatalf("%d members, want 5", n)
	}
	seen := map[string]bool{}
	for _, c := range s.All() {
		if seen[c.Public()] {
			t.Fatalf("two members share key %s", c.Public())
		}
		seen[c.Public()] = true
	}
	path := filepath.Join(t.TempDir(), "n1.json")
	if err := Write(path, s.Nodes[1]); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file mode %v (err %v), want 0600", fi.Mode().Perm(), err)
	}
	t.Setenv(Env, path)
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != Node(1) || c.Public() != s.Nodes[1].Public() || c.LauncherKey != s.Launcher.Public() || !c.ServerAuth {
		t.Fatalf("loaded %+v, want node-1's credentials", c)
	}
	msg := []byte("m")
	if !Verify(c.NodeKeys[1], msg, c.Sign(msg)) || Verify(c.NodeKeys[0], msg, c.Sign(msg)) {
		t.Errorf("node 1's signature verifies under the wrong key (or not under its own)")
	}
	for who, a := range map[string]wire.Abort{"launcher": s.Launcher.Abort("x"), "c2": s.Coordinators["c2"].Abort("x")} {
		if !c.ByAuthority(wire.AbortMessage("r1", &a), a.Sig) {
			t.Errorf("an abort signed by %s is not by authority", who)
		}
	}
	a := s.Nodes[0].Abort("x")
	if c.ByAuthority(wire.AbortMessage("r1", &a), a.Sig) {
		t.Errorf("an abort signed by node 0 is by authority")
	}
	a = s.Launcher.Abort("x")
	a.Reason = "y"
	if c.ByAuthority(wire.AbortMessage("r1", &a), a.Sig) {
		t.Errorf("an abort whose reason changed after signing verifies")
	}
}
