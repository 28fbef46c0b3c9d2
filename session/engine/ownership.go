package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"hcp-edge/session/audit"
	"hcp-edge/session/capability"
	"hcp-edge/session/gate"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// The ways a session changes owner (store.Ownership.Via).
const (
	// ViaHandoff: the owner handed the session to another caller
	// (session_handoff).
	ViaHandoff = "handoff"
	// ViaTakeover: a technician at the rig took the session over
	// (hcp-edge takeover).
	ViaTakeover = "takeover"
	// ViaHandback: the technician gave it back to the owner before the
	// takeover (hcp-edge handback).
	ViaHandback = "handback"
)

// Errors of the ownership hand-off. Each refusal leaves the session as it
// was; the broker's refusals are audited and answered (RefusalCode).
var (
	// ErrNotOwner: the caller asking is not the session's current owner
	// (a former owner keeps its history, read-only).
	ErrNotOwner = errors.New("engine: not the session's owner")
	// ErrHandoffTarget: the new owner may not own the session (the gate's
	// ACL: capability, risk level, data classification), or is the local
	// technician (who takes a session over at the rig, not by message).
	ErrHandoffTarget = errors.New("engine: the target may not own the session")
	// ErrHandoffInvalid: no target, or the target is the owner already.
	ErrHandoffInvalid = errors.New("engine: invalid hand-off")
	// ErrSessionEnded: the session has ended or is ending (ABORTING).
	ErrSessionEnded = errors.New("engine: the session has ended")
	// ErrTakenOver: the session is taken over by a technician already.
	ErrTakenOver = errors.New("engine: the session is taken over locally")
	// ErrNotTakenOver: handback of a session no technician took over.
	ErrNotTakenOver = errors.New("engine: the session is not taken over")
)

// HandoffConfig is who may own a session (Config.Handoff).
type HandoffConfig struct {
	// Callers is the gate's access control list (gate.Config.Callers): a
	// hand-off's target must be allowed the session's capability, its
	// assessed risk level and its data classification. Nil refuses every
	// hand-off.
	Callers map[string]gate.CallerACL
	// Local is the caller id of the local technician ("local" when
	// empty): the owner of a session taken over at the rig, whose
	// messages stay on the control socket.
	Local string
}

func (e *Engine) local() string {
	if e.cfg.Handoff.Local == "" {
		return "local"
	}
	return e.cfg.Handoff.Local
}

// RefusalCode is the task_rejected reason_code that answers a refused
// hand-off or control command: not_found, session_ended, forbidden,
// invalid_input, invalid_state (a session awaiting approval, or one this
// agent does not run now); internal_error for anything else (not a
// refusal: IsRefusal).
func RefusalCode(err error) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return wire.ReasonNotFound
	case errors.Is(err, ErrSessionEnded):
		return wire.ReasonSessionEnded
	case errors.Is(err, ErrNotOwner), errors.Is(err, ErrHandoffTarget), errors.Is(err, ErrTakenOver):
		return wire.ReasonForbidden
	case errors.Is(err, ErrHandoffInvalid):
		return wire.ReasonInvalidInput
	case errors.Is(err, ErrState):
		return wire.ReasonInvalidState
	}
	return "internal_error"
}

// HandoffRequest is a session_handoff from the broker.
type HandoffRequest struct {
	SessionID string
	// By is the broker-verified caller id of who asks (the AMQP user_id
	// mapped by the gate's broker_users), never a field of the message.
	By string
	// To is the caller id of the new owner.
	To     string
	Reason string
	// RequestID is the session_handoff's message_id: the refusal answers
	// it (hcp-in-reply-to), the chain keeps it, and a redelivered request
	// already done is not done twice.
	RequestID string
}

// ownershipEvent is the data of an ownership_changed event: stored as a
// warning whose code is ownership_changed (lifecycle knows the nine L2
// types only), sent with event_type ownership_changed.
type ownershipEvent struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	wire.OwnershipChanged
}

// ownershipRefusal is the detail of the audit entry of a refused hand-off,
// takeover, handback or control command.
type ownershipRefusal struct {
	Decision  string `json:"decision"` // handoff_refused, takeover_refused, handback_refused, control_refused
	Action    string `json:"action,omitempty"`
	By        string `json:"by"`
	To        string `json:"to,omitempty"`
	Owner     string `json:"owner,omitempty"`
	Code      string `json:"reason_code"`
	Error     string `json:"error"`
	RequestID string `json:"request_id,omitempty"`
}

// Handoff hands session req.SessionID from its owner req.By to req.To:
// one transaction appends the record to the ownership chain, makes To the
// session's owner (its events go to To from the next one on), stores the
// ownership_changed event and queues it for both owners, and audits it.
// The session id (the correlation) and the run are untouched. A refusal —
// unknown session (ErrNotFound), ended (ErrSessionEnded), not the owner
// (ErrNotOwner), a target the ACL does not allow (ErrHandoffTarget), no
// or the same target (ErrHandoffInvalid) — changes nothing, is audited,
// and (with a RequestID) answered to req.By with a task_rejected whose
// reason_code is RefusalCode(err), in one transaction. A request whose
// RequestID is in the chain already returns that record.
func (e *Engine) Handoff(ctx context.Context, req HandoffRequest) (store.Ownership, error) {
	rec, err := e.handoff(ctx, req)
	if IsRefusal(err) {
		e.refuseOwnership(ctx, req.SessionID, req.RequestID, ownershipRefusal{Decision: "handoff_refused", By: req.By, To: req.To}, err)
	}
	return rec, err
}

func (e *Engine) handoff(ctx context.Context, req HandoffRequest) (store.Ownership, error) {
	if req.By == "" {
		return store.Ownership{}, fmt.Errorf("%w: the request has no verified caller", ErrNotOwner)
	}
	if req.To == "" {
		return store.Ownership{}, fmt.Errorf("%w: no target caller", ErrHandoffInvalid)
	}
	l, err := e.liveOwned(ctx, req.SessionID)
	if err != nil {
		return store.Ownership{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if req.RequestID != "" {
		chain, err := e.cfg.Store.Ownership(ctx, l.id)
		if err != nil {
			return store.Ownership{}, fmt.Errorf("engine: %w", err)
		}
		for _, r := range chain {
			if r.RequestID == req.RequestID {
				return r, nil
			}
		}
	}
	if err := controllable(l); err != nil {
		return store.Ownership{}, err
	}
	switch {
	case l.caller == e.local() && req.By != e.local():
		return store.Ownership{}, fmt.Errorf("%w: session %s is taken over by a technician at the rig; it may hand it back (hcp-edge handback): %w",
			ErrNotOwner, l.id, ErrTakenOver)
	case l.caller != req.By:
		return store.Ownership{}, fmt.Errorf("%w: session %s is owned by %s, not %s", ErrNotOwner, l.id, l.caller, req.By)
	case req.To == l.caller:
		return store.Ownership{}, fmt.Errorf("%w: %s owns session %s already", ErrHandoffInvalid, req.To, l.id)
	}
	if err := e.mayOwn(l, req.To); err != nil {
		return store.Ownership{}, err
	}
	return e.transferLocked(ctx, l, store.Ownership{From: l.caller, To: req.To, By: req.By, Via: ViaHandoff,
		Reason: req.Reason, RequestID: req.RequestID})
}

// Takeover makes the local technician (HandoffConfig.Local) the owner of
// session id, as operator (required), whoever owns it: its events keep
// being recorded and go to the control socket's watchers, and the previous
// owner's remote control is refused until Handback. The chain record, the
// ownership_changed event (sent to the previous owner too) and the audit
// entry commit in one transaction. An unknown id, an ended session or one
// taken over already changes nothing (the refusal is audited).
func (e *Engine) Takeover(ctx context.Context, id, operator, reason string) (store.Ownership, error) {
	rec, err := e.takeover(ctx, id, operator, reason)
	if IsRefusal(err) {
		e.refuseOwnership(ctx, id, "", ownershipRefusal{Decision: "takeover_refused", By: operator, To: e.local()}, err)
	}
	return rec, err
}

// withOperatorLocked runs f on session id's live run, locked, once the
// technician's verb (takeover, handback) names an operator and the session
// can still change owner.
func (e *Engine) withOperatorLocked(ctx context.Context, verb, id, operator string, f func(l *live) (store.Ownership, error)) (store.Ownership, error) {
	if operator == "" {
		return store.Ownership{}, fmt.Errorf("%w: %s needs the operator's name (--operator NAME)", ErrHandoffInvalid, verb)
	}
	l, err := e.liveOwned(ctx, id)
	if err != nil {
		return store.Ownership{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := controllable(l); err != nil {
		return store.Ownership{}, err
	}
	return f(l)
}

func (e *Engine) takeover(ctx context.Context, id, operator, reason string) (store.Ownership, error) {
	return e.withOperatorLocked(ctx, "takeover", id, operator, func(l *live) (store.Ownership, error) {
		return e.takeoverLocked(ctx, l, operator, reason)
	})
}

func (e *Engine) takeoverLocked(ctx context.Context, l *live, operator, reason string) (store.Ownership, error) {
	if l.caller == e.local() {
		return store.Ownership{}, fmt.Errorf("%w: session %s is owned locally already", ErrTakenOver, l.id)
	}
	return e.transferLocked(ctx, l, store.Ownership{From: l.caller, To: e.local(), By: operator, Via: ViaTakeover, Reason: reason})
}

// Handback returns session id, taken over by a technician, to the owner
// it had before the takeover, as operator (required); the same one
// transaction as Takeover. A session not taken over (ErrNotTakenOver),
// unknown or ended changes nothing (audited).
func (e *Engine) Handback(ctx context.Context, id, operator, reason string) (store.Ownership, error) {
	rec, err := e.handback(ctx, id, operator, reason)
	if IsRefusal(err) {
		e.refuseOwnership(ctx, id, "", ownershipRefusal{Decision: "handback_refused", By: operator}, err)
	}
	return rec, err
}

func (e *Engine) handback(ctx context.Context, id, operator, reason string) (store.Ownership, error) {
	return e.withOperatorLocked(ctx, "handback", id, operator, func(l *live) (store.Ownership, error) {
		return e.handbackLocked(ctx, l, operator, reason)
	})
}

func (e *Engine) handbackLocked(ctx context.Context, l *live, operator, reason string) (store.Ownership, error) {
	chain, err := e.cfg.Store.Ownership(ctx, l.id)
	if err != nil {
		return store.Ownership{}, fmt.Errorf("engine: %w", err)
	}
	if l.caller != e.local() || len(chain) == 0 || chain[len(chain)-1].Via != ViaTakeover {
		return store.Ownership{}, fmt.Errorf("%w: session %s is owned by %s", ErrNotTakenOver, l.id, l.caller)
	}
	to := chain[len(chain)-1].From
	return e.transferLocked(ctx, l, store.Ownership{From: l.caller, To: to, By: operator, Via: ViaHandback, Reason: reason})
}

// Ownership returns session id's ownership chain, oldest first (none: the
// submitting caller owns it), and its current owner.
func (e *Engine) Ownership(ctx context.Context, id string) ([]store.Ownership, string, error) {
	s, err := e.cfg.Store.Session(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, "", fmt.Errorf("engine: %w", err)
	}
	chain, err := e.cfg.Store.Ownership(ctx, id)
	if err != nil {
		return nil, "", fmt.Errorf("engine: %w", err)
	}
	return chain, s.CallerID, nil
}

// AuthorizeControl reports whether caller (broker-verified) may send
// control command action (abort...) to session id: nil when it owns the
// session. A refusal (ErrNotOwner; ErrNotFound for an unknown session,
// which is not audited) is audited, and a former owner — which keeps its
// history read-only — is answered with a task_rejected (forbidden, naming
// the owner) in the same transaction when requestID is set. An abort that
// passes the check races only a hand-off committing at that instant; it
// moves the rig toward safe either way.
func (e *Engine) AuthorizeControl(ctx context.Context, id, caller, action, requestID string) error {
	s, err := e.cfg.Store.Session(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	case err != nil:
		return fmt.Errorf("engine: %w", err)
	case caller != "" && s.CallerID == caller:
		return nil
	}
	refusal := fmt.Errorf("%w: %s of session %s by %s: the session is owned by %s", ErrNotOwner, action, id, caller, s.CallerID)
	chain, err := e.cfg.Store.Ownership(ctx, id)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	former := slices.ContainsFunc(chain, func(r store.Ownership) bool { return r.From == caller })
	if former {
		last := chain[len(chain)-1]
		refusal = fmt.Errorf("%w: %s of session %s by %s: it was handed to %s (%s by %s at %s); %s keeps its history read-only",
			ErrNotOwner, action, id, caller, s.CallerID, last.Via, last.By, last.At.UTC().Format(time.RFC3339), caller)
	} else {
		requestID = "" // a stranger learns nothing of the session
	}
	e.refuseOwnership(ctx, id, requestID, ownershipRefusal{Decision: "control_refused", Action: action, By: caller, Owner: s.CallerID}, refusal)
	return refusal
}

// liveOwned is the live session id, or the error a refusal names.
func (e *Engine) liveOwned(ctx context.Context, id string) (*live, error) {
	if l := e.get(id); l != nil && l.id == id {
		return l, nil
	}
	s, err := e.cfg.Store.Session(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrBadID):
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	case err != nil:
		return nil, fmt.Errorf("engine: %w", err)
	case s.State.Terminal():
		return nil, fmt.Errorf("%w: session %s is %s", ErrSessionEnded, id, s.State)
	}
	return nil, fmt.Errorf("%w: session %s (%s) is not running in this agent", ErrState, id, s.State)
}

// controllable refuses an ended or ending session, and one awaiting its
// approval (its task_accepted still goes to the submitter), l.mu held.
func controllable(l *live) error {
	switch {
	case l.state.Terminal() || l.state == lifecycle.Aborting:
		return fmt.Errorf("%w: session %s is %s", ErrSessionEnded, l.id, l.state)
	case l.state == lifecycle.Pending:
		return fmt.Errorf("%w: session %s awaits its approval (PENDING); its owner may change once it runs", ErrState, l.id)
	}
	return nil
}

// mayOwn checks to against the gate's ACL for l's capability, assessed
// risk and data classification.
func (e *Engine) mayOwn(l *live, to string) error {
	if to == e.local() {
		return fmt.Errorf("%w: %s is the technician at the rig, who takes a session over there (hcp-edge takeover)", ErrHandoffTarget, to)
	}
	if err := wire.CheckID(to); err != nil {
		return fmt.Errorf("%w: %q is not a caller id", ErrHandoffInvalid, to)
	}
	acl, ok := e.cfg.Handoff.Callers[to]
	switch {
	case !ok:
		return fmt.Errorf("%w: caller %s has no permissions on this agent", ErrHandoffTarget, to)
	case !slices.Contains(acl.Capabilities, l.capab.Name) && !slices.Contains(acl.Capabilities, "*"):
		return fmt.Errorf("%w: caller %s may not use %s", ErrHandoffTarget, to, l.capab.Name)
	case capability.RiskLevel(l.sess.RiskLevel).Rank() == 0 || capability.RiskLevel(l.sess.RiskLevel).Rank() > acl.MaxRiskLevel.Rank():
		return fmt.Errorf("%w: session %s is %s, caller %s is authorised up to %s", ErrHandoffTarget, l.id, l.sess.RiskLevel, to, acl.MaxRiskLevel)
	case gate.Classification(l.class).Rank() == 0 || gate.Classification(l.class).Rank() > acl.MaxDataClassification.Rank():
		return fmt.Errorf("%w: session %s holds data classified %s, caller %s is authorised up to %s", ErrHandoffTarget, l.id,
			l.class, to, acl.MaxDataClassification)
	}
	return nil
}

// transferLocked records rec (From → To) for l and sends ownership_changed
// to both owners in one transaction, then makes To l's owner (l.mu held,
// so every event before it went to From and every one after goes to To).
func (e *Engine) transferLocked(ctx context.Context, l *live, rec store.Ownership) (store.Ownership, error) {
	rec.At = e.cfg.Now().UTC().Round(0) // as the chain stores it
	var out store.Ownership
	var sess store.Session
	var sent []store.Message
	err := e.cfg.Store.Update(ctx, func(w *store.Tx) error {
		chain, err := w.Ownership(l.id)
		if err != nil {
			return err
		}
		data := ownershipEvent{Code: wire.EventOwnershipChanged,
			Message: fmt.Sprintf("session owner %s → %s (%s by %s)", rec.From, rec.To, rec.Via, rec.By),
			OwnershipChanged: wire.OwnershipChanged{From: rec.From, To: rec.To, By: rec.By, Via: rec.Via, Reason: rec.Reason,
				At: rec.At.UTC().Format(wire.TimestampLayout), RequestID: rec.RequestID, Index: len(chain) + 1}}
		var evs []store.Event
		if out, sess, evs, err = w.Transfer(l.id, rec, store.Emit{Type: lifecycle.EventWarning, Data: data}); err != nil {
			return err
		}
		envs, err := e.eventEnvelopes(l, evs)
		if err != nil {
			return err
		}
		for _, env := range envs {
			if err := w.Send(store.Message{CallerID: rec.From, Envelope: env}, store.Message{CallerID: rec.To, Envelope: env}); err != nil {
				return err
			}
		}
		sent = w.Sent()
		return nil
	})
	if errors.Is(err, store.ErrEnded) {
		return store.Ownership{}, fmt.Errorf("%w: %w", ErrSessionEnded, err)
	}
	if errors.Is(err, store.ErrNotOwner) {
		return store.Ownership{}, fmt.Errorf("%w: %w", ErrNotOwner, err)
	}
	if err != nil {
		return store.Ownership{}, fmt.Errorf("engine: ownership of %s: %w", l.id, err)
	}
	l.caller, l.sess.CallerID = rec.To, sess.CallerID // not the whole record: the run reads its other fields unlocked
	e.log.Warn("session owner changed", "session", l.id, "from", rec.From, "to", rec.To, "via", rec.Via, "by", rec.By)
	for _, m := range sent {
		e.fanOut(m.CallerID, []*wire.Envelope{m.Envelope})
	}
	return out, nil
}

// refuseOwnership audits a refused ownership request or control command
// and, when requestID is set and who asked is a remote caller, answers it
// with a task_rejected in the same transaction. A failure is logged: the
// refusal itself stands.
func (e *Engine) refuseOwnership(ctx context.Context, id, requestID string, d ownershipRefusal, refusal error) {
	d.Code, d.Error, d.RequestID = RefusalCode(refusal), refusal.Error(), requestID
	b, err := json.Marshal(d)
	if err != nil {
		e.log.Error("ownership refusal", "session", id, "err", err)
		return
	}
	var env *wire.Envelope
	if requestID != "" && d.By != "" && d.By != e.local() && wire.CheckID(d.By) == nil {
		var sid *uuid.UUID
		if u, err := uuid.Parse(id); err == nil {
			sid = &u
		}
		msg := refusal.Error()
		if len(msg) > 500 {
			msg = msg[:500]
		}
		if env, err = wire.NewEnvelope(sid, &wire.TaskRejected{ReasonCode: d.Code, ReasonMessage: msg}, e.cfg.Now()); err != nil {
			e.log.Error("ownership refusal", "session", id, "err", err)
			env = nil
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err = e.cfg.Store.Update(sctx, func(w *store.Tx) error {
		if _, err := w.Audit(sctx, audit.Entry{SessionID: auditSession(id), Kind: audit.KindOwnership, Detail: string(b)}); err != nil {
			return err
		}
		if env == nil {
			return nil
		}
		return w.Send(store.Message{CallerID: d.By, Envelope: env, InReplyTo: requestID})
	})
	if err != nil {
		e.log.Error("ownership refusal", "session", id, "err", err)
		return
	}
	e.log.Warn("ownership request refused", "decision", d.Decision, "session", id, "by", d.By, "code", d.Code, "err", refusal)
	if env != nil {
		e.fanOut(d.By, []*wire.Envelope{env})
	}
}

// auditSession is the session id an audit entry may carry: an id the
// store would refuse is left out (the detail keeps the refusal).
func auditSession(id string) string {
	if id == "" || len(id) > store.MaxIDLen {
		return ""
	}
	return id
}

// IsRefusal reports whether err is a refusal of an ownership request or a
// control command (audited and, where the protocol allows, answered), as
// opposed to a failure of the store.
func IsRefusal(err error) bool { return err != nil && RefusalCode(err) != "internal_error" }
