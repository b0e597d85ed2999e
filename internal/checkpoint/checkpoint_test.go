package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func file(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	h := Header{Build: "test", Digest: "d1", Partition: 2, Partitions: 4, Window: 9, Time: 1234}
	if err := Write(&buf, h, []Named{{"a", []byte("alpha")}, {"b", bytes.Repeat([]byte{7}, 1000)}}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestFile_RoundTrip(t *testing.T) {
	f, err := Decode("x.ckpt", file(t))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.Section("a")
	b, _ := f.Section("b")
	if f.Digest != "d1" || f.Partition != 2 || f.Partitions != 4 || f.Window != 9 || f.Time != 1234 || f.Format != Format ||
		string(a) != "alpha" || len(b) != 1000 {
		t.Fatalf("decoded %+v, a %q, b %d bytes", f.Header, a, len(b))
	}
}

// TestFile_EveryDamageIsRefusedNamingTheFile: truncation anywhere, a
// flipped bit anywhere, another magic or version, bytes appended.
func TestFile_EveryDamageIsRefusedNamingTheFile(t *testing.T) {
	good := file(t)
	check := func(what string, data []byte, want string) {
		t.Helper()
		_, err := Decode("dir/x.ckpt", data)
		if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "dir/x.ckpt") || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: got %v, want an ErrCorrupt naming the file and %q", what, err, want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: error on several lines: %q", what, err)
		}
	}
	for cut := 0; cut < len(good); cut++ {
		_, err := Decode("x", good[:cut])
		if err == nil {
			t.Fatalf("truncated to %d of %d bytes: decoded", cut, len(good))
		}
	}
	check("truncated in a section", good[:len(good)-10], "truncated: section b")
	for i := 0; i < len(good); i++ {
		bad := bytes.Clone(good)
		bad[i] ^= 0x10
		if _, err := Decode("x", bad); err == nil {
			t.Fatalf("bit flipped in byte %d of %d: decoded", i, len(good))
		}
	}
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	check("flipped in the last section", bad, "section b: SHA-256 mismatch")
	bad = bytes.Clone(good)
	bad[20] ^= 1
	check("flipped in the header", bad, "header")
	check("no magic", append([]byte("NOTACKPT"), good[8:]...), "not a lockstep checkpoint")
	bad = bytes.Clone(good)
	binary.LittleEndian.PutUint32(bad[8:], Format+1)
	check("another version", bad, "format version")
	check("bytes after", append(bytes.Clone(good), 0), "after the last section")
}

func TestStore_SaveLatestPruneAndRefuse(t *testing.T) {
	s := Store{Dir: t.TempDir(), Keep: 2}
	for seq := uint64(1); seq <= 3; seq++ {
		data := file(t)
		if _, err := s.Save(Manifest{Seq: seq, Window: seq, Digest: "d1"}, [][]byte{data}); err == nil {
			t.Fatal("a manifest without its files' list saved")
		}
		m := Manifest{Seq: seq, Window: seq, Digest: "d1", Files: []Part{NewPart("p.ckpt", data)}}
		if _, err := s.Save(m, [][]byte{data}); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(s.Dir)
	if len(ents) != 2 {
		t.Fatalf("%d entries kept, want the last 2: %v", len(ents), ents)
	}
	l, refused, err := s.Latest()
	if err != nil || len(refused) != 0 || l.Manifest.Seq != 3 {
		t.Fatalf("latest: %v, refused %v, seq %v", err, refused, l)
	}
	// A newer directory without a manifest (a crash before the rename
	// cannot leave one, a hand-made copy can) is refused by name.
	if err := os.MkdirAll(filepath.Join(s.Dir, dirName(4)), 0o755); err != nil {
		t.Fatal(err)
	}
	l, refused, err = s.Latest()
	if err != nil || len(refused) != 1 || !strings.Contains(refused[0], "manifest.json") || l.Manifest.Seq != 3 {
		t.Fatalf("latest with an incomplete newer one: %v, refused %q", err, refused)
	}
	// A file that does not match its manifest.
	p := filepath.Join(s.Dir, dirName(3), "p.ckpt")
	data, _ := os.ReadFile(p)
	data[len(data)-1] ^= 1
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	l, refused, err = s.Latest()
	if err != nil || len(refused) != 2 || !strings.Contains(refused[1], p) || l.Manifest.Seq != 2 {
		t.Fatalf("latest with a corrupt newest: %v, refused %q", err, refused)
	}
	if err := os.Truncate(filepath.Join(s.Dir, dirName(2), "p.ckpt"), 10); err != nil {
		t.Fatal(err)
	}
	_, refused, err = s.Latest()
	if !errors.Is(err, ErrNone) || len(refused) != 3 || !strings.Contains(refused[2], "truncated") {
		t.Fatalf("none good: %v, refused %q", err, refused)
	}
}

// TestFile_OlderFormatIsRefusedNamingTheFile: a file of format 1 (before
// sparse regions changed the graph's encoding) or of a format to come is
// refused in one line naming the file and both versions, and so is a
// manifest of another format.
func TestFile_OlderFormatIsRefusedNamingTheFile(t *testing.T) {
	if Format != 2 {
		t.Fatalf("Format %d: update this test (and docs/decisions.md) with the change", Format)
	}
	for _, v := range []uint32{1, Format + 1} {
		bad := file(t)
		binary.LittleEndian.PutUint32(bad[8:], v)
		_, err := Decode("dir/ckpt-000000000001/state.ckpt", bad)
		want := fmt.Sprintf("checkpoint: corrupt: dir/ckpt-000000000001/state.ckpt: format version %d; this build reads version %d", v, Format)
		if err == nil || err.Error() != want {
			t.Fatalf("format %d: got %v, want %q", v, err, want)
		}
	}
	s := Store{Dir: t.TempDir(), Keep: 2}
	data := file(t)
	dir, err := s.Save(Manifest{Seq: 1, Files: []Part{NewPart("p.ckpt", data)}}, [][]byte{data})
	if err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(dir, ManifestName)
	mb, _ := os.ReadFile(mp)
	if err := os.WriteFile(mp, bytes.Replace(mb, []byte(`"format": 2`), []byte(`"format": 1`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), mp) || !strings.Contains(err.Error(), "format 1, this build reads 2") {
		t.Fatalf("a manifest of format 1: %v", err)
	}
}

// graphState is a small graph to checkpoint.
type graphState struct {
	Name string
	Vals []int
}

// TestWriter_SaveWritesInTheBackground: Save returns once the state is
// encoded; after Wait the checkpoint is listed and counted, and a state
// changed after Save (the run going on) does not change it. A write that
// fails is the error of Wait and of every Save after it.
func TestWriter_SaveWritesInTheBackground(t *testing.T) {
	w := NewWriter(t.TempDir(), 2)
	st := &graphState{Name: "a", Vals: []int{1, 2, 3}}
	state := State{Name: "state.ckpt", Partition: -1, Roots: []any{st}}
	for seq := uint64(1); seq <= 3; seq++ {
		if err := w.Save(Of{Seq: seq, Time: int64(seq), Digest: "d"}, state); err != nil {
			t.Fatal(err)
		}
		st.Vals[0] = int(seq) * 10 // while the write goes on
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	l, refused, err := w.Store.Latest()
	if err != nil || len(refused) != 0 || l.Manifest.Seq != 3 || w.Count != 3 || w.Last != l.Dir || w.Bytes != l.Manifest.Files[0].Bytes*3 {
		t.Fatalf("latest %v (refused %v), count %d, bytes %d, last %s", err, refused, w.Count, w.Bytes, w.Last)
	}
	restored := &graphState{}
	if _, err := Restore("x", l.Files[0], "d", -1, []any{restored}, nil, nil); err != nil || restored.Vals[0] != 20 {
		t.Fatalf("restored %+v (%v): want the state as Save saw it, Vals[0] 20", restored, err)
	}
	// A store that cannot be written: its directory is a file.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w = NewWriter(filepath.Join(blocker, "ckpts"), 1)
	if err := w.Save(Of{Seq: 1, Digest: "d"}, state); err != nil {
		t.Fatalf("Save failed before its write: %v", err)
	}
	if err := w.Wait(); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Wait after a failed write: %v", err)
	}
	if err := w.Save(Of{Seq: 2, Digest: "d"}, state); err == nil || w.Count != 0 {
		t.Fatalf("Save after a failed write: %v, count %d", err, w.Count)
	}
}
