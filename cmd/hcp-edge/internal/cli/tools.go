package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/reply"
)

// Tools is `hcp-edge tools`: the tool pipeline's per-tool statistics, from
// the daemon or the file its last run left.
func Tools(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("tools"))
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print JSON")
	stateDir := fs.String("state-dir", "", "read DIR/"+reply.ToolStatsFile+" (the daemon's last run) instead of asking the daemon")
	cfgPath := configFlag(fs)
	sock := socketFlag(fs)
	if pos, err := parseArgs(fs, args, stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge tools: unexpected argument %q\n", pos[0])
		}
		return usageExit(err)
	}
	var (
		res reply.Tools
		err error
	)
	dir := *stateDir
	if dir == "" {
		cctx, cancel := context.WithTimeout(ctx, clientTimeout)
		var rep control.Reply
		rep, err = control.Do(cctx, socketPath(*sock, *cfgPath), control.Request{Op: control.OpTools}, 2*time.Second)
		cancel()
		switch {
		case err == nil && !rep.OK:
			fmt.Fprintf(stderr, "hcp-edge tools: refused: %s\n", rep.Error)
			return ExitFailure
		case err == nil:
			if err := json.Unmarshal(rep.Result, &res); err != nil {
				fmt.Fprintf(stderr, "hcp-edge tools: bad reply: %v\n", err)
				return ExitFailure
			}
			res.Source = "daemon"
		case errors.Is(err, control.ErrNoDaemon):
			f, cerr := loadConfig(*cfgPath)
			if cerr != nil {
				fmt.Fprintf(stderr, "hcp-edge tools: no daemon is listening, and the configuration does not load: %v\n", cerr)
				return ExitFailure
			}
			dir = f.Agent.StateDir
		default:
			fmt.Fprintf(stderr, "hcp-edge tools: %v\n", err)
			return ExitFailure
		}
	}
	if dir != "" {
		if res, err = reply.ReadToolStats(dir); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(stderr, "hcp-edge tools: no daemon answered and %s holds no %s (the daemon writes it when it stops).\n", dir, reply.ToolStatsFile)
			} else {
				fmt.Fprintf(stderr, "hcp-edge tools: %v\n", err)
			}
			return ExitFailure
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return ExitOK
	}
	printTools(stdout, res)
	return ExitOK
}

func printTools(w io.Writer, r reply.Tools) {
	if r.Source == "daemon" {
		fmt.Fprintf(w, "tool calls since the daemon started (at %s)\n\n", r.At.Local().Format("2006-01-02 15:04:05"))
	} else {
		fmt.Fprintf(w, "tool calls of the daemon's last run (%s, saved %s)\n\n", r.Source, r.At.Local().Format("2006-01-02 15:04:05"))
	}
	if len(r.Tools) == 0 {
		fmt.Fprintln(w, "no tool was called")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tVERSION\tCALLS\tOK\tREFUSED\tFAILED\tSAFE\tP50\tP99\tMAX\tREFUSALS BY RULE")
	var calls, refused, failed, waits uint64
	var longest float64
	for _, t := range r.Tools {
		rules := make([]string, 0, len(t.RefusedBy))
		for rule, n := range t.RefusedBy {
			rules = append(rules, fmt.Sprintf("%s=%d", rule, n))
		}
		slices.Sort(rules)
		by := strings.Join(rules, " ")
		if by == "" {
			by = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", t.Tool, t.Version, t.Calls, t.Succeeded, t.Refused,
			t.Failed, t.TowardSafe, msText(t.P50), msText(t.P99), msText(t.Max), by)
		calls, refused, failed = calls+t.Calls, refused+t.Refused, failed+t.Failed
		waits, longest = waits+t.FreshWaits, max(longest, t.MaxFreshWait)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\n%d calls of %d tools: %d refused, %d failed\n", calls, len(r.Tools), refused, failed)
	if waits > 0 {
		fmt.Fprintf(w, "%d calls waited for a fresh reading (late, not stale), the longest %s\n", waits, msText(longest))
	}
}

func msText(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2fs", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.2fms", v)
}
