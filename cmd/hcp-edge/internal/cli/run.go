package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"hcp-edge/cmd/hcp-edge/internal/agent"
	"hcp-edge/cmd/hcp-edge/internal/recipes"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
)

// Run is `hcp-edge run`: it parses the flags and the configuration, loads
// the capability declarations and runs the daemon (agent.Run) until ctx
// ends. version is reported in the log and on the dashboard.
func Run(ctx context.Context, version string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("run"))
		fs.PrintDefaults()
	}
	cfgPath := configFlag(fs)
	if pos, err := parseArgs(fs, args, stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge run: unexpected argument %q\n", pos[0])
		}
		return usageExit(err)
	}
	f, err := loadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge run: configuration: %v\n", err)
		return ExitUsage
	}
	reg, from, err := loadRegistry(*cfgPath, f.Agent.CapabilitiesDir)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge run: capability declarations (%s): %v\n", from, err)
		return ExitUsage
	}
	f.Agent.RecipesDir = recipes.Dir(*cfgPath, f.Agent.RecipesDir)
	log := newLogger(stderr, f.Agent)
	log.Debug("capabilities loaded", "from", from, "count", len(reg.All()))
	if err := agent.Run(ctx, agent.Config{File: f, Registry: reg, Logger: log, Version: version}); err != nil {
		log.Error("hcp-edge run failed", "err", err)
		return ExitFailure
	}
	return ExitOK
}

func newLogger(w io.Writer, a rigconfig.Agent) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(a.LogLevel))
	o := &slog.HandlerOptions{Level: lvl}
	if a.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}
