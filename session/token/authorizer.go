package token

import (
	"context"
	"fmt"
	"sync"
	"time"

	"hcp-edge/device/catalog"
	"hcp-edge/envelope"
	"hcp-edge/internal/wallclock"
)

// Revocations is the set of sessions whose tokens no longer authorise
// anything. The engine adds a session when it aborts or closes it. Entries
// are dropped once the token they revoke has expired anyway — a minute
// after its expiry by wallclock.Clock.MinAge, so a step of the wall clock
// forward never drops a revocation while the token could still be valid
// (the Authority judges its own tokens on the monotonic clock). The zero
// value is not usable: use NewRevocations.
type Revocations struct {
	clock *wallclock.Clock
	mu    sync.Mutex
	until map[string]time.Time // session id → expiry of its latest token
}

// NewRevocations returns an empty set judged by clock (the Authority's
// process clock; a clock of its own if nil).
func NewRevocations(clock *wallclock.Clock) *Revocations {
	if clock == nil {
		clock = wallclock.New()
	}
	return &Revocations{clock: clock, until: map[string]time.Time{}}
}

// Revoke revokes sessionID until its tokens expire at exp (a zero exp
// keeps the entry forever).
func (r *Revocations) Revoke(sessionID string, exp time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, t := range r.until {
		if !t.IsZero() && r.clock.MinAge(t) > time.Minute {
			delete(r.until, id)
		}
	}
	if old, ok := r.until[sessionID]; ok && (old.IsZero() || (!exp.IsZero() && old.After(exp))) {
		return
	}
	r.until[sessionID] = exp
}

// Revoked reports whether sessionID is revoked.
func (r *Revocations) Revoked(sessionID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.until[sessionID]
	return ok
}

// Len is the number of entries held.
func (r *Revocations) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.until)
}

// PermissionFor returns the catalog permission an Action needs on a rig:
// rig.gas for a flow setpoint or a gas line valve, rig.measure for an
// acquisition, rig.operate for everything else that moves. The interlock
// asks for it only for actions away from the safe state (Authorize); an
// action toward it needs no permission (Authenticate).
func PermissionFor(spec envelope.RigSpec, a envelope.Action) catalog.Permission {
	switch a.Kind {
	case envelope.ActFlow:
		return catalog.PermissionGas
	case envelope.ActAcquire:
		return catalog.PermissionMeasure
	case envelope.ActSwitch:
		for _, g := range spec.Gases {
			if g.Valve == a.Target {
				return catalog.PermissionGas
			}
		}
	}
	return catalog.PermissionOperate
}

// Authorizer authorises a session's Actions and tool calls with its token.
// It implements envelope.Authorizer and envelope.ToolAuthorizer.
type Authorizer struct {
	auth    *Authority
	spec    envelope.RigSpec
	digest  string
	revoked *Revocations
}

var (
	_ envelope.Authorizer     = (*Authorizer)(nil)
	_ envelope.ToolAuthorizer = (*Authorizer)(nil)
)

// NewAuthorizer returns the Authorizer of the running envelope env: tokens
// must carry env's EnvelopeDigest and a session not in revoked.
func NewAuthorizer(auth *Authority, env *envelope.Envelope, revoked *Revocations) (*Authorizer, error) {
	if auth == nil || revoked == nil {
		return nil, fmt.Errorf("token: NewAuthorizer needs an Authority and a Revocations")
	}
	d, err := EnvelopeDigest(env)
	if err != nil {
		return nil, err
	}
	return &Authorizer{auth: auth, spec: env.Spec(), digest: d, revoked: revoked}, nil
}

// Digest is the running envelope's digest, the one tokens must carry.
func (z *Authorizer) Digest() string { return z.digest }

// check verifies the token, its digest and revocation.
func (z *Authorizer) check(ctx context.Context, tok string) (*Claims, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("token: authorize: %w", err)
	}
	c, err := z.auth.Verify(tok)
	if err != nil {
		return nil, err
	}
	if c.EnvelopeDigest != z.digest {
		return nil, refuse(ErrDigest, fmt.Sprintf("session %s: token for envelope %s, running %s", c.SessionID, short(c.EnvelopeDigest), short(z.digest)))
	}
	if z.revoked.Revoked(c.SessionID) {
		return nil, refuse(ErrRevoked, "session "+c.SessionID)
	}
	return c, nil
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}

// Authorize implements envelope.Authorizer: the token is valid, unexpired,
// issued under the running envelope, not revoked, and holds the permission
// the Action needs (PermissionFor).
func (z *Authorizer) Authorize(ctx context.Context, tok string, a envelope.Action) (envelope.Grant, error) {
	c, err := z.check(ctx, tok)
	if err != nil {
		return envelope.Grant{}, err
	}
	if p := PermissionFor(z.spec, a); !c.Has(p) {
		return envelope.Grant{}, refuse(ErrScope, fmt.Sprintf("session %s: %v needs %s, the token grants %v", c.SessionID, a, p, c.Permissions))
	}
	return envelope.Grant{SessionID: c.SessionID}, nil
}

// Authenticate implements envelope.Authorizer: the token is valid,
// unexpired, issued under the running envelope and not revoked; its scope is
// not consulted. The interlock asks it, instead of Authorize, for an action
// it judges toward the safe state (a flow to zero, a valve closed, the heater
// off): scope limits what a session may open, not what it may close.
func (z *Authorizer) Authenticate(ctx context.Context, tok string) (envelope.Grant, error) {
	c, err := z.check(ctx, tok)
	if err != nil {
		return envelope.Grant{}, err
	}
	return envelope.Grant{SessionID: c.SessionID}, nil
}

// AuthorizeTool implements envelope.ToolAuthorizer: as Authorize, with the
// tool's permission_required.
func (z *Authorizer) AuthorizeTool(ctx context.Context, tok string, t catalog.Tool) (envelope.ToolGrant, error) {
	c, err := z.check(ctx, tok)
	if err != nil {
		return envelope.ToolGrant{}, err
	}
	if p := t.Safety.Permission; !c.Has(p) {
		return envelope.ToolGrant{}, refuse(ErrScope, fmt.Sprintf("session %s: tool %s needs %s, the token grants %v", c.SessionID, t.Name, p, c.Permissions))
	}
	return envelope.ToolGrant{SessionID: c.SessionID, Permissions: c.Permissions}, nil
}
