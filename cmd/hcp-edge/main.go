// Command hcp-edge is the edge agent: the HCP callee harness daemon for one
// instrument rig and the technician's CLI, in one binary.
//
// It is being built issue by issue. Today it has:
//
//	hcp-edge version                      print version, commit and build date
//	hcp-edge probe [--config FILE] [--json] [--spectrum MS]
//	                                      open every instrument of the rig, read it once, print
//	                                      what it says (read-only: nothing is switched or set)
//
// Exit codes: 0 success; 1 an instrument could not be read; 2 usage or configuration error.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Stamped at build time with -ldflags -X (see the Makefile).
var (
	version   = "dev"
	commit    = "unknown"
	buildDate = "unknown"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "version", "--version":
		fmt.Fprintf(stdout, "hcp-edge %s (commit %s, built %s)\n", version, commit, buildDate)
		return exitOK
	case "probe":
		return probe(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "hcp-edge: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: hcp-edge COMMAND [flags]

commands:
  version   print version, commit and build date
  probe     read every instrument of the rig once and print what it says (read-only)

examples:
  hcp-edge probe                                 # the simulated rig (embedded configs/sim.yaml)
  hcp-edge probe --config /etc/hcp-edge/rig.yaml --json
  hcp-edge probe --spectrum 1000                 # also acquire a 1 s Raman spectrum
`)
}
