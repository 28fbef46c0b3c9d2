package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Kind says what an entry records.
type Kind string

// The kinds of entries.
const (
	KindGate       Kind = "gate_decision"      // an L3 admission decision
	KindTransition Kind = "transition"         // an L2 state transition
	KindToolCall   Kind = "tool_call"          // a tool call through the interlock
	KindInterlock  Kind = "interlock_decision" // a refusal, halt, trip, reset or arming
	KindApproval   Kind = "approval"           // a human approval, denial or pause by an operator
	KindDataAccess Kind = "data_access"        // an access to a T2+ session's data
	KindOwnership  Kind = "ownership"          // a change of a session's owner, or a refused hand-off or control
	KindDiscovery  Kind = "discovery"          // a refused capabilities_request (no session)
	KindControl    Kind = "control"            // a control socket action or refusal, with the OS user the kernel reported
	KindRecipe     Kind = "recipe"             // the recipe a new session runs: name, version, sha256
	KindModel      Kind = "model"              // the model router: an invocation, a refusal, a fallback, a circuit change
	KindRetention  Kind = "retention"          // a closed session's data removed by retention (session/retention)
	KindAnalysis   Kind = "analysis"           // a finding a session's analysis warned of: a material other than the recipe's
	// KindAlert: an alert to people delivered to a receiver, or an attempt
	// that failed (transport/alert; docs/ALERTS.md).
	KindAlert Kind = "alert"
)

// Valid reports whether k is one of the package's kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindGate, KindTransition, KindToolCall, KindInterlock, KindApproval, KindDataAccess, KindOwnership, KindDiscovery, KindControl, KindRecipe, KindModel, KindRetention, KindAnalysis:
		return true
	case KindAlert:
		return true
	}
	return false
}

// Entry is one audit record. Seq, Prev and Hash are assigned by Append.
type Entry struct {
	Seq       uint64
	At        time.Time
	SessionID string
	Kind      Kind
	Detail    string
	Prev      [32]byte
	Hash      [32]byte
}

// Bucket names in the bbolt file.
var (
	bucketEntries  = []byte("audit")
	bucketSessions = []byte("audit_sessions")
	bucketMeta     = []byte("audit_meta")
	keyHead        = []byte("head")
)

// BucketNames returns the names of the audit log's buckets (entries,
// per-session index, head), for those who measure the file.
func BucketNames() [][]byte { return [][]byte{bucketEntries, bucketSessions, bucketMeta, bucketTime} }

const domain = "hcp-edge/audit/v1\n"

// Sum returns the SHA-256 of e's canonical encoding (every field but Hash).
func Sum(e Entry) [32]byte {
	h := sha256.New()
	var b [8]byte
	h.Write([]byte(domain))
	binary.BigEndian.PutUint64(b[:], e.Seq)
	h.Write(b[:])
	binary.BigEndian.PutUint64(b[:], uint64(e.At.UnixNano()))
	h.Write(b[:])
	for _, s := range []string{e.SessionID, string(e.Kind), e.Detail} {
		binary.BigEndian.PutUint32(b[:4], uint32(len(s)))
		h.Write(b[:4])
		h.Write([]byte(s))
	}
	h.Write(e.Prev[:])
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

func toRecord(e Entry) record {
	return record{Seq: e.Seq, At: e.At.UnixNano(), Session: e.SessionID, Kind: string(e.Kind),
		Detail: e.Detail, Prev: e.Prev, Hash: e.Hash}
}

func fromRecord(r record) Entry {
	return Entry{Seq: r.Seq, At: time.Unix(0, r.At).UTC(), SessionID: r.Session, Kind: Kind(r.Kind),
		Detail: r.Detail, Prev: r.Prev, Hash: r.Hash}
}

// Init creates the audit buckets in tx if they do not exist.
func Init(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketEntries, bucketSessions, bucketMeta} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("audit: create bucket %s: %w", name, err)
		}
	}
	return backfillTime(tx) // query.go
}

func buckets(tx *bolt.Tx) (entries, sessions, meta *bolt.Bucket, err error) {
	entries, sessions, meta = tx.Bucket(bucketEntries), tx.Bucket(bucketSessions), tx.Bucket(bucketMeta)
	if entries == nil || sessions == nil || meta == nil {
		return nil, nil, nil, fmt.Errorf("audit: %w", ErrNotOpen)
	}
	return entries, sessions, meta, nil
}

func readHead(meta *bolt.Bucket) (head, error) {
	var h head
	v := meta.Get(keyHead)
	if v == nil {
		return h, nil
	}
	if _, err := h.UnmarshalMsg(v); err != nil {
		return h, &ChainError{Reason: "head undecodable: " + err.Error()}
	}
	return h, nil
}

// AppendTx appends e inside tx, a read-write transaction of the file the
// buckets were initialised in, and returns it with Seq, Prev and Hash set.
// At is kept at nanosecond precision in UTC; a zero At is refused.
// The entry is durable when tx commits.
func AppendTx(tx *bolt.Tx, e Entry) (Entry, error) {
	if !e.Kind.Valid() {
		return Entry{}, fmt.Errorf("audit: append %q: %w", e.Kind, ErrKind)
	}
	if e.At.IsZero() {
		return Entry{}, fmt.Errorf("audit: append %s: zero time", e.Kind)
	}
	entries, sessions, meta, err := buckets(tx)
	if err != nil {
		return Entry{}, err
	}
	h, err := readHead(meta)
	if err != nil {
		return Entry{}, err
	}
	e.Seq, e.Prev, e.At = h.Seq+1, h.Hash, e.At.UTC()
	e.Hash = Sum(e)
	r := toRecord(e)
	v, err := r.MarshalMsg(nil)
	if err != nil {
		return Entry{}, fmt.Errorf("audit: encode entry %d: %w", e.Seq, err)
	}
	if err := entries.Put(seqKey(e.Seq), v); err != nil {
		return Entry{}, fmt.Errorf("audit: put entry %d: %w", e.Seq, err)
	}
	if e.SessionID != "" {
		sb, err := sessions.CreateBucketIfNotExists([]byte(e.SessionID))
		if err != nil {
			return Entry{}, fmt.Errorf("audit: session index %q: %w", e.SessionID, err)
		}
		if err := sb.Put(seqKey(e.Seq), nil); err != nil {
			return Entry{}, fmt.Errorf("audit: session index %q: %w", e.SessionID, err)
		}
	}
	hv, err := (&head{Seq: e.Seq, Hash: e.Hash}).MarshalMsg(nil)
	if err != nil {
		return Entry{}, fmt.Errorf("audit: encode head: %w", err)
	}
	if err := meta.Put(keyHead, hv); err != nil {
		return Entry{}, fmt.Errorf("audit: put head: %w", err)
	}
	if err := indexTime(tx, meta, e); err != nil { // query.go
		return Entry{}, err
	}
	return e, nil
}

// Opts tunes a Log.
type Opts struct {
	Clock func() time.Time // stamps entries whose At is zero; time.Now if nil
}

// Log is the audit log in a bbolt file it does not own: Close the DB, not
// the Log. Its methods are safe for concurrent use.
type Log struct {
	db    *bolt.DB
	clock func() time.Time
}

// Open creates the audit buckets in db if needed (unless db is read-only)
// and returns the Log.
func Open(db *bolt.DB, opts Opts) (*Log, error) {
	if db == nil {
		return nil, fmt.Errorf("audit: Open needs a database")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if db.IsReadOnly() {
		return &Log{db: db, clock: opts.Clock}, nil
	}
	if err := db.Update(Init); err != nil {
		return nil, err
	}
	return &Log{db: db, clock: opts.Clock}, nil
}

// Append appends e in its own transaction (one fsync'ed commit) and returns
// it as stored. A zero At is stamped with the Log's clock.
func (l *Log) Append(ctx context.Context, e Entry) (Entry, error) {
	if err := ctx.Err(); err != nil {
		return Entry{}, fmt.Errorf("audit: append: %w", err)
	}
	if e.At.IsZero() {
		e.At = l.clock()
	}
	var out Entry
	err := l.db.Update(func(tx *bolt.Tx) error {
		var err error
		out, err = AppendTx(tx, e)
		return err
	})
	return out, err
}

// Head returns the sequence number and hash of the newest entry (0 and
// zeros when the log is empty).
func (l *Log) Head() (uint64, [32]byte, error) {
	var h head
	err := l.db.View(func(tx *bolt.Tx) error {
		_, _, meta, err := buckets(tx)
		if err != nil {
			return err
		}
		h, err = readHead(meta)
		return err
	})
	return h.Seq, h.Hash, err
}

// Tail returns the newest n entries (fewer when the log is shorter), oldest
// first, in one read transaction. It reads n entries, however long the log.
func (l *Log) Tail(ctx context.Context, n int) ([]Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("audit: tail: %w", err)
	}
	var out []Entry
	err := l.db.View(func(tx *bolt.Tx) error {
		entries, _, _, err := buckets(tx)
		if err != nil {
			return err
		}
		c := entries.Cursor()
		for k, v := c.Last(); k != nil && len(out) < n; k, v = c.Prev() {
			e, err := decode(k, v)
			if err != nil {
				return &ChainError{Reason: fmt.Sprintf("entry under key %x: %v", k, err)}
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

func decode(k, v []byte) (Entry, error) {
	var r record
	if left, err := r.UnmarshalMsg(v); err != nil || len(left) != 0 {
		return Entry{}, fmt.Errorf("undecodable (%v, %d bytes left)", err, len(left))
	}
	if len(k) != 8 || binary.BigEndian.Uint64(k) != r.Seq {
		return Entry{}, fmt.Errorf("stored under key %x", k)
	}
	return fromRecord(r), nil
}

// VerifyTx walks the chain in tx; see Log.Verify.
func VerifyTx(ctx context.Context, tx *bolt.Tx) (uint64, error) {
	entries, _, meta, err := buckets(tx)
	if err != nil {
		return 0, err
	}
	anchor, err := readAnchor(meta) // archive.go: the chain in the file starts after it
	if err != nil {
		return 0, err
	}
	prev, n := anchor.Hash, anchor.Seq
	c := entries.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return n, fmt.Errorf("audit: verify: %w", err)
			}
		}
		want := n + 1
		e, err := decode(k, v)
		if err != nil {
			return n, &ChainError{Seq: want, Reason: err.Error()}
		}
		switch {
		case e.Seq != want:
			return n, &ChainError{Seq: want, Reason: fmt.Sprintf("found entry %d: missing or reordered", e.Seq)}
		case e.Prev != prev:
			return n, &ChainError{Seq: e.Seq, Reason: "previous hash does not match the entry before"}
		case Sum(e) != e.Hash:
			return n, &ChainError{Seq: e.Seq, Reason: "content does not match its hash"}
		}
		prev, n = e.Hash, e.Seq
	}
	h, err := readHead(meta)
	if err != nil {
		return n, err
	}
	if h.Seq != n || h.Hash != prev {
		return n, &ChainError{Seq: min(h.Seq, n) + 1, Reason: fmt.Sprintf("head names entry %d, the chain ends at %d (truncated or altered)", h.Seq, n)}
	}
	return n, nil
}

// Verify walks the whole chain from the first entry and returns how many
// entries it checked; the first broken link is a *ChainError: an entry
// that does not decode, a sequence gap, a previous hash that does not
// match, content that does not match its hash, or a head that does not
// name the last entry.
func (l *Log) Verify(ctx context.Context) (uint64, error) {
	var n uint64
	err := l.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = VerifyTx(ctx, tx)
		return err
	})
	return n, err
}

// ReplayTx returns sessionID's entries in tx; see Log.Replay.
func ReplayTx(tx *bolt.Tx, sessionID string) ([]Entry, error) {
	entries, sessions, meta, err := buckets(tx)
	if err != nil {
		return nil, err
	}
	anchor, err := readAnchor(meta)
	if err != nil {
		return nil, err
	}
	sb := sessions.Bucket([]byte(sessionID))
	if sb == nil {
		return nil, nil
	}
	var out []Entry
	err = sb.ForEach(func(k, _ []byte) error {
		if len(k) != 8 {
			return &ChainError{Reason: fmt.Sprintf("session index key %x", k)}
		}
		seq := binary.BigEndian.Uint64(k)
		v := entries.Get(k)
		if v == nil {
			return &ChainError{Seq: seq, Reason: "indexed entry missing"}
		}
		e, err := decode(k, v)
		if err != nil {
			return &ChainError{Seq: seq, Reason: err.Error()}
		}
		if Sum(e) != e.Hash {
			return &ChainError{Seq: seq, Reason: "content does not match its hash"}
		}
		linked := e.Prev == [32]byte{}
		switch {
		case seq > 1 && seq-1 == anchor.Seq: // the entry before it is archived: the anchor holds its hash
			linked = e.Prev == anchor.Hash
		case seq > 1:
			prev := entries.Get(seqKey(seq - 1))
			linked = prev != nil && prevMatches(prev, e.Prev)
		}
		if !linked {
			return &ChainError{Seq: seq, Reason: "previous hash does not match the entry before"}
		}
		if e.SessionID != sessionID {
			return &ChainError{Seq: seq, Reason: fmt.Sprintf("indexed under %q, belongs to %q", sessionID, e.SessionID)}
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

func prevMatches(v []byte, want [32]byte) bool {
	var r record
	if _, err := r.UnmarshalMsg(v); err != nil {
		return false
	}
	return bytes.Equal(r.Hash[:], want[:])
}

// Replay returns sessionID's entries in sequence order, each checked
// against its own hash and its link to the entry before it; a mismatch is a
// *ChainError. An unknown session yields no entries and no error.
func (l *Log) Replay(ctx context.Context, sessionID string) ([]Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("audit: replay: %w", err)
	}
	var out []Entry
	err := l.db.View(func(tx *bolt.Tx) error {
		var err error
		out, err = ReplayTx(tx, sessionID)
		return err
	})
	return out, err
}
