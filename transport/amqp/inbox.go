package amqp

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/internal/wallclock"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// Command is one decoded, property-checked command handed to the Engine.
type Command struct {
	Envelope *wire.Envelope
	// UserID is the AMQP user_id property, which RabbitMQ validated against
	// the publishing connection's login. Never empty.
	UserID string
	// CallerID is the payload's caller_id on a task_submit; on an abort or an extension request it is
	// the mapped caller of UserID (InboxOpts.CallerOf) or "".
	CallerID string
	// MappedCallerID is InboxOpts.CallerOf(UserID) ("" when there is no
	// mapping). When CallerOf is set the inbox has already refused a
	// task_submit whose caller_id differs; the gate compares again.
	MappedCallerID string
	// Redelivered is the broker's redelivered flag.
	Redelivered bool
	// Received is when the inbox took the delivery.
	Received time.Time
}

// Reply is one message the engine answers a command with.
type Reply struct {
	// CallerID routes the reply ({caller_id}.{session_id}.{type}); empty means
	// Command.CallerID.
	CallerID string
	Envelope *wire.Envelope
}

// Outcome is what the engine decided about a command. The inbox runs Record,
// appends the Replies and Record's replies to the outbox (Protocol class;
// task_accepted and task_rejected get the hcp-in-reply-to header) and records
// the de-duplication entry, all in one bbolt transaction, and only then acks
// the delivery.
type Outcome struct {
	Replies []Reply
	// Record, when set, runs inside that transaction: the engine decides and
	// writes its own state there (the session it created, its audit entries)
	// and returns its replies, which follow Replies. It must not open another
	// transaction of the db. An error rolls everything back and is handled as
	// an error of Handle (requeued once).
	Record func(tx *bolt.Tx) ([]Reply, error)
	// Committed, when set, runs after the transaction committed and before the
	// ack (nothing that undoes anything: the transaction holds it all).
	Committed func()
	// Unrecorded keeps the command out of the de-duplication window: its
	// replies are queued but not remembered, and a duplicate is handled
	// again. For reads that change nothing and whose answers are large
	// (capabilities_response, artifact_chunk): the window would keep them
	// for days.
	Unrecorded bool
}

// Engine is the session engine as the inbox sees it. Handle must return
// quickly (start long work elsewhere). It returns an error only when it could
// decide nothing: the delivery is requeued once, and dropped when it was
// already a redelivery. A refusal is an Outcome with a task_rejected reply.
type Engine interface {
	Handle(ctx context.Context, cmd Command) (Outcome, error)
}

// EngineFunc adapts a function to Engine.
type EngineFunc func(ctx context.Context, cmd Command) (Outcome, error)

// Handle calls f.
func (f EngineFunc) Handle(ctx context.Context, cmd Command) (Outcome, error) { return f(ctx, cmd) }

// InboxOpts configures an Inbox.
type InboxOpts struct {
	CalleeID string // required: consumes hcp.cmd.{callee_id}
	// Prefetch is the basic.qos prefetch (default 256): enough deliveries
	// in flight for a group commit to take many at once (GroupMax).
	Prefetch int
	// GroupMax bounds the deliveries whose outcomes share one transaction
	// (group commit, group.go; default 128; 1 commits each alone).
	GroupMax int
	// GroupWait is how long the inbox waits for the next delivery while it
	// collects a group (default 1 ms): a command alone waits at most that
	// long; a flood fills groups.
	GroupWait time.Duration
	// MaxBodySize bounds a command body (default wire.DefaultMaxBodySize).
	MaxBodySize int
	// DedupWindow is how long a message_id is remembered (default 7 days),
	// judged by Clock.Floor so that a step of the wall clock forward never
	// drops an entry early (Prune).
	DedupWindow time.Duration
	// Bucket is the bbolt bucket of the de-duplication window (default "inbox").
	Bucket string
	// CallerOf maps a broker login to the caller_id it may use. When set, a
	// task_submit whose caller_id differs (or whose login maps to nothing) is
	// refused with task_rejected unauthorized, answered to the login's own
	// caller when there is one, and a command that does not decode is
	// answered to the login's caller (never to a payload's caller_id). When
	// nil, both are handed to the engine, and an undecodable command is
	// answered to its payload's caller_id when one can be read.
	CallerOf func(userID string) (callerID string, ok bool)
	// Refused, when set, runs inside the transaction that queues the answer
	// to a command the inbox refused before the engine, or in one of its own
	// when nobody is answered: the engine's side audits the refusal there, so
	// the audit entry and the answer commit together. An error rolls both
	// back and the delivery is requeued, as for any storage failure.
	Refused func(tx *bolt.Tx, r Refusal) error
	// Burst, when set, is told the size of every group of more than one
	// delivery before it is decided (group.go): a flood in progress. The
	// daemon raises its GC target for it (cmd/hcp-edge's gcburst). It runs
	// on the inbox's goroutine and must not block.
	Burst func(n int)
	// HandleTimeout bounds one Engine.Handle (default 30 s).
	HandleTimeout time.Duration
	// Intake, when set, pauses command intake from outside (the state
	// directory short of space): while it is closed the inbox cancels its
	// consumer (basic.cancel), handles the deliveries the broker had
	// already sent, and waits on the same channel, neither nacking nor
	// reconnecting, so commands wait in their queue and none counts toward
	// the delivery limit; it consumes again when Intake opens.
	Intake Intake
	// LocalError, when set, reports whether err, a failed write of the
	// state file, is a local write failure (no space, I/O error) and is told
	// of it (it may raise the alarm that closes Intake). Such a delivery is
	// held, unacked, on its channel and handled again once Intake is open
	// again, never nacked and never taken for a broker fault; past HoldMax
	// it is nacked with requeue (once the consumer is cancelled, so it
	// waits in the queue), and so is every delivery failing the same way
	// until one is recorded again. Give it with Intake, which it should
	// close: without one, a held delivery is tried every 250 ms.
	LocalError func(err error) bool
	// HoldMax bounds how long deliveries are held for a local write
	// failure (default 10 min, well below RabbitMQ's 30-minute
	// consumer_timeout, which would close the channel).
	HoldMax time.Duration
	Logger  *slog.Logger
	// Clock is the agent's process clock: it stamps the window's entries
	// and the refusals' answers and ages the entries (a clock of its own
	// if nil).
	Clock *wallclock.Clock
}

// Intake says whether the inbox may take commands. diskspace.Watcher is
// one.
type Intake interface {
	// Open reports whether commands may be taken now, and returns a
	// channel closed at the next change.
	Open() (open bool, changed <-chan struct{})
}

// InboxStats counts what the inbox did since it was made.
type InboxStats struct {
	Handled    uint64 // handed to the engine and recorded
	Duplicates uint64 // answered from the de-duplication window
	Refused    uint64 // rejected without requeue before the engine
	Answered   uint64 // refusals answered with task_rejected
	Failed     uint64 // engine or storage errors
	Held       uint64 // deliveries held for a local write failure
	Paused     uint64 // times intake paused (consumer cancelled)
	// Commits counts the transactions that recorded handled commands: with
	// the group commit, Handled/Commits commands share one.
	Commits uint64
}

// Inbox consumes a callee's command queue. Run is a Worker for the Supervisor.
type Inbox struct {
	db   *bolt.DB
	ob   *outbox.Outbox
	eng  Engine
	opts InboxOpts
	dec  *wire.Decoder
	log  *slog.Logger
	name []byte

	handled, duplicates, refused, answered, failed, held, paused, commits atomic.Uint64
	// holdSpent is set when a hold outlasted HoldMax: until a command is
	// recorded again, a local write failure requeues at once (the broker's
	// consumer_timeout would otherwise close the channel on the deliveries
	// waiting behind it).
	holdSpent atomic.Bool
}

var (
	bucketIDs    = []byte("ids")
	bucketByTime = []byte("bytime")
)

// ErrRefused is wrapped by the errors the inbox logs for refused deliveries.
var ErrRefused = errors.New("amqp: command refused")

// NewInbox returns an Inbox keeping its de-duplication window in db, which
// must be the outbox's db (replies and the record commit together).
func NewInbox(db *bolt.DB, ob *outbox.Outbox, eng Engine, opts InboxOpts) (*Inbox, error) {
	if _, err := wire.CommandQueue(opts.CalleeID); err != nil {
		return nil, fmt.Errorf("amqp: inbox: %w", err)
	}
	if db == nil || ob == nil || eng == nil {
		return nil, errors.New("amqp: inbox: db, outbox and engine are required")
	}
	if ob.DB() != db {
		return nil, errors.New("amqp: inbox: the outbox must live in the same bbolt db")
	}
	if opts.Prefetch <= 0 {
		opts.Prefetch = DefaultPrefetch
	}
	if opts.GroupMax <= 0 {
		opts.GroupMax = defaultGroupMax
	}
	if opts.GroupWait <= 0 {
		opts.GroupWait = defaultGroupWait
	}
	if opts.MaxBodySize <= 0 {
		opts.MaxBodySize = wire.DefaultMaxBodySize
	}
	if opts.DedupWindow <= 0 {
		opts.DedupWindow = 7 * 24 * time.Hour
	}
	if opts.Bucket == "" {
		opts.Bucket = "inbox"
	}
	if opts.HandleTimeout <= 0 {
		opts.HandleTimeout = 30 * time.Second
	}
	if opts.HoldMax <= 0 {
		opts.HoldMax = 10 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = wallclock.New()
	}
	dec, err := wire.NewDecoder(wire.Opts{MaxBodySize: opts.MaxBodySize})
	if err != nil {
		return nil, err
	}
	in := &Inbox{db: db, ob: ob, eng: eng, opts: opts, dec: dec, log: opts.Logger, name: []byte(opts.Bucket)}
	err = db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(in.name)
		if err != nil {
			return err
		}
		if _, err := root.CreateBucketIfNotExists(bucketIDs); err != nil {
			return err
		}
		_, err = root.CreateBucketIfNotExists(bucketByTime)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("amqp: inbox bucket: %w", err)
	}
	return in, nil
}

// Stats returns the counters.
func (in *Inbox) Stats() InboxStats {
	return InboxStats{Handled: in.handled.Load(), Duplicates: in.duplicates.Load(), Refused: in.refused.Load(),
		Answered: in.answered.Load(), Failed: in.failed.Load(), Held: in.held.Load(), Paused: in.paused.Load(), Commits: in.commits.Load()}
}

// Run consumes hcp.cmd.{callee_id} on a channel of conn with manual ack until
// ctx ends or the channel fails. It is a Worker. While InboxOpts.Intake is
// closed it cancels its consumer and waits on the channel (see Intake); a
// local write failure never ends it.
func (in *Inbox) Run(ctx context.Context, conn *amqp091.Connection) error {
	q, _ := wire.CommandQueue(in.opts.CalleeID)
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("amqp: inbox channel: %w", err)
	}
	defer ch.Close()
	if err := ch.Qos(in.opts.Prefetch, 0, false); err != nil {
		return fmt.Errorf("amqp: inbox qos: %w", err)
	}
	// Consume with our own tag and cancel it ourselves before the channel
	// closes: ConsumeWithContext's background basic.cancel races a deferred
	// Close, which then waited for the connection to close (a hung Run after
	// its context ended while the connection stayed up).
	var ds <-chan amqp091.Delivery
	tag := ""
	defer func() {
		if tag != "" {
			_ = ch.Cancel(tag, false) // runs before the deferred Close
		}
	}()
	if err := in.Prune(); err != nil {
		in.log.Warn("amqp: inbox prune", "err", err)
	}
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	wasPaused := false
	var requeue []amqp091.Delivery // nacked with requeue once nothing consumes them again
	nackAll := func() {
		for _, d := range requeue {
			_ = d.Nack(false, true)
		}
		requeue = requeue[:0]
	}
	// settle finishes d given the error of its first attempt: a local
	// write failure holds it (hold); err is the worker's.
	settle := func(d amqp091.Delivery, err error) error {
		err = in.hold(ctx, d, err)
		if errors.Is(err, errRequeue) {
			requeue = append(requeue, d)
			return nil
		}
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	deliver := func(d amqp091.Delivery) error { return settle(d, in.handle(ctx, d)) }
	for {
		open, changed := in.intakeOpen()
		if open && len(requeue) > 0 {
			nackAll() // they come back to this consumer, which takes them
		}
		switch {
		case open && tag == "":
			tag = fmt.Sprintf("hcp-inbox-%s-%d", in.opts.CalleeID, time.Now().UnixNano())
			if ds, err = ch.Consume(q, tag, false, false, false, false, nil); err != nil {
				tag = ""
				return fmt.Errorf("amqp: consume %s: %w", q, err)
			}
			if wasPaused {
				in.log.Info("amqp: inbox consumes again", "queue", q)
				wasPaused = false
			}
		case !open && tag != "":
			// Stop taking commands: the broker keeps them in the queue
			// (nothing is returned, so nothing counts toward the delivery
			// limit). Cancel waits for cancel-ok, so every delivery sent
			// before it is on ds, which then closes; they are handled now.
			in.paused.Add(1)
			wasPaused = true
			if err := ch.Cancel(tag, false); err != nil {
				tag = ""
				return fmt.Errorf("%w: inbox cancel: %v", ErrChannelClosed, err)
			}
			tag = ""
			in.log.Warn("amqp: inbox consumer cancelled: commands wait in their queue until intake opens", "queue", q)
			n := 0
			for d := range ds {
				n++
				if err := deliver(d); err != nil {
					return err
				}
			}
			ds = nil
			nackAll() // no consumer now: they wait ready in the queue
			in.log.Info("amqp: inbox handled the deliveries sent before the cancel", "queue", q, "deliveries", n)
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-prune.C:
			if err := in.Prune(); err != nil {
				in.log.Warn("amqp: inbox prune", "err", err)
			}
		case d, ok := <-ds:
			if !ok {
				tag = ""
				return fmt.Errorf("%w: inbox deliveries ended", ErrChannelClosed)
			}
			// Group commit (group.go): what arrives with d shares its
			// transaction; a closed ds is seen on the next receive.
			alone := func() bool { return len(requeue) == 0 }
			if err := in.deliverGroup(ctx, in.collect(d, ds), settle, alone); err != nil {
				return err
			}
		}
	}
}

// intakeOpen is Intake.Open, or always open without one.
func (in *Inbox) intakeOpen() (bool, <-chan struct{}) {
	if in.opts.Intake == nil {
		return true, nil
	}
	return in.opts.Intake.Open()
}

// localError is handle's error for a local write failure: the delivery was
// neither acked nor nacked.
type localError struct{ err error }

func (e *localError) Error() string { return e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

// errRequeue is deliver's answer for a delivery to nack with requeue once
// the consumer is cancelled (or at once while it may consume): requeued
// before the cancel, the broker would hand it straight back.
var errRequeue = errors.New("amqp: inbox: requeue")

// holdRetry is the least wait between two tries of a held delivery.
const holdRetry = 250 * time.Millisecond

// hold takes err, the outcome of a first attempt at d: a local write
// failure holds d, unacked, until intake is open again, then handles it
// again (alone); past HoldMax it returns errRequeue. Any other err is
// returned as it is.
func (in *Inbox) hold(ctx context.Context, d amqp091.Delivery, err error) error {
	var since time.Time
	for {
		var le *localError
		if !errors.As(err, &le) {
			if err == nil {
				in.holdSpent.Store(false)
			}
			return err
		}
		if in.holdSpent.Load() {
			in.log.Warn("amqp: command requeued: the state file still cannot be written here", "message_id", d.MessageId, "err", le.err)
			return errRequeue
		}
		if since.IsZero() {
			since = time.Now()
			in.held.Add(1)
			in.log.Warn("amqp: command held unacked: the state file cannot be written here; handled again when there is space",
				"message_id", d.MessageId, "err", le.err)
		}
		if !in.waitOpen(ctx, since.Add(in.opts.HoldMax)) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			in.log.Error("amqp: command held too long for a local write failure: requeued (it counts once toward the delivery limit)",
				"message_id", d.MessageId, "held", time.Since(since).Round(time.Second), "err", le.err)
			in.holdSpent.Store(true)
			return errRequeue
		}
		err = in.handle(ctx, d)
	}
}

// waitOpen waits at least holdRetry and until intake is open; false when ctx
// ended or deadline passed first.
func (in *Inbox) waitOpen(ctx context.Context, deadline time.Time) bool {
	if !sleep(ctx, holdRetry) {
		return false
	}
	for {
		open, changed := in.intakeOpen()
		if open {
			return true
		}
		if changed == nil { // no Intake: retry every holdRetry
			return time.Now().Before(deadline)
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
			return false
		case <-changed:
			t.Stop()
		}
	}
}

// storageFailed handles a failed write of the state file for d: a local
// write failure (InboxOpts.LocalError) is a *localError and d stays
// unacked; anything else nacks d with requeue and ends the worker.
func (in *Inbox) storageFailed(d amqp091.Delivery, err error, what string) error {
	in.failed.Add(1)
	if in.opts.LocalError != nil && in.opts.LocalError(err) {
		return &localError{fmt.Errorf("amqp: inbox: %s: %w", what, err)}
	}
	d.Nack(false, true)
	return fmt.Errorf("amqp: inbox %s: %w", what, err)
}

// dedupRecord is what the window keeps per message_id.
type dedupRecord struct {
	At      int64    `json:"at"`
	Replies [][]byte `json:"r"` // msgp-encoded outbox.Message
}

// handle processes one delivery alone; an error means storage failed (the
// delivery was nacked with requeue and the worker should restart) or is a
// *localError (held).
func (in *Inbox) handle(ctx context.Context, d amqp091.Delivery) error {
	p, err := in.prepare(ctx, d)
	if p == nil {
		return err
	}
	defer p.cancel()
	return in.commitOne(p)
}

// prepared is a delivery the engine has decided and whose outcome waits for
// its transaction: alone (commitOne) or shared with others (commitGroup).
type prepared struct {
	d      amqp091.Delivery
	id     string // message_id
	cmd    Command
	out    Outcome
	now    time.Time
	cancel context.CancelFunc // ends the context Handle got (Record may use it)
}

// prepare runs everything before a delivery's transaction: the refusals,
// the decoding, the de-duplication window and Engine.Handle. It returns the
// prepared delivery, or nil when d is done (acked, rejected or nacked; err
// as handle's).
func (in *Inbox) prepare(ctx context.Context, d amqp091.Delivery) (*prepared, error) {
	now := in.opts.Clock.Now()
	if d.UserId == "" {
		return nil, in.refuse(d, fault{reason: wire.ReasonUnauthorized, detail: "the message has no user_id property; publish with user_id set to your broker login", auth: true})
	}
	env, err := in.dec.Decode(d.Body)
	if err == nil {
		err = wire.CheckProperties(wire.Properties{ContentType: d.ContentType, ContentEncoding: d.ContentEncoding,
			DeliveryMode: d.DeliveryMode, MessageID: d.MessageId, Timestamp: d.Timestamp, CorrelationID: d.CorrelationId, Type: d.Type}, env)
	}
	if err == nil && !env.Type.IsCommand() {
		err = &wire.DecodeError{Field: "type", Kind: wire.KindInvalid, Detail: string(env.Type) + " is not a command"}
	}
	if err != nil {
		return nil, in.refuse(d, fault{reason: wire.ReasonInvalidInput, detail: err.Error(), cause: err})
	}
	cmd := Command{Envelope: env, UserID: d.UserId, Redelivered: d.Redelivered, Received: now}
	mapped, ok := "", false
	if in.opts.CallerOf != nil {
		mapped, ok = in.opts.CallerOf(d.UserId)
		if ok {
			cmd.MappedCallerID = mapped
		}
	}
	if env.Type == wire.TypeTaskSubmit {
		ts, _ := env.TaskSubmit()
		cmd.CallerID = ts.CallerID
		if in.opts.CallerOf != nil && (!ok || mapped != ts.CallerID) {
			return nil, in.refuse(d, fault{reason: wire.ReasonUnauthorized, detail: fmt.Sprintf("broker user %q may not submit as caller_id %q", d.UserId, ts.CallerID),
				auth: true, route: mapped})
		}
	} else {
		cmd.CallerID = mapped
	}
	id := env.MessageID.String()

	// A message_id seen before gets its recorded outcome again.
	var dup *dedupRecord
	if err := in.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(in.name).Bucket(bucketIDs).Get([]byte(id))
		if v == nil {
			return nil
		}
		dup = &dedupRecord{}
		return json.Unmarshal(v, dup)
	}); err != nil {
		return nil, in.storageFailed(d, err, "dedup lookup")
	}
	if dup != nil {
		ms := make([]outbox.Message, 0, len(dup.Replies))
		for _, r := range dup.Replies {
			var m outbox.Message
			if _, err := m.UnmarshalMsg(r); err != nil {
				in.log.Error("amqp: inbox: corrupt dedup record", "message_id", id, "err", err)
				continue
			}
			ms = append(ms, m)
		}
		if len(ms) > 0 {
			if err := in.db.Update(func(tx *bolt.Tx) error { _, err := in.ob.AppendTx(tx, ms...); return err }); err != nil {
				return nil, in.storageFailed(d, err, "re-answer duplicate")
			}
		}
		in.duplicates.Add(1)
		in.log.Info("amqp: duplicate command answered from the window", "message_id", id, "type", env.Type, "redelivered", d.Redelivered)
		return nil, d.Ack(false)
	}

	hctx, cancel := context.WithTimeout(ctx, in.opts.HandleTimeout)
	out, err := in.eng.Handle(hctx, cmd)
	if err != nil {
		cancel()
		in.failed.Add(1)
		requeue := !d.Redelivered
		in.log.Error("amqp: engine failed on a command", "message_id", id, "type", env.Type, "err", err, "requeue", requeue)
		return nil, d.Nack(false, requeue)
	}
	return &prepared{d: d, id: id, cmd: cmd, out: out, now: now, cancel: cancel}, nil
}

// commitOne records p in a transaction of its own and acks it.
func (in *Inbox) commitOne(p *prepared) error {
	var engErr error
	err := in.db.Update(func(tx *bolt.Tx) error {
		var err error
		engErr, err = in.recordOne(tx, p)
		return err
	})
	d := p.d
	if engErr != nil && in.opts.LocalError != nil && in.opts.LocalError(engErr) {
		return in.storageFailed(d, engErr, "record") // a local write failure inside Record: held
	}
	if engErr != nil {
		in.failed.Add(1)
		requeue := !d.Redelivered
		in.log.Error("amqp: engine failed on a command", "message_id", p.id, "type", p.cmd.Envelope.Type, "err", engErr, "requeue", requeue)
		return d.Nack(false, requeue)
	}
	if err != nil {
		return in.storageFailed(d, err, "record")
	}
	in.commits.Add(1)
	return in.acked(p)
}

// recordOne writes p's outcome in tx: Outcome.Record, the replies and the
// de-duplication entry. engErr is the engine's failure (Record, or replies
// that cannot be sent); err is what rolls tx back (engErr included).
func (in *Inbox) recordOne(tx *bolt.Tx, p *prepared) (engErr, err error) {
	replies := p.out.Replies
	if p.out.Record != nil {
		more, err := p.out.Record(tx)
		if err != nil {
			return err, err
		}
		replies = append(replies[:len(replies):len(replies)], more...)
	}
	ms, err := in.messages(p.id, p.cmd, replies)
	if err != nil {
		return err, err
	}
	id := p.id
	if p.out.Unrecorded {
		id = ""
	}
	return nil, in.recordTx(tx, id, p.now, ms)
}

// acked runs after p's transaction committed: Outcome.Committed, then the
// ack.
func (in *Inbox) acked(p *prepared) error {
	if p.out.Committed != nil {
		p.out.Committed()
	}
	in.handled.Add(1)
	return p.d.Ack(false)
}

// messages encodes the replies to command id for the outbox.
func (in *Inbox) messages(id string, cmd Command, replies []Reply) ([]outbox.Message, error) {
	ms := make([]outbox.Message, 0, len(replies))
	for _, r := range replies {
		if r.Envelope == nil {
			return nil, errors.New("amqp: engine reply: nil envelope")
		}
		caller := r.CallerID
		if caller == "" {
			caller = cmd.CallerID
		}
		irt := ""
		if r.Envelope.Type == wire.TypeTaskAccepted || r.Envelope.Type == wire.TypeTaskRejected || r.Envelope.Type.IsResponse() {
			irt = id
		}
		m, err := outbox.MessageFor(caller, r.Envelope, irt)
		if err != nil {
			return nil, fmt.Errorf("amqp: engine reply cannot be sent: %w", err)
		}
		m.Class = outbox.Protocol
		ms = append(ms, m)
	}
	return ms, nil
}

// recordTx appends ms and stores the dedup entry for id ("" for none) in tx.
func (in *Inbox) recordTx(tx *bolt.Tx, id string, now time.Time, ms []outbox.Message) error {
	// The replies are recorded as the outbox stores them: sealed at rest
	// where its Sealer says so (a T3/T4 session's artifact chunk, ...).
	if err := in.ob.SealTx(tx, ms); err != nil {
		return err
	}
	rec := dedupRecord{At: now.UnixNano()}
	for _, m := range ms {
		b, err := m.MarshalMsg(nil)
		if err != nil {
			return err
		}
		rec.Replies = append(rec.Replies, b)
	}
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if len(ms) > 0 {
		if _, err := in.ob.AppendTx(tx, ms...); err != nil {
			return err
		}
	}
	if id == "" {
		return nil
	}
	root := tx.Bucket(in.name)
	if err := root.Bucket(bucketIDs).Put([]byte(id), v); err != nil {
		return err
	}
	return root.Bucket(bucketByTime).Put(timeKey(now, id), nil)
}

func timeKey(t time.Time, id string) []byte {
	k := make([]byte, 8, 8+len(id))
	binary.BigEndian.PutUint64(k, uint64(t.UnixNano()))
	return append(k, id...)
}

// Prune forgets message_ids older than the window. An entry's age is
// wallclock.Clock.MinAge of its stamp: the smaller of its age by the wall
// clock and by the monotonic clock of this process, so a step of the wall
// clock forward (NTP setting a Raspberry Pi's clock hours after boot)
// drops nothing early, and a step back keeps entries longer. An entry of an
// earlier process is aged by the wall clock at this process's start plus
// the monotonic time since.
func (in *Inbox) Prune() error {
	cut := uint64(in.opts.Clock.Floor().Add(-in.opts.DedupWindow).UnixNano())
	return in.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(in.name)
		ids, bt := root.Bucket(bucketIDs), root.Bucket(bucketByTime)
		c := bt.Cursor()
		var dead [][]byte
		for k, _ := c.First(); len(k) >= 8 && binary.BigEndian.Uint64(k[:8]) < cut; k, _ = c.Next() {
			dead = append(dead, append([]byte(nil), k...))
		}
		for _, k := range dead {
			if err := ids.Delete(k[8:]); err != nil {
				return err
			}
			if err := bt.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
