package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hcp-edge/hcp-edge/session/modelrouter"
)

// ModelsReport is `hcp-edge models --json`: the registry, each remote
// instance's health when checked, and the tracker's statistics and
// recommendations when there are any.
type ModelsReport struct {
	Models          []modelrouter.Model      `json:"models"`
	Health          []modelrouter.Health     `json:"health,omitempty"`
	Stats           []modelrouter.ModelStats `json:"stats"`
	Recommendations []string                 `json:"recommendations"`
	Note            string                   `json:"note,omitempty"`
}

// Models is `hcp-edge models`: the analysis models of the configuration
// and, with --check, a health check of every remote instance.
func Models(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("models", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: hcp-edge models [--json] [--check] [--config FILE]

Shows the model router's registry (the models: section of the configuration, or the two
local models when it has none): tier, kind, model, instances, cost per 1000 tokens in and out,
typical latency, rpm limit and the highest data class each model is cleared for. With --check,
asks every remote instance GET /models (through its circuit breaker) and shows whether it
answered. Invocation statistics (calls, outcomes, p50/p99, spend) and recommendations come
from the router's tracker in the daemon once the analyse phase routes through it; until then
the list is empty. API keys are read from their file or environment, never shown.

exit codes: 0 shown (with --check: every remote instance answered); 1 an instance did not
answer; 2 usage or configuration.

examples:
  hcp-edge models
  hcp-edge models --check --config /etc/hcp-edge/hcp-edge.yaml
  hcp-edge models --json | jq '.models[] | select(.kind == "openai")'

flags:
`)
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print JSON")
	check := fs.Bool("check", false, "health-check every remote instance")
	cfgPath := configFlag(fs)
	if pos, err := parseArgs(fs, args, stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge models: unexpected argument %q\n", pos[0])
		}
		return usageExit(err)
	}
	f, err := loadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge models: %v\n", err)
		return ExitUsage
	}
	reg := f.ModelRegistry()
	r, err := modelrouter.New(reg, modelrouter.Opts{})
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge models: %v\n", err)
		return ExitUsage
	}
	rep := ModelsReport{Models: reg.Models, Stats: r.Tracker().Stats(), Recommendations: r.Tracker().Recommendations(reg),
		Note: "no invocation recorded: the daemon's analyse phase does not route through the model router yet"}
	code := ExitOK
	if *check {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		rep.Health = r.CheckHealth(cctx)
		cancel()
		for _, h := range rep.Health {
			if !h.OK {
				code = ExitFailure
			}
		}
	}
	if rep.Recommendations == nil {
		rep.Recommendations = []string{}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return ExitFailure
		}
		return code
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTIER\tKIND\tMODEL\tINSTANCES\tIN/1K\tOUT/1K\tLATENCY\tRPM\tCLEARED\tDEFAULT")
	for _, m := range reg.Models {
		inst := "-"
		if len(m.Instances) > 0 {
			inst = strings.Join(m.Instances, ",")
		}
		def := ""
		if m.Default {
			def = "yes"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%g\t%g\t%v\t%d\t%s\t%s\n", m.ID, m.Tier, m.Kind, m.Name, inst, m.CostIn, m.CostOut, m.Latency, m.RPM, m.Cleared, def)
	}
	tw.Flush()
	if *check {
		fmt.Fprintln(stdout)
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "MODEL\tINSTANCE\tANSWERED\tLATENCY\tCIRCUIT\tERROR")
		for _, h := range rep.Health {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%s\t%s\n", h.Model, h.Instance, h.OK, h.Latency.Round(time.Millisecond), h.Circuit, h.Error)
		}
		tw.Flush()
	}
	fmt.Fprintln(stdout)
	if len(rep.Stats) == 0 {
		fmt.Fprintln(stdout, rep.Note)
	}
	for _, s := range rep.Recommendations {
		fmt.Fprintln(stdout, "recommendation: "+s)
	}
	return code
}
