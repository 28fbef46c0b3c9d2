package outbox

import (
	"fmt"
	"slices"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// AppendTx stores messages inside tx, a writable transaction of the outbox's
// db that the caller commits: the agent's state file commits a session's
// events, its checkpoint or its final message together with their outbox
// entries, and the command inbox its replies with its de-duplication entry.
// The keys are valid once tx commits; the backlog counters and Notify follow
// on commit (a rolled-back tx leaves no trace). Telemetry messages count
// against Opts.TelemetryBound as with Append: past it the oldest waiting
// Telemetry message is dropped and counted in the same transaction.
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
	if len(ms) == 0 {
		return nil, nil
	}
	as := make([]*appendReq, 0, len(ms))
	for _, m := range ms {
		if m.Class != Protocol && m.Class != Telemetry {
			return nil, fmt.Errorf("%w: class %d", ErrInvalid, m.Class)
		}
		if m.Exchange == "" || m.MessageID == "" || len(m.Body) == 0 {
			return nil, fmt.Errorf("%w: exchange, message id and body are required", ErrInvalid)
		}
		if m.CreatedUnixNano == 0 {
			m.CreatedUnixNano = ob.opts.Now().UnixNano()
		}
		if err := ob.seal(tx, &m); err != nil {
			return nil, err
		}
		rec, err := m.MarshalMsg(nil)
		if err != nil {
			return nil, fmt.Errorf("outbox: encode: %w", err)
		}
		as = append(as, &appendReq{class: m.Class, rec: rec})
	}
	// Deletions waiting from DeleteLater ride along with this transaction as
	// they would with an Append's commit: the agent appends only here, so
	// without this every burst of confirms would cost a commit of its own.
	// They stay queued until tx commits (a rolled-back tx leaves them to the
	// committer); deleting a key twice is harmless.
	del := ob.rideTx(tx)
	res, err := ob.write(tx, as, del)
	if err != nil {
		return nil, fmt.Errorf("outbox: append: %w", err)
	}
	// Commit handlers run after bbolt has released its writer lock, and
	// nothing holds ob.mu while waiting for that lock (the committer takes
	// ob.mu only between its transactions): taking it here, and in rideTx,
	// cannot deadlock.
	tx.OnCommit(func() {
		ob.finish(res)
		if len(del) > 0 {
			ob.rode(del)
		}
	})
	return res.keys, nil
}

// DB returns the bbolt database the outbox lives in, so a caller can open a
// transaction for AppendTx.
func (ob *Outbox) DB() *bolt.DB { return ob.db }

// rideTx notes an append (for DeleteDelay's idle rule) and returns a copy of
// the DeleteLater keys that ride along with tx's commit now (see take),
// sorted; nil when none should, or when they already ride with tx.
func (ob *Outbox) rideTx(tx *bolt.Tx) []uint64 {
	ob.mu.Lock()
	defer ob.mu.Unlock()
	now := time.Now()
	ob.lastAppend = now
	if ob.riding == tx || len(ob.later) == 0 || len(ob.later) < rideCount && now.Sub(ob.laterSince) < ob.opts.DeleteDelay {
		return nil
	}
	ob.riding = tx
	del := slices.Clone(ob.later)
	sort.Sort(keyOrder(del))
	return slices.Compact(del)
}

// rode takes the keys a committed AppendTx deleted off the DeleteLater queue
// (the committer may have taken some meanwhile: those are gone already).
func (ob *Outbox) rode(del []uint64) {
	ob.mu.Lock()
	ob.riding = nil
	ob.later = slices.DeleteFunc(ob.later, func(k uint64) bool { _, found := slices.BinarySearch(del, k); return found })
	if len(ob.later) == 0 {
		ob.later = nil
	}
	ob.mu.Unlock()
	ob.forgetLater(del)
}
