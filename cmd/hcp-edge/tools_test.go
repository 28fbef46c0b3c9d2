package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/envelope"
)

func toolsFixture() []envelope.ToolStats {
	var h envelope.LatencyHistogram
	for i := 1; i <= 10; i++ {
		h.Observe(time.Duration(i) * time.Millisecond)
	}
	return []envelope.ToolStats{
		{Tool: envelope.ToolRef{Name: "gas.set_flow", Version: "1.0.0"}, Calls: 10, Succeeded: 7, Refused: 3, TowardSafe: 2,
			RefusedBy: map[envelope.Rule]uint64{envelope.RuleStale: 2, envelope.RuleRate: 1}, TotalLatency: 55 * time.Millisecond,
			MaxLatency: 10 * time.Millisecond, Latency: h},
	}
}

// TestToolsVerb: `hcp-edge tools` prints the daemon's per-tool table (its
// control socket's tools operation), falls back to the file a stopped
// daemon left in its state directory (or reads it with --state-dir), and
// fails with a clear message when there is neither.
func TestToolsVerb(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "control.sock")
	srv, err := control.Listen(sock, control.HandlerFunc(func(_ context.Context, req control.Request) (any, error) {
		if req.Op != control.OpTools {
			return nil, errors.New("unexpected op " + req.Op)
		}
		return reply.ToolsOf(toolsFixture()), nil
	}), control.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(args []string, want ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != exitOK {
			t.Fatalf("hcp-edge %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		}
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Fatalf("hcp-edge %s: output lacks %q:\n%s", strings.Join(args, " "), w, out.String())
			}
		}
	}
	row := "gas.set_flow  1.0.0    10     7   3        0       2     6.14ms  10ms  10ms  max_rate_of_change=1 stale_reading=2"
	check([]string{"tools", "--socket", sock}, "since the daemon started", row, "10 calls of 1 tools: 3 refused, 0 failed")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"tools", "--socket", sock, "--json"}, &out, &errb); code != exitOK {
		t.Fatalf("--json: exit %d: %s", code, errb.String())
	}
	var res toolsResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Source != "daemon" || len(res.Tools) != 1 ||
		res.Tools[0].RefusedBy["stale_reading"] != 2 || res.Tools[0].P99 != 10 {
		t.Fatalf("--json: %v %+v", err, res)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	// No daemon, no file: exit 1, and say why.
	t.Setenv("HCP_STATE_DIR", dir)
	t.Setenv("HCP_CONTROL_SOCKET", sock)
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"tools"}, &out, &errb); code != exitFailure || !strings.Contains(errb.String(), toolStatsFile) {
		t.Fatalf("no daemon, no file: exit %d, stderr %q", code, errb.String())
	}
	// The file a stopping daemon writes: read when no daemon answers, or with --state-dir.
	if err := reply.WriteToolStats(dir, reply.ToolsOf(toolsFixture())); err != nil {
		t.Fatal(err)
	}
	check([]string{"tools"}, "last run", filepath.Join(dir, toolStatsFile), row)
	check([]string{"tools", "--state-dir", dir}, "last run", row)
}

// TestToolsThroughDaemon: the real daemon runs the seed's MoS2 task; every
// action of the recipe was a tool call through the pipeline, so `hcp-edge
// tools` shows the furnace, gas, valve and spectrometer tools called and
// executed; once the daemon has stopped, the figures are read back from the
// state directory.
func TestToolsThroughDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("the MoS2 recipe against the simulator (~25 s)")
	}
	t.Parallel() // its own rig and state: runs beside the other whole-recipe tests
	e := newEnv(t, nil)
	e.start()
	e.arm()
	e.submitSeedApproved(2 * time.Minute)
	var res toolsResult
	if err := json.Unmarshal([]byte(e.mustCLI("tools", "--json").stdout), &res); err != nil {
		t.Fatal(err)
	}
	byName := map[string]toolView{}
	for _, tv := range res.Tools {
		byName[tv.Tool] = tv
		if tv.Version != "1.0.0" || tv.Calls != tv.Succeeded+tv.Refused+tv.Failed {
			t.Errorf("%+v: calls are not OK + refused + failed", tv)
		}
	}
	for _, name := range []string{"furnace.set_setpoint", "furnace.set_ramp_rate", "furnace.set_heater", "gas.set_flow",
		"valve.set", "gate_valve.set", "pump.set", "chamber.vent", "spectrometer.acquire"} {
		if tv := byName[name]; tv.Succeeded == 0 || tv.P99 <= 0 || tv.P50 > tv.P99 {
			t.Errorf("%s: %+v, want executed calls with latencies", name, tv)
		}
	}
	if byName["gas.set_flow"].TowardSafe == 0 {
		t.Errorf("gas.set_flow: no call toward safe counted: %+v", byName["gas.set_flow"])
	}
	t.Logf("\n%s", e.mustCLI("tools").stdout)
	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
	saved := e.mustCLI("tools", "--state-dir", e.dir)
	if !strings.Contains(saved.stdout, "last run") || !strings.Contains(saved.stdout, "spectrometer.acquire") {
		t.Fatalf("tools --state-dir after the daemon stopped:\n%s", saved.stdout)
	}
}
