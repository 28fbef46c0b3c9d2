package uplink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/internal/diskspace"
	"hcp-edge/internal/wallclock"
	"hcp-edge/session/atrest"
	"hcp-edge/session/engine"
	"hcp-edge/session/gate"
	"hcp-edge/session/store"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// outboxFile is the uplink's own bbolt file of earlier versions (the outbox
// and the inbox's de-duplication window beside state.db): migrateOutboxFile
// merges it into the state file at start.
const outboxFile = "outbox.db"

// outboxBucket is the outbox's bucket in the state file; the inbox's window
// is inboxBucket.
const (
	outboxBucket = "uplink-outbox"
	inboxBucket  = "inbox"
)

// MigrateOutboxFile merges an outbox.db left by an earlier version (its
// waiting messages, their keys, the de-duplication window) into the state
// file in one transaction, then renames it outbox.db.migrated. A crash in
// between is harmless: the state file remembers the import and the next
// start only renames.
func MigrateOutboxFile(stateDir string, st *store.Store, log *slog.Logger) error {
	path := filepath.Join(stateDir, outboxFile)
	done, err := st.Import(path, outboxBucket, inboxBucket)
	if err != nil {
		return fmt.Errorf("%w (stop every hcp-edge using %s; to start without the old messages instead, move %s aside)", err, stateDir, path)
	}
	if !done {
		return nil
	}
	if err := os.Rename(path, path+".migrated"); err != nil {
		return fmt.Errorf("migrated %s into the state file but cannot rename it: %w", path, err)
	}
	log.Warn("migrated the outbox file of an earlier version into the state file", "from", path, "kept_as", path+".migrated")
	return nil
}

// Uplink is the daemon's HCP uplink (agent.amqp): the durable outbox in the
// state file (the store's Queue: every message is queued in the
// transaction that records its step), the Supervisor that drains it to the
// broker and runs the command inbox, and the inbox's Engine adapter. A nil
// *Uplink (no URL configured) is valid and does nothing.
//
// Start order: New before the engine (the store's Queue and the gate's
// Protection need it), Attach once the engine exists, ServeExtensions,
// Start after the control socket. Stop order: StopIntake (no new
// commands), then the engine, then Close (flush within
// agent.amqp.flush_timeout, close).
type Uplink struct {
	cfg   rigconfig.AMQP
	ob    *outbox.Outbox
	sup   *tamqp.Supervisor
	inbox *tamqp.Inbox
	st    *store.Store
	eng   *engine.Engine
	clock *wallclock.Clock // the agent's process clock: the inbox's de-dup window
	log   *slog.Logger
	ext   *extensions        // discovery and artifact fetch (discovery.go, artifactfetch.go)
	disk  *diskspace.Watcher // the state directory's free space; nil: none

	mu       sync.Mutex
	stopped  bool                       // intake stopped
	inflight int                        // commands being handled
	cancels  map[int]context.CancelFunc // running inbox workers
	nextID   int                        // key of cancels
	dropStop context.CancelFunc         // stops the dropped-telemetry reporter (dropreport.go)
	dropDone chan struct{}              // closed when it has stopped
	closeMu  sync.Once
	closeEr  error
}

// New opens the outbox in the state file, makes it the store's Queue
// and makes the (stopped) Supervisor, or returns nil when no URL is
// configured. disk (nil: none) pauses command intake while the state
// directory is short of space; a local write failure of the state file is
// never taken for a broker fault (no reconnect). clock is the agent's
// process clock (the inbox stamps and ages its de-duplication window by it).
func New(f rigconfig.File, st *store.Store, disk *diskspace.Watcher, clock *wallclock.Clock, log *slog.Logger) (*Uplink, error) {
	c := f.Agent.AMQP
	if len(c.URLs) == 0 && c.URL == "" {
		log.Info("no broker configured (agent.amqp.url or urls, HCP_AMQP_URL or HCP_AMQP_URLS): local control socket only")
		return nil, nil
	}
	oo := outbox.DefaultOpts()
	oo.Bucket = outboxBucket
	oo.TelemetryBound = c.TelemetryBound
	oo.Sealer = sealer{st} // T3/T4 messages wait sealed under the store's at-rest key (seal.go)
	ob, err := outbox.New(st.DB(), oo)
	if err != nil {
		return nil, fmt.Errorf("uplink outbox: %w", err)
	}
	u := &Uplink{cfg: c, ob: ob, st: st, disk: disk, clock: clock, log: log.With("component", "uplink"),
		cancels: map[int]context.CancelFunc{}}
	po := tamqp.DefaultPublisherOpts()
	po.LocalError = u.localError
	u.sup, err = tamqp.NewSupervisor(ob, tamqp.SupervisorOpts{
		URL:       c.URL,
		URLs:      c.URLs,
		TLS:       tamqp.TLSConfig{CAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile},
		Heartbeat: c.Heartbeat,
		Backoff:   tamqp.DefaultBackoff(),
		// Quorum command queue with a delivery limit and a dead-letter queue;
		// an existing queue of another type is used as it is (logged).
		DeclareConn: tamqp.CalleeDeclarer(tamqp.TopologyOpts{CalleeID: c.CalleeID, Quorum: c.QuorumQueues(),
			DeliveryLimit: c.DeliveryLimit, DeadLetter: true}, log.With("component", "uplink")),
		Workers:        []tamqp.Worker{u.runInbox},
		Publisher:      po,
		ConnectionName: "hcp-edge " + c.CalleeID,
		Logger:         u.log,
	})
	if err != nil {
		_ = ob.Close()
		return nil, fmt.Errorf("uplink: %w", err)
	}
	return u, nil
}

// ProtectionOf is what the agent offers T3/T4 data: TLS in transit when
// the uplink is over amqps, and the at-rest key of agent.at_rest_key_file.
// The gate admits T3/T4 only with both.
func ProtectionOf(u *Uplink, key *atrest.Key) gate.Protection {
	p := gate.Protection{AtRestKey: key != nil}
	if u != nil {
		p.UplinkTLS = u.sup.Secure()
	}
	return p
}

// QueueTx is the store's Queue: it appends msgs to the outbox inside tx,
// the store's transaction (protocol or telemetry class as transport/outbox
// files it; those of T3/T4 sessions sealed, seal.go). The local operator's own sessions (caller "local") have no
// broker queue and stay local.
func (u *Uplink) QueueTx(tx *bolt.Tx, msgs []store.Message) error {
	ms := make([]outbox.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.CallerID == rigconfig.LocalUser {
			continue
		}
		om, err := outbox.MessageFor(m.CallerID, m.Envelope, m.InReplyTo)
		if err != nil {
			return fmt.Errorf("uplink: %s %s: %w", m.Envelope.Type, m.Envelope.MessageID, err)
		}
		// The engine's own words about a T3/T4 session it cannot open
		// (recovered without the key) wait in the clear when there is no
		// key; with one, they are sealed as every message of the session.
		om.Clear = m.Unsealed && u.st.AtRest() == nil
		ms = append(ms, om)
	}
	if len(ms) == 0 {
		return nil
	}
	_, err := u.ob.AppendTx(tx, ms...)
	return err
}

// Attach hands the command inbox the engine; call it before Start. burst
// (nil: none) is told the size of every group of commands the inbox
// decides together (tamqp.InboxOpts.Burst).
func (u *Uplink) Attach(f rigconfig.File, eng *engine.Engine, burst func(n int)) error {
	if u == nil {
		return nil
	}
	u.eng = eng
	users := f.Gate.BrokerUsers
	in, err := tamqp.NewInbox(u.st.DB(), u.ob, tamqp.EngineFunc(u.handle), tamqp.InboxOpts{
		CalleeID: u.cfg.CalleeID,
		Bucket:   inboxBucket,
		Prefetch: u.cfg.Prefetch,
		// The broker login → caller id mapping of the gate. The local
		// operator's identity is never granted to a broker login.
		CallerOf: func(user string) (string, bool) {
			c, ok := users[user]
			if !ok || user == rigconfig.LocalUser || c == rigconfig.LocalUser {
				return "", false
			}
			return c, true
		},
		// A refused extension request is audited with its answer
		// (refusalaudit.go).
		Refused: u.auditRefusal,
		// A full state directory pauses intake (the consumer is cancelled,
		// commands wait in their queue); a local write failure holds the
		// delivery unacked until space returns (never a reconnect).
		Intake:     u.intake(),
		LocalError: u.localError,
		Burst:      burst,
		Logger:     u.log,
		Clock:      u.clock,
	})
	if err != nil {
		return fmt.Errorf("uplink inbox: %w", err)
	}
	u.inbox = in
	return nil
}

// intake is the inbox's Intake: the disk watcher, or none.
func (u *Uplink) intake() tamqp.Intake {
	if u.disk == nil {
		return nil
	}
	return u.disk
}

// localError reports whether err is a local write failure of the state
// file and tells the disk watcher (which raises the alarm and releases the
// reserve).
func (u *Uplink) localError(err error) bool {
	if !diskspace.LocalWriteError(err) {
		return false
	}
	u.disk.Failed(err) // a nil watcher does nothing
	return true
}

// Start starts the Supervisor: it connects (retrying with backoff, logging
// each attempt), drains the outbox and runs the inbox.
func (u *Uplink) Start() error {
	if u == nil {
		return nil
	}
	if u.inbox == nil {
		return errors.New("uplink: Start before attach")
	}
	if err := u.sup.Start(); err != nil {
		return err
	}
	dctx, cancel := context.WithCancel(context.Background())
	u.dropStop, u.dropDone = cancel, make(chan struct{})
	r := &dropReporter{ob: u.ob, w: u.eng, log: u.log, every: dropReportEvery}
	go func() { defer close(u.dropDone); r.run(dctx) }()
	u.log.Info("uplink started", "broker", u.cfg.RedactedURL(), "callee_id", u.cfg.CalleeID, "tls", u.sup.Secure(),
		"backlog", u.backlog())
	return nil
}

func (u *Uplink) backlog() int {
	n, _ := u.ob.Depth()
	return n
}

// runInbox is the inbox Worker: it consumes until the connection ends or
// intake stops; after stopIntake it idles on the connection (a Worker that
// returns makes the Supervisor reconnect) so the outbox keeps draining.
func (u *Uplink) runInbox(ctx context.Context, conn *amqp091.Connection) error {
	u.mu.Lock()
	if u.stopped {
		u.mu.Unlock()
		<-ctx.Done()
		return ctx.Err()
	}
	ictx, cancel := context.WithCancel(ctx)
	id := u.nextID
	u.nextID++
	u.cancels[id] = cancel
	u.mu.Unlock()
	err := u.inbox.Run(ictx, conn)
	u.mu.Lock()
	delete(u.cancels, id)
	stopped := u.stopped
	u.mu.Unlock()
	cancel()
	if ctx.Err() == nil && stopped {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

// intakeStopWait bounds stopIntake's wait for a command being handled.
const intakeStopWait = 5 * time.Second

// StopIntake stops consuming commands and waits, bounded by ctx and
// intakeStopWait, until no command is being handled. Deliveries the broker
// had already sent stay unacked and go back to the queue when the
// connection closes. It does not wait for Inbox.Run to return: its channel
// Close can stall when its context ends on a live connection (a race in
// amqp091-go between ConsumeWithContext's basic.cancel and channel.close)
// until the connection closes.
func (u *Uplink) StopIntake(ctx context.Context) {
	if u == nil {
		return
	}
	u.mu.Lock()
	was := u.stopped
	u.stopped = true
	for _, c := range u.cancels {
		c()
	}
	u.mu.Unlock()
	if was {
		return
	}
	deadline := time.Now().Add(intakeStopWait)
	for {
		u.mu.Lock()
		n := u.inflight
		u.mu.Unlock()
		if n == 0 || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	u.log.Info("uplink intake stopped")
}

// Close flushes what the broker will take within agent.amqp.flush_timeout
// (only while connected), stops the Supervisor and closes the outbox (not
// the state file). What is left waits for the next start.
// Safe to call more than once.
func (u *Uplink) Close() error {
	if u == nil {
		return nil
	}
	u.closeMu.Do(func() {
		u.StopIntake(context.Background())
		if u.ext != nil {
			u.ext.previews.close() // its answer is queued before the flush
		}
		t0 := time.Now()
		deadline := t0.Add(u.cfg.FlushTimeout)
		for u.backlog() > 0 && u.sup.State().Connected && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if u.dropStop != nil {
			u.dropStop()
			<-u.dropDone
		}
		left := u.backlog()
		err := u.sup.Close()
		if left > 0 {
			u.log.Warn("uplink closed with messages waiting in the outbox (sent at the next start)", "backlog", left, "flush", time.Since(t0).Round(time.Millisecond))
		} else {
			u.log.Info("uplink closed, outbox empty", "flush", time.Since(t0).Round(time.Millisecond))
		}
		u.closeEr = errors.Join(err, u.ob.Close())
	})
	return u.closeEr
}

// handle is the inbox's Engine: task_submit goes to engine.Submit, abort to
// engine.Abort, the extension requests to capabilities and fetchArtifact.
func (u *Uplink) handle(ctx context.Context, cmd tamqp.Command) (tamqp.Outcome, error) {
	u.mu.Lock()
	u.inflight++
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		u.inflight--
		u.mu.Unlock()
	}()
	switch cmd.Envelope.Type {
	case wire.TypeTaskSubmit:
		return u.submit(ctx, cmd)
	case wire.TypeAbort:
		return tamqp.Outcome{}, u.abort(ctx, cmd)
	case wire.TypeSessionHandoff:
		return u.handoff(ctx, cmd)
	case wire.TypeCapabilitiesRequest:
		return u.capabilities(ctx, cmd) // discovery.go
	case wire.TypeArtifactRequest:
		return u.fetchArtifact(ctx, cmd) // artifactfetch.go
	case wire.TypePreviewRequest:
		return u.previewRequest(ctx, cmd) // preview.go
	}
	return tamqp.Outcome{}, fmt.Errorf("uplink: unexpected command %s", cmd.Envelope.Type)
}

// submit decides a task_submit inside the inbox's transaction: the
// engine's decision, its audit, the session and its acceptance, the replies
// and the de-duplication entry commit together, and only then is the
// command acked. The engine hands the replies to the local watchers and
// starts the session once that transaction has committed; if it rolls
// back, nothing happened and the command is delivered again.
func (u *Uplink) submit(ctx context.Context, cmd tamqp.Command) (tamqp.Outcome, error) {
	mid := cmd.Envelope.MessageID.String()
	return tamqp.Outcome{Record: func(tx *bolt.Tx) ([]tamqp.Reply, error) {
		w, err := u.st.Bind(tx)
		if err != nil {
			return nil, err
		}
		res, err := u.eng.SubmitTx(ctx, w, engine.SubmitRequest{MessageID: mid, BrokerUser: cmd.UserID, Envelope: cmd.Envelope})
		if err != nil {
			return nil, err
		}
		out := make([]tamqp.Reply, 0, len(res.Replies))
		for _, r := range res.Replies {
			out = append(out, tamqp.Reply{CallerID: cmd.CallerID, Envelope: r})
		}
		u.log.Info("broker submit", "message_id", mid, "user", cmd.UserID, "caller", cmd.CallerID, "session", res.SessionID,
			"replies", len(res.Replies))
		return out, nil
	}}, nil
}

// abort handles a caller's abort of one of its own sessions. L1 has no
// reply to an abort: an abort of an unknown session, of another caller's,
// or in a state that allows none is logged and acknowledged.
func (u *Uplink) abort(ctx context.Context, cmd tamqp.Command) error {
	sid := cmd.Envelope.SessionID.String()
	reason := "aborted by caller " + cmd.CallerID
	if a, err := cmd.Envelope.Abort(); err == nil && a.Reason != "" {
		reason += ": " + a.Reason
	}
	s, err := u.st.Session(ctx, sid)
	switch {
	case errors.Is(err, store.ErrNotFound):
		u.log.Warn("abort of an unknown session ignored", "session", sid, "user", cmd.UserID)
		return nil
	case err != nil:
		return err
	case cmd.MappedCallerID == "" || s.CallerID != cmd.MappedCallerID:
		return u.refuseControl(ctx, cmd, "abort") // handoff.go: audited; a former owner is answered
	}
	err = u.eng.Abort(ctx, sid, reason)
	if errors.Is(err, engine.ErrNotFound) || errors.Is(err, engine.ErrState) {
		u.log.Warn("abort ignored", "session", sid, "user", cmd.UserID, "err", err)
		return nil
	}
	if err == nil {
		u.log.Warn("session abort", "session", sid, "user", cmd.UserID, "reason", reason)
	}
	return err
}

// Status reports the uplink for status --json (nil without an uplink).
func (u *Uplink) Status() *reply.Uplink {
	if u == nil {
		return nil
	}
	s := u.sup.State()
	out := &reply.Uplink{Broker: u.cfg.RedactedURL(), Endpoint: s.Endpoint, Connected: s.Connected, Blocked: s.Blocked, TLS: s.TLS,
		Backlog: s.Backlog, Telemetry: s.Telemetry, LastError: s.LastError}
	if s.OldestAge > 0 {
		out.OldestAge = s.OldestAge.Round(time.Millisecond).String()
	}
	return out
}
