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

	"github.com/hcp-edge/hcp-edge/internal/wallclock"
	"github.com/hcp-edge/hcp-edge/transport/outbox"
	"github.com/hcp-edge/hcp-edge/transport/wire"
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
	Prefetch int    // basic.qos prefetch (default 10)
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
	// HandleTimeout bounds one Engine.Handle (default 30 s).
	HandleTimeout time.Duration
	Logger        *slog.Logger
	// Clock is the agent's process clock: it stamps the window's entries
	// and the refusals' answers and ages the entries (a clock of its own
	// if nil).
	Clock *wallclock.Clock
}

// InboxStats counts what the inbox did since it was made.
type InboxStats struct {
	Handled    uint64 // handed to the engine and recorded
	Duplicates uint64 // answered from the de-duplication window
	Refused    uint64 // rejected without requeue before the engine
	Answered   uint64 // refusals answered with task_rejected
	Failed     uint64 // engine or storage errors
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

	handled, duplicates, refused, answered, failed atomic.Uint64
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
		opts.Prefetch = 10
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
		Answered: in.answered.Load(), Failed: in.failed.Load()}
}

// Run consumes hcp.cmd.{callee_id} on a channel of conn with manual ack until
// ctx ends or the channel fails. It is a Worker.
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
	tag := fmt.Sprintf("hcp-inbox-%s-%d", in.opts.CalleeID, time.Now().UnixNano())
	ds, err := ch.Consume(q, tag, false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("amqp: consume %s: %w", q, err)
	}
	defer func() { _ = ch.Cancel(tag, false) }() // runs before the deferred Close
	if err := in.Prune(); err != nil {
		in.log.Warn("amqp: inbox prune", "err", err)
	}
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-prune.C:
			if err := in.Prune(); err != nil {
				in.log.Warn("amqp: inbox prune", "err", err)
			}
		case d, ok := <-ds:
			if !ok {
				return fmt.Errorf("%w: inbox deliveries ended", ErrChannelClosed)
			}
			if err := in.handle(ctx, d); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
		}
	}
}

// dedupRecord is what the window keeps per message_id.
type dedupRecord struct {
	At      int64    `json:"at"`
	Replies [][]byte `json:"r"` // msgp-encoded outbox.Message
}

// handle processes one delivery; an error means storage failed (the delivery
// was nacked with requeue and the worker should restart).
func (in *Inbox) handle(ctx context.Context, d amqp091.Delivery) error {
	now := in.opts.Clock.Now()
	if d.UserId == "" {
		return in.refuse(d, fault{reason: wire.ReasonUnauthorized, detail: "the message has no user_id property; publish with user_id set to your broker login", auth: true})
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
		return in.refuse(d, fault{reason: wire.ReasonInvalidInput, detail: err.Error(), cause: err})
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
			return in.refuse(d, fault{reason: wire.ReasonUnauthorized, detail: fmt.Sprintf("broker user %q may not submit as caller_id %q", d.UserId, ts.CallerID),
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
		in.failed.Add(1)
		d.Nack(false, true)
		return fmt.Errorf("amqp: inbox dedup lookup: %w", err)
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
				in.failed.Add(1)
				d.Nack(false, true)
				return fmt.Errorf("amqp: inbox: re-answer duplicate: %w", err)
			}
		}
		in.duplicates.Add(1)
		in.log.Info("amqp: duplicate command answered from the window", "message_id", id, "type", env.Type, "redelivered", d.Redelivered)
		return d.Ack(false)
	}

	hctx, cancel := context.WithTimeout(ctx, in.opts.HandleTimeout)
	defer cancel() // Record may use it, inside the transaction below
	out, err := in.eng.Handle(hctx, cmd)
	if err != nil {
		in.failed.Add(1)
		requeue := !d.Redelivered
		in.log.Error("amqp: engine failed on a command", "message_id", id, "type", env.Type, "err", err, "requeue", requeue)
		return d.Nack(false, requeue)
	}
	var engErr error
	err = in.db.Update(func(tx *bolt.Tx) error {
		replies := out.Replies
		if out.Record != nil {
			more, err := out.Record(tx)
			if err != nil {
				engErr = err
				return err
			}
			replies = append(replies[:len(replies):len(replies)], more...)
		}
		ms, err := in.messages(id, cmd, replies)
		if err != nil {
			engErr = err
			return err
		}
		if out.Unrecorded {
			return in.recordTx(tx, "", now, ms)
		}
		return in.recordTx(tx, id, now, ms)
	})
	if engErr != nil {
		in.failed.Add(1)
		requeue := !d.Redelivered
		in.log.Error("amqp: engine failed on a command", "message_id", id, "type", env.Type, "err", engErr, "requeue", requeue)
		return d.Nack(false, requeue)
	}
	if err != nil {
		in.failed.Add(1)
		d.Nack(false, true)
		return fmt.Errorf("amqp: inbox record: %w", err)
	}
	if out.Committed != nil {
		out.Committed()
	}
	in.handled.Add(1)
	return d.Ack(false)
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
