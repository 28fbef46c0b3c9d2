package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	"hcp-edge/session/atrest"
	"hcp-edge/session/audit"
	"hcp-edge/session/lifecycle"
)

// Bucket names.
var (
	bucketSessions    = []byte("sessions")
	bucketEvents      = []byte("events")      // nested: one bucket per session id
	bucketCheckpoints = []byte("checkpoints") // nested: one bucket per session id
	bucketActive      = []byte("active")      // id → capability name of each non-terminal session
)

// MaxIDLen bounds session ids (a UUID is 36 bytes).
const MaxIDLen = 128

// Opts tunes a Store.
type Opts struct {
	Timeout  time.Duration    // wait for the file lock; must be > 0 (DefaultOpts: 1 s)
	Mode     os.FileMode      // of a new file (DefaultOpts: 0600)
	MaxSize  int              // bytes, 0 for no limit (see LIBRARIES.md on 32-bit ARM)
	Clock    func() time.Time // time source; time.Now if nil
	ReadOnly bool             // open for inspection (audit verify, replay) only
	// WriteFailed, when set, is told of every Update whose commit failed;
	// when it returns true (it freed space: the disk reserve of
	// internal/diskspace) the Update runs once more.
	WriteFailed func(err error) (retry bool)
}

// DefaultOpts returns a 1 s lock timeout, mode 0600, a 512 MiB size limit
// and the wall clock.
func DefaultOpts() Opts {
	return Opts{Timeout: time.Second, Mode: 0o600, MaxSize: 512 << 20, Clock: time.Now}
}

// Store is the session state file. Its methods are safe for concurrent use;
// writes are serialised by bbolt.
type Store struct {
	db    *bolt.DB
	log   *audit.Log
	clock func() time.Time
	queue Queue // nil: messages are only handed back (Tx.Sent)
	// writeFailed is Opts.WriteFailed.
	writeFailed func(error) bool
	key         *atrest.Key // SetAtRest: seals the events of T3/T4 sessions
}

// Open opens (or creates) the state file at path, creates the buckets,
// and returns the Store. A second process holding the file makes Open fail
// after opts.Timeout.
func Open(path string, opts Opts) (*Store, error) {
	def := DefaultOpts()
	if opts.Timeout <= 0 {
		opts.Timeout = def.Timeout
	}
	if opts.Mode == 0 {
		opts.Mode = def.Mode
	}
	if opts.Clock == nil {
		opts.Clock = def.Clock
	}
	db, err := bolt.Open(path, opts.Mode, &bolt.Options{Timeout: opts.Timeout, MaxSize: opts.MaxSize, ReadOnly: opts.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if !opts.ReadOnly {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, name := range [][]byte{bucketSessions, bucketEvents, bucketCheckpoints} {
				if _, err := tx.CreateBucketIfNotExists(name); err != nil {
					return fmt.Errorf("store: create bucket %s: %w", name, err)
				}
			}
			if err := initActive(tx); err != nil {
				return err
			}
			return audit.Init(tx)
		})
		if err != nil {
			db.Close()
			return nil, err
		}
	}
	log, err := audit.Open(db, audit.Opts{Clock: opts.Clock})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db, log: log, clock: opts.Clock, writeFailed: opts.WriteFailed}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// DB returns the bbolt database of the state file, so that the outbox and
// the command inbox keep their buckets in it and share its transactions
// (Bind).
func (s *Store) DB() *bolt.DB { return s.db }

// SetQueue makes q the durable outbox of the messages that Tx.Send is
// given: they are queued inside the sending transaction. Call it before
// any write; without it the messages are only handed back (Tx.Sent).
func (s *Store) SetQueue(q Queue) { s.queue = q }

// Audit returns the audit log kept in the same file.
func (s *Store) Audit() *audit.Log { return s.log }

// Emit is an event to number and store: its data must marshal to a JSON
// object.
type Emit struct {
	Type lifecycle.EventType
	Data any
}

// NewCheckpoint is a checkpoint to take.
type NewCheckpoint struct {
	Description string
	Resumable   bool
	Step        string
	Payload     []byte
	// Seal, when set (a T3/T4 session), seals Payload under this key
	// before it is stored, bound to the session id, purpose checkpoint and
	// the checkpoint's id, so that a payload moved to another session or
	// checkpoint does not open (Checkpoint.Open).
	Seal *atrest.Key
}

// Change is one state transition and what is committed with it.
type Change struct {
	To     lifecycle.State
	Reason string
	// Before are emitted before the transition (e.g. an error event before
	// FAILED); the checkpoint, if any, follows them.
	Before     []Emit
	Checkpoint *NewCheckpoint
	// After are emitted after state_changed (e.g. session_created after
	// PENDING → RUNNING); a terminal state allows none.
	After []Emit
	// Update, if set, may change the gate's fields of the session (token,
	// risk level...). The Store's own fields are restored after it.
	Update func(*Session)
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

func checkID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("store: %q: %w", id, ErrBadID)
	}
	return nil
}

// txn is the work of one Update on one session.
type txn struct {
	s      *Store
	tx     *bolt.Tx
	now    time.Time
	sess   Session
	m      lifecycle.Machine
	events []Event
	ckpt   *Checkpoint
	// keyless: Tx.WithoutKey was called for this session.
	keyless bool
}

func (s *Store) begin(tx *bolt.Tx, id string) (*txn, error) {
	v := tx.Bucket(bucketSessions).Get([]byte(id))
	if v == nil {
		return nil, fmt.Errorf("store: session %s: %w", id, ErrNotFound)
	}
	t := &txn{s: s, tx: tx, now: s.clock()}
	if _, err := t.sess.UnmarshalMsg(v); err != nil {
		return nil, &CorruptError{Session: id, Reason: "session record: " + err.Error()}
	}
	m, err := lifecycle.Restore(t.sess.State, t.sess.LastSeq)
	if err != nil {
		return nil, &CorruptError{Session: id, Reason: err.Error()}
	}
	t.m = m
	return t, nil
}

func (t *txn) add(evs ...lifecycle.Event) {
	for _, e := range evs {
		t.events = append(t.events, Event{Seq: e.Seq, Type: e.Type, At: t.now, Data: e.Data})
	}
}

func (t *txn) emit(es []Emit) error {
	for _, e := range es {
		ev, err := t.m.Emit(e.Type, e.Data)
		if err != nil {
			return fmt.Errorf("store: session %s: %w", t.sess.ID, err)
		}
		t.add(ev)
	}
	return nil
}

type checkpointData struct {
	ID          string    `json:"checkpoint_id"`
	Description string    `json:"description"`
	Resumable   bool      `json:"resumable"`
	CreatedAt   time.Time `json:"created_at"`
}

func (t *txn) checkpoint(nc NewCheckpoint) error {
	id := fmt.Sprintf("ckpt-%06d", t.m.LastSeq+1)
	ev, err := t.m.Emit(lifecycle.EventCheckpointCreated, checkpointData{
		ID: id, Description: nc.Description, Resumable: nc.Resumable, CreatedAt: t.now})
	if err != nil {
		return fmt.Errorf("store: session %s: %w", t.sess.ID, err)
	}
	t.add(ev)
	t.ckpt = &Checkpoint{ID: id, Seq: ev.Seq, CreatedAt: t.now, State: t.m.State,
		Description: nc.Description, Resumable: nc.Resumable, Step: nc.Step, Payload: nc.Payload}
	if nc.Seal != nil {
		sealed, err := nc.Seal.Seal(nc.Payload, atrest.CheckpointBinding(t.sess.ID, id))
		if err != nil {
			return fmt.Errorf("store: session %s: seal checkpoint %s: %w", t.sess.ID, id, err)
		}
		t.ckpt.Payload, t.ckpt.Sealed = sealed, true
	}
	return nil
}

// Open returns the payload of c, a checkpoint of session sessionID: as
// stored, or opened with k when it is sealed — atrest.ErrNoKey without a
// key, *atrest.WrongKeyError for another key, atrest.ErrTampered for a
// payload altered or taken from another session or checkpoint.
func (c Checkpoint) Open(sessionID string, k *atrest.Key) ([]byte, error) {
	if !c.Sealed {
		return c.Payload, nil
	}
	if k == nil {
		return nil, fmt.Errorf("store: session %s: checkpoint %s is sealed: %w", sessionID, c.ID, atrest.ErrNoKey)
	}
	p, err := k.Open(c.Payload, atrest.CheckpointBinding(sessionID, c.ID))
	if err != nil {
		return nil, fmt.Errorf("store: session %s: checkpoint %s: %w", sessionID, c.ID, err)
	}
	return p, nil
}

type transitionDetail struct {
	From    lifecycle.State   `json:"from,omitempty"`
	To      lifecycle.State   `json:"to"`
	Trigger lifecycle.Trigger `json:"trigger,omitempty"`
	Reason  string            `json:"reason,omitempty"`
	Seq     uint64            `json:"seq,omitempty"` // of the state_changed event
}

func (t *txn) audit(d transitionDetail) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("store: audit detail: %w", err)
	}
	_, err = audit.AppendTx(t.tx, audit.Entry{At: t.now, SessionID: t.sess.ID, Kind: audit.KindTransition, Detail: string(b)})
	return err
}

// commit writes the session record, the events and the checkpoint.
func (t *txn) commit() error {
	id := []byte(t.sess.ID)
	t.sess.State, t.sess.LastSeq = t.m.State, t.m.LastSeq
	if len(t.events) > 0 {
		t.sess.LastEventAt = t.now
		key, err := t.s.sealKey(t.sess)
		if err != nil && !t.keyless {
			return err
		}
		eb, err := t.tx.Bucket(bucketEvents).CreateBucketIfNotExists(id)
		if err != nil {
			return fmt.Errorf("store: events of %s: %w", t.sess.ID, err)
		}
		for i := range t.events {
			// t.events keep their data in the clear: the step's messages
			// are made of them.
			e, err := sealEvent(t.sess.ID, key, t.events[i])
			if err != nil {
				return err
			}
			v, err := e.MarshalMsg(nil)
			if err != nil {
				return fmt.Errorf("store: encode event %d: %w", t.events[i].Seq, err)
			}
			if err := eb.Put(seqKey(t.events[i].Seq), v); err != nil {
				return fmt.Errorf("store: put event %d of %s: %w", t.events[i].Seq, t.sess.ID, err)
			}
		}
	}
	if t.ckpt != nil {
		cb, err := t.tx.Bucket(bucketCheckpoints).CreateBucketIfNotExists(id)
		if err != nil {
			return fmt.Errorf("store: checkpoints of %s: %w", t.sess.ID, err)
		}
		v, err := t.ckpt.MarshalMsg(nil)
		if err != nil {
			return fmt.Errorf("store: encode checkpoint: %w", err)
		}
		if err := cb.Put(seqKey(t.ckpt.Seq), v); err != nil {
			return fmt.Errorf("store: put checkpoint %s of %s: %w", t.ckpt.ID, t.sess.ID, err)
		}
		t.sess.LastCheckpoint = t.ckpt.Seq
	}
	v, err := t.sess.MarshalMsg(nil)
	if err != nil {
		return fmt.Errorf("store: encode session %s: %w", t.sess.ID, err)
	}
	if err := t.tx.Bucket(bucketSessions).Put(id, v); err != nil {
		return fmt.Errorf("store: put session %s: %w", t.sess.ID, err)
	}
	return setActive(t.tx, t.sess)
}

// Session returns the stored session id.
func (s *Store) Session(ctx context.Context, id string) (Session, error) {
	if err := checkID(id); err != nil {
		return Session{}, err
	}
	var out Session
	err := s.view(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSessions).Get([]byte(id))
		if v == nil {
			return fmt.Errorf("store: session %s: %w", id, ErrNotFound)
		}
		if _, err := out.UnmarshalMsg(v); err != nil {
			return &CorruptError{Session: id, Reason: "session record: " + err.Error()}
		}
		return nil
	})
	return out, err
}

// Sessions returns every stored session, by id; with active set, only those
// in a non-terminal state (the ones to recover at start).
func (s *Store) Sessions(ctx context.Context, active bool) ([]Session, error) {
	var out []Session
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			var sess Session
			if _, err := sess.UnmarshalMsg(v); err != nil {
				return &CorruptError{Session: string(k), Reason: "session record: " + err.Error()}
			}
			if !active || !sess.State.Terminal() {
				out = append(out, sess)
			}
			return nil
		})
	})
	return out, err
}

// Events returns session id's events with a sequence number above after,
// in order (after = 0: all of them), their data in the clear: sealed data
// is opened with the key of SetAtRest (an error wrapping atrest.ErrNoKey
// without one).
func (s *Store) Events(ctx context.Context, id string, after uint64) ([]Event, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	var out []Event
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bucketSessions).Get([]byte(id)) == nil {
			return fmt.Errorf("store: session %s: %w", id, ErrNotFound)
		}
		eb := tx.Bucket(bucketEvents).Bucket([]byte(id))
		if eb == nil {
			return nil
		}
		c := eb.Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil; k, v = c.Next() {
			var e Event
			if _, err := e.UnmarshalMsg(v); err != nil {
				return &CorruptError{Session: id, Reason: fmt.Sprintf("event %x: %v", k, err)}
			}
			data, err := e.Open(id, s.key)
			if err != nil {
				return err
			}
			e.Data, e.Sealed, e.Frame = data, false, nil
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// LastCheckpoint returns session id's newest checkpoint; ok is false when
// it has none.
func (s *Store) LastCheckpoint(ctx context.Context, id string) (cp Checkpoint, ok bool, err error) {
	sess, err := s.Session(ctx, id)
	if err != nil || sess.LastCheckpoint == 0 {
		return Checkpoint{}, false, err
	}
	err = s.view(ctx, func(tx *bolt.Tx) error {
		var v []byte
		if cb := tx.Bucket(bucketCheckpoints).Bucket([]byte(id)); cb != nil {
			v = cb.Get(seqKey(sess.LastCheckpoint))
		}
		if v == nil {
			return &CorruptError{Session: id, Reason: fmt.Sprintf("checkpoint %d missing", sess.LastCheckpoint)}
		}
		if _, err := cp.UnmarshalMsg(v); err != nil {
			return &CorruptError{Session: id, Reason: "checkpoint record: " + err.Error()}
		}
		ok = true
		return nil
	})
	return cp, ok, err
}

func (s *Store) view(ctx context.Context, f func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return s.db.View(f)
}
