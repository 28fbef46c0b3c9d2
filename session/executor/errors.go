package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
)

// Code is an L4 standard error code (spec/hcp/L4-task.md, "Standard Error
// Codes").
type Code string

// The L4 error codes.
const (
	CodeExecution           Code = "execution_error"
	CodeTimeout             Code = "timeout"
	CodeSafetyViolation     Code = "safety_violation"
	CodeResourceUnavailable Code = "resource_unavailable"
	CodeInternal            Code = "internal_error"
	CodeInput               Code = "input_error"
)

// Sentinel errors of the package.
var (
	// ErrInput: the task's inputs cannot be executed (malformed, or asking for
	// something the rig cannot do). Maps to input_error.
	ErrInput = errors.New("executor: input error")
	// ErrLatched: the interlock is latched (a trip or an e-stop). Maps to
	// safety_violation.
	ErrLatched = errors.New("executor: interlock latched")
	// ErrNotReady: the rig is not in a state the recipe can start from (relay
	// not armed, door open, e-stop). Maps to resource_unavailable.
	ErrNotReady = errors.New("executor: rig not ready")
	// ErrCondition: a wait did not reach its condition in time (pump down,
	// ramp, cooling). Maps to execution_error.
	ErrCondition = errors.New("executor: condition not reached")
	// ErrResult: the result is unusable or below what the caller accepts (no
	// material found, confidence below the threshold, output invalid against a
	// schema). Maps to execution_error.
	ErrResult = errors.New("executor: result not acceptable")
	// ErrOutputSchema: the outputs do not validate against a schema. Maps to
	// internal_error (the executor built them).
	ErrOutputSchema = errors.New("executor: outputs invalid against the schema")
	// ErrStale: a reading a step judges by is stale (none newer than the
	// action it judges arrived in time), missing or invalid, or out of order.
	// The step fails rather than guess; a *ReadingError names the reading.
	// Maps to execution_error.
	ErrStale = errors.New("executor: reading stale, missing or out of order")
	// ErrRecipeChanged: the recipe a session was accepted with is no
	// longer the one of its version here (the file was edited and the
	// agent reloaded), and the session has no checkpoint pinning its plan.
	// The session fails rather than run another recipe (a Plan error: the
	// engine answers input_error).
	ErrRecipeChanged = errors.New("executor: recipe changed since the session was accepted")
)

// ReadingError is a reading a step needed and could not use. It wraps
// ErrStale.
type ReadingError struct {
	// Reading names it: the instrument and its role ("gauge p1, the end of
	// the leak-check hold").
	Reading string
	// Since is the instant (the instruments' clock) it had to be newer
	// than: the action it judges. Zero when the reading came but was
	// unusable.
	Since time.Time
	// Reason says what was wrong with it.
	Reason string
}

func (e *ReadingError) Error() string {
	s := "executor: reading " + e.Reading + ": " + e.Reason
	if !e.Since.IsZero() {
		s += " (needed newer than " + e.Since.UTC().Format("15:04:05.000") + ")"
	}
	return s
}

// Unwrap returns ErrStale.
func (e *ReadingError) Unwrap() error { return ErrStale }

// Failure is a failed run: the L4 error code, the step where it stopped, and
// the cause. Execute returns one for every failure; errors.Is/As reach the
// cause (a *envelope.Violation, a device sentinel, a context error).
type Failure struct {
	Code      Code
	Step      string // step name ("" before the first step)
	StepIndex int    // 0-based index of the failing step
	Phase     string // the step's stage
	Err       error
	// Recoverable: the caller may resubmit with recovery context (the rig is
	// not latched and the failure was not a refusal).
	Recoverable bool
}

func (f *Failure) Error() string {
	return fmt.Sprintf("executor: %s at step %d (%s): %v", f.Code, f.StepIndex+1, f.Step, f.Err)
}

// Unwrap returns the cause.
func (f *Failure) Unwrap() error { return f.Err }

// Classify maps an error of a run to its L4 code. ctx is the session's
// context: its deadline is max_duration, so a run stopped by it is a timeout.
func Classify(ctx context.Context, err error) Code {
	var f *Failure
	switch {
	case err == nil:
		return ""
	case errors.As(err, &f) && f.Code != "":
		return f.Code
	case ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return CodeTimeout
	case errors.Is(err, ErrInput):
		return CodeInput
	case errors.Is(err, ErrUnanswered):
		return CodeTimeout
	case errors.Is(err, envelope.ErrViolation), errors.Is(err, envelope.ErrUnauthorized), errors.Is(err, ErrLatched):
		return CodeSafetyViolation
	case errors.Is(err, ErrNotReady), errors.Is(err, device.ErrClosed):
		return CodeResourceUnavailable
	case errors.Is(err, envelope.ErrAudit), errors.Is(err, ErrOutputSchema):
		return CodeInternal
	}
	return CodeExecution
}
