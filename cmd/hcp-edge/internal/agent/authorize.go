package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/operators"
	"hcp-edge/session/audit"
	"hcp-edge/session/engine"
)

// roleOf is the role each control operation needs; an operation not
// listed is read-only and needs none (status, sessions, tools, ownership,
// access_list, audit_verify, audit_replay, artifact, whoami). E-stop is
// listed with RoleEStop, which everyone holds: it is never refused.
var roleOf = map[string]operators.Role{
	control.OpEStop:          operators.RoleEStop,
	control.OpArm:            operators.RoleOperate,
	control.OpReset:          operators.RoleOperate,
	control.OpSubmit:         operators.RoleOperate,
	control.OpAbort:          operators.RoleOperate,
	control.OpPause:          operators.RoleOperate,
	control.OpResume:         operators.RoleOperate,
	control.OpAnswer:         operators.RoleOperate,
	control.OpTakeover:       operators.RoleOperate,
	control.OpHandback:       operators.RoleOperate,
	control.OpApprove:        operators.RoleApprove,
	control.OpDeny:           operators.RoleApprove,
	control.OpAccessApprove:  operators.RoleRelease,
	control.OpAccessDeny:     operators.RoleRelease,
	control.OpAccessWithdraw: operators.RoleRelease,
}

// controlAudit is the detail of a control audit entry: one action on the
// control socket, or its refusal, with the OS user the kernel reported.
type controlAudit struct {
	Op       string   `json:"op"`
	Target   string   `json:"target,omitempty"` // the session, approval or access id
	Outcome  string   `json:"outcome"`          // done, failed, refused
	Operator string   `json:"operator"`         // the display name
	UID      uint32   `json:"uid"`
	GID      uint32   `json:"gid"`
	User     string   `json:"user"`
	Roles    []string `json:"roles,omitempty"`
	Need     string   `json:"role_needed,omitempty"`
	Error    string   `json:"error,omitempty"`
	// LoginUID and LoginUser name the account that logged in (the kernel's
	// loginuid of the peer) when it is not the peer's uid: olga under
	// sudo is uid 0 with login_uid 1001. Recorded, never trusted for a role.
	LoginUID  *uint32 `json:"login_uid,omitempty"`
	LoginUser string  `json:"login_user,omitempty"`
}

type identityKey struct{}

// identityOf is the identity admit attached to ctx.
func identityOf(ctx context.Context) (operators.Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(operators.Identity)
	return id, ok
}

// signerOf is the engine's signer for the identity in ctx, or the display
// name alone.
func signerOf(ctx context.Context, display string) engine.Signer {
	if id, ok := identityOf(ctx); ok {
		return engine.Signer{UID: id.UID, User: id.User, Display: display, Known: true}
	}
	return engine.Signer{Display: display}
}

// admit identifies req's sender from the kernel's credentials and checks
// the role its operation needs. A refusal wraps operators.ErrForbidden
// and is audited with the uid. E-stop is never refused: a display name
// that is not the sender's is only noted.
func (h *handler) admit(ctx context.Context, req control.Request) (context.Context, operators.Identity, error) {
	need := roleOf[req.Op]
	var id operators.Identity
	var err error
	if !req.Peer.Known {
		id = operators.Identity{Display: req.Operator, User: "unknown"}
		err = fmt.Errorf("%w: the daemon could not read the sender's credentials from the kernel", operators.ErrForbidden)
	} else if need == "" || need == operators.RoleEStop {
		id, err = h.ops.Identify(req.Peer.UID, req.Peer.GID, req.Operator)
	} else {
		id, err = h.ops.Authorize(req.Peer.UID, req.Peer.GID, req.Operator, need)
	}
	if err != nil && need == operators.RoleEStop {
		h.log.Warn("e-stop from a sender whose display name is not its own; the e-stop runs", "uid", id.UID, "user", id.User, "operator", req.Operator, "err", err)
		err = nil
	}
	if err != nil {
		h.record(ctx, req, id, "refused", err)
		h.log.Warn("control request refused", "op", req.Op, "uid", id.UID, "user", id.User, "operator", req.Operator, "err", err)
		return ctx, id, err
	}
	return context.WithValue(ctx, identityKey{}, id), id, nil
}

// finish audits an admitted action (an operation that needs a role, and
// e-stop) with its outcome.
func (h *handler) finish(ctx context.Context, req control.Request, id operators.Identity, err error) {
	if _, ok := roleOf[req.Op]; !ok {
		return
	}
	outcome := "done"
	switch {
	case errors.Is(err, engine.ErrSameApprover):
		outcome = "refused" // the two-person rule: audited as a refusal
	case err != nil:
		outcome = "failed"
	}
	h.record(ctx, req, id, outcome, err)
}

// record appends the control audit entry of req, attached to its session
// when the target names one the store holds. A failure to record is
// logged: the action has happened (or was refused) either way.
func (h *handler) record(ctx context.Context, req control.Request, id operators.Identity, outcome string, err error) {
	if h.sess == nil || h.sess.st == nil {
		return
	}
	d := controlAudit{Op: req.Op, Target: req.ID, Outcome: outcome, Operator: req.Operator, UID: id.UID, GID: id.GID, User: id.User,
		Need: string(roleOf[req.Op])}
	if d.Operator == "" {
		d.Operator = id.Display
	}
	if p := req.Peer; p.Known && p.LoginKnown && p.LoginUID != p.UID {
		uid := p.LoginUID
		d.LoginUID, d.LoginUser = &uid, operators.UserName(uid)
	}
	for _, r := range id.Roles {
		d.Roles = append(d.Roles, string(r))
	}
	if err != nil {
		d.Error = err.Error()
	}
	b, merr := json.Marshal(d)
	if merr != nil {
		h.log.Error("control audit", "err", merr)
		return
	}
	actx := context.WithoutCancel(ctx)
	if _, aerr := h.sess.st.Audit().Append(actx, audit.Entry{SessionID: h.sessionOf(actx, req.ID), Kind: audit.KindControl, Detail: string(b)}); aerr != nil {
		h.log.Error("control action not recorded in the audit log", "op", req.Op, "uid", id.UID, "err", aerr)
	}
}

// sessionOf maps a target id (session, approval or access id) to the
// session the store holds; "" when none.
func (h *handler) sessionOf(ctx context.Context, target string) string {
	if target == "" {
		return ""
	}
	if h.sess.eng != nil {
		if sid := h.sess.eng.SessionOf(target); sid != "" {
			return sid
		}
	}
	if r, err := h.sess.st.Access(ctx, target); err == nil {
		return r.SessionID
	}
	if _, err := h.sess.st.Session(ctx, target); err == nil {
		return target
	}
	return ""
}

// Whoami is the reply to whoami.
type Whoami struct {
	operators.Identity
	// Note explains an unconfigured operators section.
	Note string `json:"note,omitempty"`
}

func whoami(id operators.Identity) Whoami {
	w := Whoami{Identity: id}
	if id.Unconfigured {
		w.Note = "no operators section in the configuration: only root holds roles; everyone else may e-stop and read"
	}
	return w
}
