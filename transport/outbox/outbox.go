package outbox

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Opts configures an Outbox.
type Opts struct {
	// Bucket is the top-level bbolt bucket holding the outbox (default "outbox"),
	// so the outbox can share the agent's state file.
	Bucket string
	// TelemetryBound is how many Telemetry messages may wait; past it the oldest
	// is dropped and counted (default 10000; must be positive).
	TelemetryBound int
	// OpenTimeout bounds the wait for the file lock in Open (default 1 s; bbolt
	// waits forever on 0, which Open never passes).
	OpenTimeout time.Duration
	// DeleteDelay paces the deletions given to DeleteLater (default 10 ms; must
	// not be negative): they ride along with the next commit (an Append's) once
	// they have waited DeleteDelay or 64 of them wait, and get a commit of
	// their own after 4×DeleteDelay without one, or sooner when no Append came
	// for DeleteDelay.
	DeleteDelay time.Duration
	// Now stamps Message.CreatedUnixNano when it is zero (default time.Now).
	Now func() time.Time
	// Sealer, when set, seals the bodies of the messages it chooses before
	// they are stored, and opens them for Peek (seal.go). Without one,
	// messages are stored as they are, and a sealed record fails Peek with
	// ErrSealed.
	Sealer Sealer
}

// DefaultOpts returns the default options.
func DefaultOpts() Opts {
	return Opts{Bucket: "outbox", TelemetryBound: 10000, OpenTimeout: time.Second,
		DeleteDelay: 10 * time.Millisecond, Now: time.Now}
}

func (o *Opts) fill() error {
	d := DefaultOpts()
	if o.Bucket == "" {
		o.Bucket = d.Bucket
	}
	if o.TelemetryBound == 0 {
		o.TelemetryBound = d.TelemetryBound
	}
	if o.TelemetryBound < 0 {
		return fmt.Errorf("outbox: TelemetryBound %d must be positive", o.TelemetryBound)
	}
	if o.OpenTimeout <= 0 {
		o.OpenTimeout = d.OpenTimeout
	}
	if o.DeleteDelay < 0 {
		return fmt.Errorf("outbox: DeleteDelay %v must not be negative", o.DeleteDelay)
	}
	if o.DeleteDelay == 0 {
		o.DeleteDelay = d.DeleteDelay
	}
	if o.Now == nil {
		o.Now = d.Now
	}
	return nil
}

// Entry is a stored message and its key. Keys increase strictly with every
// Append, across restarts, and are never reused.
type Entry struct {
	Key uint64
	Message
}

// Stats describes the backlog.
type Stats struct {
	Depth     int    // messages waiting
	Telemetry int    // of which Telemetry class
	Dropped   uint64 // Telemetry messages dropped since the last take (TakeDropped, TakeDroppedBySession)
	OldestKey uint64 // 0 when empty
	// Oldest is the creation time of the oldest waiting message (zero when empty).
	Oldest time.Time
}

// Outbox is a durable FIFO of outbound messages in bbolt. Every method is safe
// for concurrent use. See the package documentation.
type Outbox struct {
	db     *bolt.DB
	ownsDB bool
	opts   Opts
	name   []byte
	notify chan struct{}

	// closed is read without mu: AppendTx runs inside a caller's bbolt
	// transaction, and nothing that holds mu may wait for bbolt's writer lock.
	closed atomic.Bool

	wake chan struct{} // buffer 1: the committer has work
	stop chan struct{} // closed by Close: the committer drains and returns
	done chan struct{} // closed when the committer has returned

	// mu guards the fields below. It is never held while waiting for bbolt's
	// writer lock: the committer takes it only between transactions, and
	// AppendTx's commit handler after bbolt has released the lock.
	mu         sync.Mutex
	depth      int
	telemetry  int
	appends    []*appendReq // waiting for the committer, in arrival order
	deletes    []*deleteReq // Delete calls waiting for the committer
	later      []uint64     // DeleteLater keys not yet taken by the committer
	laterSince time.Time    // when the oldest of later was given
	lastAppend time.Time    // when the last Append was queued
	laterErr   error        // a failed DeleteLater commit, reported once
	// riding is the writable transaction the DeleteLater keys ride along
	// with (rideTx), until it commits; a later AppendTx of the same
	// transaction carries none again. A rolled-back one is simply replaced
	// by the next transaction, a different *bolt.Tx (held here, its
	// address is not reused).
	riding *bolt.Tx

	// laterMu guards laterSet: DeleteLater keys not yet committed, which
	// PeekAfter skips (inside its read transaction). It is held only for map
	// operations: nothing waits for anything while holding it.
	laterMu  sync.Mutex
	laterSet map[uint64]struct{}
	laterN   atomic.Int64 // len(laterSet), read without laterMu
}

var (
	bucketMsgs      = []byte("msgs")
	bucketTelemetry = []byte("telemetry")
	bucketMeta      = []byte("meta")
)

// Open opens (creating if needed) a bbolt file at path holding only this
// outbox; Close closes the file. The file is opened without a persisted
// freelist (bbolt's NoFreelistSync, as etcd does): each commit writes fewer
// pages, and Open rebuilds the freelist by scanning the file, which is quick
// for a file of an outbox's size.
func Open(path string, opts Opts) (*Outbox, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:        opts.OpenTimeout,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: open %s: %w", path, err)
	}
	ob, err := newOutbox(db, opts, true)
	if err != nil {
		db.Close()
		return nil, err
	}
	return ob, nil
}

// New keeps the outbox in opts.Bucket of an already open db (the agent's state
// file). Close does not close db, and db must stay open until Close returns
// (Close commits queued deletions). The caller must have opened db with
// Options.Timeout set.
func New(db *bolt.DB, opts Opts) (*Outbox, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	return newOutbox(db, opts, false)
}

func newOutbox(db *bolt.DB, opts Opts, owns bool) (*Outbox, error) {
	ob := &Outbox{db: db, ownsDB: owns, opts: opts, name: []byte(opts.Bucket), notify: make(chan struct{}, 1),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		laterSet: map[uint64]struct{}{}}
	err := db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(ob.name)
		if err != nil {
			return err
		}
		for _, n := range [][]byte{bucketMsgs, bucketTelemetry, bucketMeta} {
			if _, err := root.CreateBucketIfNotExists(n); err != nil {
				return err
			}
		}
		ob.depth = countKeys(root.Bucket(bucketMsgs))
		ob.telemetry = countKeys(root.Bucket(bucketTelemetry))
		meta := root.Bucket(bucketMeta)
		if telemetryCount(meta) != ob.telemetry {
			return setTelemetryCount(meta, ob.telemetry)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: init bucket %q: %w", opts.Bucket, err)
	}
	go ob.run()
	return ob, nil
}

func countKeys(b *bolt.Bucket) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

func itob(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func btoi(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// Notify returns a channel that receives a value (coalesced, buffer 1) after
// each commit that added messages, so a publisher can sleep until there is
// work.
func (ob *Outbox) Notify() <-chan struct{} { return ob.notify }

func (ob *Outbox) notifyAppended() {
	select {
	case ob.notify <- struct{}{}:
	default:
	}
}

// Peek returns up to n of the oldest waiting messages, in key order.
func (ob *Outbox) Peek(n int) ([]Entry, error) { return ob.PeekAfter(0, n) }

// PeekAfter returns up to n waiting messages with keys greater than after, in
// key order: a pipelining publisher peeks past what it has in flight. Messages
// given to DeleteLater are no longer waiting and are skipped. The entries own
// their memory (nothing refers into bbolt's pages). A sealed body is returned
// opened (Opts.Sealer); one that does not open fails the whole Peek, so the
// publisher neither skips it nor publishes anything after it.
func (ob *Outbox) PeekAfter(after uint64, n int) ([]Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	if ob.isClosed() {
		return nil, ErrClosed
	}
	var out []Entry
	err := ob.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(ob.name).Bucket(bucketMsgs).Cursor()
		for k, v := c.Seek(itob(after + 1)); k != nil && len(out) < n; k, v = c.Next() {
			key, err := btoi(k)
			if err != nil {
				return err
			}
			if ob.deletedLater(key) {
				continue
			}
			var e Entry
			e.Key = key
			// UnmarshalMsg copies strings and Body into fresh memory.
			if _, err := e.Message.UnmarshalMsg(v); err != nil {
				return fmt.Errorf("%w: key %d: %v", ErrCorrupt, key, err)
			}
			if err := ob.open(key, &e.Message); err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: peek: %w", err)
	}
	return out, nil
}

// deletedLater reports whether key was given to DeleteLater and its deletion
// has not committed yet.
func (ob *Outbox) deletedLater(key uint64) bool {
	if ob.laterN.Load() == 0 {
		return false
	}
	ob.laterMu.Lock()
	defer ob.laterMu.Unlock()
	_, ok := ob.laterSet[key]
	return ok
}

// Depth returns how many messages wait, and how many of them are Telemetry.
// Messages given to DeleteLater count until their deletion commits.
func (ob *Outbox) Depth() (total, telemetry int) {
	ob.mu.Lock()
	defer ob.mu.Unlock()
	return ob.depth, ob.telemetry
}

// Stats reports depth, the dropped count and the oldest waiting message.
func (ob *Outbox) Stats() (Stats, error) {
	var s Stats
	ob.mu.Lock()
	s.Depth, s.Telemetry = ob.depth, ob.telemetry
	ob.mu.Unlock()
	if ob.isClosed() {
		return Stats{}, ErrClosed
	}
	err := ob.db.View(func(tx *bolt.Tx) error {
		root := tx.Bucket(ob.name)
		s.Dropped = droppedTotal(root.Bucket(bucketMeta))
		k, v := root.Bucket(bucketMsgs).Cursor().First()
		if k == nil {
			return nil
		}
		key, err := btoi(k)
		if err != nil {
			return err
		}
		var m Message
		if _, err := m.UnmarshalMsg(v); err != nil {
			return fmt.Errorf("%w: key %d: %v", ErrCorrupt, key, err)
		}
		s.OldestKey = key
		s.Oldest = time.Unix(0, m.CreatedUnixNano)
		return nil
	})
	if err != nil {
		return Stats{}, fmt.Errorf("outbox: stats: %w", err)
	}
	return s, nil
}

// OldestAge returns how long the oldest waiting message has waited at now (0
// when the outbox is empty).
func (ob *Outbox) OldestAge(now time.Time) (time.Duration, error) {
	s, err := ob.Stats()
	if err != nil || s.OldestKey == 0 {
		return 0, err
	}
	return now.Sub(s.Oldest), nil
}

func (ob *Outbox) isClosed() bool { return ob.closed.Load() }

// Close stops the outbox: Appends and Deletes already waiting are committed,
// so are the keys given to DeleteLater; then, with Open, the file is closed.
// Later calls return ErrClosed.
func (ob *Outbox) Close() error {
	ob.mu.Lock()
	if ob.closed.Load() {
		ob.mu.Unlock()
		<-ob.done
		return nil
	}
	ob.closed.Store(true)
	ob.mu.Unlock()
	close(ob.stop)
	<-ob.done
	if ob.ownsDB {
		if err := ob.db.Close(); err != nil {
			return fmt.Errorf("outbox: close: %w", err)
		}
	}
	return nil
}
