package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/session/store"
)

// followEvery is how often `audit log --follow` asks for new entries.
const followEvery = 500 * time.Millisecond

// auditLog is `hcp-edge audit log`: every audit entry, rig-level ones
// included, through the daemon or on the state file read-only.
func auditLog(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit log", flag.ContinueOnError)
	fs.SetOutput(stderr)
	af := auditFlags{sessionFlags: addSessionFlags(fs),
		stateDir: fs.String("state-dir", "", "read DIR/state.db directly (default: ask the daemon; when it is down, the configuration's state directory)")}
	since := fs.String("since", "", "entries at or after `T`")
	until := fs.String("until", "", "entries before `T`")
	kinds := fs.String("kind", "", "entries of these `KINDS` (comma-separated)")
	sid := fs.String("session", "", "entries of session `ID`")
	uid := fs.String("uid", "", "entries with this OS user id `N` (control actions, approvals, refused reads)")
	outcome := fs.String("outcome", "", "refused, done or failed")
	follow := fs.Bool("follow", false, "keep printing new entries until interrupted")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("audit-log"))
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "hcp-edge audit log: takes no arguments (got %q)\n", pos[0])
		return ExitUsage
	}
	now := time.Now()
	var q auditaccess.LogQuery
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "hcp-edge audit log: "+format+"\n", a...)
		return ExitUsage
	}
	if q.Since, err = parseWhen(*since, now); err != nil {
		return bad("--since: %v", err)
	}
	if q.Until, err = parseWhen(*until, now); err != nil {
		return bad("--until: %v", err)
	}
	if *kinds != "" {
		q.Kinds = strings.Split(*kinds, ",")
	}
	if *sid != "" {
		if len(*sid) > store.MaxIDLen {
			return bad("--session: an id of %d characters", len(*sid))
		}
		q.SessionID = *sid
	}
	if *uid != "" {
		n, err := strconv.ParseUint(*uid, 10, 32)
		if err != nil {
			return bad("--uid %q: not a user id", *uid)
		}
		u := uint32(n)
		q.UID = &u
	}
	q.Outcome = *outcome
	if err := q.Check(); err != nil {
		return bad("%v", err)
	}
	first := true
	for {
		r, err := askLog(ctx, af, q)
		if err != nil {
			if *follow && ctx.Err() != nil {
				return ExitOK
			}
			fmt.Fprintf(stderr, "hcp-edge audit log: %v\n", err)
			return ExitFailure
		}
		printLog(stdout, r, *af.asJSON, first)
		first = false
		if !*follow {
			return ExitOK
		}
		if n := len(r.Entries); n > 0 {
			q.After = r.Entries[n-1].Seq
		} else if q.After < r.HeadSeq {
			q.After = r.HeadSeq
		}
		select {
		case <-ctx.Done():
			return ExitOK
		case <-time.After(followEvery):
		}
	}
}

// askLog asks the daemon, or reads the state file when it is down.
func askLog(ctx context.Context, af auditFlags, q auditaccess.LogQuery) (auditaccess.LogResult, error) {
	var r auditaccess.LogResult
	body, err := json.Marshal(q)
	if err != nil {
		return r, err
	}
	t, err := af.reach(ctx, control.Request{Op: control.OpAuditLog, Query: body})
	if err != nil {
		return r, err
	}
	if t.rep != nil {
		if !t.rep.OK {
			return r, fmt.Errorf("the daemon refused: %s", t.rep.Error)
		}
		if err := json.Unmarshal(t.rep.Result, &r); err != nil {
			return r, fmt.Errorf("bad reply: %w", err)
		}
		return r, nil
	}
	st, path, err := auditaccess.OpenOffline(t.dir, false)
	if err != nil {
		return r, err
	}
	defer st.Close()
	return auditaccess.Log(ctx, st, q, auditaccess.ViaStateFile, path)
}

func printLog(w io.Writer, r auditaccess.LogResult, asJSON, header bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, e := range r.Entries {
			_ = enc.Encode(e)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if header {
		fmt.Fprintln(tw, "TIME\tSEQ\tKIND\tSESSION\tDECISION\tOUTCOME\tOPERATOR\tUID\tDETAIL")
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, e := range r.Entries {
		u := "-"
		if e.UID != nil {
			u = strconv.FormatUint(uint64(*e.UID), 10)
			if e.User != "" {
				u += "(" + e.User + ")"
			}
		}
		det := e.Summary
		if e.Withheld != "" {
			det = "[withheld: " + e.Withheld + "]"
		}
		if rs := []rune(det); len(rs) > 120 {
			det = string(rs[:117]) + "..."
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.At.Local().Format("2006-01-02 15:04:05.000"), e.Seq, e.Kind,
			dash(e.SessionID), dash(e.Decision), dash(e.Outcome), dash(e.Operator), u, det)
	}
	_ = tw.Flush()
}

// parseWhen reads a --since/--until time: RFC 3339, a local date, a local
// date and time (space or T, with or without seconds), or a duration ago
// (Go's units, plus d for days). "" is no bound.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	ago := strings.TrimSuffix(strings.TrimPrefix(s, "-"), " ago")
	if d, ok := strings.CutSuffix(ago, "d"); ok {
		if n, err := strconv.ParseUint(d, 10, 16); err == nil {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(ago); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: want RFC 3339 (2026-11-29T03:12:00Z), a date (2026-11-29), a date and time (\"2026-11-29 03:12\") or a duration ago (2h, 7d)", s)
}
