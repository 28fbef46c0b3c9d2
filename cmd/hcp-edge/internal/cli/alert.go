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
		fmt.Fprint(fs.Output(), usageText("alert-test"))
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
