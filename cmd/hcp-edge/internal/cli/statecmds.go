package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/internal/diskspace"
	"hcp-edge/session/capability"
	"hcp-edge/session/compact"
	"hcp-edge/session/retention"
)

const stateGroupUsage = `usage: hcp-edge state usage [--json] [--state-dir DIR]
       hcp-edge state compact [--json] [--state-dir DIR]     (daemon stopped)
       hcp-edge state prune [--older-than DURATION] [--json] [--state-dir DIR]   (daemon stopped)

Run "hcp-edge state usage -h" (compact, prune) for the flags.
`

// State is `hcp-edge state usage|compact|prune`: the state directory's
// space, bbolt's compaction of the state file, and a retention pass by
// hand (session/retention, session/compact; docs/STATE.md).
func State(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "usage" && args[0] != "compact" && args[0] != "prune") {
		return groupUsage(args, stateGroupUsage, stdout, stderr)
	}
	verb := args[0]
	fs := flag.NewFlagSet("state "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	af := auditFlags{sessionFlags: addSessionFlags(fs),
		stateDir: fs.String("state-dir", "", "the state directory (default: the configuration's agent.state_dir)")}
	var olderThan *string
	switch verb {
	case "usage":
		fs.Usage = func() {
			fmt.Fprint(fs.Output(), usageText("state-usage"))
			fs.PrintDefaults()
		}
	case "compact":
		fs.Usage = func() {
			fmt.Fprint(fs.Output(), usageText("state-compact"))
			fs.PrintDefaults()
		}
	case "prune":
		olderThan = fs.String("older-than", "", "remove every closed session closed longer ago than this ISO 8601 duration (e.g. P30D), whatever its class; default: the retention section")
		fs.Usage = func() {
			fmt.Fprint(fs.Output(), usageText("state-prune"))
			fs.PrintDefaults()
		}
	}
	if pos, err := parseArgs(fs, args[1:], stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge state %s: takes no arguments\n", verb)
		}
		return usageExit(err)
	}
	switch verb {
	case "usage":
		return stateUsage(ctx, af, stdout, stderr)
	case "compact":
		return stateCompact(ctx, af, stdout, stderr)
	}
	return statePrune(ctx, af, *olderThan, stdout, stderr)
}

// dir is --state-dir, else the configuration's state directory.
func (f auditFlags) dir() (string, rigconfig.File, error) {
	cfg, err := loadConfig(*f.cfgPath)
	if *f.stateDir != "" {
		return *f.stateDir, cfg, nil
	}
	if err != nil {
		return "", cfg, fmt.Errorf("the configuration does not name a state directory: %w", err)
	}
	return cfg.Agent.StateDir, cfg, nil
}

func stateUsage(ctx context.Context, af auditFlags, stdout, stderr io.Writer) int {
	t, err := af.reach(ctx, control.Request{Op: control.OpStateUsage})
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge state usage: %v\n", err)
		return ExitFailure
	}
	var u retention.Usage
	via := "measured by the running daemon"
	if t.rep != nil {
		if !t.rep.OK {
			fmt.Fprintf(stderr, "hcp-edge state usage: the daemon refused: %s\n", t.rep.Error)
			return ExitFailure
		}
		if err := json.Unmarshal(t.rep.Result, &u); err != nil {
			fmt.Fprintf(stderr, "hcp-edge state usage: bad reply: %v\n", err)
			return ExitFailure
		}
	} else {
		st, _, err := auditaccess.OpenOffline(t.dir, false)
		if err != nil {
			fmt.Fprintf(stderr, "hcp-edge state usage: %v\n", err)
			return ExitFailure
		}
		u, err = retention.Measure(ctx, st, filepath.Join(t.dir, rigconfig.ArtifactsDir), filepath.Join(t.dir, rigconfig.ResultsDir))
		_ = st.Close()
		if err != nil {
			fmt.Fprintf(stderr, "hcp-edge state usage: %v\n", err)
			return ExitFailure
		}
		via = "opened read-only; " + t.note
	}
	if *af.asJSON {
		printJSON(stdout, u)
		return ExitOK
	}
	printUsage(stdout, u, via)
	return ExitOK
}

func human(n int64) string { return fmt.Sprintf("%d (%s)", n, diskspace.Bytes(uint64(max(n, 0)))) }

func printUsage(w io.Writer, u retention.Usage, via string) {
	s := u.State
	fmt.Fprintf(w, "state file: %s (%s)\n", u.Path, via)
	fmt.Fprintf(w, "  size %s, free pages %s (state compact gives them back)\n\n", human(s.FileBytes), human(s.FreeBytes))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "BUCKET\tKEYS\tBYTES IN USE\t")
	for _, b := range s.Buckets {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", b.Name, b.Keys, b.Bytes)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DATA CLASS\tSESSIONS\tCLOSED\tRECORD BYTES\tARTIFACT BYTES\t")
	seen := map[string]bool{}
	for _, c := range s.Classes {
		seen[c.Class] = true
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", c.Class, c.Sessions, c.Closed, c.Bytes, u.ArtifactsByClass[c.Class])
	}
	var rest []string
	for k := range u.ArtifactsByClass {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		fmt.Fprintf(tw, "%s\t-\t-\t-\t%d\t\n", k, u.ArtifactsByClass[k])
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nartifacts: %s\nresults:   %s\n", human(u.Artifacts), human(u.Results))
}

func stateCompact(ctx context.Context, af auditFlags, stdout, stderr io.Writer) int {
	dir, _, err := af.dir()
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge state compact: %v\n", err)
		return ExitFailure
	}
	path := filepath.Join(dir, rigconfig.StateFile)
	res, err := compact.File(ctx, path, compact.Opts{})
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge state compact: %v\n", err)
		switch {
		case errors.Is(err, compact.ErrInUse):
			fmt.Fprintln(stderr, "hcp-edge state compact: stop the daemon first (systemctl stop hcp-edge); nothing was changed")
		case errors.Is(err, compact.ErrDamaged), errors.Is(err, compact.ErrNoSpace):
			fmt.Fprintln(stderr, "hcp-edge state compact: the state file was not changed")
		}
		return ExitFailure
	}
	if *af.asJSON {
		printJSON(stdout, res)
		return ExitOK
	}
	fmt.Fprintf(stdout, "compacted %s: %s -> %s bytes\n", res.Path, human(res.Before), human(res.After))
	return ExitOK
}

// pruneResult is what state prune prints with --json.
type pruneResult struct {
	StateFile string           `json:"state_file"`
	Report    retention.Report `json:"report"`
}

func statePrune(ctx context.Context, af auditFlags, olderThan string, stdout, stderr io.Writer) int {
	dir, cfg, err := af.dir()
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge state prune: %v\n", err)
		return ExitFailure
	}
	pol, err := cfg.Retention.Policy()
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge state prune: configuration: %v\n", err)
		return ExitUsage
	}
	if olderThan != "" {
		d, err := capability.ParseDuration(olderThan)
		if err != nil || d <= 0 {
			fmt.Fprintf(stderr, "hcp-edge state prune: --older-than %q: a positive ISO 8601 duration such as P30D\n", olderThan)
			return ExitUsage
		}
		pol = retention.Policy{Default: d}
	}
	st, path, err := auditaccess.OpenOffline(dir, true)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge state prune: %v\n", err)
		return ExitFailure
	}
	defer st.Close()
	p, err := retention.New(st, retention.Opts{Policy: pol, ArtifactsDir: filepath.Join(dir, rigconfig.ArtifactsDir),
		ResultsDir: filepath.Join(dir, rigconfig.ResultsDir), Clock: time.Now, Pause: time.Millisecond,
		AuditArchiveDir: filepath.Join(dir, rigconfig.AuditArchiveDir)})
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge state prune: %v\n", err)
		return ExitUsage
	}
	r, err := p.Once(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge state prune: %v (sessions removed before it are in the audit log)\n", err)
		return ExitFailure
	}
	if *af.asJSON {
		printJSON(stdout, pruneResult{StateFile: path, Report: r})
		return ExitOK
	}
	fmt.Fprintf(stdout, "%s: %d closed sessions removed, %d held for an access decision\n", path, len(r.Pruned), r.Held)
	for _, x := range r.Pruned {
		fmt.Fprintf(stdout, "  %s  %s  closed %s  %s  events %d  checkpoints %d  artifacts %d\n", x.SessionID, x.Class,
			x.ClosedAt.Local().Format(time.DateTime), x.Reason, x.Removed.Events, x.Removed.Checkpoints, x.Artifacts)
	}
	return ExitOK
}
