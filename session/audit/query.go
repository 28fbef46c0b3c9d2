package audit

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The time index: "audit_time" holds one key per entry, its time (unix
// nanoseconds, sign bit flipped so that the byte order is the time order)
// then its sequence number, with no value; "audit_meta"/"time_head" is the
// newest sequence number indexed. Entries are keyed by sequence number,
// and a Pi's clock may step back, so their times are not in key order: the
// index is what lets Query answer a window without reading the chain.
var (
	bucketTime  = []byte("audit_time")
	keyTimeHead = []byte("time_head")
)

func timeKey(at time.Time, seq uint64) []byte {
	var k [16]byte
	binary.BigEndian.PutUint64(k[:8], uint64(at.UnixNano())^(1<<63))
	binary.BigEndian.PutUint64(k[8:], seq)
	return k[:]
}

func timeOfKey(k []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(k[:8])^(1<<63))).UTC()
}

func readTimeHead(meta *bolt.Bucket) uint64 {
	if v := meta.Get(keyTimeHead); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// indexTime adds e to the time index when the index holds every entry
// before it (an entry appended by a version without the index leaves a
// gap that Init fills; until then Query reads the chain).
func indexTime(tx *bolt.Tx, meta *bolt.Bucket, e Entry) error {
	tb := tx.Bucket(bucketTime)
	if tb == nil || readTimeHead(meta) != e.Seq-1 {
		return nil
	}
	if err := tb.Put(timeKey(e.At, e.Seq), nil); err != nil {
		return fmt.Errorf("audit: time index %d: %w", e.Seq, err)
	}
	return meta.Put(keyTimeHead, seqKey(e.Seq))
}

// backfillTime indexes the entries after the index's head (all of them in
// a file written before the index existed).
func backfillTime(tx *bolt.Tx) error {
	entries, meta := tx.Bucket(bucketEntries), tx.Bucket(bucketMeta)
	tb, err := tx.CreateBucketIfNotExists(bucketTime)
	if err != nil {
		return fmt.Errorf("audit: create bucket %s: %w", bucketTime, err)
	}
	anchor, err := readAnchor(meta)
	if err != nil {
		return err
	}
	from := max(readTimeHead(meta), anchor.Seq) // archived entries are not in the file
	last := from
	c := entries.Cursor()
	for k, v := c.Seek(seqKey(from + 1)); k != nil; k, v = c.Next() {
		e, err := decode(k, v)
		if err != nil || e.Seq != last+1 {
			break // a damaged chain: Verify names it; the index stops before it
		}
		if err := tb.Put(timeKey(e.At, e.Seq), nil); err != nil {
			return fmt.Errorf("audit: time index %d: %w", e.Seq, err)
		}
		last = e.Seq
	}
	if last == from {
		return nil
	}
	return meta.Put(keyTimeHead, seqKey(last))
}

// Query selects audit entries. Zero fields select everything.
type Query struct {
	Since     time.Time // entries at or after Since
	Until     time.Time // entries before Until
	Kinds     []Kind    // any of these kinds
	SessionID string    // entries of this session only
	After     uint64    // entries with a sequence number above After (a follower's position)
	Limit     int       // at most this many, the newest (0: no limit)
}

func (q Query) match(e Entry) bool {
	switch {
	case e.Seq <= q.After:
	case !q.Since.IsZero() && e.At.Before(q.Since):
	case !q.Until.IsZero() && !e.At.Before(q.Until):
	case len(q.Kinds) > 0 && !slices.Contains(q.Kinds, e.Kind):
	case q.SessionID != "" && e.SessionID != q.SessionID:
	default:
		return true
	}
	return false
}

// QueryTx returns the entries q selects in tx, in chain order (oldest
// first), each checked against its own hash; see Log.Query.
func QueryTx(tx *bolt.Tx, q Query) ([]Entry, error) {
	entries, sessions, meta, err := buckets(tx)
	if err != nil {
		return nil, err
	}
	h, err := readHead(meta)
	if err != nil {
		return nil, err
	}
	var seqs []uint64 // candidates, when an index narrows them
	indexed := false
	switch {
	case q.SessionID != "":
		indexed = true
		if sb := sessions.Bucket([]byte(q.SessionID)); sb != nil {
			c := sb.Cursor()
			for k, _ := c.Seek(seqKey(q.After + 1)); k != nil; k, _ = c.Next() {
				if len(k) == 8 {
					seqs = append(seqs, binary.BigEndian.Uint64(k))
				}
			}
		}
	case !q.Since.IsZero() && tx.Bucket(bucketTime) != nil && readTimeHead(meta) == h.Seq:
		indexed = true
		c := tx.Bucket(bucketTime).Cursor()
		for k, _ := c.Seek(timeKey(q.Since, 0)); len(k) == 16; k, _ = c.Next() {
			if !q.Until.IsZero() && !timeOfKey(k).Before(q.Until) {
				break
			}
			if s := binary.BigEndian.Uint64(k[8:]); s > q.After {
				seqs = append(seqs, s)
			}
		}
		sort.Sort(seqOrder(seqs)) // not slices.Sort: no uint64 instantiation of the generic sort (docs/FOOTPRINT.md, ninth round)
	}
	var out []Entry
	add := func(k, v []byte) error {
		e, err := decode(k, v)
		if err != nil {
			var seq uint64
			if len(k) == 8 {
				seq = binary.BigEndian.Uint64(k)
			}
			return &ChainError{Seq: seq, Reason: err.Error()}
		}
		if Sum(e) != e.Hash {
			return &ChainError{Seq: e.Seq, Reason: "content does not match its hash"}
		}
		if q.match(e) {
			out = append(out, e)
		}
		return nil
	}
	if indexed {
		if len(seqs) > 0 {
			out = make([]Entry, 0, len(seqs)) // a week's window is some 10⁵ entries: grown, it is copied a dozen times
		}
		c := entries.Cursor() // the candidates are sorted: mostly the next key, a Seek only past a gap
		var k, v []byte
		for _, s := range seqs {
			want := seqKey(s)
			if k != nil {
				k, v = c.Next()
			}
			if k == nil || !bytes.Equal(k, want) {
				k, v = c.Seek(want)
			}
			if k == nil || !bytes.Equal(k, want) || v == nil {
				return nil, &ChainError{Seq: s, Reason: "indexed entry missing"}
			}
			if err := add(k, v); err != nil {
				return nil, err
			}
		}
	} else {
		c := entries.Cursor()
		for k, v := c.Seek(seqKey(q.After + 1)); k != nil; k, v = c.Next() {
			if err := add(k, v); err != nil {
				return nil, err
			}
		}
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[len(out)-q.Limit:]
	}
	return out, nil
}

// Query returns the entries q selects, oldest first (chain order), each
// checked against its own hash (a mismatch is a *ChainError; Verify checks
// the links). A window with Since is read through the time index, not the
// whole chain: its cost is that of the entries in the window, however long
// the log. An entry stamped before a clock step back is found by its own
// time, not its position.
func (l *Log) Query(ctx context.Context, q Query) ([]Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("audit: query: %w", err)
	}
	var out []Entry
	err := l.db.View(func(tx *bolt.Tx) error {
		var err error
		out, err = QueryTx(tx, q)
		return err
	})
	return out, err
}

// seqOrder sorts sequence numbers with sort.Sort.
type seqOrder []uint64

func (s seqOrder) Len() int           { return len(s) }
func (s seqOrder) Less(i, j int) bool { return s[i] < s[j] }
func (s seqOrder) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }
