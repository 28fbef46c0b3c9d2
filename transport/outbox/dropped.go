package outbox

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Dropped Telemetry is counted durably in the "meta" bucket: "dropped" holds
// the total, and "dropped/" + session id (Message.CorrelationID, possibly
// empty) the count of each session, so each session can be told of its own
// losses in a warning event of its own.
var (
	keyDropped       = []byte("dropped")
	keyDroppedPrefix = []byte("dropped/")
)

func getCount(b *bolt.Bucket, k []byte) uint64 {
	if v := b.Get(k); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func droppedTotal(meta *bolt.Bucket) uint64 { return getCount(meta, keyDropped) }

// keyTelemetryN in "meta" holds how many Telemetry messages wait: the bound
// is kept against it inside each writing transaction (the committer's and
// AppendTx's callers' alike). Open rewrites it from the "telemetry" bucket.
var keyTelemetryN = []byte("telemetry_n")

func telemetryCount(meta *bolt.Bucket) int { return int(getCount(meta, keyTelemetryN)) }

func setTelemetryCount(meta *bolt.Bucket, n int) error {
	return meta.Put(keyTelemetryN, itob(uint64(max(n, 0))))
}

// addDropped adds drops (per session) to the counters, inside the
// transaction that dropped the messages.
func addDropped(meta *bolt.Bucket, drops map[string]uint64) error {
	var sum uint64
	for sid, n := range drops {
		k := append(bytes.Clone(keyDroppedPrefix), sid...)
		if err := meta.Put(k, itob(getCount(meta, k)+n)); err != nil {
			return err
		}
		sum += n
	}
	return meta.Put(keyDropped, itob(droppedTotal(meta)+sum))
}

// TakeDroppedBySession returns how many Telemetry messages of each session
// (Message.CorrelationID; "" for messages without one) were dropped since the
// last take, and resets the counts, durably: the session reports its own in a
// warning event. Sessions without drops are absent; the map is empty when
// nothing was dropped. Drops counted by an older version, which kept only a
// total, are reported under "". As with TakeDropped, a warning lost in a crash
// loses its count.
func (ob *Outbox) TakeDroppedBySession() (map[string]uint64, error) {
	if ob.isClosed() {
		return nil, ErrClosed
	}
	out := map[string]uint64{}
	var any bool
	if err := ob.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(ob.name).Bucket(bucketMeta)
		k, _ := meta.Cursor().Seek(keyDroppedPrefix)
		any = droppedTotal(meta) > 0 || (k != nil && bytes.HasPrefix(k, keyDroppedPrefix))
		return nil
	}); err != nil {
		return nil, fmt.Errorf("outbox: take dropped: %w", err)
	}
	if !any {
		return out, nil // no commit (and no fsync) for nothing
	}
	err := ob.db.Update(func(tx *bolt.Tx) error {
		clear(out) // Update runs this once, but keep it idempotent
		meta := tx.Bucket(ob.name).Bucket(bucketMeta)
		var keys [][]byte
		var sum uint64
		c := meta.Cursor()
		for k, v := c.Seek(keyDroppedPrefix); k != nil && bytes.HasPrefix(k, keyDroppedPrefix); k, v = c.Next() {
			if len(v) != 8 {
				return fmt.Errorf("%w: drop counter %q of %d bytes", ErrCorrupt, k, len(v))
			}
			n := binary.BigEndian.Uint64(v)
			out[string(k[len(keyDroppedPrefix):])] += n
			sum += n
			keys = append(keys, bytes.Clone(k))
		}
		if total := droppedTotal(meta); total > sum {
			out[""] += total - sum
		}
		for _, k := range keys { // not while iterating: bbolt's cursor would skip keys
			if err := meta.Delete(k); err != nil {
				return err
			}
		}
		return meta.Delete(keyDropped)
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: take dropped: %w", err)
	}
	for sid, n := range out {
		if n == 0 {
			delete(out, sid)
		}
	}
	return out, nil
}

// TakeDropped returns the number of Telemetry messages dropped since the last
// take, all sessions together, and resets the counts (TakeDroppedBySession's
// too), durably. If the warning is lost in a crash the count is lost with it;
// it is a warning, not a protocol message.
func (ob *Outbox) TakeDropped() (uint64, error) {
	by, err := ob.TakeDroppedBySession()
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range by {
		n += c
	}
	return n, nil
}
