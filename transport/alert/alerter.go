package alert

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Opts tunes an Alerter. The zero value is usable.
type Opts struct {
	// Bucket is the top-level bbolt bucket of the queue (default "alerts").
	Bucket string
	// Intake is the capacity of the in-memory intake between Notify and
	// the disk (default 1024). Past it Notify drops the alert, counts it
	// and returns false; the count goes out as an alert_overflow alert.
	Intake int
	// SendTimeout bounds one delivery attempt (default 30s).
	SendTimeout time.Duration
	// OnDelivery, when set, is called on the receiver's goroutine after
	// every delivery and every failed attempt (the agent audits them).
	OnDelivery func(Delivery)
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Delivery is the outcome of one attempt to deliver one alert to one
// receiver.
type Delivery struct {
	Receiver string
	Alert    Alert
	Attempt  int   // 1 for the first attempt
	Err      error // nil: delivered
	// GaveUp: Err, and the alert is older than give_up_after: no further
	// attempt for this receiver.
	GaveUp bool
	// Next is when the next attempt is due (Err and not GaveUp).
	Next time.Time
}

// Alerter delivers alerts durably: Notify hands an alert over without
// blocking; the Alerter's writer goroutine stores it in bbolt (grouped,
// de-duplicated by id) before any receiver is tried; one goroutine per
// receiver delivers what is due, retrying with exponential backoff, until
// the receiver took it or give_up_after. Close stops the goroutines; what
// was not delivered is delivered after the next New on the same file.
// A nil *Alerter is valid and does nothing: alerts are off.
type Alerter struct {
	db   *bolt.DB
	name []byte
	cfg  Config
	opts Opts
	log  *slog.Logger
	recv []receiver
	rcs  []ReceiverConfig

	in      chan Alert
	dropped atomic.Int64
	closed  atomic.Bool
	stop    chan struct{}
	ctx     context.Context // cancelled by Close: a send in progress ends
	cancel  context.CancelFunc
	wake    []chan struct{} // one per receiver
	wg      sync.WaitGroup
	once    sync.Once

	// groups is the writer goroutine's grouping state, by class and key.
	groups map[string]*group
}

// group is the grouping state of one class and key.
type group struct {
	last    time.Time // when the latest alert of the group was (or will be) due
	pending uint64    // the queued alert collecting further occurrences (0: none)
	due     time.Time // pending's due time
}

// record is one queued alert and the receivers it still waits for.
type record struct {
	Alert   Alert               `json:"alert"`
	Due     time.Time           `json:"due"`
	Pending map[string]*attempt `json:"pending"`
}

// attempt is one receiver's delivery state of a record.
type attempt struct {
	N    int       `json:"n"`
	Next time.Time `json:"next"`
	Err  string    `json:"err,omitempty"`
}

var (
	bucketQueue = []byte("queue") // 8-byte big-endian sequence → record (JSON)
	bucketIDs   = []byte("ids")   // alert id → 8-byte unix nanoseconds it was stored
)

// idsKeep is how long an alert id is remembered for de-duplication.
const idsKeep = 7 * 24 * time.Hour

// New checks cfg (after Defaults: every problem of Check, joined), builds
// its receivers, opens the queue in db and starts the goroutines: the
// writer and one per receiver. A cfg without receivers returns a nil
// *Alerter (alerts off) and no error. Alerts left queued by a previous
// run for a receiver no longer configured are dropped, each logged.
func New(db *bolt.DB, cfg Config, opts Opts) (*Alerter, error) {
	if len(cfg.Receivers) == 0 {
		return nil, nil
	}
	if opts.Bucket == "" {
		opts.Bucket = "alerts"
	}
	if opts.Intake <= 0 {
		opts.Intake = 1024
	}
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Alerter{db: db, name: []byte(opts.Bucket), cfg: cfg, opts: opts, log: opts.Logger, rcs: cfg.Receivers,
		in: make(chan Alert, opts.Intake), stop: make(chan struct{}), groups: map[string]*group{}}
	if errs := cfg.Check(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	names := map[string]bool{}
	for _, rc := range cfg.Receivers {
		r, err := newReceiver(rc)
		if err != nil {
			return nil, err // Check said it would not
		}
		a.recv = append(a.recv, r)
		a.wake = append(a.wake, make(chan struct{}, 1))
		names[r.name()] = true
	}
	if err := a.open(names); err != nil {
		return nil, err
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.wg.Add(1 + len(a.recv))
	go a.writeLoop()
	for i := range a.recv {
		go a.work(i)
	}
	return a, nil
}

// open creates the buckets, forgets ids older than idsKeep, drops the
// queued deliveries of receivers not in names, and rebuilds the grouping
// state from the alerts not due yet.
func (a *Alerter) open(names map[string]bool) error {
	now := a.opts.Now()
	err := a.db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(a.name)
		if err != nil {
			return err
		}
		q, err := root.CreateBucketIfNotExists(bucketQueue)
		if err != nil {
			return err
		}
		ids, err := root.CreateBucketIfNotExists(bucketIDs)
		if err != nil {
			return err
		}
		var old [][]byte
		_ = ids.ForEach(func(k, v []byte) error {
			if len(v) == 8 && now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(v)))) > idsKeep {
				old = append(old, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range old {
			if err := ids.Delete(k); err != nil {
				return err
			}
		}
		type put struct {
			k []byte
			r *record
		}
		var puts []put
		err = q.ForEach(func(k, v []byte) error {
			var rec record
			if err := json.Unmarshal(v, &rec); err != nil {
				a.log.Error("alerts: dropping an unreadable queued alert", "err", err)
				puts = append(puts, put{k: append([]byte(nil), k...)})
				return nil
			}
			changed := false
			for n := range rec.Pending {
				if !names[n] {
					a.log.Warn("alerts: dropping a queued delivery: its receiver is no longer configured", "receiver", n, "id", rec.Alert.ID, "class", rec.Alert.Class)
					delete(rec.Pending, n)
					changed = true
				}
			}
			if changed {
				if len(rec.Pending) == 0 {
					puts = append(puts, put{k: append([]byte(nil), k...)})
				} else {
					puts = append(puts, put{k: append([]byte(nil), k...), r: &rec})
				}
			}
			if rec.Due.After(now) && len(rec.Pending) > 0 {
				a.groups[rec.Alert.groupKey()] = &group{last: rec.Due, pending: binary.BigEndian.Uint64(k), due: rec.Due}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, p := range puts {
			if p.r == nil {
				err = q.Delete(p.k)
			} else {
				err = putRecord(q, p.k, p.r)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("alerts: open the queue: %w", err)
	}
	return nil
}

func putRecord(q *bolt.Bucket, k []byte, r *record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return q.Put(k, b)
}

func itob(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// Notify hands a over for delivery and returns at once: it never blocks
// and does no I/O (a send on a buffered channel, or a counter when the
// channel is full), so the interlock, the monitor and the e-stop may call
// it on their own paths. It reports whether a was taken; a false (intake
// full, or closed) is counted and reported by an alert_overflow alert.
func (a *Alerter) Notify(al Alert) bool {
	if a == nil {
		return false
	}
	if a.closed.Load() {
		return false
	}
	select {
	case a.in <- al:
		return true
	default:
		a.dropped.Add(1)
		return false
	}
}

// Close stops taking alerts, stores those already handed over, cancels the
// sends in progress (they are tried again after the next New) and waits for
// the goroutines. A second Close returns at once.
func (a *Alerter) Close() error {
	if a == nil {
		return nil
	}
	a.once.Do(func() {
		a.closed.Store(true)
		close(a.stop)
		a.cancel()
	})
	a.wg.Wait()
	return nil
}

// writeLoop stores what Notify handed over, a batch a transaction.
func (a *Alerter) writeLoop() {
	defer a.wg.Done()
	for {
		select {
		case <-a.stop:
			a.store(a.drain(nil)) // handed over before Close: stored, not lost
			return
		case al := <-a.in:
			a.store(a.drain([]Alert{al}))
		}
	}
}

// drain appends what waits in the intake to batch (at most 256).
func (a *Alerter) drain(batch []Alert) []Alert {
	for len(batch) < 256 {
		select {
		case al := <-a.in:
			batch = append(batch, al)
		default:
			return batch
		}
	}
	return batch
}

// store writes batch to the queue in one transaction: each alert
// de-duplicated by id, grouped by class and key, routed to its receivers;
// then wakes the receivers.
func (a *Alerter) store(batch []Alert) {
	if n := a.dropped.Swap(0); n > 0 {
		batch = append(batch, Alert{Class: ClassOverflow, Severity: SeverityCritical,
			Title: fmt.Sprintf("%d alerts lost: the alerter's intake was full", n)})
	}
	if len(batch) == 0 {
		return
	}
	err := a.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(a.name)
		q, ids := root.Bucket(bucketQueue), root.Bucket(bucketIDs)
		for _, al := range batch {
			if err := a.storeOne(q, ids, al); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		// The state file refused the write (disk full, closed): the alerts
		// of this batch are lost; say so loudly, and count them for the
		// next overflow alert.
		a.log.Error("alerts: storing alerts failed: they are lost", "count", len(batch), "err", err)
		a.dropped.Add(int64(len(batch)))
		return
	}
	for _, w := range a.wake {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// storeOne queues al (inside store's transaction).
func (a *Alerter) storeOne(q, ids *bolt.Bucket, al Alert) error {
	now := a.opts.Now()
	if al.ID == "" {
		al.ID = newID()
	}
	if ids.Get([]byte(al.ID)) != nil {
		return nil // stored before: de-duplicated
	}
	if err := ids.Put([]byte(al.ID), itob(uint64(now.UnixNano()))); err != nil {
		return err
	}
	if al.At.IsZero() {
		al.At = now
	}
	al.Count = max(al.Count, 1)
	al.Last = al.At
	gk := al.groupKey()
	g := a.groups[gk]
	if g != nil && g.pending != 0 && now.Before(g.due) {
		if v := q.Get(itob(g.pending)); v != nil {
			var rec record
			if err := json.Unmarshal(v, &rec); err == nil {
				rec.Alert.Count += al.Count
				rec.Alert.Last = al.At
				return putRecord(q, itob(g.pending), &rec)
			}
		}
	}
	rec := record{Alert: al, Pending: map[string]*attempt{}}
	if g == nil || now.Sub(g.last) >= a.cfg.GroupWindow {
		rec.Due = now // the first of its group: at once
		g = &group{last: now}
	} else {
		rec.Due = g.last.Add(a.cfg.GroupWindow) // collects the group until then
		g = &group{last: rec.Due, due: rec.Due}
	}
	for i, rc := range a.rcs {
		if rc.routes(al) {
			rec.Pending[a.recv[i].name()] = &attempt{Next: rec.Due}
		}
	}
	if len(rec.Pending) == 0 {
		return nil // routed nowhere
	}
	seq, err := q.NextSequence()
	if err != nil {
		return err
	}
	if !g.due.IsZero() {
		g.pending = seq
	}
	a.groups[gk] = g
	return putRecord(q, itob(seq), &rec)
}

// work is receiver i's delivery loop.
func (a *Alerter) work(i int) {
	defer a.wg.Done()
	r := a.recv[i]
	var sent []time.Time // deliveries in the last hour (max_per_hour)
	for {
		now := a.opts.Now()
		seq, rec, wait := a.next(r.name(), now)
		if rec != nil {
			for len(sent) > 0 && now.Sub(sent[0]) >= time.Hour {
				sent = sent[1:]
			}
			if len(sent) >= a.cfg.MaxPerHour {
				rec, wait = nil, sent[0].Add(time.Hour).Sub(now)
			}
		}
		if rec == nil {
			t := time.NewTimer(max(wait, time.Millisecond))
			select {
			case <-a.stop:
				t.Stop()
				return
			case <-a.wake[i]:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		ctx, cancel := context.WithTimeout(a.ctx, a.opts.SendTimeout)
		err := r.send(ctx, rec.Alert)
		cancel()
		if err != nil && a.ctx.Err() != nil {
			return // closing: the attempt does not count; the next run tries again
		}
		if err == nil {
			sent = append(sent, now)
		}
		d := a.settle(seq, r.name(), err)
		d.Alert = rec.Alert
		if err != nil {
			a.log.Warn("alert delivery failed", "receiver", r.name(), "id", rec.Alert.ID, "class", rec.Alert.Class,
				"attempt", d.Attempt, "gave_up", d.GaveUp, "next", d.Next, "err", err)
		}
		if a.opts.OnDelivery != nil {
			a.opts.OnDelivery(d)
		}
	}
}

// next returns the oldest alert due for receiver name, or how long until
// one is due.
func (a *Alerter) next(name string, now time.Time) (seq uint64, rec *record, wait time.Duration) {
	wait = time.Hour
	err := a.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(a.name).Bucket(bucketQueue).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var r record
			if json.Unmarshal(v, &r) != nil {
				continue
			}
			p := r.Pending[name]
			if p == nil {
				continue
			}
			if !p.Next.After(now) {
				seq, rec = binary.BigEndian.Uint64(k), &r
				return nil
			}
			wait = min(wait, p.Next.Sub(now))
		}
		return nil
	})
	if err != nil {
		a.log.Error("alerts: reading the queue", "err", err)
		return 0, nil, time.Second
	}
	return seq, rec, wait
}

// settle records the outcome of an attempt: a delivery removes the
// receiver from the record (the record goes with its last receiver); a
// failure schedules the next attempt, or gives up past give_up_after.
func (a *Alerter) settle(seq uint64, name string, sendErr error) Delivery {
	d := Delivery{Receiver: name, Err: sendErr}
	err := a.db.Update(func(tx *bolt.Tx) error {
		q := tx.Bucket(a.name).Bucket(bucketQueue)
		v := q.Get(itob(seq))
		if v == nil {
			return nil
		}
		var rec record
		if err := json.Unmarshal(v, &rec); err != nil {
			return q.Delete(itob(seq))
		}
		p := rec.Pending[name]
		if p == nil {
			return nil
		}
		p.N++
		d.Attempt = p.N
		now := a.opts.Now()
		switch {
		case sendErr == nil:
			delete(rec.Pending, name)
		case now.Sub(rec.Alert.At) >= a.cfg.GiveUpAfter:
			d.GaveUp = true
			delete(rec.Pending, name)
		default:
			p.Err = sendErr.Error()
			p.Next = now.Add(a.backoff(p.N))
			d.Next = p.Next
		}
		if len(rec.Pending) == 0 {
			return q.Delete(itob(seq))
		}
		return putRecord(q, itob(seq), &rec)
	})
	if err != nil {
		a.log.Error("alerts: recording a delivery", "receiver", name, "err", err)
		d.Err = errors.Join(d.Err, err)
	}
	return d
}

// backoff is the wait after the n-th failed attempt: retry_min doubled
// n-1 times, at most retry_max.
func (a *Alerter) backoff(n int) time.Duration {
	d := a.cfg.RetryMin
	for i := 1; i < n && d < a.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, a.cfg.RetryMax)
}

// Queued returns how many alerts wait for at least one receiver.
func (a *Alerter) Queued() int {
	if a == nil {
		return 0
	}
	n := 0
	_ = a.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(a.name).Bucket(bucketQueue).Stats().KeyN
		return nil
	})
	return n
}
