package store

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package.
var (
	// ErrNotFound is an unknown session.
	ErrNotFound = errors.New("session not found")
	// ErrExists is a Create with an id already in use.
	ErrExists = errors.New("session already exists")
	// ErrBadID is an empty or over-long session id.
	ErrBadID = errors.New("bad session id")
	// ErrNoAccess is an unknown access request (neither an access id nor
	// the id of a session that has one).
	ErrNoAccess = errors.New("no such access request")
	// ErrCorrupt is matched by every *CorruptError.
	ErrCorrupt = errors.New("state file inconsistent")
)

// CorruptError is an inconsistency that Check found in the state file.
type CorruptError struct {
	Session string // empty for file-wide problems
	Reason  string
}

func (e *CorruptError) Error() string {
	if e.Session == "" {
		return fmt.Sprintf("store: %s: %v", e.Reason, ErrCorrupt)
	}
	return fmt.Sprintf("store: session %s: %s: %v", e.Session, e.Reason, ErrCorrupt)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }
