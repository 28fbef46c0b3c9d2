// Command hcp-edge is the edge agent: the HCP callee harness daemon for one
// instrument rig and the technician's CLI, in one binary.
//
// It is being built issue by issue. Today it has:
//
//	hcp-edge version                      print version, commit and build date
//	hcp-edge probe [--config FILE] [--json] [--spectrum MS]
//	                                      open every instrument of the rig, read it once, print
//	                                      what it says (read-only: nothing is switched or set)
//	hcp-edge run [--config FILE]          the daemon: state file and audit log, interlock, trip
//	                                      monitor, furnace watchdog, session engine, control socket
//	hcp-edge estop [--operator NAME] [--config FILE] [--socket PATH] [--json]
//	                                      every output safe, through the daemon or, if it does
//	                                      not acknowledge within 150 ms, directly
//	hcp-edge status [--json]              readings, envelope margins, latch, instrument health
//	hcp-edge whoami [--operator NAME]     the OS user the daemon sees, display name and roles
//	hcp-edge tools [--json] [--state-dir DIR] per-tool calls, refusals by rule, failures, p50/p99
//	hcp-edge reset --operator NAME        clear a latched trip (recorded)
//	hcp-edge arm --operator NAME          energise the interlock relay (recorded)
//	hcp-edge envelope coverage [--config FILE] [--json]
//	                                      every writable register, coil and serial command and
//	                                      the envelope rule that bounds it
//	hcp-edge submit FILE [--watch]        a task_submit as the local operator (broker user "local");
//	                                      --watch: live progress, then the final message as JSON
//	hcp-edge approve|deny|abort|pause|resume ID [--operator NAME] [--reason TEXT]
//	                                      decide or steer a session (operator recorded)
//	hcp-edge sessions [--all] [--json]    sessions with state, capability, caller, progress
//	hcp-edge answer SESSION CHECKPOINT VALUE [--operator NAME]
//	                                      answer the recipe question a session is blocked at
//	hcp-edge takeover|handback ID --operator NAME [--reason TEXT]
//	                                      the technician takes a session over / gives it back
//	hcp-edge owner ID [--json]            a session's owner and ownership chain
//	hcp-edge artifact get URI [-o FILE]   copy an artifact, verified against its recorded sha256
//	                                      (a T4 session's: only with an unexpired access approval)
//	hcp-edge capabilities [--as HARNESS] [--json]
//	                                      the capability declarations a harness may use (as
//	                                      discovery over the broker answers it)
//	hcp-edge access list|approve|deny ID --operator NAME [--for D] [--reason TEXT]
//	                                      decide access to a T4 session's held results (audited)
//	hcp-edge audit verify [--json] [--state-dir DIR]
//	                                      check the audit log's hash chain (through the daemon, or
//	                                      the state file read-only when it is down); exit 1 broken
//	hcp-edge audit replay ID [--json] [--operator NAME]
//	                                      one session's lifecycle from the audit log
//	hcp-edge audit log [--since T] [--kind K] [--uid N] [--outcome O] [--json] [--follow]
//	                                      every audit entry, rig-level ones included
//	hcp-edge export ID [--out FILE]       the session's record as an .eln archive (RO-Crate)
//	hcp-edge state usage [--json] [--state-dir DIR]
//	                                      the state directory's bytes per bucket, data class, artifacts
//	hcp-edge state compact [--json] [--state-dir DIR]
//	                                      bbolt's Compact of the state file, checked, swapped in
//	                                      atomically; refused while the daemon runs
//	hcp-edge state prune [--older-than D] [--json] [--state-dir DIR]
//	                                      one retention pass by hand (daemon stopped), audited
//	hcp-edge config check [--json] [--capabilities DIR] [FILE]
//	                                      validate a configuration (schema, units, envelope against
//	                                      the device ranges, paths, key files, capabilities); every
//	                                      problem as FILE:LINE: KEY: MESSAGE; exit 0 valid, 2 invalid
//	hcp-edge models [--json] [--check] [--config FILE]
//	                                      the model router's registry; --check: a health check
//	                                      of every remote instance
//
// Exit codes: 0 success (estop: every output confirmed safe; submit --watch:
// task_completed); 1 failure (an instrument could not be read, an output not
// confirmed safe, a task rejected, failed or aborted, the daemon down or
// refusing); 2 usage or configuration error.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"hcp-edge/cmd/hcp-edge/internal/cli"
)

// Stamped at build time with -ldflags -X (see the Makefile).
var (
	version   = "dev"
	commit    = "unknown"
	buildDate = "unknown"
)

// Exit codes (package cli's, for every verb).
const (
	exitOK    = cli.ExitOK
	exitUsage = cli.ExitUsage
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "version", "--version":
		fmt.Fprintf(stdout, "hcp-edge %s (commit %s, built %s)\n", version, commit, buildDate)
		return exitOK
	case "probe":
		return cli.Probe(ctx, args[1:], stdout, stderr)
	case "run":
		return cli.Run(ctx, version, args[1:], stdout, stderr)
	case "estop":
		return cli.EStop(ctx, args[1:], stdout, stderr)
	case "status":
		return cli.Status(ctx, args[1:], stdout, stderr)
	case "whoami":
		return cli.Whoami(ctx, args[1:], stdout, stderr)
	case "tools":
		return cli.Tools(ctx, args[1:], stdout, stderr)
	case "reset", "arm":
		return cli.Operator(ctx, args[0], args[1:], stdout, stderr)
	case "submit":
		return cli.Submit(ctx, args[1:], stdout, stderr)
	case "approve", "deny", "abort", "pause", "resume":
		return cli.SessionOp(ctx, args[0], args[1:], stdout, stderr)
	case "sessions":
		return cli.Sessions(ctx, args[1:], stdout, stderr)
	case "answer":
		return cli.Answer(ctx, args[1:], stdout, stderr)
	case "takeover", "handback", "owner":
		return cli.Ownership(ctx, args[0], args[1:], stdout, stderr)
	case "artifact":
		return cli.Artifact(ctx, args[1:], stdout, stderr)
	case "capabilities":
		return cli.Capabilities(ctx, args[1:], stdout, stderr)
	case "access":
		return cli.Access(ctx, args[1:], stdout, stderr)
	case "audit":
		return cli.Audit(ctx, args[1:], stdout, stderr)
	case "export":
		return cli.Export(ctx, version, args[1:], stdout, stderr)
	case "state":
		return cli.State(ctx, args[1:], stdout, stderr)
	case "envelope":
		return cli.Envelope(ctx, args[1:], stdout, stderr)
	case "config":
		return cli.Config(args[1:], stdout, stderr)
	case "recipe":
		return cli.Recipe(args[1:], stdout, stderr)
	case "models":
		return cli.Models(ctx, args[1:], stdout, stderr)
	case "broker":
		return cli.Broker(ctx, args[1:], stdout, stderr)
	case "alert":
		return cli.Alert(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "hcp-edge: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: hcp-edge COMMAND [flags]

commands:
  version   print version, commit and build date
  probe     read every instrument of the rig once and print what it says (read-only)
  run       run the agent daemon (interlock, trip monitor, control socket)
  estop     drive every output to its safe state (through the daemon, or directly if it is hung)
  status    readings, envelope margins, latched trip and instrument health from the daemon
  whoami    the OS user the daemon sees on the control socket, the display name and the roles
  tools     per-tool statistics of the tool pipeline: calls, refusals by rule, failures, p50/p99
  reset     clear a latched trip: reset --operator NAME
  arm       energise the interlock relay: arm --operator NAME
  submit    submit a task_submit message (FILE) as the local operator; --watch follows it to its end
  approve   approve a session awaiting approval: approve ID --operator NAME
  deny      refuse a session awaiting approval: deny ID --operator NAME --reason TEXT
  abort     abort a session: abort ID (the recipe's cleanup drives the rig safe)
  pause     hold a running session at its next step: pause ID --operator NAME
  resume    resume a paused session: resume ID --operator NAME
  sessions  the sessions, their state, capability, caller and progress (--all: closed ones too)
  answer    answer the recipe question a session is blocked at: answer SESSION CHECKPOINT VALUE
  takeover  take a session over at the rig: takeover ID --operator NAME (its harness loses control)
  handback  give a taken-over session back to its harness: handback ID --operator NAME
  owner     a session's owner and ownership chain: owner ID
  artifact  artifact get URI [-o FILE]: copy a session's artifact, verified against its sha256
  capabilities [--as HARNESS]: the capability declarations a harness may use, with schemas and safety envelope
  access    access list | approve ID --operator NAME [--for D] | deny ID --operator NAME --reason TEXT:
            decide access to a T4 session's held results
  audit     audit verify: check the audit log's hash chain; audit replay ID: one session's lifecycle;
            audit log [--since T] [--kind K] [--uid N] [--outcome O]: every entry, the rig's own too
  export    export ID [--out FILE]: the session's record as an .eln archive (RO-Crate, spectra as JCAMP-DX)
  state     state usage: bytes per bucket, data class and of the artifacts; state compact: give pruned
            space back to the file system (daemon stopped); state prune: a retention pass by hand
  envelope  envelope coverage: every writable channel and the rule that bounds it
  broker    broker provision --config FILE [--dry-run]: the broker's users and permissions from the configuration
  config    config check [FILE]: validate a configuration, every problem with its file, line and key
  recipe    recipe check FILE...: check process recipes against the rig's envelope, every problem with its line;
            recipe simulate FILE|CAPABILITY --inputs JSON: preview a run on a simulated rig (no hardware)
  models    the analysis models of the configuration (model router registry); --check: ask every remote instance
  alert     alert test: send a test alert to every receiver of the alerts section, each one's result

Run "hcp-edge COMMAND -h" for a command's flags and exit codes.

exit codes: 0 success; 1 failure (estop: not every output confirmed safe; submit --watch: the
task did not complete; the daemon down or refusing); 2 usage or configuration.

examples:
  hcp-edge run --config configs/sim.yaml
  hcp-edge estop --operator alice
  hcp-edge status --json
  hcp-edge reset --operator alice && hcp-edge arm --operator alice
  hcp-edge submit configs/examples/TASK.json --watch
  hcp-edge sessions
  hcp-edge approve apr-1a2b3c4d --operator alice
  hcp-edge access approve acc-1a2b3c4d --operator alice --for 2h
  hcp-edge artifact get hcp://SESSION/artifacts/raman_spectrum.json -o spectrum.json
  hcp-edge audit verify
  hcp-edge audit replay SESSION
  hcp-edge state usage
  hcp-edge envelope coverage
  hcp-edge config check /etc/hcp-edge/hcp-edge.yaml
  hcp-edge recipe check configs/recipes/*.yaml
  hcp-edge probe                                 # the simulated rig (embedded configs/sim.yaml)
  hcp-edge probe --config /etc/hcp-edge/rig.yaml --json
  hcp-edge probe --spectrum 1000                 # also acquire a 1 s Raman spectrum
`)
}
