// Package uplink is the daemon's HCP uplink over AMQP: the adapter between
// the broker (transport/amqp) and the session engine (session/engine).
//
// # Concepts
//
// An Uplink holds the durable outbox in the state file, which is the
// store's Queue: the engine queues every message of a step in the
// transaction that records it. The transport's Supervisor drains the
// outbox to the broker and runs the command inbox, whose handler
// (uplink.go) dispatches by message type: task_submit runs
// engine.SubmitTx inside the inbox's transaction; an abort is refused,
// audited, when it does not come from the session's owner (handoff.go);
// session_handoff runs engine.Handoff; capabilities_request (discovery.go,
// package discovery) and artifact_request (artifactfetch.go: chunks to
// the session's owner only, T4 through engine.ReadAccess, sealed files
// opened with the at-rest key) are reads kept out of the de-duplication
// window. A reporter (dropreport.go) turns the outbox's per-session drop
// counts of bounded telemetry into warning events.
//
// # Caveats
//
// A nil *Uplink (no broker configured) is valid: every method does
// nothing. The order of the calls matters; see Uplink.
// MigrateOutboxFile merges the outbox.db of an earlier version into the
// state file, once, at start.
package uplink
