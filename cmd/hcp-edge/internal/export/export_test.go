package export

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "a.eln")
	if err := CheckOut(out); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(out, []byte("zip")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "zip" {
		t.Fatalf("%q", b)
	}
	// Existing: refused, unchanged, no temporary file left.
	if err := CheckOut(out); !errors.Is(err, ErrExists) {
		t.Fatalf("CheckOut of an existing file: %v", err)
	}
	if err := WriteFile(out, []byte("other")); !errors.Is(err, ErrExists) {
		t.Fatalf("WriteFile over an existing file: %v", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "zip" {
		t.Fatalf("replaced: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left: %v", ents)
	}
	if err := CheckOut(filepath.Join(dir, "no", "such", "dir.eln")); err == nil {
		t.Fatal("a missing directory accepted")
	}
}

func TestURI(t *testing.T) {
	if u := URI("s1"); u != "hcp://s1/export/hcp-edge-session-s1.eln" {
		t.Fatal(u)
	}
}
