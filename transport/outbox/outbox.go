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
	// Now stamps Message.CreatedUnixNano when it is zero (default time.Now).
	Now func() time.Time
}

// DefaultOpts returns the default options.
func DefaultOpts() Opts {
	return Opts{Bucket: "outbox", TelemetryBound: 10000, OpenTimeout: time.Second, Now: time.Now}
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
	Dropped   uint64 // Telemetry messages dropped since the last TakeDropped
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
	// transaction, and taking mu there would invert the lock order of Append
	// and Delete (mu, then bbolt's writer lock) and deadlock.
	closed atomic.Bool

	mu        sync.Mutex // serialises this outbox's own writers and guards the fields below
	depth     int
	telemetry int
}

var (
	bucketMsgs      = []byte("msgs")
	bucketTelemetry = []byte("telemetry")
	bucketMeta      = []byte("meta")
	keyDropped      = []byte("dropped")
)

// Open opens (creating if needed) a bbolt file at path holding only this
// outbox; Close closes the file.
func Open(path string, opts Opts) (*Outbox, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.OpenTimeout})
	if err != nil {
		return nil, fmt.Errorf("outbox: open %s: %w", path, err)
	}
	ob, err := New(db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	ob.ownsDB = true
	return ob, nil
}

// New keeps the outbox in opts.Bucket of an already open db (the agent's state
// file). Close does not close db. The caller must have opened db with
// Options.Timeout set.
func New(db *bolt.DB, opts Opts) (*Outbox, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	ob := &Outbox{db: db, opts: opts, name: []byte(opts.Bucket), notify: make(chan struct{}, 1)}
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
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: init bucket %q: %w", opts.Bucket, err)
	}
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

// Append stores m durably (one bbolt transaction, fsynced) and returns its key.
// A Telemetry message past the bound drops the oldest waiting Telemetry
// message in the same transaction. Protocol messages are never dropped.
func (ob *Outbox) Append(m Message) (uint64, error) {
	if m.Class != Protocol && m.Class != Telemetry {
		return 0, fmt.Errorf("%w: class %d", ErrInvalid, m.Class)
	}
	if m.Exchange == "" || m.MessageID == "" || len(m.Body) == 0 {
		return 0, fmt.Errorf("%w: exchange, message id and body are required", ErrInvalid)
	}
	if m.CreatedUnixNano == 0 {
		m.CreatedUnixNano = ob.opts.Now().UnixNano()
	}
	rec, err := m.MarshalMsg(nil)
	if err != nil {
		return 0, fmt.Errorf("outbox: encode: %w", err)
	}
	ob.mu.Lock()
	defer ob.mu.Unlock()
	if ob.closed.Load() {
		return 0, ErrClosed
	}
	var key uint64
	dropped := 0
	err = ob.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(ob.name)
		msgs, tel := root.Bucket(bucketMsgs), root.Bucket(bucketTelemetry)
		seq, err := msgs.NextSequence()
		if err != nil {
			return err
		}
		key = seq
		k := itob(seq)
		if err := msgs.Put(k, rec); err != nil {
			return err
		}
		if m.Class != Telemetry {
			return nil
		}
		if err := tel.Put(k, nil); err != nil {
			return err
		}
		for n := ob.telemetry + 1 - dropped; n > ob.opts.TelemetryBound; n-- {
			c := tel.Cursor()
			old, _ := c.First()
			if old == nil {
				break
			}
			old = append([]byte(nil), old...)
			if err := msgs.Delete(old); err != nil {
				return err
			}
			if err := tel.Delete(old); err != nil {
				return err
			}
			dropped++
		}
		if dropped > 0 {
			meta := root.Bucket(bucketMeta)
			var total uint64
			if v := meta.Get(keyDropped); len(v) == 8 {
				total = binary.BigEndian.Uint64(v)
			}
			return meta.Put(keyDropped, itob(total+uint64(dropped)))
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("outbox: append: %w", err)
	}
	ob.depth += 1 - dropped
	if m.Class == Telemetry {
		ob.telemetry += 1 - dropped
	}
	select {
	case ob.notify <- struct{}{}:
	default:
	}
	return key, nil
}

// Notify returns a channel that receives a value (coalesced, buffer 1) after
// each successful Append, so a publisher can sleep until there is work.
func (ob *Outbox) Notify() <-chan struct{} { return ob.notify }

// Peek returns up to n of the oldest waiting messages, in key order.
func (ob *Outbox) Peek(n int) ([]Entry, error) { return ob.PeekAfter(0, n) }

// PeekAfter returns up to n waiting messages with keys greater than after, in
// key order: a pipelining publisher peeks past what it has in flight. The
// entries own their memory (nothing refers into bbolt's pages).
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
			var e Entry
			e.Key = key
			// UnmarshalMsg copies strings and Body into fresh memory.
			if _, err := e.Message.UnmarshalMsg(v); err != nil {
				return fmt.Errorf("%w: key %d: %v", ErrCorrupt, key, err)
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

// Delete removes confirmed messages in one transaction. Keys not (or no
// longer) present are ignored, so a repeated confirm is harmless.
func (ob *Outbox) Delete(keys ...uint64) error {
	if len(keys) == 0 {
		return nil
	}
	ob.mu.Lock()
	defer ob.mu.Unlock()
	if ob.closed.Load() {
		return ErrClosed
	}
	removed, removedTel := 0, 0
	err := ob.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(ob.name)
		msgs, tel := root.Bucket(bucketMsgs), root.Bucket(bucketTelemetry)
		for _, key := range keys {
			k := itob(key)
			if msgs.Get(k) == nil {
				continue
			}
			if err := msgs.Delete(k); err != nil {
				return err
			}
			removed++
			if tel.Get(k) != nil {
				if err := tel.Delete(k); err != nil {
					return err
				}
				removedTel++
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("outbox: delete: %w", err)
	}
	ob.depth -= removed
	ob.telemetry -= removedTel
	return nil
}

// Depth returns how many messages wait, and how many of them are Telemetry.
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
	closed := ob.closed.Load()
	ob.mu.Unlock()
	if closed {
		return Stats{}, ErrClosed
	}
	err := ob.db.View(func(tx *bolt.Tx) error {
		root := tx.Bucket(ob.name)
		if v := root.Bucket(bucketMeta).Get(keyDropped); len(v) == 8 {
			s.Dropped = binary.BigEndian.Uint64(v)
		}
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

// TakeDropped returns the number of Telemetry messages dropped since the last
// call and resets it, durably: the caller reports it in a warning event. If
// the warning is lost in a crash the count is lost with it; it is a warning,
// not a protocol message.
func (ob *Outbox) TakeDropped() (uint64, error) {
	ob.mu.Lock()
	defer ob.mu.Unlock()
	if ob.closed.Load() {
		return 0, ErrClosed
	}
	var n uint64
	err := ob.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(ob.name).Bucket(bucketMeta)
		if v := meta.Get(keyDropped); len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		if n == 0 {
			return nil
		}
		return meta.Delete(keyDropped)
	})
	if err != nil {
		return 0, fmt.Errorf("outbox: take dropped: %w", err)
	}
	return n, nil
}

func (ob *Outbox) isClosed() bool { return ob.closed.Load() }

// Close stops the outbox; with Open it also closes the file. Later calls
// return ErrClosed.
func (ob *Outbox) Close() error {
	ob.mu.Lock()
	defer ob.mu.Unlock()
	if ob.closed.Load() {
		return nil
	}
	ob.closed.Store(true)
	if ob.ownsDB {
		if err := ob.db.Close(); err != nil {
			return fmt.Errorf("outbox: close: %w", err)
		}
	}
	return nil
}
