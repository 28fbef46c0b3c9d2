package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/control"
	"github.com/hcp-edge/hcp-edge/envelope"
)

// toolStatsFile is the file in the state directory where the daemon leaves
// the tool pipeline's statistics when it stops; `hcp-edge tools` reads it
// when no daemon answers.
const toolStatsFile = "tool-stats.json"

// toolView is one tool's statistics (the --json output and the file).
type toolView struct {
	Tool       string            `json:"tool"`
	Version    string            `json:"version"`
	Calls      uint64            `json:"calls"`
	Succeeded  uint64            `json:"succeeded"`
	Refused    uint64            `json:"refused"`
	Failed     uint64            `json:"failed"`
	TowardSafe uint64            `json:"toward_safe"`
	RefusedBy  map[string]uint64 `json:"refused_by,omitempty"` // by rule
	P50        float64           `json:"p50_ms"`
	P99        float64           `json:"p99_ms"`
	Max        float64           `json:"max_ms"`
	Mean       float64           `json:"mean_ms"`
}

// toolsResult is the daemon's answer to tools.
type toolsResult struct {
	At time.Time `json:"at"`
	// Source says where the figures come from: "daemon", or the file the
	// daemon left when it stopped (set by the CLI).
	Source string     `json:"source,omitempty"`
	Tools  []toolView `json:"tools"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// toolsOf is the view of the Invoker's statistics.
func toolsOf(stats []envelope.ToolStats) toolsResult {
	out := toolsResult{At: time.Now().UTC(), Tools: make([]toolView, 0, len(stats))}
	for _, s := range stats {
		v := toolView{Tool: s.Tool.Name, Version: s.Tool.Version, Calls: s.Calls, Succeeded: s.Succeeded,
			Refused: s.Refused, Failed: s.Failed, TowardSafe: s.TowardSafe,
			P50: ms(s.P50()), P99: ms(s.P99()), Max: ms(s.MaxLatency), Mean: ms(s.MeanLatency())}
		if len(s.RefusedBy) > 0 {
			v.RefusedBy = make(map[string]uint64, len(s.RefusedBy))
			for r, n := range s.RefusedBy {
				v.RefusedBy[string(r)] = n
			}
		}
		out.Tools = append(out.Tools, v)
	}
	return out
}

// saveToolStats writes the statistics to dir/tool-stats.json (through a
// temporary file and a rename, so a reader never sees half a file). A
// failure is logged: the statistics are a convenience, not state.
func saveToolStats(dir string, stats []envelope.ToolStats, log *slog.Logger) {
	if err := writeToolStats(dir, toolsOf(stats)); err != nil {
		log.Warn("tool statistics not saved", "dir", dir, "err", err)
	}
}

func writeToolStats(dir string, r toolsResult) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, toolStatsFile+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, toolStatsFile))
}

func readToolStats(dir string) (toolsResult, error) {
	var r toolsResult
	path := filepath.Join(dir, toolStatsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	r.Source = path
	return r, nil
}

func toolsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: hcp-edge tools [--json] [--state-dir DIR] [--socket PATH] [--config FILE]

Shows the statistics of the tool pipeline, per catalog tool and version: every action a
recipe takes is one call of a tool through it (permission, rate limit, input schema, the
interlock, output schema, audit). CALLS = OK + REFUSED + FAILED; REFUSED counts calls a
rule refused (nothing reached an instrument), by rule; SAFE counts calls toward the safe
state (never refused for scope or rate); P50 and P99 are latency quantiles from a fixed
histogram (the upper bound of their bucket: at most a third over).

The running daemon answers with its figures since it started. When no daemon answers,
or with --state-dir DIR, the figures are read from DIR/tool-stats.json, which the daemon
writes when it stops (its last run).

exit codes: 0 shown; 1 no daemon and no saved figures, or the daemon failed; 2 usage.

examples:
  hcp-edge tools
  hcp-edge tools --state-dir /var/lib/hcp-edge
  hcp-edge tools --json | jq '.tools[] | select(.refused > 0)'

flags:
`)
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print JSON")
	stateDir := fs.String("state-dir", "", "read DIR/"+toolStatsFile+" (the daemon's last run) instead of asking the daemon")
	cfgPath := configFlag(fs)
	sock := socketFlag(fs)
	if pos, err := parseArgs(fs, args, stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge tools: unexpected argument %q\n", pos[0])
		}
		return usageExit(err)
	}
	var (
		res toolsResult
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
			return exitFailure
		case err == nil:
			if err := json.Unmarshal(rep.Result, &res); err != nil {
				fmt.Fprintf(stderr, "hcp-edge tools: bad reply: %v\n", err)
				return exitFailure
			}
			res.Source = "daemon"
		case errors.Is(err, control.ErrNoDaemon):
			f, cerr := loadConfig(*cfgPath)
			if cerr != nil {
				fmt.Fprintf(stderr, "hcp-edge tools: no daemon is listening, and the configuration does not load: %v\n", cerr)
				return exitFailure
			}
			dir = f.Agent.StateDir
		default:
			fmt.Fprintf(stderr, "hcp-edge tools: %v\n", err)
			return exitFailure
		}
	}
	if dir != "" {
		if res, err = readToolStats(dir); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(stderr, "hcp-edge tools: no daemon answered and %s holds no %s (the daemon writes it when it stops).\n", dir, toolStatsFile)
			} else {
				fmt.Fprintf(stderr, "hcp-edge tools: %v\n", err)
			}
			return exitFailure
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return exitOK
	}
	printTools(stdout, res)
	return exitOK
}

func printTools(w io.Writer, r toolsResult) {
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
	var calls, refused, failed uint64
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
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\n%d calls of %d tools: %d refused, %d failed\n", calls, len(r.Tools), refused, failed)
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
