package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"hcp-edge/session/audit"
	"hcp-edge/session/lifecycle"
)

func tick() func() time.Time {
	t := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func open(t testing.TB, path string) *Store {
	t.Helper()
	opts := DefaultOpts()
	opts.Clock = tick()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustCheck(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

func seqs(evs []Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func TestLifecycleCommitted(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
	sess, evs, err := s.Create(ctx, Session{ID: "s1", Capability: "cvd-material-synthesis", CapabilityVersion: "1.0.0", CallerID: "lab-ai"})
	if err != nil || sess.State != lifecycle.Pending || len(evs) != 0 || sess.CreatedAt.IsZero() {
		t.Fatalf("Create = %+v %v %v", sess, evs, err)
	}
	if _, _, err := s.Create(ctx, Session{ID: "s1"}); !errors.Is(err, ErrExists) {
		t.Fatalf("second Create: %v", err)
	}
	sess, evs, err = s.Transition(ctx, "s1", Change{
		To: lifecycle.Running, Reason: "approved",
		After:  []Emit{{lifecycle.EventSessionCreated, map[string]any{"state": "RUNNING", "risk_level": "R4", "session_token": "tok"}}},
		Update: func(x *Session) { x.Token, x.RiskLevel, x.LastSeq, x.ID = "tok", "R4", 99, "evil" },
	})
	if err != nil {
		t.Fatal(err)
	}
	if sess.State != lifecycle.Running || sess.Token != "tok" || sess.RiskLevel != "R4" || sess.ID != "s1" || sess.LastSeq != 2 {
		t.Fatalf("after approval: %+v", sess)
	}
	if len(evs) != 2 || evs[0].Type != lifecycle.EventStateChanged || evs[1].Type != lifecycle.EventSessionCreated {
		t.Fatalf("approval events %+v", evs)
	}
	if _, err := s.Append(ctx, "s1", Emit{lifecycle.EventProgress, map[string]any{"stage": "pump_down", "percent": 5, "message": "pumping"}}); err != nil {
		t.Fatal(err)
	}
	cp, evs, err := s.Checkpoint(ctx, "s1", NewCheckpoint{Description: "pumped down", Resumable: true, Step: "pump_down", Payload: []byte{1, 2, 3}},
		Emit{lifecycle.EventLog, map[string]any{"level": "info", "message": "base pressure reached"}})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Seq != 5 || cp.ID != "ckpt-000005" || cp.State != lifecycle.Running || len(evs) != 2 || evs[1].Type != lifecycle.EventCheckpointCreated {
		t.Fatalf("checkpoint %+v events %+v", cp, evs)
	}
	var d checkpointData
	if err := json.Unmarshal(evs[1].Data, &d); err != nil || d.ID != cp.ID || !d.Resumable || d.CreatedAt.IsZero() {
		t.Fatalf("checkpoint_created data %s: %v", evs[1].Data, err)
	}
	if _, _, err := s.Transition(ctx, "s1", Change{To: lifecycle.Paused, Reason: "operator", Checkpoint: &NewCheckpoint{Description: "hold", Resumable: true}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Transition(ctx, "s1", Change{To: lifecycle.Completed}); !errors.Is(err, lifecycle.ErrInvalidTransition) {
		t.Fatalf("PAUSED → COMPLETED: %v", err)
	}
	var te *lifecycle.TransitionError
	if _, _, err := s.Transition(ctx, "s1", Change{To: lifecycle.Failed}); !errors.As(err, &te) || te.From != lifecycle.Paused || te.To != lifecycle.Failed {
		t.Fatalf("PAUSED → FAILED: %v", err)
	}
	if _, _, err := s.Transition(ctx, "s1", Change{To: lifecycle.Running, Reason: "operator resume"}); err != nil {
		t.Fatal(err)
	}
	sess, evs, err = s.Transition(ctx, "s1", Change{To: lifecycle.Completed, Reason: "done",
		Before: []Emit{{lifecycle.EventIntermediateResult, map[string]any{"result_type": "raman", "data": map[string]any{}, "is_partial": false}}}})
	if err != nil {
		t.Fatal(err)
	}
	if sess.State != lifecycle.Completed || len(evs) != 3 || evs[2].Type != lifecycle.EventSessionClosed {
		t.Fatalf("completion: %+v %+v", sess, evs)
	}
	if _, err := s.Append(ctx, "s1", Emit{lifecycle.EventLog, map[string]any{}}); !errors.Is(err, lifecycle.ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, _, err := s.Checkpoint(ctx, "s1", NewCheckpoint{}); !errors.Is(err, lifecycle.ErrClosed) {
		t.Fatalf("checkpoint after close: %v", err)
	}
	all, err := s.Events(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := lifecycle.CheckSequence(1, seqs(all)); err != nil || uint64(len(all)) != sess.LastSeq {
		t.Fatalf("events %v: %v", seqs(all), err)
	}
	if tail, _ := s.Events(ctx, "s1", 8); len(tail) != len(all)-8 || tail[0].Seq != 9 {
		t.Fatalf("Events after 8: %v", seqs(tail))
	}
	last, ok, err := s.LastCheckpoint(ctx, "s1")
	if err != nil || !ok || last.Description != "hold" || last.State != lifecycle.Running {
		t.Fatalf("LastCheckpoint = %+v %v %v", last, ok, err)
	}
	mustCheck(t, s)
	// the audit log replays the lifecycle
	entries, err := s.Audit().Replay(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var path []lifecycle.State
	for _, e := range entries {
		var d transitionDetail
		_ = json.Unmarshal([]byte(e.Detail), &d)
		path = append(path, d.To)
	}
	want := []lifecycle.State{lifecycle.Pending, lifecycle.Running, lifecycle.Paused, lifecycle.Running, lifecycle.Completed}
	if len(path) != len(want) {
		t.Fatalf("audited path %v, want %v", path, want)
	}
	for i := range want {
		if path[i] != want[i] {
			t.Fatalf("audited path %v, want %v", path, want)
		}
	}
}

func TestRefusalsWriteNothing(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
	if _, _, err := s.Create(ctx, Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name string
		do   func() error
		is   error
	}{
		{"unknown session", func() error { _, err := s.Append(ctx, "nope", Emit{lifecycle.EventLog, map[string]any{}}); return err }, ErrNotFound},
		{"empty id", func() error { _, _, err := s.Create(ctx, Session{}); return err }, ErrBadID},
		{"long id", func() error { _, err := s.Session(ctx, string(make([]byte, MaxIDLen+1))); return err }, ErrBadID},
		{"invalid edge", func() error { _, _, err := s.Transition(ctx, "s", Change{To: lifecycle.Paused}); return err }, lifecycle.ErrInvalidTransition},
		{"bad before event", func() error {
			_, _, err := s.Transition(ctx, "s", Change{To: lifecycle.Running, Before: []Emit{{"nope", map[string]any{}}}})
			return err
		}, lifecycle.ErrUnknownEvent},
		{"event after terminal", func() error {
			_, _, err := s.Transition(ctx, "s", Change{To: lifecycle.Rejected, After: []Emit{{lifecycle.EventLog, map[string]any{}}}})
			return err
		}, lifecycle.ErrClosed},
		{"reserved event", func() error {
			_, err := s.Append(ctx, "s", Emit{lifecycle.EventSessionClosed, map[string]any{}})
			return err
		}, lifecycle.ErrReservedEvent},
		{"second of two bad", func() error {
			_, err := s.Append(ctx, "s", Emit{lifecycle.EventLog, map[string]any{}}, Emit{lifecycle.EventLog, 3})
			return err
		}, lifecycle.ErrDataNotObject},
		{"cancelled", func() error {
			_, err := s.Append(cancelled, "s", Emit{lifecycle.EventLog, map[string]any{}})
			return err
		}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			sess, err := s.Session(ctx, "s")
			if err != nil || sess.State != lifecycle.Pending || sess.LastSeq != 0 {
				t.Fatalf("session changed: %+v %v", sess, err)
			}
			mustCheck(t, s)
		})
	}
}

func TestSequenceSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	if _, _, err := s.Create(ctx, Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Transition(ctx, "s", Change{To: lifecycle.Running}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Checkpoint(ctx, "s", NewCheckpoint{Resumable: true, Step: "ramp"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	active, err := s.Sessions(ctx, true)
	if err != nil || len(active) != 1 || active[0].LastSeq != 2 {
		t.Fatalf("active after restart %+v %v", active, err)
	}
	sess, ev, err := s.Recovered(ctx, "s")
	if err != nil || ev.Seq != 3 || sess.State != lifecycle.Running {
		t.Fatalf("Recovered = %+v %+v %v", sess, ev, err)
	}
	var sc lifecycle.StateChanged
	if err := json.Unmarshal(ev.Data, &sc); err != nil || sc.Reason != lifecycle.ReasonRecovered {
		t.Fatalf("recovered event %s", ev.Data)
	}
	evs, err := s.Append(ctx, "s", Emit{lifecycle.EventProgress, map[string]any{"stage": "ramp"}})
	if err != nil || evs[0].Seq != 4 {
		t.Fatalf("Append after restart: %+v %v", evs, err)
	}
	if _, _, err := s.Transition(ctx, "s", Change{To: lifecycle.Failed, Reason: "timeout"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Recovered(ctx, "s"); !errors.Is(err, lifecycle.ErrClosed) {
		t.Fatalf("Recovered after close: %v", err)
	}
	if active, _ := s.Sessions(ctx, true); len(active) != 0 {
		t.Fatalf("active %+v", active)
	}
	mustCheck(t, s)
}

func TestLockTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	open(t, path)
	opts := DefaultOpts()
	opts.Timeout = 50 * time.Millisecond
	start := time.Now()
	if _, err := Open(path, opts); err == nil {
		t.Fatal("second Open succeeded")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("second Open did not time out")
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	e := Event{Seq: 1, Type: lifecycle.EventLog, At: time.Now(), Data: []byte(`{"a":1}`)}
	v, err := e.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	var back Event
	if _, err := back.UnmarshalMsg(v); err != nil {
		t.Fatal(err)
	}
	for i := range v {
		v[i] = 0
	}
	if string(back.Data) != `{"a":1}` || back.Type != lifecycle.EventLog {
		t.Fatalf("decoded record aliases the buffer: %+v", back)
	}
}

// corrupt lets f edit the raw file, then expects Check to fail.
func TestCheckDetects(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		edit func(tx *bolt.Tx) error
	}{
		{"event deleted", func(tx *bolt.Tx) error { return tx.Bucket(bucketEvents).Bucket([]byte("s")).Delete(seqKey(2)) }},
		{"event duplicated under a new key", func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketEvents).Bucket([]byte("s"))
			return b.Put(seqKey(99), append([]byte(nil), b.Get(seqKey(2))...))
		}},
		{"state rewritten", func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketSessions)
			var sess Session
			if _, err := sess.UnmarshalMsg(b.Get([]byte("s"))); err != nil {
				return err
			}
			sess.State = lifecycle.Completed
			v, _ := sess.MarshalMsg(nil)
			return b.Put([]byte("s"), v)
		}},
		{"checkpoint deleted", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketCheckpoints).Bucket([]byte("s")).Delete(seqKey(3))
		}},
		{"orphan events", func(tx *bolt.Tx) error { _, err := tx.Bucket(bucketEvents).CreateBucket([]byte("ghost")); return err }},
		{"audit entry deleted", func(tx *bolt.Tx) error { return tx.Bucket([]byte("audit")).Delete(seqKey(1)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t, filepath.Join(t.TempDir(), "state.db"))
			if _, _, err := s.Create(ctx, Session{ID: "s"}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Transition(ctx, "s", Change{To: lifecycle.Running}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Append(ctx, "s", Emit{lifecycle.EventLog, map[string]any{"message": "x"}}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Checkpoint(ctx, "s", NewCheckpoint{}); err != nil {
				t.Fatal(err)
			}
			mustCheck(t, s)
			if err := s.db.Update(tt.edit); err != nil {
				t.Fatal(err)
			}
			err := s.Check(ctx)
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, audit.ErrBrokenChain) {
				t.Fatalf("Check = %v, want a corruption", err)
			}
		})
	}
}
