package atrest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const (
	hexA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	hexB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

func mustKey(t testing.TB, h string) *Key {
	t.Helper()
	k, err := ParseKey([]byte(h))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writeKeyFile(t *testing.T, content string, mode fs.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "at-rest.key")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadKey(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		path    func(t *testing.T) string
		want    error  // nil: loads
		message string // in the error
	}{
		{"0600", func(t *testing.T) string { return writeKeyFile(t, hexA+"\n", 0o600) }, nil, ""},
		{"0400, upper case, blanks", func(t *testing.T) string { return writeKeyFile(t, "  "+strings.ToUpper(hexA)+"\r\n", 0o400) }, nil, ""},
		{"group readable", func(t *testing.T) string { return writeKeyFile(t, hexA, 0o640) }, ErrKeyPermissions, "chmod 600"},
		{"world readable", func(t *testing.T) string { return writeKeyFile(t, hexA, 0o604) }, ErrKeyPermissions, "-rw----r--"},
		{"group writable only", func(t *testing.T) string { return writeKeyFile(t, hexA, 0o620) }, ErrKeyPermissions, ""},
		{"a directory", func(t *testing.T) string { return t.TempDir() }, ErrKeyPermissions, "regular file"},
		{"a fifo", func(*testing.T) string { return fifo }, ErrKeyPermissions, "regular file"},
		{"missing", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, fs.ErrNotExist, "no such file"},
		{"empty", func(t *testing.T) string { return writeKeyFile(t, "", 0o600) }, ErrKeyFormat, "empty"},
		{"short", func(t *testing.T) string { return writeKeyFile(t, hexA[:62], 0o600) }, ErrKeyFormat, "62 characters"},
		{"long", func(t *testing.T) string { return writeKeyFile(t, hexA+"00", 0o600) }, ErrKeyFormat, "66 characters"},
		{"not hex", func(t *testing.T) string { return writeKeyFile(t, "zz"+hexA[2:], 0o600) }, ErrKeyFormat, "not hexadecimal"},
		{"two keys", func(t *testing.T) string { return writeKeyFile(t, hexA+"\n"+hexB, 0o600) }, ErrKeyFormat, "129 characters"},
		{"all zero", func(t *testing.T) string { return writeKeyFile(t, strings.Repeat("0", 64), 0o600) }, ErrKeyFormat, "all zero"},
		{"huge", func(t *testing.T) string { return writeKeyFile(t, strings.Repeat(" ", 4096)+hexA, 0o600) }, ErrKeyFormat, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.path(t)
			k, err := LoadKey(p)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if k.ID() != mustKey(t, hexA).ID() || k.Source() != p || !strings.Contains(k.String(), k.ID()) {
					t.Fatalf("key %v from %s", k, p)
				}
				return
			}
			var ke *KeyError
			if !errors.Is(err, tc.want) || !errors.As(err, &ke) || ke.Path != p || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("LoadKey: %v, want %v with %q", err, tc.want, tc.message)
			}
			// The key material never appears in an error.
			if strings.Contains(strings.ToLower(err.Error()), hexA[8:40]) {
				t.Fatalf("error repeats the key: %v", err)
			}
		})
	}
}

func TestKeyID(t *testing.T) {
	a, a2, b := mustKey(t, hexA), mustKey(t, strings.ToUpper(hexA)), mustKey(t, hexB)
	if a.ID() != a2.ID() || a.ID() == b.ID() || len(a.ID()) != 16 {
		t.Fatalf("ids %s %s %s", a.ID(), a2.ID(), b.ID())
	}
	raw, _ := hex.DecodeString(hexA)
	if strings.Contains(hexA, a.ID()) || bytes.Contains(raw, a.id[:]) {
		t.Fatal("the id is part of the key")
	}
	if _, err := NewKey(raw[:16]); !errors.Is(err, ErrKeyFormat) {
		t.Fatalf("AES-128 key: %v", err)
	}
}

func TestSealOpen(t *testing.T) {
	k := mustKey(t, hexA)
	b := Binding{SessionID: "3f0c0d2e-0000-4000-8000-000000000001", Purpose: PurposeArtifact, Name: "growth_log.csv"}
	for _, plain := range [][]byte{nil, {}, []byte("x"), bytes.Repeat([]byte("elapsed,stage,temperature\n"), 10000)} {
		blob, err := k.Seal(plain, b)
		if err != nil {
			t.Fatal(err)
		}
		if len(blob) != len(plain)+Overhead || !IsSealed(blob) {
			t.Fatalf("%d bytes sealed to %d", len(plain), len(blob))
		}
		if len(plain) > 16 && bytes.Contains(blob, plain[:16]) {
			t.Fatal("the sealed blob contains the plaintext")
		}
		h, err := Inspect(blob)
		if err != nil || h.Version != 1 || h.KeyID != k.ID() || h.Size != len(plain) {
			t.Fatalf("header %+v %v", h, err)
		}
		got, err := k.Open(blob, b)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("open: %v (%d bytes, want %d)", err, len(got), len(plain))
		}
	}
	// Two seals of the same plaintext differ (fresh nonces).
	x, _ := k.Seal([]byte("same"), b)
	y, _ := k.Seal([]byte("same"), b)
	if bytes.Equal(x, y) {
		t.Fatal("two seals are equal: nonce reused")
	}
}

func TestOpenRefuses(t *testing.T) {
	k, other := mustKey(t, hexA), mustKey(t, hexB)
	b := Binding{SessionID: "s1", Purpose: PurposeCheckpoint, Name: "ckpt-000007"}
	plain := []byte(`{"step":4,"state":"secret recipe state"}`)
	blob, err := k.Seal(plain, b)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		c := bytes.Clone(blob)
		c[i] ^= 0x01
		return c
	}
	for _, tc := range []struct {
		name string
		key  *Key
		blob []byte
		b    Binding
		want error
	}{
		{"wrong key", other, blob, b, ErrWrongKey},
		{"other session", k, blob, Binding{SessionID: "s2", Purpose: b.Purpose, Name: b.Name}, ErrTampered},
		{"other purpose", k, blob, Binding{SessionID: "s1", Purpose: PurposeArtifact, Name: b.Name}, ErrTampered},
		{"other name", k, blob, Binding{SessionID: "s1", Purpose: b.Purpose, Name: "ckpt-000006"}, ErrTampered},
		{"field boundaries", k, blob, Binding{SessionID: "s1c", Purpose: "heckpoint", Name: b.Name}, ErrTampered},
		{"flipped nonce", k, flip(headerSize - 1), b, ErrTampered},
		{"flipped ciphertext", k, flip(headerSize + 3), b, ErrTampered},
		{"flipped tag", k, flip(len(blob) - 1), b, ErrTampered},
		{"flipped key id", k, flip(len(magic) + 1), b, ErrWrongKey},
		{"version 2", k, func() []byte { c := bytes.Clone(blob); c[len(magic)] = 2; return c }(), b, ErrVersion},
		{"no magic", k, flip(1), b, ErrNotSealed},
		{"plaintext", k, plain, b, ErrNotSealed},
		{"empty", k, nil, b, ErrNotSealed},
		{"truncated in the magic", k, blob[:3], b, ErrTruncated},
		{"header only", k, blob[:headerSize], b, ErrTruncated},
		{"tag cut short", k, blob[:minSealSize-1], b, ErrTruncated},
		{"last byte cut", k, blob[:len(blob)-1], b, ErrTampered},
		{"byte appended", k, append(bytes.Clone(blob), 0), b, ErrTampered},
		{"no session", k, blob, Binding{Purpose: b.Purpose}, ErrBinding},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.key.Open(tc.blob, tc.b)
			if !errors.Is(err, tc.want) || got != nil {
				t.Fatalf("Open: %v (%q), want %v", err, got, tc.want)
			}
		})
	}
	var wk *WrongKeyError
	if _, err := other.Open(blob, b); !errors.As(err, &wk) || wk.Want != k.ID() || wk.Have != other.ID() ||
		!strings.Contains(err.Error(), k.ID()) {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := k.Seal(plain, Binding{SessionID: "s1"}); !errors.Is(err, ErrBinding) {
		t.Fatalf("seal without purpose: %v", err)
	}
}

func TestFiles(t *testing.T) {
	k := mustKey(t, hexA)
	dir := t.TempDir()
	p := filepath.Join(dir, "raman_raw.json")
	b := Binding{SessionID: "s1", Purpose: PurposeArtifact, Name: "raman_raw.json"}
	plain := []byte(`{"raman_shift_cm1":[380.1,405.3],"intensity_counts":[1200,1850]}`)
	if err := k.WriteFile(p, plain, b, 0o640); err != nil {
		t.Fatal(err)
	}
	disk, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(disk, []byte("raman_shift")) || !IsSealed(disk) {
		t.Fatal("the file holds the plaintext")
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	got, err := k.ReadFile(p, b)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("ReadFile: %v", err)
	}
	// Overwrite: no temporary file is left behind.
	if err := k.WriteFile(p, []byte("v2"), b, 0o640); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("directory holds %v", ents)
	}
	if _, err := k.ReadFile(filepath.Join(dir, "none"), b); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := mustKey(t, hexB).ReadFile(p, b); !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), p) {
		t.Fatalf("wrong key: %v", err)
	}
	if err := k.WriteFile(filepath.Join(dir, "no", "such", "dir"), plain, b, 0o640); err == nil {
		t.Fatal("write into a missing directory")
	}
}
