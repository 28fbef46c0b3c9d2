// Package auditaccess reads the audit log for people: Verify checks its hash
// chain, Replay lists one session's entries with the decision, operator and
// summary pulled out of each (Describe), and Record appends the data_access
// entry that reading a T2-or-above session's data requires. The daemon
// serves them on its control socket; the CLI uses them on the state file
// itself (OpenOffline, read-only) when the daemon is down.
//
// # Caveats
//
// Replay of a session classified T2 or above is itself a data access: it
// is recorded first, and refused when it cannot be recorded.
package auditaccess
