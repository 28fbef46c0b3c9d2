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
	"hcp-edge/session/store"
)

const accessGroupUsage = `usage: hcp-edge access list [--all] [--json]
       hcp-edge access approve ID --operator NAME [--for DURATION]
       hcp-edge access deny ID --operator NAME --reason TEXT
       hcp-edge access withdraw ID --operator NAME --reason TEXT

The results of a T4 (restricted) session wait for an operator's access approval: when the
session ends its task_completed or task_failed (outputs, artifacts) is held, and its caller
is told so by an access_pending event. Run "hcp-edge access SUBCOMMAND -h" for the flags.
`

// Access is hcp-edge access list|approve|deny|withdraw.
func Access(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return groupUsage(args, accessGroupUsage, stdout, stderr)
	}
	switch args[0] {
	case "list":
		return accessListCmd(ctx, args[1:], stdout, stderr)
	case "approve", "deny", "withdraw":
		return accessDecideCmd(ctx, args[0], args[1:], stdout, stderr)
	}
	return groupUsage(args, accessGroupUsage, stdout, stderr)
}

func accessListCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("access list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("access-list"))
		fs.PrintDefaults()
	}
	all := fs.Bool("all", false, "decided requests too")
	sf := addSessionFlags(fs)
	if pos, err := parseArgs(fs, args, stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge access list: unexpected argument %q\n", pos[0])
		}
		return usageExit(err)
	}
	rep, ok := ask(ctx, "access list", sf.socket(), control.Request{Op: control.OpAccessList, All: *all}, stderr)
	if !ok {
		return ExitFailure
	}
	var list []reply.Access
	if err := json.Unmarshal(rep.Result, &list); err != nil {
		fmt.Fprintf(stderr, "hcp-edge access list: bad reply: %v\n", err)
		return ExitFailure
	}
	if *sf.asJSON {
		if list == nil {
			list = []reply.Access{}
		}
		printJSON(stdout, list)
		return ExitOK
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no access requests")
		return ExitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCESS\tSESSION\tCALLER\tSTATE\tHELD\tEXPIRES\tDECIDED BY\tREADS UNTIL")
	for _, a := range list {
		by, until := "-", "-"
		if a.Operator != "" {
			by = a.Operator
		} else if a.State != string(store.AccessPending) {
			by = "(expiry)"
		}
		if !a.ValidUntil.IsZero() {
			until = a.ValidUntil.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.SessionID, a.CallerID, a.State, a.What,
			a.ExpiresAt.Local().Format(time.DateTime), by, until)
	}
	_ = tw.Flush()
	return ExitOK
}

func accessDecideCmd(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("access "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		if verb == "approve" {
			fmt.Fprint(fs.Output(), usageText("access-approve"))
		} else if verb == "withdraw" {
			fmt.Fprint(fs.Output(), usageText("access-withdraw"))
		} else {
			fmt.Fprint(fs.Output(), usageText("access-deny"))
		}
		fs.PrintDefaults()
	}
	operator := fs.String("operator", "", "who decides (recorded; required)")
	reason := fs.String("reason", "", "why (deny: required, the caller reads it; withdraw: required, audited)")
	var validFor *time.Duration
	if verb == "approve" {
		validFor = fs.Duration("for", 0, "how long local reads of the session's data stay open (default agent.access_approval_for)")
	}
	sf := addSessionFlags(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return usageExit(err)
	}
	cmd := "access " + verb
	switch {
	case len(pos) != 1:
		fmt.Fprintf(stderr, "hcp-edge %s: give exactly one access ID (acc-...) or session id\n", cmd)
		return ExitUsage
	case *operator == "":
		fmt.Fprintf(stderr, "hcp-edge %s: --operator NAME is required\n", cmd)
		return ExitUsage
	case verb == "deny" && *reason == "":
		fmt.Fprintf(stderr, "hcp-edge %s: --reason TEXT is required (the caller reads it)\n", cmd)
		return ExitUsage
	case verb == "withdraw" && *reason == "":
		fmt.Fprintf(stderr, "hcp-edge %s: --reason TEXT is required (recorded in the audit log)\n", cmd)
		return ExitUsage
	case validFor != nil && *validFor < 0:
		fmt.Fprintf(stderr, "hcp-edge %s: --for %v: give a positive duration\n", cmd, *validFor)
		return ExitUsage
	}
	req := control.Request{Op: control.OpAccessApprove, ID: pos[0], Operator: *operator}
	switch {
	case verb == "deny":
		req = control.Request{Op: control.OpAccessDeny, ID: pos[0], Operator: *operator, Reason: *reason}
	case verb == "withdraw":
		req = control.Request{Op: control.OpAccessWithdraw, ID: pos[0], Operator: *operator, Reason: *reason}
	case *validFor > 0:
		req.For = validFor.String()
	}
	rep, ok := ask(ctx, cmd, sf.socket(), req, stderr)
	if *sf.asJSON {
		printJSON(stdout, rep)
	} else if ok {
		var a reply.Access
		_ = json.Unmarshal(rep.Result, &a)
		switch {
		case !a.WithdrawnAt.IsZero():
			fmt.Fprintf(stdout, "%s (session %s): release withdrawn by %s at %s (%s); local reads and fetches are refused\n",
				a.ID, a.SessionID, a.WithdrawnBy, a.WithdrawnAt.Local().Format(time.DateTime), a.WithdrawReason)
		case a.State == string(store.AccessApproved):
			fmt.Fprintf(stdout, "%s (session %s): approved by %s; the caller %s has the results; local reads open until %s\n",
				a.ID, a.SessionID, a.Operator, a.CallerID, a.ValidUntil.Local().Format(time.DateTime))
		case a.State == string(store.AccessPending):
			fmt.Fprintf(stdout, "%s (session %s): signed (%d signature(s)); still pending: its release needs another OS user's approval\n",
				a.ID, a.SessionID, len(a.Approvals))
		default:
			fmt.Fprintf(stdout, "%s (session %s): denied by %s; the caller %s got task_failed access_denied\n", a.ID, a.SessionID, a.Operator, a.CallerID)
		}
		for _, g := range a.Approvals {
			fmt.Fprintf(stdout, "  signed by %s (uid %d %s) at %s: %s\n", g.Operator, g.UID, g.User, g.At.Local().Format(time.DateTime), g.Meaning)
		}
	}
	if !ok {
		return ExitFailure
	}
	return ExitOK
}
