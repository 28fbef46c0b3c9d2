package token

import "errors"

// Sentinel errors of the package. Every refusal of Verify and of the
// Authorizer matches ErrInvalid and one of the more precise ones.
var (
	// ErrInvalid is matched by every refused token.
	ErrInvalid = errors.New("session token invalid")
	// ErrExpired is a token past its exp (beyond the leeway) or before its nbf.
	ErrExpired = errors.New("session token expired or not yet valid")
	// ErrSignature is a token not signed with the agent's key or with
	// another algorithm than EdDSA.
	ErrSignature = errors.New("session token signature or algorithm refused")
	// ErrDigest is a token issued under another safety envelope.
	ErrDigest = errors.New("session token envelope digest differs from the running envelope")
	// ErrScope is an action or tool outside the token's permissions.
	ErrScope = errors.New("action outside the session token's scope")
	// ErrRevoked is a token of a session that was aborted or closed.
	ErrRevoked = errors.New("session revoked")
	// ErrKeyFile is a signing key file that cannot be used (permissions,
	// format).
	ErrKeyFile = errors.New("session token key file unusable")
)

// refusal wraps a precise sentinel so that it also matches ErrInvalid.
// It unwraps to its cause (a jwt error), if any.
type refusal struct {
	kind  error
	msg   string
	cause error
}

func (e *refusal) Error() string { return "token: " + e.msg + ": " + e.kind.Error() }

func (e *refusal) Is(target error) bool { return target == ErrInvalid || target == e.kind }

func (e *refusal) Unwrap() error { return e.cause }

func refuse(kind error, msg string) error { return &refusal{kind: kind, msg: msg} }

func refuseCause(kind error, cause error) error {
	return &refusal{kind: kind, msg: cause.Error(), cause: cause}
}
