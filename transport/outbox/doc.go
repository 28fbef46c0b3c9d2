// Package outbox is the durable outbox of hcp-edge's uplink: every outbound
// HCP message is appended here, in bbolt, before it is published, and deleted
// only when the broker has confirmed it. While the broker is unreachable the
// agent keeps running and the backlog waits on disk; after a crash, a restart
// knows exactly which messages are still unconfirmed.
//
// # Concepts
//
// Append stores one Message durably and returns its key: it returns once the
// bbolt transaction holding the message has committed (fsynced). Keys come
// from the bucket's sequence: they increase strictly with every Append,
// survive restarts and are never reused, so the key order is the publishing
// order. AppendAsync queues a message and returns a Pending whose Wait
// returns the key once it is stored: one producer may keep several in flight
// and they share commits (BenchmarkOutboxVsBarePipelined in transport/amqp:
// about 70 messages per commit with a window of 256). Peek and PeekAfter read the oldest messages in key order (a
// pipelining publisher peeks past what it has in flight).
//
// Writes go through a committer goroutine that each Outbox owns (Close stops
// it): it takes everything waiting and commits it in one transaction, so
// concurrent Appends (several sessions) share one commit, and deletions ride
// along. Delete removes confirmed keys and returns once that has committed;
// DeleteLater (what the publisher uses) returns at once: the deletions wait a
// little (Opts.DeleteDelay) and ride along with an Append's commit as one run
// of neighbouring keys, or get a commit of their own when no Append comes.
// Either ignores keys already gone. AppendTx appends inside a
// caller's own transaction (the agent's state file commits each step with
// its messages that way, the command inbox its replies), Telemetry bound
// included: the waiting Telemetry count is kept in "meta" by every writing
// transaction. DeleteLater keys ride along with an AppendTx transaction as
// with an Append's commit; they leave the queue only once that transaction
// has committed (a rolled-back one leaves them to the committer).
//
// Every Message has a Class. Protocol messages are never dropped. Telemetry
// messages are bounded by Opts.TelemetryBound: an Append past the bound drops
// the oldest waiting Telemetry message in the same transaction and counts it,
// durably, against its session (Message.CorrelationID, "" allowed).
// TakeDroppedBySession reads and resets the counts so each session can report
// its own losses in a warning event; TakeDropped does the same for the total.
// Depth, Stats and OldestAge describe the backlog.
//
// Records are encoded with msgp (record_gen.go, `go generate`).
//
// # Layout
//
// Under the top-level bucket Opts.Bucket ("outbox"): "msgs" (8-byte big-endian
// key → msgp record; its sequence issues the keys), "telemetry" (the keys of
// waiting Telemetry messages, oldest first) and "meta" ("dropped": the total
// dropped count; "dropped/" + session id: that session's count). New shares
// the agent's state file; Open gives the outbox a file of its own, opened
// without a persisted freelist (bbolt's NoFreelistSync, as etcd does: fewer
// pages per commit, and the freelist is rebuilt by a scan when the file opens).
//
// # Caveats
//
// Delivery is at least once: a message published and confirmed whose deletion
// did not commit before a crash is published again after the restart, with
// the same message_id; receivers de-duplicate. DeleteLater widens that window
// by up to 4×Opts.DeleteDelay. Each commit costs two fdatasyncs (~0.2 ms on an
// SSD, milliseconds on SD cards), so a single producer appending one message
// at a time gets at most one Append per commit; concurrent producers share
// commits. Nothing returned by Peek refers into bbolt's memory.
package outbox
