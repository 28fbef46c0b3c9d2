package compact

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
)

// stateFile writes a state file of n closed sessions, removes all but the
// last keep, and returns its path.
func stateFile(t *testing.T, n, keep int) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := store.Open(path, store.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ids []string
	for i := range n {
		id := "s" + strings.Repeat("0", 3) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		ids = append(ids, id)
		if _, _, err := st.Create(ctx, store.Session{ID: id, DataClass: "T1"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Transition(ctx, id, store.Change{To: lifecycle.Running}); err != nil {
			t.Fatal(err)
		}
		for range 30 {
			if _, err := st.Append(ctx, id, store.Emit{Type: lifecycle.EventLog, Data: map[string]any{"level": "info", "message": strings.Repeat("m", 500)}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := st.Transition(ctx, id, store.Change{To: lifecycle.Completed}); err != nil {
			t.Fatal(err)
		}
	}
	err = st.Update(ctx, func(w *store.Tx) error {
		for _, id := range ids[:n-keep] {
			if _, err := w.Remove(id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCompactShrinks(t *testing.T) {
	path := stateFile(t, 40, 2)
	res, err := File(context.Background(), path, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compacted %s: %d → %d bytes", path, res.Before, res.After)
	if res.After >= res.Before || res.After <= 0 {
		t.Fatalf("did not shrink: %+v", res)
	}
	if _, err := os.Stat(path + Suffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("copy left behind: %v", err)
	}
	st, err := store.Open(path, store.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s, err := st.Sessions(context.Background(), false); err != nil || len(s) != 2 {
		t.Fatalf("sessions after compaction: %d %v", len(s), err)
	}
}

// TestCompactRefuses: a file in use, a damaged file, a full target: a
// typed error, the original byte for byte as it was, no copy left.
func TestCompactRefuses(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, path string) Opts
		want  error
	}{
		{"in use", func(t *testing.T, path string) Opts {
			st, err := store.Open(path, store.DefaultOpts()) // as the daemon holds it
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return Opts{Timeout: 50e6}
		}, ErrInUse},
		{"damaged page", func(t *testing.T, path string) Opts {
			b := read(t, path)
			for i := 4 * 4096; i < len(b)-4096; i += 4096 { // every page past the meta and freelist
				copy(b[i+16:i+48], bytes.Repeat([]byte{0xA5}, 32))
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return Opts{}
		}, ErrDamaged},
		{"not a bbolt file", func(t *testing.T, path string) Opts {
			if err := os.WriteFile(path, bytes.Repeat([]byte("not bbolt "), 2000), 0o600); err != nil {
				t.Fatal(err)
			}
			return Opts{}
		}, ErrDamaged},
		{"target full", func(t *testing.T, path string) Opts {
			return Opts{statfs: func(string) (uint64, uint64, error) { return 4096, 1 << 30, nil }}
		}, ErrNoSpace},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := stateFile(t, 6, 2)
			o := tt.setup(t, path)
			before := read(t, path)
			_, err := File(context.Background(), path, o)
			if !errors.Is(err, tt.want) {
				t.Fatalf("File = %v, want %v", err, tt.want)
			}
			t.Logf("refused: %v", err)
			if !bytes.Equal(read(t, path), before) {
				t.Fatal("the original changed")
			}
			if _, err := os.Stat(path + Suffix); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("copy left behind: %v", err)
			}
		})
	}
}
