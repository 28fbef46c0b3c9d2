package control

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLoginUIDOf: the kernel's login uid of a peer, as /proc shows it;
// unset (a service), missing or garbled is no answer.
func TestLoginUIDOf(t *testing.T) {
	proc := t.TempDir()
	for pid, content := range map[string]string{"10": "1001", "11": "4294967295", "12": "olga", "13": "0\n", "14": "-1"} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "loginuid"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		pid  int32
		uid  uint32
		ok   bool
	}{
		{"olga under sudo", 10, 1001, true},
		{"a service (unset)", 11, 0, false},
		{"not a number", 12, 0, false},
		{"root logged in", 13, 0, true},
		{"negative", 14, 0, false},
		{"no such process", 15, 0, false},
		{"no pid", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if uid, ok := loginUIDOf(proc, tc.pid); uid != tc.uid || ok != tc.ok {
				t.Fatalf("loginUIDOf: %d %v, want %d %v", uid, ok, tc.uid, tc.ok)
			}
		})
	}
}
