package audit

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package.
var (
	// ErrBrokenChain is matched by every *ChainError.
	ErrBrokenChain = errors.New("audit chain broken")
	// ErrKind is an entry whose Kind is not one of the package's kinds.
	ErrKind = errors.New("unknown audit kind")
	// ErrNotOpen is a transaction in which the audit buckets do not exist:
	// call Init (or Open) first.
	ErrNotOpen = errors.New("audit buckets missing")
)

// ChainError is the first broken link that Verify or Replay found.
type ChainError struct {
	Seq    uint64 // the entry at which the chain breaks (0: the head)
	Reason string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("audit: entry %d: %s: %v", e.Seq, e.Reason, ErrBrokenChain)
}

// Is makes errors.Is(err, ErrBrokenChain) true.
func (e *ChainError) Is(target error) bool { return target == ErrBrokenChain }
