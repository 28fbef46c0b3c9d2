package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	"hcp-edge/session/atrest"
	"hcp-edge/session/lifecycle"
)

func testKey(t testing.TB, h string) *atrest.Key {
	t.Helper()
	k, err := atrest.ParseKey([]byte(h))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSealedCheckpoints: a T3 session's checkpoint payloads are sealed in
// the file, open with the key for their own session and checkpoint only,
// and survive a reopen; an unsealed session's records keep their format.
func TestSealedCheckpoints(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	k := testKey(t, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	s.SetAtRest(k) // the events of the T3 session
	other := testKey(t, "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100")
	secret1 := []byte(`{"step":3,"state":"CONFIDENTIAL-RECIPE-STATE-ONE"}`)
	secret2 := []byte(`{"step":4,"state":"CONFIDENTIAL-RECIPE-STATE-TWO"}`)
	plain := []byte(`{"step":1,"state":"PUBLIC-RECIPE-STATE"}`)
	for _, id := range []string{"t3", "t1"} {
		if _, _, err := s.Create(ctx, Session{ID: id, DataClass: map[string]string{"t3": "T3", "t1": "T1"}[id]}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Transition(ctx, id, Change{To: lifecycle.Running, Reason: "accepted"}); err != nil {
			t.Fatal(err)
		}
	}
	cp1, _, err := s.Checkpoint(ctx, "t3", NewCheckpoint{Description: "after step 3", Resumable: true, Step: "ramp", Payload: secret1, Seal: k})
	if err != nil {
		t.Fatal(err)
	}
	if !cp1.Sealed || bytes.Contains(cp1.Payload, []byte("CONFIDENTIAL")) {
		t.Fatalf("checkpoint %+v not sealed", cp1)
	}
	if _, _, err := s.Transition(ctx, "t3", Change{To: lifecycle.Paused, Reason: "operator",
		Checkpoint: &NewCheckpoint{Description: "hold", Resumable: true, Step: "grow", Payload: secret2, Seal: k}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Checkpoint(ctx, "t1", NewCheckpoint{Description: "after step 1", Resumable: true, Payload: plain}); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// On disk: no plaintext of the T3 session, the T1 payload as it was.
	disk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(disk, []byte("CONFIDENTIAL")) {
		t.Fatal("the state file holds a T3 checkpoint payload in the clear")
	}
	if !bytes.Contains(disk, plain) {
		t.Fatal("the T1 checkpoint payload is not stored as given")
	}

	s = open(t, path)
	s.SetAtRest(k)
	mustCheck(t, s)
	cp2, ok, err := s.LastCheckpoint(ctx, "t3")
	if err != nil || !ok || !cp2.Sealed {
		t.Fatalf("LastCheckpoint %+v %v %v", cp2, ok, err)
	}
	if got, err := cp2.Open("t3", k); err != nil || !bytes.Equal(got, secret2) {
		t.Fatalf("open: %q %v", got, err)
	}
	for _, tc := range []struct {
		name string
		cp   Checkpoint
		sid  string
		key  *atrest.Key
		want error
	}{
		{"no key", cp2, "t3", nil, atrest.ErrNoKey},
		{"wrong key", cp2, "t3", other, atrest.ErrWrongKey},
		{"another session", cp2, "t1", k, atrest.ErrTampered},
		{"an older checkpoint's payload", func() Checkpoint { c := cp2; c.Payload = cp1.Payload; return c }(), "t3", k, atrest.ErrTampered},
		{"truncated", func() Checkpoint { c := cp2; c.Payload = c.Payload[:20]; return c }(), "t3", k, atrest.ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := tc.cp.Open(tc.sid, tc.key); !errors.Is(err, tc.want) || got != nil {
				t.Fatalf("Open: %q %v, want %v", got, err, tc.want)
			}
		})
	}
	cpT1, _, err := s.LastCheckpoint(ctx, "t1")
	if err != nil || cpT1.Sealed {
		t.Fatalf("T1 checkpoint %+v %v", cpT1, err)
	}
	if got, err := cpT1.Open("t1", nil); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("T1 open: %q %v", got, err)
	}
	// An unsealed record has no "sealed" field: the format of T1/T2
	// sessions did not change.
	enc, err := cpT1.MarshalMsg(nil)
	if err != nil || enc[0] != 0x88 || bytes.Contains(enc, []byte("sealed")) {
		t.Fatalf("unsealed record % x… %v", enc[:1], err)
	}
}

// TestCheckSealedPayload: Check refuses a checkpoint marked sealed whose
// payload is no sealed blob.
func TestCheckSealedPayload(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
	k := testKey(t, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	s.SetAtRest(k)
	if _, _, err := s.Create(ctx, Session{ID: "t4", DataClass: "T4"}); err != nil {
		t.Fatal(err)
	}
	cp, _, err := s.Checkpoint(ctx, "t4", NewCheckpoint{Payload: []byte("x"), Seal: k})
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	cp.Payload = []byte("plain text where a sealed blob belongs")
	v, err := cp.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCheckpoints).Bucket([]byte("t4")).Put(seqKey(cp.Seq), v)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte("sealed payload")) {
		t.Fatalf("Check: %v", err)
	}
}
