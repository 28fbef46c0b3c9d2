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
		fmt.Fprint(fset.Output(), `usage: hcp-edge config schema

Prints the JSON Schema of the configuration (configs/hcp-edge.schema.json, draft 2020-12) that
config check validates against. Saved beside a configuration file, it lets an editor with YAML
language support validate and complete the file: its first line
"# yaml-language-server: $schema=hcp-edge.schema.json" names it.

exit codes: 0 printed; 2 usage.

examples:
  hcp-edge config schema > /etc/hcp-edge/hcp-edge.schema.json
`)
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
		fmt.Fprint(fset.Output(), `usage: hcp-edge config check [--json] [--capabilities DIR] [FILE]

Validates a configuration before the rig sees it, without touching hardware: the JSON Schema
configs/hcp-edge.schema.json (unknown keys, types, enums, bounds, durations, units), the rules
a schema cannot say: the rig section (buses, unit ids, full scales, valves),
the envelope compiled against the rig's device ranges, the agent and monitor sections, the
model router's registry, policy and budgets (models:, model_routing:), paths
(absolute; the control socket short enough for a unix socket), the permissions of key files
(0600 or stricter), the at-rest key (agent.at_rest_key_file: 64 hex digits) and the capability
declarations. Every problem is reported, each as FILE:LINE: KEY: MESSAGE. FILE defaults to the
embedded configs/sim.yaml.

environment: HCP_STATE_DIR, HCP_CONTROL_SOCKET and HCP_RIG_SIM_DIR apply as they do for run.

exit codes: 0 valid; 2 invalid (or unreadable, or usage).

examples:
  hcp-edge config check                          # the embedded configs/sim.yaml
  hcp-edge config check /etc/hcp-edge/hcp-edge.yaml
  hcp-edge config check --json configs/hcp-edge.example.yaml

flags:
`)
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
