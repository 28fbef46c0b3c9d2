// Package reply holds the shapes of the control socket's replies: the
// daemon (package agent) fills them, the CLI (package cli) decodes and
// prints them, and their JSON is the --json output of the verbs.
//
// # Concepts
//
// One type per reply: Status (status), Op (reset, arm), Session (one row of
// sessions), Submit and Progress (submit), Artifact (artifact), Access
// (access list), Ownership (takeover, handback, owner), Tools (tools) and
// Uplink (the uplink's part of status). The e-stop's reply is
// safestate.Report; the audit verbs' are auditaccess.VerifyResult and
// auditaccess.ReplayResult.
//
// # Caveats
//
// Field names and JSON tags are a contract with scripts that read --json:
// add fields, never rename one.
package reply
