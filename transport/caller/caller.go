package caller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// ErrClosed: the Client was closed.
var ErrClosed = errors.New("caller: closed")

// Opts configures a Client.
type Opts struct {
	URL string // amqp:// or amqps:// with the caller's broker login and vhost
	// URLs are further endpoints (the nodes of a cluster), tried in turn after
	// URL as the Supervisor does (same scheme and login for all).
	URLs     []string
	TLS      tamqp.TLSConfig // with amqps://
	CallerID string          // required: queue hcp.evt.{caller_id}
	CalleeID string          // required: commands go to hcp.commands with this key
	// CalleeUser is the callee's broker user: a message on the event queue
	// is accepted only when its AMQP user_id (which RabbitMQ validates
	// against the publishing connection's login) is this user; anything else
	// is dropped, logged with its publisher and counted (Stats.Forged).
	// Default: CalleeID (the convention of scripts/broker.sh and
	// `hcp-edge broker provision` examples: the callee logs in as its id).
	CalleeUser string
	// CalleeUsers are further broker logins trusted as callees: a client
	// that drives several callees (SubmitTo), each logged in as a user of its
	// own. Any of them may publish any event onto the caller's queue, so list
	// only agents the caller trusts alike.
	CalleeUsers []string
	Prefetch    int // default 10 (L1's recommendation)
	// MessageTTL and MaxLength of hcp.evt.{caller_id} (defaults 24 h and
	// 100,000, drop-head, as L1 recommends). They must match an existing queue.
	MessageTTL time.Duration
	MaxLength  int
	// ClassicQueue declares hcp.evt.{caller_id} as a classic queue. By
	// default it is a quorum queue (replicated across a cluster's nodes; no
	// delivery limit), falling back to an existing queue of that name, or to
	// classic when the broker cannot, with a warning in the log.
	ClassicQueue bool
	// Heartbeat is the AMQP heartbeat (default 30 s); a shorter one finds a
	// dead path (a partition) sooner.
	Heartbeat time.Duration
	// ResubmitInterval: a task_submit without an answer is republished, with
	// the same message_id, this often (default 10 s).
	ResubmitInterval time.Duration
	// GapTimeout: a sequence gap not filled within it is skipped and counted
	// (default 30 s; the callee may have dropped telemetry).
	GapTimeout time.Duration
	// Buffer is the capacity of each Task's message channel (default 1024).
	Buffer int
	// Bucket is the bbolt bucket of the client's state (default "caller");
	// the client's outbox lives in Bucket+"-outbox".
	Bucket  string
	Backoff tamqp.Backoff
	Logger  *slog.Logger
	// Tap, when set, sees every delivery as the broker delivered it
	// (properties and all), before any check: for diagnostics and tests.
	// It must not block for long.
	Tap func(amqp091.Delivery)
	// Unclaimed receives, in order, messages of sessions this client neither
	// submitted nor watches (default: logged and dropped).
	Unclaimed func(*wire.Envelope)
}

// Stats counts what the client saw.
type Stats struct {
	Delivered  uint64 // messages handed to tasks in order
	Duplicates uint64 // skipped: sequence already processed or message_id seen
	Reordered  uint64 // events that arrived ahead of a gap and were buffered
	Skipped    uint64 // sequence numbers given up on after GapTimeout
	Invalid    uint64 // deliveries that failed strict decoding (acked, dropped)
	Resubmits  uint64 // task_submit republications
	// PropertyViolations counts delivered messages whose routing key,
	// delivery_mode or content_encoding deviate from L1 (still processed).
	PropertyViolations uint64
	// Forged counts deliveries dropped because their user_id was not the
	// callee's broker user (or was absent).
	Forged uint64
	// ReusedQueue is true when the event queue existed with other arguments
	// and is used as it is (a passive declare).
	ReusedQueue bool
}

// Client is a caller harness's side of HCP L1. See the package documentation.
type Client struct {
	db   *bolt.DB
	ob   *outbox.Outbox
	sup  *tamqp.Supervisor
	opts Opts
	log  *slog.Logger
	name []byte
	dec  *wire.Decoder

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	pending  map[string]*Task // by task_submit message_id
	sessions map[uuid.UUID]*session
	ctl      controls                       // control commands waiting for an answer (handoff.go)
	requests map[string]chan *wire.Envelope // extension requests waiting, by message_id (request.go)

	delivered, duplicates, reordered, skipped, invalid, resubmits, violations, forged atomic.Uint64
	reusedQueue                                                                       atomic.Bool
}

var bucketSessions = []byte("sessions")

// sessionRecord is the durable per-session state.
type sessionRecord struct {
	Last uint64 `json:"last"` // last_processed_sequence
	Done bool   `json:"done"` // the terminal message was processed
}

// held is a delivery waiting for a gap to fill; it is acked when delivered.
type held struct {
	env *wire.Envelope
	d   amqp091.Delivery
}

type session struct {
	id       uuid.UUID
	task     *Task
	rec      sessionRecord
	ahead    map[uint64]held // events past a gap
	terminal *held           // completed/failed waiting behind a gap
	gapSince time.Time
	seen     map[string]bool // message_ids of non-event messages processed
}

// New opens the client's state in db, declares its queue and starts
// consuming and publishing in the background. Close stops it.
func New(db *bolt.DB, opts Opts) (*Client, error) {
	if err := wire.CheckID(opts.CallerID); err != nil {
		return nil, fmt.Errorf("caller: caller_id: %w", err)
	}
	if err := wire.CheckID(opts.CalleeID); err != nil {
		return nil, fmt.Errorf("caller: callee_id: %w", err)
	}
	if opts.CalleeUser == "" {
		opts.CalleeUser = opts.CalleeID
	}
	if opts.Prefetch <= 0 {
		opts.Prefetch = 10
	}
	if opts.MessageTTL <= 0 {
		opts.MessageTTL = 24 * time.Hour
	}
	if opts.MaxLength <= 0 {
		opts.MaxLength = 100000
	}
	if opts.ResubmitInterval <= 0 {
		opts.ResubmitInterval = 10 * time.Second
	}
	if opts.GapTimeout <= 0 {
		opts.GapTimeout = 30 * time.Second
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 1024
	}
	if opts.Bucket == "" {
		opts.Bucket = "caller"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ob, err := outbox.New(db, outbox.Opts{Bucket: opts.Bucket + "-outbox"})
	if err != nil {
		return nil, err
	}
	c := &Client{db: db, ob: ob, opts: opts, log: opts.Logger, name: []byte(opts.Bucket),
		pending: map[string]*Task{}, sessions: map[uuid.UUID]*session{}, requests: map[string]chan *wire.Envelope{}}
	c.dec, _ = wire.NewDecoder(wire.DefaultOpts())
	if err := db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(c.name)
		if err != nil {
			return err
		}
		_, err = root.CreateBucketIfNotExists(bucketSessions)
		return err
	}); err != nil {
		return nil, fmt.Errorf("caller: state bucket: %w", err)
	}
	c.sup, err = tamqp.NewSupervisor(ob, tamqp.SupervisorOpts{
		URL: opts.URL, URLs: opts.URLs, TLS: opts.TLS, Backoff: opts.Backoff, Logger: opts.Logger, Heartbeat: opts.Heartbeat,
		ConnectionName: "hcp-caller " + opts.CallerID,
		DeclareConn: func(conn *amqp091.Connection) error {
			outs, err := tamqp.DeclareCallerTopology(conn, tamqp.CallerQueueOpts{CallerID: opts.CallerID,
				MessageTTL: opts.MessageTTL, MaxLength: opts.MaxLength, Quorum: !opts.ClassicQueue})
			if err != nil {
				return err
			}
			for _, o := range outs {
				switch {
				case o.Existing && !c.reusedQueue.Swap(true):
					c.log.Warn("caller: the event queue exists with other arguments: using it as it is (passive declare)",
						"queue", o.Queue, "broker", o.Reason)
				case !opts.ClassicQueue && o.Type == tamqp.QueueTypeClassic:
					c.log.Warn("caller: the broker cannot declare a quorum queue: using a classic queue", "queue", o.Queue, "broker", o.Reason)
				}
			}
			return nil
		},
		Workers: []tamqp.Worker{c.consume},
	})
	if err != nil {
		return nil, err
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if err := c.sup.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

// Supervisor returns the connection supervisor (state, WaitConnected).
func (c *Client) Supervisor() *tamqp.Supervisor { return c.sup }

// Stats returns the counters.
func (c *Client) Stats() Stats {
	return Stats{Delivered: c.delivered.Load(), Duplicates: c.duplicates.Load(), Reordered: c.reordered.Load(),
		Skipped: c.skipped.Load(), Invalid: c.invalid.Load(), Resubmits: c.resubmits.Load(), PropertyViolations: c.violations.Load(),
		Forged: c.forged.Load(), ReusedQueue: c.reusedQueue.Load()}
}

// Close stops resubmitting, consuming and publishing, and waits. Open tasks'
// channels are closed without a final message.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	err := c.sup.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	done := map[*Task]bool{}
	for _, t := range c.pending {
		done[t] = true
	}
	for _, s := range c.sessions {
		if s.task != nil {
			done[s.task] = true
		}
	}
	for t := range done {
		t.finish(nil)
	}
	c.ob.Close()
	return err
}

// Submit builds a task_submit for ts (caller_id set to the client's),
// appends it to the client's durable outbox and republishes it with the same
// message_id every ResubmitInterval until task_accepted or task_rejected
// arrives (matched through the hcp-in-reply-to header).
func (c *Client) Submit(ctx context.Context, ts *wire.TaskSubmit) (*Task, error) {
	return c.SubmitTo(ctx, c.opts.CalleeID, ts)
}

// SubmitTo is Submit to another callee than Opts.CalleeID: one caller
// drives a fleet of rigs, each by its callee_id, over one event queue.
func (c *Client) SubmitTo(ctx context.Context, calleeID string, ts *wire.TaskSubmit) (*Task, error) {
	if err := wire.CheckID(calleeID); err != nil {
		return nil, fmt.Errorf("caller: callee_id: %w", err)
	}
	p := *ts
	p.CallerID = c.opts.CallerID
	env, err := wire.NewEnvelope(nil, &p, time.Now())
	if err != nil {
		return nil, fmt.Errorf("caller: task_submit: %w", err)
	}
	m, err := outbox.CommandFor(calleeID, env)
	if err != nil {
		return nil, fmt.Errorf("caller: task_submit: %w", err)
	}
	t := newTask(m.MessageID, c.opts.Buffer)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.pending[m.MessageID] = t
	c.wg.Add(1)
	c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		c.wg.Done()
		return nil, err
	}
	if _, err := c.ob.Append(m); err != nil {
		c.mu.Lock()
		delete(c.pending, m.MessageID)
		c.mu.Unlock()
		c.wg.Done()
		return nil, fmt.Errorf("caller: %w", err)
	}
	go c.resubmit(t, m)
	return t, nil
}

// resubmit republishes m until t is answered or the client closes.
func (c *Client) resubmit(t *Task, m outbox.Message) {
	defer c.wg.Done()
	tk := time.NewTicker(c.opts.ResubmitInterval)
	defer tk.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.done:
			return
		case <-tk.C:
		}
		t.mu.Lock()
		answered := t.answered
		t.mu.Unlock()
		if answered {
			return
		}
		m.CreatedUnixNano = 0
		if _, err := c.ob.Append(m); err != nil {
			c.log.Warn("caller: resubmit", "message_id", m.MessageID, "err", err)
			continue
		}
		c.resubmits.Add(1)
		c.log.Info("caller: task_submit republished", "message_id", m.MessageID)
	}
}

// Watch returns a Task receiving the messages of a session submitted
// earlier (after a restart); processing resumes after its durable
// last_processed_sequence.
func (c *Client) Watch(sessionID uuid.UUID) *Task {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessionLocked(sessionID)
	if s.task == nil {
		s.task = newTask("", c.opts.Buffer)
		s.task.answered = true
		s.task.session = sessionID
		if s.rec.Done {
			s.task.finish(nil)
		}
	}
	return s.task
}

// sessionLocked returns the in-memory state of id, loading its durable
// record on first use. c.mu is held.
func (c *Client) sessionLocked(id uuid.UUID) *session {
	if s := c.sessions[id]; s != nil {
		return s
	}
	s := &session{id: id, ahead: map[uint64]held{}, seen: map[string]bool{}}
	_ = c.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(c.name).Bucket(bucketSessions).Get([]byte(id.String())); v != nil {
			return json.Unmarshal(v, &s.rec)
		}
		return nil
	})
	c.sessions[id] = s
	return s
}

func (c *Client) save(s *session) error {
	v, _ := json.Marshal(s.rec)
	return c.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(c.name).Bucket(bucketSessions).Put([]byte(s.id.String()), v)
	})
}

// consume is the Supervisor worker reading hcp.evt.{caller_id}.
func (c *Client) consume(ctx context.Context, conn *amqp091.Connection) error {
	q, _ := wire.EventQueue(c.opts.CallerID)
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("caller: channel: %w", err)
	}
	defer ch.Close()
	defer c.dropHeld() // their tags die with the channel; the broker redelivers
	if err := ch.Qos(c.opts.Prefetch, 0, false); err != nil {
		return fmt.Errorf("caller: qos: %w", err)
	}
	ds, err := ch.ConsumeWithContext(ctx, q, "", false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("caller: consume %s: %w", q, err)
	}
	tick := time.NewTicker(max(c.opts.GapTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if err := c.checkGaps(ctx); err != nil {
				return err
			}
		case d, ok := <-ds:
			if !ok {
				return errors.New("caller: deliveries ended")
			}
			if err := c.process(ctx, d); err != nil {
				return err
			}
		}
	}
}

// publisher names a delivery's user_id for the log.
func publisher(userID string) string {
	if userID == "" {
		return "(no user_id: publisher unknown)"
	}
	return userID
}

func (c *Client) dropHeld() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sessions {
		s.ahead = map[uint64]held{}
		s.terminal = nil
		s.gapSince = time.Time{}
	}
}

// process handles one delivery. An error ends the worker (the Supervisor
// reconnects; unacked deliveries come back).
func (c *Client) process(ctx context.Context, d amqp091.Delivery) error {
	if c.opts.Tap != nil {
		c.opts.Tap(d)
	}
	// Only the callee publishes onto hcp.events on a provisioned broker, but
	// a broker with broader grants (or another exchange bound to the queue)
	// could carry anyone's message: trust none but the callee's login.
	if d.UserId != c.opts.CalleeUser && !slices.Contains(c.opts.CalleeUsers, d.UserId) {
		c.forged.Add(1)
		c.log.Warn("caller: delivery not published by the callee dropped", "publisher", publisher(d.UserId),
			"want", c.opts.CalleeUser, "routing_key", d.RoutingKey, "exchange", d.Exchange, "type", d.Type, "message_id", d.MessageId)
		return d.Ack(false)
	}
	env, err := c.dec.Decode(d.Body)
	if err == nil {
		err = wire.CheckProperties(wire.Properties{ContentType: d.ContentType, ContentEncoding: d.ContentEncoding,
			MessageID: d.MessageId, CorrelationID: d.CorrelationId, Type: d.Type}, env)
	}
	if err == nil && env.Type.IsCommand() {
		err = errors.New("a command on the event queue")
	}
	if err != nil {
		c.invalid.Add(1)
		c.log.Warn("caller: invalid delivery dropped", "routing_key", d.RoutingKey, "err", err)
		return d.Ack(false)
	}
	if key, _ := wire.EventRoutingKey(c.opts.CallerID, env); d.RoutingKey != key || d.DeliveryMode != wire.DeliveryMode || d.ContentEncoding != wire.ContentEncoding {
		c.violations.Add(1)
		c.log.Warn("caller: delivery deviates from L1", "routing_key", d.RoutingKey, "want", key, "delivery_mode", d.DeliveryMode, "content_encoding", d.ContentEncoding)
	}
	if c.ctl.answer(env, d) { // a refusal of a control command (handoff.go)
		return d.Ack(false)
	}
	if env.Type.IsResponse() || env.Type == wire.TypeTaskRejected && c.answersRequest(d) {
		return c.response(env, d)
	}
	switch env.Type {
	case wire.TypeTaskAccepted, wire.TypeTaskRejected:
		return c.answer(ctx, env, d)
	case wire.TypeEvent:
		return c.event(ctx, env, d)
	default: // task_completed, task_failed
		return c.terminalMsg(ctx, env, d)
	}
}

func (c *Client) answer(ctx context.Context, env *wire.Envelope, d amqp091.Delivery) error {
	irt, _ := d.Headers[wire.HeaderInReplyTo].(string)
	irt = strings.ToLower(irt)
	c.mu.Lock()
	t := c.pending[irt]
	if t != nil {
		delete(c.pending, irt)
	}
	var s *session
	if t != nil && env.Type == wire.TypeTaskAccepted {
		s = c.sessionLocked(*env.SessionID)
		if s.task == nil {
			s.task = t
		}
	}
	c.mu.Unlock()
	if t == nil {
		// A second answer (a republished submit was answered again) or one for
		// a submit this client does not know.
		c.duplicates.Add(1)
		if env.Type == wire.TypeTaskAccepted && env.SessionID != nil {
			c.mu.Lock()
			_, known := c.sessions[*env.SessionID]
			c.mu.Unlock()
			if !known && c.opts.Unclaimed != nil {
				c.opts.Unclaimed(env)
			}
		}
		return d.Ack(false)
	}
	t.mu.Lock()
	t.answered = true
	if env.Type == wire.TypeTaskAccepted {
		t.session = *env.SessionID
	}
	t.mu.Unlock()
	if s != nil {
		if err := c.save(s); err != nil {
			return err
		}
	}
	if err := c.send(ctx, t, env); err != nil {
		return err
	}
	if env.Type == wire.TypeTaskRejected {
		t.finish(env)
	}
	return d.Ack(false)
}

// send hands env to t in order (blocking while t's channel is full).
func (c *Client) send(ctx context.Context, t *Task, env *wire.Envelope) error {
	if t == nil {
		if c.opts.Unclaimed != nil {
			c.opts.Unclaimed(env)
		} else {
			c.log.Info("caller: message of an unwatched session dropped", "session_id", env.SessionID, "type", env.Type)
		}
		c.delivered.Add(1)
		return nil
	}
	select {
	case t.ch <- env:
		c.delivered.Add(1)
		return nil
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isTerminalEvent: session_closed with final_state ABORTED ends the stream
// (L2's abort protocol has no task_failed).
func isTerminalEvent(ev *wire.Event) bool {
	if ev.EventType != wire.EventSessionClosed {
		return false
	}
	var data struct {
		FinalState string `json:"final_state"`
	}
	_ = json.Unmarshal(ev.Data, &data)
	return strings.EqualFold(data.FinalState, "ABORTED")
}

func (c *Client) event(ctx context.Context, env *wire.Envelope, d amqp091.Delivery) error {
	ev, err := env.Event()
	if err != nil {
		c.invalid.Add(1)
		return d.Ack(false)
	}
	c.mu.Lock()
	s := c.sessionLocked(*env.SessionID)
	c.adoptLocked(s, ev) // handed to this caller: its stream starts here (handoff.go)
	switch {
	case s.rec.Done || ev.Sequence <= s.rec.Last:
		c.mu.Unlock()
		c.duplicates.Add(1)
		return d.Ack(false)
	case ev.Sequence > s.rec.Last+1:
		if _, dup := s.ahead[ev.Sequence]; dup {
			c.mu.Unlock()
			c.duplicates.Add(1)
			return d.Ack(false)
		}
		s.ahead[ev.Sequence] = held{env, d}
		if s.gapSince.IsZero() {
			s.gapSince = time.Now()
		}
		c.mu.Unlock()
		c.reordered.Add(1)
		return nil // acked once delivered
	}
	c.mu.Unlock()
	return c.deliverRun(ctx, s, held{env, d})
}

// deliverRun delivers h (the next sequence) and every buffered successor,
// then a waiting terminal message when no gap remains.
func (c *Client) deliverRun(ctx context.Context, s *session, h held) error {
	for {
		ev, _ := h.env.Event()
		if err := c.send(ctx, s.task, h.env); err != nil {
			return err
		}
		c.mu.Lock()
		s.rec.Last = ev.Sequence
		end := isTerminalEvent(ev)
		if end {
			s.rec.Done = true
		}
		c.mu.Unlock()
		if err := c.save(s); err != nil {
			return err
		}
		if err := h.d.Ack(false); err != nil {
			return err
		}
		if end {
			c.end(s, h.env)
			return nil
		}
		c.mu.Lock()
		next, ok := s.ahead[s.rec.Last+1]
		if ok {
			delete(s.ahead, s.rec.Last+1)
		}
		if len(s.ahead) == 0 {
			s.gapSince = time.Time{}
		}
		term := s.terminal
		if !ok && len(s.ahead) == 0 && term != nil {
			s.terminal = nil
		} else {
			term = nil
		}
		c.mu.Unlock()
		if ok {
			h = next
			continue
		}
		if term != nil {
			return c.finishSession(ctx, s, *term)
		}
		return nil
	}
}

func (c *Client) terminalMsg(ctx context.Context, env *wire.Envelope, d amqp091.Delivery) error {
	c.mu.Lock()
	s := c.sessionLocked(*env.SessionID)
	if s.rec.Done || s.seen[env.MessageID.String()] || s.terminal != nil {
		c.mu.Unlock()
		c.duplicates.Add(1)
		return d.Ack(false)
	}
	if len(s.ahead) > 0 { // events missing before it: wait for the gap
		s.terminal = &held{env, d}
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	return c.finishSession(ctx, s, held{env, d})
}

func (c *Client) finishSession(ctx context.Context, s *session, h held) error {
	if err := c.send(ctx, s.task, h.env); err != nil {
		return err
	}
	c.mu.Lock()
	s.rec.Done = true
	s.seen[h.env.MessageID.String()] = true
	c.mu.Unlock()
	if err := c.save(s); err != nil {
		return err
	}
	if err := h.d.Ack(false); err != nil {
		return err
	}
	c.end(s, h.env)
	return nil
}

func (c *Client) end(s *session, final *wire.Envelope) {
	if s.task != nil {
		s.task.finish(final)
	}
	c.mu.Lock()
	for _, h := range s.ahead { // events after the end: nothing to deliver
		h.d.Ack(false)
	}
	s.ahead = map[uint64]held{}
	c.mu.Unlock()
}

// checkGaps skips gaps older than GapTimeout.
func (c *Client) checkGaps(ctx context.Context) error {
	now := time.Now()
	c.mu.Lock()
	var due []*session
	for _, s := range c.sessions {
		if len(s.ahead) > 0 && !s.gapSince.IsZero() && now.Sub(s.gapSince) >= c.opts.GapTimeout {
			due = append(due, s)
		}
	}
	c.mu.Unlock()
	for _, s := range due {
		c.mu.Lock()
		seqs := make([]uint64, 0, len(s.ahead))
		for q := range s.ahead {
			seqs = append(seqs, q)
		}
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		first := seqs[0]
		h := s.ahead[first]
		delete(s.ahead, first)
		missing := first - s.rec.Last - 1
		s.gapSince = time.Time{}
		if len(s.ahead) > 0 {
			s.gapSince = now
		}
		c.mu.Unlock()
		c.skipped.Add(missing)
		c.log.Warn("caller: sequence gap skipped", "session_id", s.id, "missing", missing, "resume_at", first)
		if err := c.deliverRun(ctx, s, h); err != nil {
			return err
		}
	}
	return nil
}
