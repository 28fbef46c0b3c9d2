package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"hcp-edge/cmd/hcp-edge/internal/configcheck"
	"hcp-edge/configs"
)

// Config is `hcp-edge config check|schema`.
func Config(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && args[0] == "check":
		return configCheckCmd(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "schema":
		return configSchemaCmd(args[1:], stdout, stderr)
	}
	return groupUsage(args, "usage: hcp-edge config check [--json] [--capabilities DIR] [FILE]\n       hcp-edge config schema\n\nRun \"hcp-edge config check -h\" for the flags.\n", stdout, stderr)
}

// configSchemaCmd prints the embedded configs/hcp-edge.schema.json.
func configSchemaCmd(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("config schema", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {
		fmt.Fprint(fset.Output(), usageText("config-schema"))
	}
	if pos, err := parseArgs(fset, args, stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge config schema: unexpected argument %q\n", pos[0])
		}
		return usageExit(err)
	}
	_, _ = stdout.Write(configs.Schema())
	return ExitOK
}

func configCheckCmd(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("config check", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {
		fmt.Fprint(fset.Output(), usageText("config-check"))
		fset.PrintDefaults()
	}
	asJSON := fset.Bool("json", false, "print the result as JSON")
	capDir := fset.String("capabilities", "", "capability declarations to check (default: <config dir>/capabilities, else configs/capabilities, if present)")
	pos, err := parseArgs(fset, args, stdout)
	if err != nil || len(pos) > 1 {
		if err == nil {
			fmt.Fprintln(stderr, "hcp-edge config check: give at most one FILE")
		}
		return usageExit(err)
	}
	file := ""
	if len(pos) == 1 {
		file = pos[0]
	}
	r := configcheck.Check(file, *capDir)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r)
	} else {
		for _, p := range r.Problems {
			fmt.Fprintln(stdout, p)
		}
		for _, n := range r.Notes {
			fmt.Fprintln(stdout, "note: "+n)
		}
		if r.Valid {
			fmt.Fprintf(stdout, "%s: valid\n", r.File)
		} else {
			fmt.Fprintf(stdout, "%s: %d problem(s)\n", r.File, len(r.Problems))
		}
	}
	if !r.Valid {
		return ExitUsage
	}
	return ExitOK
}
