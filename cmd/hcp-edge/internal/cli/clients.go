package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/reply"
)

// clientTimeout bounds status, reset and arm.
const clientTimeout = 10 * time.Second

// ask sends one request to the daemon and explains a daemon that is down.
func ask(ctx context.Context, cmd, path string, req control.Request, stderr io.Writer) (control.Reply, bool) {
	ctx, cancel := context.WithTimeout(ctx, clientTimeout)
	defer cancel()
	rep, err := control.Do(ctx, path, req, 2*time.Second)
	if err != nil {
		switch {
		case errors.Is(err, control.ErrNoDaemon):
			fmt.Fprintf(stderr, "hcp-edge %s: no daemon is listening on %s.\n  Start it with `hcp-edge run --config FILE` (or `systemctl start hcp-edge`),\n  or point at its socket with --socket PATH or HCP_CONTROL_SOCKET.\n", cmd, path)
		case errors.Is(err, control.ErrNoAck):
			fmt.Fprintf(stderr, "hcp-edge %s: the daemon on %s accepted the connection but did not answer (hung?).\n  In an emergency use `hcp-edge estop`, which drives the outputs itself.\n", cmd, path)
		default:
			fmt.Fprintf(stderr, "hcp-edge %s: %v\n", cmd, err)
		}
		return rep, false
	}
	if !rep.OK {
		fmt.Fprintf(stderr, "hcp-edge %s: refused: %s\n", cmd, rep.Error)
		return rep, false
	}
	return rep, true
}

// Status is `hcp-edge status`: readings, margins, latch, health, uplink and
// budgets from the daemon.
func Status(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("status"))
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print JSON")
	cfgPath := configFlag(fs)
	sock := socketFlag(fs)
	if pos, err := parseArgs(fs, args, stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge status: unexpected argument %q\n", pos[0])
		}
		return usageExit(err)
	}
	rep, ok := ask(ctx, "status", socketPath(*sock, *cfgPath), control.Request{Op: control.OpStatus}, stderr)
	if !ok {
		return ExitFailure
	}
	if *asJSON {
		var v any
		_ = json.Unmarshal(rep.Result, &v)
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
		return ExitOK
	}
	var st reply.Status
	if err := json.Unmarshal(rep.Result, &st); err != nil {
		fmt.Fprintf(stderr, "hcp-edge status: bad reply: %v\n", err)
		return ExitFailure
	}
	printStatus(stdout, st)
	return ExitOK
}

func printStatus(w io.Writer, st reply.Status) {
	if st.Latched {
		fmt.Fprintf(w, "LATCHED: %s (clear with: hcp-edge reset --operator NAME)\n", st.LatchReason)
	} else {
		fmt.Fprintln(w, "not latched")
	}
	fmt.Fprintf(w, "relay: %s\n", st.Relay)
	fmt.Fprintln(w, st.Uplink.Line()) // package reply
	if st.Disk != nil {
		fmt.Fprintln(w, st.Disk.Line())
	}
	if st.Clock != nil {
		fmt.Fprintln(w, st.Clock.Line())
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if st.Activity != "" {
		fmt.Fprintf(w, "rig: %s\n\n", st.Activity)
	}
	fmt.Fprintln(tw, "CHANNEL\tVALUE\tMIN\tMAX\tUNIT\tMARGIN\tCONTEXT")
	for _, m := range st.Margins {
		margin := fmt.Sprintf("%.4g", m.Margin)
		if !m.Applies {
			margin = "n/a" // the limit does not bind now: no violation, whatever the sign
		}
		fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t%.4g\t%s\t%s\t%s\n", m.Channel, m.Value, m.Min, m.Max, m.Unit, margin, m.Context)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "READING\tVALUE")
	for _, k := range sortedKeys(st.Readings) {
		fmt.Fprintf(tw, "%s\t%s\n", k, st.Readings[k])
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTRUMENT\tHEALTH")
	for _, k := range sortedKeys(st.Healthy) {
		h := "ok"
		if !st.Healthy[k] {
			h = "SILENT"
		}
		fmt.Fprintf(tw, "%s\t%s\n", k, h)
	}
	_ = tw.Flush()
	printBudgets(w, st.Budgets) // budgets.go
	if len(st.Trips) > 0 {
		fmt.Fprintln(w, "\ntrips since start (newest last):")
		for _, t := range st.Trips {
			fmt.Fprintf(w, "  %s %s → %s on %s: %s\n", t.At.Local().Format("2006-01-02 15:04:05"), t.Trip, t.Procedure, t.Channel, t.Reason)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Operator is reset and arm: a local operation that needs the operator.
func Operator(ctx context.Context, op string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(op, flag.ContinueOnError)
	fs.SetOutput(stderr)
	what := map[string]string{
		control.OpReset: "Clears a latched trip or e-stop. The operator's name is recorded in the audit log.",
		control.OpArm:   "Energises the interlock relay (heater and gas valve power) when nothing is latched\nand no trip condition holds. The operator's name is recorded in the audit log.",
	}[op]
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: hcp-edge %s --operator NAME [--json] [--socket PATH] [--config FILE]\n\n%s\n\nexit codes: 0 done; 1 refused or the daemon is down; 2 usage.\n\nexample:\n  hcp-edge %s --operator alice\n\nflags:\n", op, what, op)
		fs.PrintDefaults()
	}
	operator := fs.String("operator", "", "who does it (required; recorded)")
	asJSON := fs.Bool("json", false, "print JSON")
	cfgPath := configFlag(fs)
	sock := socketFlag(fs)
	if pos, err := parseArgs(fs, args, stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge %s: unexpected argument %q\n", op, pos[0])
		}
		return usageExit(err)
	}
	if *operator == "" {
		fmt.Fprintf(stderr, "hcp-edge %s: --operator NAME is required\n", op)
		return ExitUsage
	}
	rep, ok := ask(ctx, op, socketPath(*sock, *cfgPath), control.Request{Op: op, Operator: *operator}, stderr)
	if *asJSON {
		_ = json.NewEncoder(stdout).Encode(rep)
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
