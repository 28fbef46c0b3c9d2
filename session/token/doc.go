// Package token issues and verifies the L3 session tokens of hcp-edge
// (spec/hcp/L3-safety-contract.md, "Session Token") and authorises every
// action and tool call of a session against its token (envelope.Authorizer
// and envelope.ToolAuthorizer).
//
// # Concepts
//
// A session token is a JWT (github.com/golang-jwt/jwt/v5) signed with
// Ed25519 ("EdDSA"). The key is generated on first start by LoadOrCreateKey
// and kept as a PKCS#8 PEM file of mode 0600; a key file readable by group
// or others is refused with an error naming the file and the fix.
//
// Claims carry the session id, the caller id, the capability name and
// version, the approved risk level and data classification, the digest of
// the running safety envelope (EnvelopeDigest), the catalog permissions the
// session may use (rig.read, rig.measure, rig.operate, rig.gas), and the
// registered iss, aud, sub (the session id), jti, iat, nbf and exp. Issue
// refuses a lifetime that is not positive, so exp is never later than the
// max_duration it is given.
//
// Verify accepts only EdDSA (WithValidMethods: "none" and an HS256 token
// keyed with the public key are refused), requires exp, checks issuer and
// audience, and allows a small leeway (Opts.Leeway, 5 s by default) for
// clock skew between issue and check.
//
// # Time
//
// exp, nbf and iat are wall-clock seconds, and a Raspberry Pi's wall clock
// steps by hours when NTP syncs after boot. A token this Authority issued
// is judged on the monotonic clock of Opts.Clock (internal/wallclock): its
// claims are checked at iat plus the monotonic time since it was issued,
// so no step of the wall clock expires it or makes it "not yet valid",
// and none makes it live longer than exp − iat plus the leeway. A token of
// an earlier process (the same key file) is judged by the wall clock, at
// the latest it has been in this process (wallclock.Clock.Ceil), so that a
// step back neither revives an expired one nor makes one "not yet valid".
// Revocations are pruned by wallclock.Clock.MinAge: a forward step drops
// none while its token could still be valid. The Authority, its
// Revocations and the engine share one clock.
//
// Authorizer is what the interlock holds. For every Action (and every
// catalog tool) it verifies the token, compares the token's envelope digest
// with the running envelope's, checks the session is not revoked
// (Revocations, updated by the engine on abort and close), and checks the
// scope: the Action's kind maps to a permission (PermissionFor) — furnace
// setpoint, ramp and heater and non-gas switches need rig.operate, a flow
// setpoint or a gas line valve needs rig.gas, an acquisition needs
// rig.measure — and a tool needs its catalog permission_required.
//
// # Caveats
//
// The token is a bearer token inside the callee: it is handed back to the
// caller in task_accepted (the spec requires it) but it authorises only
// actions the callee's own executors take through the interlock.
// Revocations live in memory: after a restart a recovered session gets a
// new token and the old ones stay valid until they expire unless the
// engine revokes them again. EnvelopeDigest hashes the envelope's
// configuration and rig specification as JSON: any change to a limit or to
// the rig invalidates every outstanding token.
package token
