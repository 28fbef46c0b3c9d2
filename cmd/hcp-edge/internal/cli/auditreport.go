package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/cmd/hcp-edge/internal/control"
)

// auditReport is `hcp-edge audit report`: the safety report over a window,
// through the daemon or on the state file read-only.
func auditReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	af := auditFlags{sessionFlags: addSessionFlags(fs),
		stateDir: fs.String("state-dir", "", "read DIR/state.db directly (default: ask the daemon; when it is down, the configuration's state directory)")}
	since := fs.String("since", "7d", "the window's start `T`")
	until := fs.String("until", "", "the window's end `T` (default: now)")
	period := fs.String("period", "day", "one section per `day` or week (from Monday)")
	format := fs.String("format", "text", "text, json or html")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("audit-report"))
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return usageExit(err)
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "hcp-edge audit report: "+format+"\n", a...)
		return ExitUsage
	}
	if len(pos) > 0 {
		return bad("takes no arguments (got %q)", pos[0])
	}
	if *af.asJSON {
		*format = "json"
	}
	switch *format {
	case "text", "json", "html":
	default:
		return bad("--format %q: text, json or html", *format)
	}
	now := time.Now()
	q := auditaccess.ReportQuery{Period: *period, Until: now}
	if q.Since, err = parseWhen(*since, now); err != nil { // auditlog.go
		return bad("--since: %v", err)
	}
	if *until != "" {
		if q.Until, err = parseWhen(*until, now); err != nil {
			return bad("--until: %v", err)
		}
	}
	if err := q.Check(); err != nil {
		return bad("%v", err)
	}
	r, err := askReport(ctx, af, q)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge audit report: %v\n", err)
		return ExitFailure
	}
	rep := r.Report
	rep.SetLocation(time.Local) // auditaccess.Report cut the periods in the daemon's (this host's) local time
	switch *format {
	case "json":
		err = rep.WriteJSON(stdout)
	case "html":
		err = rep.WriteHTML(stdout)
	default:
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge audit report: %v\n", err)
		return ExitFailure
	}
	return ExitOK
}

// askReport asks the daemon, or reads the state file when it is down.
func askReport(ctx context.Context, af auditFlags, q auditaccess.ReportQuery) (auditaccess.ReportResult, error) {
	var r auditaccess.ReportResult
	body, err := json.Marshal(q)
	if err != nil {
		return r, err
	}
	t, err := af.reach(ctx, control.Request{Op: control.OpAuditReport, Query: body})
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
	return auditaccess.Report(ctx, st, q, auditaccess.ViaStateFile, path)
}
