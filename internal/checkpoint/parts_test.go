package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStore_PartsCommitAndPrune: the nodes of a distributed run put their
// parts, the launcher commits the manifest; ReadPart refuses a truncated
// or corrupted part naming it; Commit keeps the Keep newest committed
// checkpoints and one being written, and removes those superseded without
// a manifest.
func TestStore_PartsCommitAndPrune(t *testing.T) {
	s := Store{Dir: t.TempDir(), Keep: 2}
	data := file(t)
	put := func(seq uint64, names ...string) Manifest {
		t.Helper()
		m := Manifest{Seq: seq, Window: seq, Digest: "d1", Partitions: len(names)}
		for _, n := range names {
			if _, err := s.PutPart(seq, n, data); err != nil {
				t.Fatal(err)
			}
			m.Files = append(m.Files, NewPart(n, data))
		}
		return m
	}
	if _, err := s.PutPart(1, "../x", data); err == nil {
		t.Errorf("PutPart of ../x: no error")
	}
	for _, seq := range []uint64{10, 20, 30} {
		if _, err := s.Commit(put(seq, "part-0.ckpt", "part-1.ckpt")); err != nil {
			t.Fatal(err)
		}
	}
	put(35, "part-0.ckpt")                       // never committed
	m40 := put(40, "part-0.ckpt", "part-1.ckpt") // committed below
	put(50, "part-0.ckpt")                       // being written
	if _, err := s.Commit(m40); err != nil {
		t.Fatal(err)
	}
	seqs, _ := s.seqs()
	if len(seqs) != 3 || seqs[0] != 30 || seqs[1] != 40 || seqs[2] != 50 {
		t.Fatalf("after commits of 10..40: %v; want [30 40 50]", seqs)
	}
	l, _, err := s.Latest()
	if err != nil || l.Manifest.Seq != 40 || len(l.Files) != 2 {
		t.Fatalf("Latest: %v, %v; want checkpoint 40 with 2 files", l, err)
	}
	p1 := filepath.Join(s.Dir, DirName(40), "part-1.ckpt")
	if err := os.Truncate(p1, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadPart(40, m40.Files[1]); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p1) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated part: %v; want it refused by name", err)
	}
	p0 := filepath.Join(s.Dir, DirName(40), "part-0.ckpt")
	bad := append([]byte(nil), data...)
	bad[len(bad)-10] ^= 1
	if err := os.WriteFile(p0, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadPart(40, m40.Files[0]); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p0) {
		t.Errorf("corrupted part: %v; want it refused by name", err)
	}
	if got, err := s.ReadPart(30, NewPart("part-0.ckpt", data)); err != nil || len(got) != len(data) {
		t.Errorf("a good part: %v", err)
	}
	if gone, err := s.RemoveNewer(30); err != nil || len(gone) != 2 {
		t.Errorf("RemoveNewer(30): %v, %v; want 40 and 50 removed", gone, err)
	}
	if seqs, _ := s.seqs(); len(seqs) != 1 || seqs[0] != 30 {
		t.Errorf("after RemoveNewer(30): %v", seqs)
	}
}
