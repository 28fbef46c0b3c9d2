package modelrouter

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors of the package.
var (
	// ErrBadRegistry: the model registry is invalid (Registry.Validate).
	ErrBadRegistry = errors.New("modelrouter: invalid model registry")
	// ErrBadPolicy: Opts.Policy is none of Policies.
	ErrBadPolicy = errors.New("modelrouter: unknown policy (want minimize_cost, balance or maximize_quality)")
	// ErrNoModel: no model of the registry may answer the request at all
	// (not even tier 1). Analyze returns it only then: every other failure
	// ends in the tier-1 answer with a warning.
	ErrNoModel = errors.New("modelrouter: no model can answer")
	// ErrNotCleared: the request's data class is above what the model is
	// cleared for; the model is never sent the data.
	ErrNotCleared = errors.New("modelrouter: model not cleared for the data class")
	// ErrOverBudget: the invocation would exceed the task's or the day's
	// cost budget, or the time left.
	ErrOverBudget = errors.New("modelrouter: over budget")
	// ErrCircuitOpen: every instance of the model has its circuit open.
	ErrCircuitOpen = errors.New("modelrouter: circuit open")
	// ErrRateLimited: the model's own rate limit (its rpm) would be exceeded.
	ErrRateLimited = errors.New("modelrouter: rate limited")
)

// Outcome classifies one invocation, for the tracker, the retry and the
// fallback decisions.
type Outcome string

// The outcomes of an invocation.
const (
	OK Outcome = "ok"
	// Timeout, RateLimit (429), ServerError (5xx) and Unreachable are
	// transient: retried with backoff, then another instance or model.
	Timeout     Outcome = "timeout"
	RateLimit   Outcome = "rate_limited"
	ServerError Outcome = "server_error"
	Unreachable Outcome = "unreachable"
	// BadAnswer: the model answered, but not with JSON valid against the
	// answer schema. A failed invocation: the next model is tried.
	BadAnswer Outcome = "bad_answer"
	// InvalidRequest: the model refused our request (4xx other than 429):
	// another model would refuse it too, so there is no fallback to other
	// remote models (the local answer stands, with a warning).
	InvalidRequest Outcome = "invalid_request"
	// Refused: the router did not send the data (not cleared, over budget,
	// circuit open, rate limit).
	Refused Outcome = "refused"
	// Canceled: the caller's context ended.
	Canceled Outcome = "canceled"
)

// InvokeError is a failed invocation of a model instance.
type InvokeError struct {
	Model, Instance string
	Outcome         Outcome
	// Status is the HTTP status, when one came.
	Status int
	// RetryAfter is the server's Retry-After, when it sent one.
	RetryAfter time.Duration
	Err        error
}

// Error says which model and instance failed, how, and why.
func (e *InvokeError) Error() string {
	s := fmt.Sprintf("modelrouter: %s at %s: %s", e.Model, e.Instance, e.Outcome)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *InvokeError) Unwrap() error { return e.Err }

// Transient reports whether the same call may succeed when repeated.
func (e *InvokeError) Transient() bool {
	switch e.Outcome {
	case Timeout, RateLimit, ServerError, Unreachable:
		return true
	}
	return false
}

// outcomeOf is the outcome an error stands for.
func outcomeOf(err error) Outcome {
	var ie *InvokeError
	switch {
	case err == nil:
		return OK
	case errors.As(err, &ie):
		return ie.Outcome
	case errors.Is(err, ErrNotCleared), errors.Is(err, ErrOverBudget),
		errors.Is(err, ErrCircuitOpen), errors.Is(err, ErrRateLimited):
		return Refused
	}
	return ServerError
}
