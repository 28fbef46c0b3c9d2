package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"hcp-edge/session/atrest"
	"hcp-edge/session/audit"
	"hcp-edge/session/executor"
	"hcp-edge/session/gate"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// EventAccessPending is the event type that tells the caller of a T4
// session that its results (the final message) wait for an operator's
// access approval. Like approval_pending it is stored as a warning whose
// code is access_pending and sent with this event_type; it carries no
// result data.
const EventAccessPending = "access_pending"

// ErrorAccessDenied is the error_code of the task_failed a T4 session's
// caller receives when its access request is denied (by an operator, or by
// its expiry): no outputs, no partial outputs, no artifacts.
const ErrorAccessDenied = "access_denied"

// Errors of the access approval. Each leaves the state file unchanged.
var (
	// ErrAccessUnknown: no access request has that id (access id or
	// session id).
	ErrAccessUnknown = errors.New("engine: no such access request")
	// ErrAccessDecided: the request was approved or denied already.
	ErrAccessDecided = errors.New("engine: access request already decided")
	// ErrAccessExpired: the pending request, or the approval of a local
	// read, is past its time.
	ErrAccessExpired = errors.New("engine: access approval expired")
	// ErrAccessOperator: no operator named, or one who may not decide
	// (agent.access_approvers).
	ErrAccessOperator = errors.New("engine: operator may not decide access requests")
	// ErrAccessRequired: a read of a T4 session's data without an approved,
	// unexpired access request.
	ErrAccessRequired = errors.New("engine: T4 data needs an operator's access approval")
	// ErrAccessDenied: the session's access request was denied.
	ErrAccessDenied = errors.New("engine: access to the session's data was denied")
)

// withheldResult is the data of a T4 session's intermediate_result event:
// its result_type and is_partial, with data replaced by a note (the values
// are in the final message, held for the access decision).
func withheldResult(data any) executor.IntermediateResult {
	ir, _ := data.(executor.IntermediateResult)
	return executor.IntermediateResult{ResultType: ir.ResultType, IsPartial: ir.IsPartial,
		Data: map[string]any{"withheld": true, "reason": "T4 data: released only with the session's results, after an operator's access approval"}}
}

// accessData is the data of an access_pending event.
type accessData struct {
	Code    string        `json:"code"`
	Message string        `json:"message"`
	Details accessDetails `json:"details"`
}

type accessDetails struct {
	AccessID           string `json:"access_id"`
	DataClassification string `json:"data_classification"`
	Held               string `json:"held"` // the type of the held message
	ExpiresAt          string `json:"expires_at"`
}

// accessAudit is the detail of the audit entry of a request and of each
// decision (kind approval).
type accessAudit struct {
	Decision   string  `json:"decision"` // access_requested, access_signed, access_approved, access_renewed, access_denied
	AccessID   string  `json:"access_id"`
	Operator   string  `json:"operator,omitempty"`
	UID        *uint32 `json:"uid,omitempty"` // the signer's OS user (approvals)
	User       string  `json:"user,omitempty"`
	Meaning    string  `json:"meaning,omitempty"`   // the signature's meaning
	Signature  int     `json:"signature,omitempty"` // its number, from 1
	Required   int     `json:"required,omitempty"`  // how many the release needs
	Reason     string  `json:"reason,omitempty"`
	CallerID   string  `json:"caller_id,omitempty"`
	What       string  `json:"what,omitempty"`
	ExpiresAt  string  `json:"expires_at,omitempty"`
	ValidUntil string  `json:"valid_until,omitempty"`
	Released   string  `json:"released,omitempty"` // message_id of the message released to the caller
}

// readAudit is the detail of the data_access entry of an approved local
// read of a T4 session.
type readAudit struct {
	Operator   string `json:"operator"`
	Access     string `json:"access"`
	Object     string `json:"object"`
	Via        string `json:"via"`
	DataClass  string `json:"data_classification"`
	AccessID   string `json:"access_id"`
	ApprovedBy string `json:"approved_by"`
	ValidUntil string `json:"valid_until"`
}

// NeedsAccessApproval reports whether the data of a session of
// classification class (a stored session's DataClass) may be read only
// with an operator's access approval: T4.
func NeedsAccessApproval(class string) bool {
	return gate.Classification(class).Rank() >= gate.T4.Rank()
}

// holds reports whether l's final message is held for an access decision
// instead of sent: a T4 session ending with task_completed or task_failed
// (the messages that carry outputs, partial outputs and artifacts).
func (e *Engine) holds(l *live, final []*wire.Envelope) bool {
	if !NeedsAccessApproval(l.class) {
		return false
	}
	return slices.ContainsFunc(final, func(env *wire.Envelope) bool {
		return env.Type == wire.TypeTaskCompleted || env.Type == wire.TypeTaskFailed
	})
}

// accessPending is the access_pending event of a new request.
func accessPending(r store.AccessRequest) store.Emit {
	return store.Emit{Type: lifecycle.EventWarning, Data: accessData{Code: EventAccessPending,
		Message: fmt.Sprintf("the results of this %s session (%s) wait for an operator's access approval: hcp-edge access approve %s", r.DataClass, r.FinalType, r.ID),
		Details: accessDetails{AccessID: r.ID, DataClassification: r.DataClass, Held: r.FinalType,
			ExpiresAt: r.ExpiresAt.UTC().Format(wire.TimestampLayout)}}}
}

// newAccess is the request that will hold final, l's final message.
func (e *Engine) newAccess(l *live, final []*wire.Envelope) store.AccessRequest {
	now := e.cfg.Now()
	r := store.AccessRequest{ID: "acc-" + uuid.NewString()[:8], SessionID: l.id, CallerID: l.caller, DataClass: l.class,
		State: store.AccessPending, CreatedAt: now, ExpiresAt: now.Add(e.cfg.AccessTimeout)}
	for _, env := range final {
		r.FinalType = string(env.Type)
		switch env.Type {
		case wire.TypeTaskCompleted:
			if tc, err := env.TaskCompleted(); err == nil {
				r.What = fmt.Sprintf("task_completed: outputs and %d artifact(s)", len(tc.Artifacts))
			}
		case wire.TypeTaskFailed:
			if tf, err := env.TaskFailed(); err == nil {
				r.What = fmt.Sprintf("task_failed (%s): partial outputs and %d artifact(s)", tf.ErrorCode, len(tf.Artifacts))
			}
		}
	}
	if r.What == "" {
		r.What = r.FinalType
	}
	return r
}

// holdTx seals final under the at-rest key and stores it in r, the new
// pending request, with the audit entry of the request, inside w.
func (e *Engine) holdTx(w *store.Tx, r store.AccessRequest, final []*wire.Envelope) error {
	if e.cfg.AtRest == nil { // the gate admits no T4 session without the key
		return fmt.Errorf("engine: hold the results of %s: %w", r.SessionID, atrest.ErrNoKey)
	}
	raw := make([]json.RawMessage, 0, len(final))
	for _, env := range final {
		b, err := wire.Encode(env)
		if err != nil {
			return fmt.Errorf("engine: hold %s: %w", env.Type, err)
		}
		raw = append(raw, b)
	}
	plain, err := json.Marshal(raw)
	if err != nil {
		return fmt.Errorf("engine: hold: %w", err)
	}
	if r.Held, err = e.cfg.AtRest.Seal(plain, atrest.HeldBinding(r.SessionID, r.ID)); err != nil {
		return fmt.Errorf("engine: hold the results of %s: %w", r.SessionID, err)
	}
	if err := w.PutAccess(r); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return e.auditAccess(w, r, accessAudit{Decision: "access_requested", CallerID: r.CallerID, What: r.What,
		ExpiresAt: r.ExpiresAt.UTC().Format(wire.TimestampLayout)})
}

func (e *Engine) auditAccess(w *store.Tx, r store.AccessRequest, d accessAudit) error {
	d.AccessID = r.ID
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, err = w.Audit(context.Background(), audit.Entry{SessionID: r.SessionID, Kind: audit.KindApproval, Detail: string(b)})
	return err
}

// held opens the final message r holds.
func (e *Engine) held(r store.AccessRequest) ([]*wire.Envelope, error) {
	if e.cfg.AtRest == nil {
		return nil, fmt.Errorf("engine: access request %s holds sealed results: %w", r.ID, atrest.ErrNoKey)
	}
	plain, err := e.cfg.AtRest.Open(r.Held, atrest.HeldBinding(r.SessionID, r.ID))
	if err != nil {
		return nil, fmt.Errorf("engine: access request %s: held results: %w", r.ID, err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(plain, &raw); err != nil {
		return nil, fmt.Errorf("engine: access request %s: held results: %w", r.ID, err)
	}
	out := make([]*wire.Envelope, 0, len(raw))
	for _, b := range raw {
		env, err := wire.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("engine: access request %s: held results: %w", r.ID, err)
		}
		out = append(out, env)
	}
	return out, nil
}

// checkApprover refuses an empty operator, and one not in
// Config.AccessApprovers when that list is set.
func (e *Engine) checkApprover(operator string) error {
	if operator == "" {
		return fmt.Errorf("%w: the operator's name is required (--operator NAME)", ErrAccessOperator)
	}
	if len(e.cfg.AccessApprovers) > 0 && !slices.Contains(e.cfg.AccessApprovers, operator) {
		return fmt.Errorf("%w: %q is not one of agent.access_approvers %v", ErrAccessOperator, operator, e.cfg.AccessApprovers)
	}
	return nil
}

// getAccessTx is w.Access with the engine's error.
func getAccessTx(w *store.Tx, id string) (store.AccessRequest, error) {
	r, err := w.Access(id)
	if errors.Is(err, store.ErrNoAccess) {
		return r, fmt.Errorf("%w: %q (give an access id acc-... or the session id; hcp-edge access list)", ErrAccessUnknown, id)
	}
	if err != nil {
		return r, fmt.Errorf("engine: %w", err)
	}
	return r, nil
}

// AccessRequests returns the access requests, oldest first; pendingOnly:
// those waiting for a decision. Held is cleared in the copies.
func (e *Engine) AccessRequests(ctx context.Context, pendingOnly bool) ([]store.AccessRequest, error) {
	rs, err := e.cfg.Store.AccessRequests(ctx, pendingOnly)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	for i := range rs {
		rs[i].Held = nil
	}
	return rs, nil
}

// ApproveAccess approves access request id (its access id or its
// session's id) as operator: the held final message goes to the caller
// (the outbox), the request becomes approved and local reads of the
// session's data are allowed for validFor (Config.AccessApprovalFor when
// zero or less), with the audit entry of the decision, in one transaction.
// Approving an approved request renews its local reads for validFor
// (nothing is sent again). A denied request (ErrAccessDecided), a pending
// one past its expiry (ErrAccessExpired), an unknown id (ErrAccessUnknown)
// or an operator who may not decide (ErrAccessOperator) changes nothing.
func (e *Engine) ApproveAccess(ctx context.Context, id, operator string, validFor time.Duration) (store.AccessRequest, error) {
	return e.ApproveAccessAs(ctx, id, Signer{Display: operator}, validFor)
}

// ApproveAccessAs is ApproveAccess with the signer's OS identity. A
// pending request whose release needs more signatures than it has
// (Config.ApprovalsRequired "T4") keeps the signature ("approved for
// release") and stays pending; the last one releases it ("released until
// ..."). The same signer twice is refused (ErrSameApprover). Each
// signature is audited with the signer's uid and its meaning.
func (e *Engine) ApproveAccessAs(ctx context.Context, id string, s Signer, validFor time.Duration) (store.AccessRequest, error) {
	operator := s.Display
	if err := e.checkApprover(operator); err != nil {
		return store.AccessRequest{}, err
	}
	if validFor <= 0 {
		validFor = e.cfg.AccessApprovalFor
	}
	var r store.AccessRequest
	var released []*wire.Envelope
	err := e.cfg.Store.Update(ctx, func(w *store.Tx) error {
		var err error
		if r, err = getAccessTx(w, id); err != nil {
			return err
		}
		now := e.cfg.Now()
		switch r.State {
		case store.AccessDenied:
			return fmt.Errorf("%w: %s (session %s) was denied by %s at %s", ErrAccessDecided, r.ID, r.SessionID,
				orTimeout(r.Operator), r.DecidedAt.UTC().Format(time.RFC3339))
		case store.AccessApproved:
			r.ValidUntil = now.Add(validFor)
			sig := accessSignature(s, now, MeaningReleased+" "+r.ValidUntil.UTC().Format(time.RFC3339)+" (renewed)")
			r.Approvals = append(r.Approvals, sig)
			if err := w.PutAccess(r); err != nil {
				return fmt.Errorf("engine: %w", err)
			}
			return e.auditAccess(w, r, signed(accessAudit{Decision: "access_renewed", Operator: operator,
				ValidUntil: r.ValidUntil.UTC().Format(wire.TimestampLayout)}, sig, len(r.Approvals), len(r.Approvals)))
		}
		if e.pc.MinAge(r.ExpiresAt) >= 0 { // passed whichever way the wall clock stepped (the expiry timer is monotonic)
			return fmt.Errorf("%w: access request %s (session %s) expired at %s; it is denied to the caller now",
				ErrAccessExpired, r.ID, r.SessionID, r.ExpiresAt.UTC().Format(time.RFC3339))
		}
		need := e.approvalsFor("T4")
		for _, g := range r.Approvals {
			if (Signer{UID: g.UID, Display: g.Operator, Known: g.OSUser}).key() == s.key() {
				return fmt.Errorf("%w: %s signed access request %s at %s already; its release needs %d different OS users",
					ErrSameApprover, s, r.ID, g.At.UTC().Format(time.RFC3339), need)
			}
		}
		if len(r.Approvals)+1 < need {
			sig := accessSignature(s, now, "approved for release")
			r.Approvals = append(r.Approvals, sig)
			if err := w.PutAccess(r); err != nil {
				return fmt.Errorf("engine: %w", err)
			}
			return e.auditAccess(w, r, signed(accessAudit{Decision: "access_signed", Operator: operator}, sig, len(r.Approvals), need))
		}
		if released, err = e.held(r); err != nil {
			return err
		}
		for _, env := range released {
			if err := w.Send(store.Message{CallerID: r.CallerID, Envelope: env}); err != nil {
				return fmt.Errorf("engine: %w", err)
			}
		}
		r.State, r.Operator, r.DecidedAt, r.ValidUntil, r.Held = store.AccessApproved, operator, now, now.Add(validFor), nil
		sig := accessSignature(s, now, MeaningReleased+" "+r.ValidUntil.UTC().Format(time.RFC3339))
		r.Approvals = append(r.Approvals, sig)
		if err := w.PutAccess(r); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		var mid string
		if len(released) > 0 {
			mid = released[0].MessageID.String()
		}
		return e.auditAccess(w, r, signed(accessAudit{Decision: "access_approved", Operator: operator, CallerID: r.CallerID,
			What: r.What, ValidUntil: r.ValidUntil.UTC().Format(wire.TimestampLayout), Released: mid}, sig, len(r.Approvals), need))
	})
	if err != nil {
		return store.AccessRequest{}, err
	}
	if r.State == store.AccessApproved {
		e.disarmAccess(r.ID)
	}
	e.fanOut(r.CallerID, released)
	r.Held = nil
	return r, nil
}

// accessSignature is s's signature at now with meaning.
func accessSignature(s Signer, now time.Time, meaning string) store.AccessSignature {
	return store.AccessSignature{Operator: s.Display, UID: s.UID, User: s.User, OSUser: s.Known, At: now.UTC(), Meaning: meaning}
}

// signed is d with signature g (number n of need).
func signed(d accessAudit, g store.AccessSignature, n, need int) accessAudit {
	if g.OSUser {
		uid := g.UID
		d.UID = &uid
	}
	d.User, d.Meaning, d.Signature, d.Required = g.User, g.Meaning, n, need
	return d
}

// DenyAccess denies pending access request id as operator with reason:
// the caller gets a task_failed (error_code access_denied) without any of
// the held data, the request becomes denied, and the decision is audited,
// in one transaction. The held message is dropped. An unknown id, a
// decided request or an operator who may not decide changes nothing.
func (e *Engine) DenyAccess(ctx context.Context, id, operator, reason string) (store.AccessRequest, error) {
	if err := e.checkApprover(operator); err != nil {
		return store.AccessRequest{}, err
	}
	return e.deny(ctx, id, operator, reason)
}

// ErrAccessNotReleased: a withdrawal of an access request that is not an
// open release (pending, denied, expired or withdrawn already).
var ErrAccessNotReleased = errors.New("engine: access request is not an open release")

// WithdrawAccess ends an approved request's release early, as s with
// reason (required): local reads of the session's data are refused from
// now on (ValidUntil becomes now), a fetch over the broker is refused at
// its next check, and the withdrawal is audited with the signer's uid. An
// unknown id (ErrAccessUnknown), a request that is not approved or whose
// release has ended already (ErrAccessNotReleased) or an operator who may
// not decide changes nothing. What the caller has received stays with it.
func (e *Engine) WithdrawAccess(ctx context.Context, id string, s Signer, reason string) (store.AccessRequest, error) {
	if err := e.checkApprover(s.Display); err != nil {
		return store.AccessRequest{}, err
	}
	if reason == "" {
		return store.AccessRequest{}, errors.New("engine: a withdrawal needs a reason")
	}
	var r store.AccessRequest
	err := e.cfg.Store.Update(ctx, func(w *store.Tx) error {
		var err error
		if r, err = getAccessTx(w, id); err != nil {
			return err
		}
		now := e.cfg.Now()
		switch {
		case r.State != store.AccessApproved:
			return fmt.Errorf("%w: %s (session %s) is %s", ErrAccessNotReleased, r.ID, r.SessionID, r.State)
		case !r.WithdrawnAt.IsZero():
			return fmt.Errorf("%w: %s (session %s) was withdrawn by %s at %s", ErrAccessNotReleased, r.ID, r.SessionID,
				r.WithdrawnBy, r.WithdrawnAt.UTC().Format(time.RFC3339))
		case e.pc.MaxAge(r.ValidUntil) >= 0:
			return fmt.Errorf("%w: the release of %s (session %s) ended at %s", ErrAccessNotReleased, r.ID, r.SessionID,
				r.ValidUntil.UTC().Format(time.RFC3339))
		}
		r.ValidUntil, r.WithdrawnAt, r.WithdrawnBy, r.WithdrawReason = now, now, s.Display, reason
		sig := accessSignature(s, now, "release withdrawn")
		r.Approvals = append(r.Approvals, sig)
		if err := w.PutAccess(r); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		return e.auditAccess(w, r, signed(accessAudit{Decision: "access_withdrawn", Operator: s.Display, Reason: reason,
			ValidUntil: r.ValidUntil.UTC().Format(wire.TimestampLayout)}, sig, 0, 0))
	})
	if err != nil {
		return store.AccessRequest{}, err
	}
	r.Held = nil
	return r, nil
}

// deny is DenyAccess without the operator's check (operator "": the
// request's expiry).
func (e *Engine) deny(ctx context.Context, id, operator, reason string) (store.AccessRequest, error) {
	var r store.AccessRequest
	var sent []*wire.Envelope
	err := e.cfg.Store.Update(ctx, func(w *store.Tx) error {
		var err error
		if r, err = getAccessTx(w, id); err != nil {
			return err
		}
		if r.State != store.AccessPending {
			return fmt.Errorf("%w: %s (session %s) was %s by %s at %s", ErrAccessDecided, r.ID, r.SessionID, r.State,
				orTimeout(r.Operator), r.DecidedAt.UTC().Format(time.RFC3339))
		}
		sess, err := w.Session(r.SessionID)
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		msg := fmt.Sprintf("access to the results of this %s session was denied by operator %s", r.DataClass, operator)
		if operator == "" {
			msg = fmt.Sprintf("no operator approved access to the results of this %s session within %v", r.DataClass, e.cfg.AccessTimeout)
		}
		if reason != "" {
			msg += ": " + reason
		}
		det, _ := json.Marshal(map[string]any{"access_id": r.ID, "final_state": sess.State, "held": r.FinalType, "recoverable": false})
		sid, err := uuid.Parse(r.SessionID)
		if err != nil {
			return fmt.Errorf("engine: session id %s: %w", r.SessionID, err)
		}
		env, err := wire.NewEnvelope(&sid, &wire.TaskFailed{ErrorCode: ErrorAccessDenied, ErrorMessage: msg, ErrorDetails: det,
			PartialOutputs: json.RawMessage(`{}`)}, e.cfg.Now())
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		if err := w.Send(store.Message{CallerID: r.CallerID, Envelope: env}); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		sent = []*wire.Envelope{env}
		r.State, r.Operator, r.Reason, r.DecidedAt, r.Held = store.AccessDenied, operator, reason, e.cfg.Now(), nil
		if err := w.PutAccess(r); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		return e.auditAccess(w, r, accessAudit{Decision: "access_denied", Operator: orTimeout(operator), Reason: reason,
			CallerID: r.CallerID, Released: env.MessageID.String()})
	})
	if err != nil {
		return store.AccessRequest{}, err
	}
	e.disarmAccess(r.ID)
	e.fanOut(r.CallerID, sent)
	return r, nil
}

func orTimeout(operator string) string {
	if operator == "" {
		return "expiry"
	}
	return operator
}

// ReadAccess authorises and audits one local read of T4 session sid's
// data (access: artifact_get...; object: what is read; via: how) by
// operator: the session's access request must be approved and its
// approval unexpired. The data_access entry commits in the transaction
// that checks it; a refusal (ErrAccessRequired, ErrAccessExpired,
// ErrAccessDenied) writes nothing and names what to run. A session that
// does not need access approval is the caller's to audit: nil.
func (e *Engine) ReadAccess(ctx context.Context, sid, operator, access, object, via string) error {
	return e.cfg.Store.Update(ctx, func(w *store.Tx) error {
		sess, err := w.Session(sid)
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		if !NeedsAccessApproval(sess.DataClass) {
			return nil
		}
		r, err := w.Access(sid)
		if err := e.readable(sess, r, err, operator, object); err != nil {
			return err
		}
		b, err := json.Marshal(readAudit{Operator: operator, Access: access, Object: object, Via: via, DataClass: sess.DataClass,
			AccessID: r.ID, ApprovedBy: r.Operator, ValidUntil: r.ValidUntil.UTC().Format(wire.TimestampLayout)})
		if err != nil {
			return err
		}
		_, err = w.Audit(ctx, audit.Entry{SessionID: sid, Kind: audit.KindDataAccess, Detail: string(b)})
		return err
	})
}

// CheckRead is ReadAccess's check without the read: nil when operator may
// read T4 session sid's data now (or the session needs no access
// approval), the refusal otherwise. It writes nothing; the read itself
// still goes through ReadAccess.
func (e *Engine) CheckRead(ctx context.Context, sid, operator, object string) error {
	sess, err := e.cfg.Store.Session(ctx, sid)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if !NeedsAccessApproval(sess.DataClass) {
		return nil
	}
	r, err := e.cfg.Store.Access(ctx, sid)
	return e.readable(sess, r, err, operator, object)
}

// readable judges a read of sess's data against its access request r
// (rerr: the error looking it up).
func (e *Engine) readable(sess store.Session, r store.AccessRequest, rerr error, operator, object string) error {
	sid := sess.ID
	switch {
	case operator == "":
		return fmt.Errorf("%w: reading %s of a %s session needs the reader's name (--operator NAME)", ErrAccessRequired, object, sess.DataClass)
	case errors.Is(rerr, store.ErrNoAccess):
		return fmt.Errorf("%w: session %s (%s) has no access request: its results are held from its end until an operator approves them",
			ErrAccessRequired, sid, sess.DataClass)
	case rerr != nil:
		return fmt.Errorf("engine: %w", rerr)
	case r.State == store.AccessPending:
		return fmt.Errorf("%w: session %s (%s): access request %s waits for a decision: hcp-edge access approve %s --operator NAME",
			ErrAccessRequired, sid, sess.DataClass, r.ID, r.ID)
	case r.State == store.AccessDenied:
		return fmt.Errorf("%w: session %s (%s): access request %s was denied by %s", ErrAccessDenied, sid, sess.DataClass, r.ID, orTimeout(r.Operator))
	case !r.WithdrawnAt.IsZero():
		return fmt.Errorf("%w: session %s (%s): the release %s was withdrawn by %s at %s (%s)", ErrAccessDenied, sid, sess.DataClass,
			r.ID, r.WithdrawnBy, r.WithdrawnAt.UTC().Format(time.RFC3339), r.WithdrawReason)
	case e.pc.MaxAge(r.ValidUntil) >= 0: // a step of the wall clock back keeps no approval open longer
		return fmt.Errorf("%w: session %s (%s): the approval of %s by %s ended at %s: renew it with hcp-edge access approve %s --operator NAME [--for DURATION]",
			ErrAccessExpired, sid, sess.DataClass, r.ID, r.Operator, r.ValidUntil.UTC().Format(time.RFC3339), r.ID)
	}
	return nil
}

// armAccess arms the expiry of pending request r: when it passes, the
// request is denied (the caller gets task_failed access_denied), so that
// every T4 session ends with exactly one terminal message.
func (e *Engine) armAccess(r store.AccessRequest) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.accessTimers[r.ID] != nil {
		return
	}
	e.wg.Add(1)
	id := r.ID
	e.accessTimers[id] = time.AfterFunc(max(r.ExpiresAt.Sub(e.cfg.Now()), 0), func() {
		defer e.wg.Done()
		e.mu.Lock()
		delete(e.accessTimers, id)
		e.mu.Unlock()
		if e.base.Err() != nil {
			return
		}
		ctx, cancel := storeCtx()
		defer cancel()
		if _, err := e.deny(ctx, id, "", ""); err != nil && !errors.Is(err, ErrAccessDecided) {
			e.log.Error("access request expiry", "access_id", id, "err", err)
		}
	})
}

// disarmAccess stops the expiry of request id (decided).
func (e *Engine) disarmAccess(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t := e.accessTimers[id]; t != nil {
		delete(e.accessTimers, id)
		if t.Stop() {
			e.wg.Done()
		}
	}
}

// stopAccessTimers stops every expiry timer (Close; e.mu held).
func (e *Engine) stopAccessTimersLocked() {
	for id, t := range e.accessTimers {
		delete(e.accessTimers, id)
		if t.Stop() {
			e.wg.Done()
		}
	}
}

// recoverAccess arms the expiry of every pending access request (start):
// the held results stay held across restarts, and one past its expiry is
// denied at once.
func (e *Engine) recoverAccess(ctx context.Context) error {
	rs, err := e.cfg.Store.AccessRequests(ctx, true)
	if err != nil {
		return fmt.Errorf("engine: recover access requests: %w", err)
	}
	for _, r := range rs {
		e.armAccess(r)
	}
	return nil
}
