// Package wire is the HCP L1 wire format: the message envelope, the message
// types, the typed payloads of L2/L3/L4 that travel in it, routing keys and the
// AMQP property mapping — as plain data, without speaking AMQP. The session
// engine imports it; transport/amqp puts it on a broker.
//
// The contract is ../shared/spec/hcp/L1-transport-encoding.md; decisions where
// it is silent are in docs/PROTOCOL-NOTES.md ("HCP L1 (transport)").
//
// # Concepts
//
// An Envelope is one message: hcp_version, message_id (UUID v4), timestamp
// (ISO 8601 UTC, millisecond resolution), session_id (nil for null), type and
// the payload as a compact JSON object. Decode turns a body into an Envelope
// and refuses, with a *DecodeError, anything L1 does not allow: a body over
// Opts.MaxBodySize (default 1 MiB), invalid UTF-8, anything but one JSON object,
// duplicate envelope keys, a missing or mistyped field, a malformed UUID or
// timestamp, a foreign hcp_version major, an unknown type, a session_id that
// breaks its type's rule (null on task_submit, required on abort, accepted,
// event, completed, failed; either on task_rejected), and a payload that
// does not validate as its type's typed payload. Encode is its inverse:
// whatever Encode returns, Decode accepts and returns equal.
//
// Typed payloads (TaskSubmit, Abort, TaskAccepted, TaskRejected, Event,
// TaskCompleted, TaskFailed) implement Payload; NewEnvelope builds an envelope
// from one, and the Envelope accessors (env.TaskSubmit(), env.Event(), …) read
// one back. TaskAccepted carries L3's SafetyEnvelope typed.
//
// # Extensions
//
// hcp-edge adds message types where HCP is silent (discussion-log P4 and
// P5; docs/PROTOCOL-NOTES.md, "Discovery and artifact fetch"): the requests
// capabilities_request and artifact_request travel on the command channel
// (Type.IsCommand, Type.IsRequest) and are answered on the event channel
// by capabilities_response, artifact_chunk or request_refused
// (Type.IsResponse) with the request's message_id in HeaderInReplyTo.
// Their payloads (CapabilitiesRequest, CapabilitiesResponse,
// ArtifactRequest, ArtifactChunk, RequestRefused) decode and validate like
// L1's.
//
// # Errors
//
// Every refusal is a *DecodeError with the JSON path of the field at fault and
// a Kind; errors.Is matches it against the sentinel of its Kind (ErrTooLarge,
// ErrUnknownType, ErrSessionNotNull, …). When message_id and type could be read
// before the failure, the error carries them, so an inbox can answer a broken
// task_submit with task_rejected invalid_input. Decode never panics (fuzzed).
//
// # Caveats
//
// Unknown keys in the envelope and in payloads are ignored: a minor version may
// add fields. The AMQP timestamp property has one-second resolution; the body's
// timestamp is authoritative. The spec's own L4 example uses "msg-001" as a
// message_id; it is not a UUID and is refused.
package wire
