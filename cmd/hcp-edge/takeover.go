package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/control"
	"github.com/hcp-edge/hcp-edge/session/store"
)

// ownershipView is the reply of takeover, handback and owner: the
// session's owner and its ownership chain, oldest first.
type ownershipView struct {
	Message string            `json:"message,omitempty"`
	Session string            `json:"session"`
	Owner   string            `json:"owner"`
	Chain   []store.Ownership `json:"chain"`
}

// ownershipOp serves takeover, handback and ownership on the control
// socket: the technician at the rig takes a session over (its harness's
// remote control is refused until handback), gives it back, or reads the
// chain.
func (s *sessions) ownershipOp(ctx context.Context, req control.Request) (any, error) {
	if req.ID == "" {
		return nil, fmt.Errorf("%s needs a session id", req.Op)
	}
	var msg string
	switch req.Op {
	case control.OpTakeover:
		rec, err := s.eng.Takeover(ctx, req.ID, req.Operator, req.Reason)
		if err != nil {
			return nil, err
		}
		msg = fmt.Sprintf("%s: taken over by %s from %s; events stay on this rig and %s's control is refused until hcp-edge handback",
			req.ID, req.Operator, rec.From, rec.From)
	case control.OpHandback:
		rec, err := s.eng.Handback(ctx, req.ID, req.Operator, req.Reason)
		if err != nil {
			return nil, err
		}
		msg = fmt.Sprintf("%s: handed back to %s by %s", req.ID, rec.To, req.Operator)
	case control.OpOwnership:
	default:
		return nil, fmt.Errorf("unknown op %q", req.Op)
	}
	chain, owner, err := s.eng.Ownership(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if chain == nil {
		chain = []store.Ownership{}
	}
	if msg != "" {
		s.log.Warn("session "+req.Op, "id", req.ID, "operator", req.Operator, "reason", req.Reason, "owner", owner)
	}
	return ownershipView{Message: msg, Session: req.ID, Owner: owner, Chain: chain}, nil
}

// ownershipCmd is takeover, handback and owner.
func ownershipCmd(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) int {
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
		return exitUsage
	}
	req := control.Request{Op: control.OpOwnership, ID: pos[0]}
	if verb != "owner" {
		if *operator == "" {
			fmt.Fprintf(stderr, "hcp-edge %s: --operator NAME is required\n", verb)
			return exitUsage
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
		return exitFailure
	}
	var v ownershipView
	if err := json.Unmarshal(rep.Result, &v); err != nil {
		fmt.Fprintf(stderr, "hcp-edge %s: bad reply: %v\n", verb, err)
		return exitFailure
	}
	if *sf.asJSON {
		printJSON(stdout, v)
		return exitOK
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
	return exitOK
}
