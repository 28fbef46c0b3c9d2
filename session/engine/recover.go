package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"hcp-edge/session/atrest"
	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// Action is what recovery does with one non-terminal session.
type Action string

// Recovery actions.
const (
	ActResume        Action = "resume"         // RUNNING: continue from the checkpoint
	ActHold          Action = "hold"           // PAUSED: recovered, held until an operator resumes
	ActFail          Action = "fail"           // RUNNING or PAUSED: FAILED with last_checkpoint and partial outputs
	ActAwaitApproval Action = "await_approval" // PENDING awaiting approval: the timeout is re-armed
	ActReject        Action = "reject"         // PENDING: REJECTED
	ActFinishAbort   Action = "finish_abort"   // ABORTING: cleanup, then ABORTED
)

// Facts are what the recovery decision looks at.
type Facts struct {
	State          lifecycle.State
	Restorable     bool // the session's record, capability and executor are usable
	HasCheckpoint  bool
	Resumable      bool // the last checkpoint says so
	Latched        bool
	Trips          []string      // trip conditions the current readings show
	Outage         time.Duration // wall time since the session's last event
	Grace          time.Duration
	Expired        bool // max_duration has passed
	NeedApproval   bool
	ApprovalExpiry bool // the approval timeout has passed
	// NotReady says why the rig cannot carry on a physical session right
	// now though nothing is wrong with it (executor.Ready: typically the
	// interlock relay, which the agent de-energises at start); "" if ready.
	NotReady string
	// AwaitingInput: the session is PAUSED at a recipe's question
	// (question.go). It emits nothing while it waits, so the time since
	// its last event is no outage: the question's own deadline bounds the
	// wait, not the grace.
	AwaitingInput bool
}

// Decision is the recovery decision of one session; Code is the L4 error
// code of a failure.
type Decision struct {
	Action Action
	Code   executor.Code
	Reason string
}

// Decide is the recovery decision table. A RUNNING or PAUSED session
// resumes only when its checkpoint is resumable, the rig is not latched and
// shows no trip condition, the outage is shorter than the grace, and
// max_duration has not passed; otherwise it fails. A RUNNING session whose
// rig is not ready (the interlock relay de-energised at start) is held in
// PAUSED until an operator arms the rig and resumes it: the agent never
// re-energises anything by itself. A PENDING session
// awaiting approval waits again (a blocked session never resumes itself);
// one that was accepted without approval but never reached RUNNING is
// rejected (its task_submit is redelivered and decided anew).
func Decide(f Facts) Decision {
	switch f.State {
	case lifecycle.Pending:
		switch {
		case !f.Restorable:
			return Decision{Action: ActReject, Reason: "session record unusable after restart"}
		case !f.NeedApproval:
			return Decision{Action: ActReject, Reason: "interrupted before acceptance"}
		case f.ApprovalExpiry:
			return Decision{Action: ActReject, Reason: "approval timeout"}
		}
		return Decision{Action: ActAwaitApproval, Reason: "awaiting approval"}
	case lifecycle.Aborting:
		return Decision{Action: ActFinishAbort, Reason: "abort cleanup after restart"}
	case lifecycle.Running, lifecycle.Paused:
	default:
		return Decision{Action: ActFail, Code: executor.CodeInternal, Reason: "unknown state " + string(f.State)}
	}
	fail := func(code executor.Code, why string) Decision {
		return Decision{Action: ActFail, Code: code, Reason: why}
	}
	switch {
	case !f.Restorable:
		return fail(executor.CodeInternal, "session record, capability or executor unusable after restart")
	case f.Expired:
		return fail(executor.CodeTimeout, "max_duration passed during the outage")
	case !f.HasCheckpoint:
		return fail(executor.CodeInternal, "restart before the first checkpoint")
	case !f.Resumable:
		return fail(executor.CodeInternal, "last checkpoint is not resumable")
	case f.Latched:
		return fail(executor.CodeSafetyViolation, "interlock latched at restart")
	case len(f.Trips) > 0:
		return fail(executor.CodeSafetyViolation, "rig outside the envelope at restart: "+f.Trips[0])
	case f.Outage >= f.Grace && !f.AwaitingInput:
		return fail(executor.CodeInternal, fmt.Sprintf("outage %v longer than the recovery grace %v", f.Outage.Round(time.Millisecond), f.Grace))
	}
	if f.State == lifecycle.Paused {
		return Decision{Action: ActHold, Reason: lifecycle.ReasonRecovered}
	}
	if f.NotReady != "" {
		return Decision{Action: ActHold, Reason: "held after restart: " + f.NotReady + "; arm the rig, then resume"}
	}
	return Decision{Action: ActResume, Reason: lifecycle.ReasonRecovered}
}

// Recovery reports what Recover did with one session.
type Recovery struct {
	SessionID string
	From      lifecycle.State
	Decision  Decision
	Err       error
}

// Recover takes up every non-terminal session of the store (call it once,
// after the interlock is up and before serving): each resumes, waits, or
// ends, as Decide says. Failing sessions get their recipe's cleanup. The
// pending access requests of T4 sessions keep holding their results; their
// expiry is armed again.
func (e *Engine) Recover(ctx context.Context) ([]Recovery, error) {
	sessions, err := e.cfg.Store.Sessions(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("engine: recover: %w", err)
	}
	var trips []string
	if e.cfg.Trips != nil {
		trips = e.cfg.Trips(ctx)
	} else {
		for _, t := range e.cfg.Rig.Envelope().EvaluateTrips(e.cfg.Rig.Readings(ctx)) {
			trips = append(trips, fmt.Sprintf("%s on %s: %s", t.Trip, t.Channel, t.Reason))
		}
	}
	latched, _ := e.cfg.Rig.Latched()
	// A physical session resumes only on a rig whose every instrument has
	// a fresh reading (waited for within max_reading_age: late is not
	// stale) and whose safety inputs say ready.
	var notReady string
	if len(sessions) > 0 {
		maxAge := e.cfg.Rig.Envelope().MaxReadingAge()
		rd, err := executor.AwaitFresh(ctx, e.cfg.Rig, maxAge, maxAge)
		if err == nil {
			err = executor.Ready(e.cfg.Rig.Envelope(), rd, maxAge)
		}
		if err != nil {
			notReady = err.Error()
		}
	}
	now := e.cfg.Now()
	var out []Recovery
	for _, sess := range sessions {
		l, rerr := e.restore(sess)
		f := Facts{State: sess.State, Restorable: rerr == nil, Latched: latched, Trips: trips, Grace: e.cfg.RecoveryGrace}
		if l.capab != nil && l.capab.Safety.InvolvesPhysicalResources {
			f.NotReady = notReady
		}
		last := sess.LastEventAt
		if last.IsZero() {
			last = sess.UpdatedAt
		}
		f.Outage = now.Sub(last)
		var cp store.Checkpoint
		if rerr == nil {
			f.NeedApproval = l.meta.NeedApproval
			f.AwaitingInput = sess.State == lifecycle.Paused && l.meta.Question != nil
			f.ApprovalExpiry = !now.Before(sess.CreatedAt.Add(e.cfg.ApprovalTimeout))
			if !l.meta.RunningSince.IsZero() {
				l.deadline = l.meta.RunningSince.Add(e.runWall(l.maxDur))
				f.Expired = !now.Before(l.deadline)
				// Across a restart only the wall clock knows how long it ran.
				l.runMono = e.pc.Elapsed() - max(now.Sub(l.meta.RunningSince), 0)
			}
			var ok bool
			cp, ok, err = e.cfg.Store.LastCheckpoint(ctx, sess.ID)
			if err != nil {
				rerr = err
				f.Restorable = false
			}
			f.HasCheckpoint, f.Resumable = ok, ok && cp.Resumable
		}
		d := Decide(f)
		if errors.Is(rerr, atrest.ErrNoKey) && d.Action == ActFail {
			d.Reason = fmt.Sprintf("the %s session's checkpoint is sealed at rest and no at-rest key is configured", sess.DataClass)
			e.log.Error("recovery", "session", sess.ID, "err", rerr)
		}
		r := Recovery{SessionID: sess.ID, From: sess.State, Decision: d}
		r.Err = e.apply(ctx, l, d, cp, rerr)
		out = append(out, r)
	}
	// After the sessions: one that recovery just ended may hold its
	// results already.
	if err := e.recoverAccess(ctx); err != nil {
		return out, err
	}
	return out, nil
}

// restore rebuilds the live session of a stored one. On error the returned
// live is still usable to close the session.
func (e *Engine) restore(sess store.Session) (*live, error) {
	l := &live{id: sess.ID, caller: sess.CallerID, sess: sess, class: sess.DataClass, state: sess.State, maxDur: time.Duration(sess.MaxDuration),
		token: sess.Token, resume: make(chan struct{}, 1), done: make(chan struct{}), abortTO: e.cfg.DefaultAbortTimeout}
	uid, err := uuid.Parse(sess.ID)
	if err != nil {
		return l, fmt.Errorf("engine: session id %q: %w", sess.ID, err)
	}
	l.uid = uid
	if err := json.Unmarshal(sess.Metadata, &l.meta); err != nil {
		return l, fmt.Errorf("engine: session %s metadata: %w", sess.ID, err)
	}
	l.abortTO = e.abortTimeout(l.meta.AbortTimeout)
	l.sub = &wire.TaskSubmit{}
	if err := json.Unmarshal(l.meta.Submit, l.sub); err != nil {
		return l, fmt.Errorf("engine: session %s task: %w", sess.ID, err)
	}
	if l.meta.Recipe != nil {
		// A recipe session recovers with the recipe it was accepted with,
		// kept in its metadata, whatever the agent has loaded since.
		c, x, err := e.pinnedRecipe(l.meta)
		if err != nil {
			return l, fmt.Errorf("engine: session %s: %w", sess.ID, err)
		}
		l.capab, l.exec = c, x
	} else {
		c, err := e.cfg.Registry.Resolve(sess.Capability, sess.CapabilityVersion)
		if err != nil {
			return l, fmt.Errorf("engine: session %s: %w", sess.ID, err)
		}
		l.capab = c
		x, ok := e.Executor(c.Name)
		if !ok {
			return l, fmt.Errorf("engine: session %s: no executor for %s", sess.ID, c.Name)
		}
		l.exec = x
	}
	if l.sealed() && e.cfg.AtRest == nil {
		return l, fmt.Errorf("engine: session %s is classified %s: its checkpoints and artifacts are sealed at rest and no at-rest key is configured: %w",
			sess.ID, sess.DataClass, atrest.ErrNoKey)
	}
	return l, nil
}

// checkpointPayload is the plaintext payload of cp, a checkpoint of l: a
// T3/T4 session's must be sealed, and opens with the at-rest key.
func (e *Engine) checkpointPayload(l *live, cp store.Checkpoint) ([]byte, error) {
	if l.sealed() && !cp.Sealed {
		return nil, fmt.Errorf("engine: checkpoint %s of a %s session is not sealed", cp.ID, l.class)
	}
	return cp.Open(l.id, e.atRest(l))
}

// reassemble rebuilds the state of last, the newest checkpoint of l and a
// journaled one: its state with the journal rows of every checkpoint of the
// session, in order, under executor.JournalKey. A checkpoint whose rows do
// not start where the previous ones ended is an error (nothing is guessed).
func (e *Engine) reassemble(ctx context.Context, l *live, last ckptPayload) ([]byte, error) {
	cps, err := e.cfg.Store.Checkpoints(ctx, l.id)
	if err != nil {
		return nil, err
	}
	var rows []json.RawMessage
	for _, cp := range cps {
		payload, err := e.checkpointPayload(l, cp)
		if err != nil {
			return nil, err
		}
		var p ckptPayload
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", cp.ID, err)
		}
		if !p.Journaled {
			continue // an older checkpoint holding its whole state
		}
		if p.JournalFrom != len(rows) {
			return nil, fmt.Errorf("checkpoint %s: journal rows from %d, %d before it", cp.ID, p.JournalFrom, len(rows))
		}
		var more []json.RawMessage
		if len(p.Journal) > 0 {
			if err := json.Unmarshal(p.Journal, &more); err != nil {
				return nil, fmt.Errorf("checkpoint %s journal: %w", cp.ID, err)
			}
		}
		rows = append(rows, more...)
	}
	if last.JournalFrom > len(rows) {
		return nil, fmt.Errorf("last checkpoint's journal starts at %d, %d found", last.JournalFrom, len(rows))
	}
	var st map[string]json.RawMessage
	if err := json.Unmarshal(last.State, &st); err != nil {
		return nil, fmt.Errorf("journaled state: %w", err)
	}
	if rows == nil {
		rows = []json.RawMessage{}
	}
	rb, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	st[executor.JournalKey] = rb
	return json.Marshal(st)
}

// apply carries out a recovery decision.
func (e *Engine) apply(ctx context.Context, l *live, d Decision, cp store.Checkpoint, rerr error) error {
	if l.capab != nil {
		e.mu.Lock()
		e.live[l.id] = l
		e.mu.Unlock()
	}
	var rec executor.Recipe
	next := 0
	if rerr == nil && cp.Seq != 0 {
		var p ckptPayload
		payload, err := e.checkpointPayload(l, cp)
		if err != nil {
			e.log.Error("recovery: checkpoint payload", "session", l.id, "checkpoint", cp.ID, "err", err)
			if d.Action == ActResume || d.Action == ActHold {
				d = Decision{Action: ActFail, Code: executor.CodeInternal, Reason: "checkpoint payload cannot be opened: " + err.Error()}
			}
		} else if err := json.Unmarshal(payload, &p); err == nil {
			l.budgetFrom = p.Budget
			l.mark.prior = priorTotals(p)
			state := p.State
			if p.Journaled {
				state, err = e.reassemble(ctx, l, p)
			}
			if err != nil {
				rec = nil
				if d.Action == ActResume || d.Action == ActHold {
					d = Decision{Action: ActFail, Code: executor.CodeInternal, Reason: "checkpoint journal cannot be reassembled: " + err.Error()}
				}
			} else if rec, next, err = l.exec.Resume(l.task(), state); err != nil {
				rec = nil
				if d.Action == ActResume || d.Action == ActHold {
					d = Decision{Action: ActFail, Code: executor.CodeInternal, Reason: "checkpoint cannot be resumed: " + err.Error()}
				}
			}
		} else if d.Action == ActResume || d.Action == ActHold {
			d = Decision{Action: ActFail, Code: executor.CodeInternal, Reason: "checkpoint payload unreadable"}
		}
		l.lastCkpt = cp.ID
	}
	switch d.Action {
	case ActAwaitApproval:
		e.awaitApproval(l, l.sess.CreatedAt.Add(e.cfg.ApprovalTimeout).Sub(e.cfg.Now()))
		return nil
	case ActReject:
		l.mu.Lock()
		defer l.mu.Unlock()
		var final []*wire.Envelope
		if l.meta.NeedApproval {
			// The caller heard approval_pending: it hears the rejection, in
			// the same commit as REJECTED.
			if env, werr := wire.NewEnvelope(&l.uid, &wire.TaskRejected{ReasonCode: "resource_unavailable",
				ReasonMessage: d.Reason, AssessedRiskLevel: l.sess.RiskLevel}, e.cfg.Now()); werr == nil {
				final = append(final, env)
			}
		}
		err := e.transitionLocked(l, store.Change{To: lifecycle.Rejected, Reason: d.Reason}, final...)
		e.forget(l)
		return err
	case ActResume, ActHold:
		tok, err := e.issue(l, l.deadline.Sub(e.cfg.Now()))
		if err != nil {
			d = Decision{Action: ActFail, Code: executor.CodeInternal, Reason: err.Error()}
			break
		}
		l.mu.Lock()
		l.token = tok
		if d.Action == ActHold && l.state == lifecycle.Running {
			// Held before its next step: holdIfPaused moves it to PAUSED.
			l.pauseReq, l.pauseWhy = true, d.Reason
		}
		err = e.step(l, func(w *store.Tx) error {
			sess, ev, err := w.Recovered(l.id)
			if err != nil {
				return err
			}
			envs, err := e.eventEnvelopes(l, []store.Event{ev})
			if err != nil {
				return err
			}
			w.OnCommit(func() { l.sess = sess })
			return e.send(w, l, envs...)
		})
		l.mu.Unlock()
		if err != nil {
			return fmt.Errorf("engine: recover %s: %w", l.id, err)
		}
		e.start(l, next, rec)
		return nil
	}
	// Cleanup (fail, finish_abort): a short token for the recipe's safe
	// actions, then SafeState when the recipe cannot do it.
	cleaned := false
	env := &executor.Env{Rig: e.cfg.Rig, Clock: e.clock, Sink: sink{e, l}, Checkpoints: sink{e, l},
		ArtifactDir: e.artifactDir(l.id), SessionID: l.id, AtRest: e.atRest(l), Logger: e.log.With("session", l.id)}
	if l.sealed() && env.AtRest == nil { // no partial artifacts in the clear
		env.ArtifactDir = ""
	}
	if rec != nil && l.capab != nil {
		if tok, err := e.issue(l, time.Minute); err == nil {
			env.Token = tok
			cctx, cancel := context.WithTimeout(ctx, max(l.abortTO, 5*time.Second))
			cleaned = rec.Cleanup(cctx, env) == nil
			cancel()
		}
	}
	if !cleaned && e.cfg.SafeState != nil && (l.capab == nil || l.capab.Safety.InvolvesPhysicalResources) {
		if err := e.cfg.SafeState(ctx, "recovery of session "+l.id+": "+d.Reason); err != nil {
			e.log.Error("safe state at recovery", "session", l.id, "err", err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	defer e.forget(l)
	if d.Action == ActFinishAbort {
		return e.transitionLocked(l, store.Change{To: lifecycle.Aborted, Reason: "cleanup finished after restart"})
	}
	var partial map[string]any
	var arts []executor.Artifact
	if rec != nil {
		partial, arts = rec.Partial(env)
	}
	f := &executor.Failure{Code: d.Code, Err: errors.New(d.Reason), StepIndex: next}
	if rec != nil && next < len(rec.Steps()) {
		f.Step, f.Phase = rec.Steps()[next].Name, rec.Steps()[next].Stage
	}
	e.failLocked(l, f, partial, arts, e.summaryLocked(l, e.totalsLocked(l, next), nil))
	return nil
}
