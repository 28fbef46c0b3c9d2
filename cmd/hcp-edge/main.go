// Command hcp-edge is the edge agent: the HCP callee harness daemon for one
// instrument rig and the technician's CLI, in one binary.
//
// It is being built issue by issue; today it reports its version.
package main

import (
	"fmt"
	"os"
)

// Stamped at build time with -ldflags -X (see the Makefile).
var (
	version   = "dev"
	commit    = "unknown"
	buildDate = "unknown"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Printf("hcp-edge %s (commit %s, built %s)\n", version, commit, buildDate)
		return
	}
	fmt.Fprintln(os.Stderr, "usage: hcp-edge version")
	os.Exit(2)
}
