package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// Abort handles a caller's abort (or an operator's): RUNNING or PAUSED →
// ABORTING now, the run is cancelled and its cleanup runs; ABORTED follows
// when it ends. A cleanup still running after abort_timeout is cut short
// by SafeState. A session awaiting approval is rejected instead.
func (e *Engine) Abort(ctx context.Context, id, reason string) error {
	l := e.get(id)
	if l == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if reason == "" {
		reason = "caller_abort"
	}
	l.mu.Lock()
	switch l.state {
	case lifecycle.Pending:
		l.mu.Unlock()
		return e.resolve(ctx, l, false, "caller", "aborted by the caller before approval: "+reason)
	case lifecycle.Running, lifecycle.Paused:
	default:
		st := l.state
		l.mu.Unlock()
		return fmt.Errorf("%w: abort in %s", ErrState, st)
	}
	err := e.transitionLocked(l, store.Change{To: lifecycle.Aborting, Reason: reason})
	cancel, started, done := l.cancel, l.started, l.done
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("engine: abort %s: %w", id, err)
	}
	if !started {
		// Recovered into ABORTING without a run: close it here.
		l.mu.Lock()
		err := e.transitionLocked(l, store.Change{To: lifecycle.Aborted, Reason: "cleanup finished"})
		l.mu.Unlock()
		e.forget(l)
		return err
	}
	cancel(errAbort)
	to := l.abortTO
	e.spawn(func() {
		t := time.NewTimer(to)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			if e.cfg.SafeState != nil {
				sctx, c := context.WithTimeout(context.Background(), 30*time.Second)
				if err := e.cfg.SafeState(sctx, "abort_timeout of session "+l.id); err != nil {
					e.log.Error("safe state after abort timeout", "session", l.id, "err", err)
				}
				c()
			}
		}
	})
	return nil
}

// Pause asks a running session to stop at its next step boundary and hold
// (RUNNING → PAUSED then). The operator is recorded.
func (e *Engine) Pause(ctx context.Context, id, operator string) error {
	if operator == "" {
		return errors.New("engine: pause needs the operator's name")
	}
	l := e.get(id)
	if l == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != lifecycle.Running || !l.started {
		return fmt.Errorf("%w: pause in %s", ErrState, l.state)
	}
	l.pauseReq, l.pauseBy, l.pauseWhy = true, operator, ""
	return nil
}

// Resume continues a paused session (PAUSED → RUNNING), or cancels a pause
// request not yet taken.
func (e *Engine) Resume(ctx context.Context, id, operator string) error {
	if operator == "" {
		return errors.New("engine: resume needs the operator's name")
	}
	l := e.get(id)
	if l == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.state == lifecycle.Running && l.pauseReq:
		l.pauseReq = false
		return nil
	case l.state != lifecycle.Paused:
		return fmt.Errorf("%w: resume in %s", ErrState, l.state)
	case l.meta.Question != nil:
		// A blocked run does not resume but with its answer.
		return fmt.Errorf("%w: the session awaits an answer at %s (%s): hcp-edge answer %s %s VALUE",
			ErrState, l.meta.Question.CheckpointID, l.meta.Question.Question, l.id, l.meta.Question.CheckpointID)
	}
	if err := e.transitionLocked(l, store.Change{To: lifecycle.Running, Reason: "resumed by operator " + operator}); err != nil {
		return fmt.Errorf("engine: resume %s: %w", id, err)
	}
	l.pauseReq = false
	select {
	case l.resume <- struct{}{}:
	default:
	}
	return nil
}

// awaitApproval arms the approval timeout of a PENDING session.
func (e *Engine) awaitApproval(l *live, after time.Duration) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.approval[l.meta.ApprovalID] = l.id
	e.wg.Add(1)
	e.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timer = time.AfterFunc(max(after, 0), func() {
		defer e.wg.Done()
		if e.base.Err() != nil {
			return
		}
		ctx, cancel := storeCtx()
		defer cancel()
		if err := e.resolve(ctx, l, false, "", "approval timeout"); err != nil && !errors.Is(err, ErrState) {
			e.log.Error("approval timeout", "session", l.id, "err", err)
		}
	})
}

// Approve approves a pending session (by approval id or session id): the
// token is issued, PENDING → RUNNING with the operator in the audited
// transition, task_accepted and the first events are published, the run
// starts.
func (e *Engine) Approve(ctx context.Context, id, operator string) error {
	if operator == "" {
		return errors.New("engine: approve needs the operator's name")
	}
	_, err := e.ApproveAs(ctx, id, Signer{Display: operator})
	return err
}

// Deny refuses a pending session: PENDING → REJECTED (audited with the
// operator and reason) and task_rejected to the caller.
func (e *Engine) Deny(ctx context.Context, id, operator, reason string) error {
	if operator == "" {
		return errors.New("engine: deny needs the operator's name")
	}
	l := e.get(id)
	if l == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return e.resolve(ctx, l, false, operator, reason)
}

func (e *Engine) resolve(ctx context.Context, l *live, approve bool, operator, reason string) error {
	return e.resolveWith(ctx, l, approve, operator, reason, nil, signatureAudit{})
}

// resolveSigned is the last approval of a session: sigs (every signature,
// this one last) are kept with the session and det, this one's audit
// entry, is written in the transaction that starts it.
func (e *Engine) resolveSigned(ctx context.Context, l *live, operator string, sigs []Signature, det signatureAudit) error {
	return e.resolveWith(ctx, l, true, operator, "", sigs, det)
}

func (e *Engine) resolveWith(ctx context.Context, l *live, approve bool, operator, reason string, sigs []Signature, det signatureAudit) error {
	l.mu.Lock()
	if l.state != lifecycle.Pending || (approve && !l.meta.NeedApproval) {
		st := l.state
		l.mu.Unlock()
		return fmt.Errorf("%w: approval in %s", ErrState, st)
	}
	if operator != "" && !e.disarmLocked(l) {
		// The timeout is firing: it decides.
		l.mu.Unlock()
		return fmt.Errorf("%w: approval timed out", ErrState)
	}
	l.meta.Operator = operator
	l.mu.Unlock()
	if approve {
		l.mu.Lock()
		if l.state != lifecycle.Pending {
			st := l.state
			l.mu.Unlock()
			return fmt.Errorf("%w: approval in %s", ErrState, st)
		}
		prev := l.meta.Approvals
		if sigs != nil {
			l.meta.Approvals = sigs
		}
		err := e.step(l, func(w *store.Tx) error {
			if sigs != nil {
				if err := auditJSON(ctx, w, l.id, det); err != nil {
					return err
				}
			}
			envs, err := e.acceptTx(w, l, "approved by operator "+operator)
			if err != nil {
				return err
			}
			return e.send(w, l, envs...)
		})
		if err != nil {
			l.meta.Approvals = prev
		}
		l.mu.Unlock()
		if err != nil {
			return err
		}
		e.start(l, 0, nil)
		return nil
	}
	code, msg := wire.ReasonForbidden, "denied by operator "+operator
	switch {
	case operator == "":
		code, msg = "resource_unavailable", fmt.Sprintf("no operator approved the session within %v; resubmit when one is available", e.cfg.ApprovalTimeout)
	case operator == "caller":
		msg = reason
	case reason != "":
		msg += ": " + reason
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != lifecycle.Pending {
		return fmt.Errorf("%w: approval in %s", ErrState, l.state)
	}
	env, err := wire.NewEnvelope(&l.uid, &wire.TaskRejected{ReasonCode: code, ReasonMessage: msg,
		AssessedRiskLevel: l.sess.RiskLevel}, e.cfg.Now())
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if err := e.transitionLocked(l, store.Change{To: lifecycle.Rejected, Reason: msg}, env); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.forget(l)
	return nil
}
