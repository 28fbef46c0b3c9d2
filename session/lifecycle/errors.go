package lifecycle

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package.
var (
	// ErrInvalidTransition is matched by every *TransitionError.
	ErrInvalidTransition = errors.New("invalid state transition")
	// ErrUnknownState is a state that is not one of the eight L2 states.
	ErrUnknownState = errors.New("unknown state")
	// ErrUnknownEvent is an event type that is not one of the standard nine.
	ErrUnknownEvent = errors.New("unknown event type")
	// ErrReservedEvent is state_changed or session_closed passed to Emit.
	ErrReservedEvent = errors.New("event type is emitted by transitions only")
	// ErrClosed is an event or a recovery after the session closed.
	ErrClosed = errors.New("session closed")
	// ErrDataNotObject is event data that does not marshal to a JSON object.
	ErrDataNotObject = errors.New("event data is not a JSON object")
	// ErrSequence is matched by every *SequenceError.
	ErrSequence = errors.New("sequence gap or duplicate")
)

// TransitionError is a transition that the spec's table does not allow.
type TransitionError struct {
	From, To State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("lifecycle: %s → %s: %v", e.From, e.To, ErrInvalidTransition)
}

// Is makes errors.Is(err, ErrInvalidTransition) true.
func (e *TransitionError) Is(target error) bool { return target == ErrInvalidTransition }

// SequenceError is the first place where stored sequence numbers are not
// consecutive.
type SequenceError struct {
	Index     int    // position in the checked list
	Want, Got uint64 // expected and found sequence number
}

func (e *SequenceError) Error() string {
	kind := "gap"
	if e.Got < e.Want {
		kind = "duplicate or out of order"
	}
	return fmt.Sprintf("lifecycle: event %d: sequence %d, want %d (%s): %v", e.Index, e.Got, e.Want, kind, ErrSequence)
}

// Is makes errors.Is(err, ErrSequence) true.
func (e *SequenceError) Is(target error) bool { return target == ErrSequence }
