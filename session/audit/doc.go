// Package audit is hcp-edge's append-only, hash-chained audit log: every gate
// decision, state transition, tool call and interlock decision, each with
// the session it belongs to (the TaskID-correlation contract of
// seeds/003), so that one session's lifecycle can be replayed and any
// change to the record detected.
//
// # Concepts
//
// An Entry has a sequence number (global, from 1, no gap), a time, a
// session id (empty for rig-wide decisions such as an e-stop), a Kind, a
// free-form detail (JSON text by convention), the hash of the previous
// entry (32 zero bytes for the first), and its own hash: SHA-256 over the
// canonical encoding
//
//	"hcp-edge/audit/v1\n" | seq u64 | time unix-ns i64 | len u32 | session
//	| len u32 | kind | len u32 | detail | prev [32]byte
//
// with every integer big-endian. Changing any field of any entry, removing
// or reordering entries breaks the chain at that point.
//
// The log lives in buckets of a bbolt file that someone else opens (the
// session store): "audit" (key: big-endian seq; value: the msgp-encoded
// entry), "audit_sessions" (one nested bucket per session id listing its
// sequence numbers, for Replay) and "audit_meta" (the head: last seq and
// hash). AppendTx appends inside a caller's read-write transaction, so a
// store writes a state transition and its audit entry in one commit; Log
// wraps the same in its own transactions.
//
// Verify walks the whole chain and returns the first broken link as a
// *ChainError. Replay returns one session's entries in order, each
// checked against its own hash. Query selects entries by time, kind,
// session and position; a time window is read through the time index
// "audit_time" (time, then sequence number), not the whole chain.
//
// # Archive
//
// Archive moves a prefix of the chain into a JSON Lines file (each entry
// whole, with its link and hash) and records the anchor, the last archived
// entry, in "audit_meta": Verify, Replay and Query then start from it, and
// VerifyArchives checks archive files and their join with the anchor. A
// crash at any step leaves the old chain whole or the archive plus the
// anchor.
//
// # Interlock
//
// Interlock adapts a Log to envelope.Auditor: an interlock entry whose
// action was accepted, executed or failed is a tool call; every other one
// (refusals, halts, trips, resets, arming) an interlock decision. The
// detail is the envelope.Entry as JSON.
//
// # Report
//
// Build summarises entries over a window, per day or week: the trips (the
// reading that crossed its limit, the procedure, the reaction time from
// that reading's snapshot to the procedure's entry), e-stops and who,
// refusals by rule (with the newest one's reason and readings), approvals
// and approvers, questions and answers, operator overrides, leak checks,
// and the agent's own writes to non-volatile registers. It is a pure
// function; a kind it does not know is counted under Other. Report's
// WriteText, WriteJSON and WriteHTML (one self-contained, printable page)
// print it. Entries carry the envelope's version and the readings their
// decision used in their detail (envelope.Entry's JSON, new fields left
// out when empty), so entries written before them hash and verify as they
// did.
//
// # Caveats
//
// A hash chain detects edits by someone who does not recompute every later
// hash. Whoever can write the file can rewrite the whole chain from the
// edited entry on; anchor the head elsewhere (print it, ship it upstream)
// when that matters. Deleting the newest entries is caught only through
// the stored head, which lives in the same file.
package audit
