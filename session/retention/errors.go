package retention

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package.
var (
	// ErrPolicy is matched by every *PolicyError.
	ErrPolicy = errors.New("retention policy invalid")
	// ErrStarted is a second Start of the same Pruner.
	ErrStarted = errors.New("retention: pruner already started")
)

// PolicyError is one invalid value of a Policy: Key names it
// ("default", "T3", "max_bytes", ...).
type PolicyError struct {
	Key    string
	Reason string
}

func (e *PolicyError) Error() string { return fmt.Sprintf("%s: %s", e.Key, e.Reason) }

// Is makes errors.Is(err, ErrPolicy) true.
func (e *PolicyError) Is(target error) bool { return target == ErrPolicy }
