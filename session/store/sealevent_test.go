package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	"hcp-edge/session/atrest"
	"hcp-edge/session/lifecycle"
)

const (
	sealHexA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	sealHexB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

// resultData is an intermediate_result as a recipe emits one.
func resultData(v string) map[string]any {
	return map[string]any{"name": "a1g_peak_cm1", "value": v}
}

// runSession creates session id of class and runs it to COMPLETED through
// an intermediate_result and a warning holding secret, a pause with a
// checkpoint, a recovery and a log event holding secret. (Transition
// reasons and checkpoint descriptions are the engine's and the recipe's
// own words, stored in the clear with the audit chain: no values there.)
func runSession(t *testing.T, s *Store, id, class, secret string) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := s.Create(ctx, Session{ID: id, DataClass: class}); err != nil {
		t.Fatal(err)
	}
	steps := []func() error{
		func() error {
			_, _, err := s.Transition(ctx, id, Change{To: lifecycle.Running, Reason: "accepted"})
			return err
		},
		func() error {
			_, err := s.Append(ctx, id, Emit{Type: lifecycle.EventIntermediateResult, Data: resultData(secret)})
			return err
		},
		func() error {
			_, _, err := s.Transition(ctx, id, Change{To: lifecycle.Paused, Reason: "paused by operator olga",
				Before:     []Emit{{Type: lifecycle.EventWarning, Data: map[string]any{"code": "drift", "message": "peak at " + secret}}},
				Checkpoint: &NewCheckpoint{Description: "completed step grow", Resumable: true, Payload: []byte(`{}`)}})
			return err
		},
		func() error { _, _, err := s.Recovered(ctx, id); return err },
		func() error {
			_, _, err := s.Transition(ctx, id, Change{To: lifecycle.Running, Reason: "resumed"})
			return err
		},
		func() error {
			_, _, err := s.Transition(ctx, id, Change{To: lifecycle.Completed, Reason: "done",
				Before: []Emit{{Type: lifecycle.EventLog, Data: map[string]any{"message": "measured " + secret}}}})
			return err
		},
	}
	for i, f := range steps {
		if err := f(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}

// TestSealedEvents: the event data of a T3 session is sealed in the file
// (a raw grep finds none of its values, where a T1 session's are found),
// Events opens it with the key, Check replays the session's states from
// the frames without a key, and a sealed event opens for its own session
// and sequence number only.
func TestSealedEvents(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	k := testKey(t, sealHexA)
	s := open(t, path)
	s.SetAtRest(k)
	runSession(t, s, "t3", "T3", "404.8317")
	runSession(t, s, "t1", "T1", "383.2291")
	mustCheck(t, s)
	want, err := s.Events(ctx, "t3", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	disk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(disk, []byte("404.8317")) {
		t.Fatal("the state file holds a value of the T3 session in the clear")
	}
	if !bytes.Contains(disk, []byte("383.2291")) {
		t.Fatal("the T1 session's value is not in the file: the grep proves nothing")
	}

	// Without a key: Check holds, the events do not open.
	s = open(t, path)
	mustCheck(t, s)
	if _, err := s.Events(ctx, "t3", 0); !errors.Is(err, atrest.ErrNoKey) {
		t.Fatalf("Events without a key: %v", err)
	}
	if evs, err := s.Events(ctx, "t1", 0); err != nil || len(evs) == 0 {
		t.Fatalf("T1 events without a key: %v", err)
	}
	// With it: the data as it was emitted.
	s.SetAtRest(k)
	got, err := s.Events(ctx, "t3", 0)
	if err != nil || len(got) != len(want) || len(got) < 10 {
		t.Fatalf("Events: %d %v, want %d", len(got), err, len(want))
	}
	for i := range got {
		if got[i].Seq != want[i].Seq || got[i].Type != want[i].Type || !bytes.Equal(got[i].Data, want[i].Data) || got[i].Sealed {
			t.Fatalf("event %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if !bytes.Contains(got[2].Data, []byte("404.8317")) {
		t.Fatalf("intermediate_result %s", got[2].Data)
	}

	// The stored records: sealed, with frames for the lifecycle events only.
	var stored []Event
	if err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEvents).Bucket([]byte("t3")).ForEach(func(_, v []byte) error {
			var e Event
			_, err := e.UnmarshalMsg(v)
			stored = append(stored, e)
			return err
		})
	}); err != nil {
		t.Fatal(err)
	}
	for _, e := range stored {
		if !e.Sealed || !atrest.IsSealed(e.Data) {
			t.Fatalf("event %d stored in the clear: %s", e.Seq, e.Data)
		}
		switch e.Type {
		case lifecycle.EventStateChanged, lifecycle.EventSessionClosed, lifecycle.EventCheckpointCreated:
			if len(e.Frame) == 0 || bytes.Contains(e.Frame, []byte("404")) {
				t.Fatalf("event %d (%s) frame %s", e.Seq, e.Type, e.Frame)
			}
		default:
			if e.Frame != nil {
				t.Fatalf("event %d (%s) has a frame %s", e.Seq, e.Type, e.Frame)
			}
		}
	}
	for _, tc := range []struct {
		name string
		e    Event
		sid  string
		key  *atrest.Key
		want error
	}{
		{"no key", stored[2], "t3", nil, atrest.ErrNoKey},
		{"wrong key", stored[2], "t3", testKey(t, sealHexB), atrest.ErrWrongKey},
		{"another session", stored[2], "t1", k, atrest.ErrTampered},
		{"another event's data", func() Event { e := stored[2]; e.Data = stored[1].Data; return e }(), "t3", k, atrest.ErrTampered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := tc.e.Open(tc.sid, tc.key); !errors.Is(err, tc.want) || got != nil {
				t.Fatalf("Open: %q %v, want %v", got, err, tc.want)
			}
		})
	}
}

// TestSealedEventsNeedKey: without an at-rest key, nothing of a T3 or T4
// session's events is written (the step fails whole, no sequence number is
// used); a T2 session needs none.
func TestSealedEventsNeedKey(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
	for _, class := range []string{"T3", "T4"} {
		if _, _, err := s.Create(ctx, Session{ID: class, DataClass: class}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Transition(ctx, class, Change{To: lifecycle.Running, Reason: "accepted"}); !errors.Is(err, atrest.ErrNoKey) {
			t.Fatalf("%s without a key: %v", class, err)
		}
		if sess, err := s.Session(ctx, class); err != nil || sess.State != lifecycle.Pending || sess.LastSeq != 0 {
			t.Fatalf("%s after the refused step: %+v %v", class, sess, err)
		}
	}
	runSession(t, s, "t2", "T2", "1.25")
	mustCheck(t, s)
}

// TestSealedEventsUpgrade: a T3 session whose events an earlier version
// wrote in the clear still reads and checks; its new events are sealed.
func TestSealedEventsUpgrade(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	if _, _, err := s.Create(ctx, Session{ID: "old", DataClass: "T1"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Transition(ctx, "old", Change{To: lifecycle.Running, Reason: "accepted"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "old", Emit{Type: lifecycle.EventProgress, Data: map[string]any{"percent": 10}}); err != nil {
		t.Fatal(err)
	}
	// The record as an earlier version left it: T3, its events in the clear.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		var sess Session
		b := tx.Bucket(bucketSessions)
		if _, err := sess.UnmarshalMsg(b.Get([]byte("old"))); err != nil {
			return err
		}
		sess.DataClass = "T3"
		v, err := sess.MarshalMsg(nil)
		if err != nil {
			return err
		}
		return b.Put([]byte("old"), v)
	}); err != nil {
		t.Fatal(err)
	}
	s.SetAtRest(testKey(t, sealHexA))
	mustCheck(t, s)
	if _, _, err := s.Transition(ctx, "old", Change{To: lifecycle.Completed, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	evs, err := s.Events(ctx, "old", 0)
	if err != nil || len(evs) != 4 {
		t.Fatalf("events %+v %v", evs, err)
	}
	var p map[string]any
	if err := json.Unmarshal(evs[1].Data, &p); err != nil || p["percent"] != 10.0 {
		t.Fatalf("old clear event: %s %v", evs[1].Data, err)
	}
	var sc lifecycle.StateChanged
	if err := json.Unmarshal(evs[2].Data, &sc); err != nil || sc.To != lifecycle.Completed || sc.Reason != "done" {
		t.Fatalf("new sealed event: %s %v", evs[2].Data, err)
	}
}
