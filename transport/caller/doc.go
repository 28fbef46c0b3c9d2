// Package caller is the caller harness's side of HCP L1: it declares
// hcp.evt.{caller_id} (bound {caller_id}.#, message TTL 24 h and max length
// 100,000 with drop-head by default, as L1 recommends), submits tasks and
// delivers each task's messages once and in order.
//
// # Concepts
//
// New starts a Client on a bbolt db (its state and its own durable outbox,
// in Opts.Bucket and Opts.Bucket+"-outbox") with a transport/amqp Supervisor.
// Submit appends a task_submit to the outbox and republishes it with the same
// message_id every ResubmitInterval until task_accepted or task_rejected
// arrives, matched through the hcp-in-reply-to header. Task.Messages then
// yields the answer, the events in sequence order and the final message
// (task_completed, task_failed, or session_closed with final_state ABORTED),
// and closes. Watch attaches to a session after a restart. SubmitTo sends
// to another callee than Opts.CalleeID: one caller drives a fleet of rigs by
// callee_id over its one event queue.
//
// Handoff hands a session this caller owns to another caller with
// hcp-edge's session_handoff and returns the ownership_changed record or a
// *RefusedError; Abort sends an abort and returns the refusal hcp-edge
// answers to a former owner. A session handed to this caller (Watch it,
// or its messages go to Opts.Unclaimed) starts at the ownership_changed
// event naming it: the sequence numbers before it are not a gap.
//
// Capabilities and FetchArtifact are hcp-edge's extension requests
// (docs/PROTOCOL-NOTES.md, "Discovery and artifact fetch"): a
// capabilities_request answered by capabilities_response (the declarations
// this caller's login may use, with JSON Schemas and safety envelopes), and
// artifact_request answered chunk by chunk by artifact_chunk, written to an
// io.Writer and verified against the artifact's sha256 (and, with
// FetchOpts.Checksum, against task_completed's). A refusal is a
// *RefusedError (errors.Is ErrRefused) with the callee's reason code.
// Requests are republished with the same message_id every ResubmitInterval
// until answered or ctx ends; their answers are matched by hcp-in-reply-to.
//
// Opts.URLs lists further broker endpoints (a cluster's nodes): the
// Supervisor fails over between them as the agent's does. The event queue
// is a quorum queue by default (no delivery limit), falling back to an
// existing queue of that name, or to classic, with a warning
// (transport/amqp.DeclareCallerTopology).
//
// The consumer uses manual ack. last_processed_sequence is kept per session
// in bbolt and written before each ack; a sequence at or below it is a
// duplicate and skipped; a sequence past a gap is held (unacked) until the gap
// fills, and a gap older than GapTimeout is skipped and counted. A terminal
// message waits behind a gap too.
//
// # Caveats
//
// Read Task.Messages until it closes: a full channel holds the consumer.
// Two Clients with one caller_id share its queue, and each takes the other's
// messages: close one before the next starts consuming.
// Held deliveries count against the prefetch; a gap wider than the prefetch
// can only resolve through GapTimeout. Messages of sessions that are neither
// submitted nor watched go to Opts.Unclaimed (or are logged and dropped).
package caller
