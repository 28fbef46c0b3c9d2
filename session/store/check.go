package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"hcp-edge/session/atrest"
	"hcp-edge/session/audit"
	"hcp-edge/session/lifecycle"
)

// Check verifies the whole file in one read transaction and returns the
// first problem: bbolt's own page check; for every session, events
// numbered 1..LastSeq without gap or duplicate, a state replayed from its
// state_changed events (each a valid edge, or a recovery) equal to the
// stored state, session_closed last and only in a terminal state, every
// checkpoint matching its checkpoint_created event (a sealed payload with
// the header of an atrest blob) and the newest one recorded in the
// session; no events or checkpoints without a session; the audit chain; and the audited transitions of each session ending in
// its stored state. Run it at start, before recovery.
func (s *Store) Check(ctx context.Context) error {
	return s.view(ctx, func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return &CorruptError{Reason: "bbolt: " + err.Error()}
		}
		if _, err := audit.VerifyTx(ctx, tx); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		for _, b := range [][]byte{bucketEvents, bucketCheckpoints} {
			err := tx.Bucket(b).ForEachBucket(func(k []byte) error {
				if tx.Bucket(bucketSessions).Get(k) == nil {
					return &CorruptError{Session: string(k), Reason: fmt.Sprintf("%s without a session", b)}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("store: check: %w", err)
			}
			var sess Session
			if _, err := sess.UnmarshalMsg(v); err != nil {
				return &CorruptError{Session: string(k), Reason: "session record: " + err.Error()}
			}
			if sess.ID != string(k) {
				return &CorruptError{Session: string(k), Reason: fmt.Sprintf("record names %q", sess.ID)}
			}
			if err := checkOwnership(tx, sess); err != nil {
				return err
			}
			return checkSession(tx, sess)
		})
	})
}

func checkSession(tx *bolt.Tx, sess Session) error {
	bad := func(format string, args ...any) error {
		return &CorruptError{Session: sess.ID, Reason: fmt.Sprintf(format, args...)}
	}
	id := []byte(sess.ID)
	var events []Event
	if eb := tx.Bucket(bucketEvents).Bucket(id); eb != nil {
		err := eb.ForEach(func(k, v []byte) error {
			var e Event
			if _, err := e.UnmarshalMsg(v); err != nil {
				return bad("event %x: %v", k, err)
			}
			if len(k) != 8 || binary.BigEndian.Uint64(k) != e.Seq {
				return bad("event %d stored under key %x", e.Seq, k)
			}
			if e.Sealed {
				if _, err := atrest.Inspect(e.Data); err != nil {
					return bad("event %d: sealed data: %v", e.Seq, err)
				}
			}
			events = append(events, e)
			return nil
		})
		if err != nil {
			return err
		}
	}
	seqs := make([]uint64, len(events))
	for i, e := range events {
		seqs[i] = e.Seq
	}
	if err := lifecycle.CheckSequence(1, seqs); err != nil {
		return bad("%v", err)
	}
	if uint64(len(events)) != sess.LastSeq {
		return bad("last sequence %d, %d events stored", sess.LastSeq, len(events))
	}
	st := lifecycle.Pending
	for i, e := range events {
		switch e.Type {
		case lifecycle.EventStateChanged:
			var sc lifecycle.StateChanged
			if err := json.Unmarshal(e.checkData(), &sc); err != nil {
				return bad("event %d: %v", e.Seq, err)
			}
			if sc.From != st {
				return bad("event %d: from %s, the session was in %s", e.Seq, sc.From, st)
			}
			if sc.From == sc.To && sc.Reason == lifecycle.ReasonRecovered && !st.Terminal() {
				continue
			}
			if _, err := lifecycle.Check(sc.From, sc.To); err != nil {
				return bad("event %d: %v", e.Seq, err)
			}
			st = sc.To
		case lifecycle.EventSessionClosed:
			var sc lifecycle.SessionClosed
			if err := json.Unmarshal(e.checkData(), &sc); err != nil {
				return bad("event %d: %v", e.Seq, err)
			}
			if !st.Terminal() || sc.FinalState != st || i != len(events)-1 {
				return bad("event %d: session_closed(%s) in %s, %d events after it", e.Seq, sc.FinalState, st, len(events)-1-i)
			}
		default:
			if !e.Type.Valid() {
				return bad("event %d: type %q", e.Seq, e.Type)
			}
			if st.Terminal() {
				return bad("event %d: %s after the session reached %s", e.Seq, e.Type, st)
			}
		}
	}
	if st != sess.State {
		return bad("events lead to %s, the record says %s", st, sess.State)
	}
	if st.Terminal() && (len(events) == 0 || events[len(events)-1].Type != lifecycle.EventSessionClosed) {
		return bad("terminal %s without session_closed last", st)
	}
	var last uint64
	if cb := tx.Bucket(bucketCheckpoints).Bucket(id); cb != nil {
		err := cb.ForEach(func(k, v []byte) error {
			var cp Checkpoint
			if _, err := cp.UnmarshalMsg(v); err != nil {
				return bad("checkpoint %x: %v", k, err)
			}
			if len(k) != 8 || binary.BigEndian.Uint64(k) != cp.Seq || cp.Seq == 0 || cp.Seq > uint64(len(events)) {
				return bad("checkpoint %s (seq %d) under key %x", cp.ID, cp.Seq, k)
			}
			e := events[cp.Seq-1]
			var d checkpointData
			if e.Type != lifecycle.EventCheckpointCreated || json.Unmarshal(e.checkData(), &d) != nil || d.ID != cp.ID {
				return bad("checkpoint %s: event %d is %s %s", cp.ID, cp.Seq, e.Type, e.checkData())
			}
			if cp.Sealed {
				if _, err := atrest.Inspect(cp.Payload); err != nil {
					return bad("checkpoint %s: sealed payload: %v", cp.ID, err)
				}
			}
			last = cp.Seq
			return nil
		})
		if err != nil {
			return err
		}
	}
	if last != sess.LastCheckpoint {
		return bad("newest checkpoint %d, the record says %d", last, sess.LastCheckpoint)
	}
	entries, err := audit.ReplayTx(tx, sess.ID)
	if err != nil {
		return fmt.Errorf("store: session %s: %w", sess.ID, err)
	}
	ast := lifecycle.State("")
	for _, e := range entries {
		if e.Kind != audit.KindTransition {
			continue
		}
		var d transitionDetail
		if err := json.Unmarshal([]byte(e.Detail), &d); err != nil {
			return bad("audit entry %d: %v", e.Seq, err)
		}
		if d.From != ast {
			return bad("audit entry %d: from %q, audited state %q", e.Seq, d.From, ast)
		}
		ast = d.To
	}
	if ast != sess.State {
		return bad("audited transitions end in %q, the record says %s", ast, sess.State)
	}
	return nil
}
