package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/lifecycle"
	"hcp-edge/transport/wire"
)

// queueRec is a Queue writing each message id into a bucket of the
// transaction it is given.
type queueRec struct{ fail bool }

func (q *queueRec) QueueTx(tx *bolt.Tx, msgs []Message) error {
	if q.fail {
		return errors.New("queue full")
	}
	b, err := tx.CreateBucketIfNotExists([]byte("test-outbox"))
	if err != nil {
		return err
	}
	for _, m := range msgs {
		seq, _ := b.NextSequence()
		if err := b.Put(seqKey(seq), []byte(m.Envelope.MessageID.String())); err != nil {
			return err
		}
	}
	return nil
}

func queued(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	_ = s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte("test-outbox")); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	return n
}

// One step: the session's events and their messages commit together, or
// neither does (a failing Queue rolls the events back too).
func TestTxSendCommitsWithTheStep(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
	q := &queueRec{}
	s.SetQueue(q)
	sid := uuid.New()
	if _, _, err := s.Create(ctx, Session{ID: sid.String(), Capability: "leak-check"}); err != nil {
		t.Fatal(err)
	}
	step := func() error {
		return s.Update(ctx, func(w *Tx) error {
			evs, err := w.Emit(sid.String(), Emit{Type: lifecycle.EventLog, Data: map[string]any{"m": "x"}})
			if err != nil {
				return err
			}
			env, err := wire.NewEnvelope(&sid, &wire.Event{EventType: "log", Sequence: evs[0].Seq, Data: evs[0].Data}, time.Now())
			if err != nil {
				return err
			}
			return w.Send(Message{CallerID: "alpha", Envelope: env})
		})
	}
	if err := step(); err != nil {
		t.Fatal(err)
	}
	q.fail = true
	if err := step(); err == nil {
		t.Fatal("step with a failing queue committed")
	}
	evs, err := s.Events(ctx, sid.String(), 0)
	if err != nil || len(evs) != 1 || queued(t, s) != 1 {
		t.Fatalf("events %d, queued %d (%v): want 1 and 1", len(evs), queued(t, s), err)
	}
	// The active index follows the session to its end.
	var act []Active
	_ = s.Update(ctx, func(w *Tx) error { act, err = w.Active(); return err })
	if len(act) != 1 || act[0].Capability != "leak-check" {
		t.Fatalf("active %+v", act)
	}
	if _, _, err := s.Transition(ctx, sid.String(), Change{To: lifecycle.Rejected, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	_ = s.Update(ctx, func(w *Tx) error { act, err = w.Active(); return err })
	if len(act) != 0 {
		t.Fatalf("active after REJECTED: %+v", act)
	}
	mustCheck(t, s)
}

// Import merges an old outbox file with its keys and bucket sequences, once.
func TestImportOldOutboxFile(t *testing.T) {
	dir := t.TempDir()
	old, err := bolt.Open(filepath.Join(dir, "outbox.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Update(func(tx *bolt.Tx) error {
		root, _ := tx.CreateBucket([]byte("uplink-outbox"))
		msgs, _ := root.CreateBucket([]byte("msgs"))
		for range 3 {
			k, _ := msgs.NextSequence()
			if err := msgs.Put(seqKey(k), []byte("m")); err != nil {
				return err
			}
		}
		_ = msgs.Delete(seqKey(1))
		in, _ := tx.CreateBucket([]byte("inbox"))
		ids, _ := in.CreateBucket([]byte("ids"))
		return ids.Put([]byte("mid"), []byte(`{}`))
	}); err != nil {
		t.Fatal(err)
	}
	old.Close()
	s := open(t, filepath.Join(dir, "state.db"))
	for i := range 2 { // the second time (a crash before the rename) copies nothing
		done, err := s.Import(filepath.Join(dir, "outbox.db"), "uplink-outbox", "inbox")
		if err != nil || !done {
			t.Fatalf("import %d: %v %v", i, done, err)
		}
	}
	_ = s.db.View(func(tx *bolt.Tx) error {
		msgs := tx.Bucket([]byte("uplink-outbox")).Bucket([]byte("msgs"))
		if msgs.Sequence() != 3 || msgs.Get(seqKey(2)) == nil || msgs.Get(seqKey(1)) != nil || msgs.Stats().KeyN != 2 {
			t.Fatalf("msgs: sequence %d, %d keys", msgs.Sequence(), msgs.Stats().KeyN)
		}
		if tx.Bucket([]byte("inbox")).Bucket([]byte("ids")).Get([]byte("mid")) == nil {
			t.Fatal("inbox window not imported")
		}
		return nil
	})
	if done, err := s.Import(filepath.Join(dir, "nothing.db"), "inbox"); done || err != nil {
		t.Fatalf("missing file: %v %v", done, err)
	}
	mustCheck(t, s)
}
