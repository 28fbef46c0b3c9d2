package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/control"
	"github.com/hcp-edge/hcp-edge/envelope"
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
		return toolsOf(toolsFixture()), nil
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
	saveToolStats(dir, toolsFixture(), slog.New(slog.DiscardHandler))
	check([]string{"tools"}, "last run", filepath.Join(dir, toolStatsFile), row)
	check([]string{"tools", "--state-dir", dir}, "last run", row)
}
