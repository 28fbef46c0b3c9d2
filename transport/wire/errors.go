package wire

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error Decode returns is a *DecodeError whose Kind maps
// to exactly one of these, so callers test with errors.Is(err, wire.ErrX).
var (
	// ErrTooLarge: the body exceeds the decoder's MaxBodySize.
	ErrTooLarge = errors.New("hcp wire: body too large")
	// ErrEncoding: the body is not valid UTF-8.
	ErrEncoding = errors.New("hcp wire: body is not valid UTF-8")
	// ErrSyntax: the body (or a field) is not well-formed JSON, or has trailing data.
	ErrSyntax = errors.New("hcp wire: malformed JSON")
	// ErrMissingField: a required field is absent (or null where null is not allowed).
	ErrMissingField = errors.New("hcp wire: missing required field")
	// ErrWrongType: a field has the wrong JSON type (a number where a string belongs, …).
	ErrWrongType = errors.New("hcp wire: field has the wrong JSON type")
	// ErrMalformed: a field has the right JSON type but a malformed value (UUID, timestamp, version).
	ErrMalformed = errors.New("hcp wire: malformed field value")
	// ErrInvalidValue: a well-formed value outside what the protocol allows (an enum, a range, an id charset).
	ErrInvalidValue = errors.New("hcp wire: invalid field value")
	// ErrVersion: hcp_version has a major version this implementation does not speak.
	ErrVersion = errors.New("hcp wire: unsupported hcp_version major")
	// ErrUnknownType: type is not one of the L1 message types.
	ErrUnknownType = errors.New("hcp wire: unknown message type")
	// ErrSessionNotNull: session_id is set on a task_submit, where L1 requires null.
	ErrSessionNotNull = errors.New("hcp wire: session_id must be null on task_submit")
	// ErrSessionRequired: session_id is null or absent on a type that requires a session.
	ErrSessionRequired = errors.New("hcp wire: session_id required")
	// ErrDuplicateField: an envelope key appears twice (parsers disagree on which wins).
	ErrDuplicateField = errors.New("hcp wire: duplicate field")
	// ErrPropertyMismatch: an AMQP property is missing or disagrees with the body.
	ErrPropertyMismatch = errors.New("hcp wire: AMQP property mismatch")
	// ErrPathTraversal: a path (an artifact URI) has a ".." segment.
	ErrPathTraversal = errors.New("hcp wire: path traversal")
)

// Kind classifies a DecodeError. Each Kind corresponds to one sentinel error.
type Kind int

// The kinds of decode failure.
const (
	KindTooLarge Kind = iota + 1
	KindEncoding
	KindSyntax
	KindMissing
	KindWrongType
	KindMalformed
	KindInvalid
	KindVersion
	KindUnknownType
	KindSessionNotNull
	KindSessionRequired
	KindDuplicate
	KindProperty
	KindTraversal
)

var kindSentinel = map[Kind]error{
	KindTooLarge:        ErrTooLarge,
	KindEncoding:        ErrEncoding,
	KindSyntax:          ErrSyntax,
	KindMissing:         ErrMissingField,
	KindWrongType:       ErrWrongType,
	KindMalformed:       ErrMalformed,
	KindInvalid:         ErrInvalidValue,
	KindVersion:         ErrVersion,
	KindUnknownType:     ErrUnknownType,
	KindSessionNotNull:  ErrSessionNotNull,
	KindSessionRequired: ErrSessionRequired,
	KindDuplicate:       ErrDuplicateField,
	KindProperty:        ErrPropertyMismatch,
	KindTraversal:       ErrPathTraversal,
}

// Sentinel returns the sentinel error of k (nil for an unknown Kind).
func (k Kind) Sentinel() error { return kindSentinel[k] }

// String returns the sentinel's text without its "hcp wire: " prefix.
func (k Kind) String() string {
	if s := kindSentinel[k]; s != nil {
		return s.Error()[len("hcp wire: "):]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// DecodeError reports why a message was refused. Field is the JSON path of the
// offending field ("session_id", "payload.sequence", "properties.message_id"),
// or "" when the body as a whole is at fault.
//
// MessageID and Type are filled in when they could be read before the failure,
// so a consumer can derive a reply route (task_rejected invalid_input) for a
// message it cannot accept.
type DecodeError struct {
	Field     string
	Kind      Kind
	Detail    string // human-readable detail, may be empty
	Err       error  // underlying cause (e.g. a *json.SyntaxError), may be nil
	MessageID string // the envelope's message_id when it was a valid UUID, else ""
	Type      Type   // the envelope's type when it was a known type, else ""
}

func (e *DecodeError) Error() string {
	s := "hcp wire: "
	if e.Field != "" {
		s += e.Field + ": "
	}
	s += e.Kind.String()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is reports whether target is the sentinel of e.Kind.
func (e *DecodeError) Is(target error) bool { return target != nil && target == e.Kind.Sentinel() }

// Unwrap returns the underlying cause.
func (e *DecodeError) Unwrap() error { return e.Err }

func derr(field string, k Kind, detail string) *DecodeError {
	return &DecodeError{Field: field, Kind: k, Detail: detail}
}
