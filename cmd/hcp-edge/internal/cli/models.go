package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/modelrouter"
)

// ModelsReport is `hcp-edge models --json`: the registry, each remote
// instance's health when checked, and the tracker's statistics and
// recommendations when there are any.
type ModelsReport struct {
	Models          []modelrouter.Model      `json:"models"`
	Health          []modelrouter.Health     `json:"health,omitempty"`
	Stats           []modelrouter.ModelStats `json:"stats"`
	Recommendations []string                 `json:"recommendations"`
	// SpentToday is what the remote models cost today (UTC), from the
	// tracker the daemon saves in its state directory.
	SpentToday float64 `json:"spent_today"`
	// Routing is the router's policy and budgets: the model_routing
	// section, or its defaults.
	Routing RoutingReport `json:"routing"`
	// Tracker is the file the statistics were read from.
	Tracker string `json:"tracker"`
	Note    string `json:"note,omitempty"`
}

// RoutingReport is the model router's policy and budgets in ModelsReport,
// as the daemon's router enforces them.
type RoutingReport struct {
	Policy modelrouter.Policy `json:"policy"`
	// TimeBudget is the longest one analysis may take (a Go duration).
	TimeBudget  string  `json:"time_budget"`
	TaskBudget  float64 `json:"task_budget"`
	DailyBudget float64 `json:"daily_budget"`
	// DailyLeft is DailyBudget less the spend today (0 when used up).
	DailyLeft float64 `json:"daily_left"`
}

// routingReport is f's model_routing section (after Defaults) against
// spent today.
func routingReport(f rigconfig.File, spent float64) RoutingReport {
	r := f.ModelRouting
	return RoutingReport{Policy: r.Policy, TimeBudget: r.TimeBudget.String(), TaskBudget: *r.TaskBudget,
		DailyBudget: *r.DailyBudget, DailyLeft: max(*r.DailyBudget-spent, 0)}
}

// Models is `hcp-edge models`: the analysis models of the configuration
// and, with --check, a health check of every remote instance.
func Models(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("models", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("models"))
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print JSON")
	check := fs.Bool("check", false, "health-check every remote instance")
	stateDir := fs.String("state-dir", "", "read the tracker from DIR (default: agent.state_dir)")
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
	dir := *stateDir
	if dir == "" {
		dir = f.Agent.StateDir
	}
	path := filepath.Join(dir, rigconfig.ModelTrackerFile)
	tr, err := modelrouter.LoadTracker(path, nil)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge models: %v\n", err)
		return ExitFailure
	}
	r, err := modelrouter.New(reg, f.ModelRouting.Opts(modelrouter.Opts{Tracker: tr}))
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge models: %v\n", err)
		return ExitUsage
	}
	rep := ModelsReport{Models: reg.Models, Stats: tr.Stats(), Recommendations: tr.Recommendations(reg), SpentToday: tr.SpentToday(), Tracker: path,
		Routing: routingReport(f, tr.SpentToday())}
	if len(rep.Stats) == 0 {
		rep.Note = "no invocation recorded in " + path
	}
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
	fmt.Fprintf(stdout, "\npolicy %s; time budget %s per analysis; task budget %g\n", rep.Routing.Policy, rep.Routing.TimeBudget, rep.Routing.TaskBudget)
	fmt.Fprintf(stdout, "spent today (UTC): %.5f of daily budget %g, %.5f left (%s)\n\n", rep.SpentToday, rep.Routing.DailyBudget, rep.Routing.DailyLeft, path)
	if len(rep.Stats) == 0 {
		fmt.Fprintln(stdout, rep.Note)
	} else {
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "MODEL\tTIER\tCALLS\tOK\tTAKEN\tREFUSED\tP50\tP99\tMEAN CONF\tTOKENS IN/OUT\tCOST\tTODAY")
		for _, s := range rep.Stats {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%v\t%v\t%.2f\t%d/%d\t%.5f\t%.5f\n", s.Model, s.Tier, s.Calls, s.OK, s.Accepted,
				s.Outcomes[modelrouter.Refused], s.P50.Round(time.Microsecond), s.P99.Round(time.Microsecond), s.MeanConfidence,
				s.TokensIn, s.TokensOut, s.Cost, s.CostToday)
		}
		tw.Flush()
	}
	for _, s := range rep.Recommendations {
		fmt.Fprintln(stdout, "recommendation: "+s)
	}
	return code
}
