// Package retention removes closed sessions from the state directory once
// their retention has passed, so that an agent left for months beside a
// rig does not fill its SD card.
//
// # Concepts
//
// A Policy says how long a closed session keeps its data, per data
// classification (T1..T4, with a default for classes it does not name),
// measured from the session's last transition (its close), and how many
// bytes the state directory may hold (counted by Pruner.Size: the state
// file's pages in use but the audit log's, the artifacts and the results).
// A Pruner applies it to a store.Store:
//
//   - past its retention, a closed session is removed: its record, events,
//     checkpoints, ownership chain and decided access request
//     (store.Tx.Remove), then its artifacts (artifacts/{session}/) and its
//     result copy (results/{session}.json);
//   - past the size ceiling, the oldest closed sessions go first, even
//     inside their retention, but never one closed less than MinAge ago;
//   - a session that is not closed (pending, running, paused), and a T4
//     session whose access request still waits for an operator, is never
//     touched.
//
// Each removal is audited (audit.KindRetention, under the session's id)
// in the transaction that removes it. The audit chain is kept whole: no
// entry is deleted, so `hcp-edge audit verify` proves the whole history,
// and `hcp-edge audit replay` of a pruned session shows what it did and
// that retention removed it.
//
// # Small transactions
//
// The state file has one writer at a time: a session's step waits for any
// write in progress. A pass removes PerTx sessions per transaction
// (default 4; deleting a session's nested buckets frees its pages without
// a scan) and pauses between transactions, so a step or the inbox never
// waits behind more than one short commit.
//
// # Crash safety
//
// Files are removed after the transaction that removed the records has
// committed. That transaction also records the session id in the
// "retention_pending" bucket; the files of every id there are removed
// (again) at the start of each pass and the id cleared, so a crash
// between the commit and the removal of the files leaves nothing behind.
//
// # Time
//
// The Pruner reads time from Opts.Clock only: a test moves a fake clock
// months ahead and calls Once.
//
// # Caveats
//
// Size (each pass with a ceiling) reads the audit log's pages in a read
// transaction, and Measure every page: bbolt cannot grow its mmap while
// a read transaction is open, so a write that needs a larger one waits
// for it.
//
// Pruning frees pages inside the state file; bbolt does not give them
// back to the file system. `hcp-edge state compact` (session/compact) does,
// with the daemon stopped. The outbox is not touched: a final message a
// broker outage held past retention is still delivered.
package retention
