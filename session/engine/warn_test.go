package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"hcp-edge/session/lifecycle"
)

// TestWarn: a warning from outside the executor (the uplink's dropped
// telemetry) takes its place in the running session's sequence, reaches
// the caller and the execution summary; after the session closes it is
// refused.
func TestWarn(t *testing.T) {
	ctx := context.Background()
	h, _ := fakeHarness(t, 20, 20*time.Millisecond, nil)
	res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
	if err := h.e.Warn(ctx, res.SessionID, WarnTelemetryDropped, "3 progress events dropped", map[string]any{"dropped": 3}); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Warn(ctx, "no-such-session", WarnTelemetryDropped, "x", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	h.waitState(t, res.SessionID, lifecycle.Completed)
	msgs := h.out.of(res.SessionID, res.Replies)
	evs := events(t, msgs)
	contiguous(t, evs)
	found := false
	for _, ev := range evs {
		if ev.EventType == "warning" && strings.Contains(string(ev.Data), `"telemetry_dropped"`) && strings.Contains(string(ev.Data), `"dropped":3`) {
			found = true
		}
	}
	tc, err := msgs[len(msgs)-1].TaskCompleted()
	if !found || err != nil || len(tc.ExecutionSummary.Warnings) != 1 {
		t.Fatalf("warning event found %t; final %+v %v", found, *tc.ExecutionSummary, err)
	}
	if err := h.e.Warn(ctx, res.SessionID, WarnTelemetryDropped, "late", nil); err == nil {
		t.Fatal("warning accepted after the session closed")
	}
}
