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
		fmt.Fprint(fs.Output(), usageText("answer"))
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
