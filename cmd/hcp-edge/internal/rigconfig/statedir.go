package rigconfig

// The files and directories the daemon keeps in agent.state_dir.
const (
	// StateFile is the daemon's bbolt file: the sessions, the audit log and
	// the uplink's outbox, one hash chain. The daemon holds its lock; the
	// CLI opens it read-only when the daemon is down.
	StateFile    = "state.db"
	TokenKeyFile = "token.key" // the session token signing key (0600)
	ArtifactsDir = "artifacts" // artifacts/{session}/{name}
	ResultsDir   = "results"   // results/{session}.json: the final message of a session
	// AuditArchiveDir holds the audit entries retention moved out of the
	// state file (audit-{first position}.jsonl; docs/RECORD.md).
	AuditArchiveDir = "audit-archive"
)
