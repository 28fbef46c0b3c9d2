package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"hcp-edge/device/catalog"
	"hcp-edge/envelope"
	"hcp-edge/internal/diskspace"
	"hcp-edge/session/atrest"
	"hcp-edge/session/audit"
	"hcp-edge/session/budget"
	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

func permission(s string) catalog.Permission { return catalog.Permission(s) }

// Sentinel errors of the package.
var (
	// ErrNotFound: no live session or approval has that id.
	ErrNotFound = errors.New("engine: no such live session or approval")
	// ErrState: the operation does not apply in the session's state.
	ErrState = errors.New("engine: not possible in the session's state")
	// ErrClosed: the engine is closed.
	ErrClosed = errors.New("engine: closed")
)

// Causes of a run's cancellation.
var (
	errAbort = errors.New("engine: aborted")
)

// live is one non-terminal session held by the engine.
type live struct {
	id      string
	uid     uuid.UUID
	caller  string
	capab   *capability.Capability
	exec    executor.Executor
	sub     *wire.TaskSubmit
	maxDur  time.Duration // process time
	abortTO time.Duration // wall time
	// class is the session's data classification, fixed at submit: read
	// here, not from sess, which transitions replace under mu while the
	// run goroutine reads the task (a race CI's -race found).
	class string

	// mu serialises the session's store writes with their publication, so
	// the outbound order is the sequence order.
	mu       sync.Mutex
	sess     store.Session
	meta     meta
	state    lifecycle.State
	token    string
	deadline time.Time // wall: the token's expiry, for its revocation
	// runMono is the process clock's Elapsed when the session started
	// running (for a recovered session, placed there by the wall clock's
	// word: RunningSince); max_duration and the wall-time budget are
	// judged from it on the monotonic clock.
	runMono time.Duration
	// runAt is the instant (monotonic reading) it started running in this
	// process; zero for a recovered session.
	runAt    time.Time
	started  bool
	cancel   context.CancelCauseFunc
	done     chan struct{}
	timer    *time.Timer // approval timeout
	pauseReq bool
	pauseBy  string
	pauseWhy string // the PAUSED reason when not an operator's (a hold at recovery)
	resume   chan struct{}
	ckpts    int
	lastCkpt string
	// mark is where the current run started, and the totals before it
	// (totals.go).
	mark     runMark
	warnings []string
	// extWarnings are the warnings from outside the executor (Warn), since
	// this start.
	extWarnings []string
	// budget is the resource monitor of the current run (budget.go); nil
	// before it starts. budgetFrom is the budget state of the checkpoint a
	// recovered session resumes from.
	budget     *budgetRun
	budgetFrom *budget.State
	// answered wakes the run waiting at a question (question.go);
	// timedOut is the checkpoint of a question whose timeout fired.
	answered chan struct{}
	timedOut string
}

// disarm stops the approval timeout (l.mu held); false when it already
// fired (its callback decides).
func (e *Engine) disarmLocked(l *live) bool {
	if l.timer == nil {
		return true
	}
	stopped := l.timer.Stop()
	if stopped {
		e.wg.Done()
	}
	l.timer = nil
	return stopped
}

// task is the executor's view of the submit.
func (l *live) task() executor.Task {
	t := executor.Task{SessionID: l.id, Intent: l.sub.Intent, Inputs: l.sub.Inputs}
	if l.capab != nil && l.capab.SemVer != nil {
		t.Version = l.capab.SemVer.String()
	}
	t.Recipe = l.meta.Recipe
	if eo := l.sub.ExpectedOutput; eo != nil {
		t.ExpectedOutput = &executor.ExpectedOutput{Format: eo.Format, RequiredFields: eo.RequiredFields, Schema: eo.Schema}
	}
	if c := l.sub.Constraints; c != nil && c.ConfidenceThreshold != nil {
		t.ConfidenceThreshold = *c.ConfidenceThreshold
	}
	if c := l.sub.Constraints; c != nil {
		t.ModelHint = c.ModelHint
	}
	t.DataClass = l.class
	return t
}

// fanOut hands envs, committed, to Out (the local watchers), in order. A
// failure is logged: the messages are in the store and the outbox.
func (e *Engine) fanOut(caller string, envs []*wire.Envelope) {
	if len(envs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.base), 30*time.Second)
	defer cancel()
	for _, env := range envs {
		if err := e.cfg.Out.Publish(ctx, caller, env); err != nil {
			e.log.Error("publish", "type", env.Type, "message_id", env.MessageID, "err", err)
		}
	}
}

// storeCtx bounds one store write; writes outlive a cancelled run.
func storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// step runs f in one store transaction — the state it changes and the
// messages it sends (send) commit together — and then hands those messages
// to Out. Callers that change a live session hold l.mu, so the outbound
// order is the sequence order.
func (e *Engine) step(l *live, f func(w *store.Tx) error) error {
	ctx, cancel := storeCtx()
	defer cancel()
	var sent []store.Message
	err := e.cfg.Store.Update(ctx, func(w *store.Tx) error {
		if l.sealed() && e.cfg.AtRest == nil {
			// A T3/T4 session recovered without the key (restore refuses
			// to run one): this step only ends it, in the engine's words.
			w.WithoutKey(l.id)
		}
		if err := f(w); err != nil {
			return err
		}
		sent = w.Sent()
		return nil
	})
	if err != nil {
		return err
	}
	envs := make([]*wire.Envelope, len(sent))
	for i, m := range sent {
		envs[i] = m.Envelope
	}
	e.fanOut(l.caller, envs)
	return nil
}

// endRetry paces the tries of a session's terminal step that failed for a
// local write failure (no space): from the first to the last, doubling.
var endRetry = [2]time.Duration{250 * time.Millisecond, 5 * time.Second}

// stepEnding is step; for a terminal step (ending) that fails for a local
// write failure of the state file (no space, I/O error) it tries again until
// it commits or the engine stops, so a session that was accepted ends with
// its final message recorded, whatever the disk does meanwhile. Between
// tries l.mu is released (status and the budgets read it); nothing else
// changes the session while its end is pending: the run has ended and
// every other write fails alike.
func (e *Engine) stepEnding(l *live, ending bool, f func(w *store.Tx) error) error {
	err := e.step(l, f)
	if err == nil || !ending || !diskspace.LocalWriteError(err) {
		return err
	}
	e.log.Error("the end of a session cannot be recorded: the state file cannot be written here; trying until it can",
		"session", l.id, "err", err)
	t0, wait := time.Now(), endRetry[0]
	for tries := 1; ; tries++ {
		l.mu.Unlock()
		ok := sleepCtx(e.base, wait)
		l.mu.Lock()
		if !ok {
			return fmt.Errorf("engine: end of session %s not recorded before shutdown: %w", l.id, err)
		}
		wait = min(2*wait, endRetry[1])
		if err = e.step(l, f); err == nil {
			e.log.Warn("the end of a session is recorded after the state directory took writes again", "session", l.id,
				"tries", tries+1, "after", time.Since(t0).Round(time.Millisecond))
			return nil
		}
		if !diskspace.LocalWriteError(err) {
			return err
		}
	}
}

// sleepCtx waits d or until ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// send queues envs for l's caller inside w; task_accepted and
// task_rejected carry the submit's message_id (hcp-in-reply-to).
func (e *Engine) send(w *store.Tx, l *live, envs ...*wire.Envelope) error {
	ms := make([]store.Message, len(envs))
	for i, env := range envs {
		ms[i] = store.Message{CallerID: l.caller, Envelope: env}
		if env.Type == wire.TypeTaskAccepted || env.Type == wire.TypeTaskRejected {
			ms[i].InReplyTo = l.sess.RequestID
		}
	}
	return w.Send(ms...)
}

// appendLocked numbers and stores events and queues them, in one
// transaction (l.mu held by caller).
func (e *Engine) appendLocked(l *live, evs ...store.Emit) error {
	return e.step(l, func(w *store.Tx) error {
		stored, err := w.Emit(l.id, evs...)
		if err != nil {
			return err
		}
		out, err := e.eventEnvelopes(l, stored)
		if err != nil {
			return err
		}
		return e.send(w, l, out...)
	})
}

// transitionLocked moves the session and queues its events, then final
// (the task_completed, task_failed or task_rejected that closes it), in one
// transaction (l.mu held).
func (e *Engine) transitionLocked(l *live, c store.Change, final ...*wire.Envelope) error {
	return e.transitionsLocked(l, []store.Change{c}, final...)
}

// transitionsLocked is transitionLocked for several edges in one
// transaction (PAUSED → RUNNING → FAILED). When the session ends, its token
// is revoked before the transaction commits: nobody hears it closed while
// the token still works (a commit that then fails leaves a session whose
// token is refused, the safe side).
//
// A T4 session's task_completed or task_failed is not sent: it is held,
// sealed, in an access request created in the same transaction, the
// access_pending event (no result data) goes before the terminal
// state_changed, and the request's expiry is armed once it commits
// (access.go).
func (e *Engine) transitionsLocked(l *live, cs []store.Change, final ...*wire.Envelope) error {
	var sess store.Session
	var acc *store.AccessRequest
	if len(cs) > 0 && e.holds(l, final) {
		r := e.newAccess(l, final)
		acc = &r
		last := &cs[len(cs)-1]
		last.Before = append(slices.Clip(last.Before), accessPending(r))
	}
	terminal := len(cs) > 0 && cs[len(cs)-1].To.Terminal()
	err := e.stepEnding(l, terminal, func(w *store.Tx) error {
		for _, c := range cs {
			s, evs, err := w.Transition(l.id, c)
			if err != nil {
				return err
			}
			sess = s
			if s.State.Terminal() {
				e.cfg.Revocations.Revoke(l.id, l.deadline.Add(time.Minute))
			}
			out, err := e.eventEnvelopes(l, evs)
			if err != nil {
				return err
			}
			if err := e.send(w, l, out...); err != nil {
				return err
			}
		}
		if acc != nil {
			return e.holdTx(w, *acc, final)
		}
		return e.send(w, l, final...)
	})
	if err != nil {
		return err
	}
	l.sess, l.state = sess, sess.State
	if acc != nil {
		e.log.Info("results held for access approval", "session", l.id, "access_id", acc.ID, "held", acc.FinalType)
		e.armAccess(*acc)
	}
	return nil
}

// sink is the executor's event Sink of one session.
type sink struct {
	e *Engine
	l *live
}

func (s sink) Emit(_ context.Context, t lifecycle.EventType, data any) error {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	if t == lifecycle.EventIntermediateResult && NeedsAccessApproval(s.l.class) {
		// A T4 session's results reach its caller only with an access
		// approval: the event says a result exists, not what it is.
		data = withheldResult(data)
	}
	if t == lifecycle.EventProgress {
		data = withBudgets(data, s.e.budgetReportLocked(s.l))
	}
	if t == lifecycle.EventWarning {
		if w, ok := data.(executor.Warning); ok {
			s.l.warnings = append(s.l.warnings, w.Message)
			if w.Audit {
				return s.e.appendAuditedLocked(s.l, store.Emit{Type: t, Data: data}, auditedWarning(w, s.l.sealed()))
			}
		}
	}
	return s.e.appendLocked(s.l, store.Emit{Type: t, Data: data})
}

// appendAuditedLocked is appendLocked with an audit entry of kind
// analysis (detail) under the session, in the event's transaction.
func (e *Engine) appendAuditedLocked(l *live, ev store.Emit, detail []byte) error {
	return e.step(l, func(w *store.Tx) error {
		if _, err := w.Audit(context.Background(), audit.Entry{SessionID: l.id, Kind: audit.KindAnalysis, Detail: string(detail)}); err != nil {
			return err
		}
		stored, err := w.Emit(l.id, ev)
		if err != nil {
			return err
		}
		out, err := e.eventEnvelopes(l, stored)
		if err != nil {
			return err
		}
		return e.send(w, l, out...)
	})
}

// auditedWarning is the audit detail of an audited warning: its code,
// message and details; for a sealed (T3/T4) session its code alone, the
// audit log being in the clear (docs/ANALYSIS.md, "T3/T4").
func auditedWarning(w executor.Warning, sealed bool) []byte {
	d := map[string]any{"code": w.Code}
	if sealed {
		d["withheld"] = true
	} else {
		d["message"] = w.Message
		for k, v := range w.Details {
			if _, taken := d[k]; !taken {
				d[k] = v
			}
		}
	}
	b, _ := json.Marshal(d)
	return b
}

// Checkpoint stores an executor checkpoint and publishes checkpoint_created.
func (s sink) Checkpoint(_ context.Context, cp executor.Checkpoint) (string, error) {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	tot := s.e.totalsLocked(s.l, cp.Step)
	tot.Checkpoints++ // this one
	payload, err := json.Marshal(ckptPayload{Step: cp.Step, State: cp.State, Journaled: cp.Journaled,
		Journal: cp.Journal, JournalFrom: cp.JournalFrom, Budget: budgetStateLocked(s.l), Totals: &tot})
	if err != nil {
		return "", err
	}
	nc := store.NewCheckpoint{Description: cp.Description, Resumable: cp.Resumable, Step: cp.StepName, Payload: payload}
	if s.l.sealed() {
		if nc.Seal = s.e.cfg.AtRest; nc.Seal == nil {
			return "", fmt.Errorf("engine: checkpoint of a %s session: %w", s.l.class, atrest.ErrNoKey)
		}
	}
	var c store.Checkpoint
	err = s.e.step(s.l, func(w *store.Tx) error {
		var evs []store.Event
		var err error
		if c, evs, err = w.Checkpoint(s.l.id, nc); err != nil {
			return err
		}
		out, err := s.e.eventEnvelopes(s.l, evs)
		if err != nil {
			return err
		}
		return s.e.send(w, s.l, out...)
	})
	if err != nil {
		return "", err
	}
	s.l.ckpts++
	s.l.lastCkpt = c.ID
	return c.ID, nil
}

// ckptPayload is the engine's checkpoint payload: the step to resume at and
// the executor's opaque state; for a journaled recipe the state without its
// journal and the journal rows added since the previous checkpoint, so that
// a checkpoint costs what changed (recovery reassembles the journal from
// every checkpoint of the session).
type ckptPayload struct {
	Step        int             `json:"step"`
	State       []byte          `json:"state"`
	Journaled   bool            `json:"journaled,omitempty"`
	Journal     json.RawMessage `json:"journal,omitempty"`
	JournalFrom int             `json:"journal_from,omitempty"`
	// Budget is the session's resource usage when the checkpoint was
	// taken: a recovered session resumes from it (budget.go).
	Budget *budget.State `json:"budget,omitempty"`
	// Totals are the session's running totals for its execution_summary,
	// this checkpoint included (totals.go).
	Totals *runTotals `json:"totals,omitempty"`
}

// pausing wraps a recipe: before each step it honours a pause request,
// holding the rig as the last step left it until an operator resumes.
type pausing struct {
	executor.Recipe
	e *Engine
	l *live
}

func (p pausing) Run(ctx context.Context, i int, env *executor.Env) error {
	if err := p.e.holdIfPaused(ctx, p.l); err != nil {
		return err
	}
	return p.Recipe.Run(ctx, i, env)
}

// holdIfPaused moves RUNNING → PAUSED when a pause was requested and waits
// for Resume (PAUSED → RUNNING) or the end of ctx. A session recovered in
// PAUSED waits at once.
func (e *Engine) holdIfPaused(ctx context.Context, l *live) error {
	l.mu.Lock()
	switch {
	case l.state == lifecycle.Paused && l.meta.Question != nil:
		// Recovered blocked at a question: the step asks it again.
		l.mu.Unlock()
		return nil
	case l.state == lifecycle.Paused:
	case l.pauseReq && l.state == lifecycle.Running:
		why := "paused by operator " + l.pauseBy
		if l.pauseWhy != "" {
			why = l.pauseWhy
		}
		err := e.transitionLocked(l, store.Change{To: lifecycle.Paused, Reason: why})
		if err != nil {
			l.mu.Unlock()
			return fmt.Errorf("%w: pause: %w", errSinkFailed, err)
		}
	default:
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-l.resume:
		return nil
	}
}

var errSinkFailed = fmt.Errorf("%w: engine store", envelope.ErrAudit)

// start launches the session goroutine from step from (rec nil: plan).
func (e *Engine) start(l *live, from int, rec executor.Recipe) {
	l.mu.Lock()
	if l.started || l.state.Terminal() {
		l.mu.Unlock()
		return
	}
	l.started = true
	ctx, cancel := context.WithCancelCause(e.base)
	l.cancel = cancel
	left := e.runWall(l.maxDur) - (e.pc.Elapsed() - l.runMono)
	l.mu.Unlock()
	ok := e.spawn(func() {
		defer close(l.done)
		defer cancel(nil)
		e.run(ctx, l, from, rec, left)
	})
	if !ok {
		close(l.done)
	}
}

// run runs l's recipe from step from for at most left of wall time (its
// max_duration less the time it has run, on the monotonic clock: no step
// of the wall clock shortens or lengthens it).
func (e *Engine) run(parent context.Context, l *live, from int, rec executor.Recipe, left time.Duration) {
	ctx, cancel := context.WithTimeout(parent, left)
	defer cancel()
	env := &executor.Env{Rig: e.cfg.Rig, Token: l.token, Clock: e.clock, Sink: sink{e, l}, Checkpoints: sink{e, l},
		ArtifactDir: e.artifactDir(l.id), SessionID: l.id, AtRest: e.atRest(l), Logger: e.log.With("session", l.id),
		CheckpointEvery: e.cfg.CheckpointEvery, PollEvery: e.cfg.PollEvery, LogEvery: e.cfg.LogEvery,
		Questions: asker{e, l}}
	if l.sealed() && env.AtRest == nil { // never written in the clear (restore refuses such a session)
		env.ArtifactDir = ""
	}
	start := e.clock.Now()
	l.mu.Lock()
	e.markRunLocked(l, from)
	l.mu.Unlock()
	var err error
	if rec == nil {
		rec, err = l.exec.Plan(l.task())
		if err != nil {
			err = &executor.Failure{Code: executor.CodeInput, Err: err}
		}
	}
	var res *executor.Result
	var stopBudget func()
	if err == nil {
		if stopBudget, err = e.startBudget(ctx, l); err != nil {
			err = &executor.Failure{Code: executor.CodeInput, Err: err}
		}
	}
	if err == nil {
		res, err = executor.Execute(ctx, pausing{Recipe: rec, e: e, l: l}, env, from)
		stopBudget()
	}
	e.awaitLatchRecord(l, err) // riskevents.go
	e.finish(ctx, l, rec, env, res, err, e.clock.Now().Sub(start))
}

// finish records the end of a run.
func (e *Engine) finish(ctx context.Context, l *live, rec executor.Recipe, env *executor.Env, res *executor.Result,
	runErr error, took time.Duration) {
	cause := context.Cause(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if runErr != nil && l.state != lifecycle.Aborting && !errors.Is(cause, errAbort) && e.base.Err() != nil {
		// Shutdown: the session stays as it is for the next start's recovery.
		return
	}
	defer e.forget(l)
	if l.state == lifecycle.Aborting || errors.Is(cause, errAbort) {
		reason := "cleanup finished"
		if runErr == nil {
			reason = "finished before the abort took effect"
		}
		if err := e.transitionLocked(l, store.Change{To: lifecycle.Aborted, Reason: reason}); err != nil {
			e.log.Error("abort", "session", l.id, "err", err)
		}
		return
	}
	reached := l.mark.from // the step the run reached
	if res != nil {
		reached += res.Steps
	}
	// The totals span restarts (totals.go); the risk events are the audit
	// log's (riskevents.go).
	summary := e.summaryLocked(l, e.totalsLocked(l, reached), runErr)
	if runErr == nil {
		// The executor's own list (it survives a resume), then the
		// engine's warnings from outside it (Warn).
		summary.Warnings = append(append(summary.Warnings[:0:0], res.Warnings...), l.extWarnings...)
		outputs, err := json.Marshal(res.Outputs)
		var env *wire.Envelope
		if err == nil {
			done := &wire.TaskCompleted{Outputs: outputs, Artifacts: wireArtifacts(res.Artifacts), ExecutionSummary: summary}
			env, err = wire.NewEnvelope(&l.uid, done, e.cfg.Now())
		}
		if err == nil {
			// COMPLETED, session_closed and task_completed in one commit.
			err = e.transitionLocked(l, store.Change{To: lifecycle.Completed, Reason: "task finished successfully"}, env)
		}
		if err != nil {
			runErr = &executor.Failure{Code: executor.CodeInternal, StepIndex: len(rec.Steps()), Err: err}
		} else {
			return
		}
	}
	f := &executor.Failure{Code: executor.CodeExecution, Err: runErr}
	if !errors.As(runErr, &f) {
		f = &executor.Failure{Code: executor.Classify(ctx, runErr), Err: runErr}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		f.Code = executor.CodeTimeout
	} else if bf := budgetFailure(cause, f); bf != nil {
		f = bf
	}
	summary.StepsExecuted = e.totalsLocked(l, f.StepIndex).Steps
	var partial map[string]any
	var arts []executor.Artifact
	if rec != nil {
		partial, arts = rec.Partial(env)
	}
	e.failLocked(l, f, partial, arts, summary)
}

// failLocked moves the session to FAILED (through RUNNING when paused) with
// an error event, and sends task_failed (l.mu held).
func (e *Engine) failLocked(l *live, f *executor.Failure, partial map[string]any, arts []executor.Artifact,
	summary *wire.ExecutionSummary) {
	msg := f.Error()
	if f.Err != nil {
		msg = f.Err.Error()
	}
	var cs []store.Change
	if l.state == lifecycle.Paused {
		cs = append(cs, store.Change{To: lifecycle.Running, Reason: string(f.Code) + ": failing while paused"})
	}
	reason := string(f.Code)
	e.log.Warn("session failed", "session", l.id, "code", f.Code, "step", f.Step, "step_index", f.StepIndex+1, "err", msg)
	cs = append(cs, store.Change{To: lifecycle.Failed, Reason: reason,
		Before: []store.Emit{{Type: lifecycle.EventError, Data: errorData{Code: string(f.Code), Message: msg, Recoverable: false}}}})
	lastCkpt := l.lastCkpt
	if lastCkpt == "" && l.sess.LastCheckpoint != 0 {
		lastCkpt = fmt.Sprintf("ckpt-%06d", l.sess.LastCheckpoint)
	}
	l.lastCkpt = lastCkpt
	det := failDetails{Phase: f.Phase, Step: f.Step, StepIndex: f.StepIndex + 1, LastCheckpoint: lastCkpt, Recoverable: f.Recoverable}
	var ex *budget.ExceededError
	if f.Code == CodeBudgetExceeded && errors.As(f.Err, &ex) {
		det.Budget = ex
	}
	db, _ := json.Marshal(det)
	if partial == nil {
		partial = map[string]any{}
	}
	pb, _ := json.Marshal(partial)
	tf := &wire.TaskFailed{ErrorCode: string(f.Code), ErrorMessage: msg, ErrorDetails: db, PartialOutputs: pb,
		Artifacts: wireArtifacts(arts), ExecutionSummary: summary}
	env, err := wire.NewEnvelope(&l.uid, tf, e.cfg.Now())
	if err != nil {
		e.log.Error("task_failed", "session", l.id, "err", err)
		env = nil
	}
	// FAILED (through RUNNING when paused), its error event,
	// session_closed and task_failed in one commit.
	var final []*wire.Envelope
	if env != nil {
		final = append(final, env)
	}
	if err := e.transitionsLocked(l, cs, final...); err != nil {
		e.log.Error("fail", "session", l.id, "err", err)
	}
}
