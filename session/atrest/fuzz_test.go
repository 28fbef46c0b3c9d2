package atrest

import (
	"errors"
	"testing"
)

// FuzzOpen: Open never panics, and fails with one of the package's errors
// on anything Seal did not produce for that binding; what it opens is what
// was sealed.
func FuzzOpen(f *testing.F) {
	k := mustKey(f, hexA)
	b := Binding{SessionID: "s1", Purpose: PurposeCheckpoint, Name: "ckpt-000001"}
	good, err := k.Seal([]byte(`{"step":1}`), b)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, "s1", "ckpt-000001")
	f.Add(good[:headerSize], "s1", "ckpt-000001")
	f.Add([]byte(magic), "s1", "")
	f.Add([]byte("plain text"), "s2", "x")
	f.Add([]byte{}, "s1", "ckpt-000001")
	f.Fuzz(func(t *testing.T, blob []byte, sid, name string) {
		bind := Binding{SessionID: sid, Purpose: PurposeCheckpoint, Name: name}
		plain, err := k.Open(blob, bind)
		if err != nil {
			if plain != nil {
				t.Fatalf("plaintext %q with error %v", plain, err)
			}
			for _, want := range []error{ErrNotSealed, ErrVersion, ErrTruncated, ErrWrongKey, ErrTampered, ErrBinding} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("untyped error %v", err)
		}
		// Only a blob sealed under k opens (the seed; each fuzzing process
		// seals its own, with its own nonce), and only for its binding.
		if !IsSealed(blob) || len(blob) != len(good) || bind != b || string(plain) != `{"step":1}` {
			t.Fatalf("opened %q from %x for %+v", plain, blob, bind)
		}
	})
}
