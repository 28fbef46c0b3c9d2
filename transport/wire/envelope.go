package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Version is the hcp_version this package writes.
const Version = "1.0"

// VersionMajor is the only hcp_version major this package accepts.
const VersionMajor = 1

// DefaultMaxBodySize bounds a body Decode accepts (1 MiB).
const DefaultMaxBodySize = 1 << 20

// TimestampLayout is how timestamps are written: ISO 8601, UTC, milliseconds.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// Type is an L1 message type.
type Type string

// The L1 message types.
const (
	TypeTaskSubmit    Type = "task_submit"    // caller → callee; session_id null
	TypeAbort         Type = "abort"          // caller → callee; session required
	TypeTaskAccepted  Type = "task_accepted"  // callee → caller; the new session
	TypeTaskRejected  Type = "task_rejected"  // callee → caller; session_id null or set
	TypeEvent         Type = "event"          // callee → caller; L2 event with sequence
	TypeTaskCompleted Type = "task_completed" // callee → caller
	TypeTaskFailed    Type = "task_failed"    // callee → caller
)

// hcp-edge's extension types (docs/PROTOCOL-NOTES.md, "Discovery and
// artifact fetch" and "Preview"): requests on the command channel, their answers on the
// event channel with the hcp-in-reply-to header.
const (
	TypeCapabilitiesRequest  Type = "capabilities_request"  // caller → callee; session_id null
	TypeCapabilitiesResponse Type = "capabilities_response" // callee → caller; session_id null
	TypeArtifactRequest      Type = "artifact_request"      // caller → callee; the artifact's session
	TypeArtifactChunk        Type = "artifact_chunk"        // callee → caller; the artifact's session
	TypeRequestRefused       Type = "request_refused"       // callee → caller; session_id null or set
	TypePreviewRequest       Type = "preview_request"       // caller → callee; session_id null
	TypePreviewResponse      Type = "preview_response"      // callee → caller; session_id null
)

// Types lists every message type: L1's, then the extensions.
var Types = []Type{TypeTaskSubmit, TypeAbort, TypeTaskAccepted, TypeTaskRejected, TypeEvent, TypeTaskCompleted, TypeTaskFailed,
	TypeSessionHandoff, TypeCapabilitiesRequest, TypeCapabilitiesResponse, TypeArtifactRequest, TypeArtifactChunk, TypeRequestRefused,
	TypePreviewRequest, TypePreviewResponse}

// Valid reports whether t is an L1 message type or one of hcp-edge's
// extension types.
func (t Type) Valid() bool {
	switch t {
	case TypeTaskSubmit, TypeAbort, TypeTaskAccepted, TypeTaskRejected, TypeEvent, TypeTaskCompleted, TypeTaskFailed,
		TypeCapabilitiesRequest, TypeCapabilitiesResponse, TypeArtifactRequest, TypeArtifactChunk, TypeRequestRefused,
		TypePreviewRequest, TypePreviewResponse:
		return true
	case TypeSessionHandoff: // hcp-edge's extension (handoff.go)
		return true
	}
	return false
}

// IsCommand reports whether t travels on the command channel (caller → callee).
func (t Type) IsCommand() bool {
	switch t {
	case TypeTaskSubmit, TypeAbort, TypeSessionHandoff, TypeCapabilitiesRequest, TypeArtifactRequest, TypePreviewRequest:
		return true
	}
	return false
}

// IsRequest reports whether t is an extension request: a read that is
// answered, to the broker login's own caller, by a response type
// (IsResponse) carrying the request's message_id in hcp-in-reply-to.
func (t Type) IsRequest() bool {
	return t == TypeCapabilitiesRequest || t == TypeArtifactRequest || t == TypePreviewRequest
}

// IsResponse reports whether t answers an extension request.
func (t Type) IsResponse() bool {
	return t == TypeCapabilitiesResponse || t == TypeArtifactChunk || t == TypeRequestRefused || t == TypePreviewResponse
}

// SessionRule says what session_id an envelope of this type must carry.
type SessionRule int

// The session rules.
const (
	SessionNull     SessionRule = iota + 1 // must be null (task_submit)
	SessionRequired                        // must be a UUID v4
	SessionOptional                        // null or a UUID v4 (task_rejected)
)

// SessionRule returns the session_id rule of t (0 for an invalid type).
func (t Type) SessionRule() SessionRule {
	switch t {
	case TypeTaskSubmit, TypeCapabilitiesRequest, TypeCapabilitiesResponse, TypePreviewRequest, TypePreviewResponse:
		return SessionNull
	case TypeTaskRejected, TypeRequestRefused:
		return SessionOptional
	case TypeAbort, TypeTaskAccepted, TypeEvent, TypeTaskCompleted, TypeTaskFailed, TypeSessionHandoff, TypeArtifactRequest, TypeArtifactChunk:
		return SessionRequired
	}
	return 0
}

// Envelope is an L1 message. Timestamp is UTC with millisecond resolution (the
// wire's); SessionID is nil for null. Payload is the compact JSON object of the
// payload; use the typed accessors (TaskSubmit, Event, …) to read it.
type Envelope struct {
	HCPVersion string
	MessageID  uuid.UUID
	Timestamp  time.Time
	SessionID  *uuid.UUID
	Type       Type
	Payload    json.RawMessage
}

// Opts configures a Decoder.
type Opts struct {
	// MaxBodySize is the largest body accepted, in bytes (default 1 MiB).
	MaxBodySize int
}

// DefaultOpts returns the default decoder options.
func DefaultOpts() Opts { return Opts{MaxBodySize: DefaultMaxBodySize} }

// Decoder decodes and validates L1 bodies. It is safe for concurrent use.
type Decoder struct{ opts Opts }

// NewDecoder returns a Decoder; MaxBodySize must be positive.
func NewDecoder(opts Opts) (*Decoder, error) {
	if opts.MaxBodySize <= 0 {
		return nil, errors.New("hcp wire: Opts.MaxBodySize must be positive")
	}
	return &Decoder{opts: opts}, nil
}

var defaultDecoder = &Decoder{opts: DefaultOpts()}

// Decode decodes body with the default options.
func Decode(body []byte) (*Envelope, error) { return defaultDecoder.Decode(body) }

// Decode parses and validates one L1 body: size, UTF-8, one JSON object with no
// duplicate or trailing data, every envelope field, the session rule of its
// type, and the typed payload of its type. Unknown envelope and payload keys are
// ignored (minor versions may add fields). Every error is a *DecodeError.
func (d *Decoder) Decode(body []byte) (*Envelope, error) {
	if len(body) > d.opts.MaxBodySize {
		return nil, derr("", KindTooLarge, strconv.Itoa(len(body))+" bytes > "+strconv.Itoa(d.opts.MaxBodySize))
	}
	if !utf8.Valid(body) {
		return nil, derr("", KindEncoding, "")
	}
	fields, err := topLevel(body)
	if err != nil {
		return nil, err
	}
	env := &Envelope{}
	var fail *DecodeError
	note := func(e *DecodeError) {
		if fail == nil {
			fail = e
		}
	}
	// message_id and type first, so later failures can carry them.
	if s, e := reqString(fields, "message_id"); e != nil {
		note(e)
	} else if id, e := parseUUID("message_id", s); e != nil {
		note(e)
	} else {
		env.MessageID = id
	}
	if s, e := reqString(fields, "type"); e != nil {
		note(e)
	} else if t := Type(s); !t.Valid() {
		note(derr("type", KindUnknownType, strconv.Quote(truncate(s))))
	} else {
		env.Type = t
	}
	if s, e := reqString(fields, "hcp_version"); e != nil {
		note(e)
	} else if e := checkVersion(s); e != nil {
		note(e)
	} else {
		env.HCPVersion = s
	}
	if s, e := reqString(fields, "timestamp"); e != nil {
		note(e)
	} else if ts, e := ParseTimestamp(s); e != nil {
		e.Field = "timestamp"
		note(e)
	} else {
		env.Timestamp = ts
	}
	if raw, ok := fields["session_id"]; ok && !isNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			note(derr("session_id", KindWrongType, "want string or null"))
		} else if id, e := parseUUID("session_id", s); e != nil {
			note(e)
		} else {
			env.SessionID = &id
		}
	}
	if raw, ok := fields["payload"]; !ok || isNull(raw) {
		note(derr("payload", KindMissing, ""))
	} else if raw[0] != '{' {
		note(derr("payload", KindWrongType, "want object"))
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			note(&DecodeError{Field: "payload", Kind: KindSyntax, Err: err})
		} else {
			env.Payload = buf.Bytes()
		}
	}
	if fail == nil {
		if e := env.checkSession(); e != nil {
			note(e)
		} else if e := env.validatePayload(); e != nil {
			note(e)
		}
	}
	if fail != nil {
		if env.MessageID != uuid.Nil {
			fail.MessageID = env.MessageID.String()
		}
		fail.Type = env.Type
		return nil, fail
	}
	return env, nil
}

// Validate checks env by the rules Decode applies (except size and UTF-8, which
// Encode guarantees by construction). Errors are *DecodeError.
func (env *Envelope) Validate() error {
	if e := checkVersion(env.HCPVersion); e != nil {
		return e
	}
	if e := checkUUIDValue("message_id", env.MessageID); e != nil {
		return e
	}
	if env.Timestamp.IsZero() {
		return derr("timestamp", KindMissing, "")
	}
	if y := env.Timestamp.UTC().Year(); y < 0 || y > 9999 {
		return derr("timestamp", KindInvalid, "year outside 0000–9999")
	}
	if !env.Type.Valid() {
		return derr("type", KindUnknownType, strconv.Quote(truncate(string(env.Type))))
	}
	if env.SessionID != nil {
		if e := checkUUIDValue("session_id", *env.SessionID); e != nil {
			return e
		}
	}
	if e := env.checkSession(); e != nil {
		return e
	}
	if len(env.Payload) == 0 {
		return derr("payload", KindMissing, "")
	}
	if !json.Valid(env.Payload) {
		return derr("payload", KindSyntax, "")
	}
	if bytes.TrimLeft(env.Payload, " \t\r\n")[0] != '{' {
		return derr("payload", KindWrongType, "want object")
	}
	if e := env.validatePayload(); e != nil {
		return e
	}
	return nil
}

func (env *Envelope) checkSession() *DecodeError {
	switch env.Type.SessionRule() {
	case SessionNull:
		if env.SessionID != nil {
			return derr("session_id", KindSessionNotNull, "")
		}
	case SessionRequired:
		if env.SessionID == nil {
			return derr("session_id", KindSessionRequired, "type "+string(env.Type))
		}
	}
	return nil
}

// wireEnvelope is the JSON shape written by Encode; field order follows L1.
type wireEnvelope struct {
	HCPVersion string          `json:"hcp_version"`
	MessageID  string          `json:"message_id"`
	Timestamp  string          `json:"timestamp"`
	SessionID  *string         `json:"session_id"`
	Type       Type            `json:"type"`
	Payload    json.RawMessage `json:"payload"`
}

// Encode validates env and returns its UTF-8 JSON body: timestamp in
// milliseconds UTC, session_id null when nil, payload compacted, no HTML
// escaping. Whatever Encode returns, Decode accepts and returns equal.
func Encode(env *Envelope) ([]byte, error) {
	if err := env.Validate(); err != nil {
		return nil, err
	}
	w := wireEnvelope{
		HCPVersion: env.HCPVersion,
		MessageID:  env.MessageID.String(),
		Timestamp:  FormatTimestamp(env.Timestamp),
		Type:       env.Type,
		Payload:    env.Payload,
	}
	if env.SessionID != nil {
		s := env.SessionID.String()
		w.SessionID = &s
	}
	return marshalNoEscape(w)
}

// MarshalJSON encodes env as Encode does.
func (env *Envelope) MarshalJSON() ([]byte, error) { return Encode(env) }

// UnmarshalJSON decodes env as Decode does, with the default options.
func (env *Envelope) UnmarshalJSON(b []byte) error {
	e, err := Decode(b)
	if err != nil {
		return err
	}
	*env = *e
	return nil
}

// NewEnvelope builds a version-1.0 envelope for p, with a fresh UUID v4
// message_id and timestamp at (truncated to ms, UTC). sessionID nil means null.
// The result is validated.
func NewEnvelope(sessionID *uuid.UUID, p Payload, at time.Time) (*Envelope, error) {
	id, err := uuid.NewRandom()
	if err != nil {
		return nil, err
	}
	raw, err := marshalNoEscape(p)
	if err != nil {
		return nil, err
	}
	env := &Envelope{
		HCPVersion: Version,
		MessageID:  id,
		Timestamp:  at.UTC().Truncate(time.Millisecond),
		SessionID:  sessionID,
		Type:       p.MessageType(),
		Payload:    raw,
	}
	if err := env.Validate(); err != nil {
		return nil, err
	}
	return env, nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// FormatTimestamp writes t as ISO 8601 UTC with milliseconds.
func FormatTimestamp(t time.Time) string { return t.UTC().Format(TimestampLayout) }

// ParseTimestamp reads an ISO 8601 / RFC 3339 date-time in UTC: "Z" or a zero
// offset ("+00:00"), 'T' separator, 0–9 fraction digits. The result is UTC,
// truncated to milliseconds (the wire's resolution). Errors are *DecodeError
// with an empty Field.
func ParseTimestamp(s string) (time.Time, *DecodeError) {
	if len(s) < len("2006-01-02T15:04:05Z") || len(s) > 64 {
		return time.Time{}, derr("", KindMalformed, "want ISO 8601 UTC like 2025-01-15T08:30:00.000Z")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, &DecodeError{Kind: KindMalformed, Detail: "want ISO 8601 UTC like 2025-01-15T08:30:00.000Z", Err: err}
	}
	if _, off := t.Zone(); off != 0 {
		return time.Time{}, derr("", KindInvalid, "offset must be zero (UTC)")
	}
	return t.UTC().Truncate(time.Millisecond), nil
}

func checkVersion(s string) *DecodeError {
	maj, min, ok := strings.Cut(s, ".")
	if !ok || !digits(maj) || !digits(min) || len(maj) > 4 || len(min) > 4 {
		return derr("hcp_version", KindMalformed, "want MAJOR.MINOR, got "+strconv.Quote(truncate(s)))
	}
	if n, _ := strconv.Atoi(maj); n != VersionMajor {
		return derr("hcp_version", KindVersion, strconv.Quote(s)+", this implementation speaks "+strconv.Itoa(VersionMajor)+".x")
	}
	return nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseUUID accepts only the canonical 36-character form of a UUID v4 (RFC 4122
// variant), in either case.
func parseUUID(field, s string) (uuid.UUID, *DecodeError) {
	if len(s) != 36 {
		return uuid.Nil, derr(field, KindMalformed, "want canonical UUID v4, got "+strconv.Quote(truncate(s)))
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, &DecodeError{Field: field, Kind: KindMalformed, Detail: "want canonical UUID v4", Err: err}
	}
	return id, checkUUIDValue(field, id)
}

func checkUUIDValue(field string, id uuid.UUID) *DecodeError {
	if id.Version() != 4 || id.Variant() != uuid.RFC4122 {
		return derr(field, KindInvalid, "want UUID version 4, got "+id.String())
	}
	return nil
}

// topLevel splits a body into its top-level members, refusing anything but one
// JSON object with unique keys and nothing after it.
func topLevel(body []byte) (map[string]json.RawMessage, *DecodeError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, &DecodeError{Kind: KindSyntax, Err: err}
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, derr("", KindWrongType, "body must be a JSON object")
	}
	fields := make(map[string]json.RawMessage, 8)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, &DecodeError{Kind: KindSyntax, Err: err}
		}
		key, ok := tok.(string)
		if !ok {
			return nil, derr("", KindSyntax, "object key is not a string")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, &DecodeError{Field: truncate(key), Kind: KindSyntax, Err: err}
		}
		if _, dup := fields[key]; dup {
			return nil, derr(truncate(key), KindDuplicate, "")
		}
		fields[key] = raw
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, &DecodeError{Kind: KindSyntax, Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, derr("", KindSyntax, "trailing data after the object")
	}
	return fields, nil
}

func reqString(fields map[string]json.RawMessage, key string) (string, *DecodeError) {
	raw, ok := fields[key]
	if !ok || isNull(raw) {
		return "", derr(key, KindMissing, "")
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", derr(key, KindWrongType, "want string")
	}
	return s, nil
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// truncate keeps hostile input out of error texts at a bounded size.
func truncate(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
