package outbox

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// AppendTx stores Protocol messages inside tx, a writable transaction of the
// outbox's db that the caller commits: the command inbox appends its replies
// and records its de-duplication entry in one commit. The keys are valid once
// tx commits; the backlog counters and Notify follow on commit (a rolled-back
// tx leaves no trace). Telemetry messages are refused (ErrInvalid): their
// bound is enforced by Append only.
//
// AppendTx must not be called from inside another Outbox method, and tx must
// belong to the db the outbox was made with.
func (ob *Outbox) AppendTx(tx *bolt.Tx, ms ...Message) ([]uint64, error) {
	if ob.isClosed() {
		return nil, ErrClosed
	}
	if tx.DB() != ob.db || !tx.Writable() {
		return nil, fmt.Errorf("%w: AppendTx needs a writable transaction of the outbox's db", ErrInvalid)
	}
	root := tx.Bucket(ob.name)
	if root == nil {
		return nil, fmt.Errorf("%w: bucket %q missing", ErrCorrupt, ob.name)
	}
	msgs := root.Bucket(bucketMsgs)
	msgs.FillPercent = appendFill
	keys := make([]uint64, 0, len(ms))
	for _, m := range ms {
		if m.Class != Protocol {
			return nil, fmt.Errorf("%w: AppendTx takes Protocol messages only (class %d)", ErrInvalid, m.Class)
		}
		if m.Exchange == "" || m.MessageID == "" || len(m.Body) == 0 {
			return nil, fmt.Errorf("%w: exchange, message id and body are required", ErrInvalid)
		}
		if m.CreatedUnixNano == 0 {
			m.CreatedUnixNano = ob.opts.Now().UnixNano()
		}
		rec, err := m.MarshalMsg(nil)
		if err != nil {
			return nil, fmt.Errorf("outbox: encode: %w", err)
		}
		seq, err := msgs.NextSequence()
		if err != nil {
			return nil, fmt.Errorf("outbox: append: %w", err)
		}
		if err := msgs.Put(itob(seq), rec); err != nil {
			return nil, fmt.Errorf("outbox: append: %w", err)
		}
		keys = append(keys, seq)
	}
	if n := len(keys); n > 0 {
		// Commit handlers run after bbolt has released its writer lock, and
		// nothing holds ob.mu while waiting for that lock (the committer takes
		// ob.mu only between its transactions): taking it here cannot deadlock.
		tx.OnCommit(func() {
			ob.mu.Lock()
			ob.depth += n
			ob.mu.Unlock()
			ob.notifyAppended()
		})
	}
	return keys, nil
}

// DB returns the bbolt database the outbox lives in, so a caller can open a
// transaction for AppendTx.
func (ob *Outbox) DB() *bolt.DB { return ob.db }
