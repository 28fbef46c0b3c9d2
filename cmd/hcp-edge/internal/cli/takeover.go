package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/reply"
)

// Ownership is takeover, handback and owner.
func Ownership(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	type help struct{ usage, what, example string }
	h := map[string]help{
		"takeover": {"takeover ID --operator NAME [--reason TEXT] [--release]",
			"The technician at the rig takes session ID over: the local operator becomes its owner (an\n" +
				"ownership_changed event tells the harness that owned it), its events keep being recorded and\n" +
				"go to the local watchers, and that harness's abort or hand-off is refused (audited) until\n" +
				"hcp-edge handback. The run itself goes on; pause, resume and abort it locally as ever.\n" +
				"--release is handback.",
			"hcp-edge takeover 0b6f...e1 --operator olga --reason \"checking the MFC by hand\""},
		"handback": {"handback ID --operator NAME [--reason TEXT]",
			"Gives session ID, taken over at the rig, back to the harness that owned it before the\n" +
				"takeover: its events go to that harness again, from an ownership_changed event on.",
			"hcp-edge handback 0b6f...e1 --operator olga"},
		"owner": {"owner ID",
			"Prints session ID's owner and its ownership chain (hand-offs, takeovers, handbacks).",
			"hcp-edge owner 0b6f...e1 --json"},
	}[verb]
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: hcp-edge %s [--json] [--socket PATH] [--config FILE]\n\n%s\n\n"+
			"exit codes: 0 done; 1 refused (no such session, ended, taken over already or not taken over) or\nthe daemon is down; 2 usage.\n\nexample:\n  %s\n\nflags:\n",
			h.usage, h.what, h.example)
		fs.PrintDefaults()
	}
	var operator, reason *string
	var release *bool
	if verb != "owner" {
		operator = fs.String("operator", "", "who takes over or hands back (recorded; required)")
		reason = fs.String("reason", "", "why (recorded in the ownership chain)")
	}
	if verb == "takeover" {
		release = fs.Bool("release", false, "hand the session back (as handback)")
	}
	sf := addSessionFlags(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "hcp-edge %s: give exactly one session ID\n", verb)
		return ExitUsage
	}
	req := control.Request{Op: control.OpOwnership, ID: pos[0]}
	if verb != "owner" {
		if *operator == "" {
			fmt.Fprintf(stderr, "hcp-edge %s: --operator NAME is required\n", verb)
			return ExitUsage
		}
		req.Op, req.Operator, req.Reason = control.OpTakeover, *operator, *reason
		if verb == "handback" || (release != nil && *release) {
			req.Op = control.OpHandback
		}
	}
	rep, ok := ask(ctx, verb, sf.socket(), req, stderr)
	if !ok {
		if *sf.asJSON {
			printJSON(stdout, rep)
		}
		return ExitFailure
	}
	var v reply.Ownership
	if err := json.Unmarshal(rep.Result, &v); err != nil {
		fmt.Fprintf(stderr, "hcp-edge %s: bad reply: %v\n", verb, err)
		return ExitFailure
	}
	if *sf.asJSON {
		printJSON(stdout, v)
		return ExitOK
	}
	if v.Message != "" {
		fmt.Fprintln(stdout, v.Message)
	}
	fmt.Fprintf(stdout, "owner: %s\n", v.Owner)
	if len(v.Chain) > 0 {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "#\tAT\tFROM\tTO\tVIA\tBY\tREASON")
		for _, r := range v.Chain {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Index, r.At.UTC().Format(time.RFC3339), r.From, r.To, r.Via, r.By, r.Reason)
		}
		_ = tw.Flush()
	}
	return ExitOK
}
