package outbox

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/internal/diskspace"
)

// localRetry paces the retries of DeleteLater keys whose commit failed for a
// local write failure (no space).
const localRetry = time.Second

// The committer: one goroutine per Outbox, started by Open/New and stopped by
// Close, owns every write the outbox makes on its own (AppendTx writes in the
// caller's transaction). It takes everything waiting — Appends, Deletes and
// DeleteLater keys — and commits it in one bbolt transaction, so concurrent
// writers share one commit (group commit) and deletions of confirmed messages
// ride along with the next Append instead of taking bbolt's writer lock and
// two fdatasyncs of their own. Nothing is acknowledged before its commit.

// appendFill is the FillPercent of the "msgs" and "telemetry" buckets in every
// transaction that writes them: keys only ever grow, so a leaf that splits
// is left full rather than half full (bbolt's default) — fewer pages to
// write and to keep. It is not stored: each transaction sets it.
var appendFill = 1.0

// maxBatch bounds the Appends of one commit.
const maxBatch = 1024

// laterMax is how many DeleteLater keys may wait before they get a commit of
// their own without waiting for DeleteDelay.
const laterMax = 4096

// rideCount is how many DeleteLater keys make them ride along with the next
// commit before DeleteDelay has passed.
var rideCount = 64

// ownDelayFactor × DeleteDelay is how long DeleteLater keys wait at most for
// a commit to ride along with before they get one of their own; they wait
// only DeleteDelay when no Append came for DeleteDelay (the producers are
// idle: none is coming).
const ownDelayFactor = 4

type appendReq struct {
	class Class
	rec   []byte
	key   uint64
	err   error
	done  chan struct{} // closed when key or err is set
}

type deleteReq struct {
	keys []uint64
	err  error
	done chan struct{}
}

// batch is what the committer takes for one commit.
type batch struct {
	appends []*appendReq
	deletes []*deleteReq
	later   []uint64
}

// result is what one transaction changed.
type result struct {
	keys       []uint64 // per append
	added      int
	addedTel   int
	removed    int
	removedTel int
	dropped    int // Telemetry messages dropped for the bound
}

// Append stores m durably and returns its key: it returns after the bbolt
// transaction holding m has committed (fsynced); concurrent Appends, Deletes
// and DeleteLater keys share that commit. A Telemetry message past the bound
// drops the oldest waiting Telemetry message in the same transaction.
// Protocol messages are never dropped. Append is AppendAsync and Wait.
func (ob *Outbox) Append(m Message) (uint64, error) {
	p, err := ob.AppendAsync(m)
	if err != nil {
		return 0, err
	}
	return p.Wait()
}

// Pending is an Append in flight (AppendAsync). Its message is stored only
// once Wait has returned its key without error.
type Pending struct{ r *appendReq }

// Wait blocks until the transaction holding the message has committed
// (fsynced) or failed, and returns the message's key or the error. It may be
// called more than once, from any goroutine.
func (p *Pending) Wait() (uint64, error) {
	<-p.r.done
	if p.r.err != nil {
		return 0, fmt.Errorf("outbox: append: %w", p.r.err)
	}
	return p.r.key, nil
}

// Done is closed when Wait would no longer block.
func (p *Pending) Done() <-chan struct{} { return p.r.done }

// AppendAsync queues m for the committer and returns at once, after the
// checks Append makes. It lets one producer pipeline: several messages in
// flight share one commit, as concurrent Appends do. Nothing is stored
// until the Pending's Wait says so, and messages queued by one goroutine are
// committed in the order it queued them (keys increase in that order).
func (ob *Outbox) AppendAsync(m Message) (*Pending, error) {
	if m.Class != Protocol && m.Class != Telemetry {
		return nil, fmt.Errorf("%w: class %d", ErrInvalid, m.Class)
	}
	if m.Exchange == "" || m.MessageID == "" || len(m.Body) == 0 {
		return nil, fmt.Errorf("%w: exchange, message id and body are required", ErrInvalid)
	}
	if m.CreatedUnixNano == 0 {
		m.CreatedUnixNano = ob.opts.Now().UnixNano()
	}
	if err := ob.seal(nil, &m); err != nil {
		return nil, err
	}
	rec, err := m.MarshalMsg(nil)
	if err != nil {
		return nil, fmt.Errorf("outbox: encode: %w", err)
	}
	r := &appendReq{class: m.Class, rec: rec, done: make(chan struct{})}
	ob.mu.Lock()
	if ob.closed.Load() {
		ob.mu.Unlock()
		return nil, ErrClosed
	}
	ob.appends = append(ob.appends, r)
	ob.lastAppend = time.Now()
	ob.mu.Unlock()
	ob.signal()
	return &Pending{r: r}, nil
}

// Delete removes confirmed messages and returns once their removal has
// committed. Keys not (or no longer) present are ignored, so a repeated
// confirm is harmless.
func (ob *Outbox) Delete(keys ...uint64) error {
	if len(keys) == 0 {
		return nil
	}
	r := &deleteReq{keys: slices.Clone(keys), done: make(chan struct{})}
	ob.mu.Lock()
	if ob.closed.Load() {
		ob.mu.Unlock()
		return ErrClosed
	}
	ob.deletes = append(ob.deletes, r)
	ob.mu.Unlock()
	ob.signal()
	<-r.done
	if r.err != nil {
		return fmt.Errorf("outbox: delete: %w", r.err)
	}
	return nil
}

// DeleteLater removes confirmed messages in a later commit and returns at
// once: the keys ride along with a later Append's commit, or get one of their
// own (see Opts.DeleteDelay; also when many wait, and at Close). From now on
// PeekAfter skips them; Depth counts them until the deletion commits. A crash
// before that commit keeps them in the outbox and they are published again,
// which at-least-once delivery allows. The error is ErrClosed, or the failure
// of an earlier DeleteLater commit (reported once; its keys stay in the
// outbox).
func (ob *Outbox) DeleteLater(keys ...uint64) error {
	if len(keys) == 0 {
		return nil
	}
	ob.laterMu.Lock()
	for _, k := range keys {
		ob.laterSet[k] = struct{}{}
	}
	ob.laterN.Store(int64(len(ob.laterSet)))
	ob.laterMu.Unlock()
	ob.mu.Lock()
	if ob.closed.Load() {
		ob.mu.Unlock()
		ob.forgetLater(keys)
		return ErrClosed
	}
	first := len(ob.later) == 0
	if first {
		ob.laterSince = time.Now()
	}
	ob.later = append(ob.later, keys...)
	many := len(ob.later) >= laterMax
	err := ob.laterErr
	ob.laterErr = nil
	ob.mu.Unlock()
	if first || many {
		ob.signal() // the committer arms its DeleteDelay timer, or commits now
	}
	if err != nil {
		return fmt.Errorf("outbox: delete later: %w", err)
	}
	return nil
}

func (ob *Outbox) forgetLater(keys []uint64) {
	ob.laterMu.Lock()
	for _, k := range keys {
		delete(ob.laterSet, k)
	}
	ob.laterN.Store(int64(len(ob.laterSet)))
	ob.laterMu.Unlock()
}

func (ob *Outbox) signal() {
	select {
	case ob.wake <- struct{}{}:
	default:
	}
}

// run is the committer goroutine.
func (ob *Outbox) run() {
	defer close(ob.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	for {
		force, stopping := false, false
		select {
		case <-ob.wake:
		case <-timer.C:
			armed = false
		case <-ob.stop:
			force, stopping = true, true
		}
		for {
			b, ok := ob.take(force)
			if !ok {
				break
			}
			ob.commit(b)
			// Let the writers just answered run before taking the next batch:
			// a producer appending again joins the next commit instead of
			// following it alone.
			runtime.Gosched()
		}
		if stopping {
			return // closed: nothing can be queued any more
		}
		ob.mu.Lock()
		waiting, at := len(ob.later) > 0, ob.ownCommitAt()
		ob.mu.Unlock()
		if waiting && !armed {
			timer.Reset(time.Until(at)) // if it fires early, take waits and it is re-armed
			armed = true
		}
	}
}

// ownCommitAt is when the waiting DeleteLater keys get a commit of their own
// (see ownDelayFactor). Call with mu held.
func (ob *Outbox) ownCommitAt() time.Time {
	d := ob.opts.DeleteDelay
	latest := ob.laterSince.Add(ownDelayFactor * d)
	idle := ob.laterSince.Add(d)
	if a := ob.lastAppend.Add(d); a.After(idle) {
		idle = a
	}
	if idle.Before(latest) {
		return idle
	}
	return latest
}

// take removes the next batch from the queues. DeleteLater keys ride along
// with a commit there is to make anyway once rideCount of them wait or the
// oldest has waited DeleteDelay (so a commit deletes a run of neighbouring
// keys, which touches few pages, rather than one key far from the appended
// end each time); they get a commit of their own at ownCommitAt, when
// laterMax wait, or when force (the outbox is closing).
func (ob *Outbox) take(force bool) (*batch, bool) {
	ob.mu.Lock()
	defer ob.mu.Unlock()
	now := time.Now()
	ride := len(ob.later) >= rideCount || now.Sub(ob.laterSince) >= ob.opts.DeleteDelay
	own := len(ob.later) >= laterMax || !now.Before(ob.ownCommitAt())
	b := &batch{}
	if n := len(ob.appends); n <= maxBatch {
		b.appends, ob.appends = ob.appends, nil
	} else {
		b.appends = slices.Clone(ob.appends[:maxBatch])
		ob.appends = slices.Clone(ob.appends[maxBatch:])
	}
	b.deletes, ob.deletes = ob.deletes, nil
	if (len(b.appends) > 0 || len(b.deletes) > 0) && ride || own || force {
		b.later, ob.later = ob.later, nil
	}
	if len(b.appends) == 0 && len(b.deletes) == 0 && len(b.later) == 0 {
		return nil, false
	}
	return b, true
}

// commit applies b in one transaction. If that fails and b holds more than
// one write, the deletions and then each Append are retried alone, so one bad
// message fails only its own Append.
func (ob *Outbox) commit(b *batch) {
	del := b.deleteKeys()
	res, err := ob.apply(b.appends, del)
	if err == nil {
		ob.finish(res)
		ob.reply(b.appends, res.keys, b.deletes, b.later, nil, nil)
		return
	}
	if len(b.appends)+min(len(del), 1) <= 1 {
		ob.reply(b.appends, nil, b.deletes, b.later, err, err)
		return
	}
	var delErr error
	if len(del) > 0 {
		r, derr := ob.apply(nil, del)
		if derr == nil {
			ob.finish(r)
		}
		delErr = derr
	}
	keys := make([]uint64, len(b.appends))
	for i, a := range b.appends {
		r, aerr := ob.apply([]*appendReq{a}, nil)
		if aerr != nil {
			a.err = aerr
			continue
		}
		ob.finish(r)
		keys[i] = r.keys[0]
	}
	ob.reply(b.appends, keys, b.deletes, b.later, nil, delErr)
}

// deleteKeys returns the keys of b's Deletes and DeleteLater, sorted and
// without duplicates.
func (b *batch) deleteKeys() []uint64 {
	var ks []uint64
	for _, d := range b.deletes {
		ks = append(ks, d.keys...)
	}
	ks = append(ks, b.later...)
	sort.Sort(keyOrder(ks))
	return slices.Compact(ks)
}

// keyOrder sorts record keys with sort.Sort: no uint64 instantiation of
// the generic sort in the binary (~8 kB of the armv7 file,
// docs/FOOTPRINT.md, ninth round); a batch's keys are few.
type keyOrder []uint64

func (k keyOrder) Len() int           { return len(k) }
func (k keyOrder) Less(i, j int) bool { return k[i] < k[j] }
func (k keyOrder) Swap(i, j int)      { k[i], k[j] = k[j], k[i] }

// finish updates the counters after a commit and wakes the publisher.
func (ob *Outbox) finish(r result) {
	if r.added == 0 && r.removed == 0 && r.dropped == 0 {
		return
	}
	ob.mu.Lock()
	ob.depth += r.added - r.removed - r.dropped
	ob.telemetry += r.addedTel - r.removedTel - r.dropped
	ob.mu.Unlock()
	if r.added > 0 {
		ob.notifyAppended()
	}
}

// reply hands the outcome to the waiting callers. keys are the appends' keys
// (nil with appendErr); an append with its own err keeps it.
func (ob *Outbox) reply(as []*appendReq, keys []uint64, ds []*deleteReq, later []uint64, appendErr, delErr error) {
	for i, a := range as {
		switch {
		case appendErr != nil:
			a.err = appendErr
		case a.err == nil:
			a.key = keys[i]
		}
		close(a.done)
	}
	for _, d := range ds {
		d.err = delErr
		close(d.done)
	}
	if len(later) > 0 {
		if delErr != nil && diskspace.LocalWriteError(delErr) {
			// No space (or an I/O error) here: the keys stay skipped by
			// PeekAfter and wait for a later commit, which deletes them once
			// the disk takes writes again; republishing them all meanwhile
			// would only flood the callers with duplicates.
			// laterSince in the future: the next try waits localRetry.
			ob.mu.Lock()
			ob.laterSince = time.Now().Add(localRetry)
			ob.later = append(ob.later, later...)
			ob.laterErr = errors.Join(ob.laterErr, delErr)
			ob.mu.Unlock()
			return
		}
		ob.forgetLater(later)
		if delErr != nil {
			ob.mu.Lock()
			ob.laterErr = errors.Join(ob.laterErr, delErr)
			ob.mu.Unlock()
		}
	}
}

// apply runs one transaction: the deletions first (so a confirmed Telemetry
// message is never dropped and counted), then the appends in order.
func (ob *Outbox) apply(as []*appendReq, del []uint64) (result, error) {
	var res result
	err := ob.db.Update(func(tx *bolt.Tx) error {
		var err error
		res, err = ob.write(tx, as, del)
		return err
	})
	return res, err
}

// write deletes del and appends as, in order, inside tx (the committer's own
// transaction, or a caller's for AppendTx). The Telemetry bound is kept
// against the count stored in the transaction itself ("meta"/"telemetry_n"),
// so writers in different transactions never see a stale count.
func (ob *Outbox) write(tx *bolt.Tx, as []*appendReq, del []uint64) (result, error) {
	res := result{}
	root := tx.Bucket(ob.name)
	if root == nil {
		return res, fmt.Errorf("%w: bucket %q missing", ErrCorrupt, ob.name)
	}
	msgs, telb, meta := root.Bucket(bucketMsgs), root.Bucket(bucketTelemetry), root.Bucket(bucketMeta)
	msgs.FillPercent, telb.FillPercent = appendFill, appendFill
	for _, key := range del {
		k := itob(key)
		if msgs.Get(k) == nil {
			continue
		}
		if err := msgs.Delete(k); err != nil {
			return res, err
		}
		res.removed++
		if telb.Get(k) != nil {
			if err := telb.Delete(k); err != nil {
				return res, err
			}
			res.removedTel++
		}
	}
	tel0 := telemetryCount(meta)
	n := tel0 - res.removedTel
	var drops map[string]uint64
	res.keys = make([]uint64, 0, len(as))
	for _, a := range as {
		seq, err := msgs.NextSequence()
		if err != nil {
			return res, err
		}
		k := itob(seq)
		if err := msgs.Put(k, a.rec); err != nil {
			return res, err
		}
		res.keys = append(res.keys, seq)
		res.added++
		if a.class != Telemetry {
			continue
		}
		if err := telb.Put(k, nil); err != nil {
			return res, err
		}
		res.addedTel++
		n++
		for ; n > ob.opts.TelemetryBound; n-- {
			sid, ok, err := dropOldest(msgs, telb)
			if err != nil {
				return res, err
			}
			if !ok {
				break
			}
			if drops == nil {
				drops = map[string]uint64{}
			}
			drops[sid]++
			res.dropped++
		}
	}
	if n != tel0 {
		if err := setTelemetryCount(meta, n); err != nil {
			return res, err
		}
	}
	if len(drops) > 0 {
		return res, addDropped(meta, drops)
	}
	return res, nil
}

// dropOldest deletes the oldest waiting Telemetry message and returns its
// session (CorrelationID); ok is false when none waits.
func dropOldest(msgs, telb *bolt.Bucket) (sid string, ok bool, err error) {
	old, _ := telb.Cursor().First()
	if old == nil {
		return "", false, nil
	}
	old = append([]byte(nil), old...)
	if v := msgs.Get(old); v != nil {
		var m Message
		if _, err := m.UnmarshalMsg(v); err != nil {
			key, _ := btoi(old)
			return "", false, fmt.Errorf("%w: key %d: %v", ErrCorrupt, key, err)
		}
		sid = m.CorrelationID
		if err := msgs.Delete(old); err != nil {
			return "", false, err
		}
	}
	if err := telb.Delete(old); err != nil {
		return "", false, err
	}
	return sid, true, nil
}
