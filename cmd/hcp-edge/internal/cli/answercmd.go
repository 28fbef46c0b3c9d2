package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/reply"
)

// Answer is `hcp-edge answer SESSION CHECKPOINT VALUE`: the technician
// answers the recipe question a session is blocked at, over the local
// control socket (the kernel's identity and the operate role, as approve).
func Answer(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("answer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: hcp-edge answer SESSION CHECKPOINT VALUE [--operator NAME] [--json] [--socket PATH] [--config FILE]

Answers the question of a recipe a session is blocked at (PAUSED, awaiting_input; hcp-edge
sessions shows it, with its checkpoint and the answer it takes): VALUE is yes or no, a number
in the question's unit and range, or one of its choices. The answer and the resumption are one
audited transition, recorded with the OS user the daemon sees; the session goes on at once. An
answer of the wrong type or out of range, to a checkpoint that is not pending, or from a user
without the operate role is refused and changes nothing. An unanswered question aborts the
session to a safe state at its timeout.

exit codes: 0 answered; 1 refused (no such session or pending question, a bad value, no role)
or the daemon is down; 2 usage.

example:
  hcp-edge answer 0b6f...e1 ckpt-000004 MoO3 --operator olga

flags:
`)
		fs.PrintDefaults()
	}
	operator := fs.String("operator", operatorDefault(), "who answers (recorded with the OS user)")
	sf := addSessionFlags(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) != 3 {
		fmt.Fprintln(stderr, "hcp-edge answer: give SESSION CHECKPOINT VALUE (hcp-edge sessions shows the pending question)")
		return ExitUsage
	}
	if *operator == "" {
		fmt.Fprintln(stderr, "hcp-edge answer: --operator NAME is required")
		return ExitUsage
	}
	rep, ok := ask(ctx, "answer", sf.socket(), control.Request{Op: control.OpAnswer, ID: pos[0], Checkpoint: pos[1], Value: pos[2],
		Operator: *operator}, stderr)
	if *sf.asJSON {
		printJSON(stdout, rep)
	} else if ok {
		var r reply.Op
		_ = json.Unmarshal(rep.Result, &r)
		fmt.Fprintln(stdout, r.Message)
	}
	if !ok {
		return ExitFailure
	}
	return ExitOK
}
