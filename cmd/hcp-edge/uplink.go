package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/rabbitmq/amqp091-go"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"github.com/hcp-edge/hcp-edge/session/atrest"
	"github.com/hcp-edge/hcp-edge/session/engine"
	"github.com/hcp-edge/hcp-edge/session/gate"
	"github.com/hcp-edge/hcp-edge/session/store"
	tamqp "github.com/hcp-edge/hcp-edge/transport/amqp"
	"github.com/hcp-edge/hcp-edge/transport/outbox"
	"github.com/hcp-edge/hcp-edge/transport/wire"
)

// outboxFile is the uplink's bbolt file in the state directory: the durable
// outbox and the command inbox's de-duplication window. (session/store does
// not hand out its *bolt.DB, so the uplink keeps a file of its own.)
const outboxFile = "outbox.db"

// outboxBucket is the outbox's bucket; the inbox's window is "inbox".
const outboxBucket = "uplink-outbox"

// uplink is the daemon's HCP uplink (agent.amqp): the durable outbox every
// outbound message is appended to, the Supervisor that drains it to the
// broker and runs the command inbox, and the inbox's Engine adapter. A nil
// *uplink (no URL configured) is valid: it publishes locally only and
// does nothing else.
//
// Start order: newUplink before the engine (the engine's Outbound and the
// gate's Protection need it), attach once the engine exists, Start after
// the control socket. Stop order: stopIntake (no new commands), then the
// engine, then close (flush within agent.amqp.flush_timeout, close).
type uplink struct {
	cfg   rigconfig.AMQP
	ob    *outbox.Outbox
	sup   *tamqp.Supervisor
	inbox *tamqp.Inbox
	st    *store.Store
	local engine.Outbound
	eng   *engine.Engine
	log   *slog.Logger

	mu       sync.Mutex
	stopped  bool                       // intake stopped
	inflight int                        // commands being handled
	cancels  map[int]context.CancelFunc // running inbox workers
	nextID   int                        // key of cancels
	pending  map[string]func()          // submit message_id → Discard of replies not yet committed
	dropStop context.CancelFunc         // stops the dropped-telemetry reporter (dropreport.go)
	dropDone chan struct{}              // closed when it has stopped
	closeMu  sync.Once
	closeEr  error
}

// newUplink opens the outbox and makes the (stopped) Supervisor, or returns
// nil when no URL is configured. local receives every message too (the
// control socket's watchers).
func newUplink(f rigconfig.File, st *store.Store, local engine.Outbound, log *slog.Logger) (*uplink, error) {
	c := f.Agent.AMQP
	if len(c.URLs) == 0 && c.URL == "" {
		log.Info("no broker configured (agent.amqp.url or urls, HCP_AMQP_URL or HCP_AMQP_URLS): local control socket only")
		return nil, nil
	}
	oo := outbox.DefaultOpts()
	oo.Bucket = outboxBucket
	oo.TelemetryBound = c.TelemetryBound
	ob, err := outbox.Open(filepath.Join(f.Agent.StateDir, outboxFile), oo)
	if err != nil {
		return nil, fmt.Errorf("uplink outbox: %w", err)
	}
	u := &uplink{cfg: c, ob: ob, st: st, local: local, log: log.With("component", "uplink"),
		cancels: map[int]context.CancelFunc{}, pending: map[string]func(){}}
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
		Publisher:      tamqp.DefaultPublisherOpts(),
		ConnectionName: "hcp-edge " + c.CalleeID,
		Logger:         u.log,
	})
	if err != nil {
		_ = ob.Close()
		return nil, fmt.Errorf("uplink: %w", err)
	}
	return u, nil
}

// outbound is the engine's Outbound: the uplink's fan-out, or local alone
// without an uplink.
func (u *uplink) outbound(local engine.Outbound) engine.Outbound {
	if u == nil {
		return local
	}
	return u
}

// protectionOf is what the agent offers T3/T4 data: TLS in transit when
// out is an uplink over amqps, and the at-rest key of
// agent.at_rest_key_file. The gate admits T3/T4 only with both.
func protectionOf(out engine.Outbound, key *atrest.Key) gate.Protection {
	p := gate.Protection{AtRestKey: key != nil}
	if u, ok := out.(*uplink); ok && u != nil {
		p.UplinkTLS = u.sup.Secure()
	}
	return p
}

// Publish appends env to the durable outbox (protocol or telemetry class
// as transport/outbox files it), then hands it to the local watchers. The
// local operator's own sessions (caller "local") have no broker queue and
// stay local. task_accepted and task_rejected of a session (after an
// approval, a denial, an approval timeout) carry the submit's message_id
// in hcp-in-reply-to, as the inbox's own answers do.
func (u *uplink) Publish(ctx context.Context, callerID string, env *wire.Envelope) error {
	var err error
	if callerID != rigconfig.LocalUser {
		irt := ""
		if (env.Type == wire.TypeTaskAccepted || env.Type == wire.TypeTaskRejected) && env.SessionID != nil {
			if s, serr := u.st.Session(ctx, env.SessionID.String()); serr == nil {
				irt = s.RequestID
			}
		}
		var m outbox.Message
		if m, err = outbox.MessageFor(callerID, env, irt); err == nil {
			_, err = u.ob.Append(m)
		}
		if err != nil {
			err = fmt.Errorf("uplink: outbox: %w", err)
			u.log.Error("message not queued for the broker", "type", env.Type, "message_id", env.MessageID, "caller", callerID, "err", err)
		}
	}
	return errors.Join(err, u.local.Publish(ctx, callerID, env))
}

// attach hands the command inbox the engine; call it before Start.
func (u *uplink) attach(f rigconfig.File, eng *engine.Engine) error {
	if u == nil {
		return nil
	}
	u.eng = eng
	users := f.Gate.BrokerUsers
	in, err := tamqp.NewInbox(u.ob.DB(), u.ob, tamqp.EngineFunc(u.handle), tamqp.InboxOpts{
		CalleeID: u.cfg.CalleeID,
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
		Logger: u.log,
	})
	if err != nil {
		return fmt.Errorf("uplink inbox: %w", err)
	}
	u.inbox = in
	return nil
}

// Start starts the Supervisor: it connects (retrying with backoff, logging
// each attempt), drains the outbox and runs the inbox.
func (u *uplink) Start() error {
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

func (u *uplink) backlog() int {
	n, _ := u.ob.Depth()
	return n
}

// runInbox is the inbox Worker: it consumes until the connection ends or
// intake stops; after stopIntake it idles on the connection (a Worker that
// returns makes the Supervisor reconnect) so the outbox keeps draining.
func (u *uplink) runInbox(ctx context.Context, conn *amqp091.Connection) error {
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

// stopIntake stops consuming commands and waits, bounded by ctx and
// intakeStopWait, until no command is being handled. Deliveries the broker
// had already sent stay unacked and go back to the queue when the
// connection closes. It does not wait for Inbox.Run to return: its channel
// close can stall when its context ends on a live connection (a race in
// amqp091-go between ConsumeWithContext's basic.cancel and channel.close)
// until the connection closes.
func (u *uplink) stopIntake(ctx context.Context) {
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

// close flushes what the broker will take within agent.amqp.flush_timeout
// (only while connected), stops the Supervisor, discards replies that never
// committed and closes the outbox. What is left waits for the next start.
// Safe to call more than once.
func (u *uplink) close() error {
	if u == nil {
		return nil
	}
	u.closeMu.Do(func() {
		u.stopIntake(context.Background())
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
		u.mu.Lock()
		for id, discard := range u.pending {
			discard()
			delete(u.pending, id)
		}
		u.mu.Unlock()
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
// engine.Abort.
func (u *uplink) handle(ctx context.Context, cmd tamqp.Command) (tamqp.Outcome, error) {
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
	}
	return tamqp.Outcome{}, fmt.Errorf("uplink: unexpected command %s", cmd.Envelope.Type)
}

// submit decides a task_submit. The replies go to the caller through the
// inbox's transaction; once it committed they reach the local watchers and
// the session starts. A result whose transaction failed is discarded when
// its message is delivered again (or at close).
func (u *uplink) submit(ctx context.Context, cmd tamqp.Command) (tamqp.Outcome, error) {
	mid := cmd.Envelope.MessageID.String()
	u.mu.Lock()
	if discard, ok := u.pending[mid]; ok { // an earlier attempt whose replies never committed
		delete(u.pending, mid)
		u.mu.Unlock()
		discard()
		u.mu.Lock()
	}
	u.mu.Unlock()
	res, err := u.eng.Submit(ctx, engine.SubmitRequest{MessageID: mid, BrokerUser: cmd.UserID, Envelope: cmd.Envelope})
	if err != nil {
		return tamqp.Outcome{}, err
	}
	out := tamqp.Outcome{Replies: make([]tamqp.Reply, 0, len(res.Replies))}
	for _, r := range res.Replies {
		out.Replies = append(out.Replies, tamqp.Reply{CallerID: cmd.CallerID, Envelope: r})
	}
	if res.Discard != nil {
		u.mu.Lock()
		u.pending[mid] = res.Discard
		u.mu.Unlock()
	}
	out.Committed = func() {
		u.mu.Lock()
		delete(u.pending, mid)
		u.mu.Unlock()
		for _, r := range res.Replies {
			_ = u.local.Publish(context.WithoutCancel(ctx), cmd.CallerID, r)
		}
		if res.Start != nil {
			res.Start()
		}
	}
	u.log.Info("broker submit", "message_id", mid, "user", cmd.UserID, "caller", cmd.CallerID, "session", res.SessionID,
		"replies", len(res.Replies))
	return out, nil
}

// abort handles a caller's abort of one of its own sessions. L1 has no
// reply to an abort: an abort of an unknown session, of another caller's,
// or in a state that allows none is logged and acknowledged.
func (u *uplink) abort(ctx context.Context, cmd tamqp.Command) error {
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
		u.log.Warn("abort refused: not the session's caller", "session", sid, "user", cmd.UserID,
			"caller", cmd.MappedCallerID, "owner", s.CallerID)
		return nil
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

// uplinkStatus is the uplink's part of status --json.
type uplinkStatus struct {
	Broker string `json:"broker"`
	// Endpoint is the broker endpoint connected to (or last tried).
	Endpoint  string `json:"endpoint,omitempty"`
	Connected bool   `json:"connected"`
	Blocked   bool   `json:"blocked,omitempty"`
	TLS       bool   `json:"tls"`
	Backlog   int    `json:"outbox_backlog"`
	Telemetry int    `json:"outbox_telemetry"`
	OldestAge string `json:"outbox_oldest_age,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// status reports the uplink for status --json (nil without an uplink).
func (u *uplink) status() *uplinkStatus {
	if u == nil {
		return nil
	}
	s := u.sup.State()
	out := &uplinkStatus{Broker: u.cfg.RedactedURL(), Endpoint: s.Endpoint, Connected: s.Connected, Blocked: s.Blocked, TLS: s.TLS,
		Backlog: s.Backlog, Telemetry: s.Telemetry, LastError: s.LastError}
	if s.OldestAge > 0 {
		out.OldestAge = s.OldestAge.Round(time.Millisecond).String()
	}
	return out
}

// line is the uplink's line of the human status.
func (s *uplinkStatus) line() string {
	if s == nil {
		return "uplink: none (no agent.amqp.url / HCP_AMQP_URL)"
	}
	state := "connected"
	switch {
	case !s.Connected:
		state = "DISCONNECTED"
	case s.Blocked:
		state = "connected, BLOCKED by the broker"
	}
	out := fmt.Sprintf("uplink: %s %s (tls %t), outbox %d waiting", s.Broker, state, s.TLS, s.Backlog)
	if s.OldestAge != "" {
		out += ", oldest " + s.OldestAge
	}
	if !s.Connected && s.LastError != "" {
		out += "; last error: " + s.LastError
	}
	return out
}
