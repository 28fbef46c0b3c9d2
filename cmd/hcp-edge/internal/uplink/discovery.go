package uplink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/cmd/hcp-edge/internal/discovery"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/envelope"
	"hcp-edge/session/audit"
	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
	"hcp-edge/session/gate"
	"hcp-edge/session/store"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/wire"
)

// extensions serves the uplink's extension requests (docs/PROTOCOL-NOTES.md,
// "Discovery and artifact fetch"): capabilities_request here,
// artifact_request in artifactfetch.go, preview_request in preview.go. Both are reads: their answers are
// queued in the inbox's transaction but kept out of its de-duplication
// window (tamqp.Outcome.Unrecorded).
type extensions struct {
	calleeID string
	acl      gate.Config
	reg      *capability.Registry
	env      *envelope.Envelope
	artifact Artifacts
	st       *store.Store
	log      *slog.Logger
	config   rigconfig.File // the envelope and instrument names a preview takes (preview.go)
	previews *previews
	// executor is the executor a session of a capability would run now
	// (the engine's Executor): the one a preview runs.
	executor func(capability string) (executor.Executor, bool)
}

// Artifacts finds the artifact an hcp:// URI names: where its file is and
// what the session's final message recorded about it (the daemon's
// sessions).
type Artifacts func(uri string) (reply.Artifact, error)

// ServeExtensions gives the uplink what its extension requests read: the
// configuration's gate ACL, the capability registry, the rig's envelope
// and the sessions' artifacts (and, for previews, the configuration's
// instrument names: no instrument is opened, and execs, the executor a
// session of a capability would run now). Call it before Start; without it
// the requests are refused unavailable.
func (u *Uplink) ServeExtensions(f rigconfig.File, reg *capability.Registry, env *envelope.Envelope, artifacts Artifacts,
	execs func(capability string) (executor.Executor, bool)) {
	if u == nil {
		return
	}
	u.ext = &extensions{calleeID: u.cfg.CalleeID, acl: f.Gate, reg: reg, env: env, artifact: artifacts, st: u.st, log: u.log,
		config: f, previews: newPreviews(), executor: execs}
}

// refused is a request_refused answer to cmd, to its login's caller.
func refused(cmd tamqp.Command, code, format string, args ...any) (tamqp.Outcome, error) {
	env, err := wire.NewEnvelope(cmd.Envelope.SessionID, &wire.RequestRefused{RequestType: cmd.Envelope.Type, ReasonCode: code,
		ReasonMessage: fmt.Sprintf(format, args...)}, time.Now())
	if err != nil {
		return tamqp.Outcome{}, err
	}
	return tamqp.Outcome{Replies: []tamqp.Reply{{CallerID: cmd.MappedCallerID, Envelope: env}}, Unrecorded: true}, nil
}

// discoveryAudit is the detail of a refused capabilities_request's audit
// entry.
type discoveryAudit struct {
	Caller     string `json:"caller"`
	User       string `json:"user"`
	Request    string `json:"request"`
	MessageID  string `json:"message_id"`
	Capability string `json:"capability,omitempty"`
	Refused    string `json:"refused"`
	Reason     string `json:"reason"`
}

// refuseAudited answers an extension request of type typ (about
// capability) request_refused with code and msg, and audits the refusal
// (audit.KindDiscovery) in the inbox's transaction that queues the answer.
func (u *Uplink) refuseAudited(cmd tamqp.Command, typ wire.Type, capability, code, msg string) (tamqp.Outcome, error) {
	u.log.Warn(string(typ)+" refused", "user", cmd.UserID, "caller", cmd.MappedCallerID, "code", code, "reason", msg)
	out, err := refused(cmd, code, "%s", msg)
	if err != nil {
		return out, err
	}
	d, err := json.Marshal(discoveryAudit{Caller: cmd.MappedCallerID, User: cmd.UserID, Request: string(typ),
		MessageID: cmd.Envelope.MessageID.String(), Capability: capability, Refused: code, Reason: msg})
	if err != nil {
		return tamqp.Outcome{}, err
	}
	out.Record = func(tx *bolt.Tx) ([]tamqp.Reply, error) {
		_, err := audit.AppendTx(tx, audit.Entry{At: time.Now(), Kind: audit.KindDiscovery, Detail: string(d)})
		return nil, err
	}
	return out, nil
}

// capabilities answers a capabilities_request: the asking harness is the
// broker-validated login's caller (cmd.MappedCallerID), never a payload
// field. A login that maps to no caller has no queue to answer to: it is
// logged and acknowledged without an answer, as an abort would be.
func (u *Uplink) capabilities(_ context.Context, cmd tamqp.Command) (tamqp.Outcome, error) {
	if cmd.MappedCallerID == "" {
		u.log.Warn("capabilities_request of a broker user mapped to no caller: not answered", "user", cmd.UserID,
			"message_id", cmd.Envelope.MessageID)
		return tamqp.Outcome{Unrecorded: true}, nil
	}
	if u.ext == nil {
		return refused(cmd, wire.ReasonUnavailable, "this agent does not serve discovery")
	}
	req, err := cmd.Envelope.CapabilitiesRequest()
	if err != nil {
		return refused(cmd, wire.ReasonInvalidInput, "%v", err)
	}
	x := u.ext
	resp, err := discovery.Offers(x.calleeID, cmd.MappedCallerID, x.acl, x.reg, x.env, req.Capability)
	// A refusal is audited (audit.KindDiscovery) in the inbox's transaction
	// that queues it: a harness probing for what it may not use leaves a
	// trace, as a refused submit does.
	refuse := func(code, format string, args ...any) (tamqp.Outcome, error) {
		return u.refuseAudited(cmd, wire.TypeCapabilitiesRequest, req.Capability, code, fmt.Sprintf(format, args...))
	}
	switch {
	case errors.Is(err, discovery.ErrNoACL):
		return refuse(wire.ReasonForbidden, "caller %s has no permissions on this agent", cmd.MappedCallerID)
	case err != nil:
		return tamqp.Outcome{}, err
	case req.Capability != "" && len(resp.Capabilities) == 0:
		return refuse(wire.ReasonNotFound, "caller %s may use no capability named %q here (not in its access list, or its risk floor is above the caller's max_risk_level)",
			cmd.MappedCallerID, req.Capability)
	}
	env, err := wire.NewEnvelope(nil, resp, time.Now())
	if err != nil {
		return tamqp.Outcome{}, err
	}
	u.log.Info("capabilities_request answered", "user", cmd.UserID, "caller", cmd.MappedCallerID, "capabilities", len(resp.Capabilities))
	return tamqp.Outcome{Replies: []tamqp.Reply{{CallerID: cmd.MappedCallerID, Envelope: env}}, Unrecorded: true}, nil
}
