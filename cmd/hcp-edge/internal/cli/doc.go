// Package cli holds the verbs of the hcp-edge command: each verb is one
// function with the signature func(ctx, args, stdout, stderr) int that
// parses its own flags, does its work (most ask the daemon over the control
// socket, package control; some work offline on the state file or the rig)
// and returns the process's exit code. Package main's verb table calls them.
//
// # Concepts
//
// Exit codes are the same for every verb: ExitOK (0) success or help that
// was asked for (-h, --help); ExitFailure (1) the verb failed (an instrument
// not read, an output not confirmed safe, a task rejected, the daemon down
// or refusing); ExitUsage (2) a usage or configuration error. Usage text
// goes to stdout when asked for, to stderr with ExitUsage otherwise.
//
// Replies of the daemon are decoded into the shapes of package reply; the
// e-stop's into safestate.Report, the audit verbs' into the results of
// package auditaccess. Run starts the daemon itself (package agent).
//
// # Caveats
//
// Output and exit codes are a contract with scripts and with the end-to-end
// tests of package main, which run the built binary: change them only on
// purpose.
package cli

// Exit codes of every verb.
const (
	ExitOK      = 0 // success, or help that was asked for
	ExitFailure = 1 // the verb failed
	ExitUsage   = 2 // usage or configuration error
)
