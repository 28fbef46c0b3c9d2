package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"hcp-edge/internal/wallclock"
	"hcp-edge/session/atrest"
	"hcp-edge/session/budget"
	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
	"hcp-edge/session/gate"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/recipe"
	"hcp-edge/session/store"
	"hcp-edge/session/token"
	"hcp-edge/transport/wire"
)

// Outbound receives every message the engine produces once the
// transaction that stored it has committed (and, with the store's Queue,
// put it in the durable outbox in that same transaction): cmd backs it with
// the control socket's watchers. It is not the durable path; a failure is
// logged.
type Outbound interface {
	Publish(ctx context.Context, callerID string, env *wire.Envelope) error
}

// OutboundFunc adapts a function to Outbound.
type OutboundFunc func(ctx context.Context, callerID string, env *wire.Envelope) error

// Publish calls f.
func (f OutboundFunc) Publish(ctx context.Context, callerID string, env *wire.Envelope) error {
	return f(ctx, callerID, env)
}

// Config is the engine's collaborators and settings.
type Config struct {
	Store       *store.Store
	Gate        *gate.Gate
	Registry    *capability.Registry
	Tokens      *token.Authority
	Revocations *token.Revocations
	Executors   []executor.Executor
	// GateRecorder, when set, wraps the recorder of each gate decision (the
	// store transaction of the submit it decides): the metrics count
	// decisions there, once that transaction commits (store.Tx.OnCommit).
	GateRecorder func(gate.Recorder) gate.Recorder
	// Rig is the tool pipeline every run's actions and tool calls go
	// through (executor.ToolRig over an envelope.Invoker; the analyse
	// phase's raman.analyze among them, whose handler, the model router,
	// the agent registered on the Invoker).
	Rig executor.Rig
	Out Outbound
	// SafeState, when set, drives every output to its safe state and
	// latches (envelope.Interlock.SafeState): the fallback when an abort's
	// cleanup overruns abort_timeout, or a recovery fails a session.
	SafeState func(ctx context.Context, reason string) error
	// Trips, when set, replaces the recovery's check of the rig (the trip
	// conditions its readings show; default: the envelope's EvaluateTrips
	// on Rig.Readings).
	Trips func(ctx context.Context) []string
	// StateDir holds the artifacts: StateDir/artifacts/{session}/.
	StateDir string
	// AtRest is the at-rest key (agent.at_rest_key_file; nil: none). The
	// artifacts and checkpoint payloads of every T3/T4 session are sealed
	// under it, and New hands it to the Store (Store.SetAtRest) for their
	// events when the Store has no key yet (another key is refused). New
	// refuses a Gate whose Protection promises a key when AtRest is nil.
	AtRest *atrest.Key
	// TimeScale is process seconds per wall second (1 on the real rig).
	TimeScale float64
	// ApprovalTimeout rejects a session nobody approved in time (default 1 h).
	ApprovalTimeout time.Duration
	// AccessTimeout denies the access request of a T4 session nobody
	// decided in time (default 24 h): its caller gets task_failed
	// access_denied.
	AccessTimeout time.Duration
	// AccessApprovalFor is how long an access approval opens a T4
	// session's data to local reads when the operator gives no duration
	// (default 24 h).
	AccessApprovalFor time.Duration
	// AccessApprovers, when set, are the only operators who may approve or
	// deny access requests.
	AccessApprovers []string
	// ApprovalsRequired is how many approvals by different signers a
	// pending session of each risk level (key "R1".."R5") needs before it
	// runs, and (key "T4") an access request before it is released. A
	// level not listed, or nil, needs one.
	ApprovalsRequired map[string]int
	// Handoff is who may own a session: the targets of a hand-off and the
	// local technician's id (ownership.go).
	Handoff HandoffConfig
	// RecoveryGrace is the longest outage after which a session still
	// resumes from its checkpoint (default 5 min, wall time).
	RecoveryGrace time.Duration
	// DefaultAbortTimeout bounds cleanup when the capability declares no
	// abort_timeout (default 30 s, wall time).
	DefaultAbortTimeout time.Duration
	// CheckpointEvery, PollEvery and LogEvery tune the executors (process
	// time; executor defaults when zero).
	CheckpointEvery, PollEvery, LogEvery time.Duration
	// Actions counts the actuator actions the interlock executes for each
	// session (its Auditor wraps the interlock's): the actions budget. Nil:
	// actions are not counted and that budget is not enforced.
	Actions *budget.ActionCounter
	// BudgetEvery is how often a running session's resource usage is
	// updated and checked against its budgets (default 100 ms, wall time).
	BudgetEvery time.Duration
	Logger      *slog.Logger
	// Clock is the agent's process clock (Tokens.Clock() if nil): its
	// monotonic time judges max_duration and the wall-time budget; Now
	// stamps. The tokens, their revocations and the engine must share one.
	Clock *wallclock.Clock
	// Now is the wall clock of envelopes, stamps and outage measurement
	// across restarts (Clock.Now if nil).
	Now func() time.Time
	// Hold, when set, is asked before each new task_submit: a non-empty
	// reason refuses it with task_rejected resource_unavailable and that
	// reason (the agent holds new sessions while the system clock is not
	// synchronised). Running sessions are not affected.
	Hold func() string
	// OnQuestion, when set, hears every question a session raises (a
	// person must answer), answered or timed out (question.go): the
	// alerts' hook. It is called outside every lock and must not block.
	OnQuestion func(QuestionEvent)
}

// Engine runs sessions: the gate, the state machine in the store, the
// executors, the token, and every outbound message. Its methods are safe
// for concurrent use; Close stops every session goroutine and waits.
type Engine struct {
	cfg   Config
	clock *executor.ScaledClock
	pc    *wallclock.Clock // cfg.Clock
	log   *slog.Logger
	base  context.Context
	stop  context.CancelFunc

	mu       sync.Mutex
	execs    map[string]executor.Executor // by capability name (SetExecutors)
	live     map[string]*live             // session id → live session (non-terminal)
	approval map[string]string            // approval id → session id
	// accessTimers are the expiry timers of the pending access requests
	// (access id → timer); each holds one count of wg until it fires or
	// is stopped.
	accessTimers map[string]*time.Timer
	closed       bool
	wg           sync.WaitGroup
}

// New checks cfg and returns an Engine. Call Recover before serving.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil || cfg.Gate == nil || cfg.Registry == nil || cfg.Tokens == nil || cfg.Rig == nil || cfg.Out == nil {
		return nil, errors.New("engine: Config needs a Store, a Gate, a Registry, Tokens, a Rig and Out")
	}
	if cfg.StateDir == "" {
		return nil, errors.New("engine: Config needs a StateDir")
	}
	if cfg.Gate.Protection().AtRestKey && cfg.AtRest == nil {
		return nil, fmt.Errorf("engine: the gate admits T3/T4 sessions on an at-rest key, and Config.AtRest has none: %w", atrest.ErrNoKey)
	}
	switch have := cfg.Store.AtRest(); {
	case cfg.AtRest == nil:
	case have == nil:
		// The events of T3/T4 sessions are sealed by the store, under the
		// key their checkpoints and artifacts are sealed with.
		cfg.Store.SetAtRest(cfg.AtRest)
	case have.ID() != cfg.AtRest.ID():
		return nil, fmt.Errorf("engine: the store seals under at-rest key %s, Config.AtRest is key %s", have.ID(), cfg.AtRest.ID())
	}
	if cfg.Clock == nil {
		cfg.Clock = cfg.Tokens.Clock()
	}
	if cfg.Revocations == nil {
		cfg.Revocations = token.NewRevocations(cfg.Clock)
	}
	if cfg.TimeScale == 0 {
		cfg.TimeScale = 1
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = time.Hour
	}
	if cfg.AccessTimeout <= 0 {
		cfg.AccessTimeout = 24 * time.Hour
	}
	if cfg.AccessApprovalFor <= 0 {
		cfg.AccessApprovalFor = 24 * time.Hour
	}
	if cfg.RecoveryGrace <= 0 {
		cfg.RecoveryGrace = 5 * time.Minute
	}
	if cfg.DefaultAbortTimeout <= 0 {
		cfg.DefaultAbortTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = cfg.Clock.Now
	}
	clock, err := executor.NewScaledClock(cfg.TimeScale)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e := &Engine{cfg: cfg, execs: map[string]executor.Executor{}, clock: clock, pc: cfg.Clock, log: cfg.Logger,
		live: map[string]*live{}, approval: map[string]string{}, accessTimers: map[string]*time.Timer{}}
	if err := e.SetExecutors(cfg.Executors...); err != nil {
		return nil, err
	}
	e.base, e.stop = context.WithCancel(context.Background())
	return e, nil
}

// Close stops every session goroutine (a running session stays RUNNING in
// the store, to be recovered at the next start; its recipe's cleanup runs)
// and waits for them.
func (e *Engine) Close() error {
	e.mu.Lock()
	e.closed = true
	e.stopAccessTimersLocked()
	ls := make([]*live, 0, len(e.live))
	for _, l := range e.live {
		ls = append(ls, l)
	}
	e.mu.Unlock()
	e.stop()
	for _, l := range ls {
		l.mu.Lock()
		e.disarmLocked(l)
		l.mu.Unlock()
	}
	e.wg.Wait()
	return nil
}

// go runs f as a goroutine owned by the engine; false once closed.
func (e *Engine) spawn(f func()) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		f()
	}()
	return true
}

// meta is the engine's part of a stored session (store.Session.Metadata).
type meta struct {
	Submit       json.RawMessage `json:"task_submit"` // the payload, to plan and to recover
	ApprovalID   string          `json:"approval_id,omitempty"`
	NeedApproval bool            `json:"requires_approval,omitempty"`
	Permissions  []string        `json:"permissions,omitempty"`
	AbortTimeout time.Duration   `json:"abort_timeout_ns,omitempty"`
	AuditedData  bool            `json:"audited_access,omitempty"`
	Encrypted    bool            `json:"encrypted_at_rest,omitempty"` // the gate's Decision.Encrypted (T3/T4)
	RunningSince time.Time       `json:"running_since,omitzero"`      // wall time of PENDING → RUNNING
	Operator     string          `json:"operator,omitempty"`
	Approvals    []Signature     `json:"approvals,omitempty"` // gathered so far, oldest first (approval.go)
	// Recipe is the identity of the recipe the session runs (a recipe
	// executor's), fixed when the session is created: task_accepted and
	// the audit name it, and the run refuses any other. RecipeSource is
	// that recipe's file: recovery loads the session's recipe from it, not
	// from what the agent has loaded since.
	Recipe       *recipe.Identity `json:"recipe,omitempty"`
	RecipeSource []byte           `json:"recipe_source,omitempty"`
	// Question is the recipe's question the session is blocked at;
	// Answers the answers recorded, by question name (question.go).
	Question *PendingQuestion  `json:"question,omitempty"`
	Answers  map[string]Answer `json:"answers,omitempty"`
}

// SubmitRequest is one task_submit handed over by the inbox.
type SubmitRequest struct {
	MessageID  string
	BrokerUser string // the broker-validated user id
	Envelope   *wire.Envelope
}

// Result is the engine's answer to a Submit: the replies (task_rejected;
// task_accepted then the session's first events; or an approval_pending
// event) and the session id ("" when none was created).
type Result struct {
	Replies   []*wire.Envelope
	SessionID string
}

// Submit decides a local task_submit in a transaction of its own (the
// control socket's): the replies are handed to Out once it has committed
// and are not queued for the broker (SubmitTx says what they are).
func (e *Engine) Submit(ctx context.Context, req SubmitRequest) (Result, error) {
	var res Result
	err := e.cfg.Store.Update(ctx, func(w *store.Tx) error {
		var err error
		res, err = e.SubmitTx(ctx, w, req)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// SubmitTx runs the gate on a task_submit and answers it inside w, the
// transaction that also records the command (the inbox's: its
// de-duplication entry and the replies, which the caller queues): the
// gate's audited decision, the session and its acceptance (token, PENDING →
// RUNNING, session_created) all commit in w or not at all. Once w has
// committed the replies go to Out and the session starts (or waits for its
// approval); if w rolls back nothing happened. It returns an error only
// when nothing could be decided (the gate could not record, the store
// failed): the inbox requeues.
func (e *Engine) SubmitTx(ctx context.Context, w *store.Tx, req SubmitRequest) (Result, error) {
	var res Result
	now := e.cfg.Now()
	callerOf := func(sub *wire.TaskSubmit) string {
		if sub != nil {
			return sub.CallerID
		}
		return ""
	}
	rejected := func(caller string, env *wire.Envelope) (Result, error) {
		res.Replies = []*wire.Envelope{env}
		w.OnCommit(func() { e.fanOut(caller, res.Replies) })
		return res, nil
	}
	sub, err := req.Envelope.TaskSubmit()
	if err != nil {
		rej := &wire.TaskRejected{ReasonCode: wire.ReasonInvalidInput, ReasonMessage: err.Error()}
		env, err := wire.NewEnvelope(nil, rej, now)
		if err != nil {
			return res, fmt.Errorf("engine: %w", err)
		}
		return rejected("", env)
	}
	if e.cfg.Hold != nil {
		if why := e.cfg.Hold(); why != "" {
			rej := &wire.TaskRejected{ReasonCode: string(gate.ReasonResourceUnavailable), ReasonMessage: why}
			env, err := wire.NewEnvelope(nil, rej, now)
			if err != nil {
				return res, fmt.Errorf("engine: %w", err)
			}
			e.log.Warn("new session held", "reason", why, "message_id", req.MessageID)
			return rejected(callerOf(sub), env)
		}
	}
	if _, err := budget.ParseTask(req.Envelope.Payload); err != nil { // constraints.budgets (budget.go)
		rej := &wire.TaskRejected{ReasonCode: wire.ReasonInvalidInput, ReasonMessage: err.Error()}
		env, err := wire.NewEnvelope(nil, rej, now)
		if err != nil {
			return res, fmt.Errorf("engine: %w", err)
		}
		return rejected(callerOf(sub), env)
	}
	sid := uuid.New()
	running, busy, err := e.occupancy(w, sub.Capability)
	if err != nil {
		return res, fmt.Errorf("engine: %w", err)
	}
	open, err := e.openSessions(w, sub.CallerID)
	if err != nil {
		return res, fmt.Errorf("engine: %w", err)
	}
	var rec gate.Recorder = w
	if e.cfg.GateRecorder != nil {
		rec = e.cfg.GateRecorder(w)
	}
	d, err := e.cfg.Gate.DecideWith(ctx, gate.Request{MessageID: req.MessageID, SessionID: sid.String(),
		BrokerUser: req.BrokerUser, Submit: sub, Running: running, BusyResources: busy, OpenSessions: open}, rec)
	if err != nil {
		return res, fmt.Errorf("engine: %w", err)
	}
	if d.Outcome == gate.Rejected {
		env, err := wire.NewEnvelope(nil, d.Rejection.Payload(), now)
		if err != nil {
			return res, fmt.Errorf("engine: %w", err)
		}
		return rejected(callerOf(sub), env)
	}
	x, ok := e.Executor(d.Capability.Name)
	if !ok {
		return res, fmt.Errorf("engine: no executor for %s", d.Capability.Name)
	}
	ident, src, err := recipeOf(x, d.Capability)
	if err != nil {
		return res, fmt.Errorf("engine: %w", err)
	}
	if (d.Encrypted || d.DataClassification.Rank() >= gate.T3.Rank()) && e.cfg.AtRest == nil {
		// New makes this unreachable; never run such a session unsealed.
		return res, fmt.Errorf("engine: a %s session needs the at-rest key: %w", d.DataClassification, atrest.ErrNoKey)
	}
	m := meta{Submit: req.Envelope.Payload, NeedApproval: d.Outcome == gate.PendingApproval,
		AbortTimeout: d.AbortTimeout, AuditedData: d.AuditedAccess, Encrypted: d.Encrypted, Recipe: ident, RecipeSource: src}
	for _, p := range d.Permissions {
		m.Permissions = append(m.Permissions, string(p))
	}
	if m.NeedApproval {
		m.ApprovalID = "apr-" + uuid.NewString()[:8]
	}
	mb, _ := json.Marshal(m)
	sess := store.Session{ID: sid.String(), Capability: d.Capability.Name, CapabilityVersion: d.Capability.SemVer.String(),
		CallerID: d.CallerID, RequestID: req.MessageID, RiskLevel: string(d.RiskLevel),
		DataClass: string(d.DataClassification), MaxDuration: int64(d.MaxDuration), Metadata: mb}
	l := &live{id: sess.ID, uid: sid, caller: d.CallerID, capab: d.Capability, exec: x, meta: m, sub: sub,
		class: sess.DataClass, state: lifecycle.Pending, maxDur: d.MaxDuration, abortTO: e.abortTimeout(d.AbortTimeout),
		resume: make(chan struct{}, 1), done: make(chan struct{})}
	var created []store.Event
	if m.NeedApproval {
		sess, created, err = w.Create(sess, store.Emit{Type: lifecycle.EventWarning, Data: approvalData{
			Code: EventApprovalPending, Message: fmt.Sprintf("risk %s needs a human approval: hcp-edge approve %s", d.RiskLevel, m.ApprovalID),
			Details: approvalDetails{ApprovalID: m.ApprovalID, RiskLevel: string(d.RiskLevel),
				ExpiresAt: now.Add(e.cfg.ApprovalTimeout).UTC().Format(wire.TimestampLayout)}}})
	} else {
		sess, created, err = w.Create(sess)
	}
	if err != nil {
		return res, fmt.Errorf("engine: %w", err)
	}
	l.sess = sess
	res.SessionID = sess.ID
	if err := auditRecipe(ctx, w, sess.ID, ident); err != nil {
		return res, err
	}
	if m.NeedApproval {
		evs, err := e.eventEnvelopes(l, created)
		if err != nil {
			return res, err
		}
		res.Replies = evs
		w.OnCommit(func() {
			e.fanOut(l.caller, res.Replies)
			if e.register(l) {
				e.awaitApproval(l, e.cfg.ApprovalTimeout)
			}
		})
		return res, nil
	}
	l.mu.Lock() // nobody else knows l yet
	replies, err := e.acceptTx(w, l, "l3 safety check passed")
	l.mu.Unlock()
	if err != nil {
		return res, err
	}
	res.Replies = replies
	w.OnCommit(func() {
		e.fanOut(l.caller, res.Replies)
		if e.register(l) {
			e.start(l, 0, nil)
		}
	})
	return res, nil
}

// register adds a session whose creation has committed to the live set;
// false once the engine is closed (the session waits for the next start's
// recovery).
func (e *Engine) register(l *live) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.live[l.id] = l
	return true
}

// occupancy is the gate's Running for capability name — the non-terminal
// sessions of the state file (as of w, the transaction that will create
// the next one) of that capability plus those of other physical
// capabilities sharing one of its resource types (two physical tasks never
// drive the same equipment at once: resource_unavailable) — and the
// resource types busy in the other, non-conflicting sessions (the gate's
// shared-equipment rule). A session whose capability is no longer known
// counts as a conflict for a physical capability.
func (e *Engine) occupancy(w *store.Tx, name string) (int, []string, error) {
	var c *capability.Capability
	if cs, err := e.cfg.Registry.Resolve(name, "*"); err == nil {
		c = cs
	}
	act, err := w.Active()
	if err != nil {
		return 0, nil, err
	}
	physical := c != nil && c.Safety.InvolvesPhysicalResources
	n := 0
	var busy []string
	for _, a := range act {
		var ac *capability.Capability
		if cs, err := e.cfg.Registry.Resolve(a.Capability, "*"); err == nil {
			ac = cs
		}
		switch {
		case a.Capability == name:
			n++
		case ac == nil:
			if physical {
				n++
			}
		case physical && ac.Safety.InvolvesPhysicalResources && overlaps(c.Safety.ResourceTypes, ac.Safety.ResourceTypes):
			n++
		case ac.Safety.InvolvesPhysicalResources:
			// Not a conflict: its equipment counts as busy for the
			// gate's shared-equipment rule.
			for _, r := range ac.Safety.ResourceTypes {
				if !slices.Contains(busy, r) {
					busy = append(busy, r)
				}
			}
		}
	}
	return n, busy, nil
}

// openSessions is the gate's OpenSessions for caller: its non-terminal
// sessions as of w (so sessions created earlier in the same transaction
// count), read only when the caller has an open_sessions quota.
func (e *Engine) openSessions(w *store.Tx, caller string) (int, error) {
	if caller == "" || !e.cfg.Gate.OpenSessionsLimited(caller) {
		return 0, nil
	}
	act, err := w.Active()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range act {
		s, err := w.Session(a.ID)
		if err != nil {
			return 0, err
		}
		if s.CallerID == caller {
			n++
		}
	}
	return n, nil
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

func (e *Engine) abortTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return e.cfg.DefaultAbortTimeout
	}
	if e.cfg.TimeScale > 0 {
		d = time.Duration(float64(d) / e.cfg.TimeScale)
	}
	return max(d, time.Second)
}

// issue signs the session's token for ttl (wall time).
func (e *Engine) issue(l *live, ttl time.Duration) (string, error) {
	digest, err := token.EnvelopeDigest(e.cfg.Rig.Envelope())
	if err != nil {
		return "", fmt.Errorf("engine: %w", err)
	}
	c := token.Claims{SessionID: l.id, CallerID: l.caller, Capability: l.capab.Name,
		CapabilityVersion: l.capab.SemVer.String(), RiskLevel: l.sess.RiskLevel, DataClassification: l.class,
		EnvelopeDigest: digest}
	for _, p := range l.meta.Permissions {
		c.Permissions = append(c.Permissions, permission(p))
	}
	tok, _, err := e.cfg.Tokens.Issue(c, max(ttl, time.Second))
	if err != nil {
		return "", fmt.Errorf("engine: token: %w", err)
	}
	return tok, nil
}

// acceptTx issues the token and moves PENDING → RUNNING with
// session_created inside w; it returns task_accepted and the events (for
// the caller to send or to queue). l takes the new state once w commits.
// The caller holds l.mu (over the whole transaction when l is already
// known to others), so nobody sees l between the commit and that update.
func (e *Engine) acceptTx(w *store.Tx, l *live, reason string) ([]*wire.Envelope, error) {
	now, el, at := e.cfg.Now(), e.pc.Elapsed(), e.pc.Mono()
	ttl := e.runWall(l.maxDur)
	tok, err := e.issue(l, ttl)
	if err != nil {
		return nil, err
	}
	safety, err := l.capab.SafetyEnvelope(e.cfg.Rig.Envelope())
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	m := l.meta
	m.RunningSince = now
	mb, _ := json.Marshal(m)
	sess, evs, err := w.Transition(l.id, store.Change{To: lifecycle.Running, Reason: reason,
		After: []store.Emit{{Type: lifecycle.EventSessionCreated, Data: sessionCreated{State: lifecycle.Running,
			RiskLevel: l.sess.RiskLevel, SessionToken: tok}}},
		Update: func(s *store.Session) { s.Token, s.Metadata = tok, mb }})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	acc := &wire.TaskAccepted{SessionToken: tok, RiskLevel: l.sess.RiskLevel, DataClassification: l.class,
		SafetyEnvelope: safety,
		Constraints:    &wire.AcceptedConstraints{MaxDuration: isoDuration(l.maxDur), AbortTimeout: isoDuration(l.meta.AbortTimeout)},
		Recipe:         wireRecipe(l.meta.Recipe)}
	accEnv, err := wire.NewEnvelope(&l.uid, acc, now)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	out, err := e.eventEnvelopes(l, evs)
	if err != nil {
		return nil, err
	}
	w.OnCommit(func() {
		l.meta = m
		l.sess, l.state, l.token, l.deadline = sess, lifecycle.Running, tok, now.Add(ttl)
		l.runMono, l.runAt = el, at
	})
	return append([]*wire.Envelope{accEnv}, out...), nil
}

// runWall is the wall time a session may run for max_duration d of process
// time: d itself on the real rig; scaled against the simulator, but at
// least 5 s, since instrument I/O is not scaled.
func (e *Engine) runWall(d time.Duration) time.Duration {
	if e.cfg.TimeScale == 1 {
		return d
	}
	return max(e.clock.Wall(d), 5*time.Second)
}

// forget drops a closed session from the live set, revokes its token and
// drops its action count.
func (e *Engine) forget(l *live) {
	e.mu.Lock()
	delete(e.live, l.id)
	if l.meta.ApprovalID != "" {
		delete(e.approval, l.meta.ApprovalID)
	}
	e.mu.Unlock()
	e.cfg.Revocations.Revoke(l.id, l.deadline.Add(time.Minute))
	if e.cfg.Actions != nil {
		e.cfg.Actions.Forget(l.id)
	}
}

// artifactDir is where session id's artifacts live.
func (e *Engine) artifactDir(id string) string {
	return filepath.Join(e.cfg.StateDir, "artifacts", id)
}

// AtRestKey is Config.AtRest: the key a T3/T4 session's artifacts are
// sealed under (nil: none configured).
func (e *Engine) AtRestKey() *atrest.Key { return e.cfg.AtRest }

// Sealed reports whether the data of a session of classification class
// (a stored session's DataClass) is sealed at rest: T3 and T4.
func Sealed(class string) bool { return gate.Classification(class).Rank() >= gate.T3.Rank() }

// sealed reports whether l's artifacts and checkpoints are sealed.
func (l *live) sealed() bool { return l.meta.Encrypted || Sealed(l.class) }

// atRest is the key l's artifacts and checkpoints are sealed under: nil
// for a session whose data is not sealed.
func (e *Engine) atRest(l *live) *atrest.Key {
	if l.sealed() {
		return e.cfg.AtRest
	}
	return nil
}

// State returns the current state of a live session, or of a stored one.
func (e *Engine) State(ctx context.Context, id string) (lifecycle.State, error) {
	if l := e.get(id); l != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.state, nil
	}
	s, err := e.cfg.Store.Session(ctx, id)
	if err != nil {
		return "", fmt.Errorf("engine: %w", err)
	}
	return s.State, nil
}

func (e *Engine) get(id string) *live {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l, ok := e.live[id]; ok {
		return l
	}
	if sid, ok := e.approval[id]; ok {
		return e.live[sid]
	}
	return nil
}

// Wait blocks until session id's goroutine has ended (or ctx is done).
// A session that never started returns at once.
func (e *Engine) Wait(ctx context.Context, id string) error {
	l := e.get(id)
	if l == nil {
		return nil
	}
	l.mu.Lock()
	started := l.started
	l.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
