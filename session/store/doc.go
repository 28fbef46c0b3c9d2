// Package store is the session state file: one bbolt file with every
// session, its numbered L2 events, its checkpoints and the audit log, so
// that a crash at any instant leaves a file that opens and a restart that
// knows each session's state and its next sequence number.
//
// # Concepts
//
// Buckets: "sessions" (id → Session), "events" (one nested bucket per
// session; big-endian sequence number → Event), "checkpoints" (one nested
// bucket per session; the sequence number of its checkpoint_created event
// → Checkpoint), and the audit buckets of session/audit. Records are
// encoded with msgp (record.go; regenerate with go generate).
//
// Every write is one bbolt Update, one fsync'ed commit: Create, Transition,
// Append, Checkpoint and Recovered each load the session, move a
// lifecycle.Machine (which assigns the sequence numbers and refuses an
// invalid transition with a *lifecycle.TransitionError), and write the
// session record, its new events, the checkpoint where there is one and,
// for Create, Transition and Recovered, an audit entry — all or nothing.
// Sequence numbers are derived from the stored record inside that
// transaction, so they survive restarts and a refused or failed write
// consumes none.
//
// A step that writes more than one thing, or sends messages, runs in one
// Tx (Update, or Bind on a transaction the command inbox opened): Create,
// Transition, Emit, Checkpoint, Recovered, Audit and Send all join it, and
// Send queues the step's outbound messages through the Queue (the outbox,
// in the same file) inside it, so a state change and its messages commit
// together. The "active" bucket indexes the non-terminal sessions for the
// gate's concurrency rules. The "access" and "access_sessions" buckets hold
// the access requests of T4 sessions (AccessRequest: JSON records, one per
// session; the held message in them is sealed by the engine). docs/STATE.md describes the whole file.
//
// Check verifies the file at start: bbolt's page check, the audit chain,
// and for each session consecutive events whose transitions lead to the
// stored state, its checkpoints and its audited transitions.
//
// # Caveats
//
// bbolt takes no context: a commit that has begun is not interrupted; the
// context is checked before it. Options.Timeout is always set, so a second
// process fails on the file lock instead of waiting. Records are decoded
// into fresh memory (msgp copies []byte and string fields), never kept as
// slices of the mmap past their transaction.
//
// # Sealed at rest
//
// Checkpoint payloads are opaque to the store. For a T3/T4 session the
// caller hands the at-rest key in NewCheckpoint.Seal: the payload is
// sealed (session/atrest, AES-256-GCM) inside the transaction, bound to
// the session id and the checkpoint id it gets there, and the record is
// marked Sealed; Checkpoint.Open returns the plaintext with the key.
//
// The data of every event of a T3/T4 session (SealedClass) is sealed the
// same way under the key given to SetAtRest, bound to the session id and
// its sequence number (Event.Sealed); its lifecycle events keep a Frame in
// the clear (from and to state, final state, checkpoint id), so Check and
// audit verify need no key. Events opens sealed data with the key. Without
// a key such an event is refused (atrest.ErrNoKey), unless the Tx was told
// that its caller cannot open the session (Tx.WithoutKey). The session
// record, the checkpoint's description and step and the audit log are
// stored in the clear; docs/STATE.md ("Sealed at rest") lists it all.
// Records of unsealed checkpoints and events are encoded exactly as
// before, and records written before sealing existed read as they are.
package store
