package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"hcp-edge/transport/alert"
)

// Alert is `hcp-edge alert test`: a test alert sent now to every receiver
// of the configuration's alerts section, each receiver's result printed.
func Alert(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("alert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: hcp-edge alert test [--config FILE] [--timeout D]

Sends a test alert (class test, severity info) to every receiver of the configuration's alerts
section, now, from this process (not through the daemon's queue: nothing is retried, grouped or
audited), and prints each receiver's result. An SMTP receiver's password file must be readable
by the user running it. docs/ALERTS.md.

exit codes: 0 every receiver took the alert; 1 one did not; 2 usage, configuration, or no
receivers configured.

examples:
  hcp-edge alert test --config /etc/hcp-edge/hcp-edge.yaml

flags:
`)
		fs.PrintDefaults()
	}
	cfgPath := configFlag(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "bound of each receiver's delivery")
	pos, err := parseArgs(fs, args, stdout)
	if err != nil || len(pos) != 1 || pos[0] != "test" {
		if err == nil {
			fmt.Fprintln(stderr, "hcp-edge alert: want the subcommand test")
			fs.Usage()
		}
		return usageExit(err)
	}
	f, err := loadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge alert test: %v\n", err)
		return ExitUsage
	}
	if len(f.Alerts.Receivers) == 0 {
		fmt.Fprintln(stderr, "hcp-edge alert test: no receivers in the configuration's alerts section")
		return ExitUsage
	}
	rs, err := alert.SendTest(ctx, f.Alerts, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge alert test: %v\n", err)
		return ExitUsage
	}
	code := ExitOK
	for _, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(stdout, "%-24s FAILED  %v\n", r.Receiver, r.Err)
			code = ExitFailure
		} else {
			fmt.Fprintf(stdout, "%-24s ok\n", r.Receiver)
		}
	}
	return code
}
