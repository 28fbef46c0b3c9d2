// Package outbox is the durable outbox of hcp-edge's uplink: every outbound
// HCP message is appended here, in bbolt, before it is published, and deleted
// only when the broker has confirmed it. While the broker is unreachable the
// agent keeps running and the backlog waits on disk; after a crash, a restart
// knows exactly which messages are still unconfirmed.
//
// # Concepts
//
// Append stores one Message in one fsynced bbolt transaction and returns its
// key. Keys come from the bucket's sequence: they increase strictly with every
// Append, survive restarts and are never reused, so the key order is the
// publishing order. Peek and PeekAfter read the oldest messages in key order
// (a pipelining publisher peeks past what it has in flight); Delete removes
// confirmed keys and ignores keys already gone.
//
// Every Message has a Class. Protocol messages are never dropped. Telemetry
// messages are bounded by Opts.TelemetryBound: an Append past the bound drops
// the oldest waiting Telemetry message in the same transaction and adds one to
// a durable counter; TakeDropped reads and resets it so the session can report
// it in a warning event. Depth, Stats and OldestAge describe the backlog.
//
// Records are encoded with msgp (record_gen.go, `go generate`).
//
// # Layout
//
// Under the top-level bucket Opts.Bucket ("outbox"): "msgs" (8-byte big-endian
// key → msgp record; its sequence issues the keys), "telemetry" (the keys of
// waiting Telemetry messages, oldest first) and "meta" ("dropped" counter).
// New shares the agent's state file; Open gives the outbox a file of its own.
//
// # Caveats
//
// Delivery is at least once: a message published and confirmed whose Delete
// did not commit before a crash is published again after the restart, with the
// same message_id; receivers de-duplicate. Each Append costs one bbolt commit
// (two fdatasyncs, ~0.2 ms on an SSD, milliseconds on SD cards); batch nothing
// that must be durable before it is acknowledged. Nothing returned by Peek
// refers into bbolt's memory.
package outbox
