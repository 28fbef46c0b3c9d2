// Package export builds a session's .eln archive (session/eln) from the
// state directory: the session record, its pinned recipe file, its inputs,
// every artifact of its final message (each checked against the size and
// sha256 the message lists, sealed ones opened with the at-rest key), the
// final message itself (outputs with the model router's provenance), the
// session's audit entries with their chain hashes, the rig's instruments
// from the configuration, and the operators who signed it
// (docs/RECORD.md).
//
// # Concepts
//
// Build gathers and writes the archive in memory; who may export, and the
// recording of the export as an access, are the caller's (the daemon's
// export operation, cli's offline path): the same rules as an artifact
// fetch. WriteFile puts it at --out through a temporary file in the same
// directory and a hard link, so an existing --out is refused (never
// replaced) and a failure leaves nothing at --out.
//
// # Caveats
//
// Only a session that has ended (COMPLETED, FAILED, ABORTED, REJECTED) is
// exported: a running session's record is not final (ErrNotEnded).
package export
