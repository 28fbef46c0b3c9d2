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
		fmt.Fprint(fs.Output(), `usage: hcp-edge run [--config FILE]

Runs the agent daemon: opens the state directory (state file with the sessions and the audit
log, the session token key), builds the rig from the configuration, compiles the envelope,
starts the trip monitor (which kicks the furnace's comms watchdog), assembles the session engine
(gate, executors, tokens checked by the interlock on every action), recovers the sessions a
previous run left, and serves the local control socket (estop, status, reset, arm, submit,
approve, deny, abort, pause, resume, sessions, artifact). SIGINT or SIGTERM stops it: intake
first, then the sessions (left for the next start's recovery), the monitor, then the shutdown
policy on the outputs.

environment: HCP_STATE_DIR, HCP_CONTROL_SOCKET override agent.state_dir and agent.control_socket;
HCP_RIG_SIM_DIR overrides rig.sim_dir; HCP_AMQP_URL and HCP_CALLEE_ID override agent.amqp.url and
agent.amqp.callee_id; HCP_AMQP_URLS (comma-separated) overrides agent.amqp.url and urls. With a broker URL the agent also serves HCP through the broker, started last
(it runs with the broker unreachable: messages wait in the durable outbox, reconnects are logged).

exit codes: 0 stopped cleanly; 1 failed at start or on the way down; 2 usage or configuration.

examples:
  hcp-edge run                                   # the simulated rig (embedded configs/sim.yaml)
  HCP_STATE_DIR=/tmp/hcp hcp-edge run --config configs/sim.yaml

flags:
`)
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
