package outbox

import "errors"

// Sentinel errors of the outbox.
var (
	// ErrClosed: the outbox was closed.
	ErrClosed = errors.New("outbox: closed")
	// ErrInvalid: a message the outbox refuses to store (unknown class, no body,
	// no exchange or message id).
	ErrInvalid = errors.New("outbox: invalid message")
	// ErrCorrupt: a stored record or key could not be decoded.
	ErrCorrupt = errors.New("outbox: corrupt record")
	// ErrSealed: a message stored sealed, and no Opts.Sealer to open it.
	ErrSealed = errors.New("outbox: message sealed at rest and no Sealer to open it")
)
