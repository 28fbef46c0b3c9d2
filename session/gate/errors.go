package gate

import (
	"errors"
	"fmt"
	"time"

	"hcp-edge/session/capability"
	"hcp-edge/transport/wire"
)

// ReasonCode is the reason_code of a task_rejected.
type ReasonCode string

// Reason codes: the four of L3's approval flow and resource_unavailable of
// L4's error table for the concurrency limit.
const (
	ReasonUnauthorized        ReasonCode = wire.ReasonUnauthorized
	ReasonForbidden           ReasonCode = wire.ReasonForbidden
	ReasonInvalidInput        ReasonCode = wire.ReasonInvalidInput
	ReasonRiskTooHigh         ReasonCode = wire.ReasonRiskTooHigh
	ReasonResourceUnavailable ReasonCode = "resource_unavailable"
)

// Sentinel errors: every *Rejection matches the one of its ReasonCode, and
// the finer ones below where they apply.
var (
	ErrUnauthorized        = errors.New("unauthorized")
	ErrForbidden           = errors.New("forbidden")
	ErrInvalidInput        = errors.New("invalid input")
	ErrRiskTooHigh         = errors.New("risk too high")
	ErrResourceUnavailable = errors.New("resource unavailable")

	// ErrUnknownCapability: no capability of that name, or none in the
	// version range (an invalid_input).
	ErrUnknownCapability = errors.New("unknown capability or version")
	// ErrUnprotected: a T3/T4 task while the uplink is not TLS or no
	// at-rest key is configured (a forbidden).
	ErrUnprotected = errors.New("data classification needs encryption in transit and at rest")
	// ErrQuota: the caller is past one of its quotas (a
	// resource_unavailable naming the quota and when it frees).
	ErrQuota = errors.New("caller quota exceeded")
	// ErrInvalidConfig: the gate's configuration is refused by New.
	ErrInvalidConfig = errors.New("invalid gate configuration")
)

var codeSentinel = map[ReasonCode]error{
	ReasonUnauthorized:        ErrUnauthorized,
	ReasonForbidden:           ErrForbidden,
	ReasonInvalidInput:        ErrInvalidInput,
	ReasonRiskTooHigh:         ErrRiskTooHigh,
	ReasonResourceUnavailable: ErrResourceUnavailable,
}

// Rejection is a refusal of the gate: the task_rejected payload plus the
// failing paths and the cause. It matches the sentinel of its Code (and
// ErrUnknownCapability or ErrUnprotected where they apply) and unwraps to
// its cause (e.g. a *capability.InputError).
type Rejection struct {
	Code              ReasonCode
	Message           string
	AssessedRiskLevel capability.RiskLevel // risk_too_high only
	Suggestion        string               // risk_too_high, when a rule that fired can be avoided
	Paths             []string             // invalid_input: JSON Pointers into the task_submit payload
	// RetryAfter is how long until a quota frees (submits_per_minute; 0
	// when unknown), sent as retry_after in whole seconds rounded up.
	RetryAfter time.Duration
	Err        error // the cause, if any
}

func (r *Rejection) Error() string { return fmt.Sprintf("gate: %s: %s", r.Code, r.Message) }

// Is matches the sentinel of r's Code.
func (r *Rejection) Is(target error) bool { return codeSentinel[r.Code] == target }

// Unwrap returns the cause.
func (r *Rejection) Unwrap() error { return r.Err }

// Payload is the task_rejected payload of r.
func (r *Rejection) Payload() *wire.TaskRejected {
	p := &wire.TaskRejected{ReasonCode: string(r.Code), ReasonMessage: r.Message,
		AssessedRiskLevel: string(r.AssessedRiskLevel), Suggestion: r.Suggestion}
	if r.RetryAfter > 0 {
		p.RetryAfter = int64((r.RetryAfter + time.Second - 1) / time.Second)
	}
	return p
}
