package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/audit"
	"hcp-edge/session/lifecycle"
	"hcp-edge/transport/wire"
)

// Message is one outbound HCP message committed with a step: it enters the
// durable outbox (Queue) in the step's own transaction.
type Message struct {
	CallerID string // routes the message ({caller_id}.{session_id}.{type})
	// InReplyTo is the message_id of the task_submit a task_accepted or
	// task_rejected answers ("" otherwise).
	InReplyTo string
	Envelope  *wire.Envelope
	// Unsealed marks a message of a T3/T4 session that the Tx was told
	// holds none of its data (Tx.WithoutKey): the queue may store it in
	// the clear when it has no at-rest key. Tx.Send sets it.
	Unsealed bool
}

// Queue is the durable outbox as the store sees it (cmd backs it with
// transport/outbox, which session may not import). QueueTx appends msgs, in
// order, inside tx, the store's own writable transaction, and must not open
// another transaction; an error rolls the whole step back.
type Queue interface {
	QueueTx(tx *bolt.Tx, msgs []Message) error
}

// Tx is one read-write transaction of the state file: everything one step
// changes — a session created, events numbered, a checkpoint, a transition,
// audit entries — and the messages it sends (Send) commit together or not
// at all. A Tx is used by one goroutine and not past the function it was
// given to.
type Tx struct {
	s     *Store
	tx    *bolt.Tx
	now   time.Time
	sent  []Message
	owned bool // made by Update: OnCommit handlers run after commit
	// keyless: the sessions of WithoutKey.
	keyless map[string]bool
}

// Update runs f in one read-write transaction of the state file and
// commits it (one fsync'ed commit), or rolls everything back when f
// returns an error. The context is checked before the transaction begins.
// When the commit fails and Opts.WriteFailed frees space, f runs once more
// in a new transaction.
func (s *Store) Update(ctx context.Context, f func(w *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	for try := 0; ; try++ {
		var fErr error
		err := s.db.Update(func(tx *bolt.Tx) error {
			fErr = f(&Tx{s: s, tx: tx, now: s.clock(), owned: true})
			return fErr
		})
		if err == nil || fErr != nil || try > 0 || s.writeFailed == nil || !s.writeFailed(err) {
			return err
		}
	}
}

// Bind wraps tx, a writable transaction of the state file's db opened by
// someone else (the command inbox records its de-duplication entry and its
// replies in it), so the store's writes join it.
func (s *Store) Bind(tx *bolt.Tx) (*Tx, error) {
	if tx == nil || tx.DB() != s.db || !tx.Writable() {
		return nil, errors.New("store: Bind needs a writable transaction of the state file")
	}
	return &Tx{s: s, tx: tx, now: s.clock()}, nil
}

// Bolt returns the underlying bbolt transaction.
func (w *Tx) Bolt() *bolt.Tx { return w.tx }

// OnCommit runs f after the transaction has committed (never when it rolls
// back), after bbolt has released its writer lock; handlers run in the
// order they were added.
func (w *Tx) OnCommit(f func()) { w.tx.OnCommit(f) }

// Send queues msgs in the durable outbox inside this transaction (nothing
// without a Queue) and keeps them for Sent. Messages are sent in the order
// of the Send calls.
func (w *Tx) Send(msgs ...Message) error {
	if len(msgs) == 0 {
		return nil
	}
	for i, m := range msgs {
		if m.Envelope == nil {
			return errors.New("store: send: nil envelope")
		}
		if m.Envelope.SessionID != nil && w.keyless[m.Envelope.SessionID.String()] {
			msgs[i].Unsealed = true
		}
	}
	if w.s.queue != nil {
		if err := w.s.queue.QueueTx(w.tx, msgs); err != nil {
			return fmt.Errorf("store: queue messages: %w", err)
		}
	}
	w.sent = append(w.sent, msgs...)
	return nil
}

// Sent returns the messages given to Send so far.
func (w *Tx) Sent() []Message { return w.sent }

// Audit appends e to the audit chain inside this transaction (its time,
// when zero, is the transaction's). It is a gate.Recorder, so the gate's
// decision is audited in the step that acts on it.
func (w *Tx) Audit(_ context.Context, e audit.Entry) (audit.Entry, error) {
	if e.At.IsZero() {
		e.At = w.now
	}
	return audit.AppendTx(w.tx, e)
}

// Append is Audit under the name gate.Recorder asks for.
func (w *Tx) Append(ctx context.Context, e audit.Entry) (audit.Entry, error) { return w.Audit(ctx, e) }

func (w *Tx) update(id string, f func(t *txn) error) (*txn, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	t, err := w.s.begin(w.tx, id)
	if err != nil {
		return nil, err
	}
	t.now, t.keyless = w.now, w.keyless[id]
	if err := f(t); err != nil {
		return nil, err
	}
	if err := t.commit(); err != nil {
		return nil, err
	}
	return t, nil
}

// Create stores a new session in PENDING with the gate's fields of sess
// (ID required; State, LastSeq and the times are set here), emits events
// (none is required: session_created belongs to the approval), and audits
// the creation.
func (w *Tx) Create(sess Session, events ...Emit) (Session, []Event, error) {
	if err := checkID(sess.ID); err != nil {
		return Session{}, nil, err
	}
	if w.tx.Bucket(bucketSessions).Get([]byte(sess.ID)) != nil {
		return Session{}, nil, fmt.Errorf("store: create %s: %w", sess.ID, ErrExists)
	}
	t := &txn{s: w.s, tx: w.tx, now: w.now, sess: sess, m: lifecycle.New()}
	t.sess.CreatedAt, t.sess.UpdatedAt, t.sess.LastEventAt, t.sess.LastCheckpoint = t.now, t.now, time.Time{}, 0
	if err := t.emit(events); err != nil {
		return Session{}, nil, err
	}
	if err := t.audit(transitionDetail{To: lifecycle.Pending, Reason: "task_submit received"}); err != nil {
		return Session{}, nil, err
	}
	if err := t.commit(); err != nil {
		return Session{}, nil, err
	}
	return t.sess, t.events, nil
}

// Transition moves session id along a valid edge: c.Before, the
// checkpoint, state_changed (and session_closed for a terminal state),
// c.After, the new session record and an audit entry. An invalid edge
// returns a *lifecycle.TransitionError.
func (w *Tx) Transition(id string, c Change) (Session, []Event, error) {
	t, err := w.update(id, func(t *txn) error {
		from := t.m.State
		if _, err := lifecycle.Check(from, c.To); err != nil {
			return fmt.Errorf("store: session %s: %w", id, err)
		}
		if err := t.emit(c.Before); err != nil {
			return err
		}
		if c.Checkpoint != nil {
			if err := t.checkpoint(*c.Checkpoint); err != nil {
				return err
			}
		}
		edge, evs, err := t.m.Transition(c.To, c.Reason)
		if err != nil {
			return fmt.Errorf("store: session %s: %w", id, err)
		}
		t.add(evs...)
		if err := t.emit(c.After); err != nil {
			return err
		}
		if c.Update != nil {
			keep := t.sess
			c.Update(&t.sess)
			t.sess.ID, t.sess.CreatedAt, t.sess.LastCheckpoint, t.sess.LastEventAt = keep.ID, keep.CreatedAt, keep.LastCheckpoint, keep.LastEventAt
		}
		t.sess.UpdatedAt = t.now
		return t.audit(transitionDetail{From: from, To: c.To, Trigger: edge.Trigger, Reason: c.Reason, Seq: evs[0].Seq})
	})
	if err != nil {
		return Session{}, nil, err
	}
	return t.sess, t.events, nil
}

// Emit numbers and stores events that are not transitions (progress, log,
// warning, error, intermediate_result).
func (w *Tx) Emit(id string, events ...Emit) ([]Event, error) {
	t, err := w.update(id, func(t *txn) error { return t.emit(events) })
	if err != nil {
		return nil, err
	}
	return t.events, nil
}

// Checkpoint stores a checkpoint and its checkpoint_created event, after
// events. A closed session takes no checkpoint.
func (w *Tx) Checkpoint(id string, nc NewCheckpoint, events ...Emit) (Checkpoint, []Event, error) {
	t, err := w.update(id, func(t *txn) error {
		if err := t.emit(events); err != nil {
			return err
		}
		return t.checkpoint(nc)
	})
	if err != nil {
		return Checkpoint{}, nil, err
	}
	return *t.ckpt, t.events, nil
}

// Recovered records a resumption after a restart: the state_changed event
// with reason recovered_from_checkpoint, and an audit entry naming the
// checkpoint.
func (w *Tx) Recovered(id string) (Session, Event, error) {
	var ev lifecycle.Event
	t, err := w.update(id, func(t *txn) error {
		var err error
		if ev, err = t.m.Recovered(); err != nil {
			return fmt.Errorf("store: session %s: %w", id, err)
		}
		t.add(ev)
		return t.audit(transitionDetail{From: t.m.State, To: t.m.State, Reason: fmt.Sprintf("%s ckpt-%06d", lifecycle.ReasonRecovered, t.sess.LastCheckpoint), Seq: ev.Seq})
	})
	if err != nil {
		return Session{}, Event{}, err
	}
	return t.sess, t.events[0], nil
}

// Active is one non-terminal session as the "active" index holds it.
type Active struct {
	ID         string
	Capability string
}

// Active returns the sessions not in a terminal state, as of this
// transaction: what the gate's concurrency and shared-equipment rules
// count, decided in the same commit that creates the next session.
func (w *Tx) Active() ([]Active, error) {
	var out []Active
	err := w.tx.Bucket(bucketActive).ForEach(func(k, v []byte) error {
		out = append(out, Active{ID: string(k), Capability: string(v)})
		return nil
	})
	return out, err
}

// Session returns the stored session id as of this transaction.
func (w *Tx) Session(id string) (Session, error) {
	if err := checkID(id); err != nil {
		return Session{}, err
	}
	var out Session
	v := w.tx.Bucket(bucketSessions).Get([]byte(id))
	if v == nil {
		return Session{}, fmt.Errorf("store: session %s: %w", id, ErrNotFound)
	}
	if _, err := out.UnmarshalMsg(v); err != nil {
		return Session{}, &CorruptError{Session: id, Reason: "session record: " + err.Error()}
	}
	return out, nil
}

// initActive creates the "active" index and, in a file written before it
// existed, fills it from the session records.
func initActive(tx *bolt.Tx) error {
	if tx.Bucket(bucketActive) != nil {
		return nil
	}
	b, err := tx.CreateBucket(bucketActive)
	if err != nil {
		return fmt.Errorf("store: create bucket %s: %w", bucketActive, err)
	}
	return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
		var s Session
		if _, err := s.UnmarshalMsg(v); err != nil {
			return &CorruptError{Session: string(k), Reason: "session record: " + err.Error()}
		}
		if s.State.Terminal() {
			return nil
		}
		return b.Put([]byte(s.ID), []byte(s.Capability))
	})
}

// setActive keeps the "active" index in step with a session record written
// in tx.
func setActive(tx *bolt.Tx, s Session) error {
	b := tx.Bucket(bucketActive)
	v := b.Get([]byte(s.ID))
	switch {
	case s.State.Terminal():
		if v == nil {
			return nil
		}
		return b.Delete([]byte(s.ID))
	case v != nil && string(v) == s.Capability:
		return nil // unchanged: no page to write
	}
	return b.Put([]byte(s.ID), []byte(s.Capability))
}

// The one-step writes below are each one Update holding one call of Tx.

// Create stores a new session in PENDING (Tx.Create) in one commit.
func (s *Store) Create(ctx context.Context, sess Session, events ...Emit) (Session, []Event, error) {
	var out Session
	var evs []Event
	err := s.Update(ctx, func(w *Tx) error {
		var err error
		out, evs, err = w.Create(sess, events...)
		return err
	})
	if err != nil {
		return Session{}, nil, err
	}
	return out, evs, nil
}

// Transition moves session id along a valid edge (Tx.Transition) in one
// fsync'ed commit. An invalid edge returns a *lifecycle.TransitionError and
// writes nothing.
func (s *Store) Transition(ctx context.Context, id string, c Change) (Session, []Event, error) {
	var out Session
	var evs []Event
	err := s.Update(ctx, func(w *Tx) error {
		var err error
		out, evs, err = w.Transition(id, c)
		return err
	})
	if err != nil {
		return Session{}, nil, err
	}
	return out, evs, nil
}

// Append numbers and stores events that are not transitions (Tx.Emit) in
// one commit.
func (s *Store) Append(ctx context.Context, id string, events ...Emit) ([]Event, error) {
	var evs []Event
	err := s.Update(ctx, func(w *Tx) error {
		var err error
		evs, err = w.Emit(id, events...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// Checkpoint stores a checkpoint and its checkpoint_created event, after
// events (Tx.Checkpoint), in one commit.
func (s *Store) Checkpoint(ctx context.Context, id string, nc NewCheckpoint, events ...Emit) (Checkpoint, []Event, error) {
	var cp Checkpoint
	var evs []Event
	err := s.Update(ctx, func(w *Tx) error {
		var err error
		cp, evs, err = w.Checkpoint(id, nc, events...)
		return err
	})
	if err != nil {
		return Checkpoint{}, nil, err
	}
	return cp, evs, nil
}

// Recovered records a resumption after a restart (Tx.Recovered) in one
// commit.
func (s *Store) Recovered(ctx context.Context, id string) (Session, Event, error) {
	var sess Session
	var ev Event
	err := s.Update(ctx, func(w *Tx) error {
		var err error
		sess, ev, err = w.Recovered(id)
		return err
	})
	if err != nil {
		return Session{}, Event{}, err
	}
	return sess, ev, nil
}

// Checkpoints returns every checkpoint of session id, oldest first (none:
// an empty slice): recovery reassembles a journaled state from all of them.
func (s *Store) Checkpoints(ctx context.Context, id string) ([]Checkpoint, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	var out []Checkpoint
	err := s.view(ctx, func(tx *bolt.Tx) error {
		cb := tx.Bucket(bucketCheckpoints).Bucket([]byte(id))
		if cb == nil {
			return nil
		}
		return cb.ForEach(func(k, v []byte) error {
			var cp Checkpoint
			if _, err := cp.UnmarshalMsg(v); err != nil {
				return &CorruptError{Session: id, Reason: fmt.Sprintf("checkpoint %x: %v", k, err)}
			}
			out = append(out, cp)
			return nil
		})
	})
	return out, err
}

// SetMetadata replaces session id's Metadata (the engine's part of the
// record, e.g. the approvals a session has gathered so far) without a
// transition or an event. The caller audits what changed in the same
// transaction.
func (w *Tx) SetMetadata(id string, md []byte) (Session, error) {
	t, err := w.update(id, func(t *txn) error {
		t.sess.Metadata = md
		t.sess.UpdatedAt = t.now
		return nil
	})
	if err != nil {
		return Session{}, err
	}
	return t.sess, nil
}
